//! 2N steps straight equal N steps, save, load into a fresh process state, N more
//! steps — bit for bit (model, Adam moments, dropout mask generator, data order).

use autograd::{backward, Var};
use nn::{loss, Activation, Dropout, Mlp, Module, ParamGrads, ParamStore};
use optim::{training_state, Adam, AdamConfig, Optimizer};
use tensor::{Rng, Tensor};

struct Run {
    store: ParamStore<f32>,
    mlp: Mlp<f32>,
    drop: Dropout<f32>,
    opt: Adam<f32>,
    data_rng: Rng,
}

fn fresh() -> Run {
    let store = ParamStore::new();
    let mut init = Rng::new(10);
    let mlp = Mlp::new(
        &store.root().sub("mlp"),
        &[6, 16, 3],
        Activation::Relu,
        &mut init,
    )
    .unwrap();
    let drop = Dropout::new(&store, 0.2, Rng::new(11)).unwrap();
    let opt = Adam::new(store.trainable(), AdamConfig::adamw(0.01)).unwrap();
    Run {
        store,
        mlp,
        drop,
        opt,
        data_rng: Rng::new(12),
    }
}

fn data() -> (Tensor<f32>, Vec<usize>) {
    let mut rng = Rng::new(99);
    let x = Tensor::rand_normal(&[64, 6], 0.0, 1.0, &mut rng).unwrap();
    let y = (0..64).map(|i| i % 3).collect();
    (x, y)
}

fn steps(run: &mut Run, n: usize) {
    let (x, y) = data();
    for _ in 0..n {
        let idx: Vec<usize> = run.data_rng.permutation(64)[..16].to_vec();
        let xb = Var::constant(x.index_select(0, &idx).unwrap());
        let yb: Vec<usize> = idx.iter().map(|&i| y[i]).collect();
        let h = run.drop.forward(&run.mlp.features(&xb).unwrap()).unwrap();
        let out = nn::Module::forward(run.mlp.head(), &h).unwrap();
        let l = loss::cross_entropy(&out, &yb, 0.0).unwrap();
        let g = ParamGrads::collect(run.opt.params(), &backward(&l).unwrap());
        run.opt.step(&g).unwrap();
    }
}

fn snapshot(run: &Run) -> Vec<u32> {
    run.store
        .all()
        .iter()
        .flat_map(|p| p.value().to_vec())
        .map(|v| v.to_bits())
        .collect()
}

