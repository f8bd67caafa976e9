//! FFTs of 1024, 2048 and 4096 points as N₁ × N₂ with N₁, N₂ ∈ {32, 64} (the
//! four-step algorithm: two passes through memory where radix-4 Stockham makes five
//! or six). With n = N₁·N₂, j = N₂·j₁ + j₂ and k = k₁ + N₁·k₂,
//!
//! X_k = Σ_{j₂} W_{N₂}^{j₂·k₂} · W_n^{j₂·k₁} · Σ_{j₁} x_{N₂·j₁ + j₂} W_{N₁}^{j₁·k₁}.
//!
//! Both passes run transforms down the columns of an array, eight adjacent columns
//! at a time in the lanes of a vector, each of 8·R points as 8 × R: an 8-point
//! transform over the high digit, the twiddles, an R-point transform over the low
//! digit (R = 8 is the `fft64` codelet's algorithm, with the lanes across columns
//! rather than along the sequence). The first pass reads x by rows j₁ (N₁ rows of
//! N₂), turns its outputs by W_n^{j₂·k₁} and writes them transposed (8 × 8 blocks
//! transposed in registers), so that the second pass reads rows j₂ of eight columns
//! k₁ and writes X in natural order.
//!
//! The first pass may read x as interleaved (re, im) pairs, the layout of a complex
//! tensor, and the second write X so ([`FourStep::run_moved`]): the split and the
//! join are then shuffles inside the passes, not passes of their own over the row.
//!
//! Written once over a `Vector` trait, so the AVX2 path of `f32` (`__m256`) and the
//! portable path (`[T; 8]`) perform the same operations and give the same bits.

use super::ahead::Ahead;
use super::fft64::{dft4, dft8, Lanes};
use super::gemm::Scalar;
use num_traits::Float;
#[cfg(target_arch = "x86_64")]
use std::any::TypeId;

/// The lengths with a four-step plan.
pub const LENGTHS: [usize; 3] = [1024, 2048, 4096];

