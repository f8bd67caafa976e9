//! Loading a PyTorch state dict saved as safetensors: `nn.Sequential(Linear(4, 8),
//! ReLU, Linear(8, 3))` numbers its layers 0 and 2 where [`nn::Mlp`] numbers them 0
//! and 1, so the load maps the keys; half-precision files convert exactly; the
//! report says what came from where and what the file held that the model did not
//! use. Runs on the fixture written by `nn/tests/fixtures/torch/make_fixtures.py`, or
//! on the file given as the first argument.
//!
//! `cargo run --release --example load_pytorch [state_dict.safetensors]`

use autograd::Var;
use ferrotape::{autograd, nn, tensor};
use nn::checkpoint::torch::{Convert, KeyMap};
use nn::checkpoint::{self, Limits};
use nn::{Activation, Mlp, Module, ParamStore};
use tensor::{Result, Rng};

fn main() -> Result<()> {
    let fixtures =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../nn/tests/fixtures/torch");
    let file = std::env::args()
        .nth(1)
        .map_or_else(|| fixtures.join("mlp_f16.safetensors"), Into::into);
    let store = ParamStore::<f32>::new();
    let mlp = Mlp::new(
        &store.root(),
        &[4, 8, 3],
        Activation::Relu,
        &mut Rng::new(0),
    )?;
    let ckpt = checkpoint::load(&file, &Limits::default())?;
    let report = store.load_mapped(&ckpt, &KeyMap::sequential("", 2), Convert::Exact)?;
    print!("{}: {}", file.display(), report.render());
    let io = checkpoint::load(fixtures.join("mlp_io.safetensors"), &Limits::default())?;
    let y = mlp.forward(&Var::constant(io.tensor::<f32>("input")?))?;
    let want = io.tensor::<f32>("output_f16")?;
    let diff = y
        .value()
        .to_vec()
        .iter()
        .zip(want.to_vec())
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    println!("largest difference from PyTorch's output on the fixture input: {diff:.1e}");
    Ok(())
}
