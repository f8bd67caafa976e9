//! The portable micro-kernel: plain multiplies and adds over a 4 × 8 tile, which
//! the compiler vectorises with the baseline instruction set. Unfused, so its
//! results differ from the SIMD kernels' in the last bits (within the rounding of a
//! dot product of the same depth).

use super::{MicroKernel, Scalar};

const MR: usize = 4;
const NR: usize = 8;

/// `C[..MR, ..NR] ← α·(A·B) + β·C` for one tile (β = 0: C is not read).
///
/// # Safety
/// `a` holds `kc·MR` and `b` `kc·NR` readable elements; `c` addresses MR rows of NR
/// writable elements at row stride `ldc`.
unsafe fn tile<T: Scalar>(
    kc: usize,
    a: *const T,
    b: *const T,
    c: *mut T,
    ldc: usize,
    alpha: T,
    beta: T,
) {
    // SAFETY: the caller guarantees the panels' lengths.
    let (a, b) = unsafe {
        (
            std::slice::from_raw_parts(a, kc * MR),
            std::slice::from_raw_parts(b, kc * NR),
        )
    };
    let mut acc = [[T::ZERO; NR]; MR];
    for (ap, bp) in a.chunks_exact(MR).zip(b.chunks_exact(NR)) {
        for i in 0..MR {
            for j in 0..NR {
                acc[i][j] = acc[i][j] + ap[i] * bp[j];
            }
        }
    }
    for (i, row) in acc.iter().enumerate() {
        for (j, &v) in row.iter().enumerate() {
            // SAFETY: i < MR, j < NR: inside the tile the caller guarantees.
            let at = unsafe { c.add(i * ldc + j) };
            unsafe { *at = T::epilogue(false, alpha, v, beta, *at) };
        }
    }
}

/// The portable kernel for either element type.
pub(super) fn kernel<T: Scalar>() -> MicroKernel<T> {
    MicroKernel {
        name: "portable",
        mr: MR,
        nr: NR,
        fused: false,
        run: tile::<T>,
    }
}
