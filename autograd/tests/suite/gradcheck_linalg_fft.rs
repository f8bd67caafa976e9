//! gradcheck and gradgradcheck for the linear-algebra and FFT ops.

use crate::common;

use autograd::{gradcheck, gradgradcheck, GradcheckOptions, Var};
use common::config;
use proptest::prelude::*;
use tensor::fft::Norm;
use tensor::linalg::Triangular;
use tensor::{Rng, Tensor};

fn opts() -> GradcheckOptions {
    common::strict()
}

/// A well-conditioned SPD matrix (eigenvalues ≥ 1) with distinct eigenvalues.
fn spd(n: usize, seed: u64) -> Tensor<f64> {
    let m = Tensor::<f64>::rand_normal(&[n, n], 0.0, 1.0, &mut Rng::new(seed)).unwrap();
    let d: Vec<f64> = (0..n * n)
        .map(|k| {
            if k % (n + 1) == 0 {
                1.0 + (k / (n + 1)) as f64
            } else {
                0.0
            }
        })
        .collect();
    m.matmul(&m.t().unwrap())
        .unwrap()
        .div_scalar(n as f64)
        .add(&Tensor::from_vec(d, &[n, n]).unwrap())
        .unwrap()
}

/// The one check at the looser library defaults (atol 1e-5, rtol 1e-3): eigenvector
/// derivatives scale with 1/(λᵢ − λⱼ) and the iterative solver's rounding
/// (≈ 1e-15·‖A‖) is amplified by the same factor, so central differences of the
/// eigenvector function disagree with the exact derivative by ≈ 1e-5 relative at
/// ε = 1e-6 (first order) and, at ε = 1e-4, by the truncation error ε²·|f⁗| at
/// second order. The eigenvalues alone pass the strict tolerances.
fn eigenvector_opts() -> GradcheckOptions {
    GradcheckOptions::default()
}

fn check(
    name: &str,
    f: impl Fn(&[Var<f64>]) -> tensor::Result<Var<f64>> + Clone,
    inputs: &[Tensor<f64>],
) {
    check_with(name, f, inputs, &opts());
}

fn check_with(
    name: &str,
    f: impl Fn(&[Var<f64>]) -> tensor::Result<Var<f64>> + Clone,
    inputs: &[Tensor<f64>],
    opts: &GradcheckOptions,
) {
    let r = gradcheck(f.clone(), inputs, opts);
    assert!(r.is_ok(), "{name}: {r:?}");
    let r = gradgradcheck(f, inputs, opts);
    assert!(r.is_ok(), "{name} (second order): {r:?}");
}

