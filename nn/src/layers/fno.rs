//! The Fourier neural operator (Li et al., 2021) in 1-D and 2-D: the grid coordinates
//! are appended to the input function's values, a pointwise lifting layer widens them
//! to `width` channels, `layers` Fourier blocks follow (spectral convolution plus a
//! pointwise linear path, then the activation, except after the last block, as in the
//! reference code), and a pointwise head projects to the output channels through a
//! hidden layer of `projection` units.
//!
//! Channels are last throughout (`[batch, points, channels]` or `[batch, rows, cols,
//! channels]`), so no layer needs a transpose.

use super::spectral_conv::{SpectralConv1d, SpectralConv2d, SpectralPath};
use crate::module::{Activation, Module};
use crate::param::Scope;
use crate::Linear;
use autograd::Var;
use tensor::{error::fmt_shape, Element, Error, Result, Rng, Tensor};

/// The shape of an [`Fno`].
#[derive(Clone, Debug, PartialEq)]
pub struct FnoConfig {
    /// Channels of the input function (the grid coordinates are added to these).
    pub in_channels: usize,
    /// Channels of the output function.
    pub out_channels: usize,
    /// Channels inside the Fourier blocks.
    pub width: usize,
    /// Kept frequencies per spatial axis: one entry for 1-D, two for 2-D.
    pub modes: Vec<usize>,
    /// Fourier blocks.
    pub layers: usize,
    /// Hidden units of the projection head.
    pub projection: usize,
    /// Activation between blocks and in the head.
    pub activation: Activation,
    /// How 1-D spectral convolutions transform.
    pub path: SpectralPath,
}

impl FnoConfig {
    /// The reference 1-D Burgers setting: width 64, 16 modes, 4 layers, head 128, GELU.
    pub fn burgers() -> Self {
        FnoConfig {
            in_channels: 1,
            out_channels: 1,
            width: 64,
            modes: vec![16],
            layers: 4,
            projection: 128,
            activation: Activation::Gelu,
            path: SpectralPath::Auto,
        }
    }
}

/// A spectral convolution of either dimension.
enum Spectral<T: Element> {
    One(SpectralConv1d<T>),
    Two(SpectralConv2d<T>),
}

/// One Fourier block: spectral convolution plus a pointwise linear map (a 1×1
/// convolution), without the activation.
pub struct FnoBlock<T: Element> {
    spectral: Spectral<T>,
    /// The pointwise path (PyTorch's 1×1-convolution initialisation).
    pub pointwise: Linear<T>,
}

impl<T: Element> FnoBlock<T> {
    fn new(scope: &Scope<T>, width: usize, cfg: &FnoConfig, rng: &mut Rng) -> Result<Self> {
        let spectral = match cfg.modes.as_slice() {
            [m] => Spectral::One(SpectralConv1d::new(
                &scope.sub("spectral"),
                width,
                width,
                *m,
                cfg.path,
                rng,
            )?),
            [m1, m2] => Spectral::Two(SpectralConv2d::new(
                &scope.sub("spectral"),
                width,
                width,
                (*m1, *m2),
                rng,
            )?),
            other => {
                return Err(Error::value(
                    "FnoBlock",
                    format!("modes must have one or two entries, got {other:?}"),
                ))
            }
        };
        Ok(FnoBlock {
            spectral,
            pointwise: Linear::new(&scope.sub("pointwise"), width, width, true, rng)?,
        })
    }
}

impl<T: Element> Module<T> for FnoBlock<T> {
    /// `[B, spatial..., C] → [B, spatial..., C]`.
    fn forward(&self, x: &Var<T>) -> Result<Var<T>> {
        let spectral = match &self.spectral {
            Spectral::One(s) => s.forward(x)?,
            Spectral::Two(s) => s.forward(x)?,
        };
        spectral.add(&self.pointwise.forward(x)?)
    }
}

