//! Moving a `ParamStore` to and from checkpoints.

use super::{AnyTensor, Checkpoint};
use crate::param::ParamStore;
use tensor::{error::fmt_shape, Element, Error, Result};

impl<T: Element> ParamStore<T> {
    /// Every parameter and buffer as named tensors, in store order.
    pub fn to_tensors(&self) -> Vec<(String, AnyTensor)> {
        self.all()
            .iter()
            .map(|p| (p.name().to_string(), AnyTensor::from_tensor(&p.value())))
            .collect()
    }

    /// Sets every parameter and buffer from the checkpoint. Everything is checked
    /// (presence, dtype, shape) before anything is assigned, so a failed load leaves
    /// the model untouched. Extra tensors in the checkpoint are ignored.
    pub fn load_from(&self, ckpt: &Checkpoint) -> Result<()> {
        let params = self.all();
        let mut values = Vec::with_capacity(params.len());
        for p in &params {
            let t = ckpt.tensor::<T>(p.name())?;
            if t.shape() != p.shape().as_slice() {
                return Err(Error::format(
                    "checkpoint",
                    format!(
                        "tensor '{}' has shape {}, the model expects {}",
                        p.name(),
                        fmt_shape(t.shape()),
                        fmt_shape(&p.shape())
                    ),
                ));
            }
            values.push(t);
        }
        for (p, v) in params.iter().zip(values) {
            p.set(v)?;
        }
        Ok(())
    }
}
