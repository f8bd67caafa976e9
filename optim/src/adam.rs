//! Adam and AdamW.

use crate::optimizer::{
    buffer_state, check_lr, check_range, load_buffers, reject_unknown_buffers, update_chunks,
    Optimizer, OptimizerState, Update,
};
use nn::{Param, ParamGrads};
use tensor::fused::{adam_first_non_finite, adam_update, AdamSlices, AdamStep};
use tensor::{Element, Error, Result, Tensor};

/// Hyper-parameters of [`Adam`].
#[derive(Clone, Debug, PartialEq)]
pub struct AdamConfig {
    /// Learning rate.
    pub lr: f64,
    /// Decay of the first moment, in [0, 1).
    pub beta1: f64,
    /// Decay of the second moment, in [0, 1).
    pub beta2: f64,
    /// Added to √v̂ in the denominator.
    pub eps: f64,
    /// Weight decay: added to the gradient (Adam) or applied to the weights (AdamW).
    pub weight_decay: f64,
    /// Decoupled weight decay (AdamW).
    pub decoupled: bool,
    /// Weight decay also on parameters of fewer than two axes (norm scales, biases);
    /// `false` masks them out, as the authors of LLQR+SAM do for ViT and the
    /// Transformer (and as optax's and timm's recipes do).
    pub decay_vectors: bool,
}

impl AdamConfig {
    /// Adam with PyTorch's defaults (β = (0.9, 0.999), ε = 1e-8, no decay).
    pub fn adam(lr: f64) -> Self {
        AdamConfig {
            lr,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            weight_decay: 0.0,
            decoupled: false,
            decay_vectors: true,
        }
    }

    /// AdamW with PyTorch's defaults (decoupled weight decay 0.01).
    ///
    /// ```
    /// use nn::{ParamGrads, ParamStore};
    /// use optim::{Adam, AdamConfig, Optimizer};
    /// use tensor::Tensor;
    /// # fn main() -> tensor::Result<()> {
    /// let store = ParamStore::<f64>::new();
    /// let m = store.root().param("m", Tensor::full(&[1, 1], 4.0)?)?; // a matrix
    /// let b = store.root().param("b", Tensor::full(&[1], 4.0)?)?; // a vector (a bias)
    /// let cfg = AdamConfig::adamw(0.1).weight_decay(0.5).mask_vector_decay();
    /// let mut opt = Adam::new(store.trainable(), cfg)?;
    /// // With a zero gradient only the decoupled decay acts: θ ← θ·(1 − lr·wd).
    /// let zero = ParamGrads::from_tensors(vec![Tensor::zeros(&[1, 1])?, Tensor::zeros(&[1])?]);
    /// opt.step(&zero)?;
    /// assert!((m.value().item()? - 3.8).abs() < 1e-12);
    /// assert_eq!(b.value().item()?, 4.0); // vectors are masked out of the decay
    /// # Ok(())
    /// # }
    /// ```
    pub fn adamw(lr: f64) -> Self {
        AdamConfig {
            weight_decay: 0.01,
            decoupled: true,
            ..Self::adam(lr)
        }
    }

    /// With betas.
    pub fn betas(mut self, beta1: f64, beta2: f64) -> Self {
        self.beta1 = beta1;
        self.beta2 = beta2;
        self
    }

    /// With weight decay.
    pub fn weight_decay(mut self, wd: f64) -> Self {
        self.weight_decay = wd;
        self
    }

    /// Without weight decay on parameters of fewer than two axes (norms, biases).
    pub fn mask_vector_decay(mut self) -> Self {
        self.decay_vectors = false;
        self
    }
}

/// Adam (Kingma & Ba) with bias correction; AdamW (Loshchilov & Hutter) when the
/// weight decay is decoupled: θ ← θ − lr·wd·θ before the Adam step.
///
/// ```
/// use nn::{ParamGrads, ParamStore};
/// use optim::{Adam, AdamConfig, Optimizer};
/// use tensor::Tensor;
/// # fn main() -> tensor::Result<()> {
/// let store = ParamStore::<f64>::new();
/// let w = store.root().param("w", Tensor::ones(&[2])?)?;
/// let mut adam = Adam::new(store.trainable(), AdamConfig::adam(0.1))?;
/// // The first step moves each weight by about lr, whatever its gradient's scale.
/// let g = Tensor::from_vec(vec![1000.0, -0.001], &[2])?;
/// adam.step(&ParamGrads::from_tensors(vec![g]))?;
/// let v = w.value().to_vec();
/// assert!((v[0] - 0.9).abs() < 1e-6 && (v[1] - 1.1).abs() < 1e-4, "{v:?}");
/// assert_eq!(adam.steps(), 1);
/// # Ok(())
/// # }
/// ```
pub struct Adam<T: Element> {
    params: Vec<Param<T>>,
    cfg: AdamConfig,
    step: u64,
    m: Vec<Option<Tensor<T>>>,
    v: Vec<Option<Tensor<T>>>,
    /// Per parameter, an upper bound on max |v| (0 before the first step; `None`
    /// when unknown, after `load_state`), carried from step to step so that the
    /// overflow check reads v only when the bound nears overflow.
    v_bound: Vec<Option<f64>>,
}

