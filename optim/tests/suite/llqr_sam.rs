//! LLQR and SAM: the exact LQR step against dense linear algebra, the learned
//! preconditioner against the quadratic model's minimum, monotone decrease of the
//! structured fits, the two-scale hovering amplitudes, the pothole escape, and the
//! SAM/F-SAM updates by hand.

use autograd::Var;
use nn::{loss, Activation, Mlp, Module, ParamStore};
use optim::llqr::{
    dense_curvature, exact_lqr_step, fisher_vector_product, hessian_vector_product, BatchScale,
    InnerSolve, LlqrConfig, LlqrSam, PerturbationNorm, Preconditioner, Structure,
};
use optim::{Optimizer, Sam, SamVariant, Sgd, SgdConfig};
use tensor::{Rng, Tensor};

struct Tiny {
    store: ParamStore<f64>,
    mlp: Mlp<f64>,
    x: Tensor<f64>,
    y: Vec<usize>,
}

fn tiny(seed: u64) -> Tiny {
    let store = ParamStore::new();
    let mut rng = Rng::new(seed);
    let mlp = Mlp::new(&store.root(), &[3, 4, 3], Activation::Tanh, &mut rng).unwrap();
    let x = Tensor::rand_normal(&[5, 3], 0.0, 1.0, &mut rng).unwrap();
    Tiny {
        store,
        mlp,
        x,
        y: vec![0, 2, 1, 1, 0],
    }
}

fn flat(ts: &[Tensor<f64>]) -> Vec<f64> {
    ts.iter().flat_map(|t| t.to_vec()).collect()
}

impl Tiny {
    fn logits(&self) -> tensor::Result<Var<f64>> {
        self.mlp.forward(&Var::constant(self.x.clone()))
    }
    fn loss(&self) -> tensor::Result<Var<f64>> {
        loss::cross_entropy(&self.logits()?, &self.y, 0.0)
    }
    fn grad(&self) -> Vec<Tensor<f64>> {
        let g = autograd::backward(&self.loss().unwrap()).unwrap();
        nn::ParamGrads::collect(&self.store.trainable(), &g).into_tensors()
    }
    fn fisher(&self) -> Tensor<f64> {
        let p = self.store.trainable();
        dense_curvature(&p, &|v: &[Tensor<f64>]| {
            fisher_vector_product(&p, &self.logits()?, v, BatchScale::Mean)
        })
        .unwrap()
    }
}

/// A bias-less layer is an error naming it, not a panic.
#[test]
fn the_exact_lqr_step_names_a_layer_without_bias() {
    let mut t = tiny(0);
    t.mlp.layers_mut()[1].bias = None;
    let e = exact_lqr_step(&t.mlp, &t.x, &t.y, 0.05)
        .unwrap_err()
        .to_string();
    assert!(e.contains("layer 1 has no bias"), "{e}");
}

#[test]
fn the_exact_lqr_step_is_the_damped_gauss_newton_step() {
    for seed in 0..3 {
        let t = tiny(seed);
        let damping = 0.05;
        let step = flat(&exact_lqr_step(&t.mlp, &t.x, &t.y, damping).unwrap());
        let g = flat(&t.grad());
        let n = g.len();
        let a = t
            .fisher()
            .add(&Tensor::eye(n).unwrap().mul_scalar(damping))
            .unwrap();
        let dense = a
            .solve_spd(&Tensor::from_vec(g, &[n, 1]).unwrap())
            .unwrap()
            .neg()
            .to_vec();
        let err: f64 = step
            .iter()
            .zip(&dense)
            .map(|(a, b)| (a - b).powi(2))
            .sum::<f64>()
            .sqrt();
        let size: f64 = dense.iter().map(|b| b * b).sum::<f64>().sqrt();
        assert!(
            err <= 1e-9 * size,
            "seed {seed}: Riccati vs dense differ by {err:e} (size {size:e})"
        );
    }
}