proptest! {
    #![proptest_config(config(10))]

    #[test]
    fn symmetric_solvers_pass_gradcheck(n in 1usize..5, seed in any::<u64>()) {
        let a = spd(n, seed);
        let b = Tensor::<f64>::rand_normal(&[n, 2], 0.0, 1.0, &mut Rng::new(seed ^ 7)).unwrap();
        check("cholesky", |v: &[Var<f64>]| v[0].cholesky(), std::slice::from_ref(&a));
        check("solve_spd", |v: &[Var<f64>]| v[0].solve_spd(&v[1]), &[a.clone(), b.clone()]);
        check("inverse_spd", |v: &[Var<f64>]| v[0].inverse_spd(), std::slice::from_ref(&a));
        check("logdet_spd", |v: &[Var<f64>]| v[0].logdet_spd(), std::slice::from_ref(&a));
        // Sign-invariant functions of the eigenvectors.
        check_with("eigh", |v: &[Var<f64>]| {
            let (lam, vec) = v[0].eigh()?;
            let f = vec.mul(&lam.square()?.unsqueeze(0)?)?.matmul(&vec.t()?)?;
            f.add(&vec.square()?.mul_scalar(3.0)?)
        }, std::slice::from_ref(&a), &eigenvector_opts());
        check("eigh values", |v: &[Var<f64>]| v[0].eigh().map(|(l, _)| l), std::slice::from_ref(&a));
    }

    #[test]
    fn general_solve_inverse_and_determinants_pass_gradcheck(n in 1usize..5, batch in 1usize..3, seed in any::<u64>()) {
        // Well-conditioned non-symmetric matrices (2I + U(±0.3)) with their rows
        // rotated by one, so the LU must exchange rows; the condition number stays
        // that of the unrotated matrix.
        let mut rng = Rng::new(seed);
        let m = Tensor::<f64>::rand_uniform(&[batch, n, n], -0.3, 0.3, &mut rng).unwrap()
            .add(&Tensor::eye(n).unwrap().mul_scalar(2.0)).unwrap().to_vec();
        let mut a = vec![0.0; m.len()];
        for k in 0..batch {
            for i in 0..n {
                let from = (k * n + (i + 1) % n) * n;
                a[(k * n + i) * n..(k * n + i + 1) * n].copy_from_slice(&m[from..from + n]);
            }
        }
        let a = Tensor::from_vec(a, &[batch, n, n]).unwrap();
        let b = Tensor::<f64>::rand_normal(&[batch, n, 2], 0.0, 1.0, &mut rng).unwrap();
        check("solve", |v: &[Var<f64>]| v[0].solve(&v[1]), &[a.clone(), b.clone()]);
        // A transposed (non-contiguous) view of the same kind of matrix.
        let at = a.permute(&[0, 2, 1]).unwrap();
        check("solve, transposed A", |v: &[Var<f64>]| v[0].solve(&v[1]), &[at, b]);
        check("inverse", |v: &[Var<f64>]| v[0].inverse(), std::slice::from_ref(&a));
        check("slogdet", |v: &[Var<f64>]| v[0].slogdet().map(|(_, l)| l), std::slice::from_ref(&a));
        check("det", |v: &[Var<f64>]| v[0].det(), std::slice::from_ref(&a));
    }

    #[test]
    fn triangular_solves_pass_gradcheck(
        n in 1usize..4, lower in any::<bool>(), left in any::<bool>(), transpose in any::<bool>(),
        unit in any::<bool>(), seed in any::<u64>(),
    ) {
        let mut rng = Rng::new(seed);
        let a = Tensor::<f64>::rand_uniform(&[n, n], -0.5, 0.5, &mut rng).unwrap()
            .add(&Tensor::eye(n).unwrap().mul_scalar(2.0)).unwrap();
        let b = Tensor::<f64>::rand_normal(&if left { [n, 2] } else { [2, n] }, 0.0, 1.0, &mut rng).unwrap();
        let kind = Triangular { lower, left, transpose, unit_diagonal: unit };
        check("solve_triangular", move |v: &[Var<f64>]| v[0].solve_triangular(&v[1], kind), &[a, b]);
    }

    #[test]
    fn qr_and_least_squares_pass_gradcheck(
        n in 1usize..4, extra in 0usize..3, batch in 1usize..3, seed in any::<u64>(),
    ) {
        // Tall matrices [2I + U(±0.3); U(±0.3)]: full column rank, singular values
        // within [1.1, 3], so R⁻¹ in the rule stays tame.
        let m = n + extra;
        let mut rng = Rng::new(seed);
        let mut a = Tensor::<f64>::rand_uniform(&[batch, m, n], -0.3, 0.3, &mut rng).unwrap().to_vec();
        for k in 0..batch {
            for i in 0..n {
                a[(k * m + i) * n + i] += 2.0;
            }
        }
        let a = Tensor::from_vec(a, &[batch, m, n]).unwrap();
        let b = Tensor::<f64>::rand_normal(&[batch, m, 2], 0.0, 1.0, &mut rng).unwrap();
        check("qr Q", |v: &[Var<f64>]| v[0].qr().map(|(q, _)| q), std::slice::from_ref(&a));
        check("qr R", |v: &[Var<f64>]| v[0].qr().map(|(_, r)| r), std::slice::from_ref(&a));
        check("lstsq", |v: &[Var<f64>]| v[0].lstsq(&v[1]), &[a.clone(), b.clone()]);
        // A transposed (non-contiguous) view of a tall matrix.
        let at = a.permute(&[0, 2, 1]).unwrap().contiguous().permute(&[0, 2, 1]).unwrap();
        check("lstsq, transposed storage", |v: &[Var<f64>]| v[0].lstsq(&v[1]), &[at, b]);
    }

    #[test]
    fn fourier_transforms_pass_gradcheck(n in 1usize..9, rows in 1usize..3, norm in 0usize..3, extra in 0usize..3, seed in any::<u64>()) {
        let norm = [Norm::Backward, Norm::Ortho, Norm::Forward][norm];
        let mut rng = Rng::new(seed);
        let z = Tensor::<f64>::rand_normal(&[rows, n, 2], 0.0, 1.0, &mut rng).unwrap();
        let x = Tensor::<f64>::rand_normal(&[rows, n], 0.0, 1.0, &mut rng).unwrap();
        check("fft", move |v: &[Var<f64>]| v[0].fft(1, norm), std::slice::from_ref(&z));
        check("ifft", move |v: &[Var<f64>]| v[0].ifft(1, norm), std::slice::from_ref(&z));
        check("fft axis 0", move |v: &[Var<f64>]| v[0].fft(0, norm), std::slice::from_ref(&z));
        check("rfft", move |v: &[Var<f64>]| v[0].rfft(1, norm), std::slice::from_ref(&x));
        // irfft reading fewer, exactly n/2+1, or more bins than it needs.
        let bins = (n / 2 + 1 + extra).saturating_sub(1).max(1);
        let spec = Tensor::<f64>::rand_normal(&[rows, bins, 2], 0.0, 1.0, &mut rng).unwrap();
        check("irfft", move |v: &[Var<f64>]| v[0].irfft(1, n, norm), std::slice::from_ref(&spec));
    }
}

