//! LLQR's curvature and its fit of U against hand computations: the authors' NGD
//! curvature (summed over the batch) against an independent finite-difference
//! Fisher, a refresh's U against the closed-form gradient of J (warm start, EMA,
//! floor), the closed-form diagonal optimum, the per-layer clip, conv kernels in the
//! K-FAC family, sanitised gradients, and a learned U setting the hovering envelope.

use crate::common;

use autograd::Var;
use common::{dot, flat, tiny, Tiny};
use nn::{Module, ParamStore};
use optim::llqr::{
    fisher_vector_product, hessian_vector_product, BatchScale, CurvatureProducts, Geometry,
    InnerSolve, LlqrConfig, LlqrSam, PerturbationNorm, Preconditioner, Structure,
};
use optim::Optimizer;
use tensor::{Rng, Tensor};

#[test]
fn the_default_ngd_curvature_is_the_fisher_summed_over_the_batch() {
    let t = tiny(1);
    let params = t.store.trainable();
    let n = t.grad().len();
    let mut rng = Rng::new(9);
    let v: Vec<f64> = (0..n).map(|_| rng.normal()).collect();
    let reference = t.summed_fisher_times(&v);
    let logits = t.logits().unwrap();
    let sum =
        flat(&fisher_vector_product(&params, &logits, &t.shaped(&v), BatchScale::Sum).unwrap());
    let mean =
        flat(&fisher_vector_product(&params, &logits, &t.shaped(&v), BatchScale::Mean).unwrap());
    let scale = reference.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    for i in 0..n {
        // Central differences with h = 1e-5 err by O(h²) ≈ 1e-10 of the scale.
        assert!(
            (sum[i] - reference[i]).abs() <= 1e-8 * scale,
            "{i}: {} vs {}",
            sum[i],
            reference[i]
        );
        assert!((mean[i] * 6.0 - sum[i]).abs() <= 1e-12 * scale);
    }
    assert_eq!(LlqrConfig::default().geometry, Geometry::Fisher);
}

#[test]
fn curvature_products_built_once_give_each_direction_the_from_scratch_product() {
    // A refresh builds the forward and the recorded backward pass once and takes
    // all its products from them: each must be, to the bit, the product computed from
    // a fresh forward pass, whatever came before it (a product that left state in the
    // shared graph — an accumulated u, a cached J v — fails on the repeated v₁).
    let t = tiny(3);
    let params = t.store.trainable();
    let n = t.grad().len();
    let mut rng = Rng::new(11);
    let mut direction = || t.shaped(&(0..n).map(|_| rng.normal()).collect::<Vec<_>>());
    let (v1, v2) = (direction(), direction());
    let bits = |ts: &[Tensor<f64>]| flat(ts).iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let loss = || nn::loss::cross_entropy(&t.logits()?, &t.y, 0.0);
    for scale in [BatchScale::Sum, BatchScale::Mean] {
        let fisher = CurvatureProducts::fisher(&params, &t.logits().unwrap(), scale).unwrap();
        for v in [&v1, &v2, &v1] {
            let fresh = fisher_vector_product(&params, &t.logits().unwrap(), v, scale).unwrap();
            assert_eq!(bits(&fisher.apply(v).unwrap()), bits(&fresh), "{scale:?}");
        }
    }
    let hessian = CurvatureProducts::hessian(&params, &loss().unwrap()).unwrap();
    for v in [&v1, &v2, &v1] {
        let fresh = hessian_vector_product(&params, &loss().unwrap(), v).unwrap();
        assert_eq!(bits(&hessian.apply(v).unwrap()), bits(&fresh));
    }
    let e = hessian.apply(&v1[..1]).unwrap_err().to_string();
    assert!(e.contains("hessian_vector_product"), "{e}");
}

/// J(d) = −gᵀ(d⊙g) + ½(d⊙g)ᵀ G (d⊙g) for a diagonal U = diag(d), with the reference
/// summed Fisher.
fn objective(t: &Tiny, g: &[f64], d: &[f64]) -> f64 {
    let step: Vec<f64> = d.iter().zip(g).map(|(a, b)| a * b).collect();
    -dot(g, &step) + 0.5 * dot(&step, &t.summed_fisher_times(&step))
}

