//! AVX2/FMA kernels for f32 transcendentals (Cephes-style range reduction and
//! polynomials). Tails shorter than a vector go through a zero-padded buffer, so an
//! element's result never depends on its position in the slice.

// The polynomial coefficients are the published Cephes single-precision values.
#![allow(clippy::excessive_precision)]

use std::arch::x86_64::*;

const LANES: usize = 8;

/// Applies the vector expression `$body` (of the lane vector `$v`) to `$x` in blocks
/// of 8, writing `$out`. A macro rather than a closure, so that the body is compiled
/// with the enclosing function's target features.
macro_rules! apply {
    ($x:expr, $out:expr, |$v:ident| $body:expr) => {{
        let (x, out): (&[f32], &mut [f32]) = ($x, $out);
        let n = x.len().min(out.len());
        let full = n / LANES * LANES;
        let mut i = 0;
        while i < full {
            // SAFETY: i + 8 <= full <= n, so the 8 lanes read and written are in bounds.
            let $v = unsafe { _mm256_loadu_ps(x.as_ptr().add(i)) };
            let r = $body;
            unsafe { _mm256_storeu_ps(out.as_mut_ptr().add(i), r) };
            i += LANES;
        }
        if full < n {
            let mut buf = [0.0f32; LANES];
            buf[..n - full].copy_from_slice(&x[full..n]);
            // SAFETY: `buf` holds exactly 8 lanes.
            let $v = unsafe { _mm256_loadu_ps(buf.as_ptr()) };
            let r = $body;
            unsafe { _mm256_storeu_ps(buf.as_mut_ptr(), r) };
            out[full..n].copy_from_slice(&buf[..n - full]);
        }
    }};
}

#[inline]
#[target_feature(enable = "avx2,fma")]
fn splat(v: f32) -> __m256 {
    _mm256_set1_ps(v)
}

/// 2^n for integer-valued `n` in [-150, 128], as the product of two normal powers so
/// that results in the subnormal or overflow range come out right.
#[inline]
#[target_feature(enable = "avx2,fma")]
fn pow2(n: __m256) -> __m256 {
    let ni = _mm256_cvtps_epi32(n);
    let n1 = _mm256_srai_epi32::<1>(ni);
    let n2 = _mm256_sub_epi32(ni, n1);
    let bias = _mm256_set1_epi32(127);
    let p1 = _mm256_castsi256_ps(_mm256_slli_epi32::<23>(_mm256_add_epi32(n1, bias)));
    let p2 = _mm256_castsi256_ps(_mm256_slli_epi32::<23>(_mm256_add_epi32(n2, bias)));
    _mm256_mul_ps(p1, p2)
}

/// exp(x) for 8 lanes; NaN in, NaN out.
#[inline]
#[target_feature(enable = "avx2,fma")]
fn exp8(x: __m256) -> __m256 {
    let nan = _mm256_cmp_ps::<_CMP_UNORD_Q>(x, x);
    let xc = _mm256_min_ps(_mm256_max_ps(x, splat(-104.0)), splat(89.0));
    let fx = _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(_mm256_mul_ps(
        xc,
        splat(std::f32::consts::LOG2_E),
    ));
    let r = _mm256_fnmadd_ps(fx, splat(0.693_359_4), xc);
    let r = _mm256_fnmadd_ps(fx, splat(-2.121_944_4e-4), r);
    let mut y = splat(1.987_569_1e-4);
    y = _mm256_fmadd_ps(y, r, splat(1.398_199_9e-3));
    y = _mm256_fmadd_ps(y, r, splat(8.333_452e-3));
    y = _mm256_fmadd_ps(y, r, splat(4.166_579_6e-2));
    y = _mm256_fmadd_ps(y, r, splat(1.666_666_5e-1));
    y = _mm256_fmadd_ps(y, r, splat(5.000_000_1e-1));
    let r2 = _mm256_mul_ps(r, r);
    y = _mm256_fmadd_ps(y, r2, r);
    y = _mm256_add_ps(y, splat(1.0));
    let res = _mm256_mul_ps(y, pow2(fx));
    _mm256_blendv_ps(res, x, nan)
}