#[test]
fn two_dimensional_transforms_pass_gradcheck() {
    let mut rng = Rng::new(3);
    let x = Tensor::<f64>::rand_normal(&[3, 4], 0.0, 1.0, &mut rng).unwrap();
    check(
        "rfft2",
        |v: &[Var<f64>]| v[0].rfft2((0, 1), Norm::Ortho),
        std::slice::from_ref(&x),
    );
    let spec = Tensor::<f64>::rand_normal(&[3, 3, 2], 0.0, 1.0, &mut rng).unwrap();
    check(
        "irfft2",
        |v: &[Var<f64>]| v[0].irfft2((0, 1), (3, 5), Norm::Backward),
        std::slice::from_ref(&spec),
    );
    let z = Tensor::<f64>::rand_normal(&[2, 3, 2], 0.0, 1.0, &mut rng).unwrap();
    check(
        "fft2",
        |v: &[Var<f64>]| v[0].fft2((0, 1), Norm::Forward),
        std::slice::from_ref(&z),
    );
}

#[test]
fn batched_symmetric_ops_pass_gradcheck() {
    let a = Tensor::stack(&[&spd(3, 1), &spd(3, 2)], 0).unwrap();
    check(
        "batched cholesky",
        |v: &[Var<f64>]| v[0].cholesky(),
        std::slice::from_ref(&a),
    );
    check(
        "batched logdet",
        |v: &[Var<f64>]| v[0].logdet_spd(),
        std::slice::from_ref(&a),
    );
}

/// The forward of the differentiable QR: the unique factorization (R's diagonal
/// positive, Q orthonormal, A = QR), and least squares equal to the normal
/// equations' solution; rank-deficient and wide matrices are refused by name.
#[test]
fn qr_is_the_unique_factorization_and_refuses_what_it_cannot_differentiate() {
    let mut rng = Rng::new(5);
    let a = Tensor::<f64>::rand_normal(&[2, 6, 4], 0.0, 1.0, &mut rng).unwrap();
    let (q, r) = Var::constant(a.clone()).qr().unwrap();
    let (q, r) = (q.value().clone(), r.value().clone());
    let recon = q.matmul(&r).unwrap().to_vec();
    for (x, y) in recon.iter().zip(a.to_vec()) {
        assert!((x - y).abs() <= 1e-13, "{x} vs {y}");
    }
    let qtq = q.t().unwrap().matmul(&q).unwrap().to_vec();
    let rv = r.to_vec();
    for k in 0..2 {
        for i in 0..4 {
            assert!(rv[k * 16 + i * 5] > 0.0, "R's diagonal must be positive");
            for j in 0..4 {
                let want = if i == j { 1.0 } else { 0.0 };
                assert!((qtq[k * 16 + i * 4 + j] - want).abs() <= 1e-14);
                if i > j {
                    assert_eq!(rv[k * 16 + i * 4 + j], 0.0);
                }
            }
        }
    }
    let b = Tensor::<f64>::rand_normal(&[2, 6, 3], 0.0, 1.0, &mut rng).unwrap();
    let x = Var::constant(a.clone())
        .lstsq(&Var::constant(b.clone()))
        .unwrap()
        .value()
        .to_vec();
    let at = a.t().unwrap();
    let normal = at
        .matmul(&a)
        .unwrap()
        .solve_spd(&at.matmul(&b).unwrap())
        .unwrap()
        .to_vec();
    for (x, y) in x.iter().zip(normal) {
        assert!((x - y).abs() <= 1e-12, "{x} vs {y}");
    }
    // A repeated column: rank 1 of 2.
    let deficient =
        Var::constant(Tensor::from_vec(vec![1.0, 1.0, 2.0, 2.0, 3.0, 3.0], &[3, 2]).unwrap());
    let e = deficient.qr().unwrap_err().to_string();
    assert!(e.contains("rank-deficient") && e.contains("R[1][1]"), "{e}");
    let wide = Var::constant(Tensor::<f64>::zeros(&[2, 3]).unwrap());
    let e = wide.qr().unwrap_err().to_string();
    assert!(e.contains("m ≥ n"), "{e}");
}
