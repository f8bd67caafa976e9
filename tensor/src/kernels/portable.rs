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
