//! The closed-form last layer: the envelope theorem (with a negative control that
//! makes the test able to fail), optimality of the proximal solution, agreement of
//! the primal and dual forms, the limits in λ, and clear errors on bad input.

use autograd::{backward, Var};
use nn::{Activation, Mlp, Module, ParamGrads, ParamStore};
use optim::closed_form::{
    proximal, proximal_objective, proximal_var, ridge, ridge_var, ClosedFormHead,
    ClosedFormTrainer, HeadRule, Order, SolveForm,
};
use optim::{Sgd, SgdConfig};
use tensor::{Rng, Tensor};

struct Setup {
    store: ParamStore<f64>,
    mlp: Mlp<f64>,
    x: Var<f64>,
    y: Tensor<f64>,
}

fn setup(seed: u64) -> Setup {
    let store = ParamStore::new();
    let mut rng = Rng::new(seed);
    let mlp = Mlp::new(&store.root(), &[3, 8, 6], Activation::Tanh, &mut rng).unwrap();
    let x = Var::constant(Tensor::rand_normal(&[20, 3], 0.0, 1.0, &mut rng).unwrap());
    let y = Tensor::rand_normal(&[20, 2], 0.0, 1.0, &mut rng).unwrap();
    Setup { store, mlp, x, y }
}

/// Gradient of `loss` with respect to every backbone parameter, flattened.
fn grads(s: &Setup, loss: &Var<f64>) -> Vec<f64> {
    let g = ParamGrads::collect(&s.store.trainable(), &backward(loss).unwrap());
    g.tensors().iter().flat_map(|t| t.to_vec()).collect()
}

fn rel(a: &[f64], b: &[f64]) -> f64 {
    let d: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| (x - y).powi(2))
        .sum::<f64>()
        .sqrt();
    let n: f64 = b.iter().map(|y| y * y).sum::<f64>().sqrt();
    d / n
}

/// Σ‖Y − ΦWᵀ‖² + reg·‖W − anchor‖².
fn objective(
    phi: &Var<f64>,
    y: &Tensor<f64>,
    w: &Var<f64>,
    anchor: &Tensor<f64>,
    reg: f64,
) -> Var<f64> {
    let fit = Var::constant(y.clone())
        .sub(&phi.matmul(&w.t().unwrap()).unwrap())
        .unwrap()
        .square()
        .unwrap()
        .sum_all()
        .unwrap();
    let prox = w
        .sub(&Var::constant(anchor.clone()))
        .unwrap()
        .square()
        .unwrap()
        .sum_all()
        .unwrap()
        .mul_scalar(reg)
        .unwrap();
    fit.add(&prox).unwrap()
}

#[test]
fn envelope_theorem_for_ridge_and_proximal_with_a_negative_control() {
    for seed in 0..3 {
        let s = setup(seed);
        let zero = Tensor::<f64>::zeros(&[2, 6]).unwrap();
        let anchor =
            Tensor::<f64>::rand_normal(&[2, 6], 0.0, 1.0, &mut Rng::new(99 + seed)).unwrap();
        for (name, reg, w_prev) in [("ridge", 0.3, &zero), ("proximal", 2.0, &anchor)] {
            let phi = s.mlp.forward(&s.x).unwrap();
            // Through the differentiable solve.
            let w_through = if name == "ridge" {
                ridge_var(&phi, &Var::constant(s.y.clone()), reg).unwrap()
            } else {
                proximal_var(&phi, &Var::constant(s.y.clone()), w_prev, reg).unwrap()
            };
            let g_through = grads(&s, &objective(&phi, &s.y, &w_through, w_prev, reg));
            // With W* detached.
            let w_star = w_through.detach();
            let g_fixed = grads(&s, &objective(&phi, &s.y, &w_star, w_prev, reg));
            let r = rel(&g_through, &g_fixed);
            assert!(
                r < 1e-9,
                "{name} seed {seed}: relative gradient difference {r:e}"
            );
            // Stationarity: ∇_W at W* is zero.
            let w_leaf = Var::leaf(w_star.value().clone());
            let gw = backward(&objective(&phi.detach(), &s.y, &w_leaf, w_prev, reg)).unwrap();
            let gw = gw.get(&w_leaf).unwrap().abs().max_all().unwrap();
            let scale = phi
                .value()
                .t()
                .unwrap()
                .matmul(&s.y)
                .unwrap()
                .abs()
                .max_all()
                .unwrap();
            assert!(gw < 1e-10 * scale, "{name}: ∇_W L(W*) = {gw:e}");
            // Negative control: a stale W (optimal for another batch) breaks the equality.
            let other =
                Tensor::<f64>::rand_normal(&[20, 2], 0.0, 1.0, &mut Rng::new(500 + seed)).unwrap();
            let stale = if name == "ridge" {
                ridge(phi.value(), &other, reg, SolveForm::Primal).unwrap()
            } else {
                proximal(phi.value(), &other, w_prev, reg, SolveForm::Primal).unwrap()
            };
            let g_stale = grads(
                &s,
                &objective(&phi, &s.y, &Var::constant(stale), w_prev, reg),
            );
            assert!(
                rel(&g_stale, &g_through) > 1e-3,
                "{name}: the stale W should not satisfy the envelope equality"
            );
        }
    }
}

