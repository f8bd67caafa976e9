//! Operands of the GEMM and how they are packed into the micro-kernels' panels.

use super::Scalar;

/// An operand of a product seen as a `depth × width` matrix, the contraction index
/// first (B as it is; A transposed), that writes blocks of itself in the
/// micro-kernels' panel layout. Implemented by [`Strided`] for matrices in memory,
/// and by operands that are never materialised, such as a convolution's patch
/// matrix.
pub trait PanelSource<T>: Sync {
    /// The contraction dimension k.
    fn depth(&self) -> usize;
    /// The other dimension (m for A, n for B).
    fn width(&self) -> usize;
    /// Writes rows `k0..k0 + kc` and columns `j0..j0 + w` into `out` (`kc · w`
    /// elements) as `kc` rows of `w` values; columns at or past [`width`] are
    /// written as zero. Every element of `out` is written.
    ///
    /// [`width`]: PanelSource::width
    fn pack(&self, k0: usize, kc: usize, j0: usize, w: usize, out: &mut [T]);
}

/// A strided matrix in a slice, as a [`PanelSource`]: element `(p, j)` (depth
/// index p, width index j) is `data[offset + p·depth_stride + j·width_stride]`.
#[derive(Clone, Copy, Debug)]
pub struct Strided<'a, T> {
    /// The storage.
    pub data: &'a [T],
    /// Position of element (0, 0).
    pub offset: usize,
    /// The contraction dimension.
    pub depth: usize,
    /// The other dimension.
    pub width: usize,
    /// Distance between consecutive depth indices.
    pub depth_stride: isize,
    /// Distance between consecutive width indices.
    pub width_stride: isize,
}

impl<'a, T> Strided<'a, T> {
    /// True when every element lies inside `data`.
    pub fn in_bounds(&self) -> bool {
        if self.depth == 0 || self.width == 0 {
            return true;
        }
        let base = self.offset as isize;
        let r = (self.depth as isize - 1) * self.depth_stride;
        let c = (self.width as isize - 1) * self.width_stride;
        let lo = base + r.min(0) + c.min(0);
        let hi = base + r.max(0) + c.max(0);
        lo >= 0 && (hi as usize) < self.data.len()
    }
}

impl<T: Scalar> PanelSource<T> for Strided<'_, T> {
    fn depth(&self) -> usize {
        self.depth
    }
    fn width(&self) -> usize {
        self.width
    }
    fn pack(&self, k0: usize, kc: usize, j0: usize, w: usize, out: &mut [T]) {
        let out = &mut out[..kc * w];
        let valid = w.min(self.width.saturating_sub(j0));
        let at = |p: usize, j: usize| {
            (self.offset as isize
                + (k0 + p) as isize * self.depth_stride
                + (j0 + j) as isize * self.width_stride) as usize
        };
        if valid < w {
            for row in out.chunks_exact_mut(w) {
                row[valid..].fill(T::ZERO);
            }
        }
        if valid == 0 {
            return;
        }
        if self.width_stride == 1 && self.depth_stride >= 0 {
            let rows = (at(0, 0), self.depth_stride as usize);
            crate::kernels::copy_rows(out, w, self.data, rows, kc, valid);
        } else if self.width_stride == 1 {
            for (p, row) in out.chunks_exact_mut(w).enumerate() {
                let s = at(p, 0);
                crate::kernels::copy_run(&mut row[..valid], &self.data[s..s + valid]);
            }
        } else if self.depth_stride == 1 {
            let ld = self.width_stride;
            super::transpose::pack_transposed(self.data, at(0, 0), ld, valid, kc, out, w);
        } else {
            for (p, row) in out.chunks_exact_mut(w).enumerate() {
                for (j, o) in row[..valid].iter_mut().enumerate() {
                    *o = self.data[at(p, j)];
                }
            }
        }
    }
}
