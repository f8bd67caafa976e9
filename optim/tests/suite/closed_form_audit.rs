//! The closed-form head as an auditor would check it: solves in f64 whatever the
//! model's dtype, the path each solve takes (Cholesky, jitter, QR) and what it
//! returns, envelope-theorem gradients that can fail (a mismatched objective against
//! finite differences; both solve forms), the trainer's refit against the mean
//! objective it claims to minimise, the first refit before the first backbone step,
//! and a rollback after the optimiser has stepped.

use autograd::{backward, Var};
use nn::{Activation, Mlp, Module, ParamGrads, ParamStore};
use optim::closed_form::{
    proximal, proximal_solution, proximal_var, ClosedFormHead, ClosedFormTrainer, HeadRule, Order,
    SolveForm, SolvePath,
};
use optim::{Optimizer, Sgd, SgdConfig};
use tensor::{Rng, Tensor};

fn max_abs(v: &[f64]) -> f64 {
    v.iter().fold(0.0, |m, x| m.max(x.abs()))
}

#[test]
fn an_f32_head_is_solved_in_f64() {
    // Eight nearly collinear columns (a shared column plus 3e-3 of noise each):
    // cond(ΦᵀΦ) ≈ 1e6, so an f32 Cholesky would lose about 6 of f32's 7 digits; cast
    // up, the answer is the f64 one rounded once. (Column scalings would not do: a
    // Cholesky is accurate under diagonal scaling.)
    let mut rng = Rng::new(3);
    let shared = Tensor::<f64>::rand_normal(&[60, 1], 0.0, 1.0, &mut rng).unwrap();
    let noise = Tensor::<f64>::rand_normal(&[60, 8], 0.0, 3e-3, &mut rng).unwrap();
    let phi = noise.add(&shared).unwrap().cast::<f32>().cast::<f64>();
    let y = Tensor::<f64>::rand_normal(&[60, 2], 0.0, 1.0, &mut rng)
        .unwrap()
        .cast::<f32>()
        .cast::<f64>();
    let w0 = Tensor::<f64>::zeros(&[2, 8]).unwrap();
    // The reference: least squares on [Φ; √λ I] Wᵀ ≈ [Y; 0] by QR in f64, with no
    // Gram matrix at all.
    let lambda: f64 = 1e-3;
    let stacked = Tensor::cat(
        &[&phi, &Tensor::eye(8).unwrap().mul_scalar(lambda.sqrt())],
        0,
    )
    .unwrap();
    let target = Tensor::cat(&[&y, &Tensor::zeros(&[8, 2]).unwrap()], 0).unwrap();
    let exact = stacked
        .lstsq(&target)
        .unwrap()
        .t()
        .unwrap()
        .contiguous()
        .to_vec();
    let single = proximal(
        &phi.cast::<f32>(),
        &y.cast::<f32>(),
        &w0.cast::<f32>(),
        lambda,
        SolveForm::Primal,
    )
    .unwrap()
    .cast::<f64>()
    .to_vec();
    for (a, b) in single.iter().zip(&exact) {
        // One f32 rounding of the f64 answer (plus the f64 solves' cond·ε ≈ 1e-10).
        assert!((a - b).abs() <= 1e-7 * b.abs(), "{a} vs {b}");
    }
}