impl<T: Element> Adam<T> {
    /// Adam or AdamW over `params`.
    pub fn new(params: Vec<Param<T>>, cfg: AdamConfig) -> Result<Self> {
        check_lr("Adam", cfg.lr)?;
        check_range("Adam", "beta1", cfg.beta1, 0.0, 1.0)?;
        check_range("Adam", "beta2", cfg.beta2, 0.0, 1.0)?;
        check_range("Adam", "weight_decay", cfg.weight_decay, 0.0, f64::INFINITY)?;
        if !(cfg.eps > 0.0 && cfg.eps.is_finite()) {
            return Err(Error::value(
                "Adam",
                format!("eps must be positive, got {}", cfg.eps),
            ));
        }
        let n = params.len();
        Ok(Adam {
            params,
            cfg,
            step: 0,
            m: vec![None; n],
            v: vec![None; n],
            v_bound: vec![Some(0.0); n],
        })
    }

    /// Steps taken so far.
    pub fn steps(&self) -> u64 {
        self.step
    }

    /// Refuses, before the moments are rewritten in place, a step that would
    /// make a moment or a parameter non-finite: a finite gradient whose square
    /// overflows (3·10³⁸ in f32) would otherwise set v to ∞ and freeze the
    /// weight for good, every later step returning Ok. One pass of max |g|
    /// (and max |x| under coupled decay) per parameter bounds (1 − β₂)·g² well
    /// below overflow in every practical case, and the bound carried on max |v|
    /// stands in for a pass over v until it nears overflow; only past these
    /// bounds is the update computed element by element, writing nothing, to
    /// find the element. Returns each parameter's bound on max |v| after the step.
    fn refuse_overflow(&self, grads: &ParamGrads<T>, steps: &[AdamStep<T>]) -> Result<Vec<f64>> {
        // √(MAX/4) / √(1 − β₂), in this order: MAX/4/(1 − β₂) itself overflows.
        let limit = (T::max_value() / T::from_f64(4.0)).sqrt() / (T::one() - steps[0].beta2).sqrt();
        let half_max = (T::max_value() / T::from_f64(2.0)).as_f64();
        let coupled = |h: &AdamStep<T>| {
            if h.decoupled {
                T::zero()
            } else {
                h.weight_decay
            }
        };
        // v is read only where no bound stands below overflow (after a reload, or
        // after a run of huge gradients).
        let tensors: Vec<Streams<T>> = self
            .params
            .iter()
            .zip(grads.tensors())
            .zip(self.v.iter().zip(&self.v_bound))
            .map(|((p, g), (v, bound))| {
                let known = bound.is_some_and(|b| b <= half_max);
                (
                    p.value().contiguous(),
                    g.contiguous(),
                    v.as_ref().filter(|_| !known).map(|v| v.contiguous()),
                )
            })
            .collect();
        // The maxima over fixed chunks of every parameter, in parallel on a large
        // model (this pass reads one or two streams before the update's seven);
        // a maximum is exact in any grouping, so the bits are the same at any
        // thread count.
        let chunks: Vec<(usize, usize)> = tensors
            .iter()
            .enumerate()
            .flat_map(|(i, (x, _, _))| {
                (0..x.numel())
                    .step_by(tensor::parallel::CHUNK)
                    .map(move |s| (i, s))
            })
            .collect();
        let work: usize = tensors.iter().map(|(x, _, _)| x.numel()).sum();
        let maxima = tensor::parallel::map_collect(chunks.len(), work, |k| {
            let (i, start) = chunks[k];
            let (x, g, v) = &tensors[i];
            let end = (start + tensor::parallel::CHUNK).min(x.numel());
            let max_of = |t: &Tensor<T>| max_abs(&t.as_slice().expect("contiguous")[start..end]);
            // The parameter is read only when coupled decay adds it to the gradient.
            let decay = if coupled(&steps[i]) > T::zero() {
                coupled(&steps[i]) * max_of(x)
            } else {
                T::zero()
            };
            (max_of(g) + decay, v.as_ref().map_or(T::zero(), max_of))
        });
        let mut bounds = vec![(T::zero(), T::zero()); tensors.len()];
        for (&(i, _), &(gmax, vmax)) in chunks.iter().zip(&maxima) {
            bounds[i] = (bounds[i].0.max(gmax), bounds[i].1.max(vmax));
        }
        let mut v_after = Vec::with_capacity(tensors.len());
        for (i, (p, (x, g, v_read))) in self.params.iter().zip(&tensors).enumerate() {
            let (gmax, vmax) = bounds[i];
            let vmax = match (v_read, self.v_bound[i]) {
                (None, Some(bound)) => bound,
                _ => vmax.as_f64(),
            };
            v_after.push(next_v_bound(
                steps[i].beta2.as_f64(),
                vmax,
                gmax.as_f64(),
                T::EPS,
            ));
            if gmax <= limit && vmax <= half_max {
                continue;
            }
            let h = &steps[i];
            let (xs, gs) = (
                x.as_slice().expect("contiguous"),
                g.as_slice().expect("contiguous"),
            );
            let zeros = || Tensor::zeros_like(x);
            let m = self.m[i].clone().map_or_else(zeros, |m| m.contiguous());
            let v = self.v[i].clone().map_or_else(zeros, |v| v.contiguous());
            let (ms, vs) = (
                m.as_slice().expect("contiguous"),
                v.as_slice().expect("contiguous"),
            );
            if let Some(j) = adam_first_non_finite(h, xs, gs, ms, vs) {
                return Err(Error::non_finite(
                    "Adam::step",
                    format!(
                        "parameter '{}' element {j}: gradient {} would make its moments or value non-finite (second moment {}); nothing was changed",
                        p.name(),
                        gs[j],
                        vs[j]
                    ),
                ));
            }
        }
        Ok(v_after)
    }
}

