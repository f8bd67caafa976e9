//! Zero-copy views: permute, transpose, narrow, strided slice, broadcast, reshape,
//! squeeze/unsqueeze and flip. Each returns a tensor sharing the same storage (reshape
//! copies only when the source is not contiguous).

use crate::error::{fmt_shape, Error, Result};
use crate::layout::{checked_numel, contiguous_strides, normalize_axis, Layout};
use crate::tensor::Tensor;

impl<T: Copy + Send + Sync + 'static> Tensor<T> {
    /// Reorders the axes: axis `i` of the result is axis `axes[i]` of `self`.
    ///
    /// ```
    /// use tensor::Tensor;
    /// # fn main() -> tensor::Result<()> {
    /// let x = Tensor::<f64>::arange(0.0, 24.0, 1.0)?.reshape(&[2, 3, 4])?;
    /// let y = x.permute(&[2, 0, 1])?; // a view: no element is copied
    /// assert_eq!(y.shape(), &[4, 2, 3]);
    /// assert!(y.shares_storage(&x) && !y.is_contiguous());
    /// assert_eq!(y.get(&[3, 1, 2])?, x.get(&[1, 2, 3])?);
    /// assert!(x.permute(&[0, 1]).unwrap_err().to_string().starts_with("permute"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn permute(&self, axes: &[isize]) -> Result<Tensor<T>> {
        let nd = self.ndim();
        if axes.len() != nd {
            return Err(Error::shape(
                "permute",
                format!(
                    "{} axes given for a tensor of shape {}",
                    axes.len(),
                    fmt_shape(self.shape())
                ),
            ));
        }
        let axes = crate::layout::normalize_axes("permute", axes, nd)?;
        let l = self.layout();
        let shape = axes.iter().map(|&a| l.shape()[a]).collect();
        let strides = axes.iter().map(|&a| l.strides()[a]).collect();
        Ok(self.with_layout(Layout::from_parts(shape, strides, l.offset())))
    }

    /// Swaps two axes.
    pub fn transpose(&self, a: isize, b: isize) -> Result<Tensor<T>> {
        let nd = self.ndim();
        let a = normalize_axis("transpose", a, nd)?;
        let b = normalize_axis("transpose", b, nd)?;
        let mut axes: Vec<isize> = (0..nd as isize).collect();
        axes.swap(a, b);
        self.permute(&axes)
    }

    /// Swaps the last two axes (the matrix transpose of a batch of matrices).
    ///
    /// ```
    /// use tensor::Tensor;
    /// # fn main() -> tensor::Result<()> {
    /// let a = Tensor::<f32>::from_vec(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])?;
    /// let at = a.t()?;
    /// assert_eq!(at.shape(), &[3, 2]);
    /// assert!(at.shares_storage(&a)); // zero-copy: only the strides change
    /// assert_eq!(at.strides(), &[1, 3]);
    /// assert_eq!(at.to_vec(), vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    /// assert!(Tensor::<f32>::zeros(&[3])?.t().is_err()); // a vector has no matrix transpose
    /// # Ok(())
    /// # }
    /// ```
    pub fn t(&self) -> Result<Tensor<T>> {
        if self.ndim() < 2 {
            return Err(Error::shape(
                "t",
                format!(
                    "needs at least 2 axes, shape {} has {}",
                    fmt_shape(self.shape()),
                    self.ndim()
                ),
            ));
        }
        self.transpose(-2, -1)
    }

    /// The `len` elements starting at `start` along `axis`.
    ///
    /// ```
    /// use tensor::Tensor;
    /// # fn main() -> tensor::Result<()> {
    /// let x = Tensor::<f64>::arange(0.0, 8.0, 1.0)?.reshape(&[2, 4])?;
    /// let mid = x.narrow(1, 1, 2)?; // columns 1 and 2
    /// assert_eq!(mid.to_vec(), vec![1.0, 2.0, 5.0, 6.0]);
    /// assert!(mid.shares_storage(&x));
    /// let e = x.narrow(-1, 3, 2).unwrap_err();
    /// assert_eq!(e.to_string(), "narrow: range 3..5 exceeds axis 1 of shape [2, 4]");
    /// # Ok(())
    /// # }
    /// ```
    pub fn narrow(&self, axis: isize, start: usize, len: usize) -> Result<Tensor<T>> {
        let ax = normalize_axis("narrow", axis, self.ndim())?;
        let d = self.shape()[ax];
        match start.checked_add(len) {
            Some(end) if end <= d => self.slice(axis, start, end, 1),
            _ => Err(Error::shape(
                "narrow",
                format!(
                    "range {start}..{} exceeds axis {ax} of shape {}",
                    start.saturating_add(len),
                    fmt_shape(self.shape())
                ),
            )),
        }
    }

    /// Elements `start, start + step, ...` below `end` along `axis` (`end` is clamped
    /// to the axis length; `step ≥ 1`). Use [`Tensor::flip`] for a reversed order.
    pub fn slice(&self, axis: isize, start: usize, end: usize, step: usize) -> Result<Tensor<T>> {
        let ax = normalize_axis("slice", axis, self.ndim())?;
        if step == 0 {
            return Err(Error::value("slice", "step must be at least 1"));
        }
        let d = self.shape()[ax];
        let end = end.min(d);
        if start > end {
            return Err(Error::shape(
                "slice",
                format!(
                    "start {start} is past the end {end} of axis {ax} in shape {}",
                    fmt_shape(self.shape())
                ),
            ));
        }
        let n = (end - start).div_ceil(step);
        let l = self.layout();
        let mut shape = l.shape().to_vec();
        let mut strides = l.strides().to_vec();
        let offset = if n == 0 {
            l.offset()
        } else {
            (l.offset() as isize + start as isize * strides[ax]) as usize
        };
        shape[ax] = n;
        strides[ax] *= step as isize;
        Ok(self.with_layout(Layout::from_parts(shape, strides, offset)))
    }

    /// The sub-tensor at `index` along `axis`, with that axis removed.
    pub fn index_axis(&self, axis: isize, index: usize) -> Result<Tensor<T>> {
        let ax = normalize_axis("index_axis", axis, self.ndim())?;
        let d = self.shape()[ax];
        if index >= d {
            return Err(Error::Index {
                op: "index_axis",
                index,
                len: d,
                axis: ax,
            });
        }
        self.slice(axis, index, index + 1, 1)?.squeeze(ax as isize)
    }

    /// Broadcasts to `shape` without copying (stride 0 on repeated axes).
    ///
    /// ```
    /// use tensor::Tensor;
    /// # fn main() -> tensor::Result<()> {
    /// let row = Tensor::<f64>::from_vec(vec![1.0, 2.0, 3.0], &[3])?;
    /// let b = row.broadcast_to(&[2, 3])?;
    /// assert_eq!(b.strides(), &[0, 1]); // the new axis repeats the storage
    /// assert!(b.shares_storage(&row));
    /// assert_eq!(b.to_vec(), vec![1.0, 2.0, 3.0, 1.0, 2.0, 3.0]);
    /// assert!(row.broadcast_to(&[2, 4]).is_err()); // 3 does not stretch to 4
    /// # Ok(())
    /// # }
    /// ```
    pub fn broadcast_to(&self, shape: &[usize]) -> Result<Tensor<T>> {
        checked_numel("broadcast_to", shape)?;
        let l = self.layout().broadcast_to("broadcast_to", shape)?;
        Ok(self.with_layout(l))
    }

    /// The same elements with another shape: a view when `self` is contiguous, a copy
    /// otherwise.
    ///
    /// ```
    /// use tensor::Tensor;
    /// # fn main() -> tensor::Result<()> {
    /// let x = Tensor::<f64>::arange(0.0, 6.0, 1.0)?;
    /// let m = x.reshape(&[2, 3])?;
    /// assert!(m.shares_storage(&x)); // contiguous: a view
    /// let mt = m.t()?.reshape(&[6])?;
    /// assert!(!mt.shares_storage(&x)); // transposed: a copy in the new order
    /// assert_eq!(mt.to_vec(), vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
    /// let e = x.reshape(&[4, 2]).unwrap_err();
    /// assert!(e.to_string().starts_with("reshape: cannot reshape [6]"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn reshape(&self, shape: &[usize]) -> Result<Tensor<T>> {
        let n = checked_numel("reshape", shape)?;
        if n != self.numel() {
            return Err(Error::shape(
                "reshape",
                format!(
                    "cannot reshape {} ({} elements) into {} ({n} elements)",
                    fmt_shape(self.shape()),
                    self.numel(),
                    fmt_shape(shape)
                ),
            ));
        }
        let src = self.contiguous();
        let offset = src.layout().offset();
        Ok(src.with_layout(Layout::from_parts(
            shape.to_vec(),
            contiguous_strides(shape),
            offset,
        )))
    }

    /// A 1-D view or copy of all elements.
    pub fn flatten(&self) -> Tensor<T> {
        self.reshape(&[self.numel()])
            .expect("flatten keeps the element count")
    }

    /// Removes axis `axis`, which must have size 1.
    pub fn squeeze(&self, axis: isize) -> Result<Tensor<T>> {
        let ax = normalize_axis("squeeze", axis, self.ndim())?;
        if self.shape()[ax] != 1 {
            return Err(Error::shape(
                "squeeze",
                format!(
                    "axis {ax} of shape {} has size {}, not 1",
                    fmt_shape(self.shape()),
                    self.shape()[ax]
                ),
            ));
        }
        let l = self.layout();
        let mut shape = l.shape().to_vec();
        let mut strides = l.strides().to_vec();
        shape.remove(ax);
        strides.remove(ax);
        Ok(self.with_layout(Layout::from_parts(shape, strides, l.offset())))
    }

    /// Inserts a new axis of size 1 at position `axis` (`-1` appends at the end).
    pub fn unsqueeze(&self, axis: isize) -> Result<Tensor<T>> {
        let ax = normalize_axis("unsqueeze", axis, self.ndim() + 1)?;
        let l = self.layout();
        let mut shape = l.shape().to_vec();
        let mut strides = l.strides().to_vec();
        shape.insert(ax, 1);
        strides.insert(ax, 0);
        Ok(self.with_layout(Layout::from_parts(shape, strides, l.offset())))
    }

    /// Reverses the order of elements along each of `axes`.
    pub fn flip(&self, axes: &[isize]) -> Result<Tensor<T>> {
        let axes = crate::layout::normalize_axes("flip", axes, self.ndim())?;
        let l = self.layout();
        let shape = l.shape().to_vec();
        let mut strides = l.strides().to_vec();
        let mut offset = l.offset() as isize;
        for &a in &axes {
            if shape[a] > 0 {
                offset += (shape[a] as isize - 1) * strides[a];
                strides[a] = -strides[a];
            }
        }
        Ok(self.with_layout(Layout::from_parts(shape, strides, offset as usize)))
    }
}
