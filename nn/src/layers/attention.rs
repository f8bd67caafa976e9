//! Scaled dot-product attention and multi-head attention (self and cross), with
//! additive masks for padding and causality and dropout on the attention weights.
//!
//! Shapes: queries `[B, H, Lq, Dh]`, keys and values `[B, H, Lk, Dh]`; a mask is
//! additive and broadcasts to the scores `[B, H, Lq, Lk]`, 0 where attending is
//! allowed and −∞ where it is not (so blocked keys get a weight of exactly 0 and
//! contribute nothing, not merely little). A query whose every key is blocked has no
//! defined output; such a mask is an error.

use crate::layers::dropout::Dropout;
use crate::layers::linear::Linear;
use crate::module::Module;
use crate::param::Scope;
use autograd::{grad_enabled, Var};
use tensor::{error::fmt_shape, Element, Error, Result, Rng, Tensor};

/// Without recording, heads are processed one at a time once the scores of all
/// heads together would exceed this many elements.
const SCORE_BUDGET: usize = 1 << 22;

/// A causal mask `[Lq, Lk]`: query i may attend to keys j ≤ i + (Lk − Lq) (the last
/// query sees every key, as when decoding continues a prefix).
///
/// ```
/// use nn::causal_mask;
/// # fn main() -> tensor::Result<()> {
/// let x = f32::NEG_INFINITY;
/// assert_eq!(causal_mask::<f32>(3, 3)?.to_vec(), [0.0, x, x, 0.0, 0.0, x, 0.0, 0.0, 0.0]);
/// // Two new queries after a prefix: 4 keys, and the last query sees them all.
/// assert_eq!(causal_mask::<f32>(2, 4)?.to_vec(), [0.0, 0.0, 0.0, x, 0.0, 0.0, 0.0, 0.0]);
/// assert!(causal_mask::<f32>(3, 2).is_err());
/// # Ok(())
/// # }
/// ```
pub fn causal_mask<T: Element>(lq: usize, lk: usize) -> Result<Tensor<T>> {
    if lq > lk {
        return Err(Error::shape(
            "causal_mask",
            format!("{lq} queries cannot follow {lk} keys"),
        ));
    }
    let n = tensor::layout::checked_numel("causal_mask", &[lq, lk])?;
    let shift = lk - lq;
    let v = (0..n)
        .map(|i| {
            let (q, k) = (i / lk, i % lk);
            if k <= q + shift {
                0.0
            } else {
                f64::NEG_INFINITY
            }
        })
        .collect::<Vec<f64>>();
    Tensor::<f64>::from_vec(v, &[lq, lk]).map(|t| t.cast())
}

/// A padding mask `[B, 1, 1, Lk]` from per-sequence key lengths: keys at positions
/// ≥ `lengths[b]` are blocked.
pub fn padding_mask<T: Element>(lengths: &[usize], lk: usize) -> Result<Tensor<T>> {
    if let Some(&bad) = lengths.iter().find(|&&l| l == 0 || l > lk) {
        return Err(Error::value(
            "padding_mask",
            format!("a length of {bad} is not in 1..={lk}"),
        ));
    }
    tensor::layout::checked_numel("padding_mask", &[lengths.len(), lk])?;
    let v: Vec<f64> = lengths
        .iter()
        .flat_map(|&l| (0..lk).map(move |k| if k < l { 0.0 } else { f64::NEG_INFINITY }))
        .collect();
    Tensor::<f64>::from_vec(v, &[lengths.len(), 1, 1, lk]).map(|t| t.cast())
}

/// Two additive masks combined (either may be absent).
pub fn combine_masks<T: Element>(
    a: Option<&Tensor<T>>,
    b: Option<&Tensor<T>>,
) -> Result<Option<Tensor<T>>> {
    Ok(match (a, b) {
        (Some(a), Some(b)) => Some(a.add(b)?),
        (Some(m), None) | (None, Some(m)) => Some(m.clone()),
        (None, None) => None,
    })
}

