//! Batch normalisation's per-channel kernels over an `[N, C, ...]` tensor (axis 1
//! the channel, every other axis reduced): the batch statistics, the per-channel
//! affine map `y = x·a + b`, and the fused backward. As one op each, the training
//! step makes three passes over the activation where the composition of means,
//! variances and broadcast products made a dozen.
//!
//! Every channel's sums run over the rows `(n, c, ·)` in order — each row in
//! blocks of 256 summed in eight lanes, the block sums pairwise, then the
//! rows pairwise — and channels split across threads whole, so the results are
//! the same bits at any thread count.

use super::reduce::{sum_lanes, sum_pairwise};
use crate::element::Element;
use crate::error::{fmt_shape, Error, Result};
use crate::parallel;
use crate::storage;
use crate::tensor::Tensor;

/// Elements of a row summed in lanes before the pairwise combination.
const BLOCK: usize = 256;

/// The sizes of an `[N, C, S…]` tensor as (N, C, S = the product of the rest).
fn dims(op: &'static str, shape: &[usize]) -> Result<(usize, usize, usize)> {
    if shape.len() < 2 {
        return Err(Error::shape(
            op,
            format!("needs [N, C, ...], got {}", fmt_shape(shape)),
        ));
    }
    Ok((shape[0], shape[1], shape[2..].iter().product()))
}

/// Σ f(aᵢ, bᵢ) over a row (see the module doc for the order).
fn sum_row<T: Element>(a: &[T], b: &[T], f: impl Fn(T, T) -> T) -> T {
    let mut buf = [T::zero(); BLOCK];
    if a.len() <= BLOCK {
        // One block (the deep layers' small maps): no list of block sums.
        for ((o, &x), &y) in buf.iter_mut().zip(a).zip(b) {
            *o = f(x, y);
        }
        return sum_lanes(&buf[..a.len()]);
    }
    let blocks: Vec<T> = a
        .chunks(BLOCK)
        .zip(b.chunks(BLOCK))
        .map(|(a, b)| {
            for ((o, &x), &y) in buf.iter_mut().zip(a).zip(b) {
                *o = f(x, y);
            }
            sum_lanes(&buf[..a.len()])
        })
        .collect();
    sum_pairwise(&blocks)
}

/// For each channel c, Σ over its rows of `f(a, b)` (a and b shaped alike).
fn channel_sums<T: Element>(
    (n, c, s): (usize, usize, usize),
    a: &[T],
    b: &[T],
    f: impl Fn(usize, T, T) -> T + Sync,
) -> Vec<T> {
    parallel::map_collect(c, n * c * s, |ch| {
        let rows: Vec<T> = (0..n)
            .map(|i| {
                let at = (i * c + ch) * s;
                sum_row(&a[at..at + s], &b[at..at + s], |x, y| f(ch, x, y))
            })
            .collect();
        sum_pairwise(&rows)
    })
}

/// `[C]` tensors, checked against the channel count, made contiguous.
fn per_channel<T: Element>(
    op: &'static str,
    c: usize,
    named: &[(&str, &Tensor<T>)],
) -> Result<Vec<Tensor<T>>> {
    named
        .iter()
        .map(|(name, t)| {
            if t.shape() != [c] {
                return Err(Error::shape(
                    op,
                    format!(
                        "{name} must be [{c}] (one per channel), got {}",
                        fmt_shape(t.shape())
                    ),
                ));
            }
            Ok(t.contiguous())
        })
        .collect()
}

impl<T: Element> Tensor<T> {
    /// The per-channel mean and biased variance of `self` `[N, C, ...]` over every
    /// axis but 1, each `[C]`: the batch statistics of batch normalisation (the
    /// variance from the deviations, two passes, not from E(x²) − E(x)²).
    pub fn batch_norm_stats(&self) -> Result<(Tensor<T>, Tensor<T>)> {
        let op = "batch_norm_stats";
        let d @ (n, c, s) = dims(op, self.shape())?;
        if n * s == 0 {
            return Err(Error::value(
                op,
                format!("needs a value per channel, got {}", fmt_shape(self.shape())),
            ));
        }
        let x = self.contiguous();
        let xs = x.as_slice().expect("contiguous");
        let count = T::from_f64((n * s) as f64);
        let mean: Vec<T> = channel_sums(d, xs, xs, |_, v, _| v)
            .into_iter()
            .map(|t| t / count)
            .collect();
        let var: Vec<T> = channel_sums(d, xs, xs, |ch, v, _| (v - mean[ch]) * (v - mean[ch]))
            .into_iter()
            .map(|t| t / count)
            .collect();
        Ok((
            Tensor::from_contiguous(mean, &[c]),
            Tensor::from_contiguous(var, &[c]),
        ))
    }