/// ln(v) for finite v in [1, 2] (the only range softplus needs).
#[inline]
#[target_feature(enable = "avx2,fma")]
fn ln_1_to_2(v: __m256) -> __m256 {
    let bits = _mm256_castps_si256(v);
    let e = _mm256_sub_epi32(_mm256_srli_epi32::<23>(bits), _mm256_set1_epi32(126));
    let mant = _mm256_or_si256(
        _mm256_and_si256(bits, _mm256_set1_epi32(0x807f_ffff_u32 as i32)),
        _mm256_set1_epi32(0x3f00_0000),
    );
    let mut m = _mm256_castsi256_ps(mant);
    let mut fe = _mm256_cvtepi32_ps(e);
    let small = _mm256_cmp_ps::<_CMP_LT_OQ>(m, splat(std::f32::consts::FRAC_1_SQRT_2));
    fe = _mm256_sub_ps(fe, _mm256_and_ps(splat(1.0), small));
    m = _mm256_add_ps(_mm256_sub_ps(m, splat(1.0)), _mm256_and_ps(m, small));
    let z = _mm256_mul_ps(m, m);
    let mut y = splat(7.037_683_6e-2);
    for c in [
        -1.151_461e-1,
        1.167_699_9e-1,
        -1.242_014_1e-1,
        1.424_932_3e-1,
        -1.666_805_8e-1,
        2.000_071_5e-1,
        -2.499_999_4e-1,
        3.333_333e-1,
    ] {
        y = _mm256_fmadd_ps(y, m, splat(c));
    }
    y = _mm256_mul_ps(_mm256_mul_ps(y, m), z);
    y = _mm256_fmadd_ps(fe, splat(-2.121_944_4e-4), y);
    y = _mm256_fnmadd_ps(z, splat(0.5), y);
    let r = _mm256_add_ps(m, y);
    _mm256_fmadd_ps(fe, splat(0.693_359_4), r)
}

#[inline]
#[target_feature(enable = "avx2,fma")]
fn abs8(x: __m256) -> __m256 {
    _mm256_andnot_ps(splat(-0.0), x)
}

#[target_feature(enable = "avx2,fma")]
pub fn exp(x: &[f32], out: &mut [f32]) {
    apply!(x, out, |v| exp8(v))
}

#[target_feature(enable = "avx2,fma")]
pub fn sigmoid(x: &[f32], out: &mut [f32]) {
    apply!(x, out, |v| {
        let e = exp8(_mm256_sub_ps(splat(0.0), v));
        _mm256_div_ps(splat(1.0), _mm256_add_ps(splat(1.0), e))
    })
}

#[target_feature(enable = "avx2,fma")]
pub fn softplus(x: &[f32], out: &mut [f32]) {
    apply!(x, out, |v| {
        let u = exp8(_mm256_sub_ps(splat(0.0), abs8(v)));
        let w = _mm256_add_ps(splat(1.0), u);
        let d = _mm256_sub_ps(w, splat(1.0));
        // ln(1 + u) = ln(w) · u / (w − 1), exact when w rounds to 1 (then it is u).
        let l = _mm256_mul_ps(ln_1_to_2(w), _mm256_div_ps(u, d));
        let tiny = _mm256_cmp_ps::<_CMP_EQ_OQ>(d, splat(0.0));
        let l = _mm256_blendv_ps(l, u, tiny);
        _mm256_add_ps(_mm256_max_ps(v, splat(0.0)), l)
    })
}

