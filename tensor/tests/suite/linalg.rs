//! Linear algebra: reconstructions, residuals and orthogonality over random (and
//! ill-conditioned) matrices, in f64; errors for bad input.

use crate::common;

use common::config;
use proptest::prelude::*;
use tensor::linalg::Triangular;
use tensor::{Error, Rng, Tensor};

fn max_abs(t: &Tensor<f64>) -> f64 {
    t.abs().max_all().unwrap_or(0.0)
}

/// A random SPD matrix M Mᵀ/n + δI.
fn spd(n: usize, delta: f64, rng: &mut Rng) -> Tensor<f64> {
    let m = Tensor::<f64>::rand_normal(&[n, n], 0.0, 1.0, rng).unwrap();
    m.matmul(&m.t().unwrap())
        .unwrap()
        .div_scalar(n as f64)
        .add(&Tensor::eye(n).unwrap().mul_scalar(delta))
        .unwrap()
}

/// Q diag(λ) Qᵀ with λ log-spaced from 1 to `cond` and Q random orthogonal.
fn conditioned(n: usize, cond: f64, rng: &mut Rng) -> Tensor<f64> {
    let (q, _) = Tensor::<f64>::rand_normal(&[n, n], 0.0, 1.0, rng)
        .unwrap()
        .qr()
        .unwrap();
    let lam: Vec<f64> = (0..n)
        .map(|i| cond.powf(i as f64 / (n - 1).max(1) as f64))
        .collect();
    let d = Tensor::from_vec(lam, &[1, n]).unwrap();
    q.mul(&d).unwrap().matmul(&q.t().unwrap()).unwrap()
}

fn tril(t: &Tensor<f64>) -> Tensor<f64> {
    let n = t.shape()[t.ndim() - 1];
    let mask: Vec<f64> = (0..n * n)
        .map(|k| if k % n <= k / n { 1.0 } else { 0.0 })
        .collect();
    t.mul(&Tensor::from_vec(mask, &[n, n]).unwrap()).unwrap()
}

