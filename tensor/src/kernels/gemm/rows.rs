//! Micro-kernels that read B's rows where they lie. When every depth row of a B
//! tile is two runs of memory already — as in a convolution with unit stride along
//! the width, whose patch rows are runs of the padded image — packing B copies each
//! value once per image only to read it back; a [`RowKernel`] reads the runs in
//! place instead. It is the packed kernel's twin (same tile, same fused chain, same
//! epilogue), so a product computed with it has the same bits.

use super::{MicroKernel, Scalar};

/// A micro-kernel whose B tile is read in place: depth row p is the
/// [`lanes`](RowKernel::lanes) values at `starts[0] + offs[p]`, then those at
/// `starts[1] + offs[p]`, of one slice.
#[derive(Clone, Copy)]
pub struct RowKernel<T> {
    /// The packed-panel kernel it mirrors (its tile, instruction set and bits).
    pub tile: MicroKernel<T>,
    pub(super) run: unsafe fn(usize, *const T, *const usize, [*const T; 2], *mut T, usize, T, T),
}

/// Offsets into an operand read in place (a B's depth rows, an A's rows or
/// columns), with the largest kept so that a kernel call checks its reads in
/// constant time.
pub struct Offsets<'a> {
    offs: &'a [usize],
    max: usize,
}

impl<'a> Offsets<'a> {
    /// The offsets `offs` (one per depth row).
    pub fn new(offs: &'a [usize]) -> Self {
        Offsets {
            offs,
            max: offs.iter().copied().max().unwrap_or(0),
        }
    }
}

impl Offsets<'_> {
    /// How many offsets.
    pub fn len(&self) -> usize {
        self.offs.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.offs.is_empty()
    }

    /// The largest offset (0 when there are none).
    pub fn max(&self) -> usize {
        self.max
    }

    /// The offsets' first element, for a kernel.
    pub(super) fn as_ptr(&self) -> *const usize {
        self.offs.as_ptr()
    }
}

impl<T: Scalar> RowKernel<T> {
    /// Values per run: half the tile's columns.
    pub fn lanes(&self) -> usize {
        self.tile.nr / 2
    }

