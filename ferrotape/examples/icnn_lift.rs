//! An input-convex network whose non-negative weights come from the lift: a
//! hypernetwork reads the batch and emits θ = softplus(Θ_E h_φ(X) + b), with the
//! slack bias b. Fitted by regression to a convex target in 2-D, against the same
//! ICNN with a direct softplus; the result is convex in x whatever the parameters
//! (checked along random chords).
//!
//! `cargo run --release --example icnn_lift`

use autograd::{backward, no_grad, Var};
use ferrotape::{autograd, nn, optim, tensor};
use nn::{Activation, Icnn, IcnnConfig, ParamGrads, ParamStore};
use optim::lift::{Lift, LiftConfig, Positivity, Softplus};
use optim::{Adam, AdamConfig, Optimizer};
use tensor::{Result, Rng, Tensor};

/// The target: log Σᵢ exp(aᵢ·x) over four directions, a smooth convex function.
fn target(x: &Tensor<f64>) -> Result<Tensor<f64>> {
    let a = Tensor::from_vec(vec![1.0, 0.0, -1.0, 0.5, 0.3, -2.0, -0.7, 1.5], &[4, 2])?;
    x.matmul(&a.t()?)?.logsumexp(&[-1], true)
}

/// Trains an ICNN with `lift` (else a direct softplus) for `steps`; returns the test
/// MSE and the largest violation of F((x+y)/2) ≤ (F(x)+F(y))/2 over 1,000 chords.
fn fit(lift: bool, steps: usize) -> Result<(f64, f64)> {
    let mut rng = Rng::new(0);
    let store = ParamStore::<f64>::new();
    let cfg = IcnnConfig {
        input: 2,
        width: 32,
        layers: 2,
        activation: Activation::Softplus,
        strong_convexity: 0.0,
        act_norm: false,
    };
    let net = Icnn::new(&store.root().sub("icnn"), cfg, &mut rng)?;
    let scope = store.root().sub("positivity");
    let positivity: Box<dyn Positivity<f64>> = if lift {
        Box::new(Lift::new(
            &scope,
            2,
            net.constrained_shapes(),
            &LiftConfig::default(),
            &mut rng,
        )?)
    } else {
        Box::new(Softplus::new(&scope, net.init_constrained(&mut rng)?)?)
    };
    let mut adam = Adam::new(store.trainable(), AdamConfig::adam(1e-2))?;
    for _ in 0..steps {
        let x = Tensor::rand_normal(&[128, 2], 0.0, 1.5, &mut rng)?;
        let w = positivity.weights(&x)?;
        let pred = net.forward_with(&Var::constant(x.clone()), &w)?;
        let l = pred
            .sub(&Var::constant(target(&x)?))?
            .square()?
            .mean_all()?;
        adam.step(&ParamGrads::collect(adam.params(), &backward(&l)?))?;
        positivity.project()?;
    }
    // Evaluation: the weights emitted for one fixed batch, then held.
    let pin = Tensor::rand_normal(&[128, 2], 0.0, 1.5, &mut Rng::new(1))?;
    let w: Vec<Var<f64>> = no_grad(|| positivity.weights(&pin))?
        .iter()
        .map(|v| v.detach())
        .collect();
    let f = |x: &Tensor<f64>| -> Result<Vec<f64>> {
        Ok(no_grad(|| net.forward_with(&Var::constant(x.clone()), &w))?
            .value()
            .to_vec())
    };
    let xt = Tensor::rand_normal(&[2000, 2], 0.0, 1.5, &mut Rng::new(2))?;
    let (pred, want) = (f(&xt)?, target(&xt)?.to_vec());
    let mse = pred
        .iter()
        .zip(&want)
        .map(|(p, t)| (p - t).powi(2))
        .sum::<f64>()
        / want.len() as f64;
    let (a, b) = (
        Tensor::rand_normal(&[1000, 2], 0.0, 3.0, &mut Rng::new(3))?,
        Tensor::rand_normal(&[1000, 2], 0.0, 3.0, &mut Rng::new(4))?,
    );
    let mid = a.add(&b)?.mul_scalar(0.5);
    let (fa, fb, fm) = (f(&a)?, f(&b)?, f(&mid)?);
    let violation = (0..1000)
        .map(|i| fm[i] - 0.5 * (fa[i] + fb[i]))
        .fold(f64::NEG_INFINITY, f64::max);
    Ok((mse, violation))
}

fn main() -> Result<()> {
    println!(
        "one seed, Adam 1e-2 for both: an illustration; the lift-* experiments compare over seeds"
    );
    for (name, lift) in [("softplus", false), ("lift", true)] {
        let (mse, violation) = fit(lift, 1500)?;
        println!(
            "{name:8}: test MSE {mse:.5}; largest midpoint violation {violation:.1e} (≤ 0: convex)"
        );
    }
    Ok(())
}