/// ∂J/∂d = g ⊙ (G (d⊙g) − g), in closed form.
fn objective_gradient(t: &Tiny, g: &[f64], d: &[f64]) -> Vec<f64> {
    let step: Vec<f64> = d.iter().zip(g).map(|(a, b)| a * b).collect();
    let gs = t.summed_fisher_times(&step);
    g.iter().zip(&gs).map(|(gi, hi)| gi * (hi - gi)).collect()
}

#[test]
fn a_refresh_moves_a_diagonal_u_by_the_closed_form_gradient_of_j() {
    let t = tiny(2);
    let g = t.grad();
    let n = g.len();
    // The closed-form gradient against central differences of J itself.
    let d0: Vec<f64> = (0..n).map(|i| 1.0 + 0.1 * (i % 3) as f64).collect();
    let closed = objective_gradient(&t, &g, &d0);
    // J is quadratic in d, so a wide central difference is exact up to the reference
    // Fisher's own finite-difference error (O(h²) ≈ 1e-10 relative to J, divided by
    // 2h = 0.1 here); a wrong factor (2, or the batch size) is an O(1) error.
    for i in [0, 5, n / 2, n - 1] {
        let h = 0.05;
        let mut dp = d0.clone();
        let mut dm = d0.clone();
        dp[i] += h;
        dm[i] -= h;
        let fd = (objective(&t, &g, &dp) - objective(&t, &g, &dm)) / (2.0 * h);
        assert!(
            (fd - closed[i]).abs() <= 1e-6 * closed[i].abs().max(1e-3),
            "{i}: {fd} vs {}",
            closed[i]
        );
    }
    // Two refreshes of one inner step each (no clipping at this clip), EMA β = 0.5:
    // U₁ = max(β·1 + (1−β)(1 − η∂J(1)), floor); the second warm-starts from U₁.
    let (eta, beta, floor) = (0.5, 0.5, 0.3);
    let mut opt = LlqrSam::new(
        t.store.trainable(),
        LlqrConfig {
            rho: 0.0,
            refresh_every: 1,
            ema: beta,
            floor,
            inner: InnerSolve {
                steps: 1,
                lr: eta,
                clip: 1e9,
                ..InnerSolve::default()
            },
            ..LlqrConfig::default()
        },
    )
    .unwrap();
    let mut expect = vec![1.0; n];
    for _ in 0..2 {
        let grad_j = objective_gradient(&t, &g, &expect);
        expect = expect
            .iter()
            .zip(&grad_j)
            .map(|(u, dj)| (beta * u + (1.0 - beta) * (u - eta * dj)).max(floor))
            .collect();
        opt.refresh(&|| t.logits(), &t.y, 0.0).unwrap();
        let got = flat(&opt.preconditioner().factor_tensors().concat());
        for i in 0..n {
            assert!(
                (got[i] - expect[i]).abs() <= 1e-9,
                "{i}: {} vs {}",
                got[i],
                expect[i]
            );
        }
    }
    // The refresh did move U (at this scale the summed Fisher's step is not small),
    // and the floor bound where it should.
    assert!(expect.iter().any(|&u| (u - 1.0).abs() > 1e-3));
}

/// L(θ) = ½θᵀAθ + bᵀθ over one parameter of two entries.
#[test]
fn non_finite_inner_gradients_are_sanitised_and_counted() {
    let t = tiny(3);
    let params = t.store.trainable();
    let g = t.grad();
    let n = g.len();
    // A curvature product that is NaN in entry 0 and +∞ in entry 1, zero elsewhere:
    // ∂J/∂d = g ⊙ (Gv − g) is NaN there (→ 0) and ±∞ (→ ±1), finite elsewhere.
    let gvp = |_: &[Tensor<f64>]| -> tensor::Result<Vec<Tensor<f64>>> {
        let mut v = vec![0.0; n];
        v[0] = f64::NAN;
        v[1] = f64::INFINITY;
        Ok(t.shaped(&v))
    };
    let mut u = Preconditioner::identity(&params, Structure::Diagonal).unwrap();
    let eta = 0.1;
    let trace = u
        .learn(
            &t.shaped(&g),
            &gvp,
            &InnerSolve {
                steps: 1,
                lr: eta,
                clip: 1e9,
                ..InnerSolve::default()
            },
        )
        .unwrap();
    assert_eq!(trace.sanitised, 2);
    let got = flat(&u.factor_tensors().concat());
    assert_eq!(got[0], 1.0);
    assert_eq!(got[1], 1.0 - eta * g[1].signum());
    for i in 2..n {
        let expect = 1.0 - eta * (-g[i] * g[i]);
        assert!((got[i] - expect).abs() <= 1e-15, "{i}");
    }
}

