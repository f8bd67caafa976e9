//! The shared training loop drives any optimiser through `step_closure`: SAM (two
//! evaluations a step) trained by `fit` lands on the same bits as SAM stepped by
//! hand over the same batches.

use autograd::Var;
use models::data::{Dataset, Targets};
use models::report::Metrics;
use models::train::{batch_x, fit, FitSettings};
use nn::{loss, Activation, Mlp, Module, ParamStore};
use optim::{Optimizer, Sam, SamVariant, Schedule, Sgd, SgdConfig};
use tensor::{Rng, Tensor};

fn problem() -> (ParamStore<f32>, Mlp<f32>, Dataset) {
    let mut rng = Rng::new(21);
    let x = Tensor::rand_normal(&[40, 5], 0.0, 1.0, &mut rng).unwrap();
    let labels: Vec<usize> = (0..40).map(|i| (i * 7 + i / 3) % 3).collect();
    let data = Dataset::new(x, Targets::Classes { labels, classes: 3 }).unwrap();
    let store = ParamStore::new();
    let mlp = Mlp::new(
        &store.root(),
        &[5, 8, 3],
        Activation::Tanh,
        &mut Rng::new(22),
    )
    .unwrap();
    (store, mlp, data)
}

fn sam(store: &ParamStore<f32>) -> Sam<f32> {
    let sgd = Sgd::new(store.trainable(), SgdConfig::new(0.1).momentum(0.9)).unwrap();
    Sam::new(Box::new(sgd), 0.05, SamVariant::Sam).unwrap()
}

fn labels_of(data: &Dataset) -> Vec<usize> {
    match &data.y {
        Targets::Classes { labels, .. } => labels.clone(),
        Targets::Values(_) => unreachable!("a classification set"),
    }
}

#[test]
fn fit_trains_sam_exactly_as_a_hand_loop() {
    let settings = FitSettings {
        epochs: 2,
        batch_size: 8,
        schedule: Schedule::Constant,
        seed: 5,
        series: "sam".into(),
        quiet: true,
    };
    let (store, mlp, data) = problem();
    let labels = labels_of(&data);
    let loss_on = |idx: &[usize]| {
        let out = mlp.forward(&Var::constant(batch_x(&data, idx)?))?;
        let y: Vec<usize> = idx.iter().map(|&i| labels[i]).collect();
        loss::cross_entropy(&out, &y, 0.0)
    };
    let mut opt = sam(&store);
    let mut metrics = Metrics::default();
    fit(
        &store,
        &mut opt,
        &data,
        &settings,
        &mut metrics,
        loss_on,
        || Ok(Vec::new()),
    )
    .unwrap();

    let (hand_store, hand_mlp, _) = problem();
    let mut hand = sam(&hand_store);
    let mut rng = Rng::new(settings.seed);
    let mut losses = Vec::new();
    for _ in 0..settings.epochs {
        let batches = data.batches(settings.batch_size, Some(&mut rng)).unwrap();
        let mut total = 0.0;
        for idx in &batches {
            total += hand
                .step_closure(&|| {
                    let out = hand_mlp.forward(&Var::constant(batch_x(&data, idx)?))?;
                    let y: Vec<usize> = idx.iter().map(|&i| labels[i]).collect();
                    loss::cross_entropy(&out, &y, 0.0)
                })
                .unwrap();
        }
        losses.push(total / batches.len() as f64);
    }
    let bits = |s: &ParamStore<f32>| -> Vec<Vec<u32>> {
        s.trainable()
            .iter()
            .map(|p| p.value().to_vec().iter().map(|v| v.to_bits()).collect())
            .collect()
    };
    assert_eq!(bits(&store), bits(&hand_store));
    // SAM moved the model (so equality is not two untouched initialisations).
    let (fresh, _, _) = problem();
    assert_ne!(bits(&store), bits(&fresh));
    // The recorded epoch losses are SAM's losses at θ, the ones the hand loop saw.
    let recorded: Vec<f64> = metrics
        .rows
        .iter()
        .filter(|r| r.metric == "train_loss")
        .map(|r| r.value)
        .collect();
    assert_eq!(recorded, losses);
}
