//! The `--model` choice of the `cifar` experiment: a [`Classifier`] built by name.

use nn::nets::resnet::{ResNet, ResNetConfig};
use nn::nets::vgg::{vgg16_layers, Vgg, VggLayer};
use nn::nets::vit::{Vit, VitConfig};
use nn::nets::wide_resnet::WideResNet;
use nn::nets::Classifier;
use nn::Scope;
use tensor::{Error, Result, Rng};

/// A network named on the command line.
#[derive(Clone, Debug, PartialEq)]
pub enum Network {
    /// ResNet-18 (CIFAR variant) with this base width (64 is the standard one).
    ResNet18(usize),
    /// ResNet-34 with this base width.
    ResNet34(usize),
    /// VGG16-BN with every channel count scaled by width / 64.
    Vgg16(usize),
    /// WRN-depth-widen (dropout 0).
    WideResNet(usize, usize),
    /// A ViT preset on 32×32 images (classes set at build time).
    Vit(VitConfig),
}

/// The ViT settings taken from the command line.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VitOptions {
    /// Patch side.
    pub patch: usize,
    /// Encoder layers, if not the preset's.
    pub depth: Option<usize>,
}

impl Network {
    /// Parses `resnet18`, `resnet34`, `vgg16`, `wrn-D-K` or `vit-{tiny,small,base,large}`;
    /// `width` is the base width of the ResNets and VGG (ignored by WRN, whose width is
    /// K, and by the ViTs).
    pub fn parse(name: &str, width: usize, vit: VitOptions) -> Result<Network> {
        if width == 0 {
            return Err(Error::value("cifar", "--width must be positive"));
        }
        let bad = || {
            Error::value(
                "cifar",
                format!("unknown --model '{name}': expected resnet18, resnet34, vgg16, wrn-D-K (e.g. wrn-16-4) or vit-tiny/small/base/large"),
            )
        };
        match name {
            "resnet18" => Ok(Network::ResNet18(width)),
            "resnet34" => Ok(Network::ResNet34(width)),
            "vgg16" => Ok(Network::Vgg16(width)),
            "vit-tiny" | "vit-small" | "vit-base" | "vit-large" => {
                let preset = match name {
                    "vit-tiny" => VitConfig::tiny,
                    "vit-small" => VitConfig::small,
                    "vit-base" => VitConfig::base,
                    _ => VitConfig::large,
                };
                let mut cfg = preset(32, vit.patch, 10);
                if let Some(d) = vit.depth {
                    cfg.depth = d;
                }
                if vit.patch == 0 || 32 % vit.patch != 0 || cfg.depth == 0 {
                    return Err(Error::value(
                        "cifar",
                        format!(
                            "--patch {} must divide 32 and --depth be positive",
                            vit.patch
                        ),
                    ));
                }
                Ok(Network::Vit(cfg))
            }
            _ => {
                let rest = name.strip_prefix("wrn-").ok_or_else(bad)?;
                let (d, k) = rest.split_once('-').ok_or_else(bad)?;
                Ok(Network::WideResNet(
                    d.parse().map_err(|_| bad())?,
                    k.parse().map_err(|_| bad())?,
                ))
            }
        }
    }

    /// Its name in tables.
    pub fn describe(&self) -> String {
        match self {
            Network::ResNet18(w) => format!("ResNet-18 (width {w})"),
            Network::ResNet34(w) => format!("ResNet-34 (width {w})"),
            Network::Vgg16(w) => format!("VGG16-BN (width {w}/64)"),
            Network::WideResNet(d, k) => format!("WRN-{d}-{k}"),
            Network::Vit(c) => format!(
                "ViT (d {}, {} layers, {} heads, patch {})",
                c.dim, c.depth, c.heads, c.patch
            ),
        }
    }

    /// Builds it for `classes` classes, with parameters in `scope`.
    pub fn build(
        &self,
        scope: &Scope<f32>,
        classes: usize,
        rng: &mut Rng,
    ) -> Result<Box<dyn Classifier<f32>>> {
        Ok(match *self {
            Network::ResNet18(width) => Box::new(ResNet::new(
                scope,
                &ResNetConfig {
                    width,
                    ..ResNetConfig::resnet18(classes)
                },
                rng,
            )?),
            Network::ResNet34(width) => Box::new(ResNet::new(
                scope,
                &ResNetConfig {
                    width,
                    ..ResNetConfig::resnet34(classes)
                },
                rng,
            )?),
            Network::Vgg16(width) => {
                let layers: Vec<VggLayer> = vgg16_layers()
                    .into_iter()
                    .map(|l| match l {
                        VggLayer::Conv(c) => VggLayer::Conv((c * width / 64).max(1)),
                        pool => pool,
                    })
                    .collect();
                Box::new(Vgg::new(scope, &layers, 3, classes, rng)?)
            }
            Network::WideResNet(depth, widen) => {
                Box::new(WideResNet::new(scope, depth, widen, classes, 0.0, rng)?)
            }
            Network::Vit(cfg) => Box::new(Vit::new(scope, VitConfig { classes, ..cfg }, rng)?),
        })
    }
}
