//! Neural-network building blocks on top of `autograd`: the `Module` trait, named
//! parameters in a store, initialisers, layers, losses and safetensors checkpoints.
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
