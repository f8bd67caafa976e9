//! An MLP classifier on the UCI digits shipped with the engine, trained with Adam.
//!
//! `cargo run --release --example mlp_digits`

use autograd::{backward, no_grad, Var};
use models::data::builtin;
use nn::{loss, Activation, Mlp, Module, ParamGrads, ParamStore};
use optim::{Adam, AdamConfig, Optimizer};
use tensor::{Result, Rng};

/// Trains for `epochs` and returns the test accuracy.
fn train(epochs: usize) -> Result<f64> {
    let mut rng = Rng::new(0);
    let (train, test) = builtin::digits()?.split(0.2, &mut rng)?;
    let (labels, classes) = train.labels()?;
    let store = ParamStore::<f32>::new();
    let mlp = Mlp::new(
        &store.root(),
        &[64, 64, classes],
        Activation::Relu,
        &mut rng,
    )?;
    let mut adam = Adam::new(store.trainable(), AdamConfig::adam(1e-3))?;
    for epoch in 0..epochs {
        for idx in train.batches(32, Some(&mut rng))? {
            let x = Var::constant(train.x.index_select(0, &idx)?.cast::<f32>());
            let y: Vec<usize> = idx.iter().map(|&i| labels[i]).collect();
            let l = loss::cross_entropy(&mlp.forward(&x)?, &y, 0.0)?;
            adam.step(&ParamGrads::collect(adam.params(), &backward(&l)?))?;
        }
        eprintln!("epoch {epoch}: done");
    }
    let scores = no_grad(|| mlp.forward(&Var::constant(test.x.cast::<f32>())))?;
    loss::accuracy(scores.value(), test.labels()?.0)
}

fn main() -> Result<()> {
    println!("test accuracy: {:.2} %", 100.0 * train(20)?);
    Ok(())
}

#[test]
fn learns_the_digits() {
    assert!(train(3).unwrap() > 0.8);
}
