//! The row step of the symmetric eigensolver's tridiagonalisation: one row of the
//! trailing block takes its rank-2 update and, in the same pass, gives its share of
//! the next matrix-vector product (`xⱼ −= a·uⱼ + b·yⱼ`, then `Σ xⱼ·zⱼ` and
//! `qⱼ += c·xⱼ`). Written out with AVX-512 or AVX2 vectors, because the solver's
//! own code, outside any target-feature scope, compiled to scalar SSE2 (a quarter
//! of an eigendecomposition's time). Every path multiplies and adds unfused, in the
//! same order, and sums the dot product in the same eight lanes (element j of the
//! whole blocks of eight in lane j mod 8, the tail after them in order), so all
//! three give the same bits.

/// `xⱼ −= a·uⱼ + b·yⱼ`, then `qⱼ += c·xⱼ`, for every j < `x.len()`; returns
/// `Σ xⱼ·zⱼ` over the updated x.
///
/// # Panics
/// When `u`, `y`, `z` or `q` is shorter than `x`.
pub fn rank2_row_update(
    x: &mut [f64],
    (a, u): (f64, &[f64]),
    (b, y): (f64, &[f64]),
    z: &[f64],
    (c, q): (f64, &mut [f64]),
) -> f64 {
    let len = x.len();
    let (u, y, z, q) = (&u[..len], &y[..len], &z[..len], &mut q[..len]);
    let full = len / 8 * 8;
    let mut acc = [0.0; 8];
    #[cfg(target_arch = "x86_64")]
    if super::has_avx512() {
        // SAFETY: AVX-512F is present; every slice holds `len` ≥ `full` elements.
        acc = unsafe { avx512_blocks(full, x, (a, u), (b, y), z, (c, q)) };
    } else if super::has_avx2_fma() {
        // SAFETY: AVX2 is present; as above.
        acc = unsafe { avx2_blocks(full, x, (a, u), (b, y), z, (c, q)) };
    } else {
        portable_blocks(full, &mut acc, x, (a, u), (b, y), z, (c, q));
    }
    #[cfg(not(target_arch = "x86_64"))]
    portable_blocks(full, &mut acc, x, (a, u), (b, y), z, (c, q));
    let mut rest = 0.0;
    for j in full..len {
        x[j] -= a * u[j] + b * y[j];
        rest += x[j] * z[j];
        q[j] += c * x[j];
    }
    ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + rest
}

/// The whole blocks of eight, element by element.
#[allow(clippy::too_many_arguments)]
fn portable_blocks(
    full: usize,
    acc: &mut [f64; 8],
    x: &mut [f64],
    (a, u): (f64, &[f64]),
    (b, y): (f64, &[f64]),
    z: &[f64],
    (c, q): (f64, &mut [f64]),
) {
    for j in 0..full {
        x[j] -= a * u[j] + b * y[j];
        acc[j % 8] += x[j] * z[j];
        q[j] += c * x[j];
    }
}

/// # Safety
/// AVX-512F is available; every slice holds at least `full` elements.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn avx512_blocks(
    full: usize,
    x: &mut [f64],
    (a, u): (f64, &[f64]),
    (b, y): (f64, &[f64]),
    z: &[f64],
    (c, q): (f64, &mut [f64]),
) -> [f64; 8] {
    use std::arch::x86_64::*;
    let (va, vb, vc) = (_mm512_set1_pd(a), _mm512_set1_pd(b), _mm512_set1_pd(c));
    let mut acc = _mm512_setzero_pd();
    let (xp, qp) = (x.as_mut_ptr(), q.as_mut_ptr());
    for j in (0..full).step_by(8) {
        // SAFETY: j + 8 ≤ full, within every slice.
        unsafe {
            let update = _mm512_add_pd(
                _mm512_mul_pd(va, _mm512_loadu_pd(u.as_ptr().add(j))),
                _mm512_mul_pd(vb, _mm512_loadu_pd(y.as_ptr().add(j))),
            );
            let xv = _mm512_sub_pd(_mm512_loadu_pd(xp.add(j)), update);
            _mm512_storeu_pd(xp.add(j), xv);
            acc = _mm512_add_pd(acc, _mm512_mul_pd(xv, _mm512_loadu_pd(z.as_ptr().add(j))));
            let qv = _mm512_add_pd(_mm512_loadu_pd(qp.add(j)), _mm512_mul_pd(vc, xv));
            _mm512_storeu_pd(qp.add(j), qv);
        }
    }
    let mut out = [0.0; 8];
    // SAFETY: `out` holds eight f64.
    unsafe { _mm512_storeu_pd(out.as_mut_ptr(), acc) };
    out
}

