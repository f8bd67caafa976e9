//! The radix-4 and radix-2 stages of the Stockham FFT (`fft::plan`) with AVX2, on
//! split data (real parts and imaginary parts in separate slices), 8 `f32` or 4
//! `f64` butterflies at a time.
//!
//! A stage of radix r over n points with stride `s` and `m = n / (r·s)` groups
//! takes butterfly `t = p·s + q` (group p, offset q) from the r quarters (halves)
//! of its input at `t + k·n/r`, and writes output `u` of it at `s·(r·p + u) + q`,
//! after multiplying by the group's twiddle `w_u[p]`. The lanes of a vector run
//! over consecutive t. When `s` is a multiple of the lane count a vector stays in
//! one group (its twiddles are broadcast) and its outputs are contiguous; the first
//! stage (s = 1) has one group per lane (twiddles loaded, outputs interleaved by a
//! register transpose); and for `f32`, the s = 4 stage has two groups per vector
//! (their outputs stored by halves).
//!
//! Each butterfly is the scalar path's (`fft::plan`'s `bfly4`) operation for
//! operation, unfused: the AVX2 and portable paths give the same bits.

use super::ahead::Ahead;
use super::gemm::Scalar;
#[cfg(target_arch = "x86_64")]
use std::any::TypeId;

/// One stage given to [`Stockham::new`]: its radix (2 or 4), stride `s` and twiddle
/// tables (radix 4: w₁ re, w₁ im, w₂ re, w₂ im, w₃ re, w₃ im; radix 2: w re, w im,
/// the rest empty).
// Its fields are read by the x86 SIMD stages only.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
#[derive(Clone, Copy)]
pub struct StageRef<'a, T> {
    /// 2 or 4.
    pub radix: usize,
    /// The stride of the stage's sub-transforms.
    pub s: usize,
    /// The twiddle tables.
    pub tw: [&'a [T]; 6],
}

/// Every stage of a power-of-two Stockham transform, checked once against this
/// CPU and the kernels' shapes and then run in one vectorised pass per transform,
/// ping-ponging between the data and a scratch pair — with no per-stage dispatch or
/// per-call checking, which for short transforms cost as much as the stages.
pub struct Stockham<T> {
    n: usize,
    /// (radix, s, twiddle tables), each stage's own copy.
    stages: Vec<(usize, usize, [Vec<T>; 6])>,
}

