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
    ///
    /// ```
    /// use autograd::Var;
    /// use nn::checkpoint::{self, Checkpoint, Limits};
    /// use nn::{Activation, Mlp, Module, ParamStore};
    /// use tensor::{Rng, Tensor};
    /// # fn main() -> tensor::Result<()> {
    /// let model = |sizes: &[usize], seed| -> tensor::Result<(ParamStore<f64>, Mlp<f64>)> {
    ///     let store = ParamStore::new();
    ///     let mlp = Mlp::new(&store.root(), sizes, Activation::Relu, &mut Rng::new(seed))?;
    ///     Ok((store, mlp))
    /// };
    /// let ((trained, a), (fresh, b)) = (model(&[3, 5, 2], 1)?, model(&[3, 5, 2], 2)?);
    /// let path = std::env::temp_dir().join(format!("nn-load-from-{}.safetensors", std::process::id()));
    /// checkpoint::save(&path, &Checkpoint { tensors: trained.to_tensors(), metadata: vec![] })?;
    /// let file = checkpoint::load(&path, &Limits::default())?;
    /// # std::fs::remove_file(&path).ok();
    /// fresh.load_from(&file)?;
    /// let x = Var::constant(Tensor::ones(&[4, 3])?);
    /// assert!(a.forward(&x)?.value().bit_eq(b.forward(&x)?.value()));
    /// // Another architecture is refused (before anything is assigned).
    /// assert!(model(&[3, 6, 2], 3)?.0.load_from(&file).is_err());
    /// # Ok(())
    /// # }
    /// ```
    pub fn load_from(&self, ckpt: &Checkpoint) -> Result<()> {
        self.load_mapped(ckpt, &KeyMap::Same, Convert::Never)
            .map(|_| ())
    }
}