/// Eight lanes that load from and store to memory as well as compute.
trait Vector<T>: Lanes {
    /// The first eight values of `s`.
    fn load(s: &[T]) -> Self;
    /// Writes the lanes to the first eight values of `s`.
    fn store(self, s: &mut [T]);
    /// The eight (re, im) pairs of the first sixteen values of `s`, as (real parts,
    /// imaginary parts).
    fn load_pairs(s: &[T]) -> (Self, Self);
    /// Writes (re, im) as eight pairs to the first sixteen values of `s`.
    fn store_pairs(re: Self, im: Self, s: &mut [T]);
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
    fn load_pairs(s: &[T]) -> (Self, Self) {
        let s = &s[..16];
        (
            std::array::from_fn(|l| s[2 * l]),
            std::array::from_fn(|l| s[2 * l + 1]),
        )
    }
    #[inline(always)]
    fn store_pairs(re: Self, im: Self, s: &mut [T]) {
        for (l, pair) in s[..16].chunks_exact_mut(2).enumerate() {
            (pair[0], pair[1]) = (re[l], im[l]);
        }
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

/// Where a transform reads its input x: split parts (real, imaginary), or
/// interleaved (re, im) pairs whose imaginary parts are multiplied by a scale as
/// they are read (−1 conjugates, exactly) — the layout of a complex tensor, read
/// without a pass of its own that splits it.
pub enum Input<'a, T> {
    /// Real parts, imaginary parts.
    Split(&'a [T], &'a [T]),
    /// Interleaved pairs, and the imaginary parts' scale.
    Pairs(&'a [T], T),
}

/// Where a transform writes its output X: split parts, or interleaved pairs scaled
/// as they are written (real parts' scale, imaginary parts').
pub enum Output<'a, T> {
    /// Real parts, imaginary parts.
    Split(&'a mut [T], &'a mut [T]),
    /// Interleaved pairs, and the (real, imaginary) scales.
    Pairs(&'a mut [T], (T, T)),
}

/// The two ends of a four-step transform: its first pass loads x eight points at a
/// time, its second stores X so.
trait Ends<T, L> {
    /// Points `at..at + 8` of x.
    fn load(&self, at: usize) -> (L, L);
    /// Writes points `at..at + 8` of X.
    fn store(&mut self, at: usize, re: L, im: L);
}

/// One pair of split buffers, read by the first pass and overwritten by the second.
struct InPlace<'a, T>(&'a mut [T], &'a mut [T]);

impl<T: Copy, L: Vector<T>> Ends<T, L> for InPlace<'_, T> {
    #[inline(always)]
    fn load(&self, at: usize) -> (L, L) {
        (L::load(&self.0[at..]), L::load(&self.1[at..]))
    }
    #[inline(always)]
    fn store(&mut self, at: usize, re: L, im: L) {
        re.store(&mut self.0[at..]);
        im.store(&mut self.1[at..]);
    }
}

/// An input and another output.
struct Moved<'a, 'b, T>(Input<'a, T>, Output<'b, T>);

impl<T: Copy, L: Vector<T>> Ends<T, L> for Moved<'_, '_, T> {
    #[inline(always)]
    fn load(&self, at: usize) -> (L, L) {
        match &self.0 {
            Input::Split(re, im) => (L::load(&re[at..]), L::load(&im[at..])),
            Input::Pairs(x, im_scale) => {
                let (re, im) = L::load_pairs(&x[2 * at..]);
                (re, im.mul(L::splat(*im_scale)))
            }
        }
    }
    #[inline(always)]
    fn store(&mut self, at: usize, re: L, im: L) {
        match &mut self.1 {
            Output::Split(r, i) => {
                re.store(&mut r[at..]);
                im.store(&mut i[at..]);
            }
            Output::Pairs(y, (re_scale, im_scale)) => {
                let (re, im) = (re.mul(L::splat(*re_scale)), im.mul(L::splat(*im_scale)));
                L::store_pairs(re, im, &mut y[2 * at..]);
            }
        }
    }
}

/// `S` vectors (real parts, imaginary parts).
type Block<L, const S: usize> = ([L; S], [L; S]);

/// The (8·R)-point transforms of eight columns at once, R = 4 or 8: `load(j)`
/// gives point j of the eight columns (one per lane), `store(k, re, im)` takes point
/// k of their transforms. `s` is scratch for the 8 × R intermediate array; `w` the
/// table W_{8R}^m, m < 8R (real parts, imaginary parts).
#[inline(always)]
fn columns<T: Copy, L: Vector<T>, const R: usize, const S: usize>(
    load: impl Fn(usize) -> (L, L),
    w: (&[T], &[T]),
    s: &mut Block<L, S>,
    mut store: impl FnMut(usize, L, L),
) {
    let (wr, wi) = (&w.0[..8 * R], &w.1[..8 * R]);
    // 1/√2: W₈¹'s real part, W_{8R}^R's.
    let h = L::splat(wr[R]);
    // Point R·a + b: for each low digit b, the 8-point transform over a, turned by
    // W_{8R}^{b·k}, lands at s[R·k + b].
    for b in 0..R {
        // Plain loops, not `array::from_fn`: its closures were left out of line
        // (and the loads in them with them), which made the transform three
        // times slower.
        let (mut pr, mut pi) = ([L::zero(); 8], [L::zero(); 8]);
        for a in 0..8 {
            (pr[a], pi[a]) = load(R * a + b);
        }
        let (yr, yi) = dft8((pr, pi), h);
        for k in 0..8 {
            let (mut r, mut i) = (yr[k], yi[k]);
            if b > 0 && k > 0 {
                let (c, d) = (L::splat(wr[b * k]), L::splat(wi[b * k]));
                (r, i) = (r.mul(c).sub(i.mul(d)), r.mul(d).add(i.mul(c)));
            }
            s.0[R * k + b] = r;
            s.1[R * k + b] = i;
        }
    }
    // For each k, the R-point transform over b gives X_{k + 8·k₂}.
    for k in 0..8 {
        let (mut zr, mut zi) = ([L::zero(); 8], [L::zero(); 8]);
        for b in 0..R {
            (zr[b], zi[b]) = (s.0[R * k + b], s.1[R * k + b]);
        }
        if R == 8 {
            (zr, zi) = dft8((zr, zi), h);
        } else {
            let (r, i) = dft4([zr[0], zr[1], zr[2], zr[3]], [zi[0], zi[1], zi[2], zi[3]]);
            zr[..4].copy_from_slice(&r);
            zi[..4].copy_from_slice(&i);
        }
        for k2 in 0..R {
            store(k + 8 * k2, zr[k2], zi[k2]);
        }
    }
}

/// The four-step transform of (re, im) in place, through the scratch (sr, si):
/// N₁ = 8·R1 rows of N₂ = 8·R2. Its two blocks of vectors on the stack hold
/// S = 8·max(R1, R2) each, all that the passes use, so that a row of 1024 points
/// (which uses 32) does not zero two blocks of 64.
#[inline(always)]
fn four_step<T: Copy, L: Vector<T>, const R1: usize, const R2: usize, const S: usize>(
    plan: &FourStep<T>,
    x: &mut impl Ends<T, L>,
    sr: &mut [T],
    si: &mut [T],
    ahead: &Ahead,
) {
    const { assert!(S == 8 * if R1 > R2 { R1 } else { R2 }) };
    let (n1, n2) = (8 * R1, 8 * R2);
    let n = n1 * n2;
    let (sr, si) = (&mut sr[..n], &mut si[..n]);
    let mut s: Block<L, S> = ([L::zero(); S], [L::zero(); S]);
    let mut y: Block<L, S> = ([L::zero(); S], [L::zero(); S]);
    let (tr, ti) = (&plan.tw.0[..n], &plan.tw.1[..n]);
    let w1 = (&plan.w1.0[..], &plan.w1.1[..]);
    let w2 = (&plan.w2.0[..], &plan.w2.1[..]);
    // Pass 1: columns j₂ = 8c.. of x (rows j₁), turned by W_n^{j₂·k₁} into y[k₁],
    // then written transposed: row j₂, columns k₁ of the scratch.
    // One share of the next row's lines is asked for at each of the passes' R2 + R1
    // column steps.
    let steps = R1 + R2;
    for c in 0..R2 {
        ahead.part(c, steps);
        let x = &*x;
        let load = |j1: usize| x.load(n2 * j1 + 8 * c);
        columns::<T, L, R1, S>(load, w1, &mut s, |k1, r, i| {
            if k1 == 0 {
                (y.0[0], y.1[0]) = (r, i);
                return;
            }
            let at = n2 * k1 + 8 * c;
            let (wr, wi) = (L::load(&tr[at..]), L::load(&ti[at..]));
            y.0[k1] = r.mul(wr).sub(i.mul(wi));
            y.1[k1] = r.mul(wi).add(i.mul(wr));
        });
        for d in 0..R1 {
            let block = |v: &[L; S]| {
                let mut rows = [L::zero(); 8];
                rows.copy_from_slice(&v[8 * d..8 * d + 8]);
                L::transpose(rows)
            };
            let (t_re, t_im) = (block(&y.0), block(&y.1));
            for l in 0..8 {
                let at = n1 * (8 * c + l) + 8 * d;
                t_re[l].store(&mut sr[at..]);
                t_im[l].store(&mut si[at..]);
            }
        }
    }
    // Pass 2: columns k₁ = 8c.. of the scratch (rows j₂); point k₂ of their
    // transforms is X_{k₁ + N₁·k₂}, at N₁·k₂ + k₁.
    for c in 0..R1 {
        ahead.part(R2 + c, steps);
        let (s_re, s_im) = (&*sr, &*si);
        let load = |j2: usize| {
            let at = n1 * j2 + 8 * c;
            (L::load(&s_re[at..]), L::load(&s_im[at..]))
        };
        columns::<T, L, R2, S>(load, w2, &mut s, |k2, r, i| x.store(n1 * k2 + 8 * c, r, i));
    }
}

/// Runs the four-step transform of the plan's shape with vectors `L`.
#[inline(always)]
fn dispatch<T: Copy, L: Vector<T>>(
    plan: &FourStep<T>,
    x: &mut impl Ends<T, L>,
    sr: &mut [T],
    si: &mut [T],
    ahead: &Ahead,
) {
    match plan.n {
        1024 => four_step::<T, L, 4, 4, 32>(plan, x, sr, si, ahead),
        2048 => four_step::<T, L, 8, 4, 64>(plan, x, sr, si, ahead),
        _ => four_step::<T, L, 8, 8, 64>(plan, x, sr, si, ahead),
    }
}

/// A four-step forward transform on split data, its twiddles prepared once.
pub struct FourStep<T> {
    /// The length: one of [`LENGTHS`].
    n: usize,
    /// W_{N₁}^m, m < N₁ (real parts, imaginary parts).
    w1: (Vec<T>, Vec<T>),
    /// W_{N₂}^m, m < N₂.
    w2: (Vec<T>, Vec<T>),
    /// W_n^{j₂·k₁} at N₂·k₁ + j₂.
    tw: (Vec<T>, Vec<T>),
}

impl<T: Scalar + Float> FourStep<T> {
    /// The transform from the table of W_n^k = e^{−2πi k/n}, k < n (real parts,
    /// imaginary parts), as the plan computes it; `None` when n is not one of
    /// [`LENGTHS`] or a table does not hold n values.
    pub fn new(wr: &[T], wi: &[T]) -> Option<Self> {
        let n = wr.len();
        if !LENGTHS.contains(&n) || wi.len() != n {
            return None;
        }
        // N₁ rows of N₂: 64 × 64, 64 × 32, 32 × 32.
        let n1 = if n >= 2048 { 64 } else { 32 };
        let n2 = n / n1;
        let roots = |len: usize| -> (Vec<T>, Vec<T>) {
            (0..len)
                .map(|m| (wr[m * (n / len)], wi[m * (n / len)]))
                .unzip()
        };
        let outer = |w: &[T]| (0..n).map(|at| w[(at / n2) * (at % n2)]).collect();
        Some(FourStep {
            n,
            w1: roots(n1),
            w2: roots(n2),
            tw: (outer(wr), outer(wi)),
        })
    }

