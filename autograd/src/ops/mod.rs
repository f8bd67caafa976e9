//! Differentiable operations on `Var`, one family a file: each op's forward and its
//! backward rule stand side by side, and the rules are written with `Var` ops so
//! that they can themselves be differentiated.

pub mod batch_norm;
pub mod conv;
pub mod elementwise;
pub mod fft;
pub mod index;
pub mod linalg;
pub mod matmul;
pub mod operators;
pub mod reduce;
pub mod shape;

use crate::var::Var;
use tensor::{Element, Result};

/// The gradient for an input, computed only if that input requires one.
pub(crate) fn for_input<T: Element>(
    input: &Var<T>,
    f: impl FnOnce() -> Result<Var<T>>,
) -> Result<Option<Var<T>>> {
    if input.requires_grad() {
        f().map(Some)
    } else {
        Ok(None)
    }
}