#[test]
fn a_long_diagonal_fit_reaches_the_closed_form_diagonal_optimum_of_j() {
    // For U = diag(d), J(d) = −gᵀ(d⊙g) + ½(d⊙g)ᵀ(G + δI)(d⊙g) is quadratic in d with
    // Hessian D(G + δI)D (D = diag g): its minimum solves D(G + δI)D d = g⊙g, and
    // J* = −½ (g⊙g)ᵀ d*.
    let t = tiny(4);
    let g = t.grad();
    let n = g.len();
    let damping = 0.1;
    let mut h = vec![0.0; n * n];
    for j in 0..n {
        let mut e = vec![0.0; n];
        e[j] = g[j];
        let col = t.summed_fisher_times(&e);
        for i in 0..n {
            h[i * n + j] = g[i] * (col[i] + if i == j { damping * g[j] } else { 0.0 });
        }
    }
    let hess = Tensor::from_vec(h, &[n, n]).unwrap();
    let sym = hess.add(&hess.t().unwrap()).unwrap().mul_scalar(0.5);
    let g2: Vec<f64> = g.iter().map(|x| x * x).collect();
    let d_star = sym
        .solve_spd(&Tensor::from_vec(g2.clone(), &[n, 1]).unwrap())
        .unwrap()
        .to_vec();
    let j_star = -0.5 * dot(&g2, &d_star);
    // Its condition number here is about 2e4: momentum steps at 1/λ_max need some
    // 10⁴ iterations.
    let lmax = sym.eigh().unwrap().0.max_all().unwrap();
    let params = t.store.trainable();
    let gvp = |v: &[Tensor<f64>]| fisher_vector_product(&params, &t.logits()?, v, BatchScale::Sum);
    let mut u = Preconditioner::identity(&params, Structure::Diagonal).unwrap();
    let trace = u
        .learn(
            &t.shaped(&g),
            &gvp,
            &InnerSolve {
                steps: 20000,
                lr: 1.0 / lmax,
                momentum: 0.9,
                clip: 1e9,
                damping,
            },
        )
        .unwrap();
    let j = *trace.objective.last().unwrap();
    assert!(j < trace.objective[0]);
    assert!(
        (j - j_star).abs() <= 1e-6 * j_star.abs(),
        "J = {j:e}, optimum {j_star:e}"
    );
}

#[test]
fn the_inner_solve_clips_each_diagonal_layer_as_one_block() {
    // Two layers (weight and bias each): with U = I and G = 0, ∂J/∂d = −g⊙g per
    // entry; one step of lr η moves each layer by η·clip along its own −∂J/∂d
    // direction, kernel and bias clipped together.
    let t = tiny(5);
    let params = t.store.trainable();
    let g = t.grad();
    let zero = |v: &[Tensor<f64>]| -> tensor::Result<Vec<Tensor<f64>>> {
        Ok(v.iter().map(|x| x.mul_scalar(0.0)).collect())
    };
    let (eta, clip) = (0.1, 1e-4);
    let mut u = Preconditioner::identity(&params, Structure::Diagonal).unwrap();
    u.learn(
        &t.shaped(&g),
        &zero,
        &InnerSolve {
            steps: 1,
            lr: eta,
            clip,
            ..InnerSolve::default()
        },
    )
    .unwrap();
    let moved = u.factor_tensors();
    let mut start = 0;
    for layer in params.chunks(2) {
        let n: usize = layer.iter().map(|p| p.value().numel()).sum();
        let dj: Vec<f64> = g[start..start + n].iter().map(|x| -x * x).collect();
        let norm = dot(&dj, &dj).sqrt();
        assert!(norm > clip, "the test needs a clipped layer");
        let got: Vec<f64> = moved[start_block(&params, layer)..][..2]
            .concat()
            .iter()
            .flat_map(|t| t.to_vec())
            .collect();
        for (i, (d, dji)) in got.iter().zip(&dj).enumerate() {
            let want = 1.0 - eta * clip * dji / norm;
            assert!((d - want).abs() <= 1e-15, "entry {i}: {d} vs {want}");
        }
        start += n;
    }
}