#[test]
fn resumed_training_is_bit_identical() {
    let mut straight = fresh();
    steps(&mut straight, 20);

    let dir = std::env::temp_dir().join(format!("optim-resume-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("state.safetensors");
    {
        let mut first = fresh();
        steps(&mut first, 10);
        let drop_rng = Rng::from_state(first.drop.rng_state()).unwrap();
        training_state::save(
            &path,
            &first.store,
            &first.opt,
            &[("data", &first.data_rng), ("dropout", &drop_rng)],
            &[],
        )
        .unwrap();
    }
    let mut resumed = fresh();
    let (mut data_rng, mut drop_rng) = (Rng::new(0), Rng::new(0));
    training_state::load(
        &path,
        &resumed.store,
        &mut resumed.opt,
        &mut [("data", &mut data_rng), ("dropout", &mut drop_rng)],
    )
    .unwrap();
    resumed.data_rng = data_rng;
    resumed.drop.set_rng_state(drop_rng.state()).unwrap();
    assert_eq!(resumed.opt.steps(), 10);
    steps(&mut resumed, 10);
    assert_eq!(snapshot(&straight), snapshot(&resumed));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_corrupt_state_file_changes_nothing() {
    let dir = std::env::temp_dir().join(format!("optim-corrupt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("state.safetensors");
    let mut run = fresh();
    steps(&mut run, 3);
    training_state::save(&path, &run.store, &run.opt, &[("data", &run.data_rng)], &[]).unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.truncate(bytes.len() - 10);
    std::fs::write(&path, &bytes).unwrap();
    let mut other = fresh();
    let before = snapshot(&other);
    let mut r = Rng::new(0);
    let e = training_state::load(&path, &other.store, &mut other.opt, &mut [("data", &mut r)])
        .unwrap_err();
    assert!(e.to_string().contains("state.safetensors"), "{e}");
    assert_eq!(snapshot(&other), before);
    assert_eq!(other.opt.steps(), 0);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A training state with one Adam moment removed, or with a buffer no parameter
/// explains, is refused with the buffers named (it used to load, treating the
/// missing moment as "never stepped", and the resumed run silently diverged).
#[test]
fn partial_or_foreign_optimizer_states_are_refused() {
    let mut run = fresh();
    steps(&mut run, 3);
    let full = run.opt.state();
    let mut missing = full.clone();
    let dropped = missing.tensors.remove(1).0;
    let e = fresh().opt.load_state(&missing).err().unwrap().to_string();
    assert!(e.contains(&dropped) && e.contains("missing"), "{e}");
    // A whole prefix gone at step 3 is refused too (the moments exist after a step).
    let mut no_v = full.clone();
    no_v.tensors.retain(|(n, _)| !n.starts_with("v."));
    let e = fresh().opt.load_state(&no_v).err().unwrap().to_string();
    assert!(e.contains("step 3"), "{e}");
    let mut extra = full.clone();
    extra
        .tensors
        .push(("m.mlp.9.weight".into(), Tensor::zeros(&[2, 2]).unwrap()));
    let e = fresh().opt.load_state(&extra).err().unwrap().to_string();
    assert!(e.contains("m.mlp.9.weight"), "{e}");
    // The intact state and a never-stepped one both load.
    fresh().opt.load_state(&full).unwrap();
    fresh().opt.load_state(&fresh().opt.state()).unwrap();
}

/// The moments are rewritten in place, copy-on-write: a state taken before more
/// steps keeps its values while the optimiser's own move on.
#[test]
fn a_state_taken_mid_run_is_not_changed_by_later_steps() {
    let mut run = fresh();
    steps(&mut run, 3);
    let names: Vec<String> = run
        .store
        .trainable()
        .iter()
        .flat_map(|p| ["m", "v"].map(|k| format!("{k}.{}", p.name())))
        .collect();
    let bits = |s: &optim::OptimizerState<f32>| -> Vec<Vec<u32>> {
        names
            .iter()
            .map(|n| {
                s.tensor(n)
                    .unwrap()
                    .to_vec()
                    .iter()
                    .map(|v| v.to_bits())
                    .collect()
            })
            .collect()
    };
    let state = run.opt.state();
    let before = bits(&state);
    steps(&mut run, 2);
    assert_eq!(bits(&state), before, "later steps changed a saved state");
    assert_ne!(bits(&run.opt.state()), before, "the moments did not move");
}

/// A state saved from a model with one more layer is refused before anything
/// changes, whether or not its optimiser has stepped (before a step the optimiser
/// has no moments that would name the extra layer).
#[test]
fn a_state_from_a_deeper_model_is_refused_even_before_a_step() {
    let deeper = ParamStore::<f32>::new();
    let mut init = Rng::new(10);
    Mlp::new(
        &deeper.root().sub("mlp"),
        &[6, 16, 16, 3],
        Activation::Relu,
        &mut init,
    )
    .unwrap();
    let opt = Adam::new(deeper.trainable(), AdamConfig::adamw(0.01)).unwrap();
    let dir = std::env::temp_dir().join(format!("deeper-state-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("state.safetensors");
    let rng = Rng::new(12);
    training_state::save(&path, &deeper, &opt, &[("data", &rng)], &[]).unwrap();
    let mut run = fresh();
    let before = snapshot(&run);
    let mut data_rng = Rng::new(1);
    let e = training_state::load(
        &path,
        &run.store,
        &mut run.opt,
        &mut [("data", &mut data_rng)],
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("'mlp.2.weight'") && e.contains("another model"),
        "{e}"
    );
    assert_eq!(snapshot(&run), before);
    std::fs::remove_dir_all(&dir).unwrap();
}