proptest! {
    #![proptest_config(config(32))]

    #[test]
    fn cholesky_reconstructs_and_is_lower(n in 1usize..40, seed in any::<u64>()) {
        let a = spd(n, 0.5, &mut Rng::new(seed));
        let l = a.cholesky().unwrap();
        prop_assert_eq!(max_abs(&l.sub(&tril(&l)).unwrap()), 0.0);
        let rec = l.matmul(&l.t().unwrap()).unwrap();
        prop_assert!(max_abs(&rec.sub(&a).unwrap()) <= 1e-13 * max_abs(&a));
    }

    #[test]
    fn triangular_solves_satisfy_their_systems(
        n in 1usize..30, m in 1usize..9, lower in any::<bool>(), left in any::<bool>(),
        transpose in any::<bool>(), unit in any::<bool>(), seed in any::<u64>(),
    ) {
        let mut rng = Rng::new(seed);
        // Diagonally dominant, so that the system is well conditioned.
        let raw = Tensor::<f64>::rand_uniform(&[n, n], -1.0, 1.0, &mut rng).unwrap()
            .add(&Tensor::eye(n).unwrap().mul_scalar(n as f64 + 2.0)).unwrap();
        let a = if lower { tril(&raw) } else { tril(&raw.t().unwrap()).t().unwrap() };
        let b_shape = if left { [n, m] } else { [m, n] };
        let b = Tensor::<f64>::rand_normal(&b_shape, 0.0, 1.0, &mut rng).unwrap();
        let kind = Triangular { lower, left, transpose, unit_diagonal: unit };
        let x = a.solve_triangular(&b, kind).unwrap();
        // The operator actually solved: the triangle, with ones on the diagonal if unit.
        let mut op = a.clone();
        if unit {
            let keep = Tensor::<f64>::eye(n).unwrap().neg().add_scalar(1.0);
            op = op.mul(&keep).unwrap().add(&Tensor::eye(n).unwrap()).unwrap();
        }
        if transpose { op = op.t().unwrap(); }
        let back = if left { op.matmul(&x).unwrap() } else { x.matmul(&op).unwrap() };
        prop_assert!(max_abs(&back.sub(&b).unwrap()) <= 1e-12 * (1.0 + max_abs(&b)));
    }

    #[test]
    fn eigh_reconstructs_with_orthonormal_vectors(n in 1usize..24, seed in any::<u64>()) {
        let mut rng = Rng::new(seed);
        let m = Tensor::<f64>::rand_normal(&[n, n], 0.0, 1.0, &mut rng).unwrap();
        let a = m.add(&m.t().unwrap()).unwrap();
        let (lam, v) = a.eigh().unwrap();
        let l = lam.to_vec();
        prop_assert!(l.windows(2).all(|w| w[0] <= w[1]));
        let rec = v.mul(&lam.unsqueeze(0).unwrap()).unwrap().matmul(&v.t().unwrap()).unwrap();
        prop_assert!(max_abs(&rec.sub(&a).unwrap()) <= 1e-12 * (1.0 + max_abs(&a)));
        let vtv = v.t().unwrap().matmul(&v).unwrap();
        prop_assert!(max_abs(&vtv.sub(&Tensor::eye(n).unwrap()).unwrap()) <= 1e-12);
    }

    #[test]
    fn qr_reconstructs_with_orthonormal_q(m in 1usize..20, n in 1usize..20, seed in any::<u64>()) {
        let a = Tensor::<f64>::rand_normal(&[m, n], 0.0, 1.0, &mut Rng::new(seed)).unwrap();
        let (q, r) = a.qr().unwrap();
        let k = m.min(n);
        prop_assert_eq!(q.shape(), &[m, k]);
        prop_assert_eq!(r.shape(), &[k, n]);
        prop_assert!(max_abs(&q.matmul(&r).unwrap().sub(&a).unwrap()) <= 1e-13 * (1.0 + max_abs(&a)));
        prop_assert!(max_abs(&q.t().unwrap().matmul(&q).unwrap().sub(&Tensor::eye(k).unwrap()).unwrap()) <= 1e-13);
        for i in 0..k { for j in 0..i.min(n) { prop_assert_eq!(r.get(&[i, j]).unwrap(), 0.0); } }
    }

    #[test]
    fn spd_solve_inverse_and_logdet_agree(n in 1usize..25, seed in any::<u64>()) {
        let mut rng = Rng::new(seed);
        let a = spd(n, 0.3, &mut rng);
        let b = Tensor::<f64>::rand_normal(&[n, 3], 0.0, 1.0, &mut rng).unwrap();
        let x = a.solve_spd(&b).unwrap();
        prop_assert!(max_abs(&a.matmul(&x).unwrap().sub(&b).unwrap()) <= 1e-11 * (1.0 + max_abs(&b)));
        let inv = a.inverse_spd().unwrap();
        prop_assert!(max_abs(&a.matmul(&inv).unwrap().sub(&Tensor::eye(n).unwrap()).unwrap()) <= 1e-11);
        let ld = a.logdet_spd().unwrap().item().unwrap();
        let ev: f64 = a.eigh().unwrap().0.to_vec().iter().map(|l| l.ln()).sum();
        prop_assert!((ld - ev).abs() <= 1e-11 * (1.0 + ev.abs()));
    }
}

#[test]
fn blocked_paths_match_at_sizes_beyond_one_block() {
    // 250 rows cross the Cholesky and triangular block sizes; 130 right-hand sides
    // cross the parallel column split.
    let mut rng = Rng::new(9);
    let a = spd(250, 1.0, &mut rng);
    let l = a.cholesky().unwrap();
    let rec = l.matmul(&l.t().unwrap()).unwrap();
    assert!(max_abs(&rec.sub(&a).unwrap()) <= 1e-12 * max_abs(&a));
    let b = Tensor::<f64>::rand_normal(&[250, 130], 0.0, 1.0, &mut rng).unwrap();
    let x = a.solve_spd(&b).unwrap();
    assert!(max_abs(&a.matmul(&x).unwrap().sub(&b).unwrap()) <= 1e-10);
    eigh_holds(&a);
}

/// Checks that eigh gives ascending eigenvalues and orthonormal eigenvectors with
/// A = V diag(λ) Vᵀ, to 1e-12 relative to ‖A‖.
fn eigh_holds(a: &Tensor<f64>) {
    let n = a.shape()[0];
    let (lam, v) = a.eigh().unwrap();
    assert!(lam.to_vec().windows(2).all(|p| p[0] <= p[1]));
    let rec = v
        .mul(&lam.unsqueeze(0).unwrap())
        .unwrap()
        .matmul(&v.t().unwrap())
        .unwrap();
    assert!(max_abs(&rec.sub(a).unwrap()) <= 1e-12 * max_abs(a));
    let vtv = v.t().unwrap().matmul(&v).unwrap();
    assert!(max_abs(&vtv.sub(&Tensor::eye(n).unwrap()).unwrap()) <= 1e-12);
}

