//! Neural-network building blocks on top of `autograd`: the `Module` trait, named
//! parameters in a store, initialisers, layers, losses and safetensors checkpoints.
//!
//! ```
//! use autograd::Var;
//! use nn::{checkpoint, Activation, Mlp, Module, ParamStore};
//! use tensor::{Rng, Tensor};
//! # fn main() -> tensor::Result<()> {
//! let store = ParamStore::<f32>::new();
//! let mlp = Mlp::new(&store.root().sub("mlp"), &[4, 8, 2], Activation::Relu, &mut Rng::new(0))?;
//! let x = Var::constant(Tensor::ones(&[3, 4])?);
//! assert_eq!(mlp.forward(&x)?.shape(), &[3, 2]);
//! // Named parameters in a stable order, saved and read back as safetensors.
//! let names: Vec<String> = store.trainable().iter().map(|p| p.name().to_string()).collect();
//! assert_eq!(names[0], "mlp.0.weight");
//! let path = std::env::temp_dir().join(format!("nn-doc-{}.safetensors", std::process::id()));
//! let ckpt = checkpoint::Checkpoint { tensors: store.to_tensors(), metadata: Vec::new() };
//! checkpoint::save(&path, &ckpt)?;
//! let back = checkpoint::load(&path, &checkpoint::Limits::default())?;
//! store.load_from(&back)?;
//! assert_eq!(back.tensors.len(), store.all().len());
//! # std::fs::remove_file(&path).ok();
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]

pub mod augment;
pub mod check;
pub mod checkpoint;
pub mod decode;
pub mod init;
pub mod layers;
pub mod loss;
pub mod module;
pub mod nets;
pub mod param;

pub use layers::{
    act_norm::ActNorm,
    attention::{causal_mask, padding_mask, scaled_dot_product_attention, MultiHeadAttention},
    conv::Conv2d,
    deepsets::DeepSets,
    dropout::Dropout,
    embedding::Embedding,
    fno::{Fno, FnoBlock, FnoConfig},
    icnn::{Icnn, IcnnConfig},
    layer_norm::LayerNorm,
    linear::Linear,
    mlp::Mlp,
    norm::{BatchNorm, GroupNorm},
    pool::{AdaptiveAvgPool2d, AvgPool2d, Flatten, MaxPool2d},
    positional::{sinusoidal, LearnedPositional},
    spectral_conv::{SpectralConv1d, SpectralConv2d, SpectralPath},
    transformer::{DecoderLayer, EncoderLayer, LayerConfig},
};
pub use module::{Activation, Module, Sequential};
pub use param::{Param, ParamGrads, ParamStore, Scope};
