//! The Vision Transformer (Dosovitskiy et al.): non-overlapping patches embedded by a
//! strided convolution, a class token, learned positions, a pre-norm encoder with
//! GELU, a final LayerNorm and a linear head on the class token.

use crate::layers::positional::LearnedPositional;
use crate::layers::transformer::{EncoderLayer, LayerConfig};
use crate::module::{Activation, Module};
use crate::nets::Classifier;
use crate::param::{Param, Scope};
use crate::{Conv2d, LayerNorm, Linear};
use autograd::Var;
use tensor::{error::fmt_shape, Conv2dSpec, Element, Error, Result, Rng, Tensor};

/// Sizes of a ViT.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VitConfig {
    /// Side of the (square) input images.
    pub image: usize,
    /// Side of a patch (dividing `image`).
    pub patch: usize,
    /// Input channels.
    pub channels: usize,
    /// Width d.
    pub dim: usize,
    /// Encoder layers.
    pub depth: usize,
    /// Attention heads.
    pub heads: usize,
    /// Hidden width of the MLP blocks.
    pub mlp: usize,
    /// Classes.
    pub classes: usize,
    /// Dropout.
    pub dropout: f64,
}

impl VitConfig {
    fn preset(
        image: usize,
        patch: usize,
        classes: usize,
        (dim, depth, heads): (usize, usize, usize),
    ) -> Self {
        VitConfig {
            image,
            patch,
            channels: 3,
            dim,
            depth,
            heads,
            mlp: 4 * dim,
            classes,
            dropout: 0.0,
        }
    }

    /// ViT-Tiny (d 192, 12 layers, 3 heads): 5,717,416 parameters at 224/16, 1000 classes.
    pub fn tiny(image: usize, patch: usize, classes: usize) -> Self {
        Self::preset(image, patch, classes, (192, 12, 3))
    }

    /// ViT-Small (d 384, 12 layers, 6 heads): 22,050,664 parameters at 224/16.
    pub fn small(image: usize, patch: usize, classes: usize) -> Self {
        Self::preset(image, patch, classes, (384, 12, 6))
    }

    /// ViT-Base (d 768, 12 layers, 12 heads): 86,567,656 parameters at 224/16.
    pub fn base(image: usize, patch: usize, classes: usize) -> Self {
        Self::preset(image, patch, classes, (768, 12, 12))
    }

    /// ViT-Large (d 1024, 24 layers, 16 heads): 304,326,632 parameters at 224/16.
    pub fn large(image: usize, patch: usize, classes: usize) -> Self {
        Self::preset(image, patch, classes, (1024, 24, 16))
    }

    /// Patches per image.
    pub fn patches(&self) -> usize {
        (self.image / self.patch).pow(2)
    }
}

/// A Vision Transformer.
pub struct Vit<T: Element> {
    embed: Conv2d<T>,
    class_token: Param<T>,
    positions: LearnedPositional<T>,
    layers: Vec<EncoderLayer<T>>,
    norm: LayerNorm<T>,
    head: Linear<T>,
    cfg: VitConfig,
}

impl<T: Element> Vit<T> {
    /// A ViT with parameters in `scope`.
    pub fn new(scope: &Scope<T>, cfg: VitConfig, rng: &mut Rng) -> Result<Self> {
        if cfg.patch == 0
            || !cfg.image.is_multiple_of(cfg.patch)
            || cfg.classes == 0
            || cfg.depth == 0
        {
            return Err(Error::value(
                "Vit",
                format!("invalid configuration {cfg:?} (the patch must divide the image)"),
            ));
        }
        let layer = LayerConfig {
            dim: cfg.dim,
            heads: cfg.heads,
            ff: cfg.mlp,
            dropout: cfg.dropout,
            pre_norm: true,
            activation: Activation::Gelu,
        };
        Ok(Vit {
            embed: Conv2d::new(
                &scope.sub("patch_embed"),
                (cfg.channels, cfg.dim),
                cfg.patch,
                Conv2dSpec::new(cfg.patch, 0),
                true,
                rng,
            )?,
            class_token: scope.param("class_token", Tensor::zeros(&[1, 1, cfg.dim])?)?,
            positions: LearnedPositional::new(&scope.sub("pos"), cfg.patches() + 1, cfg.dim, rng)?,
            layers: (0..cfg.depth)
                .map(|i| EncoderLayer::new(&scope.sub(format!("layers.{i}")), &layer, rng))
                .collect::<Result<_>>()?,
            norm: LayerNorm::new(&scope.sub("norm"), cfg.dim, 1e-6, true)?,
            head: Linear::new(&scope.sub("head"), cfg.dim, cfg.classes, true, rng)?,
            cfg,
        })
    }
}

impl<T: Element> Classifier<T> for Vit<T> {
    fn features(&self, x: &Var<T>) -> Result<Var<T>> {
        let c = &self.cfg;
        if x.ndim() != 4 || x.shape()[1..] != [c.channels, c.image, c.image] {
            return Err(Error::shape(
                "Vit",
                format!(
                    "needs images [N, {}, {}, {}], got {}",
                    c.channels,
                    c.image,
                    c.image,
                    fmt_shape(x.shape())
                ),
            ));
        }
        let n = x.shape()[0];
        let patches = self
            .embed
            .forward(x)?
            .reshape(&[n, c.dim, c.patches()])?
            .transpose(1, 2)?;
        let cls = self.class_token.var().broadcast_to(&[n, 1, c.dim])?;
        let mut h = self.positions.add_to(&Var::cat(&[&cls, &patches], 1)?)?;
        for layer in &self.layers {
            h = layer.forward(&h, None)?;
        }
        self.norm.forward(&h.narrow(1, 0, 1)?.reshape(&[n, c.dim])?)
    }

    fn head(&self) -> &Linear<T> {
        &self.head
    }
}

impl<T: Element> Module<T> for Vit<T> {
    fn forward(&self, x: &Var<T>) -> Result<Var<T>> {
        self.head.forward(&self.features(x)?)
    }
}