    /// `C ← α·A·B + β·C` on one tile of `rows` (at most MR) rows and NR columns,
    /// whose corner is `c[0]` (row stride `ldc`): A is a packed panel of `kc` depth
    /// rows of MR values, B's depth row p the runs at `starts[h] + offs[p]` of
    /// `data`. With β = 0, C is not read. Rows past `rows` are computed but not
    /// stored, as the packed kernels' edge tiles are.
    ///
    /// # Panics
    /// When a panel, an offset list or a run is too short for `kc`, or the tile
    /// does not fit in `c`.
    #[allow(clippy::too_many_arguments)]
    pub fn run(
        &self,
        kc: usize,
        a: &[T],
        offs: &Offsets<'_>,
        data: &[T],
        starts: [usize; 2],
        rows: usize,
        c: &mut [T],
        ldc: usize,
        alpha: T,
        beta: T,
    ) {
        let (mr, nr, lanes) = (self.tile.mr, self.tile.nr, self.lanes());
        assert!(rows >= 1 && rows <= mr && a.len() >= kc * mr && offs.offs.len() >= kc);
        let reach = starts[0].max(starts[1]) + offs.max + lanes;
        assert!(
            kc == 0 || reach <= data.len(),
            "row kernel: B out of bounds"
        );
        assert!(
            (rows - 1) * ldc + nr <= c.len(),
            "row kernel: C out of bounds"
        );
        let b = [starts[0], starts[1]].map(|s| data[s..].as_ptr());
        if rows == mr {
            // SAFETY: the panel holds kc·MR values, the offsets kc, every run
            // `starts[h] + offs[p] .. + lanes` lies in `data` (checked against the
            // largest offset), and the tile's MR rows of NR lie in `c`.
            unsafe {
                (self.run)(
                    kc,
                    a.as_ptr(),
                    offs.offs.as_ptr(),
                    b,
                    c.as_mut_ptr(),
                    ldc,
                    alpha,
                    beta,
                )
            };
            return;
        }
        let mut local = [T::ZERO; 8 * 32];
        debug_assert!(mr * nr <= local.len());
        // SAFETY: as above, into `local`, MR rows of NR at row stride NR.
        unsafe {
            (self.run)(
                kc,
                a.as_ptr(),
                offs.offs.as_ptr(),
                b,
                local.as_mut_ptr(),
                nr,
                T::ONE,
                T::ZERO,
            )
        };
        for (i, row) in c.chunks_mut(ldc).take(rows).enumerate() {
            for (j, v) in row[..nr].iter_mut().enumerate() {
                *v = T::epilogue(self.tile.fused, alpha, local[i * nr + j], beta, *v);
            }
        }
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
pub(super) mod tests {
    use super::super::{simd, MicroKernel, Scalar};
    use super::{Offsets, RowKernel};
    use proptest::prelude::*;

    /// The kernels of `all` whose features (`"avx512f"` or `"avx2"`) this CPU has.
    pub(in super::super) fn runnable<K>(all: [(K, &str); 2]) -> Vec<K> {
        all.into_iter()
            .filter(|(_, f)| match *f {
                "avx512f" => std::arch::is_x86_feature_detected!("avx512f"),
                _ => {
                    std::arch::is_x86_feature_detected!("avx2")
                        && std::arch::is_x86_feature_detected!("fma")
                }
            })
            .map(|(k, _)| k)
            .collect()
    }

    /// The packed twin's result on the same tile, its B panel copied from the runs.
    #[allow(clippy::too_many_arguments)]
    fn packed<T: Scalar>(
        kern: MicroKernel<T>,
        kc: usize,
        a: &[T],
        offs: &[usize],
        data: &[T],
        starts: [usize; 2],
        c: &mut [T],
        ldc: usize,
        alpha: T,
        beta: T,
    ) {
        let (nr, lanes) = (kern.nr, kern.nr / 2);
        let mut b = vec![T::ZERO; kc * nr];
        for (p, &o) in offs.iter().enumerate().take(kc) {
            for h in 0..2 {
                let run = &data[starts[h] + o..][..lanes];
                b[p * nr + h * lanes..][..lanes].copy_from_slice(run);
            }
        }
        // SAFETY: the panels hold kc·MR and kc·NR values and C MR rows of NR.
        unsafe { (kern.run)(kc, a.as_ptr(), b.as_ptr(), c.as_mut_ptr(), ldc, alpha, beta) };
    }

    fn check<T: Scalar + From<i16>>(
        kernels: Vec<RowKernel<T>>,
        kc: usize,
        rows_cut: usize,
        seed: u64,
        beta_on: bool,
    ) -> Result<(), TestCaseError> {
        for rk in kernels {
            let (mr, nr) = (rk.tile.mr, rk.tile.nr);
            let rows = mr - rows_cut % mr;
            // Integers in [-1000, 1000]: exact inputs, whose chains round (in f32
            // beyond 2^24), so a kernel that fused or ordered otherwise would differ.
            let mut s = seed;
            let mut next = || {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                T::from(((s >> 40) % 2001) as i16 - 1000)
            };
            let data: Vec<T> = (0..600).map(|_| next()).collect();
            let a: Vec<T> = (0..kc * mr).map(|_| next()).collect();
            let offs: Vec<usize> = (0..kc).map(|p| (p * 37 + seed as usize) % 400).collect();
            let starts = [seed as usize % 50, 90 + seed as usize % 40];
            let ldc = nr + 3;
            let old: Vec<T> = (0..mr * ldc).map(|_| next()).collect();
            let (alpha, beta) = (T::from(3), if beta_on { T::from(-2) } else { T::ZERO });
            let mut want = old.clone();
            let mut tile = old.clone();
            packed(
                rk.tile, kc, &a, &offs, &data, starts, &mut tile, ldc, alpha, beta,
            );
            for i in 0..rows {
                want[i * ldc..i * ldc + nr].copy_from_slice(&tile[i * ldc..i * ldc + nr]);
            }
            let mut got = old.clone();
            let c_len = (rows - 1) * ldc + nr;
            rk.run(
                kc,
                &a,
                &Offsets::new(&offs),
                &data,
                starts,
                rows,
                &mut got[..c_len],
                ldc,
                alpha,
                beta,
            );
            prop_assert!(got == want, "{} kernel, kc {kc}, {rows} rows", rk.tile.name);
        }
        Ok(())
    }

    proptest! {
        /// Each row kernel gives its packed twin's bits (whole and cut tiles, with
        /// and without β), reading B's runs where they lie.
        #[test]
        fn row_kernels_give_the_packed_kernels_bits(
            kc in 0usize..300,
            rows_cut in 0usize..8,
            seed in 0u64..1000,
            beta_on in any::<bool>(),
        ) {
            let f32s = runnable([(simd::F32_AVX512_ROWS, "avx512f"), (simd::F32_AVX2_ROWS, "avx2")]);
            let f64s = runnable([(simd::F64_AVX512_ROWS, "avx512f"), (simd::F64_AVX2_ROWS, "avx2")]);
            check::<f32>(f32s, kc, rows_cut, seed, beta_on)?;
            check::<f64>(f64s, kc, rows_cut, seed, beta_on)?;
        }
    }

    /// A run past the data's end is refused before any read.
    #[test]
    #[should_panic(expected = "B out of bounds")]
    fn reads_past_the_data_are_refused() {
        let Some(rk) = f64::row_kernel() else {
            panic!("B out of bounds (no SIMD kernel on this CPU)");
        };
        let a = vec![0.0; 4 * rk.tile.mr];
        let data = vec![0.0; 40];
        let mut c = vec![0.0; rk.tile.mr * rk.tile.nr];
        let offs = [0, 1, 2, 40 - rk.lanes() + 1];
        let ldc = rk.tile.nr;
        rk.run(
            4,
            &a,
            &Offsets::new(&offs),
            &data,
            [0, 0],
            rk.tile.mr,
            &mut c,
            ldc,
            1.0,
            0.0,
        );
    }
}