#[test]
fn each_solve_path_is_taken_where_it_should_be_and_returns_the_solution() {
    let mut rng = Rng::new(4);
    let y = Tensor::<f64>::rand_normal(&[40, 2], 0.0, 1.0, &mut rng).unwrap();
    let good = Tensor::<f64>::rand_normal(&[40, 5], 0.0, 1.0, &mut rng).unwrap();
    let w0 = Tensor::<f64>::zeros(&[2, 5]).unwrap();
    let s = proximal_solution(&good, &y, &w0, 0.1, SolveForm::Primal).unwrap();
    assert_eq!(s.path, SolvePath::Cholesky);
    // A repeated column and λ far below the pivot test's n·ε·max Aᵢᵢ: the jitter
    // (1e-10 × mean diagonal) rescues the factorisation.
    let twice = Tensor::cat(&[&good, &good.narrow(1, 0, 1).unwrap()], 1).unwrap();
    let w1 = Tensor::<f64>::zeros(&[2, 6]).unwrap();
    let s = proximal_solution(&twice, &y, &w1, 1e-18, SolveForm::Primal).unwrap();
    assert!(
        matches!(s.path, SolvePath::Jittered(j) if j > 0.0),
        "{:?}",
        s.path
    );
    assert!(s.w.all_finite() && max_abs(&s.w.to_vec()) < 1e3);
    // A head so wide, with one column so large, that the jitter cannot pass the
    // relative test either (it passes only while max/mean Aᵢᵢ < 1e-10/(n·ε)): least
    // squares by QR on the stacked system, which must satisfy the normal equations.
    let (b, d) = (1100, 1000);
    let mut x = Tensor::<f64>::rand_normal(&[b, d], 0.0, 1.0, &mut rng)
        .unwrap()
        .to_vec();
    for r in 0..b {
        x[r * d] *= 1e10;
        x[r * d + 2] = x[r * d + 1];
    }
    let phi = Tensor::from_vec(x, &[b, d]).unwrap();
    let yw = Tensor::<f64>::rand_normal(&[b, 1], 0.0, 1.0, &mut rng).unwrap();
    let lambda = 1e9;
    let s = proximal_solution(
        &phi,
        &yw,
        &Tensor::zeros(&[1, d]).unwrap(),
        lambda,
        SolveForm::Primal,
    )
    .unwrap();
    assert_eq!(s.path, SolvePath::Qr);
    let gram_w = phi
        .t()
        .unwrap()
        .matmul(&phi.matmul(&s.w.t().unwrap()).unwrap())
        .unwrap();
    let lhs = gram_w
        .add(&s.w.t().unwrap().mul_scalar(lambda))
        .unwrap()
        .to_vec();
    let rhs = phi.t().unwrap().matmul(&yw).unwrap().to_vec();
    let residual: Vec<f64> = lhs.iter().zip(&rhs).map(|(a, b)| a - b).collect();
    assert!(
        max_abs(&residual) <= 1e-6 * max_abs(&rhs),
        "{}",
        max_abs(&residual)
    );
}

/// A tanh MLP 3-h-h with its data, in f64.
struct Net {
    store: ParamStore<f64>,
    mlp: Mlp<f64>,
}

fn net(hidden: usize, seed: u64) -> Net {
    let store = ParamStore::new();
    let mlp = Mlp::new(
        &store.root(),
        &[3, hidden, hidden],
        Activation::Tanh,
        &mut Rng::new(seed),
    )
    .unwrap();
    Net { store, mlp }
}

impl Net {
    fn features(&self, x: &Tensor<f64>) -> Var<f64> {
        self.mlp.forward(&Var::constant(x.clone())).unwrap()
    }
    fn grad(&self, loss: &Var<f64>) -> Vec<f64> {
        let g = ParamGrads::collect(&self.store.trainable(), &backward(loss).unwrap());
        g.tensors().iter().flat_map(|t| t.to_vec()).collect()
    }
    /// `f` at θ + h·e_i for parameter entry `i` (flat index), θ restored after.
    fn at_shifted(&self, i: usize, h: f64, f: &dyn Fn() -> f64) -> f64 {
        let params = self.store.trainable();
        let mut k = i;
        for p in &params {
            let n = p.value().numel();
            if k < n {
                let saved = p.value();
                let mut v = saved.to_vec();
                v[k] += h;
                p.set(Tensor::from_vec(v, saved.shape()).unwrap()).unwrap();
                let out = f();
                p.set(saved).unwrap();
                return out;
            }
            k -= n;
        }
        panic!("entry {i} out of range")
    }
}

/// Σ‖Y − ΦWᵀ‖².
fn fit(phi: &Var<f64>, y: &Tensor<f64>, w: &Var<f64>) -> Var<f64> {
    Var::constant(y.clone())
        .sub(&phi.matmul(&w.t().unwrap()).unwrap())
        .unwrap()
        .square()
        .unwrap()
        .sum_all()
        .unwrap()
}

#[test]
fn through_the_solve_a_held_out_loss_has_its_own_gradient_and_finite_differences_agree() {
    let n = net(6, 11);
    let mut rng = Rng::new(12);
    let (xa, xb) = (
        Tensor::<f64>::rand_normal(&[20, 3], 0.0, 1.0, &mut rng).unwrap(),
        Tensor::<f64>::rand_normal(&[15, 3], 0.0, 1.0, &mut rng).unwrap(),
    );
    let (ya, yb) = (
        Tensor::<f64>::rand_normal(&[20, 2], 0.0, 1.0, &mut rng).unwrap(),
        Tensor::<f64>::rand_normal(&[15, 2], 0.0, 1.0, &mut rng).unwrap(),
    );
    let w_prev = Tensor::<f64>::rand_normal(&[2, 6], 0.0, 0.5, &mut rng).unwrap();
    let lambda = 0.7;
    // L(θ) = Σ‖Y_B − Φ_B(θ) W*(θ)ᵀ‖², W* fitted on batch A: not W*'s own objective,
    // so the solve's dependence on θ matters.
    let loss_through = || {
        let w = proximal_var(
            &n.features(&xa),
            &Var::constant(ya.clone()),
            &w_prev,
            lambda,
        )
        .unwrap();
        fit(&n.features(&xb), &yb, &w)
    };
    let through = n.grad(&loss_through());
    let w_star = proximal(
        n.features(&xa).value(),
        &ya,
        &w_prev,
        lambda,
        SolveForm::Auto,
    )
    .unwrap();
    let fixed = n.grad(&fit(&n.features(&xb), &yb, &Var::constant(w_star)));
    let diff: Vec<f64> = through.iter().zip(&fixed).map(|(a, b)| a - b).collect();
    assert!(
        max_abs(&diff) > 1e-3 * max_abs(&through),
        "the mismatched objective's gradients coincide"
    );
    let value = || loss_through().item().unwrap();
    let h = 1e-6;
    for i in [0, 7, 20, through.len() - 1] {
        let fd = (n.at_shifted(i, h, &value) - n.at_shifted(i, -h, &value)) / (2.0 * h);
        // Central differences at h = 1e-6 err by O(h²) plus rounding O(ε·L/h) ≈ 1e-9.
        assert!(
            (fd - through[i]).abs() <= 1e-6 * max_abs(&through),
            "{i}: {fd} vs {}",
            through[i]
        );
    }
}

