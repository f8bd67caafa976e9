//! PyTorch state dicts, as PyTorch's reference writer saves them, load into the
//! matching modules and give PyTorch's outputs to f32 precision: an MLP (its
//! `nn.Sequential` numbering mapped), a conv + BatchNorm net (running statistics
//! loaded, the I64 `num_batches_tracked` reported unused) and multi-head attention
//! (the packed `in_proj` split), plus the MLP in F16 and BF16 converted exactly.
//! The fixtures and their script are in `tests/fixtures/torch/`.

use autograd::Var;
use nn::checkpoint::torch::{split_in_proj, Convert, KeyMap};
use nn::checkpoint::{self, AnyTensor, Checkpoint, FileDType, Limits};
use nn::{Activation, BatchNorm, Conv2d, Mlp, Module, MultiHeadAttention, ParamStore};
use tensor::{Conv2dSpec, Rng, Tensor};

fn fixture(name: &str) -> Checkpoint {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/torch")
        .join(name);
    checkpoint::load(&path, &Limits::default()).unwrap()
}

/// Largest |a − b| relative to max(1, |b|).
fn close(a: &Tensor<f32>, b: &Tensor<f32>, tol: f32) {
    assert_eq!(a.shape(), b.shape());
    for (x, y) in a.to_vec().iter().zip(b.to_vec()) {
        assert!((x - y).abs() <= tol * y.abs().max(1.0), "{x} vs {y}");
    }
}

/// The engine's MLP matching the fixture's `Sequential(Linear(4, 8), ReLU, Linear(8, 3))`.
fn mlp() -> (ParamStore<f32>, Mlp<f32>) {
    let store = ParamStore::<f32>::new();
    let mlp = Mlp::new(
        &store.root(),
        &[4, 8, 3],
        Activation::Relu,
        &mut Rng::new(0),
    )
    .unwrap();
    (store, mlp)
}

#[test]
fn a_torch_sequential_mlp_loads_under_its_own_numbering() {
    let (store, mlp) = mlp();
    let ckpt = fixture("mlp.safetensors");
    // Without the mapping the second layer is not found, by name.
    let e = store
        .load_mapped(&ckpt, &KeyMap::Same, Convert::Never)
        .unwrap_err()
        .to_string();
    assert!(e.contains("tensor '1.weight' is missing"), "{e}");
    let report = store
        .load_mapped(&ckpt, &KeyMap::sequential("", 2), Convert::Never)
        .unwrap();
    assert!(report.unused.is_empty());
    assert!(report
        .loaded
        .iter()
        .any(|l| l.param == "1.weight" && l.key == "2.weight"));
    let io = fixture("mlp_io.safetensors");
    let y = mlp
        .forward(&Var::constant(io.tensor::<f32>("input").unwrap()))
        .unwrap();
    close(y.value(), &io.tensor("output").unwrap(), 1e-6);
}

#[test]
fn half_precision_weights_convert_exactly_and_give_torchs_outputs() {
    let io = fixture("mlp_io.safetensors");
    for (file, out, dtype) in [
        ("mlp_f16.safetensors", "output_f16", FileDType::F16),
        ("mlp_bf16.safetensors", "output_bf16", FileDType::BF16),
    ] {
        let (store, mlp) = mlp();
        let ckpt = fixture(file);
        assert!(ckpt.tensors.iter().all(|(_, t)| t.dtype() == dtype));
        // Refused without the caller's consent, naming the type.
        let e = store
            .load_mapped(&ckpt, &KeyMap::sequential("", 2), Convert::Never)
            .unwrap_err()
            .to_string();
        assert!(e.contains(dtype.name()), "{e}");
        let report = store
            .load_mapped(&ckpt, &KeyMap::sequential("", 2), Convert::Exact)
            .unwrap();
        assert!(report
            .loaded
            .iter()
            .all(|l| l.converted_from == Some(dtype.name())));
        let y = mlp
            .forward(&Var::constant(io.tensor::<f32>("input").unwrap()))
            .unwrap();
        close(y.value(), &io.tensor(out).unwrap(), 1e-6);
    }
}

#[test]
fn conv_and_batch_norm_load_with_running_statistics_and_report_the_counter() {
    let store = ParamStore::<f32>::new();
    let mut rng = Rng::new(0);
    let conv = Conv2d::new(
        &store.root().sub("0"),
        (3, 4),
        3,
        Conv2dSpec::new(1, 1),
        true,
        &mut rng,
    )
    .unwrap();
    let bn = BatchNorm::new(&store.root().sub("1"), 4).unwrap();
    let ckpt = fixture("conv_bn.safetensors");
    let report = store
        .load_mapped(&ckpt, &KeyMap::Same, Convert::Never)
        .unwrap();
    assert_eq!(report.unused.len(), 1);
    assert_eq!(report.unused[0].key, "1.num_batches_tracked");
    assert_eq!(report.unused[0].dtype, "I64");
    assert!(report
        .render()
        .contains("unused: 1.num_batches_tracked (I64"));
    store.eval();
    let io = fixture("conv_bn_io.safetensors");
    let x = Var::constant(io.tensor::<f32>("input").unwrap());
    let y = bn
        .forward(&conv.forward(&x).unwrap())
        .unwrap()
        .relu()
        .unwrap();
    close(y.value(), &io.tensor("output").unwrap(), 1e-5);
}

