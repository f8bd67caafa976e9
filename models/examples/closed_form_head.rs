//! The closed-form proximal last layer on a small regression (the diabetes set):
//! an MLP backbone trained by SGD with its last layer refitted in closed form after
//! every step, against the same network trained end to end by SGD.
//!
//! `cargo run --release --example closed_form_head`

use autograd::{backward, no_grad, Var};
use models::data::{builtin, Dataset, Standardizer, Targets};
use nn::{Activation, Linear, Mlp, Module, ParamGrads, ParamStore};
use optim::closed_form::{
    squared_loss, ClosedFormHead, ClosedFormTrainer, HeadRule, Order, SolveForm,
};
use optim::{Optimizer, Sgd, SgdConfig};
use tensor::{Result, Rng, Tensor};

const BATCH: usize = 8;

/// The training split standardised (inputs and targets, with the training
/// statistics), and the test inputs and targets standardised the same way.
fn data() -> Result<(Dataset, Tensor<f64>, Tensor<f64>)> {
    let (train, test) = builtin::diabetes()?.split(0.2, &mut Rng::new(0))?;
    let (xs, ys) = (
        Standardizer::fit(&train.x)?,
        Standardizer::fit(train.values()?)?,
    );
    let scaled = Dataset::new(
        xs.transform(&train.x)?,
        Targets::Values(ys.transform(train.values()?)?),
    )?;
    Ok((
        scaled,
        xs.transform(&test.x)?,
        ys.transform(test.values()?)?,
    ))
}

/// Test MSE (standardised units) of the backbone + proximal head after `epochs`.
fn proximal(epochs: usize) -> Result<f64> {
    let (train, xt, yt) = data()?;
    let (x, y) = (&train.x, train.values()?);
    let store = ParamStore::<f64>::new();
    let backbone = Mlp::new(
        &store.root(),
        &[10, 32, 32],
        Activation::Tanh,
        &mut Rng::new(1),
    )?;
    let mut trainer = ClosedFormTrainer {
        head: ClosedFormHead::new(
            32,
            1,
            true,
            HeadRule::Proximal { lambda: 1.0 },
            SolveForm::Auto,
        )?,
        optimizer: Box::new(Sgd::new(
            store.trainable(),
            SgdConfig::new(0.05).momentum(0.9),
        )?),
        order: Order::BackboneFirst,
        buffers: Vec::new(),
    };
    let mut order = Rng::new(2);
    for _ in 0..epochs {
        for idx in train.batches(BATCH, Some(&mut order))? {
            let (xb, yb) = (x.index_select(0, &idx)?, y.index_select(0, &idx)?);
            let features = || backbone.forward(&Var::constant(xb.clone()))?.tanh();
            trainer.step(features, &yb)?;
        }
    }
    let phi = no_grad(|| backbone.forward(&Var::constant(xt.clone()))?.tanh())?;
    squared_loss(&trainer.head.predict(&phi)?, &yt)?.item()
}

/// The same network (MLP + linear head) trained end to end by SGD.
fn end_to_end(epochs: usize) -> Result<f64> {
    let (train, xt, yt) = data()?;
    let (x, y) = (&train.x, train.values()?);
    let store = ParamStore::<f64>::new();
    let mut rng = Rng::new(1);
    let backbone = Mlp::new(&store.root(), &[10, 32, 32], Activation::Tanh, &mut rng)?;
    let head = Linear::new(&store.root().sub("head"), 32, 1, true, &mut rng)?;
    let forward =
        |x: &Tensor<f64>| head.forward(&backbone.forward(&Var::constant(x.clone()))?.tanh()?);
    let mut sgd = Sgd::new(store.trainable(), SgdConfig::new(0.01).momentum(0.9))?;
    let mut order = Rng::new(2);
    for _ in 0..epochs {
        for idx in train.batches(BATCH, Some(&mut order))? {
            let (xb, yb) = (x.index_select(0, &idx)?, y.index_select(0, &idx)?);
            let l = squared_loss(&forward(&xb)?, &yb)?;
            sgd.step(&ParamGrads::collect(sgd.params(), &backward(&l)?))?;
        }
    }
    squared_loss(&no_grad(|| forward(&xt))?, &yt)?.item()
}

fn main() -> Result<()> {
    println!("test MSE (standardised), batch {BATCH}, 30 epochs:");
    println!(
        "  SGD backbone + proximal closed-form head: {:.4}",
        proximal(30)?
    );
    println!(
        "  SGD end to end:                           {:.4}",
        end_to_end(30)?
    );
    Ok(())
}