impl<T: Scalar> Stockham<T> {
    /// The vectorised form of these stages of an `n`-point transform, or `None`
    /// when the CPU (no AVX2, or the portable kernels forced) or some stage's shape
    /// has no vector path.
    pub fn new(n: usize, stages: &[StageRef<'_, T>]) -> Option<Self> {
        #[cfg(target_arch = "x86_64")]
        if super::has_avx2_fma() {
            let f32_ = TypeId::of::<T>() == TypeId::of::<f32>();
            let lanes = if f32_ { 8 } else { 4 };
            let supported = stages.iter().all(|st| {
                let m = st.tw[0].len();
                let tables = if st.radix == 4 { 6 } else { 2 };
                st.s > 0
                    && m.checked_mul(st.radix * st.s) == Some(n)
                    && st.tw[..tables].iter().all(|w| w.len() == m)
                    && match st.radix {
                        4 => {
                            (st.s == 1 && m % lanes == 0)
                                || st.s % lanes == 0
                                || (f32_ && st.s == 4 && m % 2 == 0)
                        }
                        2 => st.s % lanes == 0,
                        _ => false,
                    }
            });
            if !supported || stages.is_empty() {
                return None;
            }
            let stages = stages
                .iter()
                .map(|st| {
                    // The f32 s = 4 stage reads two groups' twiddles per vector as
                    // [w(g)×4, w(g+1)×4]: store each one four times over.
                    let copies = if f32_ && st.radix == 4 && st.s == 4 {
                        4
                    } else {
                        1
                    };
                    let tw = st.tw.map(|w| {
                        w.iter()
                            .flat_map(|&v| std::iter::repeat_n(v, copies))
                            .collect()
                    });
                    (st.radix, st.s, tw)
                })
                .collect();
            return Some(Stockham { n, stages });
        }
        let _ = (n, stages);
        None
    }

    /// The transform of (re, im), with (yr, yi) as the other buffer of the ping-pong:
    /// returns whether the result is in (yr, yi) (after an odd number of stages)
    /// rather than in (re, im). A share of the lines of `ahead` (the next row of a
    /// batch) is asked for before each stage.
    ///
    /// # Panics
    /// When a slice is not of the transform's length.
    pub fn run(
        &self,
        re: &mut [T],
        im: &mut [T],
        yr: &mut [T],
        yi: &mut [T],
        ahead: &Ahead,
    ) -> bool {
        let n = self.n;
        assert!(
            re.len() == n && im.len() == n && yr.len() == n && yi.len() == n,
            "Stockham::run: buffers of another length"
        );
        #[cfg(target_arch = "x86_64")]
        {
            let bufs = [
                re.as_mut_ptr(),
                im.as_mut_ptr(),
                yr.as_mut_ptr(),
                yi.as_mut_ptr(),
            ];
            let f32_ = TypeId::of::<T>() == TypeId::of::<f32>();
            // SAFETY: construction checked AVX2 and every stage's shape and twiddle
            // lengths against n; the four buffers hold n elements (checked above); T
            // is f32 or f64 as the type test says.
            unsafe { run(n, &self.stages, bufs, f32_, ahead) };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = ahead;
        self.stages.len() % 2 == 1
    }
}

/// The all-stage driver (see [`Stockham`]).
///
/// # Safety
/// AVX2 is available; the buffers hold n elements; every stage's shape and twiddle
/// lengths are supported (as [`Stockham::new`] checks); `f32_` says whether T is
/// f32 (else f64).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn run<T: Scalar>(
    n: usize,
    stages: &[(usize, usize, [Vec<T>; 6])],
    bufs: [*mut T; 4],
    f32_: bool,
    ahead: &Ahead,
) {
    let [re, im, yr, yi] = bufs;
    let mut from_x = true;
    for (stage, (radix, s, tw)) in stages.iter().enumerate() {
        ahead.part(stage, stages.len());
        let tw = tw.each_ref().map(|w| w.as_ptr());
        let (xr, xi, or, oi) = if from_x {
            (re, im, yr, yi)
        } else {
            (yr, yi, re, im)
        };
        let p = Ptrs {
            xr: xr.cast_const(),
            xi: xi.cast_const(),
            yr: or,
            yi: oi,
            tw,
        };
        // SAFETY: as the caller guarantees.
        unsafe {
            match (radix, f32_) {
                (4, true) => radix4_f32(n, *s, p.cast()),
                (4, false) => radix4_f64(n, *s, p.cast()),
                (_, true) => radix2_f32(
                    n,
                    *s,
                    [p.xr.cast(), p.xi.cast()],
                    [tw[0].cast(), tw[1].cast()],
                    [or.cast(), oi.cast()],
                ),
                (_, false) => radix2_f64(
                    n,
                    *s,
                    [p.xr.cast(), p.xi.cast()],
                    [tw[0].cast(), tw[1].cast()],
                    [or.cast(), oi.cast()],
                ),
            }
        }
        from_x = !from_x;
    }
}

/// The raw pointers of a radix-4 stage.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
struct Ptrs<U> {
    xr: *const U,
    xi: *const U,
    yr: *mut U,
    yi: *mut U,
    tw: [*const U; 6],
}

#[cfg(target_arch = "x86_64")]
impl<U> Ptrs<U> {
    fn cast<V>(self) -> Ptrs<V> {
        Ptrs {
            xr: self.xr.cast(),
            xi: self.xi.cast(),
            yr: self.yr.cast(),
            yi: self.yi.cast(),
            tw: self.tw.map(|p| p.cast()),
        }
    }
}

/// The radix-4 butterfly of vectors (a, b, c, d) with twiddles (w₁, w₂, w₃), in
/// the scalar path's order of operations; yields the four outputs (re, im). The
/// `plain` form, for a stage of one group, does not rotate (as the scalar path).
#[cfg(target_arch = "x86_64")]
macro_rules! bfly4 {
    ($add:ident, $sub:ident, $mul:ident, $a:expr, $b:expr, $c:expr, $d:expr, $w1:expr, $w2:expr, $w3:expr) => {{
        let (a, b, c, d) = ($a, $b, $c, $d);
        let apc = ($add(a.0, c.0), $add(a.1, c.1));
        let amc = ($sub(a.0, c.0), $sub(a.1, c.1));
        let bpd = ($add(b.0, d.0), $add(b.1, d.1));
        let jbmd = ($sub(d.1, b.1), $sub(b.0, d.0));
        let t1 = ($sub(amc.0, jbmd.0), $sub(amc.1, jbmd.1));
        let t2 = ($sub(apc.0, bpd.0), $sub(apc.1, bpd.1));
        let t3 = ($add(amc.0, jbmd.0), $add(amc.1, jbmd.1));
        let rot = |t: (_, _), w: (_, _)| {
            (
                $sub($mul(t.0, w.0), $mul(t.1, w.1)),
                $add($mul(t.0, w.1), $mul(t.1, w.0)),
            )
        };
        [
            ($add(apc.0, bpd.0), $add(apc.1, bpd.1)),
            rot(t1, $w1),
            rot(t2, $w2),
            rot(t3, $w3),
        ]
    }};
    // A stage of one group (twiddles all 1): no rotation.
    (plain $add:ident, $sub:ident, $a:expr, $b:expr, $c:expr, $d:expr) => {{
        let (a, b, c, d) = ($a, $b, $c, $d);
        let apc = ($add(a.0, c.0), $add(a.1, c.1));
        let amc = ($sub(a.0, c.0), $sub(a.1, c.1));
        let bpd = ($add(b.0, d.0), $add(b.1, d.1));
        let jbmd = ($sub(d.1, b.1), $sub(b.0, d.0));
        [
            ($add(apc.0, bpd.0), $add(apc.1, bpd.1)),
            ($sub(amc.0, jbmd.0), $sub(amc.1, jbmd.1)),
            ($sub(apc.0, bpd.0), $sub(apc.1, bpd.1)),
            ($add(amc.0, jbmd.0), $add(amc.1, jbmd.1)),
        ]
    }};
}

/// # Safety
/// AVX2 is available; the pointers address n elements (x, y) and n/(4s) (each
/// twiddle table; 4·n/(4s), each value four times, when `s = 4`); `s = 1` with n/4
/// a multiple of 8, `s = 4` with n/16 even, or `s` a multiple of 8.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn radix4_f32(n: usize, s: usize, p: Ptrs<f32>) {
    use std::arch::x86_64::*;
    let quarter = n / 4;
    // SAFETY (every access): butterfly t < n/4 reads t + k·n/4 < n; its outputs
    // lie below n; twiddle index g < n/(4s).
    unsafe {
        let load = |ptr: *const f32, at: usize| _mm256_loadu_ps(ptr.add(at));
        let input = |t: usize, k: usize| (load(p.xr, t + k * quarter), load(p.xi, t + k * quarter));
        let bfly = |t: usize, w1, w2, w3| {
            bfly4!(
                _mm256_add_ps,
                _mm256_sub_ps,
                _mm256_mul_ps,
                input(t, 0),
                input(t, 1),
                input(t, 2),
                input(t, 3),
                w1,
                w2,
                w3
            )
        };
        if s == 1 {
            // One group per lane: twiddles loaded; output u of butterfly t goes to
            // 4t + u, so the 4 × 8 outputs are transposed into 8 × 4.
            for t in (0..quarter).step_by(8) {
                let w = |u: usize| (load(p.tw[2 * u], t), load(p.tw[2 * u + 1], t));
                let o = bfly(t, w(0), w(1), w(2));
                for (part, dst) in [(0usize, p.yr), (1, p.yi)] {
                    let v = |u: usize| if part == 0 { o[u].0 } else { o[u].1 };
                    let (t0, t1) = (
                        _mm256_unpacklo_ps(v(0), v(1)),
                        _mm256_unpackhi_ps(v(0), v(1)),
                    );
                    let (t2, t3) = (
                        _mm256_unpacklo_ps(v(2), v(3)),
                        _mm256_unpackhi_ps(v(2), v(3)),
                    );
                    let r0 = _mm256_shuffle_ps::<0x44>(t0, t2);
                    let r1 = _mm256_shuffle_ps::<0xEE>(t0, t2);
                    let r2 = _mm256_shuffle_ps::<0x44>(t1, t3);
                    let r3 = _mm256_shuffle_ps::<0xEE>(t1, t3);
                    let out = dst.add(4 * t);
                    _mm256_storeu_ps(out, _mm256_permute2f128_ps::<0x20>(r0, r1));
                    _mm256_storeu_ps(out.add(8), _mm256_permute2f128_ps::<0x20>(r2, r3));
                    _mm256_storeu_ps(out.add(16), _mm256_permute2f128_ps::<0x31>(r0, r1));
                    _mm256_storeu_ps(out.add(24), _mm256_permute2f128_ps::<0x31>(r2, r3));
                }
            }
        } else if s == 4 {
            // Two groups per vector (lanes 0–3: group g, 4–7: g + 1), stored by halves.
            // The twiddle tables hold each value four times (see `Stockham::new`).
            for g in (0..quarter / 4).step_by(2) {
                let w = |u: usize| (load(p.tw[2 * u], 4 * g), load(p.tw[2 * u + 1], 4 * g));
                let o = bfly(4 * g, w(0), w(1), w(2));
                for (u, (re, im)) in o.into_iter().enumerate() {
                    for (v, dst) in [(re, p.yr), (im, p.yi)] {
                        _mm_storeu_ps(dst.add(16 * g + 4 * u), _mm256_castps256_ps128(v));
                        _mm_storeu_ps(dst.add(16 * (g + 1) + 4 * u), _mm256_extractf128_ps::<1>(v));
                    }
                }
            }
        } else {
            // A group spans whole vectors: its twiddles broadcast, outputs contiguous.
            let groups = quarter / s;
            for g in 0..groups {
                let w = |u: usize| {
                    (
                        _mm256_set1_ps(*p.tw[2 * u].add(g)),
                        _mm256_set1_ps(*p.tw[2 * u + 1].add(g)),
                    )
                };
                let (w1, w2, w3) = (w(0), w(1), w(2));
                for q in (0..s).step_by(8) {
                    let t = g * s + q;
                    let o = if groups == 1 {
                        bfly4!(plain _mm256_add_ps, _mm256_sub_ps, input(t, 0), input(t, 1), input(t, 2), input(t, 3))
                    } else {
                        bfly(t, w1, w2, w3)
                    };
                    for (u, (re, im)) in o.into_iter().enumerate() {
                        _mm256_storeu_ps(p.yr.add(s * (4 * g + u) + q), re);
                        _mm256_storeu_ps(p.yi.add(s * (4 * g + u) + q), im);
                    }
                }
            }
        }
    }
}

