//! The learned block-diagonal preconditioner U of LLQR: one block per parameter
//! tensor, diagonal, K-FAC-shaped (U(X) = A X Bᵀ with A and B learned directly — the
//! structure of K-FAC, not its covariance estimates; a conv kernel [cout, cin, kh, kw]
//! is the matrix cout × (cin·kh·kw), the authors' (kh·kw·cin) × cout transposed) or
//! dense. The inner solve clips each leaf of U's gradient by its own norm, as the
//! authors' `clip_by_group_norm` does on their block tree: for diagonal and dense
//! blocks a leaf is a layer (its kernel and bias together, the tensors whose names
//! share everything before the last '.'); for K-FAC blocks each factor (A, B, a
//! bias or norm diagonal) is a leaf of its own. U is fitted by
//! minimising the quadratic model of the loss along the preconditioned step,
//! J(U) = gᵀΔ + ½Δᵀ(G + δI)Δ with Δ = −U g, by momentum steps whose gradients come
//! from autograd; G·v products are supplied by the caller.

use autograd::{grad, Var};
use nn::Param;
use tensor::{Element, Error, Result, Tensor};

/// The shape of each block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Structure {
    /// U = diag(d) per tensor (the default).
    Diagonal,
    /// U(X) = A X Bᵀ for matrices and conv kernels (A: rows×rows, B: cols×cols of
    /// the kernel as cout × (cin·kh·kw)), diagonal for vectors.
    Kfac,
    /// A dense P×P block per tensor (small layers and tests).
    Dense,
}

#[derive(Clone, Debug)]
enum Block<T: Element> {
    Diagonal(Tensor<T>),
    Kfac(Tensor<T>, Tensor<T>),
    Dense(Tensor<T>),
}

impl<T: Element> Block<T> {
    fn tensors(&self) -> Vec<Tensor<T>> {
        match self {
            Block::Diagonal(d) => vec![d.clone()],
            Block::Kfac(a, b) => vec![a.clone(), b.clone()],
            Block::Dense(m) => vec![m.clone()],
        }
    }

    fn with(&self, ts: Vec<Tensor<T>>) -> Block<T> {
        let mut it = ts.into_iter();
        let mut next = || it.next().expect("one tensor per factor");
        match self {
            Block::Diagonal(_) => Block::Diagonal(next()),
            Block::Kfac(_, _) => Block::Kfac(next(), next()),
            Block::Dense(_) => Block::Dense(next()),
        }
    }

    /// U g for one block, with the factors as `Var`s.
    fn apply(&self, factors: &[Var<T>], g: &Var<T>) -> Result<Var<T>> {
        match self {
            Block::Diagonal(_) => factors[0].mul(g),
            Block::Kfac(a, b) => {
                let shape = g.shape().to_vec();
                let m = g.reshape(&[a.shape()[0], b.shape()[0]])?;
                factors[0]
                    .matmul(&m)?
                    .matmul(&factors[1].t()?)?
                    .reshape(&shape)
            }
            Block::Dense(_) => {
                let shape = g.shape().to_vec();
                factors[0]
                    .matmul(&g.reshape(&[g.numel(), 1])?)?
                    .reshape(&shape)
            }
        }
    }
}

/// Settings of the inner solve that fits U.
#[derive(Clone, Debug, PartialEq)]
pub struct InnerSolve {
    /// Momentum steps on J(U).
    pub steps: usize,
    /// Their learning rate.
    pub lr: f64,
    /// Their momentum.
    pub momentum: f64,
    /// Each clip group's gradient (a layer's diagonal or dense blocks together,
    /// or one K-FAC factor) is clipped to this norm.
    pub clip: f64,
    /// Damping δ added to the curvature (δI).
    pub damping: f64,
}

impl Default for InnerSolve {
    /// The authors' defaults: 50 momentum steps at 1e-3, clip 5, no damping.
    fn default() -> Self {
        InnerSolve {
            steps: 50,
            lr: 1e-3,
            momentum: 0.9,
            clip: 5.0,
            damping: 0.0,
        }
    }
}

/// What an inner solve did.
#[derive(Clone, Debug, PartialEq)]
pub struct InnerTrace {
    /// J(U) before each step and after the last.
    pub objective: Vec<f64>,
    /// Gradient entries that were not finite and were replaced (NaN → 0, ±∞ → ±1).
    pub sanitised: usize,
}

