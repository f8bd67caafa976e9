//! Embedding table.

use crate::init;
use crate::param::{Param, Scope};
use autograd::Var;
use tensor::{error::fmt_shape, Element, Error, Result, Rng};

/// A table of `count` vectors of size `dim`, looked up by index (N(0, 1) at start,
/// as in PyTorch).
///
/// ```
/// use autograd::backward;
/// use nn::{Embedding, ParamStore};
/// use tensor::Rng;
/// # fn main() -> tensor::Result<()> {
/// let store = ParamStore::<f64>::new();
/// let emb = Embedding::new(&store.root().sub("tok"), 10, 4, &mut Rng::new(0))?;
/// let v = emb.forward_ids(&[3, 7, 3, 0, 1, 2], &[2, 3])?; // two sequences of three ids
/// assert_eq!(v.shape(), &[2, 3, 4]);
/// let table = emb.weight.value();
/// assert_eq!(v.value().index_axis(0, 0)?.index_axis(0, 2)?.to_vec(), table.index_axis(0, 3)?.to_vec());
/// // Gradients reach the rows looked up, once per use.
/// let g = backward(&v.sum_all()?)?;
/// let gw = g.get(&emb.weight.var()).unwrap();
/// assert_eq!(gw.index_axis(0, 3)?.to_vec(), vec![2.0; 4]);
/// assert_eq!(gw.index_axis(0, 9)?.to_vec(), vec![0.0; 4]);
/// assert!(emb.forward_ids(&[10], &[1]).is_err()); // no row 10
/// # Ok(())
/// # }
/// ```
pub struct Embedding<T: Element> {
    /// The table `[count, dim]`.
    pub weight: Param<T>,
}

impl<T: Element> Embedding<T> {
    /// A table of `count` vectors of size `dim`.
    pub fn new(scope: &Scope<T>, count: usize, dim: usize, rng: &mut Rng) -> Result<Self> {
        if count == 0 || dim == 0 {
            return Err(Error::value(
                "Embedding",
                format!("needs positive sizes, got {count} × {dim}"),
            ));
        }
        Ok(Embedding {
            weight: scope.param("weight", init::normal(&[count, dim], 0.0, 1.0, rng)?)?,
        })
    }

    /// The vectors of `ids`, shaped `shape ++ [dim]` (`shape` must hold `ids.len()`
    /// elements).
    pub fn forward_ids(&self, ids: &[usize], shape: &[usize]) -> Result<Var<T>> {
        if shape.iter().product::<usize>() != ids.len() {
            return Err(Error::shape(
                "Embedding",
                format!("{} ids do not fill shape {}", ids.len(), fmt_shape(shape)),
            ));
        }
        let dim = self.weight.shape()[1];
        let mut out = shape.to_vec();
        out.push(dim);
        self.weight.var().index_select(0, ids)?.reshape(&out)
    }
}
