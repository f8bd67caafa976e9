//! Reductions over any set of axes (sum, mean, prod, max, min, argmax, argmin, var,
//! std, logsumexp, p-norms), and the row-wise ops softmax, log_softmax and cumsum.
//!
//! Every reduction moves the reduced axes last, makes the data contiguous (a no-op
//! for the common last-axis case) and reduces rows. Long rows are summed in fixed
//! `CHUNK`-sized pieces combined by a fixed pairwise tree, so results do not depend
//! on threads. A sum over the leading axes of a contiguous tensor (a bias gradient,
//! `[N, F]` over N) adds whole rows into column accumulators instead of first
//! copying the tensor transposed, in the same order per column: the same bits.

use crate::element::Element;
use crate::error::{fmt_shape, Error, Result};
use crate::layout::normalize_axes;
use crate::parallel::{self, CHUNK};
use crate::storage;
use crate::tensor::Tensor;

/// Sum of a slice with eight independent accumulators (vectorisable, and more
/// accurate than a single running sum), combined pairwise.
pub(crate) fn sum_lanes<T: Element>(x: &[T]) -> T {
    let mut acc = [T::zero(); 8];
    let mut chunks = x.chunks_exact(8);
    for c in &mut chunks {
        for k in 0..8 {
            acc[k] = acc[k] + c[k];
        }
    }
    for (k, &v) in chunks.remainder().iter().enumerate() {
        acc[k] = acc[k] + v;
    }
    combine_lanes(acc)
}

/// The sum of eight lane accumulators, in the fixed tree every lane sum ends with.
#[inline(always)]
pub(crate) fn combine_lanes<T: Element>(l: [T; 8]) -> T {
    ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]))
}

/// Leaves of the pairwise sum are at most this long.
const PAIRWISE_LEAF: usize = 256;

/// Pairwise (cascade) sum: halves split at a multiple of 8 until a leaf of at most
/// `PAIRWISE_LEAF` elements, which [`sum_lanes`] adds. The error is
/// O((PAIRWISE_LEAF/8 + log₂ n)·ε·Σ|x|) instead of O(n·ε·Σ|x|) for a running sum.
pub(crate) fn sum_pairwise<T: Element>(x: &[T]) -> T {
    if x.len() <= PAIRWISE_LEAF {
        return sum_lanes(x);
    }
    let half = x.len() / 2;
    let half = half - half % 8;
    sum_pairwise(&x[..half]) + sum_pairwise(&x[half..])
}

/// Columns summed together by [`column_sums`]: their eight lanes stay in L1.
const COLUMN_BLOCK: usize = 64;

/// The column sums of the row-major `rows × cols` matrix `x`, each with the bits
/// of [`sum_pairwise`] over its column (the same halving of the rows, each leaf's
/// eight lanes filled row by row), a block of columns at once so that the rows are
/// read where they lie.
fn column_sums<T: Element>(x: &[T], rows: usize, cols: usize) -> Vec<T> {
    let blocks = cols.div_ceil(COLUMN_BLOCK);
    parallel::map_collect(blocks, rows * cols, |b| {
        let c0 = b * COLUMN_BLOCK;
        let mut out = vec![T::zero(); COLUMN_BLOCK.min(cols - c0)];
        pairwise_columns(x, cols, 0..rows, c0, &mut out);
        out
    })
    .concat()
}

