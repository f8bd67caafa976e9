//! ResNet (He et al.) in its CIFAR form: a 3×3 stem without max pooling, four stages
//! of basic blocks at widths w, 2w, 4w, 8w (the last three halving the resolution),
//! global average pooling and a linear head. ResNet-18 has blocks [2, 2, 2, 2] and
//! 11 173 962 parameters for 10 classes at w = 64; ResNet-34 has [3, 4, 6, 3].

use super::Classifier;
use crate::layers::{conv::Conv2d, norm::BatchNorm};
use crate::module::Module;
use crate::param::Scope;
use crate::Linear;
use autograd::Var;
use tensor::{Conv2dSpec, Element, Error, Result, Rng};

/// The shape of a [`ResNet`].
#[derive(Clone, Debug, PartialEq)]
pub struct ResNetConfig {
    /// Basic blocks per stage.
    pub blocks: [usize; 4],
    /// Channels of the first stage (64 in the paper).
    pub width: usize,
    /// Input channels.
    pub in_channels: usize,
    /// Classes.
    pub classes: usize,
}

impl ResNetConfig {
    /// ResNet-18.
    pub fn resnet18(classes: usize) -> Self {
        ResNetConfig {
            blocks: [2, 2, 2, 2],
            width: 64,
            in_channels: 3,
            classes,
        }
    }

    /// ResNet-34.
    pub fn resnet34(classes: usize) -> Self {
        ResNetConfig {
            blocks: [3, 4, 6, 3],
            ..Self::resnet18(classes)
        }
    }
}

fn conv_bn<T: Element>(
    scope: &Scope<T>,
    channels: (usize, usize),
    kernel: usize,
    stride: usize,
    rng: &mut Rng,
) -> Result<(Conv2d<T>, BatchNorm<T>)> {
    let spec = Conv2dSpec::new(stride, kernel / 2);
    Ok((
        Conv2d::new(&scope.sub("conv"), channels, kernel, spec, false, rng)?,
        BatchNorm::new(&scope.sub("bn"), channels.1)?,
    ))
}

/// conv3×3–BN–ReLU–conv3×3–BN plus the shortcut (identity, or conv1×1–BN when the
/// shape changes), then ReLU.
pub struct BasicBlock<T: Element> {
    first: (Conv2d<T>, BatchNorm<T>),
    second: (Conv2d<T>, BatchNorm<T>),
    shortcut: Option<(Conv2d<T>, BatchNorm<T>)>,
}

impl<T: Element> BasicBlock<T> {
    fn new(
        scope: &Scope<T>,
        cin: usize,
        cout: usize,
        stride: usize,
        rng: &mut Rng,
    ) -> Result<Self> {
        Ok(BasicBlock {
            first: conv_bn(&scope.sub("a"), (cin, cout), 3, stride, rng)?,
            second: conv_bn(&scope.sub("b"), (cout, cout), 3, 1, rng)?,
            shortcut: if stride != 1 || cin != cout {
                Some(conv_bn(
                    &scope.sub("shortcut"),
                    (cin, cout),
                    1,
                    stride,
                    rng,
                )?)
            } else {
                None
            },
        })
    }
}

impl<T: Element> Module<T> for BasicBlock<T> {
    fn forward(&self, x: &Var<T>) -> Result<Var<T>> {
        let h = self.first.1.forward(&self.first.0.forward(x)?)?.relu()?;
        let h = self.second.1.forward(&self.second.0.forward(&h)?)?;
        let skip = match &self.shortcut {
            Some((conv, bn)) => bn.forward(&conv.forward(x)?)?,
            None => x.clone(),
        };
        h.add(&skip)?.relu()
    }
}

/// The CIFAR ResNet.
pub struct ResNet<T: Element> {
    stem: (Conv2d<T>, BatchNorm<T>),
    blocks: Vec<BasicBlock<T>>,
    head: Linear<T>,
}

impl<T: Element> ResNet<T> {
    /// A network with parameters in `scope`.
    pub fn new(scope: &Scope<T>, cfg: &ResNetConfig, rng: &mut Rng) -> Result<Self> {
        if cfg.width == 0 || cfg.classes == 0 || cfg.in_channels == 0 {
            return Err(Error::value(
                "ResNet",
                format!("invalid configuration {cfg:?}"),
            ));
        }
        let stem = conv_bn(&scope.sub("stem"), (cfg.in_channels, cfg.width), 3, 1, rng)?;
        let mut blocks = Vec::new();
        let mut cin = cfg.width;
        for (stage, &count) in cfg.blocks.iter().enumerate() {
            let cout = cfg.width << stage;
            for b in 0..count {
                let stride = if stage > 0 && b == 0 { 2 } else { 1 };
                blocks.push(BasicBlock::new(
                    &scope.sub(format!("stage{stage}.{b}")),
                    cin,
                    cout,
                    stride,
                    rng,
                )?);
                cin = cout;
            }
        }
        let head = Linear::new(&scope.sub("head"), cin, cfg.classes, true, rng)?;
        Ok(ResNet { stem, blocks, head })
    }
}

impl<T: Element> Classifier<T> for ResNet<T> {
    fn features(&self, x: &Var<T>) -> Result<Var<T>> {
        let mut h = self.stem.1.forward(&self.stem.0.forward(x)?)?.relu()?;
        for b in &self.blocks {
            h = b.forward(&h)?;
        }
        let n = h.shape()[0];
        h.mean(&[2, 3], false)?.reshape(&[n, h.shape()[1]])
    }

    fn head(&self) -> &Linear<T> {
        &self.head
    }
}

impl<T: Element> Module<T> for ResNet<T> {
    fn forward(&self, x: &Var<T>) -> Result<Var<T>> {
        self.head.forward(&self.features(x)?)
    }
}
