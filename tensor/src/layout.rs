//! Shape, strides and offset: how a tensor's logical indices map onto its storage.
//!
//! Strides are signed (a flipped axis has a negative stride) and may be zero (a
//! broadcast axis). The element at logical index `i` lives at storage position
//! `offset + Σ i_k · strides_k`.

use crate::dims::Dims;
use crate::error::{fmt_shape, Error, Result};

/// Shape, strides (in elements) and storage offset of a tensor view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    shape: Dims<usize>,
    strides: Dims<isize>,
    offset: usize,
}

/// Row-major strides of a contiguous tensor of `shape`.
pub fn contiguous_strides(shape: &[usize]) -> Vec<isize> {
    row_major_strides(shape).to_vec()
}

/// [`contiguous_strides`], held in place.
fn row_major_strides(shape: &[usize]) -> Dims<isize> {
    let mut strides = Dims::filled(shape.len(), 0isize);
    let mut acc = 1isize;
    for (s, &d) in strides.iter_mut().zip(shape).rev() {
        *s = acc;
        acc = acc.saturating_mul(d.max(1) as isize);
    }
    strides
}

/// The number of elements of `shape`, or an error naming `op` and the shape if it
/// overflows or exceeds the allocation cap ([`crate::limits::max_elements`]).
pub fn checked_numel(op: &'static str, shape: &[usize]) -> Result<usize> {
    let n = shape
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .filter(|&n| n <= isize::MAX as usize)
        .ok_or_else(|| {
            Error::limit(
                op,
                format!("shape {} has too many elements", fmt_shape(shape)),
            )
        })?;
    let cap = crate::limits::max_elements();
    if n > cap {
        return Err(Error::limit(
            op,
            format!(
                "shape {} has {n} elements, over the allocation cap of {cap} (tensor::limits::set_max_elements)",
                fmt_shape(shape)
            ),
        ));
    }
    Ok(n)
}

/// NumPy broadcasting of two shapes: align on the right; each pair of sizes must be
/// equal or one of them 1.
pub fn broadcast_shapes(op: &'static str, a: &[usize], b: &[usize]) -> Result<Vec<usize>> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for i in 0..n {
        let da = if i < n - a.len() {
            1
        } else {
            a[i - (n - a.len())]
        };
        let db = if i < n - b.len() {
            1
        } else {
            b[i - (n - b.len())]
        };
        out[i] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return Err(Error::shape(
                op,
                format!(
                    "shapes {} and {} do not broadcast: sizes {da} and {db} at axis {i} of the result",
                    fmt_shape(a),
                    fmt_shape(b)
                ),
            ));
        };
    }
    Ok(out)
}

/// Normalises a possibly negative axis (`-1` is the last) against `ndim`.
pub fn normalize_axis(op: &'static str, axis: isize, ndim: usize) -> Result<usize> {
    let n = ndim as isize;
    if axis >= n || axis < -n {
        return Err(Error::Axis { op, axis, ndim });
    }
    Ok(if axis < 0 {
        (axis + n) as usize
    } else {
        axis as usize
    })
}

/// Normalises a list of axes, rejecting duplicates.
pub fn normalize_axes(op: &'static str, axes: &[isize], ndim: usize) -> Result<Vec<usize>> {
    let mut out = Vec::with_capacity(axes.len());
    for &a in axes {
        let a = normalize_axis(op, a, ndim)?;
        if out.contains(&a) {
            return Err(Error::value(
                op,
                format!("axis {a} is repeated in {axes:?}"),
            ));
        }
        out.push(a);
    }
    Ok(out)
}

impl Layout {
    /// A row-major contiguous layout at offset 0.
    pub fn contiguous(op: &'static str, shape: &[usize]) -> Result<Self> {
        checked_numel(op, shape)?;
        Ok(Self::contiguous_unchecked(shape))
    }

    /// Contiguous layout for a shape whose element count is known to be valid.
    pub(crate) fn contiguous_unchecked(shape: &[usize]) -> Self {
        Layout {
            strides: row_major_strides(shape),
            shape: Dims::from_slice(shape),
            offset: 0,
        }
    }

