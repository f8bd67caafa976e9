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

/// Copies runs of `src` into the rows of `dst` (row stride `ld`): for row `i`, whose
/// source is `src[offsets[i]..]`, and each run `(t, len, base)`,
/// `dst[i·ld + t..][..len] = src[offsets[i] + base..][..len]` — the rows of a
/// convolution's patch panel (one per kernel tap) gathered from an image, in one
/// loop with no call and no bounds check per run (a call and two slice checks per
/// run of 32 elements cost as much as the copy).
///
/// # Panics
/// When a run leaves `src` or `dst`.
pub fn gather_runs<T: Scalar>(
    dst: &mut [T],
    ld: usize,
    src: &[T],
    offsets: &[usize],
    runs: &[(usize, usize, usize)],
) {
    let (Some(&last_offset), false) = (offsets.iter().max(), runs.is_empty()) else {
        return;
    };
    // The furthest element each side, in checked arithmetic: a wrapped sum would
    // pass the bounds check and let the unchecked copies out of the slices.
    let furthest = |end: fn(&(usize, usize, usize)) -> Option<usize>| {
        runs.iter()
            .try_fold(0usize, |m, r| end(r).map(|e| m.max(e)))
    };
    let src_end = furthest(|&(_, len, base)| base.checked_add(len));
    let dst_end = furthest(|&(t, len, _)| t.checked_add(len));
    let inside = match (src_end, dst_end) {
        (Some(src_end), Some(dst_end)) => {
            last_offset
                .checked_add(src_end)
                .is_some_and(|e| e <= src.len())
                && (dst_end <= ld || offsets.len() == 1)
                && (offsets.len() - 1)
                    .checked_mul(ld)
                    .and_then(|e| e.checked_add(dst_end))
                    .is_some_and(|e| e <= dst.len())
        }
        _ => false,
    };
    assert!(inside, "gather_runs: a run leaves its slice");
    #[cfg(target_arch = "x86_64")]
    if super::has_avx2_fma() {
        // SAFETY: AVX2 is present; every run lies inside `src` and `dst` (checked
        // above: the furthest source element is below last_offset + src_end, the
        // furthest destination one below (rows − 1)·ld + dst_end), and `dst` is a
        // `&mut` distinct from `src`.
        unsafe { avx2_gather_runs(dst.as_mut_ptr(), ld, src.as_ptr(), offsets, runs) };
        return;
    }
    for (i, &off) in offsets.iter().enumerate() {
        for &(t, len, base) in runs {
            dst[i * ld + t..i * ld + t + len].copy_from_slice(&src[off + base..off + base + len]);
        }
    }
}

/// Copies `rows` runs of `len` elements, run p from `src[offset + p·src_ld..]` to
/// `dst[p·dst_ld..]`: a GEMM panel packed from a row-major matrix (6 to 16 elements
/// a row), in one loop with no call per run: a call of [`copy_run`] per row costs
/// more than so short a copy.
///
/// # Panics
/// When a run leaves `src` or `dst`.
pub fn copy_rows<T: Scalar>(
    dst: &mut [T],
    dst_ld: usize,
    src: &[T],
    (offset, src_ld): (usize, usize),
    rows: usize,
    len: usize,
) {
    if rows == 0 || len == 0 {
        return;
    }
    // The end of the last run each side, in checked arithmetic (a wrapped sum would
    // pass the check and let the unchecked copies out of the slices).
    let end = |start: usize, ld: usize| {
        (rows - 1)
            .checked_mul(ld)
            .and_then(|e| e.checked_add(start))
            .and_then(|e| e.checked_add(len))
    };
    let inside = end(offset, src_ld).is_some_and(|e| e <= src.len())
        && end(0, dst_ld).is_some_and(|e| e <= dst.len());
    assert!(inside, "copy_rows: a run leaves its slice");
    #[cfg(target_arch = "x86_64")]
    if super::has_avx2_fma() {
        // SAFETY: AVX2 is present; every run lies inside `src` and `dst` (checked
        // above), and `dst` is a `&mut` distinct from `src`.
        unsafe {
            avx2_copy_rows(
                dst.as_mut_ptr(),
                dst_ld,
                src.as_ptr().add(offset),
                src_ld,
                rows,
                len,
            )
        };
        return;
    }
    for p in 0..rows {
        let s = offset + p * src_ld;
        copy_run(&mut dst[p * dst_ld..p * dst_ld + len], &src[s..s + len]);
    }
}

/// # Safety
/// AVX2 is available; the `rows` runs of `len` elements at row strides `dst_ld`
/// and `src_ld` lie inside both ranges (see [`copy_rows`]), which do not overlap.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn avx2_copy_rows<T>(
    dst: *mut T,
    dst_ld: usize,
    src: *const T,
    src_ld: usize,
    rows: usize,
    len: usize,
) {
    let bytes = len * std::mem::size_of::<T>();
    for p in 0..rows {
        // SAFETY: inside both ranges (the caller's contract).
        unsafe {
            avx2_copy(
                dst.add(p * dst_ld).cast(),
                src.add(p * src_ld).cast(),
                bytes,
            )
        };
    }
}