/// NaN → 0, ±∞ → ±1, finite values unchanged.
fn sanitise<T: Element>(v: T) -> T {
    let x = v.as_f64();
    if x.is_nan() {
        T::from_f64(0.0)
    } else if x.is_infinite() {
        T::from_f64(x.signum())
    } else {
        v
    }
}

/// A block-diagonal preconditioner, one block per parameter tensor.
#[derive(Clone, Debug)]
pub struct Preconditioner<T: Element> {
    blocks: Vec<Block<T>>,
    /// The clip group of each factor of each block (the factors of a group share
    /// the inner solve's gradient clip).
    groups: Vec<Vec<usize>>,
    /// True for the diagonal structure, the only one the floor applies to (the
    /// authors floor diagonal and scalar structures, not the bias blocks of others).
    diagonal: bool,
}

/// The layer index of each parameter: parameters whose names agree up to the last
/// '.' (`fc1.weight`, `fc1.bias`) form one layer.
fn layer_groups<T: Element>(params: &[Param<T>]) -> Vec<usize> {
    let mut names: Vec<String> = Vec::new();
    params
        .iter()
        .map(|p| {
            let layer = p.name().rsplit_once('.').map_or(p.name(), |(l, _)| l);
            match names.iter().position(|n| n == layer) {
                Some(i) => i,
                None => {
                    names.push(layer.to_string());
                    names.len() - 1
                }
            }
        })
        .collect()
}

/// A curvature-vector product G·v over tensors aligned with the parameters.
pub type Gvp<'a, T> = dyn Fn(&[Tensor<T>]) -> Result<Vec<Tensor<T>>> + 'a;

impl<T: Element> Preconditioner<T> {
    /// U = I with the given structure.
    pub fn identity(params: &[Param<T>], structure: Structure) -> Result<Self> {
        let blocks = params
            .iter()
            .map(|p| {
                let s = p.shape();
                let n: usize = s.iter().product();
                Ok(match (structure, s.len()) {
                    (Structure::Kfac, 2 | 4) => {
                        Block::Kfac(Tensor::eye(s[0])?, Tensor::eye(n / s[0])?)
                    }
                    (Structure::Dense, _) => Block::Dense(Tensor::eye(n)?),
                    _ => Block::Diagonal(Tensor::ones(&s)?),
                })
            })
            .collect::<Result<Vec<Block<T>>>>()?;
        let groups = match structure {
            // Every K-FAC factor and diagonal is a leaf of the authors' tree.
            Structure::Kfac => {
                let mut next = 0..;
                blocks
                    .iter()
                    .map(|b| {
                        b.tensors()
                            .iter()
                            .map(|_| next.next().unwrap_or(0))
                            .collect()
                    })
                    .collect()
            }
            _ => layer_groups(params)
                .into_iter()
                .zip(&blocks)
                .map(|(layer, b)| vec![layer; b.tensors().len()])
                .collect(),
        };
        Ok(Preconditioner {
            blocks,
            groups,
            diagonal: structure == Structure::Diagonal,
        })
    }

    /// A fixed diagonal preconditioner with the given entries (one tensor per
    /// parameter, same shapes). Having no names, each tensor is its own clip group
    /// for the inner solve (`identity` groups a layer's kernel and bias).
    pub fn diagonal(entries: Vec<Tensor<T>>) -> Self {
        Preconditioner {
            groups: (0..entries.len()).map(|i| vec![i]).collect(),
            blocks: entries.into_iter().map(Block::Diagonal).collect(),
            diagonal: true,
        }
    }

    fn factors(&self) -> Vec<Vec<Var<T>>> {
        self.blocks
            .iter()
            .map(|b| b.tensors().into_iter().map(Var::leaf).collect())
            .collect()
    }

    fn check(&self, g: &[Tensor<T>]) -> Result<()> {
        if g.len() != self.blocks.len() {
            return Err(Error::shape(
                "Preconditioner",
                format!("{} tensors for {} blocks", g.len(), self.blocks.len()),
            ));
        }
        Ok(())
    }

