//! Stochastic gradient descent with momentum, Nesterov momentum and weight decay
//! (PyTorch's formulation).

use crate::optimizer::{
    buffer_state, check_lr, check_range, load_buffers, reject_unknown_buffers, update_chunks,
    Optimizer, OptimizerState, Update,
};
use nn::{Param, ParamGrads};
use tensor::{Element, Error, Result, Tensor};

/// Hyper-parameters of [`Sgd`].
#[derive(Clone, Debug, PartialEq)]
pub struct SgdConfig {
    /// Learning rate.
    pub lr: f64,
    /// Momentum μ in [0, 1).
    pub momentum: f64,
    /// Dampening of the momentum in [0, 1).
    pub dampening: f64,
    /// Nesterov momentum (needs momentum > 0 and no dampening).
    pub nesterov: bool,
    /// L2 weight decay added to the gradient.
    pub weight_decay: f64,
}

impl SgdConfig {
    /// Plain SGD at learning rate `lr`.
    pub fn new(lr: f64) -> Self {
        SgdConfig {
            lr,
            momentum: 0.0,
            dampening: 0.0,
            nesterov: false,
            weight_decay: 0.0,
        }
    }

    /// With momentum μ.
    ///
    /// ```
    /// use nn::{ParamGrads, ParamStore};
    /// use optim::{Optimizer, Sgd, SgdConfig};
    /// use tensor::Tensor;
    /// # fn main() -> tensor::Result<()> {
    /// let store = ParamStore::<f64>::new();
    /// let w = store.root().param("w", Tensor::zeros(&[1])?)?;
    /// let mut sgd = Sgd::new(store.trainable(), SgdConfig::new(1.0).momentum(0.5))?;
    /// let one = ParamGrads::from_tensors(vec![Tensor::ones(&[1])?]);
    /// sgd.step(&one)?; // b = g = 1
    /// sgd.step(&one)?; // b = 0.5·1 + 1 = 1.5
    /// assert_eq!(w.value().item()?, -2.5);
    /// // Nesterov needs momentum: refused without it.
    /// assert!(Sgd::new(store.trainable(), SgdConfig::new(0.1).nesterov(true)).is_err());
    /// # Ok(())
    /// # }
    /// ```
    pub fn momentum(mut self, mu: f64) -> Self {
        self.momentum = mu;
        self
    }

    /// With Nesterov momentum.
    pub fn nesterov(mut self, on: bool) -> Self {
        self.nesterov = on;
        self
    }

    /// With weight decay.
    pub fn weight_decay(mut self, wd: f64) -> Self {
        self.weight_decay = wd;
        self
    }
}

/// SGD: d = g + wd·θ; b ← μ b + (1 − dampening) d (b = d on the first step);
/// d ← d + μ b (Nesterov) or b; θ ← θ − lr·d.
///
/// ```
/// use nn::{ParamGrads, ParamStore};
/// use optim::{Optimizer, Sgd, SgdConfig};
/// use tensor::Tensor;
/// # fn main() -> tensor::Result<()> {
/// let store = ParamStore::<f64>::new();
/// let w = store.root().param("w", Tensor::from_vec(vec![1.0, -2.0], &[2])?)?;
/// let mut sgd = Sgd::new(store.trainable(), SgdConfig::new(0.5))?;
/// let g = |v: Vec<f64>| Tensor::from_vec(v, &[2]).map(|t| ParamGrads::from_tensors(vec![t]));
/// sgd.step(&g(vec![1.0, 1.0])?)?; // θ ← θ − lr·g
/// assert_eq!(w.value().to_vec(), vec![0.5, -2.5]);
/// // A non-finite gradient is refused and nothing moves.
/// assert!(sgd.step(&g(vec![f64::NAN, 0.0])?).is_err());
/// assert_eq!(w.value().to_vec(), vec![0.5, -2.5]);
/// # Ok(())
/// # }
/// ```
pub struct Sgd<T: Element> {
    params: Vec<Param<T>>,
    cfg: SgdConfig,
    momentum: Vec<Option<Tensor<T>>>,
}