#[test]
fn the_proximal_solution_minimises_its_objective_in_both_forms() {
    let mut rng = Rng::new(7);
    for (b, d) in [(5usize, 12usize), (30, 6), (8, 8)] {
        let phi = Tensor::<f64>::rand_normal(&[b, d], 0.0, 1.0, &mut rng).unwrap();
        let y = Tensor::<f64>::rand_normal(&[b, 3], 0.0, 1.0, &mut rng).unwrap();
        let w_t = Tensor::<f64>::rand_normal(&[3, d], 0.0, 1.0, &mut rng).unwrap();
        let lam = 0.7;
        let primal = proximal(&phi, &y, &w_t, lam, SolveForm::Primal).unwrap();
        let dual = proximal(&phi, &y, &w_t, lam, SolveForm::Dual).unwrap();
        let diff = primal.sub(&dual).unwrap().abs().max_all().unwrap();
        assert!(
            diff < 1e-10,
            "b {b} d {d}: primal and dual differ by {diff:e}"
        );
        let best = proximal_objective(&phi, &y, &primal, &w_t, lam).unwrap();
        for k in 0..20 {
            let dw =
                Tensor::<f64>::rand_normal(&[3, d], 0.0, 1e-3 * (1 + k) as f64, &mut rng).unwrap();
            let other = proximal_objective(&phi, &y, &primal.add(&dw).unwrap(), &w_t, lam).unwrap();
            assert!(
                other > best,
                "a perturbation lowered the objective: {other} < {best}"
            );
        }
    }
}

#[test]
fn limits_in_lambda() {
    let mut rng = Rng::new(8);
    let phi = Tensor::<f64>::rand_normal(&[40, 5], 0.0, 1.0, &mut rng).unwrap();
    let y = Tensor::<f64>::rand_normal(&[40, 2], 0.0, 1.0, &mut rng).unwrap();
    let w_t = Tensor::<f64>::rand_normal(&[2, 5], 0.0, 1.0, &mut rng).unwrap();
    // λ → ∞ returns the anchor (the correction is O(‖ΦᵀR‖/λ)).
    let far = proximal(&phi, &y, &w_t, 1e12, SolveForm::Auto).unwrap();
    assert!(far.sub(&w_t).unwrap().abs().max_all().unwrap() < 1e-9);
    // λ → 0 returns the batch least-squares solution (unique: b > d, full rank).
    let near = proximal(&phi, &y, &w_t, 1e-12, SolveForm::Auto).unwrap();
    let ls = phi.lstsq(&y).unwrap().t().unwrap();
    assert!(near.sub(&ls).unwrap().abs().max_all().unwrap() < 1e-9);
    // Ridge with β = 0 is least squares too.
    let r0 = ridge(&phi, &y, 0.0, SolveForm::Auto).unwrap();
    assert!(r0.sub(&ls).unwrap().abs().max_all().unwrap() < 1e-9);
}

