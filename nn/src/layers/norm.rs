//! Batch normalisation (with running statistics) and group normalisation, for
//! `[N, C]` and `[N, C, ...]` inputs.

use crate::module::Module;
use crate::param::{Param, Scope};
use autograd::{no_grad, Var};
use tensor::{error::fmt_shape, Element, Error, Result, Tensor};

/// The affine parameters γ (ones) and β (zeros) of `channels` channels.
fn affine<T: Element>(scope: &Scope<T>, channels: usize) -> Result<(Param<T>, Param<T>)> {
    Ok((
        scope.param("weight", Tensor::ones(&[channels])?)?,
        scope.param("bias", Tensor::zeros(&[channels])?)?,
    ))
}

/// γ and β broadcast along axis 1 of an input of rank `rank`.
fn per_channel<T: Element>(p: &Param<T>, rank: usize) -> Result<Var<T>> {
    let mut shape = vec![1; rank];
    shape[1] = p.shape()[0];
    p.var().reshape(&shape)
}

fn check_channels<T: Element>(op: &'static str, x: &Var<T>, channels: usize) -> Result<()> {
    if x.ndim() < 2 || x.shape()[1] != channels {
        return Err(Error::shape(
            op,
            format!(
                "input {} must be [N, {channels}, ...]",
                fmt_shape(x.shape())
            ),
        ));
    }
    Ok(())
}

/// Batch normalisation (Ioffe & Szegedy) over every axis but the channel axis 1:
/// `BatchNorm1d` for `[N, C]` or `[N, C, L]`, `BatchNorm2d` for `[N, C, H, W]`. In
/// training mode it normalises with the batch statistics (biased variance) and moves
/// the running mean and unbiased variance by `momentum`; in evaluation mode it uses
/// the running statistics. PyTorch's defaults: momentum 0.1, ε = 1e-5.
///
/// ```
/// use autograd::Var;
/// use nn::{BatchNorm, Module, ParamStore};
/// use tensor::Tensor;
/// # fn main() -> tensor::Result<()> {
/// let store = ParamStore::<f64>::new();
/// let bn = BatchNorm::new(&store.root().sub("bn"), 2)?;
/// // A batch of two samples [N, C]: channel 0 holds 1 and 3, channel 1 holds 10 and 30.
/// let x = Var::constant(Tensor::from_vec(vec![1.0, 10.0, 3.0, 30.0], &[2, 2])?);
/// let y = bn.forward(&x)?.value().to_vec(); // training: the batch's statistics
/// assert!((y[0] + 1.0).abs() < 1e-5 && (y[3] - 1.0).abs() < 1e-5);
/// // The running statistics moved by the momentum 0.1 (unbiased variance).
/// let (mean, var) = (bn.running_mean.value().to_vec(), bn.running_var.value().to_vec());
/// assert!((mean[0] - 0.2).abs() < 1e-12 && (var[1] - (0.9 + 0.1 * 200.0)).abs() < 1e-12);
/// // Evaluation uses them instead.
/// store.eval();
/// let y = bn.forward(&x)?.value().to_vec();
/// assert!((y[0] - (1.0 - mean[0]) / (var[0] + 1e-5).sqrt()).abs() < 1e-12);
/// # Ok(())
/// # }
/// ```
pub struct BatchNorm<T: Element> {
    /// Scale γ `[C]`.
    pub weight: Param<T>,
    /// Shift β `[C]`.
    pub bias: Param<T>,
    /// Running mean `[C]` (a buffer).
    pub running_mean: Param<T>,
    /// Running variance `[C]` (a buffer).
    pub running_var: Param<T>,
    momentum: f64,
    eps: f64,
    scope: Scope<T>,
}

impl<T: Element> BatchNorm<T> {
    /// Normalisation of `channels` channels with PyTorch's defaults.
    pub fn new(scope: &Scope<T>, channels: usize) -> Result<Self> {
        Self::with(scope, channels, 0.1, 1e-5)
    }