/// [`sum_pairwise`] down the columns `c0..c0 + out.len()` of `x` (row stride
/// `ld`) over `rows`, into `out`.
fn pairwise_columns<T: Element>(
    x: &[T],
    ld: usize,
    rows: std::ops::Range<usize>,
    c0: usize,
    out: &mut [T],
) {
    let (len, w) = (rows.len(), out.len());
    if len <= PAIRWISE_LEAF {
        // sum_lanes: element i of the leaf goes to lane i mod 8.
        let mut acc = [[T::zero(); COLUMN_BLOCK]; 8];
        for (i, r) in rows.enumerate() {
            let row = &x[r * ld + c0..r * ld + c0 + w];
            for (a, &v) in acc[i % 8][..w].iter_mut().zip(row) {
                *a = *a + v;
            }
        }
        for (j, o) in out.iter_mut().enumerate() {
            *o = combine_lanes(std::array::from_fn(|k| acc[k][j]));
        }
        return;
    }
    let half = len / 2;
    let half = half - half % 8;
    let mut right = vec![T::zero(); w];
    pairwise_columns(x, ld, rows.start..rows.start + half, c0, out);
    pairwise_columns(x, ld, rows.start + half..rows.end, c0, &mut right);
    for (o, r) in out.iter_mut().zip(right) {
        *o = *o + r;
    }
}

/// Sum of a slice: the pairwise sum, whose top levels split into `CHUNK`-sized pieces
/// computed in parallel when long. The tree is fixed by the length alone.
pub(crate) fn sum_slice<T: Element>(x: &[T]) -> T {
    if x.len() <= CHUNK {
        return sum_pairwise(x);
    }
    let pieces = x.len().div_ceil(CHUNK);
    let partial = parallel::map_collect(pieces, x.len(), |i| {
        sum_pairwise(&x[i * CHUNK..((i + 1) * CHUNK).min(x.len())])
    });
    sum_pairwise(&partial)
}

/// Folds a slice with eight independent lanes (vectorisable), then the lanes.
fn fold_lanes<T: Element>(x: &[T], init: T, f: impl Fn(T, T) -> T) -> T {
    let mut acc = [init; 8];
    let mut chunks = x.chunks_exact(8);
    for c in &mut chunks {
        for k in 0..8 {
            acc[k] = f(acc[k], c[k]);
        }
    }
    for (k, &v) in chunks.remainder().iter().enumerate() {
        acc[k] = f(acc[k], v);
    }
    acc.iter().fold(init, |a, &b| f(a, b))
}

/// The first NaN of a slice, if any.
fn first_nan<T: Element>(x: &[T]) -> Option<T> {
    // A vectorisable scan first; the position only matters when there is a NaN.
    let any = x.iter().fold(false, |a, &v| a | v.is_nan());
    any.then(|| x.iter().copied().find(|v| v.is_nan()).expect("a NaN"))
}

/// Maximum of a slice; NaN if any element is NaN.
fn max_slice<T: Element>(x: &[T]) -> T {
    if let Some(nan) = first_nan(x) {
        return nan;
    }
    fold_lanes(x, T::neg_infinity(), |a, b| if b > a { b } else { a })
}

/// Minimum of a slice; NaN if any element is NaN.
fn min_slice<T: Element>(x: &[T]) -> T {
    if let Some(nan) = first_nan(x) {
        return nan;
    }
    fold_lanes(x, T::infinity(), |a, b| if b < a { b } else { a })
}

/// Index of the first maximum (a NaN counts as the maximum).
fn argmax_slice<T: Element>(x: &[T]) -> usize {
    let mut best = 0;
    for (i, &v) in x.iter().enumerate() {
        if v.is_nan() {
            return i;
        }
        if v > x[best] {
            best = i;
        }
    }
    best
}

/// Index of the first minimum (a NaN counts as the minimum).
fn argmin_slice<T: Element>(x: &[T]) -> usize {
    let mut best = 0;
    for (i, &v) in x.iter().enumerate() {
        if v.is_nan() {
            return i;
        }
        if v < x[best] {
            best = i;
        }
    }
    best
}