/// The Fourier neural operator.
///
/// ```
/// use autograd::Var;
/// use nn::{Activation, Fno, FnoConfig, Module, ParamStore, SpectralPath};
/// use tensor::{Rng, Tensor};
/// # fn main() -> tensor::Result<()> {
/// let cfg = FnoConfig {
///     in_channels: 1, out_channels: 1, width: 8, modes: vec![4], layers: 2,
///     projection: 16, activation: Activation::Gelu, path: SpectralPath::Auto,
/// };
/// let store = ParamStore::<f32>::new();
/// let fno = Fno::new(&store.root().sub("fno"), cfg, &mut Rng::new(0))?;
/// let u = Tensor::rand_normal(&[3, 32, 1], 0.0, 1.0, &mut Rng::new(1))?; // [batch, points, channels]
/// assert_eq!(fno.forward(&Var::constant(u))?.shape(), &[3, 32, 1]);
/// // The same weights apply on a finer grid (an operator, not a fixed-size net).
/// assert_eq!(fno.forward(&Var::constant(Tensor::zeros(&[1, 64, 1])?))?.shape(), &[1, 64, 1]);
/// assert!(fno.forward(&Var::constant(Tensor::zeros(&[1, 32, 2])?)).is_err());
/// # Ok(())
/// # }
/// ```
pub struct Fno<T: Element> {
    cfg: FnoConfig,
    /// Pointwise lifting layer (input channels + coordinates → width).
    pub lift: Linear<T>,
    /// The Fourier blocks.
    pub blocks: Vec<FnoBlock<T>>,
    /// First head layer (width → projection).
    pub fc1: Linear<T>,
    /// Last head layer (projection → output channels): the layer a closed-form head
    /// replaces.
    pub fc2: Linear<T>,
}

impl<T: Element> Fno<T> {
    /// An FNO with parameters in `scope`.
    pub fn new(scope: &Scope<T>, cfg: FnoConfig, rng: &mut Rng) -> Result<Self> {
        let dims = cfg.modes.len();
        if !(1..=2).contains(&dims) || cfg.layers == 0 || cfg.width == 0 {
            return Err(Error::value(
                "Fno",
                format!(
                    "needs 1 or 2 spatial axes (got {dims}), at least one layer and a positive width"
                ),
            ));
        }
        let lift = Linear::new(
            &scope.sub("lift"),
            cfg.in_channels + dims,
            cfg.width,
            true,
            rng,
        )?;
        let blocks = (0..cfg.layers)
            .map(|i| FnoBlock::new(&scope.sub(format!("block{i}")), cfg.width, &cfg, rng))
            .collect::<Result<_>>()?;
        let fc1 = Linear::new(&scope.sub("fc1"), cfg.width, cfg.projection, true, rng)?;
        let fc2 = Linear::new(
            &scope.sub("fc2"),
            cfg.projection,
            cfg.out_channels,
            true,
            rng,
        )?;
        Ok(Fno {
            cfg,
            lift,
            blocks,
            fc1,
            fc2,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &FnoConfig {
        &self.cfg
    }

    /// `x` with the grid coordinates (linspace(0, 1, n) per axis, as the reference
    /// code) appended as channels.
    fn with_grid(&self, x: &Var<T>) -> Result<Var<T>> {
        let dims = self.cfg.modes.len();
        let shape = x.shape().to_vec();
        if shape.len() != dims + 2 || shape[dims + 1] != self.cfg.in_channels {
            return Err(Error::shape(
                "Fno",
                format!(
                    "input {} must be [batch, {}{}]",
                    fmt_shape(&shape),
                    if dims == 1 {
                        "points, "
                    } else {
                        "rows, cols, "
                    },
                    self.cfg.in_channels
                ),
            ));
        }
        let b = shape[0];
        let spatial = &shape[1..=dims];
        let axis = |n: usize| -> Result<Tensor<T>> { Tensor::linspace(0.0, 1.0, n) };
        let grid = if dims == 1 {
            axis(spatial[0])?
                .reshape(&[1, spatial[0], 1])?
                .broadcast_to(&[b, spatial[0], 1])?
        } else {
            let (h, w) = (spatial[0], spatial[1]);
            let rows = axis(h)?
                .reshape(&[1, h, 1, 1])?
                .broadcast_to(&[b, h, w, 1])?;
            let cols = axis(w)?
                .reshape(&[1, 1, w, 1])?
                .broadcast_to(&[b, h, w, 1])?;
            Tensor::cat(&[&rows, &cols], -1)?
        };
        Var::cat(&[x, &Var::constant(grid.contiguous())], -1)
    }

    /// The head's hidden features `[batch, spatial..., projection]`: everything up to
    /// the last layer.
    pub fn features(&self, x: &Var<T>) -> Result<Var<T>> {
        let mut h = self.lift.forward(&self.with_grid(x)?)?;
        for (i, block) in self.blocks.iter().enumerate() {
            h = block.forward(&h)?;
            if i + 1 < self.blocks.len() {
                h = self.cfg.activation.apply(&h)?;
            }
        }
        self.cfg.activation.apply(&self.fc1.forward(&h)?)
    }
}

impl<T: Element> Module<T> for Fno<T> {
    /// `[batch, spatial..., in_channels] → [batch, spatial..., out_channels]`.
    fn forward(&self, x: &Var<T>) -> Result<Var<T>> {
        self.fc2.forward(&self.features(x)?)
    }
}