    pub(crate) fn from_parts(shape: Vec<usize>, strides: Vec<isize>, offset: usize) -> Self {
        debug_assert_eq!(shape.len(), strides.len());
        Layout {
            shape: shape.into(),
            strides: strides.into(),
            offset,
        }
    }

    /// The same elements in the same logical order with adjacent axes merged where
    /// memory allows (`stride[i] = stride[i+1]·shape[i+1]`) and unit axes dropped: a
    /// permuted 3-D view can turn out to be a plain 2-D transpose.
    pub fn coalesced(&self) -> Layout {
        let mut shape = Dims::new();
        let mut strides = Dims::new();
        for (&d, &s) in self.shape.iter().zip(&self.strides) {
            if d == 1 {
                continue;
            }
            match (shape.last_mut(), strides.last_mut()) {
                (Some(pd), Some(ps)) if *ps == s * d as isize => {
                    *pd *= d;
                    *ps = s;
                }
                _ => {
                    shape.push(d);
                    strides.push(s);
                }
            }
        }
        Layout {
            shape,
            strides,
            offset: self.offset,
        }
    }

    /// The size of each axis.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The stride of each axis, in elements.
    pub fn strides(&self) -> &[isize] {
        &self.strides
    }

    /// Storage position of the element at the all-zero index.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// The rank.
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// The number of elements.
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    /// True when the elements are stored row-major and densely from `offset` on.
    pub fn is_contiguous(&self) -> bool {
        if self.numel() <= 1 {
            return true;
        }
        let mut expected = 1isize;
        for (&d, &s) in self.shape.iter().zip(&self.strides).rev() {
            if d != 1 {
                if s != expected {
                    return false;
                }
                expected *= d as isize;
            }
        }
        true
    }

    /// The storage positions (lowest, highest) touched by this view, or `None` if empty.
    pub fn storage_span(&self) -> Option<(isize, isize)> {
        if self.numel() == 0 {
            return None;
        }
        let mut lo = self.offset as isize;
        let mut hi = lo;
        for (&d, &s) in self.shape.iter().zip(&self.strides) {
            let ext = (d as isize - 1) * s;
            if ext < 0 {
                lo += ext;
            } else {
                hi += ext;
            }
        }
        Some((lo, hi))
    }

    /// Storage position of a logical index (unchecked against the shape).
    pub(crate) fn position(&self, index: &[usize]) -> usize {
        let mut p = self.offset as isize;
        for (&i, &s) in index.iter().zip(&self.strides) {
            p += i as isize * s;
        }
        p as usize
    }

    /// Calls `f` with the storage position of every element, in row-major logical order.
    pub fn for_each_position(&self, mut f: impl FnMut(usize)) {
        let rows = Rows::new([self]);
        rows.for_each(0, rows.count, |_, [p]| {
            let mut q = p as isize;
            for _ in 0..rows.len {
                f(q as usize);
                q += rows.inner[0];
            }
        });
    }

    /// The layout broadcast to `shape` (new leading axes and size-1 axes get stride 0).
    pub fn broadcast_to(&self, op: &'static str, shape: &[usize]) -> Result<Layout> {
        if shape.len() < self.ndim() {
            return Err(Error::shape(
                op,
                format!(
                    "cannot broadcast {} to the lower-rank shape {}",
                    fmt_shape(&self.shape),
                    fmt_shape(shape)
                ),
            ));
        }
        let lead = shape.len() - self.ndim();
        let mut strides = vec![0isize; shape.len()];
        for (i, &d) in shape.iter().enumerate() {
            if i < lead {
                continue;
            }
            let own = self.shape[i - lead];
            if own == d {
                strides[i] = self.strides[i - lead];
            } else if own != 1 {
                return Err(Error::shape(
                    op,
                    format!(
                        "cannot broadcast {} to {}: axis {i} has size {own}, expected {d} or 1",
                        fmt_shape(&self.shape),
                        fmt_shape(shape)
                    ),
                ));
            }
        }
        Ok(Layout::from_parts(shape.to_vec(), strides, self.offset))
    }
}