#[target_feature(enable = "avx2,fma")]
pub fn tanh(x: &[f32], out: &mut [f32]) {
    apply!(x, out, |v| {
        let a = abs8(v);
        // Large |x|: 1 − 2 / (exp(2|x|) + 1), with the sign of x.
        let e = exp8(_mm256_add_ps(a, a));
        let big = _mm256_sub_ps(
            splat(1.0),
            _mm256_div_ps(splat(2.0), _mm256_add_ps(e, splat(1.0))),
        );
        let sign = _mm256_and_ps(v, splat(-0.0));
        let big = _mm256_or_ps(big, sign);
        // Small |x|: odd polynomial.
        let z = _mm256_mul_ps(v, v);
        let mut p = splat(-5.704_988_7e-3);
        for c in [
            2.063_908_9e-2,
            -5.373_971_6e-2,
            1.333_144_2e-1,
            -3.333_328_2e-1,
        ] {
            p = _mm256_fmadd_ps(p, z, splat(c));
        }
        let small = _mm256_fmadd_ps(_mm256_mul_ps(p, z), v, v);
        let is_small = _mm256_cmp_ps::<_CMP_LT_OQ>(a, splat(0.625));
        _mm256_blendv_ps(big, small, is_small)
    })
}

/// The pieces of erfc(y), y = −x/√2, by the Chebyshev fit of `special::erfc_fast`
/// (relative error 1.2e-7): t = 1/(1 + |y|/2), the fit's exponent p (erfc(|y|) =
/// t·e^{p − y²}), |y|, and the mask of the lanes where y < 0 (erfc(y) = 2 − erfc(|y|)).
#[inline]
#[target_feature(enable = "avx2,fma")]
fn erfc_neg_scaled_parts(x: __m256) -> (__m256, __m256, __m256, __m256) {
    let y = _mm256_mul_ps(x, splat(-std::f32::consts::FRAC_1_SQRT_2));
    let z = abs8(y);
    let t = _mm256_div_ps(splat(1.0), _mm256_fmadd_ps(z, splat(0.5), splat(1.0)));
    let mut p = splat(0.170_872_77);
    for c in [
        -0.822_152_23,
        1.488_515_87,
        -1.135_203_98,
        0.278_868_07,
        -0.186_288_06,
        0.096_784_18,
        0.374_091_96,
        1.000_023_68,
        -1.265_512_23,
    ] {
        p = _mm256_fmadd_ps(p, t, splat(c));
    }
    let negative = _mm256_cmp_ps::<_CMP_LT_OQ>(y, splat(0.0));
    (t, p, z, negative)
}

/// erfc(−x/√2) from erfc(|y|) = t·e^{p − z²} (however that was computed).
#[inline]
#[target_feature(enable = "avx2,fma")]
fn erfc_from(r: __m256, negative: __m256) -> __m256 {
    _mm256_blendv_ps(r, _mm256_sub_ps(splat(2.0), r), negative)
}

#[target_feature(enable = "avx2,fma")]
pub fn gelu(x: &[f32], out: &mut [f32]) {
    apply!(x, out, |v| {
        // One exponential, e^{p − z²}, as the fit is written.
        let (t, p, z, negative) = erfc_neg_scaled_parts(v);
        let erfc = erfc_from(_mm256_mul_ps(t, exp8(_mm256_fnmadd_ps(z, z, p))), negative);
        _mm256_mul_ps(_mm256_mul_ps(splat(0.5), v), erfc)
    })
}

#[target_feature(enable = "avx2,fma")]
pub fn gelu_grad(x: &[f32], out: &mut [f32]) {
    // 1/√(2π)
    const INV_SQRT_2PI: f32 = 0.398_942_3;
    apply!(x, out, |v| {
        // e^{−z²} = e^{−x²/2} is the density's factor too: two exponentials.
        let (t, p, z, negative) = erfc_neg_scaled_parts(v);
        let gauss = exp8(_mm256_mul_ps(_mm256_mul_ps(z, z), splat(-1.0)));
        let erfc = erfc_from(_mm256_mul_ps(_mm256_mul_ps(t, gauss), exp8(p)), negative);
        let pdf = _mm256_mul_ps(gauss, splat(INV_SQRT_2PI));
        _mm256_fmadd_ps(v, pdf, _mm256_mul_ps(splat(0.5), erfc))
    })
}

/// Calls `f` inside a function compiled with AVX2 and FMA enabled.
#[target_feature(enable = "avx2,fma")]
pub fn scope<R>(f: impl FnOnce() -> R) -> R {
    f()
}