/// Σ f(x) over a slice, where `f` maps a piece of input into a buffer: the
/// buffers' pairwise sums over fixed `CHUNK` pieces (in parallel when long), then
/// the pairwise sum of the partials. No buffer longer than `CHUNK` is allocated.
fn sum_mapped<T: Element>(x: &[T], f: impl Fn(&[T], &mut [T]) + Sync) -> T {
    let piece = |i: usize| {
        let p = &x[i * CHUNK..((i + 1) * CHUNK).min(x.len())];
        let mut buf = vec![T::zero(); p.len()];
        f(p, &mut buf);
        sum_pairwise(&buf)
    };
    if x.len() <= CHUNK {
        return piece(0);
    }
    let partial = parallel::map_collect(x.len().div_ceil(CHUNK), x.len(), piece);
    sum_pairwise(&partial)
}

fn logsumexp_slice<T: Element>(x: &[T]) -> T {
    let m = max_slice(x);
    if !m.is_finite() {
        // All −∞ gives −∞; any +∞ gives +∞; NaN stays NaN.
        return m;
    }
    let s = sum_mapped(x, |p, buf| {
        for (b, &v) in buf.iter_mut().zip(p) {
            *b = v - m;
        }
        let shifted = buf.to_vec();
        T::exp_slice(&shifted, buf);
    });
    m + s.ln()
}

