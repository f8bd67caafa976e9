//! Positional embeddings: the fixed sinusoidal table of "Attention is all you need"
//! and a learned table.

use crate::init;
use crate::param::{Param, Scope};
use autograd::Var;
use tensor::{Element, Error, Result, Rng, Tensor};

/// The sinusoidal table `[len, dim]`: PE(p, 2i) = sin(p / 10000^(2i/dim)),
/// PE(p, 2i + 1) = cos(p / 10000^(2i/dim)).
pub fn sinusoidal<T: Element>(len: usize, dim: usize) -> Result<Tensor<T>> {
    if dim == 0 {
        return Err(Error::value("sinusoidal", "needs a positive dimension"));
    }
    let n = tensor::layout::checked_numel("sinusoidal", &[len, dim])?;
    let v: Vec<f64> = (0..n)
        .map(|i| {
            let (p, j) = ((i / dim) as f64, i % dim);
            let angle = p / 10000f64.powf((j - j % 2) as f64 / dim as f64);
            if j % 2 == 0 {
                angle.sin()
            } else {
                angle.cos()
            }
        })
        .collect();
    Ok(Tensor::<f64>::from_vec(v, &[len, dim])?.cast())
}

/// A learned table of `max_len` positions (N(0, 0.02²) at start, as in ViT and BERT).
pub struct LearnedPositional<T: Element> {
    /// The table `[max_len, dim]`.
    pub weight: Param<T>,
}

impl<T: Element> LearnedPositional<T> {
    /// A table for up to `max_len` positions of size `dim`.
    pub fn new(scope: &Scope<T>, max_len: usize, dim: usize, rng: &mut Rng) -> Result<Self> {
        if max_len == 0 || dim == 0 {
            return Err(Error::value(
                "LearnedPositional",
                format!("needs positive sizes, got {max_len} × {dim}"),
            ));
        }
        Ok(LearnedPositional {
            weight: scope.param("weight", init::normal(&[max_len, dim], 0.0, 0.02, rng)?)?,
        })
    }

    /// `x` `[B, L, dim]` plus the first L positions.
    pub fn add_to(&self, x: &Var<T>) -> Result<Var<T>> {
        let max = self.weight.shape()[0];
        let l = x.shape().get(1).copied().unwrap_or(0);
        if x.ndim() != 3 || l > max {
            return Err(Error::shape(
                "LearnedPositional",
                format!("needs [B, L ≤ {max}, D], got {:?}", x.shape()),
            ));
        }
        x.add(&self.weight.var().narrow(0, 0, l)?)
    }
}
