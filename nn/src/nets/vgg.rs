//! VGG with batch normalisation (Simonyan & Zisserman; the CIFAR form): 3×3
//! convolutions (with bias) each followed by BN and ReLU, 2×2 max pooling between
//! stages, and one linear layer on the 512 pooled features. VGG16-BN has 14 728 266
//! parameters for 10 classes.

use super::Classifier;
use crate::layers::{conv::Conv2d, norm::BatchNorm};
use crate::module::Module;
use crate::param::Scope;
use crate::Linear;
use autograd::Var;
use tensor::{Conv2dSpec, Element, Error, Result, Rng};

/// One entry of a VGG configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VggLayer {
    /// A 3×3 convolution to this many channels, BN, ReLU.
    Conv(usize),
    /// 2×2 max pooling, stride 2.
    Pool,
}

/// The 16-layer configuration.
pub fn vgg16_layers() -> Vec<VggLayer> {
    use VggLayer::{Conv, Pool};
    vec![
        Conv(64),
        Conv(64),
        Pool,
        Conv(128),
        Conv(128),
        Pool,
        Conv(256),
        Conv(256),
        Conv(256),
        Pool,
        Conv(512),
        Conv(512),
        Conv(512),
        Pool,
        Conv(512),
        Conv(512),
        Conv(512),
        Pool,
    ]
}

enum Stage<T: Element> {
    Conv(Conv2d<T>, BatchNorm<T>),
    Pool,
}

/// VGG-BN.
pub struct Vgg<T: Element> {
    stages: Vec<Stage<T>>,
    head: Linear<T>,
}

impl<T: Element> Vgg<T> {
    /// A network of `layers` on `in_channels` inputs, with parameters in `scope`.
    pub fn new(
        scope: &Scope<T>,
        layers: &[VggLayer],
        in_channels: usize,
        classes: usize,
        rng: &mut Rng,
    ) -> Result<Self> {
        if classes == 0 || !layers.iter().any(|l| matches!(l, VggLayer::Conv(_))) {
            return Err(Error::value(
                "Vgg",
                "needs a convolution and at least one class",
            ));
        }
        let mut stages = Vec::new();
        let mut cin = in_channels;
        for (i, layer) in layers.iter().enumerate() {
            stages.push(match *layer {
                VggLayer::Conv(cout) => {
                    let s = scope.sub(format!("features.{i}"));
                    let conv = Conv2d::new(
                        &s.sub("conv"),
                        (cin, cout),
                        3,
                        Conv2dSpec::new(1, 1),
                        true,
                        rng,
                    )?;
                    cin = cout;
                    Stage::Conv(conv, BatchNorm::new(&s.sub("bn"), cout)?)
                }
                VggLayer::Pool => Stage::Pool,
            });
        }
        let head = Linear::new(&scope.sub("head"), cin, classes, true, rng)?;
        Ok(Vgg { stages, head })
    }
}

impl<T: Element> Classifier<T> for Vgg<T> {
    fn features(&self, x: &Var<T>) -> Result<Var<T>> {
        let mut h = x.clone();
        for s in &self.stages {
            h = match s {
                Stage::Conv(conv, bn) => bn.forward(&conv.forward(&h)?)?.relu()?,
                Stage::Pool => h.max_pool2d((2, 2), (2, 2), (0, 0))?,
            };
        }
        // Global average pooling (a no-op at the 1×1 maps of 32×32 inputs).
        let n = h.shape()[0];
        h.mean(&[2, 3], false)?.reshape(&[n, h.shape()[1]])
    }

    fn head(&self) -> &Linear<T> {
        &self.head
    }
}

impl<T: Element> Module<T> for Vgg<T> {
    fn forward(&self, x: &Var<T>) -> Result<Var<T>> {
        self.head.forward(&self.features(x)?)
    }
}
