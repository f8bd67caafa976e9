//! Whole-model determinism through the audit trace: a forward and backward pass of
//! an MLP, a convolutional net, an FNO and multi-head attention, at sizes above the
//! kernels' parallel thresholds, give the same op sequence and the same output bits
//! for every op at 1 and 2 threads. And `--trace` / `determinism-check` end to end.

use autograd::trace::{self, diff, Divergence, Trace, TraceConfig};
use autograd::{backward, Var};
use nn::{
    Activation, Conv2d, Fno, FnoConfig, Mlp, Module, MultiHeadAttention, ParamStore, SpectralPath,
};
use std::sync::Mutex;
use tensor::{Conv2dSpec, Rng, Tensor};

static LOCK: Mutex<()> = Mutex::new(());

fn traced_in_pool(threads: usize, f: &(dyn Fn() + Sync)) -> Trace {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
        .install(|| {
            trace::start(TraceConfig::default()).unwrap();
            f();
            trace::stop().unwrap()
        })
}

fn check(name: &str, f: &(dyn Fn() + Sync)) {
    let (one, two) = (traced_in_pool(1, f), traced_in_pool(2, f));
    assert!(
        one.records.len() > 10,
        "{name}: {} records",
        one.records.len()
    );
    match diff(&one, &two) {
        Divergence::Identical { .. } => {}
        other => panic!("{name} differs across thread counts:\n{other}"),
    }
}

/// Backward from the mean square of `out`.
fn mean_square_backward(out: Var<f32>) {
    backward(&out.square().unwrap().mean_all().unwrap()).unwrap();
}

fn normal(shape: &[usize], seed: u64) -> Tensor<f32> {
    Tensor::rand_normal(shape, 0.0, 1.0, &mut Rng::new(seed)).unwrap()
}

#[test]
fn mlp_conv_fno_and_attention_traces_match_across_thread_counts() {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let store = ParamStore::<f32>::new();
    let mut rng = Rng::new(1);
    let mlp = Mlp::new(
        &store.root().sub("mlp"),
        &[256, 512, 512, 10],
        Activation::Relu,
        &mut rng,
    )
    .unwrap();
    let x = normal(&[256, 256], 2);
    check("MLP", &|| {
        mean_square_backward(mlp.forward(&Var::constant(x.clone())).unwrap());
    });
    let conv = Conv2d::new(
        &store.root().sub("conv"),
        (16, 32),
        3,
        Conv2dSpec::new(1, 1),
        true,
        &mut rng,
    )
    .unwrap();
    let conv2 = Conv2d::new(
        &store.root().sub("conv2"),
        (32, 32),
        3,
        Conv2dSpec::new(2, 1),
        true,
        &mut rng,
    )
    .unwrap();
    let img = normal(&[8, 16, 24, 24], 3);
    check("conv", &|| {
        let h = conv
            .forward(&Var::constant(img.clone()))
            .unwrap()
            .relu()
            .unwrap();
        mean_square_backward(conv2.forward(&h).unwrap());
    });
    let fno = Fno::new(
        &store.root().sub("fno"),
        FnoConfig {
            in_channels: 1,
            out_channels: 1,
            width: 32,
            modes: vec![16],
            layers: 2,
            projection: 64,
            activation: Activation::Gelu,
            path: SpectralPath::Auto,
        },
        &mut rng,
    )
    .unwrap();
    let u = normal(&[8, 256, 1], 4);
    check("FNO", &|| {
        mean_square_backward(fno.forward(&Var::constant(u.clone())).unwrap());
    });
    let attn = MultiHeadAttention::new(&store.root().sub("attn"), 128, 4, 0.0, &mut rng).unwrap();
    let seq = normal(&[8, 64, 128], 5);
    check("attention", &|| {
        let q = Var::constant(seq.clone());
        mean_square_backward(attn.attend(&q, &q, None).unwrap());
    });
}

#[test]
fn a_traced_run_and_the_determinism_check_end_to_end() {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let out = std::env::temp_dir().join(format!("models-trace-{}", std::process::id()));
    std::fs::create_dir_all(&out).unwrap();
    let exp = models::experiments::registry()
        .into_iter()
        .find(|e| e.name == "diabetes")
        .unwrap();
    let args = |extra: &[&str]| {
        let mut v: Vec<String> = ["--quick", "--quiet", "--epochs", "2", "--out"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        v.push(out.display().to_string());
        v.extend(extra.iter().map(|s| s.to_string()));
        models::cli::RunConfig::parse(&v).unwrap()
    };
    let (a, b, c) = (out.join("a.csv"), out.join("b.csv"), out.join("c.csv"));
    let mut cfg = args(&[]);
    cfg.trace = Some(a.clone());
    models::experiments::run_experiment(&exp, &cfg).unwrap();
    cfg.trace = Some(b.clone());
    models::experiments::run_experiment(&exp, &cfg).unwrap();
    let mut other = args(&["--seed", "1"]);
    other.trace = Some(c.clone());
    models::experiments::run_experiment(&exp, &other).unwrap();
    assert!(
        matches!(models::audit::trace_diff(&a, &b).unwrap().0, Divergence::Identical { records } if records > 1000)
    );
    let (d, header) = models::audit::trace_diff(&a, &c).unwrap();
    assert!(matches!(d, Divergence::Values { .. }));
    // The header says where each run came from; only the command line differs.
    let t = autograd::trace::Trace::read(&a).unwrap();
    let entry = |k: &str| {
        t.header
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(entry("experiment").as_deref(), Some("diabetes"));
    assert_eq!(entry("--epochs").as_deref(), Some("2"));
    let path = entry("kernel path").unwrap();
    assert!(
        ["avx512", "avx2", "portable"].contains(&path.as_str()),
        "{path}"
    );
    assert!(entry("commit").is_some() && entry("rustc").is_some());
    assert_eq!(header, vec!["seed: 0 vs 1".to_string()], "{header:?}");
    // Every run folder holds its manifest.
    let runs: Vec<_> = std::fs::read_dir(out.join("diabetes"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(runs.len(), 3);
    for run in &runs {
        let m = std::fs::read_to_string(run.join("manifest.txt")).unwrap();
        for line in ["experiment: diabetes", "--epochs: 2", "outcome: completed"] {
            assert!(m.lines().any(|l| l == line), "{line} not in {m}");
        }
        for key in [
            "--batch: default: ",
            "kernel path: ",
            "wall time: ",
            "commit: ",
        ] {
            assert!(m.lines().any(|l| l.starts_with(key)), "{key} not in {m}");
        }
    }
    // A trace never overwrites another.
    let e = models::experiments::run_experiment(&exp, &cfg)
        .unwrap_err()
        .to_string();
    assert!(e.contains("exists"), "{e}");
    for (n, d) in models::audit::determinism_check(&exp, &args(&[]), &[1, 2]).unwrap() {
        assert_eq!(n, 2);
        assert!(matches!(d, Divergence::Identical { .. }), "{d}");
    }
    std::fs::remove_dir_all(&out).unwrap();
}