    /// U g.
    pub fn apply(&self, g: &[Tensor<T>]) -> Result<Vec<Tensor<T>>> {
        self.check(g)?;
        autograd::no_grad(|| {
            self.blocks
                .iter()
                .zip(g)
                .map(|(b, g)| {
                    let f: Vec<Var<T>> = b.tensors().into_iter().map(Var::constant).collect();
                    Ok(b.apply(&f, &Var::constant(g.clone()))?.value().clone())
                })
                .collect()
        })
    }

    /// J(U) = −gᵀUg + ½(Ug)ᵀ(G + δI)(Ug).
    pub fn objective(&self, g: &[Tensor<T>], gvp: &Gvp<'_, T>, damping: f64) -> Result<f64> {
        let v = self.apply(g)?;
        let gv = gvp(&v)?;
        Ok(quadratic(g, &v, &gv, damping))
    }

    /// Fits U to J by `cfg.steps` momentum steps from its current value (a warm
    /// start). Non-finite entries of a factor's gradient are replaced as the authors'
    /// code does (NaN → 0, ±∞ → ±1) and counted, so a refresh never aborts a run.
    pub fn learn(
        &mut self,
        g: &[Tensor<T>],
        gvp: &Gvp<'_, T>,
        cfg: &InnerSolve,
    ) -> Result<InnerTrace> {
        self.check(g)?;
        if !(cfg.lr > 0.0
            && cfg.clip > 0.0
            && (0.0..1.0).contains(&cfg.momentum)
            && cfg.damping >= 0.0)
        {
            return Err(Error::value(
                "Preconditioner::learn",
                format!("invalid inner-solve settings {cfg:?}"),
            ));
        }
        let mut velocity: Option<Vec<Vec<Tensor<T>>>> = None;
        let mut trace = Vec::with_capacity(cfg.steps.saturating_add(1).min(1 << 16));
        let mut sanitised = 0;
        for _ in 0..cfg.steps {
            let factors = self.factors();
            let gv_vars: Vec<Var<T>> = g.iter().map(|t| Var::constant(t.clone())).collect();
            let v: Vec<Var<T>> = self
                .blocks
                .iter()
                .zip(&factors)
                .zip(&gv_vars)
                .map(|((b, f), g)| b.apply(f, g))
                .collect::<Result<_>>()?;
            let vt: Vec<Tensor<T>> = v.iter().map(|x| x.value().clone()).collect();
            let gvt = gvp(&vt)?;
            trace.push(quadratic(g, &vt, &gvt, cfg.damping));
            // ∂J/∂v = (G + δI) v − g, pulled back to the factors.
            let cot: Vec<Var<T>> = gvt
                .iter()
                .zip(&vt)
                .zip(g)
                .map(|((gv, v), g)| Ok(Var::constant(gv.add(&v.mul_scalar(cfg.damping))?.sub(g)?)))
                .collect::<Result<_>>()?;
            let flat: Vec<&Var<T>> = factors.iter().flatten().collect();
            let outs: Vec<&Var<T>> = v.iter().collect();
            let cots: Vec<&Var<T>> = cot.iter().collect();
            let grads = grad(&outs, &flat, Some(&cots), false)?;
            // Sanitise, then clip each group's gradient to the norm `clip`.
            let mut per_block: Vec<Vec<Tensor<T>>> = Vec::with_capacity(self.blocks.len());
            let mut k = 0;
            for block in &self.blocks {
                let count = block.tensors().len();
                let mut gs = Vec::with_capacity(count);
                for _ in 0..count {
                    let mut gr = grads[k].value().clone();
                    k += 1;
                    let bad = gr.to_vec().iter().filter(|v| !v.is_finite()).count();
                    if bad > 0 {
                        sanitised += bad;
                        gr = gr.map(sanitise);
                    }
                    gs.push(gr);
                }
                per_block.push(gs);
            }
            let count = self
                .groups
                .iter()
                .flatten()
                .copied()
                .max()
                .map_or(0, |m| m + 1);
            let mut sq = vec![0.0; count];
            for (gs, groups) in per_block.iter().zip(&self.groups) {
                for (gr, &group) in gs.iter().zip(groups) {
                    sq[group] += gr.square().sum_all().item()?.as_f64();
                }
            }
            let mut new_vel = Vec::with_capacity(self.blocks.len());
            for (bi, (block, gs)) in self.blocks.iter_mut().zip(per_block).enumerate() {
                let current = block.tensors();
                let mut vel_b = Vec::with_capacity(current.len());
                let mut next = Vec::with_capacity(current.len());
                for (fi, (t, mut gr)) in current.iter().zip(gs).enumerate() {
                    let n = sq[self.groups[bi][fi]].sqrt();
                    if n > cfg.clip {
                        gr = gr.mul_scalar(cfg.clip / n);
                    }
                    let vel = match &velocity {
                        Some(prev) => prev[bi][fi].mul_scalar(cfg.momentum).add(&gr)?,
                        None => gr,
                    };
                    next.push(t.sub(&vel.mul_scalar(cfg.lr))?);
                    vel_b.push(vel);
                }
                *block = block.with(next);
                new_vel.push(vel_b);
            }
            velocity = Some(new_vel);
        }
        trace.push(self.objective(g, gvp, cfg.damping)?);
        Ok(InnerTrace {
            objective: trace,
            sanitised,
        })
    }

