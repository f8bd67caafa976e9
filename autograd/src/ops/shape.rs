//! Views and shape ops: broadcast and its adjoint sum_to_shape, reshape, permute,
//! slice and its adjoint embed_slice, squeeze/unsqueeze, flip. Every rule is another
//! view op, so these are differentiable to any order.

use crate::var::{record, Var};
use tensor::{layout::normalize_axis, Element, Result, Tensor};

impl<T: Element> Var<T> {
    /// Broadcasts to `shape` (gradient: summed back with `sum_to_shape`).
    #[track_caller]
    pub fn broadcast_to(&self, shape: &[usize]) -> Result<Var<T>> {
        if self.shape() == shape {
            return Ok(self.clone());
        }
        let v = self.value.broadcast_to(shape)?;
        record("broadcast_to", &[self], v, |c| {
            Ok(vec![Some(c.grad.sum_to_shape(c.inputs[0].shape())?)])
        })
    }

    /// Sums the axes that broadcasting from `shape` added or expanded (gradient:
    /// broadcast back).
    #[track_caller]
    pub fn sum_to_shape(&self, shape: &[usize]) -> Result<Var<T>> {
        if self.shape() == shape {
            return Ok(self.clone());
        }
        let v = self.value.sum_to_shape(shape)?;
        record("sum_to_shape", &[self], v, |c| {
            Ok(vec![Some(c.grad.broadcast_to(c.inputs[0].shape())?)])
        })
    }

    /// The same elements in another shape.
    #[track_caller]
    pub fn reshape(&self, shape: &[usize]) -> Result<Var<T>> {
        if self.shape() == shape {
            return Ok(self.clone());
        }
        let v = self.value.reshape(shape)?;
        record("reshape", &[self], v, |c| {
            Ok(vec![Some(c.grad.reshape(c.inputs[0].shape())?)])
        })
    }

    /// All elements as a 1-D `Var`.
    #[track_caller]
    pub fn flatten(&self) -> Result<Var<T>> {
        self.reshape(&[self.numel()])
    }

    /// Reorders axes (gradient: the inverse permutation).
    #[track_caller]
    pub fn permute(&self, axes: &[isize]) -> Result<Var<T>> {
        let v = self.value.permute(axes)?;
        let nd = self.ndim();
        let mut inverse = vec![0isize; nd];
        for (i, &a) in axes.iter().enumerate() {
            inverse[normalize_axis("permute", a, nd)?] = i as isize;
        }
        record("permute", &[self], v, move |c| {
            Ok(vec![Some(c.grad.permute(&inverse)?)])
        })
    }

    /// Swaps two axes.
    #[track_caller]
    pub fn transpose(&self, a: isize, b: isize) -> Result<Var<T>> {
        let v = self.value.transpose(a, b)?;
        record("transpose", &[self], v, move |c| {
            Ok(vec![Some(c.grad.transpose(a, b)?)])
        })
    }

    /// Swaps the last two axes.
    #[track_caller]
    pub fn t(&self) -> Result<Var<T>> {
        self.value.t()?;
        self.transpose(-2, -1)
    }

    /// Elements `start, start + step, ...` below `end` along `axis` (gradient: the
    /// same positions of a zero tensor, `embed_slice`).
    #[track_caller]
    pub fn slice(&self, axis: isize, start: usize, end: usize, step: usize) -> Result<Var<T>> {
        let v = self.value.slice(axis, start, end, step)?;
        let full = self.shape().to_vec();
        record("slice", &[self], v, move |c| {
            Ok(vec![Some(c.grad.embed_slice(&full, axis, start, step)?)])
        })
    }

    /// The `len` elements from `start` along `axis`.
    #[track_caller]
    pub fn narrow(&self, axis: isize, start: usize, len: usize) -> Result<Var<T>> {
        self.value.narrow(axis, start, len)?;
        self.slice(axis, start, start + len, 1)
    }

    /// The slice at `index` along `axis`, with the axis removed.
    #[track_caller]
    pub fn index_axis(&self, axis: isize, index: usize) -> Result<Var<T>> {
        let ax = normalize_axis("index_axis", axis, self.ndim())?;
        self.value.index_axis(axis, index)?;
        self.narrow(axis, index, 1)?.squeeze(ax as isize)
    }

    /// A zero tensor of shape `full` with `self` at elements `start, start + step, ...`
    /// along `axis`: the adjoint of [`Var::slice`] (gradient: that slice).
    #[track_caller]
    pub fn embed_slice(
        &self,
        full: &[usize],
        axis: isize,
        start: usize,
        step: usize,
    ) -> Result<Var<T>> {
        let v = Tensor::zeros(full)?.slice_assign(axis, start, step, &self.value)?;
        let end = start
            + self
                .shape()
                .get(normalize_axis("embed_slice", axis, full.len())?)
                .map_or(0, |&n| if n == 0 { 0 } else { (n - 1) * step + 1 });
        record("embed_slice", &[self], v, move |c| {
            Ok(vec![Some(c.grad.slice(axis, start, end, step)?)])
        })
    }

    /// Removes a size-1 axis.
    #[track_caller]
    pub fn squeeze(&self, axis: isize) -> Result<Var<T>> {
        let v = self.value.squeeze(axis)?;
        record("squeeze", &[self], v, |c| {
            Ok(vec![Some(c.grad.reshape(c.inputs[0].shape())?)])
        })
    }

    /// Inserts a size-1 axis at `axis`.
    #[track_caller]
    pub fn unsqueeze(&self, axis: isize) -> Result<Var<T>> {
        let v = self.value.unsqueeze(axis)?;
        record("unsqueeze", &[self], v, |c| {
            Ok(vec![Some(c.grad.reshape(c.inputs[0].shape())?)])
        })
    }

    /// Reverses `axes` (gradient: the same flip).
    #[track_caller]
    pub fn flip(&self, axes: &[isize]) -> Result<Var<T>> {
        let v = self.value.flip(axes)?;
        let axes = axes.to_vec();
        record("flip", &[self], v, move |c| {
            Ok(vec![Some(c.grad.flip(&axes)?)])
        })
    }
}