/// softmax(QKᵀ/√Dh + mask)·V, with dropout on the weights when given. Without
/// recording and for large score tensors, the heads are computed one at a time so
/// that only one head's scores exist at once.
///
/// ```
/// use autograd::Var;
/// use nn::{causal_mask, scaled_dot_product_attention};
/// use tensor::{Rng, Tensor};
/// # fn main() -> tensor::Result<()> {
/// let mut rng = Rng::new(0);
/// let mut draw = || Tensor::<f64>::rand_normal(&[1, 2, 4, 8], 0.0, 1.0, &mut rng).map(Var::constant);
/// let (q, k, v) = (draw()?, draw()?, draw()?); // [B, H, L, Dh]
/// let out = scaled_dot_product_attention(&q, &k, &v, Some(&causal_mask(4, 4)?), None)?;
/// assert_eq!(out.shape(), &[1, 2, 4, 8]);
/// // Under the causal mask the first query sees only the first key: its output is
/// // the first value, in every head.
/// let first = out.value().narrow(2, 0, 1)?;
/// assert!(first.sub(&v.value().narrow(2, 0, 1)?)?.abs().max_all()? < 1e-15);
/// # Ok(())
/// # }
/// ```
pub fn scaled_dot_product_attention<T: Element>(
    q: &Var<T>,
    k: &Var<T>,
    v: &Var<T>,
    mask: Option<&Tensor<T>>,
    dropout: Option<&Dropout<T>>,
) -> Result<Var<T>> {
    let ok = q.ndim() == 4
        && k.ndim() == 4
        && v.ndim() == 4
        && q.shape()[..2] == k.shape()[..2]
        && k.shape()[..3] == v.shape()[..3]
        && q.shape()[3] == k.shape()[3];
    if !ok {
        return Err(Error::shape(
            "attention",
            format!(
                "needs q [B, H, Lq, D], k [B, H, Lk, D], v [B, H, Lk, Dv], got {}, {}, {}",
                fmt_shape(q.shape()),
                fmt_shape(k.shape()),
                fmt_shape(v.shape())
            ),
        ));
    }
    let (b, h, lq, lk) = (q.shape()[0], q.shape()[1], q.shape()[2], k.shape()[2]);
    if let Some(m) = mask {
        m.broadcast_to(&[b, h, lq, lk]).map_err(|_| {
            Error::shape(
                "attention",
                format!(
                    "mask {} does not broadcast to the scores [{b}, {h}, {lq}, {lk}]",
                    fmt_shape(m.shape())
                ),
            )
        })?;
        // Every row of the mask is some query's row of the broadcast mask.
        let open = m.gt_scalar(f64::NEG_INFINITY).max(&[-1], false)?;
        if lk == 0 || open.to_vec().iter().any(|&x| x == T::zero()) {
            return Err(Error::value(
                "attention",
                "the mask blocks every key of some query",
            ));
        }
    }
    let recording = grad_enabled() && [q, k, v].iter().any(|x| x.requires_grad());
    if !recording && h > 1 && b * h * lq * lk > SCORE_BUDGET {
        let heads = (0..h)
            .map(|i| {
                let m = match mask {
                    // The mask's head axis is third from the end (masks align right).
                    Some(m) if m.ndim() >= 3 && m.shape()[m.ndim() - 3] == h => {
                        Some(m.narrow(m.ndim() as isize - 3, i, 1)?)
                    }
                    other => other.cloned(),
                };
                scaled_dot_product_attention(
                    &q.narrow(1, i, 1)?,
                    &k.narrow(1, i, 1)?,
                    &v.narrow(1, i, 1)?,
                    m.as_ref(),
                    dropout,
                )
            })
            .collect::<Result<Vec<_>>>()?;
        return Var::cat(&heads.iter().collect::<Vec<_>>(), 1);
    }
    let scale = 1.0 / (q.shape()[3] as f64).sqrt();
    let mut scores = q.matmul(&k.transpose(-1, -2)?)?.mul_scalar(scale)?;
    if let Some(m) = mask {
        scores = scores.add(&Var::constant(m.clone()))?;
    }
    let mut weights = scores.softmax(-1)?;
    if let Some(d) = dropout {
        weights = d.forward(&weights)?;
    }
    weights.matmul(v)
}