/// # Safety
/// As [`radix4_f32`], with 4 lanes: `s = 1` with n/4 a multiple of 4, or `s` a
/// multiple of 4.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn radix4_f64(n: usize, s: usize, p: Ptrs<f64>) {
    use std::arch::x86_64::*;
    let quarter = n / 4;
    // SAFETY (every access): as in `radix4_f32`.
    unsafe {
        let load = |ptr: *const f64, at: usize| _mm256_loadu_pd(ptr.add(at));
        let input = |t: usize, k: usize| (load(p.xr, t + k * quarter), load(p.xi, t + k * quarter));
        let bfly = |t: usize, w1, w2, w3| {
            bfly4!(
                _mm256_add_pd,
                _mm256_sub_pd,
                _mm256_mul_pd,
                input(t, 0),
                input(t, 1),
                input(t, 2),
                input(t, 3),
                w1,
                w2,
                w3
            )
        };
        if s == 1 {
            for t in (0..quarter).step_by(4) {
                let w = |u: usize| (load(p.tw[2 * u], t), load(p.tw[2 * u + 1], t));
                let o = bfly(t, w(0), w(1), w(2));
                for (part, dst) in [(0usize, p.yr), (1, p.yi)] {
                    let v = |u: usize| if part == 0 { o[u].0 } else { o[u].1 };
                    let (t0, t1) = (
                        _mm256_unpacklo_pd(v(0), v(1)),
                        _mm256_unpackhi_pd(v(0), v(1)),
                    );
                    let (t2, t3) = (
                        _mm256_unpacklo_pd(v(2), v(3)),
                        _mm256_unpackhi_pd(v(2), v(3)),
                    );
                    let out = dst.add(4 * t);
                    _mm256_storeu_pd(out, _mm256_permute2f128_pd::<0x20>(t0, t2));
                    _mm256_storeu_pd(out.add(4), _mm256_permute2f128_pd::<0x20>(t1, t3));
                    _mm256_storeu_pd(out.add(8), _mm256_permute2f128_pd::<0x31>(t0, t2));
                    _mm256_storeu_pd(out.add(12), _mm256_permute2f128_pd::<0x31>(t1, t3));
                }
            }
        } else {
            let groups = quarter / s;
            for g in 0..groups {
                let w = |u: usize| {
                    (
                        _mm256_set1_pd(*p.tw[2 * u].add(g)),
                        _mm256_set1_pd(*p.tw[2 * u + 1].add(g)),
                    )
                };
                let (w1, w2, w3) = (w(0), w(1), w(2));
                for q in (0..s).step_by(4) {
                    let t = g * s + q;
                    let o = if groups == 1 {
                        bfly4!(plain _mm256_add_pd, _mm256_sub_pd, input(t, 0), input(t, 1), input(t, 2), input(t, 3))
                    } else {
                        bfly(t, w1, w2, w3)
                    };
                    for (u, (re, im)) in o.into_iter().enumerate() {
                        _mm256_storeu_pd(p.yr.add(s * (4 * g + u) + q), re);
                        _mm256_storeu_pd(p.yi.add(s * (4 * g + u) + q), im);
                    }
                }
            }
        }
    }
}