#[test]
fn bad_input_gives_clear_errors_and_changes_nothing() {
    let mut rng = Rng::new(9);
    let phi = Tensor::<f64>::rand_normal(&[6, 4], 0.0, 1.0, &mut rng).unwrap();
    let y = Tensor::<f64>::rand_normal(&[6, 2], 0.0, 1.0, &mut rng).unwrap();
    let w = Tensor::<f64>::zeros(&[2, 4]).unwrap();
    for lam in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let e = proximal(&phi, &y, &w, lam, SolveForm::Auto).unwrap_err();
        assert!(
            e.to_string().contains("regulariser must be finite and > 0"),
            "{e}"
        );
    }
    assert!(ridge(&phi, &y, -0.1, SolveForm::Auto)
        .unwrap_err()
        .to_string()
        .contains("≥ 0"));
    let e = proximal(&phi, &y.narrow(0, 0, 5).unwrap(), &w, 1.0, SolveForm::Auto).unwrap_err();
    assert!(
        e.to_string().contains("6 feature rows but 5 target rows"),
        "{e}"
    );
    let e = proximal(
        &phi,
        &y,
        &Tensor::zeros(&[2, 5]).unwrap(),
        1.0,
        SolveForm::Auto,
    )
    .unwrap_err();
    assert!(e.to_string().contains("expected [2, 4]"), "{e}");
    // Rank-deficient features (a repeated column) with no regulariser.
    let deficient = Tensor::cat(&[&phi, &phi.narrow(1, 0, 1).unwrap()], 1).unwrap();
    let e = ridge(&deficient, &y, 0.0, SolveForm::Auto).unwrap_err();
    assert!(e.to_string().contains("have rank 4 < 5"), "{e}");
    let mut nan = phi.to_vec();
    nan[3] = f64::NAN;
    let e = ridge(
        &Tensor::from_vec(nan, &[6, 4]).unwrap(),
        &y,
        1.0,
        SolveForm::Auto,
    )
    .unwrap_err();
    assert!(e.to_string().contains("NaN"), "{e}");
    assert!(ClosedFormHead::<f64>::new(
        4,
        2,
        true,
        HeadRule::Proximal { lambda: -1.0 },
        SolveForm::Auto
    )
    .is_err());
    // A failing trainer step leaves backbone, optimiser and head untouched.
    let s = setup(1);
    let head = ClosedFormHead::new(
        6,
        2,
        true,
        HeadRule::Proximal { lambda: 1.0 },
        SolveForm::Auto,
    )
    .unwrap();
    let opt = Sgd::new(s.store.trainable(), SgdConfig::new(0.1).momentum(0.9)).unwrap();
    let mut tr = ClosedFormTrainer {
        head,
        optimizer: Box::new(opt),
        order: Order::BackboneFirst,
        buffers: Vec::new(),
    };
    tr.step(|| s.mlp.forward(&s.x), &s.y).unwrap();
    let before: Vec<Vec<f64>> = s.store.all().iter().map(|p| p.value().to_vec()).collect();
    let head_before = tr.head.weight().to_vec();
    let bad_y = Tensor::<f64>::rand_normal(&[20, 3], 0.0, 1.0, &mut rng).unwrap();
    assert!(tr.step(|| s.mlp.forward(&s.x), &bad_y).is_err());
    let blowup = || s.mlp.forward(&s.x)?.mul_scalar(f64::INFINITY);
    assert!(tr.step(blowup, &s.y).is_err());
    let after: Vec<Vec<f64>> = s.store.all().iter().map(|p| p.value().to_vec()).collect();
    assert_eq!(before, after);
    assert_eq!(head_before, tr.head.weight().to_vec());
}

#[test]
fn both_orders_train_a_regression_backbone() {
    for order in [Order::BackboneFirst, Order::LastLayerFirst] {
        let s = setup(3);
        // A smooth target of the inputs.
        let y =
            s.x.value()
                .sin()
                .sum(&[1], true)
                .unwrap()
                .repeat(&[1, 2])
                .unwrap();
        let head = ClosedFormHead::new(
            6,
            2,
            true,
            HeadRule::Proximal { lambda: 1.0 },
            SolveForm::Auto,
        )
        .unwrap();
        let opt = Sgd::new(s.store.trainable(), SgdConfig::new(0.01).momentum(0.9)).unwrap();
        let mut tr = ClosedFormTrainer {
            head,
            optimizer: Box::new(opt),
            order,
            buffers: Vec::new(),
        };
        let first = tr.step(|| s.mlp.forward(&s.x), &y).unwrap();
        let mut last = first;
        for _ in 0..200 {
            last = tr.step(|| s.mlp.forward(&s.x), &y).unwrap();
        }
        assert!(last < 0.2 * first.max(1e-3), "{order:?}: {first} -> {last}");
        assert_eq!(tr.optimizer.params().len(), 4);
    }
}
