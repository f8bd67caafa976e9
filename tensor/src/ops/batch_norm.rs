//! Batch normalisation's per-channel kernels over an `[N, C, ...]` tensor (axis 1
//! the channel, every other axis reduced): the batch statistics, the per-channel
//! affine map `y = x·a + b`, and the fused backward. As one op each, the training
//! step makes a few passes over the activation where the composition of means,
//! variances and broadcast products made a dozen: the statistics take a channel's
//! two passes back to back (the second over rows still in cache), the backward's
//! two sums share one pass, and the summand is formed on the way, not in a buffer.
//!
//! Every channel's sums run over the rows `(n, c, ·)` in order — each row in
//! blocks of 256 summed in eight lanes, the block sums pairwise, then the
//! rows pairwise — and channels split across threads whole, so the results are
//! the same bits at any thread count.

use super::reduce::{combine_lanes, sum_pairwise};
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

/// Σ f(aᵢ, bᵢ) over one block (at most [`BLOCK`] elements), for each of f's K
/// outputs: eight lanes, combined as `sum_lanes` combines them, with f applied on
/// the way (the same bits as summing the mapped block with `sum_lanes`).
#[inline(always)]
fn block_sums<T: Element, const K: usize>(a: &[T], b: &[T], f: &impl Fn(T, T) -> [T; K]) -> [T; K] {
    let mut acc = [[T::zero(); 8]; K];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        // Lane by lane within each output, so that the eight adds vectorise.
        for (k, acc) in acc.iter_mut().enumerate() {
            for l in 0..8 {
                acc[l] = acc[l] + f(x[l], y[l])[k];
            }
        }
    }
    for (l, (&x, &y)) in ra.iter().zip(rb).enumerate() {
        let v = f(x, y);
        for k in 0..K {
            acc[k][l] = acc[k][l] + v[k];
        }
    }
    acc.map(combine_lanes)
}

/// Σ f(aᵢ, bᵢ) over a row, for each of f's K outputs (see the module doc for the
/// order).
fn sum_row<T: Element, const K: usize>(a: &[T], b: &[T], f: &impl Fn(T, T) -> [T; K]) -> [T; K] {
    if a.len() <= BLOCK {
        // One block (the deep layers' small maps): no list of block sums.
        return block_sums(a, b, f);
    }
    let nb = a.len().div_ceil(BLOCK);
    // Block sums output by output: `blocks[k·nb + j]`.
    let mut blocks = vec![T::zero(); K * nb];
    for (j, (a, b)) in a.chunks(BLOCK).zip(b.chunks(BLOCK)).enumerate() {
        for (k, v) in block_sums(a, b, f).into_iter().enumerate() {
            blocks[k * nb + j] = v;
        }
    }
    std::array::from_fn(|k| sum_pairwise(&blocks[k * nb..(k + 1) * nb]))
}

/// For channel `ch`, Σ over its rows of f's K outputs (a and b shaped alike): the
/// rows' sums, then those pairwise.
fn channel_sum<T: Element, const K: usize>(
    (n, c, s): (usize, usize, usize),
    ch: usize,
    a: &[T],
    b: &[T],
    f: impl Fn(T, T) -> [T; K],
) -> [T; K] {
    let mut rows = vec![T::zero(); K * n];
    for i in 0..n {
        let at = (i * c + ch) * s;
        for (k, v) in sum_row(&a[at..at + s], &b[at..at + s], &f)
            .into_iter()
            .enumerate()
        {
            rows[k * n + i] = v;
        }
    }
    std::array::from_fn(|k| sum_pairwise(&rows[k * n..(k + 1) * n]))
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
        // Each channel's two passes run back to back, the second over rows the
        // first has just brought into cache.
        let (mean, var): (Vec<T>, Vec<T>) = parallel::map_collect(c, n * c * s, |ch| {
            let [sum] = channel_sum(d, ch, xs, xs, |v, _| [v]);
            let mean = sum / count;
            let [dev2] = channel_sum(d, ch, xs, xs, |v, _| [(v - mean) * (v - mean)]);
            (mean, dev2 / count)
        })
        .into_iter()
        .unzip();
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
        // Σg and Σg(x − μ) of each channel in one pass over its rows.
        let (sum_g, sum_gx): (Vec<T>, Vec<T>) = parallel::map_collect(c, n * c * s, |ch| {
            let m = mu[ch];
            let [sg, sgx] = channel_sum(d, ch, gs, xs, |g, v| [g, g * (v - m)]);
            (sg, sgx)
        })
        .into_iter()
        .unzip();
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
