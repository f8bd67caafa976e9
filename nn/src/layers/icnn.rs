//! Input-convex neural networks (Amos, Xu & Kolter, 2017).
//!
//! z₁ = σ(A₀x + b₀), z_{k+1} = σ(W_k z_k + A_k x + b_k), and the output
//! F(x) = w_outᵀ z_K + a_outᵀ x + ½c‖x‖². With σ convex and non-decreasing (softplus,
//! ReLU) and every W_k and w_out non-negative, F is convex in x (strongly convex when
//! c > 0). The non-negative weights are not stored here: a positivity strategy
//! (projection, softplus reparametrisation, or the lift) supplies them at each forward
//! pass, so that one network serves every strategy.
//!
//! With `act_norm`, CP-Flow's ICNN2: an [`ActNorm`] (per-unit shift and positive
//! scale, started from a batch by [`Icnn::prime_act_norm`]) before every activation
//! and on the output. A positive scale keeps every layer non-decreasing in its
//! input, so F stays convex.

use crate::init;
use crate::layers::act_norm::ActNorm;
use crate::module::Activation;
use crate::param::{Param, Scope};
use autograd::Var;
use tensor::{error::fmt_shape, Element, Error, Result, Rng, Tensor};

/// The shape of an ICNN.
#[derive(Clone, Debug, PartialEq)]
pub struct IcnnConfig {
    /// Input dimension D.
    pub input: usize,
    /// Hidden width.
    pub width: usize,
    /// Number of hidden layers K (≥ 1).
    pub layers: usize,
    /// Convex, non-decreasing activation (softplus or ReLU).
    pub activation: Activation,
    /// Strong-convexity coefficient c ≥ 0 of the ½c‖x‖² term.
    pub strong_convexity: f64,
    /// An [`ActNorm`] before every activation and on the output (CP-Flow's ICNN2);
    /// false for the plain network of Amos et al.
    pub act_norm: bool,
}

/// The unconstrained parameters of an ICNN; the constrained ones are passed to
/// [`Icnn::forward_with`].
///
/// ```
/// use autograd::Var;
/// use nn::{Activation, Icnn, IcnnConfig, ParamStore};
/// use tensor::{Rng, Tensor};
/// # fn main() -> tensor::Result<()> {
/// let (store, mut rng) = (ParamStore::<f64>::new(), Rng::new(0));
/// let cfg = IcnnConfig { input: 2, width: 8, layers: 3, activation: Activation::Softplus, strong_convexity: 0.0, act_norm: false };
/// let icnn = Icnn::new(&store.root().sub("icnn"), cfg, &mut rng)?;
/// // Non-negative weights: here the initial ones (in training, a strategy of `optim::lift`).
/// let w: Vec<Var<f64>> = icnn.init_constrained(&mut rng)?.into_iter().map(Var::constant).collect();
/// // F at 11 points of the segment from a to b: convex, no second difference is negative.
/// let (a, b) = ([-1.0, 2.0], [3.0, -0.5]);
/// let pts: Vec<f64> = (0..=10).flat_map(|i| (0..2).map(move |j| a[j] + (b[j] - a[j]) * i as f64 / 10.0)).collect();
/// let f = icnn.forward_with(&Var::constant(Tensor::from_vec(pts, &[11, 2])?), &w)?.value().to_vec();
/// assert!(f.len() == 11 && f.windows(3).all(|s| s[0] - 2.0 * s[1] + s[2] >= -1e-12));
/// # Ok(())
/// # }
/// ```
pub struct Icnn<T: Element> {
    cfg: IcnnConfig,
    /// A₀ `[width, input]`.
    pub first_weight: Param<T>,
    /// b₀ `[width]`.
    pub first_bias: Param<T>,
    /// A_k `[width, input]` for k = 1 … K−1 (skip connections, no bias).
    pub skips: Vec<Param<T>>,
    /// b_k `[width]` for k = 1 … K−1.
    pub biases: Vec<Param<T>>,
    /// a_out `[1, input]`.
    pub out_skip: Param<T>,
    /// With `act_norm`: one [`ActNorm`] over `width` units per hidden layer, then
    /// one over the output (empty otherwise). Always the network's own parameters,
    /// even when a hypernetwork emits the others.
    pub act_norms: Vec<ActNorm<T>>,
}