/// Walks the rows (the last axis) of `N` layouts of the same shape in lockstep: the
/// engine under every element-wise kernel on strided inputs.
///
/// A rank-0 layout is one row of length 1.
pub(crate) struct Rows<const N: usize> {
    /// Length of a row.
    pub len: usize,
    /// Stride along a row, per operand.
    pub inner: [isize; N],
    /// Number of rows.
    pub count: usize,
    outer_shape: Vec<usize>,
    outer_strides: [Vec<isize>; N],
    offsets: [isize; N],
}

impl<const N: usize> Rows<N> {
    /// Rows of `layouts`, which must all have the same shape.
    pub fn new(layouts: [&Layout; N]) -> Self {
        let shape = layouts[0].shape();
        debug_assert!(layouts.iter().all(|l| l.shape() == shape));
        let nd = shape.len();
        let (len, outer_shape) = if nd == 0 {
            (1, Vec::new())
        } else {
            (shape[nd - 1], shape[..nd - 1].to_vec())
        };
        let inner = std::array::from_fn(|k| {
            if nd == 0 {
                0
            } else {
                layouts[k].strides()[nd - 1]
            }
        });
        let outer_strides =
            std::array::from_fn(|k| layouts[k].strides()[..nd.saturating_sub(1)].to_vec());
        let offsets = std::array::from_fn(|k| layouts[k].offset() as isize);
        let count = if len == 0 {
            0
        } else {
            outer_shape.iter().product()
        };
        Rows {
            len,
            inner,
            count,
            outer_shape,
            outer_strides,
            offsets,
        }
    }

    /// Calls `f(row, starts)` for rows `start..end`, where `starts[k]` is the storage
    /// position of the row's first element in operand `k`.
    pub fn for_each(&self, start: usize, end: usize, mut f: impl FnMut(usize, [usize; N])) {
        if start >= end {
            return;
        }
        let nd = self.outer_shape.len();
        let mut idx = vec![0usize; nd];
        let mut rem = start;
        for d in (0..nd).rev() {
            idx[d] = rem % self.outer_shape[d];
            rem /= self.outer_shape[d];
        }
        let mut pos = self.offsets;
        for k in 0..N {
            for d in 0..nd {
                pos[k] += idx[d] as isize * self.outer_strides[k][d];
            }
        }
        for row in start..end {
            f(row, pos.map(|p| p as usize));
            // Odometer increment over the outer axes.
            let mut d = nd;
            while d > 0 {
                d -= 1;
                idx[d] += 1;
                for k in 0..N {
                    pos[k] += self.outer_strides[k][d];
                }
                if idx[d] < self.outer_shape[d] {
                    break;
                }
                for k in 0..N {
                    pos[k] -= self.outer_strides[k][d] * self.outer_shape[d] as isize;
                }
                idx[d] = 0;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcast_shapes_follow_numpy() {
        assert_eq!(
            broadcast_shapes("t", &[3, 1, 5], &[4, 1]).unwrap(),
            vec![3, 4, 5]
        );
        assert_eq!(broadcast_shapes("t", &[], &[2]).unwrap(), vec![2]);
        assert_eq!(broadcast_shapes("t", &[0], &[1]).unwrap(), vec![0]);
        let e = broadcast_shapes("add", &[3, 4], &[5]).unwrap_err();
        assert!(
            e.to_string().starts_with("add: shapes [3, 4] and [5]"),
            "{e}"
        );
    }

    #[test]
    fn contiguity_ignores_unit_axes() {
        let l = Layout::from_parts(vec![2, 1, 3], vec![3, 99, 1], 0);
        assert!(l.is_contiguous());
        let t = Layout::from_parts(vec![3, 2], vec![1, 3], 0);
        assert!(!t.is_contiguous());
    }

    #[test]
    fn positions_of_a_flipped_view() {
        let l = Layout::from_parts(vec![2, 3], vec![3, -1], 2);
        let mut seen = vec![];
        l.for_each_position(|p| seen.push(p));
        assert_eq!(seen, vec![2, 1, 0, 5, 4, 3]);
    }

    #[test]
    fn rows_seek_to_the_middle() {
        let l = Layout::contiguous("t", &[2, 3, 4]).unwrap();
        let rows = Rows::new([&l]);
        let mut starts = vec![];
        rows.for_each(2, 5, |r, [p]| starts.push((r, p)));
        assert_eq!(starts, vec![(2, 8), (3, 12), (4, 16)]);
    }
}
