//! Moving a `ParamStore` to and from checkpoints.

use super::torch::{Convert, KeyMap};
use super::{AnyTensor, Checkpoint};
use crate::param::ParamStore;
use tensor::{Element, Result};

impl<T: Element> ParamStore<T> {
    /// Every parameter and buffer as named tensors, in store order.
    pub fn to_tensors(&self) -> Vec<(String, AnyTensor)> {
        self.all()
            .iter()
            .map(|p| (p.name().to_string(), AnyTensor::from_tensor(&p.value())))
            .collect()
    }

    /// Sets every parameter and buffer from the checkpoint under its own name and
    /// type. Everything is checked (presence, dtype, shape) before anything is
    /// assigned, so a failed load leaves the model untouched. Extra tensors in the
    /// checkpoint are ignored ([`ParamStore::load_mapped`] reports them, renames
    /// keys and converts types).
    pub fn load_from(&self, ckpt: &Checkpoint) -> Result<()> {
        self.load_mapped(ckpt, &KeyMap::Same, Convert::Never)
            .map(|_| ())
    }
}
