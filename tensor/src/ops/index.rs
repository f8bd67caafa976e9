//! Indexing and assembling: index_select, gather, scatter_add, concat, stack,
//! split/chunk, constant pad, one_hot and repeat.

use crate::element::Element;
use crate::error::{fmt_shape, Error, Result};
use crate::layout::{checked_numel, contiguous_strides, normalize_axis, Layout, Rows};
use crate::storage;
use crate::tensor::Tensor;

/// Visits every multi-index of `shape` in row-major order.
fn for_each_index(shape: &[usize], mut f: impl FnMut(&[usize])) {
    if shape.contains(&0) {
        return;
    }
    let mut idx = vec![0usize; shape.len()];
    loop {
        f(&idx);
        let mut d = shape.len();
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            idx[d] += 1;
            if idx[d] < shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

/// Checks that `index` has the rank of `base` and fits inside it off `axis`.
fn check_index_shape(op: &'static str, base: &[usize], index: &[usize], axis: usize) -> Result<()> {
    let fits = index.len() == base.len()
        && index
            .iter()
            .zip(base)
            .enumerate()
            .all(|(d, (&i, &b))| d == axis || i <= b);
    if fits {
        Ok(())
    } else {
        Err(Error::shape(
            op,
            format!(
                "index shape {} does not fit tensor shape {} off axis {axis}",
                fmt_shape(index),
                fmt_shape(base)
            ),
        ))
    }
}

impl<T: Copy + Send + Sync + 'static> Tensor<T> {
    /// The slices at `indices` along `axis`, in that order (indices may repeat).
    ///
    /// ```
    /// use tensor::Tensor;
    /// # fn main() -> tensor::Result<()> {
    /// let x = Tensor::<f64>::arange(0.0, 6.0, 1.0)?.reshape(&[3, 2])?;
    /// let rows = x.index_select(0, &[2, 0, 2])?; // rows may repeat
    /// assert_eq!(rows.shape(), &[3, 2]);
    /// assert_eq!(rows.to_vec(), vec![4.0, 5.0, 0.0, 1.0, 4.0, 5.0]);
    /// let e = x.index_select(0, &[3]).unwrap_err();
    /// assert_eq!(e.to_string(), "index_select: index 3 is out of range for axis 0 of length 3");
    /// # Ok(())
    /// # }
    /// ```
    pub fn index_select(&self, axis: isize, indices: &[usize]) -> Result<Tensor<T>> {
        let ax = normalize_axis("index_select", axis, self.ndim())?;
        let d = self.shape()[ax];
        if let Some(&bad) = indices.iter().find(|&&i| i >= d) {
            return Err(Error::Index {
                op: "index_select",
                index: bad,
                len: d,
                axis: ax,
            });
        }
        let mut shape = self.shape().to_vec();
        shape[ax] = indices.len();
        checked_numel("index_select", &shape)?;
        let outer: usize = self.shape()[..ax].iter().product();
        let inner: usize = self.shape()[ax + 1..].iter().product();
        let x = self.contiguous();
        let src = x.as_slice().expect("contiguous");
        let mut out = Vec::with_capacity(outer * indices.len() * inner);
        for o in 0..outer {
            for &i in indices {
                let s = (o * d + i) * inner;
                out.extend_from_slice(&src[s..s + inner]);
            }
        }
        Ok(Tensor::from_contiguous(out, &shape))
    }

    /// `out[..., j, ...] = self[..., index[..., j, ...], ...]` along `axis`; the result
    /// has the shape of `index`, which must have the same rank and fit off `axis`.
    pub fn gather(&self, axis: isize, index: &Tensor<usize>) -> Result<Tensor<T>> {
        let ax = normalize_axis("gather", axis, self.ndim())?;
        check_index_shape("gather", self.shape(), index.shape(), ax)?;
        let d = self.shape()[ax];
        let src = self.storage();
        let l = self.layout();
        let idx = index.to_vec();
        let mut out = Vec::with_capacity(idx.len());
        let mut k = 0;
        let mut err = None;
        for_each_index(index.shape(), |pos| {
            let i = idx[k];
            k += 1;
            if i >= d {
                err.get_or_insert(Error::Index {
                    op: "gather",
                    index: i,
                    len: d,
                    axis: ax,
                });
                out.push(src[l.offset()]);
                return;
            }
            let mut p = l.offset() as isize;
            for (dim, (&q, &s)) in pos.iter().zip(l.strides()).enumerate() {
                p += if dim == ax { i as isize } else { q as isize } * s;
            }
            out.push(src[p as usize]);
        });
        match err {
            Some(e) => Err(e),
            None => Ok(Tensor::from_contiguous(out, index.shape())),
        }
    }

    /// Joins tensors along `axis`; all other axes must agree.
    pub fn cat(tensors: &[&Tensor<T>], axis: isize) -> Result<Tensor<T>> {
        let first = tensors
            .first()
            .ok_or_else(|| Error::value("cat", "needs at least one tensor"))?;
        let nd = first.ndim();
        let ax = normalize_axis("cat", axis, nd)?;
        for t in tensors {
            let same = t.ndim() == nd
                && t.shape()
                    .iter()
                    .zip(first.shape())
                    .enumerate()
                    .all(|(d, (a, b))| d == ax || a == b);
            if !same {
                return Err(Error::shape(
                    "cat",
                    format!(
                        "shapes {} and {} differ off axis {ax}",
                        fmt_shape(first.shape()),
                        fmt_shape(t.shape())
                    ),
                ));
            }
        }
        let mut shape = first.shape().to_vec();
        shape[ax] = tensors.iter().map(|t| t.shape()[ax]).sum();
        let n = checked_numel("cat", &shape)?;
        let outer: usize = shape[..ax].iter().product();
        let inner: usize = shape[ax + 1..].iter().product();
        let parts: Vec<Tensor<T>> = tensors.iter().map(|t| t.contiguous()).collect();
        let mut out = Vec::with_capacity(n);
        for o in 0..outer {
            for t in &parts {
                let block = t.shape()[ax] * inner;
                let s = t.as_slice().expect("contiguous");
                out.extend_from_slice(&s[o * block..(o + 1) * block]);
            }
        }
        Ok(Tensor::from_contiguous(out, &shape))
    }

    /// Stacks same-shaped tensors along a new axis `axis`.
    pub fn stack(tensors: &[&Tensor<T>], axis: isize) -> Result<Tensor<T>> {
        let first = tensors
            .first()
            .ok_or_else(|| Error::value("stack", "needs at least one tensor"))?;
        if let Some(t) = tensors.iter().find(|t| t.shape() != first.shape()) {
            return Err(Error::shape(
                "stack",
                format!(
                    "shapes {} and {} differ",
                    fmt_shape(first.shape()),
                    fmt_shape(t.shape())
                ),
            ));
        }
        let ax = normalize_axis("stack", axis, first.ndim() + 1)?;
        let expanded = tensors
            .iter()
            .map(|t| t.unsqueeze(ax as isize))
            .collect::<Result<Vec<_>>>()?;
        let refs: Vec<&Tensor<T>> = expanded.iter().collect();
        Tensor::cat(&refs, ax as isize)
    }

    /// Views of consecutive pieces of `sizes` along `axis` (sizes must add up to it).
    pub fn split(&self, axis: isize, sizes: &[usize]) -> Result<Vec<Tensor<T>>> {
        let ax = normalize_axis("split", axis, self.ndim())?;
        let total = sizes.iter().try_fold(0usize, |a, &b| a.checked_add(b));
        if total != Some(self.shape()[ax]) {
            return Err(Error::shape(
                "split",
                format!(
                    "sizes {sizes:?} do not add up to axis {ax} of shape {}",
                    fmt_shape(self.shape())
                ),
            ));
        }
        let mut start = 0;
        sizes
            .iter()
            .map(|&s| {
                let t = self.narrow(ax as isize, start, s);
                start += s;
                t
            })
            .collect()
    }

    /// Splits `axis` into `n` pieces of ⌈len/n⌉ (the last may be smaller; fewer pieces
    /// when the axis is short).
    pub fn chunk(&self, n: usize, axis: isize) -> Result<Vec<Tensor<T>>> {
        let ax = normalize_axis("chunk", axis, self.ndim())?;
        if n == 0 {
            return Err(Error::value(
                "chunk",
                "the number of chunks must be positive",
            ));
        }
        let d = self.shape()[ax];
        let size = d.div_ceil(n).max(1);
        let mut sizes = vec![];
        let mut left = d;
        while left > 0 {
            let s = size.min(left);
            sizes.push(s);
            left -= s;
        }
        self.split(axis, &sizes)
    }

    /// Pads with `value`: `pads[d] = (before, after)` for every axis `d`.
    pub fn pad(&self, pads: &[(usize, usize)], value: T) -> Result<Tensor<T>> {
        if pads.len() != self.ndim() {
            return Err(Error::shape(
                "pad",
                format!(
                    "{} (before, after) pairs given for shape {}",
                    pads.len(),
                    fmt_shape(self.shape())
                ),
            ));
        }
        let shape = self
            .shape()
            .iter()
            .zip(pads)
            .map(|(&d, &(b, a))| d.checked_add(b).and_then(|v| v.checked_add(a)))
            .collect::<Option<Vec<usize>>>()
            .ok_or_else(|| Error::value("pad", format!("padding {pads:?} overflows")))?;
        let n = checked_numel("pad", &shape)?;
        let mut out = storage::filled(n, value);
        if self.numel() > 0 {
            let strides = contiguous_strides(&shape);
            let offset: isize = pads
                .iter()
                .zip(&strides)
                .map(|(&(b, _), &s)| b as isize * s)
                .sum();
            let interior = Layout::from_parts(self.shape().to_vec(), strides, offset as usize);
            let rows = Rows::new([self.layout(), &interior]);
            let src = self.storage();
            rows.for_each(0, rows.count, |_, [ps, pd]| {
                let (mut qs, mut qd) = (ps as isize, pd as isize);
                for _ in 0..rows.len {
                    out[qd as usize] = src[qs as usize];
                    qs += rows.inner[0];
                    qd += rows.inner[1];
                }
            });
        }
        Ok(Tensor::from_contiguous(out, &shape))
    }

    /// Tiles the tensor `reps[d]` times along each axis (leading reps add axes).
    pub fn repeat(&self, reps: &[usize]) -> Result<Tensor<T>> {
        if reps.len() < self.ndim() {
            return Err(Error::shape(
                "repeat",
                format!(
                    "{} repetition counts for shape {}",
                    reps.len(),
                    fmt_shape(self.shape())
                ),
            ));
        }
        let lead = reps.len() - self.ndim();
        let dims: Vec<usize> = (0..reps.len())
            .map(|i| if i < lead { 1 } else { self.shape()[i - lead] })
            .collect();
        let mut interleaved = Vec::with_capacity(2 * dims.len());
        let mut target = Vec::with_capacity(2 * dims.len());
        let mut out_shape = Vec::with_capacity(dims.len());
        for (&r, &d) in reps.iter().zip(&dims) {
            interleaved.extend([1, d]);
            target.extend([r, d]);
            out_shape.push(
                r.checked_mul(d).ok_or_else(|| {
                    Error::value("repeat", format!("repetitions {reps:?} overflow"))
                })?,
            );
        }
        checked_numel("repeat", &out_shape)?;
        self.reshape(&interleaved)?
            .broadcast_to(&target)?
            .contiguous()
            .reshape(&out_shape)
    }
}

impl<T: Element> Tensor<T> {
    /// A copy of `self` with the slices of `src` added at `indices` along `axis`
    /// (repeated indices accumulate): the adjoint of [`Tensor::index_select`].
    pub fn index_add(&self, axis: isize, indices: &[usize], src: &Tensor<T>) -> Result<Tensor<T>> {
        let ax = normalize_axis("index_add", axis, self.ndim())?;
        let mut want = self.shape().to_vec();
        want[ax] = indices.len();
        if src.shape() != want.as_slice() {
            return Err(Error::shape(
                "index_add",
                format!(
                    "source shape {} should be {} for {} indices into {}",
                    fmt_shape(src.shape()),
                    fmt_shape(&want),
                    indices.len(),
                    fmt_shape(self.shape())
                ),
            ));
        }
        let d = self.shape()[ax];
        if let Some(&bad) = indices.iter().find(|&&i| i >= d) {
            return Err(Error::Index {
                op: "index_add",
                index: bad,
                len: d,
                axis: ax,
            });
        }
        let outer: usize = self.shape()[..ax].iter().product();
        let inner: usize = self.shape()[ax + 1..].iter().product();
        let mut out = self.to_vec();
        let s = src.contiguous();
        let sv = s.as_slice().expect("contiguous");
        for o in 0..outer {
            for (j, &i) in indices.iter().enumerate() {
                let dst = (o * d + i) * inner;
                let from = (o * indices.len() + j) * inner;
                for q in 0..inner {
                    out[dst + q] = out[dst + q] + sv[from + q];
                }
            }
        }
        Ok(Tensor::from_contiguous(out, self.shape()))
    }

    /// A copy of `self` whose elements `start, start + step, ...` along `axis` are
    /// replaced by `src` (which has the shape of that slice): the adjoint of
    /// [`Tensor::slice`] when `self` is zero.
    pub fn slice_assign(
        &self,
        axis: isize,
        start: usize,
        step: usize,
        src: &Tensor<T>,
    ) -> Result<Tensor<T>> {
        let ax = normalize_axis("slice_assign", axis, self.ndim())?;
        let base = Tensor::from_contiguous(self.to_vec(), self.shape());
        let n = src.shape().get(ax).copied().unwrap_or(0);
        let end = if n == 0 {
            start
        } else {
            start + (n - 1) * step + 1
        };
        let target = base.slice(axis, start, end, step)?;
        if target.shape() != src.shape() || end > self.shape()[ax] {
            return Err(Error::shape(
                "slice_assign",
                format!(
                    "source shape {} does not fit {start}..{end} step {step} of axis {ax} in {}",
                    fmt_shape(src.shape()),
                    fmt_shape(self.shape())
                ),
            ));
        }
        let mut out = base.to_vec();
        if src.numel() > 0 {
            let rows = Rows::new([src.layout(), target.layout()]);
            let sv = src.storage();
            rows.for_each(0, rows.count, |_, [ps, pd]| {
                let (mut qs, mut qd) = (ps as isize, pd as isize);
                for _ in 0..rows.len {
                    out[qd as usize] = sv[qs as usize];
                    qs += rows.inner[0];
                    qd += rows.inner[1];
                }
            });
        }
        Ok(Tensor::from_contiguous(out, self.shape()))
    }

    /// A copy of `self` with `src` added at the positions `index` names along `axis`:
    /// `out[..., index[p], ...] += src[p]` (`index` and `src` have the same shape).
    pub fn scatter_add(
        &self,
        axis: isize,
        index: &Tensor<usize>,
        src: &Tensor<T>,
    ) -> Result<Tensor<T>> {
        let ax = normalize_axis("scatter_add", axis, self.ndim())?;
        if index.shape() != src.shape() {
            return Err(Error::shape(
                "scatter_add",
                format!(
                    "index shape {} and source shape {} differ",
                    fmt_shape(index.shape()),
                    fmt_shape(src.shape())
                ),
            ));
        }
        check_index_shape("scatter_add", self.shape(), index.shape(), ax)?;
        let d = self.shape()[ax];
        let idx = index.to_vec();
        if let Some(&bad) = idx.iter().find(|&&i| i >= d) {
            return Err(Error::Index {
                op: "scatter_add",
                index: bad,
                len: d,
                axis: ax,
            });
        }
        let vals = src.to_vec();
        let mut out = self.to_vec();
        let strides = contiguous_strides(self.shape());
        let mut k = 0;
        for_each_index(index.shape(), |pos| {
            let mut p = 0isize;
            for (dim, (&q, &s)) in pos.iter().zip(&strides).enumerate() {
                p += if dim == ax {
                    idx[k] as isize
                } else {
                    q as isize
                } * s;
            }
            out[p as usize] = out[p as usize] + vals[k];
            k += 1;
        });
        Ok(Tensor::from_contiguous(out, self.shape()))
    }

    /// Rows of the identity: `out[i, labels[i]] = 1`, shape `[n, classes]`.
    pub fn one_hot(labels: &[usize], classes: usize) -> Result<Tensor<T>> {
        if let Some(&bad) = labels.iter().find(|&&l| l >= classes) {
            return Err(Error::Index {
                op: "one_hot",
                index: bad,
                len: classes,
                axis: 1,
            });
        }
        let n = checked_numel("one_hot", &[labels.len(), classes])?;
        let mut out = storage::filled(n, T::zero());
        for (i, &l) in labels.iter().enumerate() {
            out[i * classes + l] = T::one();
        }
        Ok(Tensor::from_contiguous(out, &[labels.len(), classes]))
    }
}