impl<T: Element> Tensor<T> {
    /// Reduces each row of `axes` with `f`, giving the reduced shape (axes removed, or
    /// kept as size 1 with `keepdim`). Errors on an empty reduction unless `empty_ok`.
    fn reduce_rows<R: Copy + Send + Sync + 'static>(
        &self,
        op: &'static str,
        axes: &[isize],
        keepdim: bool,
        empty_ok: bool,
        f: impl Fn(&[T]) -> R + Sync,
    ) -> Result<Tensor<R>> {
        let nd = self.ndim();
        let axes = normalize_axes(op, axes, nd)?;
        let kept: Vec<usize> = (0..nd).filter(|a| !axes.contains(a)).collect();
        let row: usize = axes.iter().map(|&a| self.shape()[a]).product();
        if row == 0 && !empty_ok {
            return Err(Error::shape(
                op,
                format!(
                    "cannot reduce an empty set: axes {axes:?} of shape {} hold no elements",
                    fmt_shape(self.shape())
                ),
            ));
        }
        let out_shape: Vec<usize> = if keepdim {
            (0..nd)
                .map(|a| {
                    if axes.contains(&a) {
                        1
                    } else {
                        self.shape()[a]
                    }
                })
                .collect()
        } else {
            kept.iter().map(|&a| self.shape()[a]).collect()
        };
        let rows: usize = kept.iter().map(|&a| self.shape()[a]).product();
        let perm: Vec<isize> = kept.iter().chain(&axes).map(|&a| a as isize).collect();
        let x = self.permute(&perm)?.contiguous();
        let data = x.as_slice().expect("contiguous");
        let out = parallel::map_collect(rows, rows * row, |r| f(&data[r * row..(r + 1) * row]));
        Ok(Tensor::from_contiguous(out, &out_shape))
    }

    /// Sum over `axes` (an empty sum is 0).
    ///
    /// ```
    /// use tensor::Tensor;
    /// # fn main() -> tensor::Result<()> {
    /// let x = Tensor::<f64>::from_vec(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])?;
    /// assert_eq!(x.sum(&[0], false)?.to_vec(), vec![5.0, 7.0, 9.0]); // down the columns
    /// let rows = x.sum(&[-1], true)?; // along each row, keeping the axis
    /// assert_eq!((rows.shape(), rows.to_vec()), (&[2, 1][..], vec![6.0, 15.0]));
    /// assert_eq!(x.sum(&[0, 1], false)?.item()?, 21.0);
    /// assert_eq!(x.sum_all().item()?, 21.0);
    /// assert!(x.sum(&[2], false).is_err()); // no axis 2
    /// # Ok(())
    /// # }
    /// ```
    pub fn sum(&self, axes: &[isize], keepdim: bool) -> Result<Tensor<T>> {
        if let Some((rest, tail)) = self.trailing_split("sum", axes)? {
            let kept = self.sum(&tail, true)?.sum(&rest, true)?;
            return self.squeeze_reduced(kept, &rest, &tail, keepdim);
        }
        if let Some(sums) = self.leading_sum(axes, keepdim)? {
            return Ok(sums);
        }
        self.reduce_rows("sum", axes, keepdim, true, sum_slice)
    }

    /// The sum over `axes` when they are the leading ones of a contiguous tensor and
    /// hold at most `CHUNK` elements a column (so that [`sum_slice`] would take one
    /// pairwise sum): by [`column_sums`], without the transposed copy. `None`
    /// otherwise.
    fn leading_sum(&self, axes: &[isize], keepdim: bool) -> Result<Option<Tensor<T>>> {
        let nd = self.ndim();
        let mut ax = normalize_axes("sum", axes, nd)?;
        ax.sort_unstable();
        let lead = ax.len();
        let rows: usize = self.shape()[..lead].iter().product();
        if !self.is_contiguous()
            || lead == 0
            || lead == nd
            || ax != (0..lead).collect::<Vec<_>>()
            || rows > CHUNK
        {
            return Ok(None);
        }
        let cols: usize = self.shape()[lead..].iter().product();
        let sums = column_sums(self.as_slice().expect("contiguous"), rows, cols);
        let shape: Vec<usize> = if keepdim {
            (0..nd)
                .map(|a| if a < lead { 1 } else { self.shape()[a] })
                .collect()
        } else {
            self.shape()[lead..].to_vec()
        };
        Ok(Some(Tensor::from_contiguous(sums, &shape)))
    }

    /// For a contiguous tensor reduced over some trailing axes and some others (a
    /// per-channel statistic of `[N, C, H, W]` over axes 0, 2, 3): the other axes and
    /// the trailing run. Reducing the trailing run first needs no copy (its elements
    /// are contiguous), so only the small partial results are gathered for the rest;
    /// a single reduction would first copy the whole tensor into the reduced order.
    fn trailing_split(
        &self,
        op: &'static str,
        axes: &[isize],
    ) -> Result<Option<(Vec<isize>, Vec<isize>)>> {
        let nd = self.ndim();
        let mut ax = normalize_axes(op, axes, nd)?;
        ax.sort_unstable();
        let suffix = (0..nd).rev().take_while(|a| ax.contains(a)).count();
        if !self.is_contiguous() || suffix == 0 || suffix == ax.len() {
            return Ok(None);
        }
        let (rest, tail) = ax.split_at(ax.len() - suffix);
        let as_isize = |v: &[usize]| v.iter().map(|&a| a as isize).collect();
        Ok(Some((as_isize(rest), as_isize(tail))))
    }

    /// `kept` (this tensor reduced over `rest` and `tail` with the axes kept), with
    /// the reduced axes dropped unless `keepdim`.
    fn squeeze_reduced(
        &self,
        kept: Tensor<T>,
        rest: &[isize],
        tail: &[isize],
        keepdim: bool,
    ) -> Result<Tensor<T>> {
        if keepdim {
            return Ok(kept);
        }
        let shape: Vec<usize> = (0..self.ndim())
            .filter(|&a| !rest.contains(&(a as isize)) && !tail.contains(&(a as isize)))
            .map(|a| self.shape()[a])
            .collect();
        kept.reshape(&shape)
    }

    /// Elements reduced over `rest` and `tail` together.
    fn reduced_count(&self, rest: &[isize], tail: &[isize]) -> usize {
        rest.iter()
            .chain(tail)
            .map(|&a| self.shape()[a as usize])
            .product()
    }

    /// Sum of all elements, as a rank-0 tensor.
    pub fn sum_all(&self) -> Tensor<T> {
        let x = self.contiguous();
        Tensor::scalar(sum_slice(x.as_slice().expect("contiguous")))
    }

    /// Mean over `axes`.
    ///
    /// ```
    /// use tensor::Tensor;
    /// # fn main() -> tensor::Result<()> {
    /// let x = Tensor::<f64>::from_vec(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])?;
    /// assert_eq!(x.mean(&[1], false)?.to_vec(), vec![2.0, 5.0]);
    /// assert_eq!(x.mean(&[0], true)?.shape(), &[1, 3]);
    /// assert_eq!(x.mean_all()?.item()?, 3.5);
    /// // The mean of nothing is an error, not a NaN.
    /// assert!(Tensor::<f64>::zeros(&[0, 3])?.mean(&[0], false).is_err());
    /// # Ok(())
    /// # }
    /// ```
    pub fn mean(&self, axes: &[isize], keepdim: bool) -> Result<Tensor<T>> {
        if let Some((rest, tail)) = self.trailing_split("mean", axes)? {
            let n = self.reduced_count(&rest, &tail);
            if n == 0 {
                // The mean of nothing is an error, which reduce_rows gives.
                return self.reduce_rows("mean", axes, keepdim, false, sum_slice);
            }
            let kept = self.sum(&tail, true)?.sum(&rest, true)?;
            let kept = kept.map(|v| v / T::from_usize(n));
            return self.squeeze_reduced(kept, &rest, &tail, keepdim);
        }
        self.reduce_rows("mean", axes, keepdim, false, |r| {
            sum_slice(r) / T::from_usize(r.len())
        })
    }

    /// Mean of all elements.
    pub fn mean_all(&self) -> Result<Tensor<T>> {
        let all: Vec<isize> = (0..self.ndim() as isize).collect();
        self.mean(&all, false)
    }

    /// Product over `axes` (an empty product is 1).
    pub fn prod(&self, axes: &[isize], keepdim: bool) -> Result<Tensor<T>> {
        self.reduce_rows("prod", axes, keepdim, true, |r| {
            r.iter().fold(T::one(), |a, &b| a * b)
        })
    }

    /// Maximum over `axes` (NaN if any element is NaN).
    ///
    /// ```
    /// use tensor::Tensor;
    /// # fn main() -> tensor::Result<()> {
    /// let x = Tensor::<f64>::from_vec(vec![3.0, 9.0, 1.0, 4.0, 2.0, 8.0], &[2, 3])?;
    /// assert_eq!(x.max(&[1], false)?.to_vec(), vec![9.0, 8.0]);
    /// assert_eq!(x.max(&[0], false)?.to_vec(), vec![4.0, 9.0, 8.0]);
    /// assert_eq!(x.argmax(1, false)?.to_vec(), vec![1, 2]);
    /// assert_eq!((x.max_all()?, x.min_all()?), (9.0, 1.0));
    /// # Ok(())
    /// # }
    /// ```
    pub fn max(&self, axes: &[isize], keepdim: bool) -> Result<Tensor<T>> {
        self.reduce_rows("max", axes, keepdim, false, max_slice)
    }

    /// Minimum over `axes` (NaN if any element is NaN).
    pub fn min(&self, axes: &[isize], keepdim: bool) -> Result<Tensor<T>> {
        self.reduce_rows("min", axes, keepdim, false, min_slice)
    }

    /// Largest element of the whole tensor.
    pub fn max_all(&self) -> Result<T> {
        let all: Vec<isize> = (0..self.ndim() as isize).collect();
        self.max(&all, false)?.item()
    }

    /// Smallest element of the whole tensor.
    pub fn min_all(&self) -> Result<T> {
        let all: Vec<isize> = (0..self.ndim() as isize).collect();
        self.min(&all, false)?.item()
    }

    /// Index of the first maximum along `axis`.
    pub fn argmax(&self, axis: isize, keepdim: bool) -> Result<Tensor<usize>> {
        self.reduce_rows("argmax", &[axis], keepdim, false, argmax_slice)
    }

    /// Index of the first minimum along `axis`.
    pub fn argmin(&self, axis: isize, keepdim: bool) -> Result<Tensor<usize>> {
        self.reduce_rows("argmin", &[axis], keepdim, false, argmin_slice)
    }

    /// Variance over `axes` with `correction` (1 gives the unbiased estimate).
    pub fn var(&self, axes: &[isize], correction: usize, keepdim: bool) -> Result<Tensor<T>> {
        let nd = self.ndim();
        let ax = normalize_axes("var", axes, nd)?;
        let n: usize = ax.iter().map(|&a| self.shape()[a]).product();
        if n <= correction {
            return Err(Error::value(
                "var",
                format!(
                    "{n} elements per group with correction {correction} leave no degrees of freedom"
                ),
            ));
        }
        let denom = T::from_usize(n - correction);
        if let Some((rest, tail)) = self.trailing_split("var", axes)? {
            // Two passes, as below: the mean, then the centred squares, each summed
            // trailing run first.
            let mut all = rest.clone();
            all.extend(&tail);
            let mean = self.mean(&all, true)?;
            let dev = self.sub(&mean)?.square();
            let kept = dev.sum(&tail, true)?.sum(&rest, true)?;
            let kept = kept.map(|v| v / denom);
            return self.squeeze_reduced(kept, &rest, &tail, keepdim);
        }
        self.reduce_rows("var", axes, keepdim, false, |r| {
            let mean = sum_slice(r) / T::from_usize(r.len());
            let dev: Vec<T> = r.iter().map(|&v| (v - mean) * (v - mean)).collect();
            sum_slice(&dev) / denom
        })
    }

    /// Standard deviation over `axes` with `correction`.
    pub fn std(&self, axes: &[isize], correction: usize, keepdim: bool) -> Result<Tensor<T>> {
        Ok(self.var(axes, correction, keepdim)?.sqrt())
    }

    /// ln Σ exp(x) over `axes`, computed stably (shifted by the maximum).
    pub fn logsumexp(&self, axes: &[isize], keepdim: bool) -> Result<Tensor<T>> {
        self.reduce_rows("logsumexp", axes, keepdim, false, logsumexp_slice)
    }

    /// The p-norm (Σ|x|ᵖ)^(1/p) over `axes`; `p = f64::INFINITY` gives max |x|.
    pub fn norm(&self, p: f64, axes: &[isize], keepdim: bool) -> Result<Tensor<T>> {
        if p.is_nan() || p <= 0.0 {
            return Err(Error::value("norm", format!("p must be positive, got {p}")));
        }
        if p == f64::INFINITY {
            return self.reduce_rows("norm", axes, keepdim, true, |r| {
                r.iter().fold(T::zero(), |m, &v| {
                    if v.is_nan() || m.is_nan() {
                        T::nan()
                    } else {
                        m.max(v.abs())
                    }
                })
            });
        }
        let pt = T::from_f64(p);
        self.reduce_rows("norm", axes, keepdim, true, |r| {
            let powed: Vec<T> = if p == 2.0 {
                r.iter().map(|&v| v * v).collect()
            } else if p == 1.0 {
                r.iter().map(|&v| v.abs()).collect()
            } else {
                r.iter().map(|&v| v.abs().powf(pt)).collect()
            };
            let s = sum_slice(&powed);
            if p == 2.0 {
                s.sqrt()
            } else if p == 1.0 {
                s
            } else {
                s.powf(pt.recip())
            }
        })
    }

    /// Sums over the axes that broadcasting added or expanded, so that the result has
    /// `shape` (the gradient of `broadcast_to(shape)`).
    pub fn sum_to_shape(&self, shape: &[usize]) -> Result<Tensor<T>> {
        if self.shape() == shape {
            return Ok(self.clone());
        }
        let nd = self.ndim();
        let target_ok = shape.len() <= nd
            && shape
                .iter()
                .zip(&self.shape()[nd - shape.len()..])
                .all(|(&t, &s)| t == s || t == 1);
        if !target_ok {
            return Err(Error::shape(
                "sum_to_shape",
                format!(
                    "{} is not a broadcast of {}",
                    fmt_shape(self.shape()),
                    fmt_shape(shape)
                ),
            ));
        }
        let lead = nd - shape.len();
        let axes: Vec<isize> = (0..nd)
            .filter(|&a| a < lead || (shape[a - lead] == 1 && self.shape()[a] != 1))
            .map(|a| a as isize)
            .collect();
        self.sum(&axes, true)?.reshape(shape)
    }

    /// Applies a row kernel along `axis` (moved last, contiguous), restoring the axis
    /// order afterwards.
    fn along_axis(
        &self,
        op: &'static str,
        axis: isize,
        kernel: impl Fn(&[T], &mut [T]) + Sync,
    ) -> Result<Tensor<T>> {
        let nd = self.ndim();
        let ax = crate::layout::normalize_axis(op, axis, nd)?;
        let mut perm: Vec<isize> = (0..nd as isize).filter(|&a| a != ax as isize).collect();
        perm.push(ax as isize);
        let x = self.permute(&perm)?.contiguous();
        let data = x.as_slice().expect("contiguous");
        let len = self.shape()[ax];
        let mut out = storage::scratch(data.len(), T::zero());
        parallel::for_each_row_chunk(&mut out, len, |r0, chunk| {
            for (i, o) in chunk.chunks_mut(len).enumerate() {
                let r = r0 + i;
                kernel(&data[r * len..(r + 1) * len], o);
            }
        });
        let y = Tensor::from_contiguous(out, x.shape());
        if ax == nd - 1 {
            return Ok(y);
        }
        let mut inv = vec![0isize; nd];
        for (i, &p) in perm.iter().enumerate() {
            inv[p as usize] = i as isize;
        }
        Ok(y.permute(&inv)?.contiguous())
    }

    /// exp(x − logsumexp(x)) along `axis`: each slice sums to 1.
    ///
    /// ```
    /// use tensor::Tensor;
    /// # fn main() -> tensor::Result<()> {
    /// // Large logits do not overflow: the row's maximum is subtracted first.
    /// let x = Tensor::<f64>::from_vec(vec![1000.0, 1000.0, 0.0, 2.0_f64.ln()], &[2, 2])?;
    /// let p = x.softmax(-1)?;
    /// assert_eq!(p.get(&[0, 0])?, 0.5);
    /// assert!((p.get(&[1, 1])? - 2.0 / 3.0).abs() < 1e-15);
    /// let rows = p.sum(&[-1], false)?.to_vec();
    /// assert!(rows.iter().all(|s| (s - 1.0).abs() < 1e-15));
    /// # Ok(())
    /// # }
    /// ```
    pub fn softmax(&self, axis: isize) -> Result<Tensor<T>> {
        self.along_axis("softmax", axis, |x, o| {
            let m = max_slice(x);
            let shifted: Vec<T> = x.iter().map(|&v| v - m).collect();
            T::exp_slice(&shifted, o);
            let s = sum_slice(o);
            for v in o.iter_mut() {
                *v = *v / s;
            }
        })
    }

    /// x − logsumexp(x) along `axis`, computed stably.
    pub fn log_softmax(&self, axis: isize) -> Result<Tensor<T>> {
        self.along_axis("log_softmax", axis, |x, o| {
            let lse = logsumexp_slice(x);
            for (o, &v) in o.iter_mut().zip(x) {
                *o = v - lse;
            }
        })
    }

    /// Running sum along `axis`.
    pub fn cumsum(&self, axis: isize) -> Result<Tensor<T>> {
        self.along_axis("cumsum", axis, |x, o| {
            let mut acc = T::zero();
            for (o, &v) in o.iter_mut().zip(x) {
                acc = acc + v;
                *o = acc;
            }
        })
    }
}
