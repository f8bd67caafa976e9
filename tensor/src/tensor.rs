//! The `Tensor` type: shared immutable storage plus a strided layout.

use crate::element::Element;
use crate::error::{fmt_shape, Error, Result};
use crate::layout::{checked_numel, Layout, Rows};
use crate::parallel;
use crate::storage::{self, Storage};
use std::fmt;
use std::sync::Arc;

/// An n-dimensional array: reference-counted immutable storage and a [`Layout`].
///
/// Cloning is cheap (the storage is shared). Views (transpose, narrow, broadcast,
/// flip, ...) share storage too; operations always produce new, contiguous storage.
/// `T` is usually `f32` or `f64` ([`Element`]); index tensors use `usize`.
#[derive(Clone)]
pub struct Tensor<T: Send + 'static> {
    data: Arc<Storage<T>>,
    layout: Layout,
}

impl<T: Copy + Send + Sync + 'static> Tensor<T> {
    /// A tensor owning `data`, laid out row-major with `shape`.
    ///
    /// ```
    /// use tensor::Tensor;
    /// # fn main() -> tensor::Result<()> {
    /// let t = Tensor::<f64>::from_vec(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])?;
    /// assert_eq!((t.shape(), t.ndim(), t.numel()), (&[2, 3][..], 2, 6));
    /// assert_eq!(t.get(&[1, 0])?, 4.0);
    /// assert_eq!(t.to_vec(), vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    /// // Six values do not fill a [4, 2] tensor: an error naming the op and the shape.
    /// let e = Tensor::<f64>::from_vec(vec![0.0; 6], &[4, 2]).unwrap_err();
    /// assert_eq!(e.to_string(), "from_vec: shape [4, 2] needs 8 elements but 6 were given");
    /// # Ok(())
    /// # }
    /// ```
    pub fn from_vec(data: Vec<T>, shape: &[usize]) -> Result<Self> {
        let n = checked_numel("from_vec", shape)?;
        if n != data.len() {
            return Err(Error::shape(
                "from_vec",
                format!(
                    "shape {} needs {n} elements but {} were given",
                    fmt_shape(shape),
                    data.len()
                ),
            ));
        }
        Ok(Tensor {
            data: Arc::new(Storage::new(data)),
            layout: Layout::contiguous_unchecked(shape),
        })
    }

    /// A copy of `data` with the given shape.
    pub fn from_slice(data: &[T], shape: &[usize]) -> Result<Self> {
        Self::from_vec(data.to_vec(), shape)
    }

    /// A rank-0 tensor holding `v`.
    pub fn scalar(v: T) -> Self {
        Tensor {
            data: Arc::new(Storage::new(vec![v])),
            layout: Layout::contiguous_unchecked(&[]),
        }
    }

    /// A tensor of `shape` with every element equal to `v`.
    pub fn full(shape: &[usize], v: T) -> Result<Self> {
        let n = checked_numel("full", shape)?;
        Ok(Tensor {
            data: Arc::new(Storage::new(storage::filled(n, v))),
            layout: Layout::contiguous_unchecked(shape),
        })
    }

    /// Wraps new contiguous storage whose length the caller guarantees matches `shape`.
    pub(crate) fn from_contiguous(data: Vec<T>, shape: &[usize]) -> Self {
        // An internal invariant, checked in release too: a mismatch (or an
        // overflowing product) would make every later read wrong.
        let n = shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
        assert_eq!(
            n,
            Some(data.len()),
            "from_contiguous: {} elements for shape {shape:?}",
            data.len()
        );
        Tensor {
            data: Arc::new(Storage::new(data)),
            layout: Layout::contiguous_unchecked(shape),
        }
    }

    /// A view of the same storage with another layout (the caller checks bounds).
    pub(crate) fn with_layout(&self, layout: Layout) -> Self {
        Tensor {
            data: Arc::clone(&self.data),
            layout,
        }
    }

    /// The size of each axis.
    pub fn shape(&self) -> &[usize] {
        self.layout.shape()
    }

    /// The rank (number of axes).
    pub fn ndim(&self) -> usize {
        self.layout.ndim()
    }

    /// The number of elements.
    pub fn numel(&self) -> usize {
        self.layout.numel()
    }

    /// The size of axis `axis` (negative counts from the end).
    pub fn dim(&self, axis: isize) -> Result<usize> {
        let a = crate::layout::normalize_axis("dim", axis, self.ndim())?;
        Ok(self.shape()[a])
    }

    /// The layout (shape, strides, offset).
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The strides, in elements.
    pub fn strides(&self) -> &[isize] {
        self.layout.strides()
    }

    /// True when the elements are stored densely in row-major order.
    pub fn is_contiguous(&self) -> bool {
        self.layout.is_contiguous()
    }

    /// The whole underlying storage (which a view may use only part of).
    pub fn storage(&self) -> &[T] {
        &self.data
    }

    /// True when two tensors share storage.
    pub fn shares_storage(&self, other: &Tensor<T>) -> bool {
        Arc::ptr_eq(&self.data, &other.data)
    }

    /// The elements in logical order as a slice, when the tensor is contiguous.
    pub fn as_slice(&self) -> Option<&[T]> {
        if self.numel() == 0 {
            Some(&[])
        } else if self.is_contiguous() {
            let o = self.layout.offset();
            Some(&self.data[o..o + self.numel()])
        } else {
            None
        }
    }

    /// The elements as a writable slice in logical order, copy-on-write: written
    /// in place when this handle is the only one to its storage and covers all of
    /// it contiguously, else first copied into storage of its own — so no other
    /// tensor (a clone, a view, a saved state) ever sees the change. For state an
    /// optimiser owns and rewrites every step (moments, momentum).
    pub fn make_mut(&mut self) -> &mut [T] {
        let whole =
            self.is_contiguous() && self.layout.offset() == 0 && self.numel() == self.data.len();
        if !whole || Arc::get_mut(&mut self.data).is_none() {
            *self = Tensor::from_contiguous(self.to_vec(), self.shape());
        }
        Arc::get_mut(&mut self.data)
            .expect("a tensor just made has one handle")
            .as_mut_slice()
    }

    /// The elements in row-major logical order.
    pub fn to_vec(&self) -> Vec<T> {
        match self.as_slice() {
            Some(s) => s.to_vec(),
            None => self.gather_rows(),
        }
    }

    /// A contiguous tensor with the same elements; no copy if already contiguous.
    pub fn contiguous(&self) -> Tensor<T> {
        if self.is_contiguous() {
            return self.clone();
        }
        Tensor::from_contiguous(self.gather_rows(), self.shape())
    }

    /// Copies the elements in logical order, in parallel over rows for large tensors.
    fn gather_rows(&self) -> Vec<T> {
        let n = self.numel();
        if n == 0 {
            return Vec::new();
        }
        if let Some(out) = self.gather_transposed(&self.layout.coalesced()) {
            return out;
        }
        let rows = Rows::new([&self.layout]);
        let src: &[T] = &self.data;
        let mut out = storage::scratch(n, src[self.layout.offset()]);
        parallel::for_each_row_chunk(&mut out, rows.len, |r0, chunk| {
            let r1 = r0 + chunk.len() / rows.len;
            let mut k = 0;
            rows.for_each(r0, r1, |_, [p]| {
                let mut q = p as isize;
                for _ in 0..rows.len {
                    chunk[k] = src[q as usize];
                    k += 1;
                    q += rows.inner[0];
                }
            });
        });
        out
    }

    /// Copies a view whose last two axes are transposed in memory (the row index
    /// has stride 1) in 32×32 tiles, so that both the reads and the writes stay in
    /// cache; `None` for other layouts. `layout` is this tensor's layout or an
    /// equivalent (coalesced) one.
    fn gather_transposed(&self, layout: &Layout) -> Option<Vec<T>> {
        const TILE: usize = 32;
        let nd = layout.shape().len();
        if nd < 2 {
            return None;
        }
        let (shape, strides) = (layout.shape(), layout.strides());
        let (r, c, sc) = (shape[nd - 2], shape[nd - 1], strides[nd - 1]);
        if strides[nd - 2] != 1 || r < 2 || c < 2 {
            return None;
        }
        let outer = Layout::from_parts(
            shape[..nd - 2].to_vec(),
            strides[..nd - 2].to_vec(),
            layout.offset(),
        );
        let mut bases = Vec::new();
        outer.for_each_position(|p| bases.push(p as isize));
        let src: &[T] = &self.data;
        let mut out = storage::scratch(self.numel(), src[self.layout.offset()]);
        // Chunks of whole tiles of rows (a chunk of fewer rows would re-read every
        // source cache line once per row).
        parallel::for_each_chunk_sized(&mut out, TILE * c, |start, chunk| {
            let (row0, rows_here) = (start / c, chunk.len() / c);
            // A tile is read column by column (contiguous in the source) into a small
            // buffer, then written row by row (contiguous in the output).
            let mut tile = [src[0]; TILE * TILE];
            let mut done = 0;
            while done < rows_here {
                let g = row0 + done;
                let (b, i0) = (g / r, g % r);
                let h = TILE.min(r - i0).min(rows_here - done);
                let base = bases[b] + i0 as isize;
                for j0 in (0..c).step_by(TILE) {
                    let w = TILE.min(c - j0);
                    for j in 0..w {
                        let col = (base + (j0 + j) as isize * sc) as usize;
                        for (i, &v) in src[col..col + h].iter().enumerate() {
                            tile[i * TILE + j] = v;
                        }
                    }
                    for i in 0..h {
                        let at = (done + i) * c + j0;
                        chunk[at..at + w].copy_from_slice(&tile[i * TILE..i * TILE + w]);
                    }
                }
                done += h;
            }
        });
        Some(out)
    }

    /// The element at a logical index.
    ///
    /// ```
    /// use tensor::Tensor;
    /// # fn main() -> tensor::Result<()> {
    /// let t = Tensor::<f32>::from_vec(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])?;
    /// assert_eq!(t.get(&[1, 2])?, 6.0);
    /// // Out of range, or the wrong number of indices: errors naming `get` and the values.
    /// let e = t.get(&[0, 5]).unwrap_err();
    /// assert_eq!(e.to_string(), "get: index 5 is out of range for axis 1 of length 3");
    /// assert!(t.get(&[0]).unwrap_err().to_string().starts_with("get: index [0] has 1 entries"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn get(&self, index: &[usize]) -> Result<T> {
        if index.len() != self.ndim() {
            return Err(Error::shape(
                "get",
                format!(
                    "index {index:?} has {} entries for a tensor of shape {}",
                    index.len(),
                    fmt_shape(self.shape())
                ),
            ));
        }
        for (axis, (&i, &d)) in index.iter().zip(self.shape()).enumerate() {
            if i >= d {
                return Err(Error::Index {
                    op: "get",
                    index: i,
                    len: d,
                    axis,
                });
            }
        }
        Ok(self.data[self.layout.position(index)])
    }

    /// The only element of a one-element tensor (any rank).
    pub fn item(&self) -> Result<T> {
        if self.numel() != 1 {
            return Err(Error::shape(
                "item",
                format!(
                    "item needs exactly one element, shape {} has {}",
                    fmt_shape(self.shape()),
                    self.numel()
                ),
            ));
        }
        let mut v = None;
        self.layout.for_each_position(|p| v = Some(self.data[p]));
        Ok(v.expect("one element"))
    }

    /// Applies `f` to every element, giving a new contiguous tensor of another type.
    pub fn map_to<U: Copy + Send + Sync + 'static>(&self, f: impl Fn(T) -> U + Sync) -> Tensor<U> {
        let n = self.numel();
        if n == 0 {
            return Tensor::from_contiguous(Vec::new(), self.shape());
        }
        let src: &[T] = &self.data;
        if let Some(s) = self.as_slice() {
            let mut out = storage::scratch(n, f(s[0]));
            parallel::for_each_chunk(&mut out, |start, chunk| {
                for (o, &x) in chunk.iter_mut().zip(&s[start..]) {
                    *o = f(x);
                }
            });
            return Tensor::from_contiguous(out, self.shape());
        }
        let rows = Rows::new([&self.layout]);
        let mut out = storage::scratch(n, f(src[self.layout.offset()]));
        parallel::for_each_row_chunk(&mut out, rows.len, |r0, chunk| {
            let r1 = r0 + chunk.len() / rows.len;
            let mut k = 0;
            rows.for_each(r0, r1, |_, [p]| {
                let mut q = p as isize;
                for _ in 0..rows.len {
                    chunk[k] = f(src[q as usize]);
                    k += 1;
                    q += rows.inner[0];
                }
            });
        });
        Tensor::from_contiguous(out, self.shape())
    }
}

