//! Layers: gradients by finite differences (f64), shapes, modes and errors.

use autograd::{gradcheck, GradcheckOptions, Var};
use nn::check::gradcheck_params;

/// The strict tolerances with `directions` random directions from `seed` (used
/// when the parameters are too many for the full Jacobian).
fn opts(directions: usize, seed: u64) -> GradcheckOptions {
    GradcheckOptions {
        directions,
        seed,
        ..GradcheckOptions::strict()
    }
}
use nn::{Activation, Dropout, Embedding, LayerNorm, Linear, Mlp, Module, ParamStore, Sequential};
use tensor::{Rng, Tensor};

fn input(shape: &[usize], seed: u64) -> Tensor<f64> {
    Tensor::rand_normal(shape, 0.0, 1.0, &mut Rng::new(seed)).unwrap()
}

#[test]
fn linear_gradients_with_respect_to_input_weight_and_bias() {
    let f = |v: &[Var<f64>]| Linear::apply(&v[0], &v[1], Some(&v[2]))?.tanh();
    // A transposed (non-contiguous) input too.
    let x = input(&[3, 4], 1).t().unwrap();
    let r = gradcheck(
        f,
        &[x, input(&[5, 3], 2), input(&[5], 3)],
        &GradcheckOptions::default(),
    );
    assert!(r.is_ok(), "{r:?}");
    // Batched input [2, 3, 4].
    let r = gradcheck(
        f,
        &[input(&[2, 3, 3], 4), input(&[5, 3], 5), input(&[5], 6)],
        &GradcheckOptions::default(),
    );
    assert!(r.is_ok(), "{r:?}");
}

#[test]
fn mlp_layer_norm_and_sequential_parameter_gradients() {
    let store = ParamStore::<f64>::new();
    let root = store.root();
    let mut rng = Rng::new(7);
    let mlp = Mlp::new(&root.sub("mlp"), &[4, 6, 3], Activation::Tanh, &mut rng).unwrap();
    let norm = LayerNorm::new(&root.sub("norm"), 3, 1e-5, true).unwrap();
    // Move the norm's affine parameters off their trivial start.
    norm.weight.as_ref().unwrap().set(input(&[3], 8)).unwrap();
    norm.bias.as_ref().unwrap().set(input(&[3], 9)).unwrap();
    let model = Sequential::new()
        .push(mlp)
        .push(Activation::Gelu)
        .push(norm);
    let x = Var::constant(input(&[5, 4], 10));
    let loss = || model.forward(&x)?.square()?.mean_all();
    let report = gradcheck_params(&store, loss, &opts(3, 11)).unwrap();
    let entries: usize = store.trainable().iter().map(|p| p.value().numel()).sum();
    assert!(report.full_jacobian);
    assert_eq!(report.checks, entries);
    assert_eq!(store.trainable().len(), 6);
    let names: Vec<String> = store.all().iter().map(|p| p.name().to_string()).collect();
    assert_eq!(
        names,
        [
            "mlp.0.weight",
            "mlp.0.bias",
            "mlp.1.weight",
            "mlp.1.bias",
            "norm.weight",
            "norm.bias"
        ]
    );
}

#[test]
fn layer_norm_normalises_and_checks_its_input() {
    let store = ParamStore::<f64>::new();
    let ln = LayerNorm::new(&store.root(), 8, 1e-9, false).unwrap();
    let x = Var::constant(input(&[4, 8], 12).mul_scalar(5.0).add_scalar(3.0));
    let y = ln.forward(&x).unwrap();
    let mean = y.value().mean(&[-1], false).unwrap();
    let var = y.value().var(&[-1], 0, false).unwrap();
    assert!(mean.to_vec().iter().all(|m| m.abs() < 1e-12));
    assert!(var.to_vec().iter().all(|v| (v - 1.0).abs() < 1e-6));
    let err = ln.forward(&Var::constant(input(&[4, 7], 1))).unwrap_err();
    assert!(err.to_string().contains("does not end in 8"), "{err}");
    let f = |v: &[Var<f64>]| ln.forward(&v[0]);
    assert!(gradcheck(f, &[input(&[3, 8], 13)], &GradcheckOptions::default()).is_ok());
}

