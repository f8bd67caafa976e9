//! Transformer encoder and decoder layers, pre-norm or post-norm.
//!
//! Post-norm (the original): x ← LN(x + Drop(Sublayer(x))). Pre-norm (ViT, most
//! modern stacks): x ← x + Drop(Sublayer(LN(x))), with a final LayerNorm after the
//! stack, which the owning model applies.

use crate::layers::attention::MultiHeadAttention;
use crate::layers::dropout::Dropout;
use crate::layers::layer_norm::LayerNorm;
use crate::layers::linear::Linear;
use crate::module::{Activation, Module};
use crate::param::Scope;
use autograd::Var;
use tensor::{Element, Result, Rng, Tensor};

/// Sizes and style of a Transformer layer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LayerConfig {
    /// Model width d.
    pub dim: usize,
    /// Attention heads (dividing d).
    pub heads: usize,
    /// Hidden width of the feed-forward block.
    pub ff: usize,
    /// Dropout after attention and feed-forward blocks, and on attention weights.
    pub dropout: f64,
    /// Pre-norm (true) or post-norm (false).
    pub pre_norm: bool,
    /// Activation of the feed-forward block (ReLU in the original, GELU in ViT).
    pub activation: Activation,
}

/// The position-wise feed-forward block: Linear → activation → dropout → Linear.
struct FeedForward<T: Element> {
    up: Linear<T>,
    down: Linear<T>,
    activation: Activation,
    dropout: Dropout<T>,
}

impl<T: Element> FeedForward<T> {
    fn new(scope: &Scope<T>, c: &LayerConfig, rng: &mut Rng) -> Result<Self> {
        Ok(FeedForward {
            up: Linear::new(&scope.sub("up"), c.dim, c.ff, true, rng)?,
            down: Linear::new(&scope.sub("down"), c.ff, c.dim, true, rng)?,
            activation: c.activation,
            dropout: Dropout::new(scope.store(), c.dropout, rng.split())?,
        })
    }

    fn forward(&self, x: &Var<T>) -> Result<Var<T>> {
        self.down.forward(
            &self
                .dropout
                .forward(&self.activation.apply(&self.up.forward(x)?)?)?,
        )
    }
}

/// A residual sub-layer with its norm and dropout, in either order.
struct Residual<T: Element> {
    norm: LayerNorm<T>,
    dropout: Dropout<T>,
    pre_norm: bool,
}

impl<T: Element> Residual<T> {
    fn new(scope: &Scope<T>, c: &LayerConfig, rng: &mut Rng) -> Result<Self> {
        Ok(Residual {
            norm: LayerNorm::new(scope, c.dim, 1e-5, true)?,
            dropout: Dropout::new(scope.store(), c.dropout, rng.split())?,
            pre_norm: c.pre_norm,
        })
    }

    fn apply(&self, x: &Var<T>, f: impl FnOnce(&Var<T>) -> Result<Var<T>>) -> Result<Var<T>> {
        if self.pre_norm {
            x.add(&self.dropout.forward(&f(&self.norm.forward(x)?)?)?)
        } else {
            self.norm.forward(&x.add(&self.dropout.forward(&f(x)?)?)?)
        }
    }
}

/// Self-attention and feed-forward, each residual.
pub struct EncoderLayer<T: Element> {
    attention: MultiHeadAttention<T>,
    ff: FeedForward<T>,
    sub: [Residual<T>; 2],
}

impl<T: Element> EncoderLayer<T> {
    /// A layer with parameters in `scope`.
    pub fn new(scope: &Scope<T>, c: &LayerConfig, rng: &mut Rng) -> Result<Self> {
        Ok(EncoderLayer {
            attention: MultiHeadAttention::new(&scope.sub("attn"), c.dim, c.heads, c.dropout, rng)?,
            ff: FeedForward::new(&scope.sub("ff"), c, rng)?,
            sub: [
                Residual::new(&scope.sub("norm1"), c, rng)?,
                Residual::new(&scope.sub("norm2"), c, rng)?,
            ],
        })
    }

    /// `x` `[B, L, d]` with an additive mask over its keys.
    pub fn forward(&self, x: &Var<T>, mask: Option<&Tensor<T>>) -> Result<Var<T>> {
        let h = self.sub[0].apply(x, |y| self.attention.attend(y, y, mask))?;
        self.sub[1].apply(&h, |y| self.ff.forward(y))
    }
}

/// Masked self-attention, cross-attention over the encoder's memory, feed-forward.
pub struct DecoderLayer<T: Element> {
    self_attention: MultiHeadAttention<T>,
    cross_attention: MultiHeadAttention<T>,
    ff: FeedForward<T>,
    sub: [Residual<T>; 3],
}

impl<T: Element> DecoderLayer<T> {
    /// A layer with parameters in `scope`.
    pub fn new(scope: &Scope<T>, c: &LayerConfig, rng: &mut Rng) -> Result<Self> {
        Ok(DecoderLayer {
            self_attention: MultiHeadAttention::new(
                &scope.sub("self_attn"),
                c.dim,
                c.heads,
                c.dropout,
                rng,
            )?,
            cross_attention: MultiHeadAttention::new(
                &scope.sub("cross_attn"),
                c.dim,
                c.heads,
                c.dropout,
                rng,
            )?,
            ff: FeedForward::new(&scope.sub("ff"), c, rng)?,
            sub: [
                Residual::new(&scope.sub("norm1"), c, rng)?,
                Residual::new(&scope.sub("norm2"), c, rng)?,
                Residual::new(&scope.sub("norm3"), c, rng)?,
            ],
        })
    }

    /// `y` `[B, Lt, d]` attending to itself under `self_mask` (causal, and padding)
    /// and to `memory` `[B, Ls, d]` under `memory_mask`.
    pub fn forward(
        &self,
        y: &Var<T>,
        memory: &Var<T>,
        self_mask: Option<&Tensor<T>>,
        memory_mask: Option<&Tensor<T>>,
    ) -> Result<Var<T>> {
        let h = self.sub[0].apply(y, |z| self.self_attention.attend(z, z, self_mask))?;
        let h = self.sub[1].apply(&h, |z| self.cross_attention.attend(z, memory, memory_mask))?;
        self.sub[2].apply(&h, |z| self.ff.forward(z))
    }
}
