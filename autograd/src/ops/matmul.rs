//! Matrix products: dA = G Bᵀ and dB = Aᵀ G, summed over broadcast batch axes.

use super::for_input;
use crate::var::{record, Var};
use tensor::{Element, Result};

impl<T: Element> Var<T> {
    /// Batched matrix product over the last two axes (batch axes broadcast).
    #[track_caller]
    pub fn matmul(&self, other: &Var<T>) -> Result<Var<T>> {
        let v = self.value.matmul(&other.value)?;
        record("matmul", &[self, other], v, |c| {
            let (a, b) = (&c.inputs[0], &c.inputs[1]);
            Ok(vec![
                for_input(a, || c.grad.matmul(&b.t()?)?.sum_to_shape(a.shape()))?,
                for_input(b, || a.t()?.matmul(c.grad)?.sum_to_shape(b.shape()))?,
            ])
        })
    }
}
