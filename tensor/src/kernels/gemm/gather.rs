//! Micro-kernels that read A where it lies, by offsets: A's value at row i, depth
//! p is `data[rows[i] + cols[p]]`. A convolution's weight gradient
//! `dWᵀ = patches · gyᵀ` has the patch matrix as A, and a patch value is the
//! padded image at `tap[k] + position[p]`: the kernel reads it there, where
//! packing it would copy every value of the patch matrix once per image, and only
//! gy, nine times smaller at 3×3, is packed. The kernel is the packed kernel's
//! twin (same tile, same fused chain, same epilogue): since
//! `fma(a, b, c) = fma(b, a, c)`, the transposed product has the bits of the
//! untransposed one.

use super::rows::Offsets;
use super::{MicroKernel, Scalar};

/// A micro-kernel whose A tile is read in place through row and column offsets.
#[derive(Clone, Copy)]
pub struct GatherKernel<T> {
    /// The packed-panel kernel it mirrors (its tile, instruction set and bits).
    pub tile: MicroKernel<T>,
    #[allow(clippy::type_complexity)]
    pub(super) run:
        unsafe fn(usize, *const T, *const usize, *const usize, *const T, *mut T, usize, T, T),
}

impl<T: Scalar> GatherKernel<T> {
    /// `C ← α·A·B + β·C` on the `rows × cols` corner (at most MR × NR) of one tile
    /// whose corner is `c[0]` (row stride `ldc`): A's value at (i, p) is
    /// `data[row_offs[i] + col_offs[p]]` (MR row offsets: a cut tile repeats a
    /// valid one), B a packed panel of `kc` rows of NR. With β = 0, C is not read.
    ///
    /// # Panics
    /// When an offset list, the panel or the data is too short for `kc`, or the
    /// tile does not fit in `c`.
    #[allow(clippy::too_many_arguments)]
    pub fn run(
        &self,
        kc: usize,
        data: &[T],
        row_offs: &Offsets<'_>,
        col_offs: &Offsets<'_>,
        b: &[T],
        (rows, cols): (usize, usize),
        c: &mut [T],
        ldc: usize,
        alpha: T,
        beta: T,
    ) {
        let (mr, nr) = (self.tile.mr, self.tile.nr);
        assert!(row_offs.len() == mr && col_offs.len() >= kc && b.len() >= kc * nr);
        assert!((1..=mr).contains(&rows) && (1..=nr).contains(&cols));
        assert!(
            kc == 0 || row_offs.max() + col_offs.max() < data.len(),
            "gather kernel: A out of bounds"
        );
        assert!(
            (rows - 1) * ldc + cols <= c.len(),
            "gather kernel: C out of bounds"
        );
        let (a, r, p) = (data.as_ptr(), row_offs.as_ptr(), col_offs.as_ptr());
        if rows == mr && cols == nr {
            // SAFETY: MR row offsets and kc column offsets, every sum inside `data`
            // (checked against the largest of each), a panel of kc·NR, and the
            // tile's MR rows of NR inside `c`.
            unsafe { (self.run)(kc, a, r, p, b.as_ptr(), c.as_mut_ptr(), ldc, alpha, beta) };
            return;
        }
        let mut local = [T::ZERO; 8 * 32];
        debug_assert!(mr * nr <= local.len());
        // SAFETY: as above, into `local`, MR rows of NR at row stride NR.
        unsafe {
            (self.run)(
                kc,
                a,
                r,
                p,
                b.as_ptr(),
                local.as_mut_ptr(),
                nr,
                T::ONE,
                T::ZERO,
            )
        };
        for (i, row) in c.chunks_mut(ldc).take(rows).enumerate() {
            for (j, v) in row[..cols].iter_mut().enumerate() {
                *v = T::epilogue(self.tile.fused, alpha, local[i * nr + j], beta, *v);
            }
        }
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::super::rows::tests::runnable;
    use super::super::{simd, Scalar};
    use super::{GatherKernel, Offsets};
    use proptest::prelude::*;

    fn check<T: Scalar + From<i16>>(
        kernels: Vec<GatherKernel<T>>,
        kc: usize,
        (rows_cut, cols_cut): (usize, usize),
        seed: u64,
        beta_on: bool,
    ) -> Result<(), TestCaseError> {
        for gk in kernels {
            let (mr, nr) = (gk.tile.mr, gk.tile.nr);
            let (rows, cols) = (mr - rows_cut % mr, nr - cols_cut % nr);
            // Integers in [-1000, 1000]: exact inputs whose chains round.
            let mut s = seed;
            let mut next = || {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                T::from(((s >> 40) % 2001) as i16 - 1000)
            };
            let data: Vec<T> = (0..700).map(|_| next()).collect();
            let b: Vec<T> = (0..kc * nr).map(|_| next()).collect();
            let row_offs: Vec<usize> = (0..mr).map(|i| (i * 53 + seed as usize) % 300).collect();
            let col_offs: Vec<usize> = (0..kc)
                .map(|p| (p * 29 + 7 * seed as usize) % 390)
                .collect();
            // The packed twin on A packed from the same offsets.
            let mut a = vec![T::ZERO; kc * mr];
            for p in 0..kc {
                for i in 0..mr {
                    a[p * mr + i] = data[row_offs[i] + col_offs[p]];
                }
            }
            let ldc = nr + 5;
            let old: Vec<T> = (0..mr * ldc).map(|_| next()).collect();
            let (alpha, beta) = (T::from(-3), if beta_on { T::from(2) } else { T::ZERO });
            let mut tile = old.clone();
            // SAFETY: the panels hold kc·MR and kc·NR values and C MR rows of NR.
            unsafe {
                (gk.tile.run)(
                    kc,
                    a.as_ptr(),
                    b.as_ptr(),
                    tile.as_mut_ptr(),
                    ldc,
                    alpha,
                    beta,
                )
            };
            let mut want = old.clone();
            for i in 0..rows {
                want[i * ldc..i * ldc + cols].copy_from_slice(&tile[i * ldc..i * ldc + cols]);
            }
            let mut got = old.clone();
            let c_len = (rows - 1) * ldc + cols;
            let (ro, co) = (Offsets::new(&row_offs), Offsets::new(&col_offs));
            gk.run(
                kc,
                &data,
                &ro,
                &co,
                &b,
                (rows, cols),
                &mut got[..c_len],
                ldc,
                alpha,
                beta,
            );
            prop_assert!(
                got == want,
                "{} kernel, kc {kc}, {rows} × {cols}",
                gk.tile.name
            );
        }
        Ok(())
    }

    proptest! {
        /// Each gather kernel gives its packed twin's bits (whole and cut tiles,
        /// with and without β), reading A through its offsets.
        #[test]
        fn gather_kernels_give_the_packed_kernels_bits(
            kc in 0usize..300,
            cut in (0usize..8, 0usize..32),
            seed in 0u64..1000,
            beta_on in any::<bool>(),
        ) {
            let f32s = runnable([(simd::F32_AVX512_GATHER, "avx512f"), (simd::F32_AVX2_GATHER, "avx2")]);
            let f64s = runnable([(simd::F64_AVX512_GATHER, "avx512f"), (simd::F64_AVX2_GATHER, "avx2")]);
            check::<f32>(f32s, kc, cut, seed, beta_on)?;
            check::<f64>(f64s, kc, cut, seed, beta_on)?;
        }
    }

    /// An offset past the data's end is refused before any read.
    #[test]
    #[should_panic(expected = "A out of bounds")]
    fn reads_past_the_data_are_refused() {
        let Some(gk) = f64::gather_kernel() else {
            panic!("A out of bounds (no SIMD kernel on this CPU)");
        };
        let (mr, nr) = (gk.tile.mr, gk.tile.nr);
        let data = vec![0.0; 40];
        let b = vec![0.0; 2 * nr];
        let mut c = vec![0.0; mr * nr];
        let rows = vec![0; mr];
        let (ro, co) = (Offsets::new(&rows), Offsets::new(&[3, 40]));
        gk.run(2, &data, &ro, &co, &b, (mr, nr), &mut c, nr, 1.0, 0.0);
    }
}