impl<T: Element> Tensor<T> {
    /// A tensor of zeros.
    ///
    /// ```
    /// use tensor::Tensor;
    /// # fn main() -> tensor::Result<()> {
    /// let z = Tensor::<f64>::zeros(&[2, 3])?;
    /// assert_eq!(z.shape(), &[2, 3]);
    /// assert!(z.to_vec().iter().all(|&v| v == 0.0));
    /// // Rank 0 is a scalar with one element; a zero-sized axis holds none.
    /// assert_eq!(Tensor::<f32>::zeros(&[])?.item()?, 0.0);
    /// assert_eq!(Tensor::<f32>::zeros(&[4, 0])?.numel(), 0);
    /// # Ok(())
    /// # }
    /// ```
    pub fn zeros(shape: &[usize]) -> Result<Self> {
        checked_numel("zeros", shape)?;
        Self::full(shape, T::zero())
    }

    /// A tensor of ones.
    pub fn ones(shape: &[usize]) -> Result<Self> {
        checked_numel("ones", shape)?;
        Self::full(shape, T::one())
    }

    /// Zeros with the shape of `other`.
    pub fn zeros_like(other: &Tensor<T>) -> Self {
        Tensor::from_contiguous(storage::filled(other.numel(), T::zero()), other.shape())
    }

