//! Packing an operand whose depth index is the contiguous one (a transposed view,
//! or a convolution's patch matrix for its weight gradient): each source row `j` is
//! a run along the depth while the panel wants rows along the width, so the copy
//! transposes, in 8 × 8 register blocks on AVX2 (4 × 4 for `f64`).

use super::Scalar;
#[cfg(target_arch = "x86_64")]
use std::any::TypeId;

/// Packs the transpose of a block: `out[p·w + j] = data[start + j·ld + p]` for
/// `j < cols`, `p < kc` (the other columns of `out` are left as they are; `w` is
/// the row stride of `out`).
///
/// # Panics
/// When a source row `start + j·ld .. + kc` leaves `data`, or `out` is shorter
/// than `kc · w`.
pub fn pack_transposed<T: Scalar>(
    data: &[T],
    start: usize,
    ld: isize,
    cols: usize,
    kc: usize,
    out: &mut [T],
    w: usize,
) {
    let row = |j: usize| -> &[T] {
        let s = (start as isize + j as isize * ld) as usize;
        &data[s..s + kc]
    };
    pack_transposed_rows(row, cols, kc, out, w)
}

/// Packs the transpose of `cols` source rows of `kc` elements each, wherever they
/// lie: `out[p·w + j] = row(j)[p]` (as [`pack_transposed`], whose rows are evenly
/// spaced; a convolution's patch rows are the image at each tap's offset).
///
/// # Panics
/// When a row holds fewer than `kc` elements, or `out` is shorter than `kc · w`.
pub fn pack_transposed_rows<'a, T: Scalar>(
    row: impl Fn(usize) -> &'a [T],
    cols: usize,
    kc: usize,
    out: &mut [T],
    w: usize,
) {
    assert!(
        cols <= w && (kc == 0 || out.len() >= (kc - 1) * w + cols),
        "pack_transposed: panel too small"
    );
    let row = |j: usize| -> &[T] { &row(j)[..kc] };
    #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
    let mut j0 = 0;
    #[cfg(target_arch = "x86_64")]
    if super::super::has_avx2_fma() {
        j0 = simd_blocks(&row, cols, kc, out, w);
    }
    // What the blocks left: scalar, in tiles of 8 × 8 so that both sides stay in L1.
    for jb in (j0..cols).step_by(8) {
        let jn = 8.min(cols - jb);
        for pb in (0..kc).step_by(8) {
            let pn = 8.min(kc - pb);
            for j in jb..jb + jn {
                for (p, &v) in row(j)[pb..pb + pn].iter().enumerate() {
                    out[(pb + p) * w + j] = v;
                }
            }
        }
    }
}

/// Transposes whole blocks of 8 source rows (8 × 8 `f32` or 2 × (4 × 4) `f64`
/// register transposes) and the depth remainder of each; returns the first source
/// row not handled.
#[cfg(target_arch = "x86_64")]
fn simd_blocks<'a, T: Scalar>(
    row: &impl Fn(usize) -> &'a [T],
    cols: usize,
    kc: usize,
    out: &mut [T],
    w: usize,
) -> usize {
    let full = cols / 8 * 8;
    for jb in (0..full).step_by(8) {
        let rows: [&[T]; 8] = std::array::from_fn(|j| row(jb + j));
        let pfull = kc / 8 * 8;
        if TypeId::of::<T>() == TypeId::of::<f32>() {
            // SAFETY: AVX2 is present (checked by the caller); every row holds kc
            // elements and the loads stay below pfull ≤ kc; the stores go to rows
            // below pfull ≤ kc of `out`, columns jb..jb+8 ≤ cols, all inside the
            // (kc − 1)·w + cols elements `out` holds (checked on entry).
            unsafe {
                avx2_f32_blocks(
                    rows.map(|r| r.as_ptr().cast::<f32>()),
                    pfull,
                    out.as_mut_ptr().cast::<f32>(),
                    w,
                    jb,
                )
            };
        } else {
            // SAFETY: as above, for f64 (the only other Scalar).
            unsafe {
                avx2_f64_blocks(
                    rows.map(|r| r.as_ptr().cast::<f64>()),
                    pfull,
                    out.as_mut_ptr().cast::<f64>(),
                    w,
                    jb,
                )
            };
        }
        for (j, r) in rows.iter().enumerate() {
            for (p, &v) in r[pfull..].iter().enumerate() {
                out[(pfull + p) * w + jb + j] = v;
            }
        }
    }
    full
}

/// 8 × 8 blocks of `f32`: rows `src[0..8]`, depth `0..pfull` (a multiple of 8),
/// into `out[p·w + jb + j]`.
///
/// # Safety
/// AVX2 is available; each `src[j]` holds `pfull` elements; `out` holds
/// `pfull·w` elements and `jb + 8 ≤ w`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn avx2_f32_blocks(src: [*const f32; 8], pfull: usize, out: *mut f32, w: usize, jb: usize) {
    use std::arch::x86_64::*;
    for p in (0..pfull).step_by(8) {
        // SAFETY: p + 8 ≤ pfull, within each row.
        let r: [__m256; 8] = std::array::from_fn(|j| unsafe { _mm256_loadu_ps(src[j].add(p)) });
        // SAFETY: AVX2 is enabled here.
        let cols = unsafe { transpose8_f32(r) };
        for (q, v) in cols.into_iter().enumerate() {
            // SAFETY: row p + q < pfull of out, columns jb..jb + 8 ≤ cols.
            unsafe { _mm256_storeu_ps(out.add((p + q) * w + jb), v) };
        }
    }
}