/// # Safety
/// AVX2 is available; every slice holds at least `full` elements.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn avx2_blocks(
    full: usize,
    x: &mut [f64],
    (a, u): (f64, &[f64]),
    (b, y): (f64, &[f64]),
    z: &[f64],
    (c, q): (f64, &mut [f64]),
) -> [f64; 8] {
    use std::arch::x86_64::*;
    let (va, vb, vc) = (_mm256_set1_pd(a), _mm256_set1_pd(b), _mm256_set1_pd(c));
    // Lanes 0–3 and 4–7 of the eight.
    let mut acc = [_mm256_setzero_pd(); 2];
    let (xp, qp) = (x.as_mut_ptr(), q.as_mut_ptr());
    for j in (0..full).step_by(4) {
        let half = j / 4 % 2;
        // SAFETY: j + 4 ≤ full, within every slice.
        unsafe {
            let update = _mm256_add_pd(
                _mm256_mul_pd(va, _mm256_loadu_pd(u.as_ptr().add(j))),
                _mm256_mul_pd(vb, _mm256_loadu_pd(y.as_ptr().add(j))),
            );
            let xv = _mm256_sub_pd(_mm256_loadu_pd(xp.add(j)), update);
            _mm256_storeu_pd(xp.add(j), xv);
            acc[half] = _mm256_add_pd(
                acc[half],
                _mm256_mul_pd(xv, _mm256_loadu_pd(z.as_ptr().add(j))),
            );
            let qv = _mm256_add_pd(_mm256_loadu_pd(qp.add(j)), _mm256_mul_pd(vc, xv));
            _mm256_storeu_pd(qp.add(j), qv);
        }
    }
    let mut out = [0.0; 8];
    // SAFETY: `out` holds eight f64.
    unsafe {
        _mm256_storeu_pd(out.as_mut_ptr(), acc[0]);
        _mm256_storeu_pd(out.as_mut_ptr().add(4), acc[1]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every length from 0 to 40 (whole blocks of eight and tails): the vector
    /// paths give the bits of a plain loop with the dot product summed in eight
    /// lanes, and that loop agrees with the plain sum to rounding.
    #[test]
    fn vector_paths_give_the_plain_loops_bits() {
        let mut rng = crate::Rng::new(11);
        let mut draw = |n: usize| -> Vec<f64> { (0..n).map(|_| rng.uniform() - 0.5).collect() };
        for len in 0..41 {
            let (x0, u, y, z, q0) = (draw(len), draw(len), draw(len), draw(len), draw(len));
            let (a, b, c) = (0.7, -1.3, 0.25);
            let (mut x, mut q) = (x0.clone(), q0.clone());
            let got = rank2_row_update(&mut x, (a, &u), (b, &y), &z, (c, &mut q));
            let (mut xw, mut qw) = (x0.clone(), q0.clone());
            let mut lanes = [0.0; 8];
            let mut rest = 0.0;
            let full = len / 8 * 8;
            for j in 0..len {
                xw[j] -= a * u[j] + b * y[j];
                if j < full {
                    lanes[j % 8] += xw[j] * z[j];
                } else {
                    rest += xw[j] * z[j];
                }
                qw[j] += c * xw[j];
            }
            let want = ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5]))
                + ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]))
                + rest;
            assert_eq!(got.to_bits(), want.to_bits(), "dot at length {len}");
            assert!(x.iter().zip(&xw).all(|(p, w)| p.to_bits() == w.to_bits()));
            assert!(q.iter().zip(&qw).all(|(p, w)| p.to_bits() == w.to_bits()));
            let plain: f64 = xw.iter().zip(&z).map(|(p, w)| p * w).sum();
            assert!((got - plain).abs() <= 1e-14 * (1.0 + plain.abs()));
            // Each instruction set's blocks on their own (the dispatcher above runs
            // only the preferred one), against the portable blocks.
            let mut portable = (x0.clone(), q0.clone(), [0.0; 8]);
            portable_blocks(
                full,
                &mut portable.2,
                &mut portable.0,
                (a, &u),
                (b, &y),
                &z,
                (c, &mut portable.1),
            );
            #[cfg(target_arch = "x86_64")]
            for (name, present) in [
                ("avx512", super::super::has_avx512()),
                ("avx2", super::super::has_avx2_fma()),
            ] {
                if !present {
                    continue;
                }
                let (mut xs, mut qs) = (x0.clone(), q0.clone());
                // SAFETY: the instruction set is present (checked); every slice
                // holds len ≥ full elements.
                let lanes = unsafe {
                    if name == "avx512" {
                        avx512_blocks(full, &mut xs, (a, &u), (b, &y), &z, (c, &mut qs))
                    } else {
                        avx2_blocks(full, &mut xs, (a, &u), (b, &y), &z, (c, &mut qs))
                    }
                };
                let same =
                    |p: &[f64], w: &[f64]| p.iter().zip(w).all(|(p, w)| p.to_bits() == w.to_bits());
                assert!(
                    same(&lanes, &portable.2)
                        && same(&xs[..full], &portable.0[..full])
                        && same(&qs[..full], &portable.1[..full]),
                    "{name} at length {len}"
                );
            }
        }
    }
}