#[test]
fn multi_head_attention_loads_from_the_packed_projection() {
    let store = ParamStore::<f32>::new();
    let mha = MultiHeadAttention::new(&store.root(), 8, 2, 0.0, &mut Rng::new(0)).unwrap();
    let ckpt = split_in_proj(&fixture("attention.safetensors"), "", "").unwrap();
    let report = store
        .load_mapped(&ckpt, &KeyMap::Same, Convert::Never)
        .unwrap();
    assert!(report.unused.is_empty(), "{}", report.render());
    store.eval();
    let io = fixture("attention_io.safetensors");
    let x = Var::constant(io.tensor::<f32>("input").unwrap());
    let y = mha.attend(&x, &x, None).unwrap();
    close(y.value(), &io.tensor("output").unwrap(), 1e-5);
}

/// The committed fixtures are the ones the script wrote (SHA256SUMS beside them),
/// read through the same checks as any file.
#[test]
fn every_fixture_has_its_checksum() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/torch");
    let sums = std::fs::read_to_string(dir.join("SHA256SUMS")).unwrap();
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".safetensors"))
        .collect();
    files.sort();
    let listed: Vec<&str> = sums
        .lines()
        .map(|l| l.split_whitespace().nth(1).unwrap())
        .collect();
    assert_eq!(files, listed);
}

/// Conversions that would change a value are errors naming the value; exact ones
/// keep every bit, subnormals, infinities and signed zeros included.
#[test]
fn only_exact_conversions_pass() {
    let raw = |dtype: FileDType, bytes: Vec<u8>, n: usize| {
        AnyTensor::Other(checkpoint::RawTensor {
            dtype,
            shape: vec![n],
            bytes,
        })
    };
    // F16: 1, −2, the smallest subnormal 2⁻²⁴, +∞, −0.
    let halves: [u16; 5] = [0x3c00, 0xc000, 0x0001, 0x7c00, 0x8000];
    let t = raw(
        FileDType::F16,
        halves.iter().flat_map(|h| h.to_le_bytes()).collect(),
        5,
    );
    let (v, from) = t.to_tensor_exact::<f32>("h").unwrap();
    assert_eq!(from, Some("F16"));
    let v = v.to_vec();
    assert_eq!(&v[..3], &[1.0, -2.0, 2f32.powi(-24)]);
    assert!(v[3].is_infinite() && v[4] == 0.0 && v[4].is_sign_negative());
    // I64 2²⁴ + 1 is not an f32, but is an f64.
    let big = raw(FileDType::I64, ((1i64 << 24) + 1).to_le_bytes().to_vec(), 1);
    let e = big.to_tensor_exact::<f32>("n").unwrap_err().to_string();
    assert!(e.contains("16777217") && e.contains("'n'"), "{e}");
    assert_eq!(
        big.to_tensor_exact::<f64>("n").unwrap().0.to_vec(),
        vec![16_777_217.0]
    );
    // F64 0.1 does not round-trip through f32.
    let tenth = AnyTensor::F64(Tensor::from_vec(vec![0.1], &[1]).unwrap());
    assert!(tenth.to_tensor_exact::<f32>("x").is_err());
    // And the strict path never converts.
    assert!(t.to_tensor::<f32>("h").is_err());
}

/// Raw tensors survive a write and a read bit for bit.
#[test]
fn raw_tensors_round_trip() {
    let ckpt = fixture("conv_bn.safetensors");
    let again =
        checkpoint::from_bytes(&checkpoint::to_bytes(&ckpt).unwrap(), &Limits::default()).unwrap();
    let counter = |c: &Checkpoint| match c.get("1.num_batches_tracked").unwrap() {
        AnyTensor::Other(r) => r.clone(),
        other => panic!("expected a raw tensor, got {:?}", other.dtype()),
    };
    assert_eq!(counter(&ckpt), counter(&again));
    assert_eq!(counter(&ckpt).values(), vec![3.0]);
}

/// Every positive half, exhaustively: strictly increasing, spaced 2⁻²⁴ through the
/// subnormals and the first binade, spacing doubling at each binade, up to the
/// largest half 65504; all exact in f32. bfloat16 is the top half of an f32.
#[test]
fn half_decoding_is_exact_over_every_bit_pattern() {
    use nn::checkpoint::torch::{bf16_to_f64, f16_to_f64};
    let mut prev = f16_to_f64(0);
    assert_eq!(prev, 0.0);
    for h in 1u16..0x7c00 {
        let v = f16_to_f64(h);
        let exponent = i32::from((h - 1) >> 10).max(1);
        assert_eq!(v - prev, 2f64.powi(exponent - 25), "spacing at {h:#06x}");
        assert_eq!(f64::from(v as f32), v);
        assert_eq!(f16_to_f64(h | 0x8000), -v);
        prev = v;
    }
    assert_eq!(prev, 65504.0);
    assert!(f16_to_f64(0x7e00).is_nan());
    for b in [0x3f80u16, 0xc000, 0x0001, 0x7f7f] {
        assert_eq!(
            bf16_to_f64(b),
            f64::from(f32::from_bits(u32::from(b) << 16))
        );
    }
}