#[test]
fn blocked_qr_and_eigh_hold_across_many_blocks() {
    // QR of tall and wide matrices spanning several 32-column panels; eigh at a size
    // with several reflector blocks and rotation panels (all in parallel).
    let mut rng = Rng::new(10);
    for (m, n) in [(250, 130), (130, 250), (97, 97)] {
        let a = Tensor::<f64>::rand_normal(&[m, n], 0.0, 1.0, &mut rng).unwrap();
        let (q, r) = a.qr().unwrap();
        let k = m.min(n);
        assert_eq!((q.shape(), r.shape()), (&[m, k][..], &[k, n][..]));
        let rec = q.matmul(&r).unwrap();
        assert!(
            max_abs(&rec.sub(&a).unwrap()) <= 1e-12 * max_abs(&a),
            "{m}×{n}"
        );
        let qtq = q.t().unwrap().matmul(&q).unwrap();
        assert!(max_abs(&qtq.sub(&Tensor::eye(k).unwrap()).unwrap()) <= 1e-13);
        let rv = r.to_vec();
        for i in 0..k {
            assert!(rv[i * n + i] >= 0.0);
            assert!((0..i.min(n)).all(|j| rv[i * n + j] == 0.0), "R row {i}");
        }
    }
    eigh_holds(&spd(300, 1.0, &mut rng));
}

#[test]
fn eigh_is_exact_under_power_of_two_scaling_far_from_one() {
    // Entries of 1e±200 would overflow or underflow the reflectors' squared norms:
    // the matrix is scaled by a power of two first, so the eigenvalues scale exactly
    // and the eigenvectors do not change.
    let mut rng = Rng::new(11);
    let a = spd(40, 1.0, &mut rng);
    let (lam, v) = a.eigh().unwrap();
    for k in [665, -665, -990] {
        let f = 2f64.powi(k / 2) * 2f64.powi(k - k / 2);
        let (ls, vs) = a.mul_scalar(f).eigh().unwrap();
        for (x, y) in ls.to_vec().iter().zip(lam.to_vec()) {
            assert!(
                (x / f - y).abs() <= 1e-13 * y.abs(),
                "2^{k}: {x:e} against {y:e}"
            );
        }
        assert!(max_abs(&vs.sub(&v).unwrap()) <= 1e-13, "2^{k}");
    }
}

#[test]
fn accuracy_degrades_with_the_condition_number_as_expected() {
    // The forward error of an SPD solve is bounded by about κ·ε: check the bound with
    // a factor 100 of slack at κ = 1e2 … 1e12, and that the residual stays at ε·‖A‖‖x‖.
    let mut rng = Rng::new(4);
    for cond in [1e2, 1e6, 1e10, 1e12] {
        let a = conditioned(40, cond, &mut rng);
        let x_true = Tensor::<f64>::rand_normal(&[40, 1], 0.0, 1.0, &mut rng).unwrap();
        let b = a.matmul(&x_true).unwrap();
        let x = a.solve_spd(&b).unwrap();
        let rel = max_abs(&x.sub(&x_true).unwrap()) / max_abs(&x_true);
        assert!(
            rel <= 100.0 * cond * f64::EPSILON,
            "κ {cond:e}: forward error {rel:e}"
        );
        let resid = max_abs(&a.matmul(&x).unwrap().sub(&b).unwrap());
        assert!(
            resid <= 1e3 * f64::EPSILON * max_abs(&a) * max_abs(&x),
            "κ {cond:e}: residual {resid:e}"
        );
        // Eigenvalues are recovered to ε‖A‖ whatever the conditioning.
        let lam = a.eigh().unwrap().0.to_vec();
        assert!(
            (lam[0] - 1.0).abs() <= 1e3 * f64::EPSILON * cond,
            "smallest eigenvalue {}",
            lam[0]
        );
        assert!((lam[39] - cond).abs() <= 1e-12 * cond);
    }
}

