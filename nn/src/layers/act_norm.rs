//! Activation normalisation without a log-determinant (Kingma & Dhariwal's ActNorm,
//! as CP-Flow uses it inside its ICNNs): a per-feature shift and a positive scale,
//! started from the statistics of one batch.

use crate::param::{Param, Scope};
use autograd::Var;
use tensor::{error::fmt_shape, Element, Error, Result, Tensor};

/// The floor added to the scale, CP-Flow's `_scaling_min`: the scale stays ≥ 10⁻³
/// however far the log-scale falls.
pub const SCALE_FLOOR: f64 = 1e-3;

/// The guard added to the batch's standard deviation when priming (CP-Flow's 1e-6):
/// a constant feature gets a large but finite scale.
pub const STD_GUARD: f64 = 1e-6;

/// y = (x + shift) ⊙ (exp(log_scale) + 10⁻³) per feature of `[batch, features]`
/// rows. The scale is positive, so the map is increasing in every feature: inside an
/// input-convex network it keeps the output convex. [`ActNorm::prime`] sets shift and
/// log-scale so that a given batch leaves with mean 0 and standard deviation ≈ 1
/// (CP-Flow's data-dependent start, done on the first batch it sees).
///
/// ```
/// use autograd::Var;
/// use nn::{ActNorm, ParamStore};
/// use tensor::Tensor;
/// # fn main() -> tensor::Result<()> {
/// let store = ParamStore::<f64>::new();
/// let norm = ActNorm::new(&store.root().sub("norm"), 2)?;
/// let x = Tensor::from_vec(vec![1.0, 10.0, 3.0, 30.0, 5.0, 50.0], &[3, 2])?;
/// norm.prime(&x)?;
/// let y = norm.forward(&Var::constant(x))?.value().clone();
/// // Each feature leaves with mean 0 and standard deviation 1 (up to the 10⁻³ floor).
/// assert!(y.mean(&[0], false)?.abs().max_all()? < 1e-12);
/// let sd: Vec<f64> = y.var(&[0], 0, false)?.sqrt().to_vec();
/// assert!(sd.iter().all(|s| (s - 1.0).abs() < 0.05));
/// # Ok(())
/// # }
/// ```
pub struct ActNorm<T: Element> {
    /// The shift `[features]`, added first (zeros until primed).
    pub shift: Param<T>,
    /// The log-scale `[features]` (zeros until primed).
    pub log_scale: Param<T>,
    features: usize,
}

impl<T: Element> ActNorm<T> {
    /// An unprimed layer over `features` features: shift 0, scale 1 + 10⁻³.
    pub fn new(scope: &Scope<T>, features: usize) -> Result<Self> {
        if features == 0 {
            return Err(Error::value("ActNorm", "needs at least one feature"));
        }
        Ok(ActNorm {
            shift: scope.param("shift", Tensor::zeros(&[features])?)?,
            log_scale: scope.param("log_scale", Tensor::zeros(&[features])?)?,
            features,
        })
    }

    /// Checks that `shape` is `[batch ≥ 1, features]`.
    fn check(&self, shape: &[usize]) -> Result<()> {
        if shape.len() != 2 || shape[0] == 0 || shape[1] != self.features {
            return Err(Error::shape(
                "ActNorm",
                format!(
                    "input of shape {}, expected [batch ≥ 1, {}]",
                    fmt_shape(shape),
                    self.features
                ),
            ));
        }
        Ok(())
    }

    /// The normalised rows.
    pub fn forward(&self, x: &Var<T>) -> Result<Var<T>> {
        self.check(x.shape())?;
        let scale = self.log_scale.var().exp()?.add_scalar(SCALE_FLOOR)?;
        x.add(&self.shift.var())?.mul(&scale)
    }

    /// Sets shift = −mean and log-scale = −ln(std + 10⁻⁶) from the rows of `x`
    /// (population statistics over the batch), CP-Flow's start. A non-finite
    /// statistic is an error and leaves the layer unchanged.
    pub fn prime(&self, x: &Tensor<T>) -> Result<()> {
        self.check(x.shape())?;
        let mean = x.mean(&[0], false)?;
        let std = x.var(&[0], 0, false)?.sqrt();
        let log_scale = std.add_scalar(STD_GUARD).ln().neg();
        let finite = |t: &Tensor<T>| t.to_vec().iter().all(|v| v.as_f64().is_finite());
        if !(finite(&mean) && finite(&log_scale)) {
            return Err(Error::value(
                "ActNorm",
                "the priming batch has a non-finite mean or standard deviation",
            ));
        }
        self.shift.set(mean.neg())?;
        self.log_scale.set(log_scale)
    }
}
