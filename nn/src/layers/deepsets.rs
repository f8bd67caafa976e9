//! A DeepSets summary of a batch: a per-sample MLP, mean pooling over the batch and
//! an optional standardisation of the pooled vector. It is permutation-invariant by
//! construction; the input is detached, so whatever it conditions stays a constant
//! with respect to the samples themselves.

use crate::layers::mlp::Mlp;
use crate::module::{Activation, Module};
use crate::param::Scope;
use autograd::Var;
use tensor::{error::fmt_shape, Element, Error, Result, Rng, Tensor};

/// φ(X) = standardise(mean_i ρ(xᵢ)) with ρ an MLP ending in an activation.
pub struct DeepSets<T: Element> {
    encoder: Mlp<T>,
    activation: Activation,
    pool_norm: bool,
    unbiased: bool,
    summary: usize,
}

impl<T: Element> DeepSets<T> {
    /// An encoder `input → hidden… → summary` with ReLU; `pool_norm` standardises the
    /// pooled vector over its features, z ← (z − mean z)/(std z + 1e-5), with the
    /// unbiased (n − 1) standard deviation as the lift's authors compute it
    /// (`torch.std`); [`DeepSets::biased_std`] switches to the 1/n one.
    pub fn new(
        scope: &Scope<T>,
        input: usize,
        hidden: &[usize],
        summary: usize,
        pool_norm: bool,
        rng: &mut Rng,
    ) -> Result<Self> {
        let mut sizes = vec![input];
        sizes.extend_from_slice(hidden);
        sizes.push(summary);
        Ok(DeepSets {
            encoder: Mlp::new(scope, &sizes, Activation::Relu, rng)?,
            activation: Activation::Relu,
            pool_norm,
            unbiased: true,
            summary,
        })
    }

    /// Standardises with the biased (1/n) standard deviation instead.
    pub fn biased_std(mut self) -> Self {
        self.unbiased = false;
        self
    }

    /// The size of the summary vector.
    pub fn summary_size(&self) -> usize {
        self.summary
    }

    /// The summary `[1, summary]` of a batch `[n, input]` (n ≥ 1).
    pub fn summarise(&self, batch: &Tensor<T>) -> Result<Var<T>> {
        if batch.ndim() != 2 || batch.shape()[0] == 0 {
            return Err(Error::shape(
                "DeepSets",
                format!(
                    "needs a non-empty batch [n, d], got {}",
                    fmt_shape(batch.shape())
                ),
            ));
        }
        let x = Var::constant(batch.clone());
        let per_sample = self.activation.apply(&self.encoder.forward(&x)?)?;
        let z = per_sample.mean(&[0], true)?;
        if !self.pool_norm {
            return Ok(z);
        }
        let centred = z.sub(&z.mean(&[1], true)?)?;
        let n = self.summary as f64;
        let dof = if self.unbiased && n > 1.0 { n - 1.0 } else { n };
        let std = centred
            .square()?
            .sum(&[1], true)?
            .mul_scalar(1.0 / dof)?
            .sqrt()?;
        centred.div(&std.add_scalar(1e-5)?)
    }
}
