//! The 64-point transform as one codelet in registers: the points as an 8 × 8
//! array (x_{8a + b} in row a, lane b), an 8-point transform down the rows (lane by
//! lane), the twiddles W₆₄^{b·k}, a transpose, and an 8-point transform down the
//! rows again, whose row k₂ holds X_{k + 8·k₂} in lane k, in natural order: no
//! passes through memory, where the Stockham stages make three radix-4 passes and a
//! copy back after the odd one.
//!
//! The algorithm is written once over `Lanes` (eight values, added, subtracted
//! and multiplied lane by lane, unfused), so the AVX2 path of `f32` (`__m256`) and
//! the portable path (`[T; 8]`) perform the same operations and give the same bits.

use super::gemm::Scalar;
use num_traits::Float;
#[cfg(target_arch = "x86_64")]
use std::any::TypeId;

/// Eight lanes with lane-wise arithmetic.
pub(super) trait Lanes: Copy {
    fn add(self, o: Self) -> Self;
    fn sub(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
}

impl<T: Float> Lanes for [T; 8] {
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        std::array::from_fn(|l| self[l] + o[l])
    }
    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        std::array::from_fn(|l| self[l] - o[l])
    }
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        std::array::from_fn(|l| self[l] * o[l])
    }
}

/// A set of rows: real parts and imaginary parts.
pub(super) type Rows<L> = ([L; 8], [L; 8]);

/// The 4-point forward transform of (x₀, x₁, x₂, x₃), lane by lane.
#[inline(always)]
pub(super) fn dft4<L: Lanes>(r: [L; 4], i: [L; 4]) -> ([L; 4], [L; 4]) {
    let (t0r, t0i) = (r[0].add(r[2]), i[0].add(i[2]));
    let (t1r, t1i) = (r[0].sub(r[2]), i[0].sub(i[2]));
    let (t2r, t2i) = (r[1].add(r[3]), i[1].add(i[3]));
    let (t3r, t3i) = (r[1].sub(r[3]), i[1].sub(i[3]));
    // y₁ = t₁ − i·t₃, y₃ = t₁ + i·t₃.
    (
        [t0r.add(t2r), t1r.add(t3i), t0r.sub(t2r), t1r.sub(t3i)],
        [t0i.add(t2i), t1i.sub(t3r), t0i.sub(t2i), t1i.add(t3r)],
    )
}

/// The 8-point forward transform down the rows, lane by lane: the 4-point
/// transforms of the even and the odd rows, the odd ones turned by W₈^k (`h` is
/// 1/√2 in every lane), then summed and differenced.
#[inline(always)]
pub(super) fn dft8<L: Lanes>((r, i): Rows<L>, h: L) -> Rows<L> {
    let (er, ei) = dft4([r[0], r[2], r[4], r[6]], [i[0], i[2], i[4], i[6]]);
    let (or, oi) = dft4([r[1], r[3], r[5], r[7]], [i[1], i[3], i[5], i[7]]);
    // W₈ O₁ = ((a + b)·h, (b − a)·h) and W₈³ O₃ = ((b − a)·h, −(a + b)·h) for O = a + ib;
    // W₈² O₂ = (b, −a), folded into the sums below.
    let (w1r, w1i) = (or[1].add(oi[1]).mul(h), oi[1].sub(or[1]).mul(h));
    let (w3r, w3s) = (oi[3].sub(or[3]).mul(h), or[3].add(oi[3]).mul(h));
    (
        [
            er[0].add(or[0]),
            er[1].add(w1r),
            er[2].add(oi[2]),
            er[3].add(w3r),
            er[0].sub(or[0]),
            er[1].sub(w1r),
            er[2].sub(oi[2]),
            er[3].sub(w3r),
        ],
        [
            ei[0].add(oi[0]),
            ei[1].add(w1i),
            ei[2].sub(or[2]),
            ei[3].sub(w3s),
            ei[0].sub(oi[0]),
            ei[1].sub(w1i),
            ei[2].add(or[2]),
            ei[3].add(w3s),
        ],
    )
}

/// The codelet on the rows: transform, twiddle, `transpose` (of eight rows),
/// transform.
#[inline(always)]
fn codelet<L: Lanes>(
    x: Rows<L>,
    tw: &Rows<L>,
    h: L,
    transpose: impl Fn([L; 8]) -> [L; 8],
) -> Rows<L> {
    let (yr, yi) = dft8(x, h);
    let (mut zr, mut zi) = (yr, yi);
    for k in 1..8 {
        zr[k] = yr[k].mul(tw.0[k]).sub(yi[k].mul(tw.1[k]));
        zi[k] = yr[k].mul(tw.1[k]).add(yi[k].mul(tw.0[k]));
    }
    dft8((transpose(zr), transpose(zi)), h)
}

