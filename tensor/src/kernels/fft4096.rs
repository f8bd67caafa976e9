//! The 4096-point transform as 64 × 64 (the four-step algorithm: two passes through
//! memory where radix-4 Stockham makes six). With j = 64·j₁ + j₂ and
//! k = k₁ + 64·k₂,
//!
//! X_k = Σ_{j₂} W₆₄^{j₂·k₂} · W₄₀₉₆^{j₂·k₁} · Σ_{j₁} x_{64·j₁ + j₂} W₆₄^{j₁·k₁}.
//!
//! Both passes run 64-point transforms down the columns of a 64 × 64 array, eight
//! adjacent columns at a time in the lanes of a vector, each as 8 × 8: an 8-point
//! transform over the high digit, the twiddles W₆₄^{b·k}, an 8-point transform over
//! the low digit (the `fft64` codelet's algorithm, with the lanes across columns
//! rather than along the sequence). The first pass reads x by rows j₁, turns its
//! outputs by W₄₀₉₆^{j₂·k₁} and writes them transposed (8 × 8 blocks transposed in
//! registers), so that the second pass reads rows j₂ of eight columns k₁ and writes
//! X in natural order.
//!
//! Written once over [`Vector`], so the AVX2 path of `f32` (`__m256`) and the
//! portable path (`[T; 8]`) perform the same operations and give the same bits.

use super::fft64::{dft8, Lanes};
use super::gemm::Scalar;
use num_traits::Float;
use std::any::TypeId;

/// The transform's length.
pub const N: usize = 4096;

/// Eight lanes that load from and store to memory as well as compute.
trait Vector<T>: Lanes {
    /// The first eight values of `s`.
    fn load(s: &[T]) -> Self;
    /// Writes the lanes to the first eight values of `s`.
    fn store(self, s: &mut [T]);
    /// `v` in every lane.
    fn splat(v: T) -> Self;
    /// The 8 × 8 transpose of eight rows (lane b of row a to lane a of row b).
    fn transpose(rows: [Self; 8]) -> [Self; 8];
    /// Zero in every lane.
    fn zero() -> Self;
}

impl<T: Float> Vector<T> for [T; 8] {
    #[inline(always)]
    fn load(s: &[T]) -> Self {
        std::array::from_fn(|l| s[l])
    }
    #[inline(always)]
    fn store(self, s: &mut [T]) {
        s[..8].copy_from_slice(&self);
    }
    #[inline(always)]
    fn splat(v: T) -> Self {
        [v; 8]
    }
    #[inline(always)]
    fn transpose(rows: [Self; 8]) -> [Self; 8] {
        std::array::from_fn(|a| std::array::from_fn(|b| rows[b][a]))
    }
    #[inline(always)]
    fn zero() -> Self {
        [T::zero(); 8]
    }
}

/// Sixty-four vectors (real parts, imaginary parts).
type Block<L> = ([L; 64], [L; 64]);

/// The 64-point transforms of eight columns at once: `load(j)` gives point j of
/// the eight columns (one per lane), `store(k, re, im)` takes point k of their
/// transforms. `s` is scratch for the 8 × 8 intermediate array; `w` the table
/// W₆₄^m, m < 64.
#[inline(always)]
fn columns64<T: Copy, L: Vector<T>>(
    load: impl Fn(usize) -> (L, L),
    w: &([T; 64], [T; 64]),
    s: &mut Block<L>,
    mut store: impl FnMut(usize, L, L),
) {
    let h = L::splat(w.0[8]);
    // Point 8a + b: for each low digit b, the 8-point transform over a, turned by
    // W₆₄^{b·k}, lands at s[8k + b].
    for b in 0..8 {
        let p: [(L, L); 8] = std::array::from_fn(|a| load(8 * a + b));
        let (yr, yi) = dft8((p.map(|v| v.0), p.map(|v| v.1)), h);
        for k in 0..8 {
            let (mut r, mut i) = (yr[k], yi[k]);
            if b > 0 && k > 0 {
                let (wr, wi) = (L::splat(w.0[b * k]), L::splat(w.1[b * k]));
                (r, i) = (r.mul(wr).sub(i.mul(wi)), r.mul(wi).add(i.mul(wr)));
            }
            s.0[8 * k + b] = r;
            s.1[8 * k + b] = i;
        }
    }
    // For each k, the 8-point transform over b gives X_{k + 8·k₂}.
    for k in 0..8 {
        let rows = (
            std::array::from_fn(|b| s.0[8 * k + b]),
            std::array::from_fn(|b| s.1[8 * k + b]),
        );
        let (zr, zi) = dft8(rows, h);
        for k2 in 0..8 {
            store(k + 8 * k2, zr[k2], zi[k2]);
        }
    }
}