/// An upper bound on max |v| after one step, from bounds on max |v| before it and
/// on max |g| (with coupled decay's wd·|x|): β₂·v + (1 − β₂)·g², widened by 16
/// rounding errors of the element type (`eps`), which cover every rounding of the
/// kernel's v and of the bounds themselves, so the bound never falls below the v
/// the kernel computes (but for subnormal rounding, some 10⁻⁴² in f32). It only
/// grows looser over steps; past overflow's reach the check reads v again.
fn next_v_bound(beta2: f64, vmax: f64, gmax: f64, eps: f64) -> f64 {
    (beta2 * vmax + (1.0 - beta2) * gmax * gmax) * (1.0 + 16.0 * eps)
}

/// The largest |t| (NaN ignored, 0 for an empty slice), in sixteen independent
/// lanes so that the compiler vectorises it (a running `max` over one accumulator
/// stays scalar). A maximum is exact in any grouping, so the lanes change no bit of
/// the result.
fn max_abs<T: Element>(t: &[T]) -> T {
    const LANES: usize = 16;
    let mut lanes = [T::zero(); LANES];
    let mut chunks = t.chunks_exact(LANES);
    for chunk in &mut chunks {
        for (lane, &x) in lanes.iter_mut().zip(chunk) {
            let x = x.abs();
            // Keeps the lane on a NaN, as `max` does.
            *lane = if x > *lane { x } else { *lane };
        }
    }
    let tail = chunks.remainder().iter().map(|x| x.abs());
    lanes
        .into_iter()
        .chain(tail)
        .fold(T::zero(), |a, x| if x > a { x } else { a })
}

/// What the overflow check reads of one parameter, contiguous: its value, its
/// gradient and its second moment (none before the first step).
type Streams<T> = (Tensor<T>, Tensor<T>, Option<Tensor<T>>);

impl<T: Element> Optimizer<T> for Adam<T> {
    fn params(&self) -> &[Param<T>] {
        &self.params
    }

