//! Initialisers, all drawing from an explicit seeded generator.
//!
//! `fan_in` and `fan_out` follow PyTorch: for a weight of shape `[out, in, k...]`,
//! fan_in = in·Πk and fan_out = out·Πk.

use tensor::{error::fmt_shape, Element, Error, Result, Rng, Tensor};

/// (fan_in, fan_out) of a weight shape `[out, in, kernel...]` (a 1-D shape counts as
/// both).
pub fn fans(shape: &[usize]) -> Result<(usize, usize)> {
    // Every fan divides the element count, so checking it rules out overflow.
    tensor::layout::checked_numel("init", shape)?;
    match shape.len() {
        0 => Err(Error::shape("init", "a scalar has no fans")),
        1 => Ok((shape[0], shape[0])),
        _ => {
            let field: usize = shape[2..].iter().product();
            Ok((shape[1] * field, shape[0] * field))
        }
    }
}

fn positive(op: &'static str, shape: &[usize]) -> Result<(usize, usize)> {
    let (fi, fo) = fans(shape)?;
    if fi == 0 || fo == 0 {
        return Err(Error::shape(
            op,
            format!("shape {} has an empty fan", fmt_shape(shape)),
        ));
    }
    Ok((fi, fo))
}

/// U[low, high).
pub fn uniform<T: Element>(
    shape: &[usize],
    low: f64,
    high: f64,
    rng: &mut Rng,
) -> Result<Tensor<T>> {
    Tensor::rand_uniform(shape, low, high, rng)
}

/// N(mean, std²).
pub fn normal<T: Element>(
    shape: &[usize],
    mean: f64,
    std: f64,
    rng: &mut Rng,
) -> Result<Tensor<T>> {
    Tensor::rand_normal(shape, mean, std, rng)
}

/// Glorot/Xavier uniform: U[−a, a] with a = gain·√(6/(fan_in + fan_out)).
pub fn xavier_uniform<T: Element>(shape: &[usize], gain: f64, rng: &mut Rng) -> Result<Tensor<T>> {
    let (fi, fo) = positive("xavier_uniform", shape)?;
    let a = gain * (6.0 / (fi + fo) as f64).sqrt();
    Tensor::rand_uniform(shape, -a, a, rng)
}

/// Glorot/Xavier normal: N(0, gain²·2/(fan_in + fan_out)).
pub fn xavier_normal<T: Element>(shape: &[usize], gain: f64, rng: &mut Rng) -> Result<Tensor<T>> {
    let (fi, fo) = positive("xavier_normal", shape)?;
    Tensor::rand_normal(shape, 0.0, gain * (2.0 / (fi + fo) as f64).sqrt(), rng)
}

/// He/Kaiming uniform for ReLU: U[−a, a] with a = √(6/fan_in).
pub fn kaiming_uniform<T: Element>(shape: &[usize], rng: &mut Rng) -> Result<Tensor<T>> {
    let (fi, _) = positive("kaiming_uniform", shape)?;
    let a = (6.0 / fi as f64).sqrt();
    Tensor::rand_uniform(shape, -a, a, rng)
}

/// He/Kaiming normal for ReLU: N(0, 2/fan_in).
pub fn kaiming_normal<T: Element>(shape: &[usize], rng: &mut Rng) -> Result<Tensor<T>> {
    let (fi, _) = positive("kaiming_normal", shape)?;
    Tensor::rand_normal(shape, 0.0, (2.0 / fi as f64).sqrt(), rng)
}

/// PyTorch's default for `Linear`/`Conv`: U[−1/√fan_in, 1/√fan_in].
pub fn lecun_uniform<T: Element>(shape: &[usize], rng: &mut Rng) -> Result<Tensor<T>> {
    let (fi, _) = positive("lecun_uniform", shape)?;
    let a = 1.0 / (fi as f64).sqrt();
    Tensor::rand_uniform(shape, -a, a, rng)
}

/// Folded normal |N(0, π/(2·fan_in))|, whose mean is 1/√fan_in: the initialisation of
/// non-negative ICNN weights (Hoedt & Klambauer, 2023).
pub fn folded_normal<T: Element>(shape: &[usize], rng: &mut Rng) -> Result<Tensor<T>> {
    let (fi, _) = positive("folded_normal", shape)?;
    let std = (std::f64::consts::PI / (2.0 * fi as f64)).sqrt();
    Ok(Tensor::rand_normal(shape, 0.0, std, rng)?.abs())
}
