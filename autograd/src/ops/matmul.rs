//! Matrix products: dA = G Bᵀ and dB = Aᵀ G, summed over broadcast batch axes.
//!
//! When an operand is a transposed view (as a `Linear` weight used as Wᵀ is), its
//! gradient is computed as the transpose of the product in the other order —
//! dB = (Gᵀ A)ᵀ — so that it comes out with the operand's own layout and the
//! transpose's backward hands back a contiguous gradient without a copy. Both orders
//! form each element from the same products in the same order, so the values are
//! identical.

use super::for_input;
use crate::var::{record, Var};
use tensor::{Element, Result};

/// True when the last two axes are stored column-major (a transposed matrix view).
fn column_major<T: Element>(v: &Var<T>) -> bool {
    let s = v.value().strides();
    let d = v.shape();
    let n = d.len();
    n >= 2 && d[n - 2] > 1 && d[n - 1] > 1 && s[n - 2] == 1 && s[n - 1] == d[n - 2] as isize
}

impl<T: Element> Var<T> {
    /// Batched matrix product over the last two axes (batch axes broadcast).
    #[track_caller]
    pub fn matmul(&self, other: &Var<T>) -> Result<Var<T>> {
        let v = self.value.matmul(&other.value)?;
        record("matmul", &[self, other], v, |c| {
            let (a, b) = (&c.inputs[0], &c.inputs[1]);
            Ok(vec![
                for_input(a, || {
                    let g = if column_major(a) {
                        b.matmul(&c.grad.t()?)?.t()?
                    } else {
                        c.grad.matmul(&b.t()?)?
                    };
                    g.sum_to_shape(a.shape())
                })?,
                for_input(b, || {
                    let g = if column_major(b) {
                        c.grad.t()?.matmul(a)?.t()?
                    } else {
                        a.t()?.matmul(c.grad)?
                    };
                    g.sum_to_shape(b.shape())
                })?,
            ])
        })
    }
}