    fn step(&mut self, grads: &ParamGrads<T>) -> Result<()> {
        grads.check("Adam::step", &self.params)?;
        let t = self.step + 1;
        let c = &self.cfg;
        let (b1, b2) = (T::from_f64(c.beta1), T::from_f64(c.beta2));
        let bc1 = T::from_f64(1.0 - c.beta1.powf(t as f64));
        let bc2 = T::from_f64(1.0 - c.beta2.powf(t as f64));
        let (lr, eps, wd) = (
            T::from_f64(c.lr),
            T::from_f64(c.eps),
            T::from_f64(c.weight_decay),
        );
        let decoupled = c.decoupled;
        // Parameters of fewer than two axes are left undecayed unless asked.
        let decays: Vec<T> = self
            .params
            .iter()
            .map(|p| {
                if c.decay_vectors || p.shape().len() >= 2 {
                    wd
                } else {
                    T::zero()
                }
            })
            .collect();
        let steps: Vec<AdamStep<T>> = decays
            .iter()
            .map(|&weight_decay| AdamStep {
                beta1: b1,
                beta2: b2,
                correction1: bc1,
                correction2: bc2,
                lr,
                eps,
                weight_decay,
                decoupled,
            })
            .collect();
        let v_after = self.refuse_overflow(grads, &steps)?;
        let updates = self
            .params
            .iter()
            .zip(grads.tensors())
            .zip(self.m.iter_mut().zip(self.v.iter_mut()))
            .map(|((p, g), (m, v))| {
                let param = p.value();
                let m = m.get_or_insert_with(|| Tensor::zeros_like(&param));
                let v = v.get_or_insert_with(|| Tensor::zeros_like(&param));
                Update {
                    param,
                    grad: g,
                    buffers: vec![m, v],
                }
            })
            .collect();
        // The moments are rewritten in place (every check has passed above).
        let new_params = update_chunks(updates, |i, x, g, o| {
            let [x_out, m, v] = o else {
                unreachable!("one parameter and two moments")
            };
            adam_update(&steps[i], AdamSlices { x, g, m, v, x_out });
        });
        // A failed update may have left the moments anywhere: bound them afresh.
        self.v_bound = match new_params {
            Ok(_) => v_after.into_iter().map(Some).collect(),
            Err(_) => vec![None; self.params.len()],
        };
        let new_params = new_params?;
        for (p, new_p) in self.params.iter().zip(new_params) {
            p.set(new_p)?;
        }
        self.step = t;
        if autograd::trace::is_on() {
            autograd::trace::next_step();
        }
        Ok(())
    }

    fn lr(&self) -> f64 {
        self.cfg.lr
    }

    fn set_lr(&mut self, lr: f64) -> Result<()> {
        self.cfg.lr = check_lr("Adam::set_lr", lr)?;
        Ok(())
    }

    fn state(&self) -> OptimizerState<T> {
        let mut tensors = buffer_state("m", &self.params, &self.m);
        tensors.extend(buffer_state("v", &self.params, &self.v));
        OptimizerState {
            tensors,
            scalars: vec![
                ("step".into(), self.step.to_string()),
                ("lr".into(), format!("{:e}", self.cfg.lr)),
            ],
        }
    }

    fn load_state(&mut self, state: &OptimizerState<T>) -> Result<()> {
        reject_unknown_buffers(&["m", "v"], &self.params, state)?;
        let m = load_buffers("m", &self.params, state)?;
        let v = load_buffers("v", &self.params, state)?;
        let step: u64 = state.scalar("step")?;
        let stepped = m.iter().chain(&v).filter(|b| b.is_some()).count();
        let expected = if step == 0 { 0 } else { 2 * self.params.len() };
        if stepped != expected {
            return Err(Error::format(
                "optimizer state",
                format!(
                    "Adam state at step {step} holds {stepped} of the {expected} moment buffers it needs"
                ),
            ));
        }
        let lr = check_lr("Adam::load_state", state.scalar("lr")?)?;
        self.m = m;
        self.v = v;
        self.v_bound = vec![None; self.params.len()];
        self.step = step;
        self.cfg.lr = lr;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::max_abs;

    /// The lanes give the bits of the running `max` over one accumulator, NaN
    /// ignored, at every length around the lane count and wherever the largest
    /// magnitude sits (lanes or tail).
    #[test]
    fn max_abs_is_the_running_max_of_the_magnitudes() {
        let running = |t: &[f32]| t.iter().fold(0.0f32, |a, &b| a.max(b.abs()));
        for n in 0..70 {
            for peak in 0..n.max(1) {
                let mut t: Vec<f32> = (0..n)
                    .map(|i| ((i * 37 % 11) as f32 - 5.0) * 0.25)
                    .collect();
                if n > 0 {
                    t[peak] = -7.5;
                    t[(peak + 3) % n] = f32::NAN;
                }
                assert_eq!(
                    max_abs(&t).to_bits(),
                    running(&t).to_bits(),
                    "n {n}, peak {peak}"
                );
            }
        }
        assert_eq!(max_abs::<f64>(&[]), 0.0);
    }
}
