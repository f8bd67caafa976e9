//! The even/odd recombination of the real FFT: a real row of even length n is
//! transformed as the complex row z_j = x_{2j} + i x_{2j+1} of length h = n/2, and
//! bin k of the real row's transform combines Z_k with conj Z_{h−k} and the twiddle
//! W_n^k ([`rfft_recombine`]); the inverse undoes it before its complex transform
//! ([`irfft_precombine`]).
//!
//! The loops are plain Rust, compiled for AVX2 in functions of their own. Written
//! inside the FFT's per-row closure they were left to `simd_scope`, whose closure
//! LLVM did not inline into the AVX2 function (it was too large): they ran as 4-wide
//! SSE, and wrapped in a scope of their own, as scalar code. Each output is the same
//! sequence of unfused operations on every path, so all paths give the same bits.

use super::gemm::Scalar;
use num_traits::Float;

/// Bin k of the real row's transform, X_k = (E_k + W_n^k O_k)·s, from Z_k, Z_{h−k}
/// and W_n^k, with `s_half` = s/2 (the halving of E_k and O_k folded into the
/// scale: exact, a power of two). Bins 0 and h take Z_0 for both.
#[inline(always)]
pub fn real_bin<T: Float>(zk: (T, T), zj: (T, T), w: (T, T), s_half: T) -> (T, T) {
    let (er, ei) = (zk.0 + zj.0, zk.1 - zj.1);
    let (or, oi) = (zk.1 + zj.1, zj.0 - zk.0);
    (
        (er + or * w.0 - oi * w.1) * s_half,
        (ei + or * w.1 + oi * w.0) * s_half,
    )
}

/// The conjugate of Z_k = E_k + i O_k from the real row's bins X_k, X_{h−k} and
/// W_n^k, with `half` = 1/2 (the inverse transforms by conjugation).
#[inline(always)]
pub fn half_bin_conj<T: Float>(xk: (T, T), xj: (T, T), w: (T, T), half: T) -> (T, T) {
    let (er, ei) = ((xk.0 + xj.0) * half, (xk.1 - xj.1) * half);
    let (dr, di) = ((xk.0 - xj.0) * half, (xk.1 + xj.1) * half);
    let (or, oi) = (dr * w.0 + di * w.1, di * w.0 - dr * w.1);
    (er - oi, -(ei + or))
}

/// Bins k = 1..h of the real row's transform ([`real_bin`]) from the half-length
/// transform `(zr, zi)` (h values each), written as pairs into `out[2k], out[2k +
/// 1]`, with 2E_k = Z_k + conj Z_{h−k}, 2O_k = −i (Z_k − conj Z_{h−k}); `(wr, wi)`
/// holds W_n^k for k < h at least. Bins 0 and h are the caller's.
///
/// # Panics
/// When `zi` is shorter than `zr`, the twiddles hold fewer than h values or `out`
/// fewer than 2h.
pub fn rfft_recombine<T: Scalar + Float>(
    (zr, zi): (&[T], &[T]),
    (wr, wi): (&[T], &[T]),
    s_half: T,
    out: &mut [T],
) {
    let h = zr.len();
    assert!(
        zi.len() >= h && wr.len() >= h && wi.len() >= h && out.len() >= 2 * h,
        "rfft_recombine: {h} bins need {h} twiddles and {} outputs",
        2 * h
    );
    #[cfg(target_arch = "x86_64")]
    if super::has_avx2_fma() {
        // SAFETY: AVX2 is present (checked just above), all the function requires.
        unsafe { avx2_rfft_recombine((zr, zi), (wr, wi), s_half, out) };
        return;
    }
    plain_rfft_recombine((zr, zi), (wr, wi), s_half, out);
}

/// [`rfft_recombine`] compiled for AVX2.
///
/// # Safety
/// The CPU has AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn avx2_rfft_recombine<T: Scalar + Float>(
    z: (&[T], &[T]),
    w: (&[T], &[T]),
    s_half: T,
    out: &mut [T],
) {
    plain_rfft_recombine(z, w, s_half, out)
}

/// The loop of [`rfft_recombine`]: k = 1..h against j = h − k, one forward and one
/// reversed walk over Z, so that it vectorises.
#[inline(always)]
fn plain_rfft_recombine<T: Scalar + Float>(
    (zr, zi): (&[T], &[T]),
    (wr, wi): (&[T], &[T]),
    s_half: T,
    out: &mut [T],
) {
    let h = zr.len();
    if h < 2 {
        return;
    }
    let ks = zr[1..h].iter().zip(&zi[1..h]);
    let js = zr[1..h].iter().rev().zip(zi[1..h].iter().rev());
    let ws = wr[1..h].iter().zip(&wi[1..h]);
    let outs = out[2..2 * h].chunks_exact_mut(2);
    for ((((&kr, &ki), (&jr, &ji)), (&w0, &w1)), o) in ks.zip(js).zip(ws).zip(outs) {
        (o[0], o[1]) = real_bin((kr, ki), (jr, ji), (w0, w1), s_half);
    }
}