#[test]
fn eigh_handles_known_and_degenerate_spectra() {
    let a = Tensor::<f64>::from_vec(vec![2.0, 1.0, 1.0, 2.0], &[2, 2]).unwrap();
    let (lam, v) = a.eigh().unwrap();
    assert!((lam.to_vec()[0] - 1.0).abs() < 1e-15 && (lam.to_vec()[1] - 3.0).abs() < 1e-15);
    assert!((v.get(&[0, 1]).unwrap().abs() - 0.5f64.sqrt()).abs() < 1e-15);
    // A repeated eigenvalue: the identity times 3 plus a rank-one bump.
    let u = Tensor::from_vec(vec![1.0, 2.0, 2.0, 1.0], &[4, 1]).unwrap();
    let b = Tensor::<f64>::eye(4)
        .unwrap()
        .mul_scalar(3.0)
        .add(&u.matmul(&u.t().unwrap()).unwrap())
        .unwrap();
    let (lam, v) = b.eigh().unwrap();
    let l = lam.to_vec();
    assert!(l[..3].iter().all(|x| (x - 3.0).abs() < 1e-13) && (l[3] - 13.0).abs() < 1e-13);
    assert!(
        max_abs(
            &v.t()
                .unwrap()
                .matmul(&v)
                .unwrap()
                .sub(&Tensor::eye(4).unwrap())
                .unwrap()
        ) < 1e-13
    );
    // Batched, and the upper triangle is ignored.
    let mut rng = Rng::new(2);
    let s = spd(5, 1.0, &mut rng);
    let junk = tril(&s)
        .add(&tril(&s).t().unwrap().mul_scalar(7.0))
        .unwrap()
        .sub(&Tensor::eye(5).unwrap().mul(&s).unwrap().mul_scalar(7.0))
        .unwrap();
    let batch = Tensor::stack(&[&s, &junk], 0).unwrap();
    let (bl, _) = batch.eigh().unwrap();
    let (sl, _) = s.eigh().unwrap();
    for k in 0..2 {
        let got = bl.index_axis(0, k).unwrap().to_vec();
        for (g, w) in got.iter().zip(sl.to_vec()) {
            assert!((g - w).abs() < 1e-12);
        }
    }
}

#[test]
fn functions_of_spd_matrices() {
    let a = spd(6, 0.5, &mut Rng::new(8));
    let h = a.spd_pow(0.5).unwrap();
    assert!(max_abs(&h.matmul(&h).unwrap().sub(&a).unwrap()) < 1e-12);
    let w = a.spd_inv_sqrt().unwrap();
    let should_be_eye = w.matmul(&a).unwrap().matmul(&w).unwrap();
    assert!(max_abs(&should_be_eye.sub(&Tensor::eye(6).unwrap()).unwrap()) < 1e-12);
    let not_spd = Tensor::from_vec(vec![1.0, 2.0, 2.0, 1.0], &[2, 2]).unwrap();
    // Its eigenvalues are −1 and 3: the error names the negative one.
    let e = not_spd.spd_inv_sqrt().unwrap_err().to_string();
    let named: f64 = e
        .split("not positive definite: eigenvalue ")
        .nth(1)
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{e}"));
    assert!((named + 1.0).abs() < 1e-14, "{e}");
    assert!(a.spd_pow(f64::NAN).is_err());
}

#[test]
fn least_squares_recovers_exact_solutions_and_refuses_rank_deficiency() {
    let mut rng = Rng::new(6);
    let a = Tensor::<f64>::rand_normal(&[30, 5], 0.0, 1.0, &mut rng).unwrap();
    let x = Tensor::<f64>::rand_normal(&[5, 2], 0.0, 1.0, &mut rng).unwrap();
    let got = a.lstsq(&a.matmul(&x).unwrap()).unwrap();
    assert!(max_abs(&got.sub(&x).unwrap()) < 1e-12);
    // With noise: the normal equations hold, Aᵀ(A x − b) = 0.
    let b = Tensor::<f64>::rand_normal(&[30, 1], 0.0, 1.0, &mut rng).unwrap();
    let xs = a.lstsq(&b).unwrap();
    let g = a
        .t()
        .unwrap()
        .matmul(&a.matmul(&xs).unwrap().sub(&b).unwrap())
        .unwrap();
    assert!(max_abs(&g) < 1e-12);
    let dup = Tensor::cat(&[&a, &a.narrow(1, 0, 1).unwrap()], 1).unwrap();
    let e = dup.lstsq(&b).unwrap_err();
    assert!(e.to_string().contains("rank-deficient"), "{e}");
    assert!(a.t().unwrap().lstsq(&b).is_err());
}