#[test]
fn activations_pass_gradcheck() {
    for act in [
        Activation::Relu,
        Activation::LeakyRelu(0.1),
        Activation::Elu(1.0),
        Activation::Tanh,
        Activation::Sigmoid,
        Activation::Softplus,
        Activation::Silu,
        Activation::Gelu,
        Activation::Identity,
    ] {
        let f = |v: &[Var<f64>]| act.apply(&v[0]);
        assert!(
            gradcheck(f, &[input(&[3, 4], 14)], &GradcheckOptions::default()).is_ok(),
            "{act:?}"
        );
    }
}

#[test]
fn embedding_looks_up_rows_and_accumulates_repeated_ids() {
    let store = ParamStore::<f64>::new();
    let emb = Embedding::new(&store.root(), 5, 3, &mut Rng::new(1)).unwrap();
    let out = emb.forward_ids(&[4, 1, 4], &[1, 3]).unwrap();
    assert_eq!(out.shape(), &[1, 3, 3]);
    let w = emb.weight.value();
    assert_eq!(
        out.value().index_axis(1, 0).unwrap().to_vec(),
        w.index_axis(0, 4).unwrap().to_vec()
    );
    let loss = || emb.forward_ids(&[4, 1, 4], &[3])?.sum_all();
    assert!(gradcheck_params(&store, loss, &opts(2, 3)).is_ok());
    let g = autograd::backward(&loss().unwrap()).unwrap();
    let gw = g.get(&emb.weight.var()).unwrap();
    assert_eq!(gw.index_axis(0, 4).unwrap().to_vec(), vec![2.0; 3]);
    assert_eq!(gw.index_axis(0, 0).unwrap().to_vec(), vec![0.0; 3]);
    assert!(emb.forward_ids(&[5], &[1]).is_err());
    assert!(emb.forward_ids(&[1, 2], &[3]).is_err());
}

#[test]
fn dropout_is_seeded_scales_kept_units_and_is_off_in_eval() {
    let store = ParamStore::<f64>::new();
    let d = Dropout::new(&store, 0.3, Rng::new(5)).unwrap();
    let x = Var::constant(Tensor::ones(&[200, 50]).unwrap());
    let y = d.forward(&x).unwrap().value().to_vec();
    let zeros = y.iter().filter(|&&v| v == 0.0).count() as f64 / y.len() as f64;
    // 10 000 Bernoulli(0.3) draws: standard error 0.0046.
    assert!((zeros - 0.3).abs() < 0.02, "{zeros}");
    assert!(y.iter().all(|&v| v == 0.0 || (v - 1.0 / 0.7).abs() < 1e-12));
    let d2 = Dropout::new(&store, 0.3, Rng::new(5)).unwrap();
    assert_eq!(d2.forward(&x).unwrap().value().to_vec(), y);
    store.eval();
    assert_eq!(d.forward(&x).unwrap().value().to_vec(), vec![1.0; 10_000]);
    assert!(Dropout::new(&store, 1.0, Rng::new(0)).is_err());
    assert!(Dropout::new(&store, f64::NAN, Rng::new(0)).is_err());
}

#[test]
fn bad_layer_arguments_are_rejected() {
    let store = ParamStore::<f32>::new();
    let root = store.root();
    let mut rng = Rng::new(0);
    assert!(Linear::new(&root.sub("a"), 0, 3, true, &mut rng).is_err());
    assert!(Mlp::new(&root.sub("b"), &[3], Activation::Relu, &mut rng).is_err());
    assert!(LayerNorm::new(&root.sub("c"), 3, 0.0, true).is_err());
    let l = Linear::new(&root.sub("d"), 3, 2, true, &mut rng).unwrap();
    let e = l
        .forward(&Var::constant(Tensor::ones(&[4, 5]).unwrap()))
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("[4, 5] does not end in the layer's 3 inputs"),
        "{e}"
    );
    // A name can be taken once.
    assert!(Linear::new(&root.sub("d"), 3, 2, true, &mut rng).is_err());
}

#[test]
fn initialisers_have_their_documented_moments() {
    let mut rng = Rng::new(9);
    let t: Tensor<f64> = nn::init::folded_normal(&[400, 100], &mut rng).unwrap();
    let v = t.to_vec();
    assert!(v.iter().all(|&x| x >= 0.0));
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    // Mean 1/√fan_in = 0.1; the sample mean of 40 000 draws has s.e. ≈ 0.0004.
    assert!((mean - 0.1).abs() < 0.003, "{mean}");
    let x: Tensor<f64> = nn::init::xavier_uniform(&[30, 20], 1.0, &mut rng).unwrap();
    let a = (6.0f64 / 50.0).sqrt();
    assert!(x.to_vec().iter().all(|v| v.abs() <= a));
    let k: Tensor<f64> = nn::init::kaiming_normal(&[256, 64], &mut rng).unwrap();
    let var = k.var(&[0, 1], 1, false).unwrap().item().unwrap();
    assert!((var - 2.0 / 64.0).abs() < 0.002, "{var}");
    assert!(nn::init::kaiming_normal::<f64>(&[3, 0], &mut rng).is_err());
}