#[test]
fn the_inner_solve_clips_each_kfac_factor_on_its_own() {
    // The authors' tree for K-FAC has one leaf per factor (A, B, each bias
    // diagonal), each clipped by its own norm: with a clip far below every
    // factor's gradient norm, one step of lr η moves every factor by exactly η·clip
    // in Frobenius norm (a clip shared by a layer's factors moves each by less).
    let t = tiny(7);
    let params = t.store.trainable();
    let g = t.grad();
    let zero = |v: &[Tensor<f64>]| -> tensor::Result<Vec<Tensor<f64>>> {
        Ok(v.iter().map(|x| x.mul_scalar(0.0)).collect())
    };
    let (eta, clip) = (0.1, 1e-6);
    let mut u = Preconditioner::identity(&params, Structure::Kfac).unwrap();
    let before = u.factor_tensors();
    u.learn(
        &t.shaped(&g),
        &zero,
        &InnerSolve {
            steps: 1,
            lr: eta,
            clip,
            ..InnerSolve::default()
        },
    )
    .unwrap();
    let after = u.factor_tensors();
    let mut factors = 0;
    for (b0, b1) in before.iter().zip(&after) {
        for (f0, f1) in b0.iter().zip(b1) {
            let moved = f1
                .sub(f0)
                .unwrap()
                .square()
                .sum_all()
                .item()
                .unwrap()
                .sqrt();
            assert!(
                (moved - eta * clip).abs() <= 1e-9 * eta * clip,
                "factor {factors}: moved {moved:e}, want {:e}",
                eta * clip
            );
            factors += 1;
        }
    }
    // Two layers of a weight (A and B) and a bias each.
    assert_eq!(factors, 6);
}

/// The index of the block of `layer`'s first parameter.
fn start_block(params: &[nn::Param<f64>], layer: &[nn::Param<f64>]) -> usize {
    params
        .iter()
        .position(|p| p.name() == layer[0].name())
        .expect("a parameter of the model")
}

#[test]
fn a_conv_kernel_gets_a_kfac_block_in_its_matrix_layout() {
    let store = ParamStore::<f64>::new();
    let mut rng = Rng::new(6);
    let conv = nn::Conv2d::new(
        &store.root().sub("conv"),
        (2, 3),
        3,
        tensor::Conv2dSpec::default(),
        true,
        &mut rng,
    )
    .unwrap();
    let params = store.trainable();
    let u = Preconditioner::identity(&params, Structure::Kfac).unwrap();
    let factors = u.factor_tensors();
    // Kernel [3, 2, 3, 3]: A is 3×3 (cout), B is 18×18 (cin·kh·kw); the bias is
    // diagonal.
    assert_eq!(factors[0][0].shape(), &[3, 3]);
    assert_eq!(factors[0][1].shape(), &[18, 18]);
    assert_eq!(factors[1][0].shape(), &[3]);
    // U(X) = A X Bᵀ on the kernel as a 3 × 18 matrix, against a hand product.
    let a = Tensor::<f64>::rand_normal(&[3, 3], 0.0, 1.0, &mut rng).unwrap();
    let b = Tensor::<f64>::rand_normal(&[18, 18], 0.0, 1.0, &mut rng).unwrap();
    let mut fitted = u.clone();
    let x = Tensor::<f64>::rand_normal(&[1, 2, 5, 5], 0.0, 1.0, &mut rng).unwrap();
    let out = || conv.forward(&Var::constant(x.clone()))?.sum_all();
    let grads = autograd::backward(&out().unwrap()).unwrap();
    let g = nn::ParamGrads::collect(&params, &grads).into_tensors();
    let zero = |v: &[Tensor<f64>]| -> tensor::Result<Vec<Tensor<f64>>> {
        Ok(v.iter().map(|x| x.mul_scalar(0.0)).collect())
    };
    fitted
        .learn(
            &g,
            &zero,
            &InnerSolve {
                steps: 3,
                lr: 0.01,
                clip: 1e9,
                ..InnerSolve::default()
            },
        )
        .unwrap();
    assert_eq!(fitted.factor_tensors()[0][1].shape(), &[18, 18]);
    let set = u
        .with_factor_tensors(vec![
            vec![a.clone(), b.clone()],
            vec![Tensor::ones(&[3]).unwrap()],
        ])
        .unwrap();
    assert!(u.with_factor_tensors(vec![vec![a.clone()]]).is_err());
    let applied = set.apply(&g).unwrap();
    let want = a
        .matmul(&g[0].reshape(&[3, 18]).unwrap())
        .unwrap()
        .matmul(&b.t().unwrap())
        .unwrap()
        .reshape(&[3, 2, 3, 3])
        .unwrap();
    let (x1, x2) = (applied[0].to_vec(), want.to_vec());
    assert!(x1.iter().zip(&x2).all(|(p, q)| (p - q).abs() <= 1e-12));
}