    /// `y = x·scale[c] + shift[c]` for `self` `[N, C, ...]` and `[C]` scale and
    /// shift: the same bits as the two broadcast ops, in one pass.
    pub fn channel_affine(&self, scale: &Tensor<T>, shift: &Tensor<T>) -> Result<Tensor<T>> {
        let op = "channel_affine";
        let (_, c, s) = dims(op, self.shape())?;
        let ab = per_channel(op, c, &[("the scale", scale), ("the shift", shift)])?;
        let (a, b) = (
            ab[0].as_slice().expect("contiguous"),
            ab[1].as_slice().expect("contiguous"),
        );
        let x = self.contiguous();
        let xs = x.as_slice().expect("contiguous");
        let mut out = storage::scratch(xs.len(), T::zero());
        parallel::for_each_row_chunk(&mut out, s, |r0, chunk| {
            for (k, row) in chunk.chunks_mut(s.max(1)).enumerate() {
                let r = r0 + k;
                let (ch, src) = (r % c, &xs[r * s..(r + 1) * s]);
                for (o, &v) in row.iter_mut().zip(src) {
                    *o = v * a[ch] + b[ch];
                }
            }
        });
        Ok(Tensor::from_contiguous(out, self.shape()))
    }

    /// The backward of training-mode batch normalisation `y = γ·(x − μ)·r + β`
    /// (μ, r = 1/√(σ² + ε) the batch's statistics) for the output gradient `self`:
    /// `(dx, dγ, dβ)` with dβ = Σg, dγ = r·Σg(x − μ) and dx = γr·(g − Σg/M −
    /// (x − μ)·r²·Σg(x − μ)/M), M values per channel. Two passes over g and x.
    pub fn batch_norm_backward(
        &self,
        x: &Tensor<T>,
        mean: &Tensor<T>,
        inv_std: &Tensor<T>,
        gamma: &Tensor<T>,
    ) -> Result<(Tensor<T>, Tensor<T>, Tensor<T>)> {
        let op = "batch_norm_backward";
        let d @ (n, c, s) = dims(op, x.shape())?;
        if self.shape() != x.shape() {
            return Err(Error::shape(
                op,
                format!(
                    "the gradient {} and the input {} differ",
                    fmt_shape(self.shape()),
                    fmt_shape(x.shape())
                ),
            ));
        }
        let stats = per_channel(op, c, &[("the mean", mean), ("1/σ", inv_std), ("γ", gamma)])?;
        let [mu, r, gm] = [0, 1, 2].map(|i| stats[i].as_slice().expect("contiguous"));
        let (g, x) = (self.contiguous(), x.contiguous());
        let (gs, xs) = (
            g.as_slice().expect("contiguous"),
            x.as_slice().expect("contiguous"),
        );
        let sum_g = channel_sums(d, gs, gs, |_, g, _| g);
        let sum_gx = channel_sums(d, gs, xs, |ch, g, v| g * (v - mu[ch]));
        let m = T::from_f64((n * s).max(1) as f64);
        // dx = a·g − a·Σg/M − (x − μ)·a·r²·Σg(x − μ)/M, with a = γr.
        let k: Vec<(T, T, T)> = (0..c)
            .map(|ch| {
                let a = gm[ch] * r[ch];
                (a, a * sum_g[ch] / m, a * r[ch] * r[ch] * sum_gx[ch] / m)
            })
            .collect();
        let mut dx = storage::scratch(gs.len(), T::zero());
        parallel::for_each_row_chunk(&mut dx, s, |r0, chunk| {
            for (j, row) in chunk.chunks_mut(s.max(1)).enumerate() {
                let at = (r0 + j) * s;
                let ch = (r0 + j) % c;
                let (a, k1, k2) = k[ch];
                for ((o, &g), &v) in row.iter_mut().zip(&gs[at..at + s]).zip(&xs[at..at + s]) {
                    *o = a * g - k1 - (v - mu[ch]) * k2;
                }
            }
        });
        let dgamma: Vec<T> = (0..c).map(|ch| r[ch] * sum_gx[ch]).collect();
        Ok((
            Tensor::from_contiguous(dx, x.shape()),
            Tensor::from_contiguous(dgamma, &[c]),
            Tensor::from_contiguous(sum_g, &[c]),
        ))
    }
}