/// The 64-point forward transform, in place on split data, with its twiddles
/// W₆₄^{b·k} (row k, lane b) prepared once.
pub struct Fft64<T> {
    tw: Rows<[T; 8]>,
    /// 1/√2, the real part of W₆₄⁸ in the table.
    h: T,
}

impl<T: Scalar + Float> Fft64<T> {
    /// The codelet from the table of W₆₄^k = e^{−2πi k/64}, k < 64 (real parts,
    /// imaginary parts), as the plan computes it.
    ///
    /// # Panics
    /// When a table does not hold 64 values.
    pub fn new(wr: &[T], wi: &[T]) -> Self {
        assert!(
            wr.len() == 64 && wi.len() == 64,
            "Fft64: twiddle tables of 64"
        );
        let table = |w: &[T]| std::array::from_fn(|k| std::array::from_fn(|b| w[(b * k) % 64]));
        Fft64 {
            tw: (table(wr), table(wi)),
            h: wr[8],
        }
    }

    /// The forward transform of (re, im), in place.
    ///
    /// # Panics
    /// When a slice does not hold 64 values.
    pub fn run(&self, re: &mut [T], im: &mut [T]) {
        assert!(re.len() == 64 && im.len() == 64, "Fft64::run: 64 points");
        #[cfg(target_arch = "x86_64")]
        if TypeId::of::<T>() == TypeId::of::<f32>() && super::has_avx2_fma() {
            let tw: *const Rows<[T; 8]> = &self.tw;
            // SAFETY: AVX2 is present; both slices hold 64 values (checked above);
            // T is f32, as the type test says, so the tables are f32 arrays.
            let h: *const T = &self.h;
            unsafe {
                avx2(
                    &*tw.cast(),
                    *h.cast(),
                    re.as_mut_ptr().cast(),
                    im.as_mut_ptr().cast(),
                )
            };
            return;
        }
        let rows = |v: &[T]| std::array::from_fn(|a| std::array::from_fn(|b| v[8 * a + b]));
        let transpose = |m: [[T; 8]; 8]| std::array::from_fn(|a| std::array::from_fn(|b| m[b][a]));
        let (zr, zi) = codelet((rows(re), rows(im)), &self.tw, [self.h; 8], transpose);
        for a in 0..8 {
            re[8 * a..8 * a + 8].copy_from_slice(&zr[a]);
            im[8 * a..8 * a + 8].copy_from_slice(&zi[a]);
        }
    }
}

#[cfg(target_arch = "x86_64")]
pub(super) mod avx2_lanes {
    use super::Lanes;
    use std::arch::x86_64::*;

    /// Eight `f32` lanes in an AVX register.
    #[derive(Clone, Copy)]
    pub(in crate::kernels) struct V(pub(in crate::kernels) __m256);

    // SAFETY (every method): a `V` exists only inside the `avx2` functions of this
    // module and of `fft4096` (its constructors are there), functions with AVX2
    // enabled that are reached after checking the CPU has it; so the intrinsics run
    // on a CPU that has them.
    impl Lanes for V {
        #[inline(always)]
        fn add(self, o: Self) -> Self {
            V(unsafe { _mm256_add_ps(self.0, o.0) })
        }
        #[inline(always)]
        fn sub(self, o: Self) -> Self {
            V(unsafe { _mm256_sub_ps(self.0, o.0) })
        }
        #[inline(always)]
        fn mul(self, o: Self) -> Self {
            V(unsafe { _mm256_mul_ps(self.0, o.0) })
        }
    }
}