impl<T: Element> Icnn<T> {
    /// A network with Xavier-uniform A's and zero biases.
    pub fn new(scope: &Scope<T>, cfg: IcnnConfig, rng: &mut Rng) -> Result<Self> {
        if cfg.input == 0 || cfg.width == 0 || cfg.layers == 0 {
            return Err(Error::value(
                "Icnn",
                format!("needs positive sizes, got {cfg:?}"),
            ));
        }
        if !matches!(cfg.activation, Activation::Softplus | Activation::Relu) {
            return Err(Error::value(
                "Icnn",
                format!(
                    "the activation must be convex and non-decreasing (softplus or ReLU), got {:?}",
                    cfg.activation
                ),
            ));
        }
        if !(cfg.strong_convexity >= 0.0 && cfg.strong_convexity.is_finite()) {
            return Err(Error::value(
                "Icnn",
                format!("c must be finite and ≥ 0, got {}", cfg.strong_convexity),
            ));
        }
        let (h, d) = (cfg.width, cfg.input);
        let first_weight = scope.param("first.weight", init::xavier_uniform(&[h, d], 1.0, rng)?)?;
        let first_bias = scope.param("first.bias", Tensor::zeros(&[h])?)?;
        let mut skips = Vec::new();
        let mut biases = Vec::new();
        for k in 1..cfg.layers {
            skips.push(scope.param(
                &format!("skip{k}.weight"),
                init::xavier_uniform(&[h, d], 1.0, rng)?,
            )?);
            biases.push(scope.param(&format!("z{k}.bias"), Tensor::zeros(&[h])?)?);
        }
        let out_skip = scope.param("out.skip", init::xavier_uniform(&[1, d], 1.0, rng)?)?;
        let mut act_norms = Vec::new();
        if cfg.act_norm {
            for k in 0..cfg.layers {
                act_norms.push(ActNorm::new(&scope.sub(format!("act_norm{k}")), h)?);
            }
            act_norms.push(ActNorm::new(&scope.sub("act_norm.out"), 1)?);
        }
        Ok(Icnn {
            cfg,
            first_weight,
            first_bias,
            skips,
            biases,
            out_skip,
            act_norms,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &IcnnConfig {
        &self.cfg
    }

    /// Shapes of the non-negative weights, in the order [`Icnn::forward_with`] takes
    /// them: W₁ … W_{K−1} `[width, width]`, then w_out `[1, width]`.
    pub fn constrained_shapes(&self) -> Vec<Vec<usize>> {
        let h = self.cfg.width;
        let mut s = vec![vec![h, h]; self.cfg.layers - 1];
        s.push(vec![1, h]);
        s
    }

    /// Shapes of the unconstrained parameters, in the order [`Icnn::forward_with`]
    /// takes them after the constrained ones when a hypernetwork supplies every
    /// parameter: A₀ `[width, input]`, b₀ `[width]`, then A_k, b_k for k = 1 … K−1,
    /// then a_out `[1, input]`.
    pub fn free_shapes(&self) -> Vec<Vec<usize>> {
        let (h, d) = (self.cfg.width, self.cfg.input);
        let mut s = vec![vec![h, d], vec![h]];
        for _ in 1..self.cfg.layers {
            s.push(vec![h, d]);
            s.push(vec![h]);
        }
        s.push(vec![1, d]);
        s
    }

    /// Folded-normal initial values of the non-negative weights (mean 1/√width).
    pub fn init_constrained(&self, rng: &mut Rng) -> Result<Vec<Tensor<T>>> {
        self.constrained_shapes()
            .iter()
            .map(|s| init::folded_normal(&[s[0], s[1]], rng))
            .collect()
    }

    /// F(x) `[batch, 1]` for inputs `[batch, input]` with the given non-negative
    /// weights (which must be ≥ 0 for F to be convex; the caller's strategy ensures
    /// it). `weights` holds the constrained weights ([`Icnn::constrained_shapes`]),
    /// optionally followed by a value for every unconstrained parameter
    /// ([`Icnn::free_shapes`]), which then replace the network's own: the authors'
    /// EBM lift emits every parameter.
    pub fn forward_with(&self, x: &Var<T>, weights: &[Var<T>]) -> Result<Var<T>> {
        self.run(x, weights, false)
    }

    /// Primes every [`ActNorm`] on the batch `x` (layer by layer, each seeing the
    /// units as the primed layers before it leave them), CP-Flow's data-dependent
    /// start; `weights` as in [`Icnn::forward_with`]. An error when the network has
    /// no ActNorm; an error at one norm (a non-finite batch statistic) leaves it and
    /// the norms after it as they were, those before it primed.
    pub fn prime_act_norm(&self, x: &Tensor<T>, weights: &[Var<T>]) -> Result<()> {
        if self.act_norms.is_empty() {
            return Err(Error::value(
                "Icnn",
                "prime_act_norm on a network built without act_norm",
            ));
        }
        autograd::no_grad(|| self.run(&Var::constant(x.clone()), weights, true)).map(|_| ())
    }

    /// The pre-activation `pre` through the ActNorm at `site` (primed first on
    /// `pre` when `prime`), or unchanged without ActNorm.
    fn normalise(&self, site: usize, pre: Var<T>, prime: bool) -> Result<Var<T>> {
        match self.act_norms.get(site) {
            None => Ok(pre),
            Some(norm) => {
                if prime {
                    norm.prime(pre.value())?;
                }
                norm.forward(&pre)
            }
        }
    }

    /// The forward pass, priming each ActNorm on its way when `prime`.
    fn run(&self, x: &Var<T>, weights: &[Var<T>], prime: bool) -> Result<Var<T>> {
        let shapes = self.constrained_shapes();
        let free_shapes = self.free_shapes();
        let mut expected = shapes.clone();
        if weights.len() > shapes.len() {
            expected.extend(free_shapes.iter().cloned());
        }
        if weights.len() != expected.len()
            || weights
                .iter()
                .zip(&expected)
                .any(|(w, s)| w.shape() != s.as_slice())
        {
            let got: Vec<Vec<usize>> = weights.iter().map(|w| w.shape().to_vec()).collect();
            return Err(Error::shape(
                "Icnn",
                format!(
                    "weights of shapes {got:?}, expected the constrained {shapes:?}, optionally followed by the free {free_shapes:?}"
                ),
            ));
        }
        let (constrained, emitted) = weights.split_at(shapes.len());
        let own: Vec<Var<T>>;
        let free: &[Var<T>] = if emitted.is_empty() {
            own = std::iter::once(self.first_weight.var())
                .chain(std::iter::once(self.first_bias.var()))
                .chain(
                    self.skips
                        .iter()
                        .zip(&self.biases)
                        .flat_map(|(a, b)| [a.var(), b.var()]),
                )
                .chain(std::iter::once(self.out_skip.var()))
                .collect();
            &own
        } else {
            emitted
        };
        if x.ndim() != 2 || x.shape()[1] != self.cfg.input {
            return Err(Error::shape(
                "Icnn",
                format!(
                    "input of shape {} for an ICNN over {} dimensions",
                    fmt_shape(x.shape()),
                    self.cfg.input
                ),
            ));
        }
        let act = self.cfg.activation;
        let first = x.matmul(&free[0].t()?)?.add(&free[1])?;
        let mut z = act.apply(&self.normalise(0, first, prime)?)?;
        for k in 0..self.cfg.layers - 1 {
            let pre = z
                .matmul(&constrained[k].t()?)?
                .add(&x.matmul(&free[2 + 2 * k].t()?)?)?
                .add(&free[3 + 2 * k])?;
            z = act.apply(&self.normalise(k + 1, pre, prime)?)?;
        }
        let out = z
            .matmul(&constrained[self.cfg.layers - 1].t()?)?
            .add(&x.matmul(&free[free.len() - 1].t()?)?)?;
        let mut f = self.normalise(self.cfg.layers, out, prime)?;
        if self.cfg.strong_convexity > 0.0 {
            f = f.add(
                &x.square()?
                    .sum(&[1], true)?
                    .mul_scalar(0.5 * self.cfg.strong_convexity)?,
            )?;
        }
        Ok(f)
    }
}