/// Multi-head attention: projections of queries, keys and values into `heads`
/// heads, attention in each, and an output projection.
///
/// ```
/// use autograd::Var;
/// use nn::{causal_mask, MultiHeadAttention, ParamStore};
/// use tensor::{Rng, Tensor};
/// # fn main() -> tensor::Result<()> {
/// let store = ParamStore::<f64>::new();
/// let mut rng = Rng::new(0);
/// let mha = MultiHeadAttention::new(&store.root().sub("attn"), 8, 2, 0.0, &mut rng)?;
/// let x = Tensor::rand_normal(&[1, 5, 8], 0.0, 1.0, &mut rng)?; // [B, L, D]
/// let mask = causal_mask(5, 5)?;
/// let run = |x: &Tensor<f64>| mha.attend(&Var::constant(x.clone()), &Var::constant(x.clone()), Some(&mask));
/// let y = run(&x)?;
/// assert_eq!(y.shape(), &[1, 5, 8]);
/// // Causal self-attention: a new last token changes no earlier position's output.
/// let x2 = Tensor::cat(&[&x.narrow(1, 0, 4)?, &Tensor::rand_normal(&[1, 1, 8], 0.0, 1.0, &mut rng)?], 1)?;
/// let d = run(&x2)?.value().sub(y.value())?.abs();
/// assert!(d.narrow(1, 0, 4)?.max_all()? < 1e-12 && d.narrow(1, 4, 1)?.max_all()? > 1e-6);
/// # Ok(())
/// # }
/// ```
pub struct MultiHeadAttention<T: Element> {
    /// Query projection (d → d).
    pub q: Linear<T>,
    /// Key projection.
    pub k: Linear<T>,
    /// Value projection.
    pub v: Linear<T>,
    /// Output projection.
    pub out: Linear<T>,
    heads: usize,
    dropout: Dropout<T>,
}

impl<T: Element> MultiHeadAttention<T> {
    /// Attention over `dim` features in `heads` heads (`dim` divisible by `heads`),
    /// with dropout `p` on the weights.
    pub fn new(scope: &Scope<T>, dim: usize, heads: usize, p: f64, rng: &mut Rng) -> Result<Self> {
        if heads == 0 || dim == 0 || !dim.is_multiple_of(heads) {
            return Err(Error::value(
                "MultiHeadAttention",
                format!("{dim} features do not split into {heads} heads"),
            ));
        }
        let lin = |name: &str, rng: &mut Rng| Linear::new(&scope.sub(name), dim, dim, true, rng);
        Ok(MultiHeadAttention {
            q: lin("q", rng)?,
            k: lin("k", rng)?,
            v: lin("v", rng)?,
            out: lin("out", rng)?,
            heads,
            dropout: Dropout::new(scope.store(), p, rng.split())?,
        })
    }

    /// `[B, L, D]` → `[B, H, L, D/H]`.
    fn split_heads(&self, x: &Var<T>) -> Result<Var<T>> {
        let (b, l, d) = (x.shape()[0], x.shape()[1], x.shape()[2]);
        x.reshape(&[b, l, self.heads, d / self.heads])?
            .permute(&[0, 2, 1, 3])
    }

    /// Attention of `query` `[B, Lq, D]` over `context` `[B, Lk, D]` (the same tensor
    /// for self-attention), with an additive mask broadcasting to `[B, H, Lq, Lk]`.
    pub fn attend(
        &self,
        query: &Var<T>,
        context: &Var<T>,
        mask: Option<&Tensor<T>>,
    ) -> Result<Var<T>> {
        let d = self.q.inputs();
        let ok = query.ndim() == 3
            && context.ndim() == 3
            && query.shape()[0] == context.shape()[0]
            && query.shape()[2] == d
            && context.shape()[2] == d;
        if !ok {
            return Err(Error::shape(
                "MultiHeadAttention",
                format!(
                    "needs query [B, Lq, {d}] and context [B, Lk, {d}], got {} and {}",
                    fmt_shape(query.shape()),
                    fmt_shape(context.shape())
                ),
            ));
        }
        let q = self.split_heads(&self.q.forward(query)?)?;
        let k = self.split_heads(&self.k.forward(context)?)?;
        let v = self.split_heads(&self.v.forward(context)?)?;
        let o = scaled_dot_product_attention(&q, &k, &v, mask, Some(&self.dropout))?;
        let (b, lq) = (query.shape()[0], query.shape()[1]);
        self.out
            .forward(&o.permute(&[0, 2, 1, 3])?.reshape(&[b, lq, d])?)
    }
}