/// The conjugates of Z_k, k = 1..h ([`half_bin_conj`]), of the half-length complex
/// row whose transform gives the real row, from the real row's bins `x` (pairs,
/// bins 0..=h), into `ore[k], oim[k]`, with 2E_k = X_k + conj X_{h−k},
/// 2O_k = (X_k − conj X_{h−k}) W_n^{−k}; `(wr, wi)` holds W_n^k for k < h at least.
/// Bin 0 (which reads bins 0 and h as real) is the caller's.
///
/// # Panics
/// When `x` holds fewer than 2h values, the twiddles fewer than h or `oim` fewer
/// than `ore`'s h.
pub fn irfft_precombine<T: Scalar + Float>(
    x: &[T],
    (wr, wi): (&[T], &[T]),
    half: T,
    (ore, oim): (&mut [T], &mut [T]),
) {
    let h = ore.len();
    assert!(
        x.len() >= 2 * h && wr.len() >= h && wi.len() >= h && oim.len() >= h,
        "irfft_precombine: {h} outputs need {} bins' values and {h} twiddles",
        2 * h
    );
    #[cfg(target_arch = "x86_64")]
    if super::has_avx2_fma() {
        // SAFETY: AVX2 is present (checked just above), all the function requires.
        unsafe { avx2_irfft_precombine(x, (wr, wi), half, (ore, oim)) };
        return;
    }
    plain_irfft_precombine(x, (wr, wi), half, (ore, oim));
}

/// [`irfft_precombine`] compiled for AVX2.
///
/// # Safety
/// The CPU has AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn avx2_irfft_precombine<T: Scalar + Float>(
    x: &[T],
    w: (&[T], &[T]),
    half: T,
    o: (&mut [T], &mut [T]),
) {
    plain_irfft_precombine(x, w, half, o)
}

/// The loop of [`irfft_precombine`]: k = 1..h against j = h − k (which never
/// reaches 0 or h), one forward and one reversed walk over the pairs, read where
/// they lie.
#[inline(always)]
fn plain_irfft_precombine<T: Scalar + Float>(
    x: &[T],
    (wr, wi): (&[T], &[T]),
    half: T,
    (ore, oim): (&mut [T], &mut [T]),
) {
    let h = ore.len();
    if h < 2 {
        return;
    }
    let ks = x[2..2 * h].chunks_exact(2);
    let js = x[2..2 * h].chunks_exact(2).rev();
    let ws = wr[1..h].iter().zip(&wi[1..h]);
    let outs = ore[1..h].iter_mut().zip(oim[1..h].iter_mut());
    for (((k, j), (&w0, &w1)), (re, im)) in ks.zip(js).zip(ws).zip(outs) {
        (*re, *im) = half_bin_conj((k[0], k[1]), (j[0], j[1]), (w0, w1), half);
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    /// `len` values in [−1, 1) from a small linear congruential sequence.
    fn values<T: Float>(len: usize, seed: u64) -> Vec<T> {
        let mut s = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (0..len)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                T::from((s >> 11) as f64 / (1u64 << 52) as f64 - 1.0).unwrap()
            })
            .collect()
    }

    /// The AVX2 build of each loop against the same loop compiled for the baseline
    /// (this test function has no target features), bit for bit, at lengths with
    /// and without a vector remainder.
    fn same_bits<T: Scalar + Float + std::fmt::Debug>() {
        if !crate::kernels::has_avx2_fma() {
            return;
        }
        for h in [1usize, 2, 3, 8, 9, 17, 64, 100, 513] {
            let (zr, zi) = (values::<T>(h, 1), values::<T>(h, 2));
            let (wr, wi) = (values::<T>(h + 1, 3), values::<T>(h + 1, 4));
            let s = T::from(0.375).unwrap();
            let (mut plain, mut vector) = (vec![T::zero(); 2 * h], vec![T::zero(); 2 * h]);
            plain_rfft_recombine((&zr, &zi), (&wr, &wi), s, &mut plain);
            // SAFETY: AVX2 is present (checked above).
            unsafe { avx2_rfft_recombine((&zr, &zi), (&wr, &wi), s, &mut vector) };
            let bits = |v: &[T]| {
                v.iter()
                    .map(|x| x.to_f64().unwrap().to_bits())
                    .collect::<Vec<_>>()
            };
            assert_eq!(bits(&plain), bits(&vector), "rfft_recombine, h = {h}");

            let x = values::<T>(2 * h + 2, 5);
            let half = T::from(0.5).unwrap();
            let (mut pr, mut pi) = (vec![T::zero(); h], vec![T::zero(); h]);
            let (mut vr, mut vi) = (vec![T::zero(); h], vec![T::zero(); h]);
            plain_irfft_precombine(&x, (&wr, &wi), half, (&mut pr, &mut pi));
            // SAFETY: AVX2 is present (checked above).
            unsafe { avx2_irfft_precombine(&x, (&wr, &wi), half, (&mut vr, &mut vi)) };
            assert_eq!(bits(&pr), bits(&vr), "irfft_precombine (re), h = {h}");
            assert_eq!(bits(&pi), bits(&vi), "irfft_precombine (im), h = {h}");
        }
    }

    #[test]
    fn the_avx2_loops_give_the_baseline_bits() {
        same_bits::<f32>();
        same_bits::<f64>();
    }
}