/// Weights of the wrong rank or a mismatched bias (from a hypernetwork or a foreign
/// checkpoint) are errors naming the shapes, not panics.
#[test]
fn linear_with_a_malformed_weight_or_bias_is_an_error() {
    let x = Var::constant(Tensor::<f64>::zeros(&[2, 3]).unwrap());
    let flat = Var::constant(Tensor::<f64>::zeros(&[3]).unwrap());
    let e = nn::Linear::apply(&x, &flat, None)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("[outputs, inputs]") && e.contains("[3]"), "{e}");
    let w = Var::constant(Tensor::<f64>::zeros(&[4, 3]).unwrap());
    let b = Var::constant(Tensor::<f64>::zeros(&[3]).unwrap());
    let e = nn::Linear::apply(&x, &w, Some(&b))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("bias must be [4]"), "{e}");
    let b = Var::constant(Tensor::<f64>::zeros(&[4]).unwrap());
    assert_eq!(
        nn::Linear::apply(&x, &w, Some(&b)).unwrap().shape(),
        &[2, 4]
    );
}

/// A loss that fails at a perturbed point leaves the parameters as they were.
#[test]
fn gradcheck_params_restores_the_parameters_when_the_loss_fails() {
    let store = ParamStore::<f64>::new();
    let lin = Linear::new(&store.root().sub("fc"), 3, 2, true, &mut Rng::new(4)).unwrap();
    let before: Vec<Vec<f64>> = store
        .trainable()
        .iter()
        .map(|p| p.value().to_vec())
        .collect();
    let x = Var::constant(Tensor::<f64>::ones(&[2, 3]).unwrap());
    let w0 = lin.weight.value().to_vec()[0];
    let loss = || {
        if lin.weight.value().to_vec()[0] != w0 {
            return Err(tensor::Error::value("test", "perturbed"));
        }
        lin.forward(&x)?.square()?.sum_all()
    };
    let e = gradcheck_params(&store, loss, &opts(2, 0))
        .unwrap_err()
        .to_string();
    assert!(e.contains("perturbed"), "{e}");
    let after: Vec<Vec<f64>> = store
        .trainable()
        .iter()
        .map(|p| p.value().to_vec())
        .collect();
    assert_eq!(before, after);
}

/// tanh whose rule is 1 % too large: a plausible slip the check must catch.
fn tanh_off_by_one_percent(x: &Var<f64>) -> tensor::Result<Var<f64>> {
    let y = x.value().tanh();
    autograd::record("tanh_off_by_one_percent", &[x], y, |c| {
        let slope = c.output.square()?.neg()?.add_scalar(1.0)?;
        Ok(vec![Some(c.grad.mul(&slope)?.mul_scalar(1.01)?)])
    })
}

/// A wrong rule behind a layer fails `gradcheck_params` (full Jacobian and random
/// directions alike), with the inputs named by parameter, and the right rule passes.
#[test]
fn gradcheck_params_catches_a_wrong_rule_and_names_the_parameters() {
    let store = ParamStore::<f64>::new();
    let lin = Linear::new(&store.root().sub("fc"), 3, 2, true, &mut Rng::new(8)).unwrap();
    let x = Var::constant(input(&[4, 3], 9));
    let right = || lin.forward(&x)?.tanh()?.sum_all();
    let wrong = || tanh_off_by_one_percent(&lin.forward(&x)?)?.sum_all();
    for full_jacobian_limit in [4096, 0] {
        let o = GradcheckOptions {
            full_jacobian_limit,
            ..opts(4, 1)
        };
        let r = gradcheck_params(&store, right, &o).unwrap();
        assert_eq!(r.full_jacobian, full_jacobian_limit > 0);
        let e = gradcheck_params(&store, wrong, &o).unwrap_err().to_string();
        assert!(e.contains("0 = fc.weight, 1 = fc.bias"), "{e}");
    }
}