#[test]
fn hessian_vector_products_match_finite_differences_of_the_gradient() {
    let t = tiny(4);
    let p = t.store.trainable();
    let mut rng = Rng::new(9);
    let v: Vec<Tensor<f64>> = p
        .iter()
        .map(|q| Tensor::rand_normal(&q.shape(), 0.0, 1.0, &mut rng).unwrap())
        .collect();
    let hv = flat(&hessian_vector_product(&p, &t.loss().unwrap(), &v).unwrap());
    let eps = 1e-6;
    let base: Vec<Tensor<f64>> = p.iter().map(|q| q.value()).collect();
    let at = |s: f64| {
        for ((q, b), d) in p.iter().zip(&base).zip(&v) {
            q.set(b.add(&d.mul_scalar(s)).unwrap()).unwrap();
        }
        flat(&t.grad())
    };
    let (gp, gm) = (at(eps), at(-eps));
    at(0.0);
    for (k, h) in hv.iter().enumerate() {
        let fd = (gp[k] - gm[k]) / (2.0 * eps);
        assert!(
            (h - fd).abs() <= 1e-5 + 1e-4 * fd.abs(),
            "entry {k}: {h} vs {fd}"
        );
    }
}

fn gvp_of(t: &Tiny) -> impl Fn(&[Tensor<f64>]) -> tensor::Result<Vec<Tensor<f64>>> + '_ {
    move |v: &[Tensor<f64>]| {
        let p = t.store.trainable();
        fisher_vector_product(&p, &t.logits()?, v, BatchScale::Mean)
    }
}

#[test]
fn a_learned_dense_preconditioner_reaches_the_minimum_of_the_quadratic_model() {
    let t = tiny(5);
    let damping = 0.1;
    let g = t.grad();
    let gf = flat(&g);
    let n = gf.len();
    let a = t
        .fisher()
        .add(&Tensor::eye(n).unwrap().mul_scalar(damping))
        .unwrap();
    let sol = a
        .solve_spd(&Tensor::from_vec(gf.clone(), &[n, 1]).unwrap())
        .unwrap()
        .to_vec();
    let j_min = -0.5 * gf.iter().zip(&sol).map(|(x, y)| x * y).sum::<f64>();
    let lmax = a.eigh().unwrap().0.max_all().unwrap();
    let g2: f64 = gf.iter().map(|x| x * x).sum();
    let mut u = Preconditioner::identity(&t.store.trainable(), Structure::Dense).unwrap();
    let cfg = InnerSolve {
        steps: 400,
        lr: 0.5 / (lmax * g2),
        momentum: 0.9,
        clip: 1e6,
        damping,
    };
    let trace = u.learn(&g, &gvp_of(&t), &cfg).unwrap().objective;
    let j = *trace.last().unwrap();
    assert!(j < trace[0], "J did not decrease: {} -> {j}", trace[0]);
    assert!(
        (j - j_min).abs() <= 1e-6 * j_min.abs(),
        "J(U) = {j:e}, minimum {j_min:e}"
    );
}

#[test]
fn diagonal_and_kfac_fits_decrease_the_objective_monotonically() {
    let t = tiny(6);
    let g = t.grad();
    for structure in [Structure::Diagonal, Structure::Kfac] {
        let mut u = Preconditioner::identity(&t.store.trainable(), structure).unwrap();
        let cfg = InnerSolve {
            steps: 60,
            lr: 0.5,
            momentum: 0.0,
            clip: 1e6,
            damping: 0.01,
        };
        let trace = u.learn(&g, &gvp_of(&t), &cfg).unwrap().objective;
        assert!(
            trace.windows(2).all(|w| w[1] <= w[0] + 1e-15),
            "{structure:?}: {trace:?}"
        );
        assert!(trace.last().unwrap() < &trace[0]);
    }
}