/// The four-step transform of (re, im) in place, through the scratch (sr, si).
#[inline(always)]
fn four_step<T: Copy, L: Vector<T>>(
    plan: &Fft4096<T>,
    re: &mut [T],
    im: &mut [T],
    sr: &mut [T],
    si: &mut [T],
) {
    let (re, im, sr, si) = (&mut re[..N], &mut im[..N], &mut sr[..N], &mut si[..N]);
    let mut s: Block<L> = ([L::zero(); 64], [L::zero(); 64]);
    let mut y: Block<L> = ([L::zero(); 64], [L::zero(); 64]);
    let (tr, ti) = (&plan.tw.0[..N], &plan.tw.1[..N]);
    // Pass 1: columns j₂ = 8c.. of x (rows j₁), turned by W₄₀₉₆^{j₂·k₁} into y[k₁],
    // then written transposed: row j₂, columns k₁ of the scratch.
    for c in 0..8 {
        let (x_re, x_im) = (&*re, &*im);
        let load = |j1: usize| {
            let at = 64 * j1 + 8 * c;
            (L::load(&x_re[at..]), L::load(&x_im[at..]))
        };
        columns64(load, &plan.w64, &mut s, |k1, r, i| {
            if k1 == 0 {
                (y.0[0], y.1[0]) = (r, i);
                return;
            }
            let at = 64 * k1 + 8 * c;
            let (wr, wi) = (L::load(&tr[at..]), L::load(&ti[at..]));
            y.0[k1] = r.mul(wr).sub(i.mul(wi));
            y.1[k1] = r.mul(wi).add(i.mul(wr));
        });
        for d in 0..8 {
            let tr_re = L::transpose(std::array::from_fn(|l| y.0[8 * d + l]));
            let tr_im = L::transpose(std::array::from_fn(|l| y.1[8 * d + l]));
            for l in 0..8 {
                let at = 64 * (8 * c + l) + 8 * d;
                tr_re[l].store(&mut sr[at..]);
                tr_im[l].store(&mut si[at..]);
            }
        }
    }
    // Pass 2: columns k₁ = 8c.. of the scratch (rows j₂); point k₂ of their
    // transforms is X_{k₁ + 64·k₂}, at 64·k₂ + k₁.
    for c in 0..8 {
        let (s_re, s_im) = (&*sr, &*si);
        let load = |j2: usize| {
            let at = 64 * j2 + 8 * c;
            (L::load(&s_re[at..]), L::load(&s_im[at..]))
        };
        columns64(load, &plan.w64, &mut s, |k2, r, i| {
            let at = 64 * k2 + 8 * c;
            r.store(&mut re[at..]);
            i.store(&mut im[at..]);
        });
    }
}

/// The 4096-point forward transform on split data, its twiddles prepared once.
pub struct Fft4096<T> {
    /// W₆₄^m, m < 64 (real parts, imaginary parts).
    w64: ([T; 64], [T; 64]),
    /// W₄₀₉₆^{j₂·k₁} at 64·k₁ + j₂.
    tw: (Vec<T>, Vec<T>),
}

impl<T: Scalar + Float> Fft4096<T> {
    /// The transform from the table of W₄₀₉₆^k = e^{−2πi k/4096}, k < 4096 (real
    /// parts, imaginary parts), as the plan computes it.
    ///
    /// # Panics
    /// When a table does not hold 4096 values.
    pub fn new(wr: &[T], wi: &[T]) -> Self {
        assert!(
            wr.len() == N && wi.len() == N,
            "Fft4096: twiddle tables of {N}"
        );
        let w64 = |w: &[T]| std::array::from_fn(|m| w[64 * m]);
        let outer = |w: &[T]| (0..N).map(|at| w[(at / 64) * (at % 64)]).collect();
        Fft4096 {
            w64: (w64(wr), w64(wi)),
            tw: (outer(wr), outer(wi)),
        }
    }

    /// The forward transform of (re, im) in place, with (sr, si) as scratch.
    ///
    /// # Panics
    /// When a slice does not hold 4096 values.
    pub fn run(&self, re: &mut [T], im: &mut [T], sr: &mut [T], si: &mut [T]) {
        assert!(
            [re.len(), im.len(), sr.len(), si.len()] == [N; 4],
            "Fft4096::run: {N} points"
        );
        #[cfg(target_arch = "x86_64")]
        if TypeId::of::<T>() == TypeId::of::<f32>() && super::has_avx2_fma() {
            let plan: *const Fft4096<T> = self;
            let f32s = |s: &mut [T]| {
                // SAFETY: T is f32, as the type test says.
                unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast::<f32>(), N) }
            };
            // SAFETY: AVX2 is present (checked); T is f32, so the plan's tables are
            // f32 ones.
            unsafe { avx2(&*plan.cast(), f32s(re), f32s(im), f32s(sr), f32s(si)) };
            return;
        }
        four_step::<T, [T; 8]>(self, re, im, sr, si);
    }
}