    /// U ← βU + (1 − β)U_new, block by block.
    pub fn ema(&mut self, new: &Preconditioner<T>, beta: f64) -> Result<()> {
        if !(0.0..=1.0).contains(&beta) || new.blocks.len() != self.blocks.len() {
            return Err(Error::value(
                "Preconditioner::ema",
                format!("β = {beta} must be in [0, 1] and the structures must match"),
            ));
        }
        for (a, b) in self.blocks.iter_mut().zip(&new.blocks) {
            let mixed = a
                .tensors()
                .iter()
                .zip(b.tensors())
                .map(|(x, y)| x.mul_scalar(beta).add(&y.mul_scalar(1.0 - beta)))
                .collect::<Result<Vec<_>>>()?;
            *a = a.with(mixed);
        }
        Ok(())
    }

    /// Floors a diagonal U at `eps` (so that it never flips or kills a gradient
    /// coordinate); other structures, bias blocks included, are left as they are.
    pub fn floor_diagonal(&mut self, eps: f64) {
        if !self.diagonal {
            return;
        }
        for b in &mut self.blocks {
            if let Block::Diagonal(d) = b {
                *d = d.map(|v| {
                    if v.as_f64() < eps {
                        T::from_f64(eps)
                    } else {
                        v
                    }
                });
            }
        }
    }

    /// The same structure with the given factor tensors (as
    /// [`Preconditioner::factor_tensors`] returns them: restoring a checkpoint, or
    /// setting U by hand); shapes must match.
    pub fn with_factor_tensors(&self, factors: Vec<Vec<Tensor<T>>>) -> Result<Self> {
        let fits = factors.len() == self.blocks.len()
            && self.blocks.iter().zip(&factors).all(|(b, f)| {
                let own = b.tensors();
                own.len() == f.len() && own.iter().zip(f).all(|(x, y)| x.shape() == y.shape())
            });
        if !fits {
            return Err(Error::shape(
                "Preconditioner::with_factor_tensors",
                "the factors do not match the blocks' number or shapes",
            ));
        }
        Ok(Preconditioner {
            blocks: self
                .blocks
                .iter()
                .zip(factors)
                .map(|(b, f)| b.with(f))
                .collect(),
            groups: self.groups.clone(),
            diagonal: self.diagonal,
        })
    }

    /// The factor tensors of every block (diagonal entries, or A and B, or the dense
    /// matrix), for inspection and checkpoints.
    pub fn factor_tensors(&self) -> Vec<Vec<Tensor<T>>> {
        self.blocks.iter().map(|b| b.tensors()).collect()
    }
}

/// −gᵀv + ½vᵀ(Gv + δv).
pub(super) fn quadratic<T: Element>(
    g: &[Tensor<T>],
    v: &[Tensor<T>],
    gv: &[Tensor<T>],
    damping: f64,
) -> f64 {
    let dot = |a: &Tensor<T>, b: &Tensor<T>| {
        a.mul(b)
            .and_then(|t| t.sum_all().item())
            .map(|x| x.as_f64())
            .unwrap_or(f64::NAN)
    };
    let lin: f64 = g.iter().zip(v).map(|(g, v)| dot(g, v)).sum();
    let quad: f64 = v
        .iter()
        .zip(gv)
        .map(|(v, gv)| dot(v, gv) + damping * dot(v, v))
        .sum();
    -lin + 0.5 * quad
}