#[test]
fn the_envelope_theorem_holds_in_both_solve_forms() {
    // b < d (the dual solve) and b > d (the primal one).
    for (batch, hidden) in [(5, 12), (30, 6)] {
        let n = net(hidden, 21);
        let mut rng = Rng::new(22);
        let x = Tensor::<f64>::rand_normal(&[batch, 3], 0.0, 1.0, &mut rng).unwrap();
        let y = Tensor::<f64>::rand_normal(&[batch, 2], 0.0, 1.0, &mut rng).unwrap();
        let w_prev = Tensor::<f64>::rand_normal(&[2, hidden], 0.0, 0.5, &mut rng).unwrap();
        let lambda = 0.3;
        let objective = |w: &Var<f64>| {
            let prox = w
                .sub(&Var::constant(w_prev.clone()))
                .unwrap()
                .square()
                .unwrap()
                .sum_all()
                .unwrap()
                .mul_scalar(lambda)
                .unwrap();
            fit(&n.features(&x), &y, w).add(&prox).unwrap()
        };
        let w_through =
            proximal_var(&n.features(&x), &Var::constant(y.clone()), &w_prev, lambda).unwrap();
        let through = n.grad(&objective(&w_through));
        let w_star =
            proximal(n.features(&x).value(), &y, &w_prev, lambda, SolveForm::Auto).unwrap();
        let fixed = n.grad(&objective(&Var::constant(w_star)));
        let diff: Vec<f64> = through.iter().zip(&fixed).map(|(a, b)| a - b).collect();
        assert!(
            max_abs(&diff) <= 1e-10 * max_abs(&fixed),
            "b {batch}, d {hidden}"
        );
    }
}

#[test]
fn the_head_minimises_the_mean_objective_it_claims_with_its_bias() {
    let mut rng = Rng::new(31);
    let (b, d, k, lambda) = (9, 4, 3, 0.25);
    let phi = Tensor::<f64>::rand_normal(&[b, d], 0.0, 1.0, &mut rng).unwrap();
    let y = Tensor::<f64>::rand_normal(&[b, k], 1.0, 1.0, &mut rng).unwrap();
    let mut head =
        ClosedFormHead::new(d, k, true, HeadRule::Proximal { lambda }, SolveForm::Auto).unwrap();
    head.refit(&phi, &y).unwrap();
    let w_prev = head.weight().clone();
    let phi2 = Tensor::<f64>::rand_normal(&[b, d], 0.0, 1.0, &mut rng).unwrap();
    head.refit(&phi2, &y).unwrap();
    // (1/b)Σ‖yᵢ − W[φᵢ; 1]‖² + λ‖W − W_prev‖², at W and along random directions.
    let ones = Tensor::<f64>::ones(&[b, 1]).unwrap();
    let aug = Tensor::cat(&[&phi2, &ones], 1).unwrap();
    let objective = |w: &Tensor<f64>| {
        let r = y.sub(&aug.matmul(&w.t().unwrap()).unwrap()).unwrap();
        let prox = w.sub(&w_prev).unwrap().square().sum_all().item().unwrap();
        r.square().sum_all().item().unwrap() / b as f64 + lambda * prox
    };
    let w = head.weight().clone();
    assert_eq!(w.shape(), &[k, d + 1]);
    let j = objective(&w);
    for _ in 0..20 {
        let dir = Tensor::<f64>::rand_normal(&[k, d + 1], 0.0, 1e-3, &mut rng).unwrap();
        // A minimiser: both sides rise, and symmetrically (no first-order term).
        let (up, down) = (
            objective(&w.add(&dir).unwrap()),
            objective(&w.sub(&dir).unwrap()),
        );
        assert!(up > j && down > j);
        assert!(
            (up - down).abs() <= 1e-9 * (up - j),
            "a first-order term: {up} {down} {j}"
        );
    }
    // A wrong feature count is an error, not a silent refit.
    let e = head
        .refit(&Tensor::zeros(&[b, d + 1]).unwrap(), &y)
        .unwrap_err()
        .to_string();
    assert!(e.contains("for a head over 4 features"), "{e}");
}