    /// The forward transform of (re, im) in place, with (sr, si) as scratch, asking
    /// for the lines of `ahead` (the next row of a batch) a share per column step.
    ///
    /// # Panics
    /// When a slice does not hold the transform's length.
    pub fn run(&self, re: &mut [T], im: &mut [T], sr: &mut [T], si: &mut [T], ahead: &Ahead) {
        let n = self.n;
        assert!(
            [re.len(), im.len(), sr.len(), si.len()] == [n; 4],
            "FourStep::run: {n} points"
        );
        #[cfg(target_arch = "x86_64")]
        if TypeId::of::<T>() == TypeId::of::<f32>() && super::has_avx2_fma() {
            let plan: *const FourStep<T> = self;
            let mut x = InPlace(as_f32_mut(re), as_f32_mut(im));
            let (sr, si) = (as_f32_mut(sr), as_f32_mut(si));
            // SAFETY: AVX2 is present (checked); T is f32, so the plan's tables are
            // f32 ones.
            unsafe { avx2(&*plan.cast(), &mut x, sr, si, ahead) };
            return;
        }
        dispatch::<T, [T; 8]>(self, &mut InPlace(re, im), sr, si, ahead);
    }

    /// The forward transform of `input` into `output`, with (sr, si) as scratch:
    /// the same operations as [`FourStep::run`] between a split of the input and a
    /// join of the output (`kernels::split_pairs`, `kernels::join_pairs`), so the
    /// same bits, without their passes. `ahead` as for `run`.
    ///
    /// # Panics
    /// When a buffer does not hold the transform's length (pairs: twice it).
    pub fn run_moved(
        &self,
        input: Input<'_, T>,
        output: Output<'_, T>,
        sr: &mut [T],
        si: &mut [T],
        ahead: &Ahead,
    ) {
        let n = self.n;
        let input_fits = match &input {
            Input::Split(re, im) => re.len() == n && im.len() == n,
            Input::Pairs(x, _) => x.len() == 2 * n,
        };
        let output_fits = match &output {
            Output::Split(re, im) => re.len() == n && im.len() == n,
            Output::Pairs(y, _) => y.len() == 2 * n,
        };
        assert!(
            input_fits && output_fits && sr.len() == n && si.len() == n,
            "FourStep::run_moved: {n} points"
        );
        #[cfg(target_arch = "x86_64")]
        if TypeId::of::<T>() == TypeId::of::<f32>() && super::has_avx2_fma() {
            use super::pairs::cast;
            let plan: *const FourStep<T> = self;
            let input = match input {
                Input::Split(re, im) => Input::Split(as_f32(re), as_f32(im)),
                Input::Pairs(x, s) => Input::Pairs(as_f32(x), cast(s)),
            };
            let output = match output {
                Output::Split(re, im) => Output::Split(as_f32_mut(re), as_f32_mut(im)),
                Output::Pairs(y, (a, b)) => Output::Pairs(as_f32_mut(y), (cast(a), cast(b))),
            };
            let (sr, si) = (as_f32_mut(sr), as_f32_mut(si));
            // SAFETY: as in `run`.
            unsafe { avx2(&*plan.cast(), &mut Moved(input, output), sr, si, ahead) };
            return;
        }
        dispatch::<T, [T; 8]>(self, &mut Moved(input, output), sr, si, ahead);
    }
}

/// `s` as the `f32` slice it is (`T` is `f32`: the callers test it).
#[cfg(target_arch = "x86_64")]
fn as_f32<T: 'static>(s: &[T]) -> &[f32] {
    assert_eq!(TypeId::of::<T>(), TypeId::of::<f32>());
    // SAFETY: T is f32 (asserted), so the slice is one of f32.
    unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<f32>(), s.len()) }
}

