//! Splitting interleaved (re, im) pairs into two arrays and joining them back,
//! scaled: the FFT works on split arrays, tensors hold complex numbers as pairs, so
//! every transformed row crosses both ways (except through the four-step lengths,
//! whose passes read and write pairs themselves: `four_step::Input`, `Output`,
//! with the same operations as here). They are AVX2 shuffles: as plain loops the
//! two passes were slow beside the transform itself. Each value is moved,
//! or multiplied once by its scale, on every path, so all paths give the same bits.

use super::gemm::Scalar;
#[cfg(target_arch = "x86_64")]
use std::any::TypeId;

/// `re[k] = src[2k]`, `im[k] = src[2k + 1]·im_scale` for `k < re.len()` (an
/// `im_scale` of −1 conjugates, exactly).
///
/// # Panics
/// When `im` and `re` differ in length or `src` holds fewer than `2·re.len()`.
pub fn split_pairs<T: Scalar>(src: &[T], re: &mut [T], im: &mut [T], im_scale: T) {
    let n = re.len();
    assert!(
        im.len() == n && src.len() >= 2 * n,
        "split_pairs: {} values for {n} and {} pairs",
        src.len(),
        im.len()
    );
    #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
    let mut done = 0;
    #[cfg(target_arch = "x86_64")]
    if super::has_avx2_fma() {
        let (s, r, i) = (src.as_ptr(), re.as_mut_ptr(), im.as_mut_ptr());
        // SAFETY: AVX2 is present; src holds 2n values, re and im n each (checked
        // above); T is f32 or f64 as the type test says.
        done = unsafe {
            if TypeId::of::<T>() == TypeId::of::<f32>() {
                avx2_split_f32(s.cast(), r.cast(), i.cast(), n, cast(im_scale))
            } else {
                avx2_split_f64(s.cast(), r.cast(), i.cast(), n, cast(im_scale))
            }
        };
    }
    for k in done..n {
        re[k] = src[2 * k];
        im[k] = src[2 * k + 1] * im_scale;
    }
}

/// `dst[2k] = re[k]·re_scale`, `dst[2k + 1] = im[k]·im_scale` for `k < re.len()`.
///
/// # Panics
/// When `im` and `re` differ in length or `dst` holds fewer than `2·re.len()`.
pub fn join_pairs<T: Scalar>(re: &[T], im: &[T], (re_scale, im_scale): (T, T), dst: &mut [T]) {
    let n = re.len();
    assert!(
        im.len() == n && dst.len() >= 2 * n,
        "join_pairs: {} and {} values into {}",
        n,
        im.len(),
        dst.len()
    );
    #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
    let mut done = 0;
    #[cfg(target_arch = "x86_64")]
    if super::has_avx2_fma() {
        let (r, i, d) = (re.as_ptr(), im.as_ptr(), dst.as_mut_ptr());
        // SAFETY: AVX2 is present; re and im hold n values, dst 2n (checked above);
        // T is f32 or f64 as the type test says.
        done = unsafe {
            if TypeId::of::<T>() == TypeId::of::<f32>() {
                let s = (cast(re_scale), cast(im_scale));
                avx2_join_f32(r.cast(), i.cast(), d.cast(), n, s)
            } else {
                let s = (cast(re_scale), cast(im_scale));
                avx2_join_f64(r.cast(), i.cast(), d.cast(), n, s)
            }
        };
    }
    for k in done..n {
        dst[2 * k] = re[k] * re_scale;
        dst[2 * k + 1] = im[k] * im_scale;
    }
}

/// A scale as the element type the caller's type test selected (`T` is that type).
#[cfg(target_arch = "x86_64")]
pub(super) fn cast<T: Scalar, U: Copy + 'static>(v: T) -> U {
    *(&v as &dyn std::any::Any)
        .downcast_ref::<U>()
        .expect("the type test selected U = T")
}

/// Splits whole blocks of 8 pairs; returns how many pairs it split.
///
/// # Safety
/// AVX2 is available; `src` addresses 2n values, `re` and `im` n each.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn avx2_split_f32(src: *const f32, re: *mut f32, im: *mut f32, n: usize, si: f32) -> usize {
    use std::arch::x86_64::*;
    let scale = _mm256_set1_ps(si);
    let mut k = 0;
    while k + 8 <= n {
        // SAFETY: pairs k..k + 8 lie within the n of every buffer.
        unsafe {
            let a = _mm256_loadu_ps(src.add(2 * k));
            let b = _mm256_loadu_ps(src.add(2 * k + 8));
            // [a0 a2 b0 b2 | a4 a6 b4 b6], then the middle quarters swapped.
            let even = _mm256_shuffle_ps::<0x88>(a, b);
            let odd = _mm256_shuffle_ps::<0xDD>(a, b);
            let order =
                |v: __m256| _mm256_castpd_ps(_mm256_permute4x64_pd::<0xD8>(_mm256_castps_pd(v)));
            _mm256_storeu_ps(re.add(k), order(even));
            _mm256_storeu_ps(im.add(k), _mm256_mul_ps(order(odd), scale));
        }
        k += 8;
    }
    k
}