#[test]
fn the_first_backbone_step_sees_a_fitted_head() {
    let n = net(6, 41);
    let mut rng = Rng::new(42);
    let x = Tensor::<f64>::rand_normal(&[20, 3], 0.0, 1.0, &mut rng).unwrap();
    let y = Tensor::<f64>::rand_normal(&[20, 2], 0.0, 1.0, &mut rng).unwrap();
    let before: Vec<Tensor<f64>> = n.store.trainable().iter().map(|p| p.value()).collect();
    let mut tr = ClosedFormTrainer {
        head: ClosedFormHead::new(
            6,
            2,
            false,
            HeadRule::Proximal { lambda: 1.0 },
            SolveForm::Auto,
        )
        .unwrap(),
        optimizer: Box::new(Sgd::new(n.store.trainable(), SgdConfig::new(0.1)).unwrap()),
        order: Order::BackboneFirst,
        buffers: Vec::new(),
    };
    tr.step(|| Ok(n.features(&x)), &y).unwrap();
    let moved = n
        .store
        .trainable()
        .iter()
        .zip(&before)
        .any(|(p, b)| p.value().to_vec() != b.to_vec());
    assert!(
        moved,
        "the first backbone step did not move (W₀ = 0 gives a zero gradient)"
    );
    assert_eq!(tr.head.solve_counts().cholesky, 2);
}

#[test]
fn a_refit_failing_after_the_optimiser_step_restores_everything_bit_for_bit() {
    let make = || {
        let n = net(6, 51);
        let counter = n
            .store
            .root()
            .buffer("passes", Tensor::from_vec(vec![0.0], &[1]).unwrap())
            .unwrap();
        let tr = ClosedFormTrainer {
            head: ClosedFormHead::new(6, 2, false, HeadRule::Ridge { beta: 0.0 }, SolveForm::Auto)
                .unwrap(),
            optimizer: Box::new(
                Sgd::new(n.store.trainable(), SgdConfig::new(0.05).momentum(0.9)).unwrap(),
            ) as Box<dyn Optimizer<f64>>,
            order: Order::BackboneFirst,
            buffers: vec![counter.clone()],
        };
        (n, counter, tr)
    };
    let mut rng = Rng::new(52);
    let (x, y) = (
        Tensor::<f64>::rand_normal(&[20, 3], 0.0, 1.0, &mut rng).unwrap(),
        Tensor::<f64>::rand_normal(&[20, 2], 0.0, 1.0, &mut rng).unwrap(),
    );
    // Four samples for six features: the β = 0 refit after the step is singular.
    let (xs, ys) = (x.narrow(0, 0, 4).unwrap(), y.narrow(0, 0, 4).unwrap());
    let (a, a_count, mut ta) = make();
    let (b, b_count, mut tb) = make();
    // Each feature pass bumps the buffer, like BatchNorm's running statistics.
    let step = |n: &Net,
                c: &nn::Param<f64>,
                t: &mut ClosedFormTrainer<f64>,
                x: &Tensor<f64>,
                y: &Tensor<f64>| {
        t.step(
            || {
                c.set(c.value().add_scalar(1.0))?;
                n.mlp.forward(&Var::constant(x.clone()))
            },
            y,
        )
    };
    step(&a, &a_count, &mut ta, &x, &y).unwrap();
    step(&b, &b_count, &mut tb, &x, &y).unwrap();
    let e = step(&a, &a_count, &mut ta, &xs, &ys)
        .unwrap_err()
        .to_string();
    assert!(e.contains("rank"), "{e}");
    // After the failure, a makes the same next step as b, which never failed: its
    // parameters, buffer, momentum and head were all restored.
    step(&a, &a_count, &mut ta, &x, &y).unwrap();
    step(&b, &b_count, &mut tb, &x, &y).unwrap();
    let bits = |n: &Net| -> Vec<u64> {
        n.store
            .all()
            .iter()
            .flat_map(|p| p.value().to_vec())
            .map(f64::to_bits)
            .collect()
    };
    assert_eq!(bits(&a), bits(&b));
    let head_bits = |t: &ClosedFormTrainer<f64>| -> Vec<u64> {
        t.head
            .weight()
            .to_vec()
            .into_iter()
            .map(f64::to_bits)
            .collect()
    };
    assert_eq!(head_bits(&ta), head_bits(&tb));
}
