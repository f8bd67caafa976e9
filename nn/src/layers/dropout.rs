//! Dropout with its own seeded generator.

use crate::module::Module;
use crate::param::ParamStore;
use autograd::Var;
use std::sync::Mutex;
use tensor::{Element, Error, Result, Rng, Tensor};

/// Zeroes each element with probability p in training mode and scales the rest by
/// 1/(1 − p); the identity in evaluation mode. The mask comes from the layer's own
/// generator, whose state is saved with checkpoints.
pub struct Dropout<T: Element> {
    p: f64,
    store: ParamStore<T>,
    rng: Mutex<Rng>,
}

impl<T: Element> Dropout<T> {
    /// Dropout with probability `p` in [0, 1), following `store`'s mode.
    pub fn new(store: &ParamStore<T>, p: f64, rng: Rng) -> Result<Self> {
        if !(0.0..1.0).contains(&p) {
            return Err(Error::value(
                "Dropout",
                format!("p must be in [0, 1), got {p}"),
            ));
        }
        Ok(Dropout {
            p,
            store: store.clone(),
            rng: Mutex::new(rng),
        })
    }

    /// The generator state (for checkpoints).
    pub fn rng_state(&self) -> [u8; 32] {
        self.rng.lock().unwrap_or_else(|p| p.into_inner()).state()
    }

    /// Restores the generator state.
    pub fn set_rng_state(&self, state: [u8; 32]) -> Result<()> {
        *self.rng.lock().unwrap_or_else(|p| p.into_inner()) = Rng::from_state(state)?;
        Ok(())
    }
}

impl<T: Element> Module<T> for Dropout<T> {
    fn forward(&self, x: &Var<T>) -> Result<Var<T>> {
        if !self.store.is_training() || self.p == 0.0 {
            return Ok(x.clone());
        }
        let mut rng = self.rng.lock().unwrap_or_else(|p| p.into_inner());
        let keep = Tensor::<T>::rand_bernoulli(x.shape(), 1.0 - self.p, &mut rng)?;
        x.mul(&Var::constant(keep.mul_scalar(1.0 / (1.0 - self.p))))
    }
}