impl<T: Element> Sgd<T> {
    /// SGD over `params`.
    pub fn new(params: Vec<Param<T>>, cfg: SgdConfig) -> Result<Self> {
        check_lr("Sgd", cfg.lr)?;
        check_range("Sgd", "momentum", cfg.momentum, 0.0, 1.0)?;
        check_range("Sgd", "dampening", cfg.dampening, 0.0, 1.0)?;
        check_range("Sgd", "weight_decay", cfg.weight_decay, 0.0, f64::INFINITY)?;
        if cfg.nesterov && (cfg.momentum == 0.0 || cfg.dampening != 0.0) {
            return Err(Error::value(
                "Sgd",
                "Nesterov momentum needs momentum > 0 and zero dampening",
            ));
        }
        let n = params.len();
        Ok(Sgd {
            params,
            cfg,
            momentum: vec![None; n],
        })
    }
}

impl<T: Element> Optimizer<T> for Sgd<T> {
    fn params(&self) -> &[Param<T>] {
        &self.params
    }

    fn step(&mut self, grads: &ParamGrads<T>) -> Result<()> {
        grads.check("Sgd::step", &self.params)?;
        let (lr, mu, damp, wd, nesterov) = (
            T::from_f64(self.cfg.lr),
            T::from_f64(self.cfg.momentum),
            T::from_f64(self.cfg.dampening),
            T::from_f64(self.cfg.weight_decay),
            self.cfg.nesterov,
        );
        // A buffer made now is the first step's: it takes the gradient as it is.
        let first: Vec<bool> = self.momentum.iter().map(|b| b.is_none()).collect();
        let updates = self
            .params
            .iter()
            .zip(grads.tensors())
            .zip(self.momentum.iter_mut())
            .map(|((p, g), buf)| {
                let param = p.value();
                let buffers = if mu == T::zero() {
                    Vec::new()
                } else {
                    vec![buf.get_or_insert_with(|| Tensor::zeros_like(&param))]
                };
                Update {
                    param,
                    grad: g,
                    buffers,
                }
            })
            .collect();
        // The buffers are rewritten in place (every check has passed above).
        let new_params = update_chunks(updates, |i, x, g, o| {
            let n = x.len();
            match o {
                [po] => {
                    for ((o, &x), &g) in po[..n].iter_mut().zip(x).zip(g) {
                        *o = x - lr * (g + wd * x);
                    }
                }
                [po, bo] => {
                    let (g, po, bo) = (&g[..n], &mut po[..n], &mut bo[..n]);
                    for k in 0..n {
                        let d = g[k] + wd * x[k];
                        let m = if first[i] {
                            d
                        } else {
                            mu * bo[k] + (T::one() - damp) * d
                        };
                        bo[k] = m;
                        po[k] = x[k] - lr * if nesterov { d + mu * m } else { m };
                    }
                }
                _ => unreachable!("one parameter and at most one buffer"),
            }
        })?;
        for (p, new_p) in self.params.iter().zip(new_params) {
            p.set(new_p)?;
        }
        if autograd::trace::is_on() {
            autograd::trace::next_step();
        }
        Ok(())
    }

    fn lr(&self) -> f64 {
        self.cfg.lr
    }

    fn set_lr(&mut self, lr: f64) -> Result<()> {
        self.cfg.lr = check_lr("Sgd::set_lr", lr)?;
        Ok(())
    }

    fn state(&self) -> OptimizerState<T> {
        OptimizerState {
            tensors: buffer_state("momentum", &self.params, &self.momentum),
            scalars: vec![("lr".into(), format!("{:e}", self.cfg.lr))],
        }
    }

    fn load_state(&mut self, state: &OptimizerState<T>) -> Result<()> {
        reject_unknown_buffers(&["momentum"], &self.params, state)?;
        let momentum = load_buffers("momentum", &self.params, state)?;
        let lr = check_lr("Sgd::load_state", state.scalar("lr")?)?;
        self.momentum = momentum;
        self.cfg.lr = lr;
        Ok(())
    }
}