#[test]
fn cholesky_refuses_a_non_finite_value_exactly_when_it_is_in_the_lower_triangle() {
    // Orders within one band of the transposed copy (8 rows of f64), a band and a
    // bit, and several; a batch whose second matrix alone holds the value.
    for n in [1usize, 2, 9, 33, 70, 100] {
        let step = if n > 40 { 7 } else { 1 };
        let mut a = Tensor::<f64>::eye(n).unwrap().mul_scalar(2.0).to_vec();
        for at in (0..n * n).step_by(step) {
            let (i, j) = (at / n, at % n);
            let bad = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY][at % 3];
            let keep = a[at];
            a[at] = bad;
            let mut batch = Tensor::<f64>::eye(n).unwrap().mul_scalar(2.0).to_vec();
            batch.extend_from_slice(&a);
            let t = Tensor::from_vec(batch, &[2, n, n]).unwrap();
            let got = t.cholesky();
            if i >= j {
                assert!(
                    matches!(got, Err(Error::NonFinite { op: "cholesky", .. })),
                    "n = {n}: {bad} at ({i}, {j}) was not refused"
                );
            } else {
                let l = got.unwrap_or_else(|e| panic!("n = {n}: ({i}, {j}) above: {e}"));
                assert!(l.all_finite(), "n = {n}: {bad} above at ({i}, {j}) leaked");
            }
            a[at] = keep;
        }
    }
}

#[test]
fn cholesky_checks_the_lower_triangle_beyond_one_tile_of_the_copy() {
    // 300 rows: the transposed copy reads A in tiles of 256 rows, so (290, 5) lies
    // in a band's second tile.
    let n = 300;
    for (i, j) in [(290usize, 5usize), (299, 298), (5, 290)] {
        let mut a = Tensor::<f64>::eye(n).unwrap().mul_scalar(2.0).to_vec();
        a[i * n + j] = f64::NAN;
        let got = Tensor::from_vec(a, &[n, n]).unwrap().cholesky();
        if i >= j {
            assert!(
                matches!(got, Err(Error::NonFinite { op: "cholesky", .. })),
                "NaN at ({i}, {j}) was not refused"
            );
        } else {
            assert!(got.unwrap().all_finite(), "NaN above at ({i}, {j}) leaked");
        }
    }
}

#[test]
fn cholesky_beyond_one_tile_of_the_copy_reconstructs_and_is_exactly_lower() {
    // Orders past the copy's tile of 256 rows, one not a whole number of bands.
    for n in [300usize, 261] {
        let a = spd(n, 1.0, &mut Rng::new(n as u64));
        let l = a.cholesky().unwrap();
        assert_eq!(max_abs(&l.sub(&tril(&l)).unwrap()), 0.0, "n = {n}");
        let rec = l.matmul(&l.t().unwrap()).unwrap();
        assert!(
            max_abs(&rec.sub(&a).unwrap()) <= 1e-12 * max_abs(&a),
            "n = {n}"
        );
        let a32 = a.cast::<f32>();
        let l32 = a32.cholesky().unwrap();
        let l32_64 = l32.cast::<f64>();
        assert_eq!(
            max_abs(&l32_64.sub(&tril(&l32_64)).unwrap()),
            0.0,
            "f32 n = {n}"
        );
        let rec32 = l32.matmul(&l32.t().unwrap()).unwrap().cast::<f64>();
        assert!(
            max_abs(&rec32.sub(&a).unwrap()) <= 1e-4 * max_abs(&a),
            "f32 n = {n}"
        );
    }
}

