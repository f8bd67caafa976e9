//! Portable element-wise kernels (the fallback of the AVX2 paths, and the `f64` path).

use num_traits::Float;

/// Stable logistic function.
pub fn sigmoid_scalar<T: Float>(x: T) -> T {
    if x >= T::zero() {
        T::one() / (T::one() + (-x).exp())
    } else {
        let e = x.exp();
        e / (T::one() + e)
    }
}

/// Stable softplus: `max(x, 0) + ln(1 + exp(-|x|))`.
pub fn softplus_scalar<T: Float>(x: T) -> T {
    x.max(T::zero()) + (-x.abs()).exp().ln_1p()
}

pub fn exp<T: Float>(x: &[T], out: &mut [T]) {
    for (o, &v) in out.iter_mut().zip(x) {
        *o = v.exp();
    }
}

pub fn tanh<T: Float>(x: &[T], out: &mut [T]) {
    for (o, &v) in out.iter_mut().zip(x) {
        *o = v.tanh();
    }
}

pub fn sigmoid<T: Float>(x: &[T], out: &mut [T]) {
    for (o, &v) in out.iter_mut().zip(x) {
        *o = sigmoid_scalar(v);
    }
}

pub fn softplus<T: Float>(x: &[T], out: &mut [T]) {
    for (o, &v) in out.iter_mut().zip(x) {
        *o = softplus_scalar(v);
    }
}

/// GELU x·Φ(x) = ½x·erfc(−x/√2), with the given erfc.
pub fn gelu<T: Float>(x: &[T], out: &mut [T], erfc: fn(f64) -> f64) {
    for (o, &v) in out.iter_mut().zip(x) {
        let v = v.to_f64().unwrap_or(f64::NAN);
        *o = T::from(0.5 * v * erfc(-v * std::f64::consts::FRAC_1_SQRT_2)).unwrap_or(T::nan());
    }
}

/// The derivative of GELU, Φ(x) + x·φ(x), with the given erfc.
pub fn gelu_grad<T: Float>(x: &[T], out: &mut [T], erfc: fn(f64) -> f64) {
    let inv_sqrt_2pi = 0.5 * std::f64::consts::FRAC_2_SQRT_PI * std::f64::consts::FRAC_1_SQRT_2;
    for (o, &v) in out.iter_mut().zip(x) {
        let v = v.to_f64().unwrap_or(f64::NAN);
        let cdf = 0.5 * erfc(-v * std::f64::consts::FRAC_1_SQRT_2);
        let pdf = (-0.5 * v * v).exp() * inv_sqrt_2pi;
        *o = T::from(cdf + v * pdf).unwrap_or(T::nan());
    }
}
