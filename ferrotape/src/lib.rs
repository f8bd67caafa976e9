#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

/// Strided `f32`/`f64` tensors, kernels, linear algebra, FFT and the seeded RNG
/// (the `ferrotape-tensor` crate).
pub use tensor;

/// Tape autograd: `Var`, `grad`, `hvp`, `gradcheck`, the audit trace (the
/// `ferrotape-autograd` crate).
pub use autograd;

/// Modules, parameters, layers, losses and checkpoints (the `ferrotape-nn` crate).
pub use nn;

/// Optimisers and the engine's three methods (the `ferrotape-optim` crate).
pub use optim;

/// The names most programs use, in one import: `use ferrotape::prelude::*;`.
pub mod prelude {
    pub use autograd::{backward, grad, gradcheck, hvp, no_grad, Var};
    pub use nn::loss;
    pub use nn::{
        Activation, Conv2d, Icnn, IcnnConfig, Linear, Mlp, Module, Param, ParamGrads, ParamStore,
        Scope, Sequential,
    };
    pub use optim::closed_form::ClosedFormTrainer;
    pub use optim::lift::{Lift, LiftConfig};
    pub use optim::llqr::{LlqrConfig, LlqrSam};
    pub use optim::{Adam, AdamConfig, Optimizer, Sam, SamVariant, Schedule, Sgd, SgdConfig};
    pub use tensor::{Element, Error, Result, Rng, Tensor};
}