#[test]
fn bad_inputs_give_clear_errors() {
    let not_spd = Tensor::from_vec(vec![1.0, 0.0, 0.0, -4.0], &[2, 2]).unwrap();
    let e = not_spd.cholesky().unwrap_err();
    assert_eq!(
        e.to_string(),
        "cholesky: the matrix is not positive definite: pivot 1 is -4"
    );
    assert!(matches!(
        Tensor::<f64>::zeros(&[2, 3]).unwrap().cholesky(),
        Err(Error::Shape { op: "cholesky", .. })
    ));
    // A NaN or infinity in the lower triangle is refused; in the strict upper
    // triangle, which these routines never read, it changes nothing (LAPACK's and
    // PyTorch's convention).
    let nan = Tensor::from_vec(vec![1.0, 0.0, f64::NAN, 1.0], &[2, 2]).unwrap();
    assert!(matches!(
        nan.eigh(),
        Err(Error::NonFinite { op: "eigh", .. })
    ));
    assert!(matches!(
        nan.cholesky(),
        Err(Error::NonFinite { op: "cholesky", .. })
    ));
    let inf = Tensor::from_vec(vec![f64::INFINITY, 0.0, 0.0, 1.0], &[1, 2, 2]).unwrap();
    assert!(matches!(
        inf.inverse_spd(),
        Err(Error::NonFinite {
            op: "inverse_spd",
            ..
        })
    ));
    let above = Tensor::from_vec(vec![4.0, f64::NAN, 2.0, 5.0], &[2, 2]).unwrap();
    let clean = Tensor::from_vec(vec![4.0, 2.0, 2.0, 5.0], &[2, 2]).unwrap();
    assert!(above.cholesky().unwrap().bit_eq(&clean.cholesky().unwrap()));
    assert!(above
        .inverse_spd()
        .unwrap()
        .bit_eq(&clean.inverse_spd().unwrap()));
    let (va, ua) = above.eigh().unwrap();
    let (vc, uc) = clean.eigh().unwrap();
    assert!(va.bit_eq(&vc) && ua.bit_eq(&uc));
    let singular = Tensor::from_vec(vec![1.0, 0.0, 3.0, 0.0], &[2, 2]).unwrap();
    let e = singular
        .solve_triangular(&Tensor::ones(&[2, 1]).unwrap(), Triangular::LOWER)
        .unwrap_err();
    assert!(e.to_string().contains("diagonal entry 1 is zero"), "{e}");
    let e = Tensor::<f64>::eye(3)
        .unwrap()
        .solve_triangular(&Tensor::ones(&[2, 1]).unwrap(), Triangular::LOWER)
        .unwrap_err();
    assert!(e.to_string().contains("B needs 3 rows"), "{e}");
    assert!(Tensor::<f64>::ones(&[3]).unwrap().qr().is_err());
}

/// QR reduces columns whose squares overflow or underflow: the column norm is
/// scaled (as LAPACK's dnrm2), so values near the type's limits factor with Q
/// orthonormal and A = QR, where a plain Σx² gave NaN (hostile profile's finding).
#[test]
fn qr_factors_columns_at_the_type_limits() {
    for scale in [f64::MAX / 2.0, 1e-170, 1e-300] {
        let a = Tensor::<f64>::from_vec(
            vec![0.0, scale, scale, 1.0, 0.0, 0.0, 0.0, 2.0, 3.0],
            &[3, 3],
        )
        .unwrap()
        .t()
        .unwrap();
        let (q, r) = a.qr().unwrap();
        assert!(q.all_finite() && r.all_finite(), "scale {scale:e}: {r:?}");
        let qtq = q.t().unwrap().matmul(&q).unwrap();
        assert!(
            max_abs(&qtq.sub(&Tensor::eye(3).unwrap()).unwrap()) < 1e-14,
            "scale {scale:e}"
        );
        let rel = max_abs(&q.matmul(&r).unwrap().sub(&a).unwrap()) / max_abs(&a);
        assert!(rel < 1e-14, "scale {scale:e}: relative residual {rel:e}");
        // The first column, (0, s, s), was reduced to its norm √2·s, not skipped.
        assert!((r.get(&[0, 0]).unwrap().abs() / (scale * 2f64.sqrt()) - 1.0).abs() < 1e-15);
    }
}

/// A finite matrix whose inverse overflows is an error of kind `Numerical`, not an
/// infinity: the SPD routines, and QR where R itself cannot be represented.
#[test]
fn results_that_overflow_are_errors() {
    let tiny = Tensor::<f64>::from_vec(vec![5e-324], &[1, 1]).unwrap();
    let e = tiny.inverse_spd().unwrap_err();
    assert_eq!(e.kind(), tensor::ErrorKind::Numerical, "{e}");
    assert!(e.to_string().contains("overflows f64"), "{e}");
    let e = tiny.solve_spd(&Tensor::ones(&[1, 1]).unwrap()).unwrap_err();
    assert_eq!(e.kind(), tensor::ErrorKind::Numerical, "{e}");
    let big = Tensor::<f64>::full(&[2, 2], f64::MAX).unwrap();
    let e = big.qr().unwrap_err();
    assert_eq!(e.kind(), tensor::ErrorKind::Numerical, "{e}");
}