/// A one-parameter problem for the scalar toys: parameter x, loss `f(x)`.
fn scalar_run(
    f: &dyn Fn(&Var<f64>) -> tensor::Result<Var<f64>>,
    x0: f64,
    u: f64,
    rho: f64,
    norm: PerturbationNorm,
    lr: f64,
    steps: usize,
) -> Vec<f64> {
    let store = ParamStore::<f64>::new();
    let x = store
        .root()
        .param("x", Tensor::from_vec(vec![x0], &[1]).unwrap())
        .unwrap();
    let cfg = LlqrConfig {
        lr,
        momentum: 0.0,
        rho,
        norm,
        refresh_every: usize::MAX,
        ..LlqrConfig::default()
    };
    let mut opt = LlqrSam::new(store.trainable(), cfg).unwrap();
    opt.set_preconditioner(Preconditioner::diagonal(vec![Tensor::from_vec(
        vec![u],
        &[1],
    )
    .unwrap()]));
    let mut path = Vec::with_capacity(steps);
    for _ in 0..steps {
        opt.step_closure(&|| f(&x.var())?.sum_all()).unwrap();
        path.push(x.value().to_vec()[0]);
    }
    path
}

#[test]
fn two_scale_hovering_amplitudes_match_the_closed_forms() {
    let eta = 0.1;
    for &(lam, lam_bar) in &[(1.0, 1.0), (1.0, 0.25), (1.0, 0.1), (4.0, 1.0), (2.0, 0.5)] {
        for &rho in &[0.01, 0.05, 0.2] {
            let quad = move |x: &Var<f64>| x.square()?.mul_scalar(0.5 * lam);
            let amplitude = |path: &[f64]| {
                path[path.len() - 200..]
                    .iter()
                    .fold(0.0f64, |m, v| m.max(v.abs()))
            };
            // SAM: U = 1.
            let k = eta * lam;
            let sam = amplitude(&scalar_run(
                &quad,
                1.0,
                1.0,
                rho,
                PerturbationNorm::Euclidean,
                eta,
                4000,
            ));
            let want = k * rho / (2.0 - k);
            assert!(
                (sam - want).abs() <= 1e-3 * want,
                "SAM λ {lam} ρ {rho}: {sam} vs {want}"
            );
            // LLQR+SAM with U = 1/λ̄ and the matrix norm.
            let kp = eta * lam / lam_bar;
            let usam = amplitude(&scalar_run(
                &quad,
                1.0,
                1.0 / lam_bar,
                rho,
                PerturbationNorm::Matrix,
                eta,
                4000,
            ));
            let want = kp * rho / lam_bar.sqrt() / (2.0 - kp);
            assert!(
                (usam - want).abs() <= 1e-3 * want,
                "U-SAM λ {lam} λ̄ {lam_bar} ρ {rho}: {usam} vs {want}"
            );
        }
    }
}

#[test]
fn only_the_matrix_norm_escapes_the_pothole() {
    let (lam_bar, c, w, d) = (0.1, 1.0, 0.05, 0.025);
    let loss = move |x: &Var<f64>| -> tensor::Result<Var<f64>> {
        let bowl = x.square()?.mul_scalar(0.5 * lam_bar)?;
        let dip = x
            .sub_scalar(c)?
            .square()?
            .mul_scalar(-1.0 / (2.0 * w * w))?
            .exp()?
            .mul_scalar(d)?;
        bowl.sub(&dip)
    };
    let escaped = |u: f64, rho: f64, norm: PerturbationNorm| {
        let path = scalar_run(&loss, c + 1e-3, u, rho, norm, 0.01, 20_000);
        (path.last().unwrap() - c).abs() > 3.0 * w
    };
    for rho in [0.01, 0.02, 0.03, 0.05] {
        assert!(
            !escaped(1.0, 0.0, PerturbationNorm::Euclidean),
            "GD escaped"
        );
        assert!(
            !escaped(1.0, rho, PerturbationNorm::Euclidean),
            "SAM escaped at ρ {rho}"
        );
        assert!(
            !escaped(1.0 / lam_bar, 0.0, PerturbationNorm::Euclidean),
            "LLQR alone escaped"
        );
        assert!(
            !escaped(1.0 / lam_bar, rho, PerturbationNorm::Euclidean),
            "Euclidean LLQR+SAM escaped at ρ {rho}"
        );
    }
    // The U-norm probe reaches ρ/√λ̄: 0.095 at ρ = 0.03 stays trapped, 0.158 ≈ 3w escapes.
    assert!(!escaped(1.0 / lam_bar, 0.03, PerturbationNorm::Matrix));
    assert!(escaped(1.0 / lam_bar, 0.05, PerturbationNorm::Matrix));
}

