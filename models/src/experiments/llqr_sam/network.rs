//! The networks of the `llqr-sam` experiment: an MLP d-h-h-10 and a small CNN (see
//! [`SmallCnn`]) on square grey images given as flat rows.

use autograd::Var;
use nn::{Activation, Conv2d, Linear, Mlp, Module, Scope};
use tensor::{Conv2dSpec, Error, Result, Rng};

/// Which network an arm trains.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Model {
    /// MLP d-h-h-10 with ReLU.
    Mlp,
    /// [`SmallCnn`].
    Cnn,
}

impl Model {
    /// Parses `--model`.
    pub fn parse(name: &str) -> Result<Model> {
        match name {
            "mlp" => Ok(Model::Mlp),
            "cnn" => Ok(Model::Cnn),
            _ => Err(Error::value(
                "llqr-sam",
                format!("--model '{name}': expected mlp or cnn"),
            )),
        }
    }

    /// A description for table titles, for `pixels` inputs and width `hidden`.
    pub fn describe(self, pixels: usize, hidden: usize) -> String {
        match self {
            Model::Mlp => format!("MLP {pixels}-{hidden}-{hidden}-10"),
            Model::Cnn => format!(
                "CNN conv3×3 1→{c1}, pool 2, conv3×3 {c1}→{c2}, pool 2, linear → 10",
                c1 = hidden / 16,
                c2 = hidden / 8
            ),
        }
    }

    /// Builds the network under `scope` for images of `pixels` = side² values.
    pub fn build(
        self,
        scope: &Scope<f32>,
        pixels: usize,
        hidden: usize,
        rng: &mut Rng,
    ) -> Result<Box<dyn Module<f32>>> {
        Ok(match self {
            Model::Mlp => Box::new(Mlp::new(
                &scope.sub("mlp"),
                &[pixels, hidden, hidden, 10],
                Activation::Relu,
                rng,
            )?),
            Model::Cnn => Box::new(SmallCnn::new(&scope.sub("cnn"), pixels, hidden, rng)?),
        })
    }
}

/// A LeNet-sized CNN: conv 3×3 (1 → h/16, padding 1), ReLU, max-pool 2, conv 3×3
/// (h/16 → h/8), ReLU, max-pool 2, and a linear layer to 10 classes (h = 128: 8 and
/// 16 channels, 10,000 parameters on MNIST).
pub struct SmallCnn {
    conv1: Conv2d<f32>,
    conv2: Conv2d<f32>,
    head: Linear<f32>,
    side: usize,
}

impl SmallCnn {
    /// A CNN for square images of `pixels` values (side divisible by 4).
    pub fn new(scope: &Scope<f32>, pixels: usize, hidden: usize, rng: &mut Rng) -> Result<Self> {
        let side = (pixels as f64).sqrt().round() as usize;
        let (c1, c2) = (hidden / 16, hidden / 8);
        if side * side != pixels || !side.is_multiple_of(4) || c1 == 0 {
            return Err(Error::value(
                "SmallCnn",
                format!(
                    "needs square images with a side divisible by 4 and a width of at least 16, got {pixels} pixels and width {hidden}"
                ),
            ));
        }
        let spec = Conv2dSpec {
            padding: (1, 1),
            ..Conv2dSpec::default()
        };
        Ok(SmallCnn {
            conv1: Conv2d::new(&scope.sub("conv1"), (1, c1), 3, spec, true, rng)?,
            conv2: Conv2d::new(&scope.sub("conv2"), (c1, c2), 3, spec, true, rng)?,
            head: Linear::new(
                &scope.sub("head"),
                c2 * (side / 4) * (side / 4),
                10,
                true,
                rng,
            )?,
            side,
        })
    }
}

impl Module<f32> for SmallCnn {
    fn forward(&self, x: &Var<f32>) -> Result<Var<f32>> {
        let n = x.shape()[0];
        let s = self.side;
        let pool = |v: Var<f32>| v.relu()?.max_pool2d((2, 2), (2, 2), (0, 0));
        let h = pool(self.conv1.forward(&x.reshape(&[n, 1, s, s])?)?)?;
        let h = pool(self.conv2.forward(&h)?)?;
        self.head.forward(&h.reshape(&[n, h.numel() / n])?)
    }
}
