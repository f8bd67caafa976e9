//! Reductions and row-wise ops: sum, mean, prod, max, min, var, std, logsumexp,
//! p-norms, softmax, log_softmax, cumsum.

use crate::var::{record, Var};
use tensor::{layout::normalize_axes, Element, Result, Tensor};

/// The shape of a reduction's output with the reduced axes kept as size 1.
fn kept_shape(shape: &[usize], axes: &[usize]) -> Vec<usize> {
    shape
        .iter()
        .enumerate()
        .map(|(d, &s)| if axes.contains(&d) { 1 } else { s })
        .collect()
}

/// Broadcasts a reduced gradient (or value) back over the reduced axes.
fn expand_back<T: Element>(g: &Var<T>, input_shape: &[usize], axes: &[usize]) -> Result<Var<T>> {
    g.reshape(&kept_shape(input_shape, axes))?
        .broadcast_to(input_shape)
}

fn all_axes(nd: usize) -> Vec<isize> {
    (0..nd as isize).collect()
}

impl<T: Element> Var<T> {
    /// Sum over `axes`.
    #[track_caller]
    pub fn sum(&self, axes: &[isize], keepdim: bool) -> Result<Var<T>> {
        let ax = normalize_axes("sum", axes, self.ndim())?;
        let v = self.value.sum(axes, keepdim)?;
        record("sum", &[self], v, move |c| {
            Ok(vec![Some(expand_back(c.grad, c.inputs[0].shape(), &ax)?)])
        })
    }

    /// Sum of all elements (rank 0).
    #[track_caller]
    pub fn sum_all(&self) -> Result<Var<T>> {
        self.sum(&all_axes(self.ndim()), false)
    }

    /// Mean over `axes`.
    #[track_caller]
    pub fn mean(&self, axes: &[isize], keepdim: bool) -> Result<Var<T>> {
        let ax = normalize_axes("mean", axes, self.ndim())?;
        let v = self.value.mean(axes, keepdim)?;
        let n: usize = ax.iter().map(|&a| self.shape()[a]).product();
        record("mean", &[self], v, move |c| {
            // Scaled before it is broadcast: one multiply per output, not per input.
            let scaled = c.grad.mul_scalar(1.0 / n as f64)?;
            Ok(vec![Some(expand_back(&scaled, c.inputs[0].shape(), &ax)?)])
        })
    }

    /// Mean of all elements (rank 0).
    #[track_caller]
    pub fn mean_all(&self) -> Result<Var<T>> {
        self.mean(&all_axes(self.ndim()), false)
    }

    /// Product over `axes`. The gradient is y/x·g, so it is undefined where an
    /// element is exactly zero.
    #[track_caller]
    pub fn prod(&self, axes: &[isize], keepdim: bool) -> Result<Var<T>> {
        let ax = normalize_axes("prod", axes, self.ndim())?;
        let v = self.value.prod(axes, keepdim)?;
        record("prod", &[self], v, move |c| {
            let x = &c.inputs[0];
            let gy = expand_back(&c.grad.mul(c.output)?, x.shape(), &ax)?;
            Ok(vec![Some(gy.div(x)?)])
        })
    }

    /// Maximum over `axes`; tied maxima share the gradient equally.
    #[track_caller]
    pub fn max(&self, axes: &[isize], keepdim: bool) -> Result<Var<T>> {
        self.extremum("max", axes, keepdim, self.value.max(axes, keepdim)?)
    }

    /// Minimum over `axes`; tied minima share the gradient equally.
    #[track_caller]
    pub fn min(&self, axes: &[isize], keepdim: bool) -> Result<Var<T>> {
        self.extremum("min", axes, keepdim, self.value.min(axes, keepdim)?)
    }

    #[track_caller]
    fn extremum(
        &self,
        op: &'static str,
        axes: &[isize],
        _keepdim: bool,
        v: Tensor<T>,
    ) -> Result<Var<T>> {
        let ax = normalize_axes(op, axes, self.ndim())?;
        record(op, &[self], v, move |c| {
            let x = &c.inputs[0];
            let y = expand_back(&c.output.detach(), x.shape(), &ax)?;
            let mask = x.value.eq(&y.value)?;
            let axes_i: Vec<isize> = ax.iter().map(|&a| a as isize).collect();
            let count = mask.sum(&axes_i, true)?;
            let share = Var::constant(mask.div(&count)?);
            Ok(vec![Some(
                expand_back(c.grad, x.shape(), &ax)?.mul(&share)?,
            )])
        })
    }