/// # Safety
/// AVX2 is available; every run of every row lies inside both ranges (see
/// [`gather_runs`]), which do not overlap.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn avx2_gather_runs<T>(
    dst: *mut T,
    ld: usize,
    src: *const T,
    offsets: &[usize],
    runs: &[(usize, usize, usize)],
) {
    let size = std::mem::size_of::<T>();
    for (i, &off) in offsets.iter().enumerate() {
        for &(t, len, base) in runs {
            // SAFETY: inside both ranges (the caller's contract).
            unsafe {
                avx2_copy(
                    dst.add(i * ld + t).cast(),
                    src.add(off + base).cast(),
                    len * size,
                )
            };
        }
    }
}

/// # Safety
/// AVX2 is available; `dst` and `src` address `bytes` bytes each (a multiple of
/// 4), not overlapping.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
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

    /// Rows gathered at scattered offsets, runs of every length class (0 to 40) at
    /// odd positions: each run lands where a plain loop puts it, and every element
    /// outside the runs keeps its value.
    #[test]
    fn gather_runs_copies_each_run_of_each_row_and_nothing_else() {
        fn check<T: Scalar + std::fmt::Debug + From<u16>>() {
            let src: Vec<T> = (0..400u16).map(T::from).collect();
            let offsets = [0usize, 37, 5, 211, 120];
            let runs = [
                (0usize, 7usize, 3usize),
                (7, 0, 50),
                (9, 33, 11),
                (45, 17, 90),
                (62, 1, 0),
            ];
            let ld = 70;
            let mut dst = vec![T::from(999); offsets.len() * ld];
            gather_runs(&mut dst, ld, &src, &offsets, &runs);
            let mut want = vec![T::from(999); offsets.len() * ld];
            for (i, &off) in offsets.iter().enumerate() {
                for &(t, len, base) in &runs {
                    for k in 0..len {
                        want[i * ld + t + k] = src[off + base + k];
                    }
                }
            }
            assert_eq!(dst, want);
        }
        check::<f32>();
        check::<f64>();
    }

    /// Rows of every length class (0 to 20 elements, the overlapping tails of each
    /// size) at strides wider than the runs: each run lands where a plain loop puts
    /// it, and the gaps between the destination's runs keep their values.
    #[test]
    fn copy_rows_copies_each_run_and_nothing_else() {
        fn check<T: Scalar + std::fmt::Debug + From<u16>>() {
            let src: Vec<T> = (0..600u16).map(T::from).collect();
            for len in 0..=20 {
                for (offset, src_ld, rows) in [(0usize, 21usize, 5usize), (7, 33, 9), (3, 20, 1)] {
                    let dst_ld = len + 3;
                    let mut dst = vec![T::from(999); rows * dst_ld];
                    copy_rows(&mut dst, dst_ld, &src, (offset, src_ld), rows, len);
                    let mut want = vec![T::from(999); rows * dst_ld];
                    for p in 0..rows {
                        for k in 0..len {
                            want[p * dst_ld + k] = src[offset + p * src_ld + k];
                        }
                    }
                    assert_eq!(dst, want, "len {len}, source stride {src_ld}");
                }
            }
        }
        check::<f32>();
        check::<f64>();
    }

    /// Runs that would leave the source or the destination, or whose ends wrap
    /// around, are refused before anything is copied.
    #[test]
    fn copy_rows_refuses_runs_outside_its_slices() {
        let src = [1.0f64; 40];
        let cases: [(usize, usize, usize, usize, usize); 4] = [
            // (destination stride, source offset, source stride, rows, length)
            (8, 0, 10, 4, 11),
            (8, 0, 13, 4, 8),
            (9, 0, 8, 4, 8),
            (8, usize::MAX, 1, 2, 2),
        ];
        for (dst_ld, offset, src_ld, rows, len) in cases {
            let mut dst = [0.0f64; 32];
            let refused = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                copy_rows(&mut dst, dst_ld, &src, (offset, src_ld), rows, len)
            }));
            assert!(refused.is_err(), "{dst_ld} {offset} {src_ld} {rows} {len}");
            assert!(dst.iter().all(|&v| v == 0.0));
        }
    }

    /// A run that would read past the source is refused before anything is copied.
    #[test]
    #[should_panic(expected = "gather_runs: a run leaves its slice")]
    fn gather_runs_refuses_a_run_past_the_source() {
        let src = [1.0f32; 40];
        let mut dst = [0.0f32; 64];
        gather_runs(&mut dst, 32, &src, &[0, 10], &[(0, 31, 0)]);
    }

    /// Offsets and runs whose sums wrap around are refused too (a wrapped sum would
    /// look small enough to pass).
    #[test]
    fn gather_runs_refuses_runs_whose_ends_overflow() {
        let src = [1.0f32; 40];
        // (the row's offset, then the run: first column, length, source base)
        let wrapping = [
            (0, (0, 2, usize::MAX)),
            (usize::MAX, (0, 2, 1)),
            (0, (usize::MAX, 2, 0)),
        ];
        for (offset, run) in wrapping {
            let mut dst = [0.0f32; 64];
            let refused = std::panic::catch_unwind(move || {
                gather_runs(&mut dst, 32, &src, &[offset], &[run]);
            });
            assert!(refused.is_err(), "{offset} {run:?}");
        }
    }
}
