//! A hand-written training loop: gradient clipping by global norm, a schedule, and
//! a checkpoint of the whole training state (model, Adam moments, data order) from
//! which a resumed run continues bit for bit.
//!
//! `cargo run --release --example custom_loop`

use autograd::{backward, Var};
use models::data::builtin;
use nn::{loss, Activation, Mlp, Module, ParamGrads, ParamStore};
use optim::{training_state, Adam, AdamConfig, Optimizer, Schedule};
use tensor::{Result, Rng};

/// A model, its optimiser and the generator of the batch order.
struct Run {
    store: ParamStore<f32>,
    mlp: Mlp<f32>,
    adam: Adam<f32>,
    order: Rng,
}

fn fresh() -> Result<Run> {
    let store = ParamStore::new();
    let mlp = Mlp::new(
        &store.root(),
        &[64, 32, 10],
        Activation::Tanh,
        &mut Rng::new(1),
    )?;
    let adam = Adam::new(store.trainable(), AdamConfig::adamw(3e-3))?;
    Ok(Run {
        store,
        mlp,
        adam,
        order: Rng::new(2),
    })
}

/// `epochs` epochs from step `start` with a cosine schedule over `total` steps;
/// gradients clipped to norm 1. Returns the step count reached.
fn train(run: &mut Run, epochs: usize, start: usize, total: usize) -> Result<usize> {
    let data = builtin::digits()?;
    let (labels, _) = data.labels()?;
    let schedule = Schedule::Cosine {
        total,
        min_factor: 0.1,
    };
    let mut step = start;
    for _ in 0..epochs {
        for idx in data.batches(64, Some(&mut run.order))? {
            let x = Var::constant(data.x.index_select(0, &idx)?.cast::<f32>());
            let y: Vec<usize> = idx.iter().map(|&i| labels[i]).collect();
            let l = loss::cross_entropy(&run.mlp.forward(&x)?, &y, 0.0)?;
            let mut grads = ParamGrads::collect(run.adam.params(), &backward(&l)?);
            grads.clip_global_norm(1.0)?;
            run.adam.set_lr(3e-3 * schedule.factor(step))?;
            run.adam.step(&grads)?;
            step += 1;
        }
    }
    Ok(step)
}

fn weights(run: &Run) -> Vec<Vec<f32>> {
    run.store
        .trainable()
        .iter()
        .map(|p| p.value().to_vec())
        .collect()
}

/// Four epochs straight, and two + checkpoint + two in a fresh run: the same bits.
fn straight_equals_resumed(path: &std::path::Path) -> Result<bool> {
    let per_epoch = builtin::digits()?.len().div_ceil(64);
    let total = 4 * per_epoch;
    let mut straight = fresh()?;
    train(&mut straight, 4, 0, total)?;

    let mut first = fresh()?;
    let step = train(&mut first, 2, 0, total)?;
    let meta = vec![("step".to_string(), step.to_string())];
    training_state::save(
        path,
        &first.store,
        &first.adam,
        &[("order", &first.order)],
        &meta,
    )?;

    let mut resumed = fresh()?;
    let ckpt = training_state::load(
        path,
        &resumed.store,
        &mut resumed.adam,
        &mut [("order", &mut resumed.order)],
    )?;
    let step: usize = ckpt.meta("step").and_then(|s| s.parse().ok()).unwrap_or(0);
    train(&mut resumed, 2, step, total)?;
    Ok(weights(&straight) == weights(&resumed))
}

fn main() -> Result<()> {
    let path = std::env::temp_dir().join("custom-loop-example.safetensors");
    let same = straight_equals_resumed(&path)?;
    println!(
        "resumed run identical to the straight one: {same} (checkpoint {})",
        path.display()
    );
    Ok(())
}

#[test]
fn a_resumed_run_is_bit_identical() {
    let path = std::env::temp_dir().join(format!("custom-loop-{}.safetensors", std::process::id()));
    assert!(straight_equals_resumed(&path).unwrap());
    std::fs::remove_file(path).unwrap();
}
