//! Copies and zero-fills of short runs (a row of a patch panel: tens of elements),
//! inline with 32-byte AVX2 moves: through the C library, a call per run cost more
//! than the run itself (the compiler turns plain copy loops back into such calls).

use super::gemm::Scalar;

/// `dst = src[..dst.len()]`.
///
/// # Panics
/// When `src` is shorter than `dst`.
#[inline]
pub fn copy_run<T: Scalar>(dst: &mut [T], src: &[T]) {
    let src = &src[..dst.len()];
    #[cfg(target_arch = "x86_64")]
    if super::has_avx2_fma() {
        let bytes = std::mem::size_of_val(dst);
        // SAFETY: AVX2 is present; both ranges hold `bytes` bytes (equal lengths,
        // checked by the slicing above) and do not overlap (`&mut` and `&`).
        unsafe {
            avx2_copy(
                dst.as_mut_ptr().cast::<u8>(),
                src.as_ptr().cast::<u8>(),
                bytes,
            )
        };
        return;
    }
    dst.copy_from_slice(src);
}

/// `dst = 0`.
#[inline]
pub fn zero_run<T: Scalar>(dst: &mut [T]) {
    #[cfg(target_arch = "x86_64")]
    if super::has_avx2_fma() {
        let bytes = std::mem::size_of_val(dst);
        // SAFETY: AVX2 is present; `dst` holds `bytes` bytes, and all-zero bytes
        // are the value 0.0 of f32 and f64 (the only Scalars).
        unsafe { avx2_zero(dst.as_mut_ptr().cast::<u8>(), bytes) };
        return;
    }
    dst.fill(T::ZERO);
}

/// # Safety
/// AVX2 is available; `dst` and `src` address `bytes` bytes each (a multiple of
/// 4), not overlapping.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn avx2_copy(dst: *mut u8, src: *const u8, bytes: usize) {
    use std::arch::x86_64::*;
    // Whole 32-byte blocks, then one last block ending at the end (overlapping the
    // previous one: it writes the same values again); shorter runs by 16, 8 and 4.
    // SAFETY (every move): it lies within the first `bytes` bytes of both ranges.
    unsafe {
        if bytes >= 32 {
            let mut i = 0;
            while i + 32 < bytes {
                _mm256_storeu_si256(dst.add(i).cast(), _mm256_loadu_si256(src.add(i).cast()));
                i += 32;
            }
            let last = bytes - 32;
            _mm256_storeu_si256(
                dst.add(last).cast(),
                _mm256_loadu_si256(src.add(last).cast()),
            );
        } else if bytes >= 16 {
            let last = bytes - 16;
            let (a, b) = (
                _mm_loadu_si128(src.cast()),
                _mm_loadu_si128(src.add(last).cast()),
            );
            _mm_storeu_si128(dst.cast(), a);
            _mm_storeu_si128(dst.add(last).cast(), b);
        } else if bytes >= 8 {
            let last = bytes - 8;
            let (a, b) = (
                src.cast::<u64>().read_unaligned(),
                src.add(last).cast::<u64>().read_unaligned(),
            );
            dst.cast::<u64>().write_unaligned(a);
            dst.add(last).cast::<u64>().write_unaligned(b);
        } else if bytes >= 4 {
            let last = bytes - 4;
            let (a, b) = (
                src.cast::<u32>().read_unaligned(),
                src.add(last).cast::<u32>().read_unaligned(),
            );
            dst.cast::<u32>().write_unaligned(a);
            dst.add(last).cast::<u32>().write_unaligned(b);
        }
    }
}

/// # Safety
/// AVX2 is available; `dst` addresses `bytes` bytes (a multiple of 4).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn avx2_zero(dst: *mut u8, bytes: usize) {
    use std::arch::x86_64::*;
    // As `avx2_copy`, with zeros. SAFETY (every store): within the `bytes` bytes.
    unsafe {
        if bytes >= 32 {
            let mut i = 0;
            while i + 32 < bytes {
                _mm256_storeu_si256(dst.add(i).cast(), _mm256_setzero_si256());
                i += 32;
            }
            _mm256_storeu_si256(dst.add(bytes - 32).cast(), _mm256_setzero_si256());
        } else if bytes >= 16 {
            _mm_storeu_si128(dst.cast(), _mm_setzero_si128());
            _mm_storeu_si128(dst.add(bytes - 16).cast(), _mm_setzero_si128());
        } else if bytes >= 8 {
            dst.cast::<u64>().write_unaligned(0);
            dst.add(bytes - 8).cast::<u64>().write_unaligned(0);
        } else if bytes >= 4 {
            dst.cast::<u32>().write_unaligned(0);
            dst.add(bytes - 4).cast::<u32>().write_unaligned(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every length up to 70 (the overlapping tails of each size class), at every
    /// alignment of the source: exactly the run is written, the neighbours are not.
    #[test]
    fn runs_copy_and_zero_exactly_their_elements() {
        fn check<T: Scalar + std::fmt::Debug + From<u8>>() {
            let src: Vec<T> = (0..90u8).map(T::from).collect();
            for len in 0..70 {
                for shift in 0..4 {
                    let mut dst = [T::from(255); 80];
                    copy_run(&mut dst[3..3 + len], &src[shift..]);
                    assert_eq!(&dst[3..3 + len], &src[shift..shift + len], "copy {len}");
                    assert!(dst[..3]
                        .iter()
                        .chain(&dst[3 + len..])
                        .all(|&v| v == T::from(255)));
                    zero_run(&mut dst[3..3 + len]);
                    assert!(dst[3..3 + len].iter().all(|&v| v == T::ZERO), "zero {len}");
                    assert!(dst[..3]
                        .iter()
                        .chain(&dst[3 + len..])
                        .all(|&v| v == T::from(255)));
                }
            }
        }
        check::<f32>();
        check::<f64>();
    }
}