/// The 8 × 8 transpose of eight `f32` vectors (lane b of vector a to lane a of
/// vector b).
///
/// # Safety
/// AVX2 is available.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn transpose8_f32(
    r: [std::arch::x86_64::__m256; 8],
) -> [std::arch::x86_64::__m256; 8] {
    use std::arch::x86_64::*;
    let t0 = _mm256_unpacklo_ps(r[0], r[1]);
    let t1 = _mm256_unpackhi_ps(r[0], r[1]);
    let t2 = _mm256_unpacklo_ps(r[2], r[3]);
    let t3 = _mm256_unpackhi_ps(r[2], r[3]);
    let t4 = _mm256_unpacklo_ps(r[4], r[5]);
    let t5 = _mm256_unpackhi_ps(r[4], r[5]);
    let t6 = _mm256_unpacklo_ps(r[6], r[7]);
    let t7 = _mm256_unpackhi_ps(r[6], r[7]);
    let u0 = _mm256_shuffle_ps::<0x44>(t0, t2);
    let u1 = _mm256_shuffle_ps::<0xEE>(t0, t2);
    let u2 = _mm256_shuffle_ps::<0x44>(t1, t3);
    let u3 = _mm256_shuffle_ps::<0xEE>(t1, t3);
    let u4 = _mm256_shuffle_ps::<0x44>(t4, t6);
    let u5 = _mm256_shuffle_ps::<0xEE>(t4, t6);
    let u6 = _mm256_shuffle_ps::<0x44>(t5, t7);
    let u7 = _mm256_shuffle_ps::<0xEE>(t5, t7);
    [
        _mm256_permute2f128_ps::<0x20>(u0, u4),
        _mm256_permute2f128_ps::<0x20>(u1, u5),
        _mm256_permute2f128_ps::<0x20>(u2, u6),
        _mm256_permute2f128_ps::<0x20>(u3, u7),
        _mm256_permute2f128_ps::<0x31>(u0, u4),
        _mm256_permute2f128_ps::<0x31>(u1, u5),
        _mm256_permute2f128_ps::<0x31>(u2, u6),
        _mm256_permute2f128_ps::<0x31>(u3, u7),
    ]
}

/// 8 rows × 4-deep blocks of `f64` (two 4 × 4 transposes each), as
/// [`avx2_f32_blocks`].
///
/// # Safety
/// As for [`avx2_f32_blocks`], with `pfull` a multiple of 8.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn avx2_f64_blocks(src: [*const f64; 8], pfull: usize, out: *mut f64, w: usize, jb: usize) {
    use std::arch::x86_64::*;
    for p in (0..pfull).step_by(4) {
        for half in 0..2 {
            let s = &src[half * 4..half * 4 + 4];
            // SAFETY: p + 4 ≤ pfull, within each row.
            let r: [__m256d; 4] = std::array::from_fn(|j| unsafe { _mm256_loadu_pd(s[j].add(p)) });
            let t0 = _mm256_unpacklo_pd(r[0], r[1]);
            let t1 = _mm256_unpackhi_pd(r[0], r[1]);
            let t2 = _mm256_unpacklo_pd(r[2], r[3]);
            let t3 = _mm256_unpackhi_pd(r[2], r[3]);
            let cols = [
                _mm256_permute2f128_pd::<0x20>(t0, t2),
                _mm256_permute2f128_pd::<0x20>(t1, t3),
                _mm256_permute2f128_pd::<0x31>(t0, t2),
                _mm256_permute2f128_pd::<0x31>(t1, t3),
            ];
            for (q, v) in cols.into_iter().enumerate() {
                // SAFETY: row p + q < pfull of out, columns jb + 4·half .. + 4 ≤ w.
                unsafe { _mm256_storeu_pd(out.add((p + q) * w + jb + half * 4), v) };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check<T: Scalar + std::fmt::Debug + From<u16>>() {
        for &(cols, kc, w, ld) in &[
            (8, 8, 8, 9),
            (13, 21, 16, 30),
            (3, 5, 4, 7),
            (16, 64, 32, 64),
            (9, 17, 9, -20),
        ] {
            let n = 40 * 64;
            let data: Vec<T> = (0..n).map(|i| T::from((i % 60000) as u16)).collect();
            let start = if ld < 0 { 1000 } else { 3 };
            let mut out = vec![T::ZERO; kc * w];
            pack_transposed(&data, start, ld, cols, kc, &mut out, w);
            for p in 0..kc {
                for j in 0..w {
                    let want = if j < cols {
                        data[(start as isize + j as isize * ld) as usize + p]
                    } else {
                        T::ZERO
                    };
                    assert_eq!(
                        out[p * w + j],
                        want,
                        "cols {cols} kc {kc} w {w} at ({p}, {j})"
                    );
                }
            }
        }
    }

    #[test]
    fn transposed_packing_matches_the_definition() {
        check::<f32>();
        check::<f64>();
    }
}
