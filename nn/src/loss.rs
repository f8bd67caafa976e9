//! Losses: mean squared error, the relative L2 error of function-valued outputs,
//! cross-entropy from logits (with label smoothing), negative log-likelihood, and the
//! squared loss on one-hot targets.

use autograd::Var;
use tensor::{error::fmt_shape, Element, Error, Result, Tensor};

fn check_labels(op: &'static str, shape: &[usize], labels: &[usize]) -> Result<(usize, usize)> {
    if shape.len() != 2 {
        return Err(Error::shape(
            op,
            format!("needs [batch, classes] scores, got {}", fmt_shape(shape)),
        ));
    }
    let (n, c) = (shape[0], shape[1]);
    if n == 0 {
        return Err(Error::shape(op, "the batch is empty"));
    }
    if labels.len() != n {
        return Err(Error::shape(
            op,
            format!("{} labels for a batch of {n}", labels.len()),
        ));
    }
    if let Some(&bad) = labels.iter().find(|&&l| l >= c) {
        return Err(Error::Index {
            op,
            index: bad,
            len: c,
            axis: 1,
        });
    }
    Ok((n, c))
}

/// mean((pred − target)²) over all elements; the shapes must be equal.
///
/// ```
/// use autograd::{backward, Var};
/// use nn::loss::mse;
/// use tensor::Tensor;
/// # fn main() -> tensor::Result<()> {
/// let pred = Var::leaf(Tensor::<f64>::from_vec(vec![1.0, 2.0, 3.0], &[3])?);
/// let target = Var::constant(Tensor::from_vec(vec![1.0, 0.0, 0.0], &[3])?);
/// let loss = mse(&pred, &target)?;
/// assert!((loss.item()? - 13.0 / 3.0).abs() < 1e-15); // (0 + 4 + 9) / 3
/// let g = backward(&loss)?.get(&pred).unwrap().to_vec(); // 2(pred − target)/n
/// assert!(g[0] == 0.0 && (g[1] - 4.0 / 3.0).abs() < 1e-15 && (g[2] - 2.0).abs() < 1e-15);
/// assert!(mse(&pred, &Var::constant(Tensor::zeros(&[2])?)).is_err());
/// # Ok(())
/// # }
/// ```
pub fn mse<T: Element>(pred: &Var<T>, target: &Var<T>) -> Result<Var<T>> {
    if pred.shape() != target.shape() {
        return Err(Error::shape(
            "mse",
            format!(
                "prediction {} and target {} differ",
                fmt_shape(pred.shape()),
                fmt_shape(target.shape())
            ),
        ));
    }
    if pred.numel() == 0 {
        return Err(Error::shape("mse", "the batch is empty"));
    }
    pred.sub(target)?.square()?.mean_all()
}

/// mean over the batch (first axis) of ‖pred_b − target_b‖₂ / ‖target_b‖₂, the norms
/// over every other axis: the neural-operator papers' relative L2 loss (their
/// `LpLoss`, averaged rather than summed over the batch). A target with zero norm is
/// an error, since its relative error is undefined.
pub fn relative_l2<T: Element>(pred: &Var<T>, target: &Var<T>) -> Result<Var<T>> {
    if pred.shape() != target.shape() || pred.ndim() < 2 || pred.shape()[0] == 0 {
        return Err(Error::shape(
            "relative_l2",
            format!(
                "needs equal shapes [batch, ...] with a non-empty batch, got {} and {}",
                fmt_shape(pred.shape()),
                fmt_shape(target.shape())
            ),
        ));
    }
    let b = pred.shape()[0];
    let per = pred.numel() / b;
    let norms =
        |v: &Var<T>| -> Result<Var<T>> { v.reshape(&[b, per])?.square()?.sum(&[1], false)?.sqrt() };
    let target_norm = norms(target)?;
    if target_norm
        .value()
        .to_vec()
        .iter()
        .any(|n| n.as_f64() == 0.0)
    {
        return Err(Error::value(
            "relative_l2",
            "a target function is identically zero",
        ));
    }
    norms(&pred.sub(target)?)?.div(&target_norm)?.mean_all()
}