    /// Ones with the shape of `other`.
    pub fn ones_like(other: &Tensor<T>) -> Self {
        Tensor::from_contiguous(storage::filled(other.numel(), T::one()), other.shape())
    }

    /// `start, start + step, ...` up to but excluding `end` (1-D).
    ///
    /// ```
    /// use tensor::Tensor;
    /// # fn main() -> tensor::Result<()> {
    /// let t = Tensor::<f64>::arange(0.0, 1.0, 0.25)?;
    /// assert_eq!(t.to_vec(), vec![0.0, 0.25, 0.5, 0.75]); // `end` excluded
    /// let down = Tensor::<f32>::arange(3.0, 0.0, -1.0)?;
    /// assert_eq!(down.to_vec(), vec![3.0, 2.0, 1.0]);
    /// assert!(Tensor::<f64>::arange(0.0, 1.0, 0.0).unwrap_err().to_string().starts_with("arange"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn arange(start: f64, end: f64, step: f64) -> Result<Self> {
        if !(start.is_finite() && end.is_finite() && step.is_finite()) || step == 0.0 {
            return Err(Error::value(
                "arange",
                format!("start {start}, end {end} and step {step} must be finite, step non-zero"),
            ));
        }
        let n = ((end - start) / step).ceil().max(0.0);
        if n > (isize::MAX as f64) / 16.0 {
            return Err(Error::value("arange", format!("{n} elements is too many")));
        }
        let n = n as usize;
        checked_numel("arange", &[n])?;
        let data = (0..n)
            .map(|i| T::from_f64(start + i as f64 * step))
            .collect();
        Ok(Tensor::from_contiguous(data, &[n]))
    }

    /// `n` evenly spaced values from `start` to `end` inclusive (1-D).
    ///
    /// ```
    /// use tensor::Tensor;
    /// # fn main() -> tensor::Result<()> {
    /// let t = Tensor::<f64>::linspace(-1.0, 1.0, 5)?;
    /// assert_eq!(t.to_vec(), vec![-1.0, -0.5, 0.0, 0.5, 1.0]); // both ends included
    /// assert_eq!(Tensor::<f64>::linspace(2.0, 9.0, 1)?.to_vec(), vec![2.0]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn linspace(start: f64, end: f64, n: usize) -> Result<Self> {
        if !(start.is_finite() && end.is_finite()) {
            return Err(Error::value(
                "linspace",
                format!("start {start} and end {end} must be finite"),
            ));
        }
        checked_numel("linspace", &[n])?;
        let data = (0..n)
            .map(|i| {
                if n == 1 {
                    T::from_f64(start)
                } else {
                    T::from_f64(start + (end - start) * i as f64 / (n - 1) as f64)
                }
            })
            .collect();
        Ok(Tensor::from_contiguous(data, &[n]))
    }

    /// The `n × n` identity matrix.
    ///
    /// ```
    /// use tensor::Tensor;
    /// # fn main() -> tensor::Result<()> {
    /// let i = Tensor::<f64>::eye(3)?;
    /// assert_eq!(i.to_vec(), vec![1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]);
    /// let a = Tensor::arange(0.0, 6.0, 1.0)?.reshape(&[3, 2])?;
    /// assert!(i.matmul(&a)?.bit_eq(&a)); // I·A = A exactly
    /// # Ok(())
    /// # }
    /// ```
    pub fn eye(n: usize) -> Result<Self> {
        checked_numel("eye", &[n, n])?;
        let mut data = storage::filled(n * n, T::zero());
        for i in 0..n {
            data[i * n + i] = T::one();
        }
        Ok(Tensor::from_contiguous(data, &[n, n]))
    }

    /// Converts every element to another float type.
    pub fn cast<U: Element>(&self) -> Tensor<U> {
        self.map_to(|x| U::from_f64(x.as_f64()))
    }

    /// True when no element is NaN or infinite. Long tensors are scanned in
    /// `CHUNK`-sized pieces on the threads (an optimiser checks every gradient
    /// before its step: a pass over all the parameters' worth of memory).
    pub fn all_finite(&self) -> bool {
        let c = self.contiguous();
        let s = c.as_slice().expect("contiguous");
        let scan = |part: &[T]| {
            crate::kernels::simd_scope(|| part.iter().fold(true, |ok, x| ok & x.is_finite()))
        };
        let pieces = s.len().div_ceil(crate::parallel::CHUNK);
        crate::parallel::map_collect(pieces, s.len(), |i| {
            let end = ((i + 1) * crate::parallel::CHUNK).min(s.len());
            scan(&s[i * crate::parallel::CHUNK..end])
        })
        .into_iter()
        .all(|ok| ok)
    }

    /// Bitwise equality of shape and elements (NaNs with the same bits compare equal).
    pub fn bit_eq(&self, other: &Tensor<T>) -> bool {
        self.shape() == other.shape()
            && self
                .to_vec()
                .iter()
                .zip(other.to_vec())
                .all(|(a, b)| a.as_f64().to_bits() == b.as_f64().to_bits())
    }
}

impl<T: Copy + Send + Sync + fmt::Debug + 'static> fmt::Debug for Tensor<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const SHOWN: usize = 16;
        let v = self.to_vec();
        write!(f, "Tensor{}", fmt_shape(self.shape()))?;
        if v.len() <= SHOWN {
            write!(f, " {v:?}")
        } else {
            write!(f, " {:?} ... ({} elements)", &v[..SHOWN], v.len())
        }
    }
}