/// As [`avx2_split_f32`], by blocks of 4 pairs of `f64`.
///
/// # Safety
/// As [`avx2_split_f32`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn avx2_split_f64(src: *const f64, re: *mut f64, im: *mut f64, n: usize, si: f64) -> usize {
    use std::arch::x86_64::*;
    let scale = _mm256_set1_pd(si);
    let mut k = 0;
    while k + 4 <= n {
        // SAFETY: pairs k..k + 4 lie within the n of every buffer.
        unsafe {
            let a = _mm256_loadu_pd(src.add(2 * k));
            let b = _mm256_loadu_pd(src.add(2 * k + 4));
            // [r0 r2 | r1 r3] and [i0 i2 | i1 i3], then the middle halves swapped.
            let even = _mm256_permute4x64_pd::<0xD8>(_mm256_unpacklo_pd(a, b));
            let odd = _mm256_permute4x64_pd::<0xD8>(_mm256_unpackhi_pd(a, b));
            _mm256_storeu_pd(re.add(k), even);
            _mm256_storeu_pd(im.add(k), _mm256_mul_pd(odd, scale));
        }
        k += 4;
    }
    k
}

/// Joins whole blocks of 8 pairs; returns how many pairs it joined.
///
/// # Safety
/// AVX2 is available; `re` and `im` address n values, `dst` 2n.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn avx2_join_f32(
    re: *const f32,
    im: *const f32,
    dst: *mut f32,
    n: usize,
    s: (f32, f32),
) -> usize {
    use std::arch::x86_64::*;
    let (sr, si) = (_mm256_set1_ps(s.0), _mm256_set1_ps(s.1));
    let mut k = 0;
    while k + 8 <= n {
        // SAFETY: pairs k..k + 8 lie within the n of every buffer.
        unsafe {
            let r = _mm256_mul_ps(_mm256_loadu_ps(re.add(k)), sr);
            let i = _mm256_mul_ps(_mm256_loadu_ps(im.add(k)), si);
            // [r0 i0 r1 i1 | r4 i4 r5 i5] and [r2 i2 r3 i3 | r6 i6 r7 i7].
            let lo = _mm256_unpacklo_ps(r, i);
            let hi = _mm256_unpackhi_ps(r, i);
            _mm256_storeu_ps(dst.add(2 * k), _mm256_permute2f128_ps::<0x20>(lo, hi));
            _mm256_storeu_ps(dst.add(2 * k + 8), _mm256_permute2f128_ps::<0x31>(lo, hi));
        }
        k += 8;
    }
    k
}

/// As [`avx2_join_f32`], by blocks of 4 pairs of `f64`.
///
/// # Safety
/// As [`avx2_join_f32`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn avx2_join_f64(
    re: *const f64,
    im: *const f64,
    dst: *mut f64,
    n: usize,
    s: (f64, f64),
) -> usize {
    use std::arch::x86_64::*;
    let (sr, si) = (_mm256_set1_pd(s.0), _mm256_set1_pd(s.1));
    let mut k = 0;
    while k + 4 <= n {
        // SAFETY: pairs k..k + 4 lie within the n of every buffer.
        unsafe {
            let r = _mm256_mul_pd(_mm256_loadu_pd(re.add(k)), sr);
            let i = _mm256_mul_pd(_mm256_loadu_pd(im.add(k)), si);
            // [r0 i0 | r2 i2] and [r1 i1 | r3 i3].
            let lo = _mm256_unpacklo_pd(r, i);
            let hi = _mm256_unpackhi_pd(r, i);
            _mm256_storeu_pd(dst.add(2 * k), _mm256_permute2f128_pd::<0x20>(lo, hi));
            _mm256_storeu_pd(dst.add(2 * k + 4), _mm256_permute2f128_pd::<0x31>(lo, hi));
        }
        k += 4;
    }
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every path against the definition, at lengths around the vector blocks, for
    /// both types; bit for bit (each value is moved or multiplied once).
    fn round_trip<T: Scalar + From<f32>>() {
        for n in [0usize, 1, 3, 4, 7, 8, 9, 16, 17, 31, 64, 67] {
            let src: Vec<T> = (0..2 * n).map(|v| T::from(v as f32 * 0.37 - 5.0)).collect();
            let (mut re, mut im) = (vec![T::ZERO; n], vec![T::ZERO; n]);
            let minus = T::from(-1.0);
            split_pairs(&src, &mut re, &mut im, minus);
            for k in 0..n {
                assert!(
                    re[k] == src[2 * k] && im[k] == src[2 * k + 1] * minus,
                    "split at {k} of {n}"
                );
            }
            let mut dst = vec![T::ZERO; 2 * n];
            let s = (T::from(0.5), T::from(-3.0));
            join_pairs(&re, &im, s, &mut dst);
            for k in 0..n {
                assert!(
                    dst[2 * k] == re[k] * s.0 && dst[2 * k + 1] == im[k] * s.1,
                    "join at {k} of {n}"
                );
            }
        }
    }

    #[test]
    fn split_and_join_follow_their_definitions() {
        round_trip::<f32>();
        round_trip::<f64>();
    }
}