/// As [`as_f32`], mutable.
#[cfg(target_arch = "x86_64")]
fn as_f32_mut<T: 'static>(s: &mut [T]) -> &mut [f32] {
    assert_eq!(TypeId::of::<T>(), TypeId::of::<f32>());
    // SAFETY: as in `as_f32`.
    unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast::<f32>(), s.len()) }
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
    fn load_pairs(s: &[f32]) -> (Self, Self) {
        use std::arch::x86_64::*;
        let s = &s[..16];
        unsafe {
            let a = _mm256_loadu_ps(s.as_ptr());
            let b = _mm256_loadu_ps(s[8..].as_ptr());
            // [a0 a2 b0 b2 | a4 a6 b4 b6], then the middle quarters swapped.
            let order =
                |v: __m256| _mm256_castpd_ps(_mm256_permute4x64_pd::<0xD8>(_mm256_castps_pd(v)));
            (
                Self(order(_mm256_shuffle_ps::<0x88>(a, b))),
                Self(order(_mm256_shuffle_ps::<0xDD>(a, b))),
            )
        }
    }
    #[inline(always)]
    fn store_pairs(re: Self, im: Self, s: &mut [f32]) {
        use std::arch::x86_64::*;
        let s = &mut s[..16];
        unsafe {
            // [r0 i0 r1 i1 | r4 i4 r5 i5] and [r2 i2 r3 i3 | r6 i6 r7 i7].
            let lo = _mm256_unpacklo_ps(re.0, im.0);
            let hi = _mm256_unpackhi_ps(re.0, im.0);
            _mm256_storeu_ps(s.as_mut_ptr(), _mm256_permute2f128_ps::<0x20>(lo, hi));
            _mm256_storeu_ps(s[8..].as_mut_ptr(), _mm256_permute2f128_ps::<0x31>(lo, hi));
        }
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
    plan: &FourStep<f32>,
    x: &mut impl Ends<f32, super::fft64::avx2_lanes::V>,
    sr: &mut [f32],
    si: &mut [f32],
    ahead: &Ahead,
) {
    dispatch::<f32, super::fft64::avx2_lanes::V>(plan, x, sr, si, ahead);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table<T: Float>(n: usize) -> (Vec<T>, Vec<T>) {
        (0..n)
            .map(|k| {
                let a = -2.0 * std::f64::consts::PI * k as f64 / n as f64;
                (T::from(a.cos()).unwrap(), T::from(a.sin()).unwrap())
            })
            .unzip()
    }

    fn input(n: usize, seed: usize) -> Vec<f64> {
        (0..2 * n)
            .map(|j| (((j + seed) * 7919) % 1000) as f64 / 97.0 - 5.0)
            .collect()
    }

    /// Against the DFT summed in f64, for both element types and every length: to
    /// 1e-12 relative to the output's size in f64 (a dozen butterfly levels of
    /// rounding at 2⁻⁵³, and the twiddles'), 1e-5 in f32 (at 2⁻²⁴).
    #[test]
    fn matches_the_dft() {
        fn check<T: Scalar + Float>(n: usize, tol: f64) {
            let (wr, wi) = table::<T>(n);
            let f = FourStep::new(&wr, &wi).expect("a four-step length");
            let x = input(n, 3);
            let (mut re, mut im): (Vec<T>, Vec<T>) = (0..n)
                .map(|j| (T::from(x[j]).unwrap(), T::from(x[n + j]).unwrap()))
                .unzip();
            let xr: Vec<f64> = re.iter().map(|v| v.to_f64().unwrap()).collect();
            let xi: Vec<f64> = im.iter().map(|v| v.to_f64().unwrap()).collect();
            let (mut sr, mut si) = (vec![T::zero(); n], vec![T::zero(); n]);
            f.run(&mut re, &mut im, &mut sr, &mut si, &Ahead::NONE);
            let (cos, sin) = table::<f64>(n);
            let mut scale: f64 = 0.0;
            let mut err: f64 = 0.0;
            for k in 0..n {
                let (mut sr, mut si) = (0.0, 0.0);
                for j in 0..n {
                    let m = (j * k) % n;
                    sr += xr[j] * cos[m] - xi[j] * sin[m];
                    si += xr[j] * sin[m] + xi[j] * cos[m];
                }
                scale = scale.max(sr.abs()).max(si.abs());
                err = err
                    .max((re[k].to_f64().unwrap() - sr).abs())
                    .max((im[k].to_f64().unwrap() - si).abs());
            }
            assert!(err <= tol * scale, "n = {n}: error {err} against {scale}");
        }
        for n in LENGTHS {
            check::<f64>(n, 1e-12);
            check::<f32>(n, 1e-5);
        }
    }

    /// Every pairing of the moved ends gives the bits of the in-place transform
    /// between `split_pairs` and `join_pairs` (conjugating and scaling), on the
    /// AVX2 path and the portable one alike.
    #[test]
    fn moved_ends_give_the_split_and_joined_bits() {
        /// The first index at which two results differ in their bits, if any.
        fn differ<T: Float>(a: &[T], b: &[T]) -> Option<usize> {
            let bits = |v: Option<&T>| v.map(|x| x.to_f64().unwrap().to_bits());
            (0..a.len().max(b.len())).find(|&k| bits(a.get(k)) != bits(b.get(k)))
        }
        fn check<T: Scalar + Float + std::fmt::Debug>(n: usize, im_scale: T, scales: (T, T)) {
            let (wr, wi) = table::<T>(n);
            let f = FourStep::new(&wr, &wi).expect("a four-step length");
            let x: Vec<T> = input(n, 5).iter().map(|&v| T::from(v).unwrap()).collect();
            let zeros = |len: usize| vec![T::zero(); len];
            let (mut sr, mut si) = (zeros(n), zeros(n));
            let mut moved = |input: Input<'_, T>, output: Output<'_, T>| {
                f.run_moved(input, output, &mut sr, &mut si, &Ahead::NONE)
            };
            // The reference: split, transform in place, join.
            let (mut split_r, mut split_i) = (zeros(n), zeros(n));
            super::super::split_pairs(&x, &mut split_r, &mut split_i, im_scale);
            let (mut xr, mut xi) = (split_r.clone(), split_i.clone());
            let (mut tr, mut ti) = (zeros(n), zeros(n));
            f.run(&mut xr, &mut xi, &mut tr, &mut ti, &Ahead::NONE);
            let mut joined = zeros(2 * n);
            super::super::join_pairs(&xr, &xi, scales, &mut joined);
            let case = format!("n = {n}, im_scale {im_scale:?}, scales {scales:?}");
            // Pairs to pairs, to split parts; split parts to pairs, to split parts.
            let (mut y, mut yr, mut yi) = (zeros(2 * n), zeros(n), zeros(n));
            moved(Input::Pairs(&x, im_scale), Output::Pairs(&mut y, scales));
            assert_eq!(differ(&y, &joined), None, "pairs to pairs, {case}");
            moved(Input::Pairs(&x, im_scale), Output::Split(&mut yr, &mut yi));
            let split = (differ(&yr, &xr), differ(&yi, &xi));
            assert_eq!(split, (None, None), "pairs to split, {case}");
            let mut y = zeros(2 * n);
            moved(
                Input::Split(&split_r, &split_i),
                Output::Pairs(&mut y, scales),
            );
            assert_eq!(differ(&y, &joined), None, "split to pairs, {case}");
            let (mut yr, mut yi) = (zeros(n), zeros(n));
            moved(
                Input::Split(&split_r, &split_i),
                Output::Split(&mut yr, &mut yi),
            );
            let split = (differ(&yr, &xr), differ(&yi, &xi));
            assert_eq!(split, (None, None), "split to split, {case}");
            // The portable path, pairs to pairs.
            let mut p = zeros(2 * n);
            let mut ends = Moved(Input::Pairs(&x, im_scale), Output::Pairs(&mut p, scales));
            dispatch::<T, [T; 8]>(&f, &mut ends, &mut tr, &mut ti, &Ahead::NONE);
            assert_eq!(differ(&p, &joined), None, "portable pairs to pairs, {case}");
        }
        for n in LENGTHS {
            for (im_scale, scales) in [(1.0, (1.0, 1.0)), (-1.0, (0.25, -0.25)), (1.0, (3.0, -0.1))]
            {
                check::<f32>(n, im_scale as f32, (scales.0 as f32, scales.1 as f32));
                check::<f64>(n, im_scale, scales);
            }
        }
    }

    /// A buffer of another length is refused before anything is read or written.
    #[test]
    #[should_panic(expected = "FourStep::run_moved: 1024 points")]
    fn moved_ends_of_another_length_are_refused() {
        let (wr, wi) = table::<f32>(1024);
        let f = FourStep::new(&wr, &wi).expect("a four-step length");
        let (x, mut y) = (vec![0.0f32; 2 * 1024 - 2], vec![0.0f32; 2 * 1024]);
        let (mut sr, mut si) = (vec![0.0; 1024], vec![0.0; 1024]);
        let out = Output::Pairs(&mut y, (1.0, 1.0));
        f.run_moved(Input::Pairs(&x, 1.0), out, &mut sr, &mut si, &Ahead::NONE);
    }

    /// Other lengths have no four-step plan.
    #[test]
    fn other_lengths_have_none() {
        for n in [0, 64, 512, 1000, 8192] {
            let (wr, wi) = table::<f32>(n);
            assert!(FourStep::new(&wr, &wi).is_none(), "n = {n}");
        }
    }

    /// The AVX2 path of f32 gives the portable path's bits.
    #[test]
    fn avx2_gives_the_portable_bits() {
        for n in LENGTHS {
            let (wr, wi) = table::<f32>(n);
            let f = FourStep::new(&wr, &wi).expect("a four-step length");
            for seed in 0..3 {
                let x: Vec<f32> = input(n, seed).iter().map(|&v| v as f32).collect();
                let (mut re, mut im) = (x[..n].to_vec(), x[n..].to_vec());
                let (mut pr, mut pi) = (re.clone(), im.clone());
                let (mut sr, mut si) = (vec![0.0; n], vec![0.0; n]);
                // With a hint over some other buffer, which changes nothing.
                let next = vec![1.0f32; 2 * n];
                f.run(&mut re, &mut im, &mut sr, &mut si, &Ahead::new(&next, &x));
                let mut x = InPlace(&mut pr, &mut pi);
                dispatch::<f32, [f32; 8]>(&f, &mut x, &mut sr, &mut si, &Ahead::NONE);
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&re), bits(&pr), "real parts, n = {n}");
                assert_eq!(bits(&im), bits(&pi), "imaginary parts, n = {n}");
            }
        }
    }
}