/// The codelet with AVX2: rows loaded as registers, transposed by shuffles.
///
/// # Safety
/// AVX2 is available; `re` and `im` address 64 writable values.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn avx2(tw: &Rows<[f32; 8]>, h: f32, re: *mut f32, im: *mut f32) {
    use avx2_lanes::V;
    use std::arch::x86_64::*;
    // SAFETY: row a of 8 lies within the 64 values (a < 8); the tables are arrays.
    let load = |p: *const f32| -> [V; 8] {
        std::array::from_fn(|a| V(unsafe { _mm256_loadu_ps(p.add(8 * a)) }))
    };
    let table = |t: &[[f32; 8]; 8]| -> [V; 8] {
        std::array::from_fn(|k| V(unsafe { _mm256_loadu_ps(t[k].as_ptr()) }))
    };
    let tw = (table(&tw.0), table(&tw.1));
    let h = V(_mm256_set1_ps(h));
    let (zr, zi) = codelet((load(re), load(im)), &tw, h, V::transpose);
    for a in 0..8 {
        // SAFETY: as the loads.
        unsafe {
            _mm256_storeu_ps(re.add(8 * a), zr[a].0);
            _mm256_storeu_ps(im.add(8 * a), zi[a].0);
        }
    }
}

#[cfg(target_arch = "x86_64")]
impl avx2_lanes::V {
    /// The 8 × 8 transpose of eight rows (lane b of row a to lane a of row b).
    #[inline(always)]
    pub(super) fn transpose(r: [Self; 8]) -> [Self; 8] {
        // SAFETY: a `V` exists only inside `avx2` (see the `Lanes` methods).
        unsafe { super::gemm::transpose8_f32(r.map(|v| v.0)) }.map(Self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table<T: Float>() -> (Vec<T>, Vec<T>) {
        (0..64)
            .map(|k| {
                let a = -2.0 * std::f64::consts::PI * k as f64 / 64.0;
                (T::from(a.cos()).unwrap(), T::from(a.sin()).unwrap())
            })
            .unzip()
    }

    fn input(seed: usize) -> Vec<f64> {
        (0..128)
            .map(|j| (((j + seed) * 7919) % 1000) as f64 / 97.0 - 5.0)
            .collect()
    }

    /// Against the DFT summed in f64, for both element types: to 1e-12 relative to
    /// the output's size in f64 (six butterfly levels of rounding at 2⁻⁵³), 1e-5 in
    /// f32 (at 2⁻²⁴).
    #[test]
    fn matches_the_dft() {
        fn check<T: Scalar + Float>(tol: f64) {
            let (wr, wi) = table::<T>();
            let f = Fft64::new(&wr, &wi);
            let x = input(3);
            let (mut re, mut im): (Vec<T>, Vec<T>) = (0..64)
                .map(|j| (T::from(x[j]).unwrap(), T::from(x[64 + j]).unwrap()))
                .unzip();
            let xr: Vec<f64> = re.iter().map(|v| v.to_f64().unwrap()).collect();
            let xi: Vec<f64> = im.iter().map(|v| v.to_f64().unwrap()).collect();
            f.run(&mut re, &mut im);
            let mut scale: f64 = 0.0;
            let mut err: f64 = 0.0;
            for k in 0..64 {
                let (mut sr, mut si) = (0.0, 0.0);
                for j in 0..64 {
                    let a = -2.0 * std::f64::consts::PI * ((j * k) % 64) as f64 / 64.0;
                    sr += xr[j] * a.cos() - xi[j] * a.sin();
                    si += xr[j] * a.sin() + xi[j] * a.cos();
                }
                scale = scale.max(sr.abs()).max(si.abs());
                err = err
                    .max((re[k].to_f64().unwrap() - sr).abs())
                    .max((im[k].to_f64().unwrap() - si).abs());
            }
            assert!(err <= tol * scale, "error {err} against {scale}");
        }
        check::<f64>(1e-12);
        check::<f32>(1e-5);
    }

    /// The AVX2 path of f32 gives the portable path's bits.
    #[test]
    fn avx2_gives_the_portable_bits() {
        let (wr, wi) = table::<f32>();
        let f = Fft64::new(&wr, &wi);
        for seed in 0..4 {
            let x: Vec<f32> = input(seed).iter().map(|&v| v as f32).collect();
            let (mut re, mut im) = (x[..64].to_vec(), x[64..].to_vec());
            f.run(&mut re, &mut im);
            let rows = |v: &[f32]| std::array::from_fn(|a| std::array::from_fn(|b| v[8 * a + b]));
            let transpose =
                |m: [[f32; 8]; 8]| std::array::from_fn(|a| std::array::from_fn(|b| m[b][a]));
            let (zr, zi) = codelet((rows(&x[..64]), rows(&x[64..])), &f.tw, [f.h; 8], transpose);
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&re), bits(zr.as_flattened()), "real parts");
            assert_eq!(bits(&im), bits(zi.as_flattened()), "imaginary parts");
        }
    }
}