#[test]
fn a_learned_u_reaches_the_inverse_curvature_and_sets_the_hovering_envelope() {
    // L(θ) = ½ Σ λ̄_k θ_k² on three eigendirections. Newton refreshes with the EMA
    // (not U set by hand) learn U → H̄⁻¹; then U-norm LLQR+SAM started along each
    // eigendirection settles in a 2-cycle of amplitude ηUλ̄ρ√U/(2 − ηUλ̄), which for
    // U = 1/λ̄ is ηρλ̄^(−1/2)/(2 − η): slope −½ in λ̄. SAM on the same quadratic has
    // ηλ̄ρ/(2 − ηλ̄), which grows with λ̄ here, where the local curvature is the
    // average one (with the local curvature held fixed, the 1-D test of
    // `llqr_sam.rs` shows SAM's envelope does not depend on λ̄).
    let lam = [1.0, 0.25, 0.0625];
    let quadratic = |theta: &Var<f64>| {
        let l = Var::constant(Tensor::from_vec(lam.to_vec(), &[3]).unwrap());
        theta.square()?.mul(&l)?.sum_all()?.mul_scalar(0.5)
    };
    let store = ParamStore::<f64>::new();
    // At θ_k = λ̄_k^(−3/2), J's curvature in every d_k is 1, so one lr suits all.
    let start: Vec<f64> = lam.iter().map(|l: &f64| l.powf(-1.5)).collect();
    let theta = store
        .root()
        .param("theta", Tensor::from_vec(start, &[3]).unwrap())
        .unwrap();
    let mut learner = LlqrSam::new(
        store.trainable(),
        LlqrConfig {
            geometry: Geometry::Newton,
            ema: 0.9,
            refresh_every: 1,
            rho: 0.0,
            inner: InnerSolve {
                steps: 10,
                lr: 0.5,
                momentum: 0.0,
                clip: 1e9,
                damping: 0.0,
            },
            ..LlqrConfig::default()
        },
    )
    .unwrap();
    for _ in 0..150 {
        learner.refresh_newton(&|| quadratic(&theta.var())).unwrap();
    }
    let u = flat(&learner.preconditioner().factor_tensors().concat());
    for k in 0..3 {
        assert!(
            (u[k] * lam[k] - 1.0).abs() < 1e-4,
            "U_{k} = {} for λ̄ = {}",
            u[k],
            lam[k]
        );
    }
    let (eta, rho, x0) = (0.1, 0.01, 0.5);
    let amplitude = |k: usize, sam: bool| -> f64 {
        let s = ParamStore::<f64>::new();
        let mut init = vec![0.0; 3];
        init[k] = x0;
        let th = s
            .root()
            .param("theta", Tensor::from_vec(init, &[3]).unwrap())
            .unwrap();
        let loss = || quadratic(&th.var());
        let mut path = Vec::new();
        if sam {
            let sgd = optim::Sgd::new(s.trainable(), optim::SgdConfig::new(eta)).unwrap();
            let mut opt = optim::Sam::new(Box::new(sgd), rho, optim::SamVariant::Sam).unwrap();
            for _ in 0..4000 {
                opt.step_closure(&loss).unwrap();
                path.push(th.value().to_vec()[k]);
            }
        } else {
            let mut opt = LlqrSam::new(
                s.trainable(),
                LlqrConfig {
                    lr: eta,
                    momentum: 0.0,
                    rho,
                    norm: PerturbationNorm::Matrix,
                    refresh_every: usize::MAX,
                    ..LlqrConfig::default()
                },
            )
            .unwrap();
            opt.set_preconditioner(learner.preconditioner().clone());
            for _ in 0..4000 {
                opt.step_closure(&loss).unwrap();
                path.push(th.value().to_vec()[k]);
            }
        }
        path[path.len() - 200..]
            .iter()
            .fold(0.0f64, |m, v| m.max(v.abs()))
    };
    let mut u_amp = Vec::new();
    let mut sam_amp = Vec::new();
    for k in 0..3 {
        let a = amplitude(k, false);
        let kappa = eta * u[k] * lam[k];
        let want = kappa * rho * u[k].sqrt() / (2.0 - kappa);
        // The 1e-12 under the perturbation's square root shifts the cycle by about
        // 1e-12/(2gᵀUg) ≈ 2e-6 at the smallest amplitude.
        assert!(
            (a - want).abs() <= 1e-4 * want,
            "U-norm, direction {k}: {a} vs {want}"
        );
        u_amp.push(a);
        let a = amplitude(k, true);
        let kappa = eta * lam[k];
        let want = kappa * rho / (2.0 - kappa);
        assert!(
            (a - want).abs() <= 1e-4 * want,
            "SAM, direction {k}: {a} vs {want}"
        );
        sam_amp.push(a);
    }
    let slope = |amp: &[f64], i: usize, j: usize| (amp[i] / amp[j]).ln() / (lam[i] / lam[j]).ln();
    assert!(
        (slope(&u_amp, 0, 2) + 0.5).abs() < 1e-3,
        "U-norm slope {}",
        slope(&u_amp, 0, 2)
    );
    assert!(
        slope(&sam_amp, 0, 2) > 0.9,
        "SAM slope {}",
        slope(&sam_amp, 0, 2)
    );
}