/// `−mean_i log_probs[i, labels[i]]`.
pub fn nll<T: Element>(log_probs: &Var<T>, labels: &[usize]) -> Result<Var<T>> {
    let (n, _) = check_labels("nll", log_probs.shape(), labels)?;
    let idx = Tensor::from_vec(labels.to_vec(), &[n, 1])?;
    log_probs.gather(1, &idx)?.mean_all()?.neg()
}

/// Cross-entropy of logits `[batch, classes]` against class labels, averaged over
/// the batch, computed through log_softmax (stable). With label smoothing ε the
/// target is (1 − ε)·one_hot + ε/classes.
///
/// ```
/// use autograd::{backward, Var};
/// use nn::loss::cross_entropy;
/// use tensor::Tensor;
/// # fn main() -> tensor::Result<()> {
/// // Uniform logits over 4 classes: the loss is ln 4, whatever the labels.
/// let logits = Var::leaf(Tensor::<f64>::zeros(&[2, 4])?);
/// let loss = cross_entropy(&logits, &[0, 3], 0.0)?;
/// assert!((loss.item()? - 4f64.ln()).abs() < 1e-15);
/// // Its gradient is (softmax − one-hot) / batch.
/// let g = backward(&loss)?.get(&logits).unwrap().to_vec();
/// assert!((g[0] - (0.25 - 1.0) / 2.0).abs() < 1e-15 && (g[1] - 0.125).abs() < 1e-15);
/// // Large logits are stable; a label out of range is an error naming the op.
/// let sure = Var::constant(Tensor::from_vec(vec![50.0, 0.0, 0.0, 50.0], &[2, 2])?);
/// assert!(cross_entropy(&sure, &[0, 1], 0.0)?.item()? < 1e-20);
/// assert!(cross_entropy(&logits, &[0, 4], 0.0).unwrap_err().to_string().starts_with("cross_entropy"));
/// # Ok(())
/// # }
/// ```
pub fn cross_entropy<T: Element>(
    logits: &Var<T>,
    labels: &[usize],
    label_smoothing: f64,
) -> Result<Var<T>> {
    check_labels("cross_entropy", logits.shape(), labels)?;
    if !(0.0..1.0).contains(&label_smoothing) {
        return Err(Error::value(
            "cross_entropy",
            format!("label smoothing must be in [0, 1), got {label_smoothing}"),
        ));
    }
    let lp = logits.log_softmax(-1)?;
    let hard = nll(&lp, labels)?;
    if label_smoothing == 0.0 {
        return Ok(hard);
    }
    let uniform = lp.mean(&[-1], false)?.mean_all()?.neg()?;
    hard.mul_scalar(1.0 - label_smoothing)?
        .add(&uniform.mul_scalar(label_smoothing)?)
}

/// Squared loss on one-hot targets: `mean_i Σ_k (outputs[i, k] − [k = labels[i]])²`,
/// the loss under which a closed-form last layer is exact.
pub fn squared_one_hot<T: Element>(outputs: &Var<T>, labels: &[usize]) -> Result<Var<T>> {
    let (_, c) = check_labels("squared_one_hot", outputs.shape(), labels)?;
    let target = Var::constant(Tensor::one_hot(labels, c)?);
    outputs
        .sub(&target)?
        .square()?
        .sum(&[-1], false)?
        .mean_all()
}

/// Fraction of rows whose arg-max equals the label.
pub fn accuracy<T: Element>(scores: &Tensor<T>, labels: &[usize]) -> Result<f64> {
    let (n, _) = check_labels("accuracy", scores.shape(), labels)?;
    let pred = scores.argmax(-1, false)?.to_vec();
    Ok(pred.iter().zip(labels).filter(|(p, l)| p == l).count() as f64 / n as f64)
}