    /// Variance over `axes` with `correction` (1: unbiased).
    #[track_caller]
    pub fn var(&self, axes: &[isize], correction: usize, keepdim: bool) -> Result<Var<T>> {
        let ax = normalize_axes("var", axes, self.ndim())?;
        let v = self.value.var(axes, correction, keepdim)?;
        let n: usize = ax.iter().map(|&a| self.shape()[a]).product();
        let axes_i = axes.to_vec();
        record("var", &[self], v, move |c| {
            let x = &c.inputs[0];
            let centred = x.sub(&x.mean(&axes_i, true)?)?;
            let g = expand_back(c.grad, x.shape(), &ax)?;
            Ok(vec![Some(
                g.mul(&centred)?.mul_scalar(2.0 / (n - correction) as f64)?,
            )])
        })
    }

    /// Standard deviation over `axes` with `correction`.
    #[track_caller]
    pub fn std(&self, axes: &[isize], correction: usize, keepdim: bool) -> Result<Var<T>> {
        self.var(axes, correction, keepdim)?.sqrt()
    }

    /// ln Σ eˣ over `axes` (gradient: the softmax over those axes).
    #[track_caller]
    pub fn logsumexp(&self, axes: &[isize], keepdim: bool) -> Result<Var<T>> {
        let ax = normalize_axes("logsumexp", axes, self.ndim())?;
        let v = self.value.logsumexp(axes, keepdim)?;
        record("logsumexp", &[self], v, move |c| {
            let x = &c.inputs[0];
            let y = expand_back(c.output, x.shape(), &ax)?;
            let p = x.sub(&y)?.exp()?;
            Ok(vec![Some(expand_back(c.grad, x.shape(), &ax)?.mul(&p)?)])
        })
    }

    /// The p-norm over `axes` (`f64::INFINITY` for the max norm). The gradient at a
    /// zero norm is NaN for p > 1, as the derivative is undefined there.
    #[track_caller]
    pub fn norm(&self, p: f64, axes: &[isize], keepdim: bool) -> Result<Var<T>> {
        let ax = normalize_axes("norm", axes, self.ndim())?;
        let v = self.value.norm(p, axes, keepdim)?;
        record("norm", &[self], v, move |c| {
            let x = &c.inputs[0];
            let sign = Var::constant(x.value.sign());
            let g = expand_back(c.grad, x.shape(), &ax)?;
            let d = if p == 1.0 {
                sign
            } else if p == 2.0 {
                x.div(&expand_back(c.output, x.shape(), &ax)?)?
            } else if p == f64::INFINITY {
                let y = expand_back(&c.output.detach(), x.shape(), &ax)?;
                let mask = x.value.abs().eq(&y.value)?;
                let axes_i: Vec<isize> = ax.iter().map(|&a| a as isize).collect();
                let count = mask.sum(&axes_i, true)?;
                Var::constant(mask.div(&count)?.mul(&x.value.sign())?)
            } else {
                // sign(x) |x|^(p−1) / y^(p−1)
                let y = expand_back(c.output, x.shape(), &ax)?;
                sign.mul(&x.abs()?.div(&y)?.powf(p - 1.0)?)?
            };
            Ok(vec![Some(g.mul(&d)?)])
        })
    }

    /// Softmax along `axis`; gradient y ⊙ (g − Σ g y).
    #[track_caller]
    pub fn softmax(&self, axis: isize) -> Result<Var<T>> {
        let v = self.value.softmax(axis)?;
        record("softmax", &[self], v, move |c| {
            let gy = c.grad.mul(c.output)?;
            let s = gy.sum(&[axis], true)?;
            Ok(vec![Some(gy.sub(&c.output.mul(&s)?)?)])
        })
    }

    /// Log-softmax along `axis`; gradient g − softmax ⊙ Σ g.
    #[track_caller]
    pub fn log_softmax(&self, axis: isize) -> Result<Var<T>> {
        let v = self.value.log_softmax(axis)?;
        record("log_softmax", &[self], v, move |c| {
            let s = c.grad.sum(&[axis], true)?;
            Ok(vec![Some(c.grad.sub(&c.output.exp()?.mul(&s)?)?)])
        })
    }

    /// Running sum along `axis`; gradient: the reversed running sum.
    #[track_caller]
    pub fn cumsum(&self, axis: isize) -> Result<Var<T>> {
        let v = self.value.cumsum(axis)?;
        record("cumsum", &[self], v, move |c| {
            Ok(vec![Some(
                c.grad.flip(&[axis])?.cumsum(axis)?.flip(&[axis])?,
            )])
        })
    }
}