/// A refresh whose inner objective is not finite (here a term 10²⁰⁰·‖W₁‖² in a
/// finite loss: its gradient is finite, but gᵀUg overflows and J is −∞ + ∞) is
/// an error naming the parameter, leaves U as it was and keeps the refresh due;
/// the sanitisation inside the inner solve would otherwise have turned it into a
/// silent no-op recorded as done.
#[test]
fn a_non_finite_refresh_is_an_error_and_stays_due() {
    let t = tiny(5);
    let mut opt = LlqrSam::new(
        t.store.trainable(),
        LlqrConfig {
            geometry: Geometry::Newton,
            ..LlqrConfig::default()
        },
    )
    .unwrap();
    let before = flat(&opt.preconditioner().factor_tensors().concat());
    assert!(opt.refresh_due());
    let w1 = t.mlp.layers()[1].weight.var();
    let ce = || nn::loss::cross_entropy(&t.logits()?, &t.y, 0.0);
    let steep = || ce()?.add(&w1.square()?.sum_all()?.mul_scalar(1e200)?);
    let e = opt.refresh_newton(&steep).unwrap_err().to_string();
    assert!(
        e.contains("inner objective is NaN")
            && e.contains("parameter '1.weight'")
            && e.contains("stays due"),
        "{e}"
    );
    assert!(opt.refresh_due());
    let after = flat(&opt.preconditioner().factor_tensors().concat());
    assert_eq!(
        before.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        after.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    );
    // The same optimiser refreshes normally on a finite problem.
    opt.refresh_newton(&ce).unwrap();
    assert!(!opt.refresh_due());
}
