//! Indexing and assembling: index_select / index_add, gather / scatter_add (each the
//! other's adjoint), concat, stack, split, chunk, pad and repeat.

use super::for_input;
use crate::var::{record, Var};
use tensor::{error::fmt_shape, layout::normalize_axis, Element, Error, Result, Tensor};

impl<T: Element> Var<T> {
    /// Slices at `indices` along `axis` (gradient: `index_add` into zeros).
    #[track_caller]
    pub fn index_select(&self, axis: isize, indices: &[usize]) -> Result<Var<T>> {
        let v = self.value.index_select(axis, indices)?;
        let idx = indices.to_vec();
        record("index_select", &[self], v, move |c| {
            let zeros = Var::constant(Tensor::zeros(c.inputs[0].shape())?);
            Ok(vec![Some(zeros.index_add(axis, &idx, c.grad)?)])
        })
    }

    /// `self` with the slices of `src` added at `indices` along `axis`.
    #[track_caller]
    pub fn index_add(&self, axis: isize, indices: &[usize], src: &Var<T>) -> Result<Var<T>> {
        let v = self.value.index_add(axis, indices, &src.value)?;
        let idx = indices.to_vec();
        record("index_add", &[self, src], v, move |c| {
            Ok(vec![
                for_input(&c.inputs[0], || Ok(c.grad.clone()))?,
                for_input(&c.inputs[1], || c.grad.index_select(axis, &idx))?,
            ])
        })
    }

    /// `out[.., j, ..] = self[.., index[.., j, ..], ..]` along `axis` (gradient:
    /// `scatter_add` into zeros).
    #[track_caller]
    pub fn gather(&self, axis: isize, index: &Tensor<usize>) -> Result<Var<T>> {
        let v = self.value.gather(axis, index)?;
        let index = index.clone();
        record("gather", &[self], v, move |c| {
            let zeros = Var::constant(Tensor::zeros(c.inputs[0].shape())?);
            Ok(vec![Some(zeros.scatter_add(axis, &index, c.grad)?)])
        })
    }

    /// `self` with `src` added at the positions `index` names along `axis`.
    #[track_caller]
    pub fn scatter_add(&self, axis: isize, index: &Tensor<usize>, src: &Var<T>) -> Result<Var<T>> {
        let v = self.value.scatter_add(axis, index, &src.value)?;
        let index = index.clone();
        record("scatter_add", &[self, src], v, move |c| {
            Ok(vec![
                for_input(&c.inputs[0], || Ok(c.grad.clone()))?,
                for_input(&c.inputs[1], || c.grad.gather(axis, &index))?,
            ])
        })
    }

    /// Joins `vars` along `axis` (gradient: the matching pieces).
    #[track_caller]
    pub fn cat(vars: &[&Var<T>], axis: isize) -> Result<Var<T>> {
        let values: Vec<&Tensor<T>> = vars.iter().map(|v| &v.value).collect();
        let out = Tensor::cat(&values, axis)?;
        let ax = normalize_axis("cat", axis, out.ndim())?;
        let sizes: Vec<usize> = vars.iter().map(|v| v.shape()[ax]).collect();
        record("cat", vars, out, move |c| {
            let mut start = 0;
            let mut grads = Vec::with_capacity(sizes.len());
            for (input, &s) in c.inputs.iter().zip(&sizes) {
                grads.push(for_input(input, || c.grad.narrow(ax as isize, start, s))?);
                start += s;
            }
            Ok(grads)
        })
    }

    /// Stacks same-shaped `vars` along a new axis.
    #[track_caller]
    pub fn stack(vars: &[&Var<T>], axis: isize) -> Result<Var<T>> {
        let first = vars
            .first()
            .ok_or_else(|| Error::value("stack", "needs at least one Var"))?;
        if let Some(v) = vars.iter().find(|v| v.shape() != first.shape()) {
            return Err(Error::shape(
                "stack",
                format!(
                    "shapes {} and {} differ",
                    fmt_shape(first.shape()),
                    fmt_shape(v.shape())
                ),
            ));
        }
        let ax = normalize_axis("stack", axis, first.ndim() + 1)? as isize;
        let expanded = vars
            .iter()
            .map(|v| v.unsqueeze(ax))
            .collect::<Result<Vec<_>>>()?;
        Var::cat(&expanded.iter().collect::<Vec<_>>(), ax)
    }

    /// Consecutive pieces of `sizes` along `axis`.
    #[track_caller]
    pub fn split(&self, axis: isize, sizes: &[usize]) -> Result<Vec<Var<T>>> {
        self.value.split(axis, sizes)?;
        let mut start = 0;
        sizes
            .iter()
            .map(|&s| {
                let piece = self.narrow(axis, start, s);
                start += s;
                piece
            })
            .collect()
    }

    /// `n` pieces of ⌈len/n⌉ along `axis` (the last may be smaller).
    #[track_caller]
    pub fn chunk(&self, n: usize, axis: isize) -> Result<Vec<Var<T>>> {
        let sizes: Vec<usize> = self
            .value
            .chunk(n, axis)?
            .iter()
            .map(|t| t.shape()[normalize_axis("chunk", axis, self.ndim()).unwrap_or(0)])
            .collect();
        self.split(axis, &sizes)
    }

    /// Pads with the constant `value`, `pads[d] = (before, after)` (gradient: the
    /// interior).
    #[track_caller]
    pub fn pad(&self, pads: &[(usize, usize)], value: f64) -> Result<Var<T>> {
        let v = self.value.pad(pads, T::from_f64(value))?;
        let pads = pads.to_vec();
        record("pad", &[self], v, move |c| {
            let mut g = c.grad.clone();
            for (d, (&(before, _), &len)) in pads.iter().zip(c.inputs[0].shape()).enumerate() {
                g = g.narrow(d as isize, before, len)?;
            }
            Ok(vec![Some(g)])
        })
    }

    /// Tiles `reps[d]` times along each axis (leading reps add axes), composed of
    /// reshape and broadcast so that its gradient sums the tiles.
    #[track_caller]
    pub fn repeat(&self, reps: &[usize]) -> Result<Var<T>> {
        let out_shape = self.value.repeat(reps)?.shape().to_vec();
        let lead = reps.len() - self.ndim();
        let mut interleaved = Vec::new();
        let mut target = Vec::new();
        for (i, &r) in reps.iter().enumerate() {
            let d = if i < lead { 1 } else { self.shape()[i - lead] };
            interleaved.extend([1, d]);
            target.extend([r, d]);
        }
        self.reshape(&interleaved)?
            .broadcast_to(&target)?
            .reshape(&out_shape)
    }
}
