//! Neural-network building blocks on top of `autograd`: the `Module` trait, named
//! parameters in a store, initialisers, layers, losses and safetensors checkpoints.
#![forbid(unsafe_code)]

pub mod augment;
pub mod check;
pub mod checkpoint;
pub mod init;
pub mod layers;
pub mod loss;
pub mod module;
pub mod nets;
pub mod param;

pub use layers::{
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
    spectral_conv::{SpectralConv1d, SpectralConv2d, SpectralPath},
};
pub use module::{Activation, Module, Sequential};
pub use param::{Param, ParamGrads, ParamStore, Scope};