#[test]
fn sam_and_fsam_steps_by_hand() {
    // L = ½‖Ax‖² on a 2-vector with A = diag(1, 3): ∇L = A²x.
    let a2 = Tensor::from_vec(vec![1.0, 9.0], &[2]).unwrap();
    for variant in [
        SamVariant::Sam,
        SamVariant::FriendlySam {
            sigma: 1.0,
            decay: 0.9,
        },
    ] {
        let store = ParamStore::<f64>::new();
        let x = store
            .root()
            .param("x", Tensor::from_vec(vec![1.0, -2.0], &[2]).unwrap())
            .unwrap();
        let base = Sgd::new(store.trainable(), SgdConfig::new(0.1)).unwrap();
        let mut sam = Sam::new(Box::new(base), 0.3, variant).unwrap();
        let a2c = a2.clone();
        let f = || {
            x.var()
                .square()?
                .mul(&Var::constant(a2c.clone()))?
                .sum_all()?
                .mul_scalar(0.5)
        };
        let mut xs = vec![1.0, -2.0];
        let mut m: Option<Vec<f64>> = None;
        for _ in 0..3 {
            sam.step_closure(&f).unwrap();
            let g: Vec<f64> = vec![xs[0] * 1.0, xs[1] * 9.0];
            let dir: Vec<f64> = match (&variant, &m) {
                (SamVariant::FriendlySam { sigma, .. }, Some(m)) => {
                    g.iter().zip(m).map(|(g, m)| g - sigma * m).collect()
                }
                _ => g.clone(),
            };
            let nrm = (dir[0] * dir[0] + dir[1] * dir[1]).sqrt() + 1e-12;
            let xp: Vec<f64> = xs
                .iter()
                .zip(&dir)
                .map(|(x, d)| x + 0.3 * d / nrm)
                .collect();
            let gp = [xp[0], 9.0 * xp[1]];
            xs = vec![xs[0] - 0.1 * gp[0], xs[1] - 0.1 * gp[1]];
            if let SamVariant::FriendlySam { decay, .. } = variant {
                m = Some(match m {
                    None => g.clone(),
                    Some(m) => m
                        .iter()
                        .zip(&g)
                        .map(|(m, g)| decay * m + (1.0 - decay) * g)
                        .collect(),
                });
            }
            let got = x.value().to_vec();
            assert!(
                (got[0] - xs[0]).abs() < 1e-12 && (got[1] - xs[1]).abs() < 1e-12,
                "{variant:?}: {got:?} vs {xs:?}"
            );
        }
    }
    let store = ParamStore::<f64>::new();
    store
        .root()
        .param("x", Tensor::zeros(&[1]).unwrap())
        .unwrap();
    let base = Sgd::new(store.trainable(), SgdConfig::new(0.1)).unwrap();
    assert!(Sam::new(Box::new(base), f64::NAN, SamVariant::Sam).is_err());
    let cfg = LlqrConfig {
        refresh_every: 0,
        ..LlqrConfig::default()
    };
    assert!(LlqrSam::new(store.trainable(), cfg).is_err());
    let cfg = LlqrConfig {
        rho: -1.0,
        ..LlqrConfig::default()
    };
    assert!(LlqrSam::new(store.trainable(), cfg).is_err());
}