    /// With an explicit momentum in (0, 1] and ε > 0.
    pub fn with(scope: &Scope<T>, channels: usize, momentum: f64, eps: f64) -> Result<Self> {
        if channels == 0 || !(momentum > 0.0 && momentum <= 1.0) || !(eps > 0.0) {
            return Err(Error::value(
                "BatchNorm",
                format!("needs channels > 0, momentum in (0, 1] and ε > 0, got {channels}, {momentum}, {eps}"),
            ));
        }
        let (weight, bias) = affine(scope, channels)?;
        Ok(BatchNorm {
            weight,
            bias,
            running_mean: scope.buffer("running_mean", Tensor::zeros(&[channels])?)?,
            running_var: scope.buffer("running_var", Tensor::ones(&[channels])?)?,
            momentum,
            eps,
            scope: scope.clone(),
        })
    }
}

impl<T: Element> Module<T> for BatchNorm<T> {
    fn forward(&self, x: &Var<T>) -> Result<Var<T>> {
        let c = self.weight.shape()[0];
        check_channels("BatchNorm", x, c)?;
        let rank = x.ndim();
        let count: usize = x.numel() / c;
        if !self.scope.store().is_training() {
            // y = x·a + b with the per-channel a = γ/√(σ² + ε) and b = β − μ·a
            // from the running statistics, as PyTorch's CPU kernel folds it.
            let shape: Vec<usize> = (0..rank).map(|a| if a == 1 { c } else { 1 }).collect();
            let mean = Var::constant(self.running_mean.value().reshape(&shape)?);
            let var = Var::constant(self.running_var.value().reshape(&shape)?);
            let scale = var
                .add_scalar(self.eps)?
                .rsqrt()?
                .mul(&per_channel(&self.weight, rank)?)?;
            let shift = per_channel(&self.bias, rank)?.sub(&mean.mul(&scale)?)?;
            return x.mul(&scale)?.add(&shift);
        }
        if count < 2 {
            return Err(Error::value(
                "BatchNorm",
                format!(
                    "training needs more than one value per channel, got input {}",
                    fmt_shape(x.shape())
                ),
            ));
        }
        // One op with a fused backward (three passes over the activation).
        let (y, batch) = x.batch_norm(&self.weight.var(), &self.bias.var(), self.eps)?;
        no_grad(|| -> Result<()> {
            let m = self.momentum;
            let unbiased = batch.var.mul_scalar(count as f64 / (count - 1) as f64);
            self.running_mean.set(
                self.running_mean
                    .value()
                    .mul_scalar(1.0 - m)
                    .add(&batch.mean.mul_scalar(m))?,
            )?;
            self.running_var.set(
                self.running_var
                    .value()
                    .mul_scalar(1.0 - m)
                    .add(&unbiased.mul_scalar(m))?,
            )
        })?;
        Ok(y)
    }
}

/// Group normalisation (Wu & He): channels split into `groups`, each normalised over
/// its channels and all positions of one sample; the same in training and evaluation.
pub struct GroupNorm<T: Element> {
    /// Scale γ `[C]`.
    pub weight: Param<T>,
    /// Shift β `[C]`.
    pub bias: Param<T>,
    groups: usize,
    eps: f64,
}

impl<T: Element> GroupNorm<T> {
    /// `channels` channels in `groups` groups (which must divide them), ε = 1e-5.
    pub fn new(scope: &Scope<T>, groups: usize, channels: usize) -> Result<Self> {
        if groups == 0 || channels == 0 || !channels.is_multiple_of(groups) {
            return Err(Error::value(
                "GroupNorm",
                format!("{groups} groups must divide {channels} channels"),
            ));
        }
        let (weight, bias) = affine(scope, channels)?;
        Ok(GroupNorm {
            weight,
            bias,
            groups,
            eps: 1e-5,
        })
    }
}

impl<T: Element> Module<T> for GroupNorm<T> {
    fn forward(&self, x: &Var<T>) -> Result<Var<T>> {
        let c = self.weight.shape()[0];
        check_channels("GroupNorm", x, c)?;
        let shape = x.shape().to_vec();
        let n = shape[0];
        let grouped = x.reshape(&[n, self.groups, x.numel() / (n * self.groups).max(1)])?;
        let mean = grouped.mean(&[2], true)?;
        let var = grouped.var(&[2], 0, true)?;
        let rank = shape.len();
        grouped
            .sub(&mean)?
            .mul(&var.add_scalar(self.eps)?.rsqrt()?)?
            .reshape(&shape)?
            .mul(&per_channel(&self.weight, rank)?)?
            .add(&per_channel(&self.bias, rank)?)
    }
}