#[cfg(target_arch = "x86_64")]
impl Vector<f32> for super::fft64::avx2_lanes::V {
    // SAFETY (every method): as for the `Lanes` methods of `V`, whose values exist
    // only inside functions with AVX2 enabled; the loads and stores are of the
    // first eight values of slices that hold them (indexing checks it).
    #[inline(always)]
    fn load(s: &[f32]) -> Self {
        Self(unsafe { std::arch::x86_64::_mm256_loadu_ps(s[..8].as_ptr()) })
    }
    #[inline(always)]
    fn store(self, s: &mut [f32]) {
        unsafe { std::arch::x86_64::_mm256_storeu_ps(s[..8].as_mut_ptr(), self.0) }
    }
    #[inline(always)]
    fn splat(v: f32) -> Self {
        Self(unsafe { std::arch::x86_64::_mm256_set1_ps(v) })
    }
    #[inline(always)]
    fn transpose(rows: [Self; 8]) -> [Self; 8] {
        Self::transpose(rows)
    }
    #[inline(always)]
    fn zero() -> Self {
        Self(unsafe { std::arch::x86_64::_mm256_setzero_ps() })
    }
}

/// The four-step transform with AVX2.
///
/// # Safety
/// AVX2 is available.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn avx2(
    plan: &Fft4096<f32>,
    re: &mut [f32],
    im: &mut [f32],
    sr: &mut [f32],
    si: &mut [f32],
) {
    four_step::<f32, super::fft64::avx2_lanes::V>(plan, re, im, sr, si);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table<T: Float>() -> (Vec<T>, Vec<T>) {
        (0..N)
            .map(|k| {
                let a = -2.0 * std::f64::consts::PI * k as f64 / N as f64;
                (T::from(a.cos()).unwrap(), T::from(a.sin()).unwrap())
            })
            .unzip()
    }

    fn input(seed: usize) -> Vec<f64> {
        (0..2 * N)
            .map(|j| (((j + seed) * 7919) % 1000) as f64 / 97.0 - 5.0)
            .collect()
    }

    /// Against the DFT summed in f64, for both element types: to 1e-12 relative to
    /// the output's size in f64 (twelve butterfly levels of rounding at 2⁻⁵³ and the
    /// twiddles'), 1e-5 in f32 (at 2⁻²⁴).
    #[test]
    fn matches_the_dft() {
        fn check<T: Scalar + Float>(tol: f64) {
            let (wr, wi) = table::<T>();
            let f = Fft4096::new(&wr, &wi);
            let x = input(3);
            let (mut re, mut im): (Vec<T>, Vec<T>) = (0..N)
                .map(|j| (T::from(x[j]).unwrap(), T::from(x[N + j]).unwrap()))
                .unzip();
            let xr: Vec<f64> = re.iter().map(|v| v.to_f64().unwrap()).collect();
            let xi: Vec<f64> = im.iter().map(|v| v.to_f64().unwrap()).collect();
            let (mut sr, mut si) = (vec![T::zero(); N], vec![T::zero(); N]);
            f.run(&mut re, &mut im, &mut sr, &mut si);
            let (cos, sin): (Vec<f64>, Vec<f64>) = (0..N)
                .map(|m| {
                    let a = -2.0 * std::f64::consts::PI * m as f64 / N as f64;
                    (a.cos(), a.sin())
                })
                .unzip();
            let mut scale: f64 = 0.0;
            let mut err: f64 = 0.0;
            for k in 0..N {
                let (mut sr, mut si) = (0.0, 0.0);
                for j in 0..N {
                    let m = (j * k) % N;
                    sr += xr[j] * cos[m] - xi[j] * sin[m];
                    si += xr[j] * sin[m] + xi[j] * cos[m];
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
        let f = Fft4096::new(&wr, &wi);
        for seed in 0..3 {
            let x: Vec<f32> = input(seed).iter().map(|&v| v as f32).collect();
            let (mut re, mut im) = (x[..N].to_vec(), x[N..].to_vec());
            let (mut pr, mut pi) = (re.clone(), im.clone());
            let (mut sr, mut si) = (vec![0.0; N], vec![0.0; N]);
            f.run(&mut re, &mut im, &mut sr, &mut si);
            four_step::<f32, [f32; 8]>(&f, &mut pr, &mut pi, &mut sr, &mut si);
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&re), bits(&pr), "real parts");
            assert_eq!(bits(&im), bits(&pi), "imaginary parts");
        }
    }
}
