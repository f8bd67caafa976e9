//! Wide residual networks (Zagoruyko & Komodakis), WRN-d-k: a 3×3 stem of 16 channels,
//! three groups of (d − 4)/6 pre-activation blocks at widths 16k, 32k, 64k (the last
//! two halving the resolution), BN–ReLU, global average pooling and a linear head.
//! WRN-28-10 has 36 479 194 parameters for 10 classes; WRN-16-4 is a CPU-sized one.

use super::Classifier;
use crate::layers::{conv::Conv2d, dropout::Dropout, norm::BatchNorm};
use crate::module::Module;
use crate::param::Scope;
use crate::Linear;
use autograd::Var;
use tensor::{Conv2dSpec, Element, Error, Result, Rng};

/// BN–ReLU–conv3×3–BN–ReLU–(dropout)–conv3×3, plus the identity or a 1×1 convolution of
/// the pre-activated input when the shape changes.
struct Block<T: Element> {
    bn1: BatchNorm<T>,
    conv1: Conv2d<T>,
    bn2: BatchNorm<T>,
    dropout: Option<Dropout<T>>,
    conv2: Conv2d<T>,
    shortcut: Option<Conv2d<T>>,
}

impl<T: Element> Block<T> {
    fn new(
        scope: &Scope<T>,
        cin: usize,
        cout: usize,
        stride: usize,
        dropout: f64,
        rng: &mut Rng,
    ) -> Result<Self> {
        let conv = |name: &str, c: (usize, usize), k: usize, s: usize, rng: &mut Rng| {
            Conv2d::new(
                &scope.sub(name),
                c,
                k,
                Conv2dSpec::new(s, k / 2),
                false,
                rng,
            )
        };
        Ok(Block {
            bn1: BatchNorm::new(&scope.sub("bn1"), cin)?,
            conv1: conv("conv1", (cin, cout), 3, stride, rng)?,
            bn2: BatchNorm::new(&scope.sub("bn2"), cout)?,
            dropout: if dropout > 0.0 {
                Some(Dropout::new(scope.store(), dropout, rng.split())?)
            } else {
                None
            },
            conv2: conv("conv2", (cout, cout), 3, 1, rng)?,
            shortcut: if cin != cout || stride != 1 {
                Some(conv("shortcut", (cin, cout), 1, stride, rng)?)
            } else {
                None
            },
        })
    }
}

impl<T: Element> Module<T> for Block<T> {
    fn forward(&self, x: &Var<T>) -> Result<Var<T>> {
        let a = self.bn1.forward(x)?.relu()?;
        let mut h = self.bn2.forward(&self.conv1.forward(&a)?)?.relu()?;
        if let Some(d) = &self.dropout {
            h = d.forward(&h)?;
        }
        let h = self.conv2.forward(&h)?;
        let skip = match &self.shortcut {
            Some(c) => c.forward(&a)?,
            None => x.clone(),
        };
        h.add(&skip)
    }
}

/// WRN-d-k.
pub struct WideResNet<T: Element> {
    stem: Conv2d<T>,
    blocks: Vec<Block<T>>,
    bn: BatchNorm<T>,
    head: Linear<T>,
}

impl<T: Element> WideResNet<T> {
    /// WRN-`depth`-`widen` (depth = 6n + 4) with dropout `dropout` inside the blocks.
    pub fn new(
        scope: &Scope<T>,
        depth: usize,
        widen: usize,
        classes: usize,
        dropout: f64,
        rng: &mut Rng,
    ) -> Result<Self> {
        if depth < 10 || !(depth - 4).is_multiple_of(6) || widen == 0 || classes == 0 {
            return Err(Error::value(
                "WideResNet",
                format!("depth must be 6n + 4 (n ≥ 1) and widen, classes positive, got WRN-{depth}-{widen}, {classes} classes"),
            ));
        }
        let n = (depth - 4) / 6;
        let stem = Conv2d::new(
            &scope.sub("stem"),
            (3, 16),
            3,
            Conv2dSpec::new(1, 1),
            false,
            rng,
        )?;
        let mut blocks = Vec::new();
        let mut cin = 16;
        for (g, width) in [16 * widen, 32 * widen, 64 * widen].into_iter().enumerate() {
            for b in 0..n {
                let stride = if g > 0 && b == 0 { 2 } else { 1 };
                blocks.push(Block::new(
                    &scope.sub(format!("group{g}.{b}")),
                    cin,
                    width,
                    stride,
                    dropout,
                    rng,
                )?);
                cin = width;
            }
        }
        Ok(WideResNet {
            stem,
            blocks,
            bn: BatchNorm::new(&scope.sub("bn"), cin)?,
            head: Linear::new(&scope.sub("head"), cin, classes, true, rng)?,
        })
    }
}

impl<T: Element> Classifier<T> for WideResNet<T> {
    fn features(&self, x: &Var<T>) -> Result<Var<T>> {
        let mut h = self.stem.forward(x)?;
        for b in &self.blocks {
            h = b.forward(&h)?;
        }
        let h = self.bn.forward(&h)?.relu()?;
        let n = h.shape()[0];
        h.mean(&[2, 3], false)?.reshape(&[n, h.shape()[1]])
    }

    fn head(&self) -> &Linear<T> {
        &self.head
    }
}

impl<T: Element> Module<T> for WideResNet<T> {
    fn forward(&self, x: &Var<T>) -> Result<Var<T>> {
        self.head.forward(&self.features(x)?)
    }
}