/// Defines a radix-2 stage with `s` a multiple of the lanes.
macro_rules! radix2 {
    ($name:ident, $t:ty, $lanes:literal, $load:ident, $store:ident, $set:ident, $add:ident, $sub:ident, $mul:ident) => {
        /// # Safety
        /// AVX2 is available; x and y address n elements, the twiddles n/(2s); `s`
        /// is a multiple of the lanes.
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2")]
        unsafe fn $name(n: usize, s: usize, x: [*const $t; 2], w: [*const $t; 2], y: [*mut $t; 2]) {
            use std::arch::x86_64::*;
            let half = n / 2;
            // SAFETY (every access): t + half < n; outputs below n; group < n/(2s).
            unsafe {
                for g in 0..half / s {
                    let (wr, wi) = ($set(*w[0].add(g)), $set(*w[1].add(g)));
                    for q in (0..s).step_by($lanes) {
                        let t = g * s + q;
                        let (ar, ai) = ($load(x[0].add(t)), $load(x[1].add(t)));
                        let (br, bi) = ($load(x[0].add(t + half)), $load(x[1].add(t + half)));
                        let (o0, o1) = (s * 2 * g + q, s * (2 * g + 1) + q);
                        $store(y[0].add(o0), $add(ar, br));
                        $store(y[1].add(o0), $add(ai, bi));
                        let (dr, di) = ($sub(ar, br), $sub(ai, bi));
                        if half == s {
                            // One group: its twiddle is 1.
                            $store(y[0].add(o1), dr);
                            $store(y[1].add(o1), di);
                        } else {
                            $store(y[0].add(o1), $sub($mul(dr, wr), $mul(di, wi)));
                            $store(y[1].add(o1), $add($mul(dr, wi), $mul(di, wr)));
                        }
                    }
                }
            }
        }
    };
}

radix2!(
    radix2_f32,
    f32,
    8,
    _mm256_loadu_ps,
    _mm256_storeu_ps,
    _mm256_set1_ps,
    _mm256_add_ps,
    _mm256_sub_ps,
    _mm256_mul_ps
);
radix2!(
    radix2_f64,
    f64,
    4,
    _mm256_loadu_pd,
    _mm256_storeu_pd,
    _mm256_set1_pd,
    _mm256_add_pd,
    _mm256_sub_pd,
    _mm256_mul_pd
);
