//! Adam's element-wise update, fused (one pass over parameter, gradient and both
//! moments) and vectorised explicitly: its three divisions and square root per
//! element bound the step, and the compiler left them at 4 lanes (`simd_scope`
//! does not reach a closure that is not inlined into it). It lives here because
//! explicit SIMD needs `unsafe`; the update rule itself is `optim`'s
//! (`optim::Adam`), which calls it.
//!
//! Every operation is a correctly rounded +, −, ×, ÷ or √ (no fused multiply-add),
//! in the same order on every path, so the AVX2 and portable paths give the same
//! bits.

use super::gemm::Scalar;
#[cfg(target_arch = "x86_64")]
use std::any::TypeId;

/// The constants of one Adam step for one parameter.
#[derive(Clone, Copy, Debug)]
pub struct AdamStep<T> {
    /// Decay of the first moment.
    pub beta1: T,
    /// Decay of the second moment.
    pub beta2: T,
    /// Bias corrections `1 − β₁ᵗ` and `1 − β₂ᵗ`.
    pub correction1: T,
    /// See `correction1`.
    pub correction2: T,
    /// Learning rate.
    pub lr: T,
    /// Added to √v̂.
    pub eps: T,
    /// Weight decay (0 for none).
    pub weight_decay: T,
    /// Decoupled decay (AdamW: θ ← θ − lr·wd·θ) rather than added to the gradient.
    pub decoupled: bool,
}

/// The slices of one update, all of one length: inputs `x` (parameter) and `g`;
/// the moments `m` and `v`, updated in place; the new parameter `x_out`.
pub struct AdamSlices<'a, T> {
    /// Parameter.
    pub x: &'a [T],
    /// Gradient.
    pub g: &'a [T],
    /// First moment, replaced by the new one.
    pub m: &'a mut [T],
    /// Second moment, replaced by the new one.
    pub v: &'a mut [T],
    /// New parameter.
    pub x_out: &'a mut [T],
}

/// For each element: `(x, g) ← (x − lr·wd·x, g)` (decoupled) or `(x, g + wd·x)`;
/// `m ← β₁m + (1 − β₁)g`; `v ← β₂v + (1 − β₂)g·g`; `x ← x − lr·(m / c₁) / (√(v / c₂)
/// + ε)`.
///
/// # Panics
/// When the slices differ in length.
#[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
pub fn adam_update<T: Scalar + num_traits::Float>(h: &AdamStep<T>, mut s: AdamSlices<'_, T>) {
    let n = s.x.len();
    assert!(
        [s.g.len(), s.m.len(), s.v.len(), s.x_out.len()]
            .iter()
            .all(|&l| l == n),
        "adam_update: slices of different lengths"
    );
    #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
    let mut done = 0;
    #[cfg(target_arch = "x86_64")]
    if super::has_avx2_fma() {
        let p = ptrs(&mut s);
        // SAFETY: AVX2 is present (checked just above); every slice holds n elements
        // (checked above); T is f32 or f64 as the type test says (the only Scalars).
        // (AVX-512 measured no faster: the update is bound by memory at 8 lanes.)
        done = unsafe {
            if TypeId::of::<T>() == TypeId::of::<f32>() {
                avx2_f32(cast(h), n, p.map(|q| q.cast()))
            } else {
                avx2_f64(cast(h), n, p.map(|q| q.cast()))
            }
        };
    }
    for i in done..n {
        let (xi, mi, vi) = element(h, s.x[i], s.g[i], s.m[i], s.v[i]);
        s.x_out[i] = xi;
        s.m[i] = mi;
        s.v[i] = vi;
    }
}

/// The first element whose update would give a non-finite parameter or moment
/// (a finite gradient whose square overflows, say), computed exactly as
/// [`adam_update`] would (every path gives the same bits) but writing nothing:
/// the check an optimiser makes before it rewrites the moments in place.
///
/// # Panics
/// When the slices differ in length.
pub fn adam_first_non_finite<T: num_traits::Float>(
    h: &AdamStep<T>,
    x: &[T],
    g: &[T],
    m: &[T],
    v: &[T],
) -> Option<usize> {
    let n = x.len();
    assert!(
        [g.len(), m.len(), v.len()].iter().all(|&l| l == n),
        "adam_first_non_finite: slices of different lengths"
    );
    (0..n).find(|&i| {
        let (x, m, v) = element(h, x[i], g[i], m[i], v[i]);
        !(x.is_finite() && m.is_finite() && v.is_finite())
    })
}

/// The update of one element: new (x, m, v).
#[inline(always)]
fn element<T: num_traits::Float>(h: &AdamStep<T>, x: T, g: T, m: T, v: T) -> (T, T, T) {
    let one = T::one();
    let (x, g) = if h.decoupled {
        (x - h.lr * h.weight_decay * x, g)
    } else {
        (x, g + h.weight_decay * x)
    };
    let m = h.beta1 * m + (one - h.beta1) * g;
    let v = h.beta2 * v + (one - h.beta2) * g * g;
    (
        x - h.lr * (m / h.correction1) / ((v / h.correction2).sqrt() + h.eps),
        m,
        v,
    )
}

/// The slices as the vector loop's seven pointers: inputs x, g, m, v (only read
/// through theirs), then outputs x, m, v — each moment's output the same pointer
/// as its input, since the moments are updated in place.
#[cfg(target_arch = "x86_64")]
fn ptrs<T>(s: &mut AdamSlices<'_, T>) -> [*mut T; 7] {
    let (m, v) = (s.m.as_mut_ptr(), s.v.as_mut_ptr());
    [
        s.x.as_ptr().cast_mut(),
        s.g.as_ptr().cast_mut(),
        m,
        v,
        s.x_out.as_mut_ptr(),
        m,
        v,
    ]
}

/// The constants as those of `U` (the same type as `T`, as the caller checked).
#[cfg(target_arch = "x86_64")]
fn cast<T: Scalar, U: Scalar>(h: &AdamStep<T>) -> AdamStep<U> {
    assert_eq!(TypeId::of::<T>(), TypeId::of::<U>());
    let c = |v: T| -> U {
        // SAFETY: T and U are the same type (asserted above).
        unsafe { std::mem::transmute_copy(&v) }
    };
    AdamStep {
        beta1: c(h.beta1),
        beta2: c(h.beta2),
        correction1: c(h.correction1),
        correction2: c(h.correction2),
        lr: c(h.lr),
        eps: c(h.eps),
        weight_decay: c(h.weight_decay),
        decoupled: h.decoupled,
    }
}

/// Defines the vector loop for one element type and instruction set: whole vectors
/// only; returns how many elements it did.
#[cfg(target_arch = "x86_64")]
macro_rules! simd_adam {
    ($name:ident, $feature:literal, $t:ty, $lanes:literal, $load:ident, $store:ident, $set:ident,
     $add:ident, $sub:ident, $mul:ident, $div:ident, $sqrt:ident) => {
        /// # Safety
        /// The CPU has the function's features; the seven pointers address `n`
        /// elements each, the outputs writable, each output either disjoint from
        /// every input or equal to its own input (every vector is loaded before
        /// the stores at its position).
        #[target_feature(enable = $feature)]
        unsafe fn $name(h: AdamStep<$t>, n: usize, p: [*mut $t; 7]) -> usize {
            use std::arch::x86_64::*;
            let [x, g, m, v, xo, mo, vo] = p;
            let (b1, b2, one) = ($set(h.beta1), $set(h.beta2), $set(1.0));
            let (c1, c2) = ($set(h.correction1), $set(h.correction2));
            let (lr, eps, wd) = ($set(h.lr), $set(h.eps), $set(h.weight_decay));
            let (nb1, nb2) = ($sub(one, b1), $sub(one, b2));
            let full = n / $lanes * $lanes;
            let mut i = 0;
            while i < full {
                // SAFETY: i + lanes ≤ n for every pointer.
                unsafe {
                    let (mut xi, mut gi) = ($load(x.add(i)), $load(g.add(i)));
                    if h.decoupled {
                        xi = $sub(xi, $mul($mul(lr, wd), xi));
                    } else {
                        gi = $add(gi, $mul(wd, xi));
                    }
                    let mi = $add($mul(b1, $load(m.add(i))), $mul(nb1, gi));
                    let vi = $add($mul(b2, $load(v.add(i))), $mul($mul(nb2, gi), gi));
                    $store(mo.add(i), mi);
                    $store(vo.add(i), vi);
                    let step = $div($mul(lr, $div(mi, c1)), $add($sqrt($div(vi, c2)), eps));
                    $store(xo.add(i), $sub(xi, step));
                }
                i += $lanes;
            }
            full
        }
    };
}

#[cfg(target_arch = "x86_64")]
simd_adam!(
    avx2_f32,
    "avx2",
    f32,
    8,
    _mm256_loadu_ps,
    _mm256_storeu_ps,
    _mm256_set1_ps,
    _mm256_add_ps,
    _mm256_sub_ps,
    _mm256_mul_ps,
    _mm256_div_ps,
    _mm256_sqrt_ps
);
#[cfg(target_arch = "x86_64")]
simd_adam!(
    avx2_f64,
    "avx2",
    f64,
    4,
    _mm256_loadu_pd,
    _mm256_storeu_pd,
    _mm256_set1_pd,
    _mm256_add_pd,
    _mm256_sub_pd,
    _mm256_mul_pd,
    _mm256_div_pd,
    _mm256_sqrt_pd
);

#[cfg(test)]
mod tests {
    use super::*;

    /// The vector path (moments rewritten in place) gives the scalar path's bits,
    /// for both decays and a length with a tail.
    #[test]
    fn vector_and_scalar_updates_agree_to_the_bit() {
        fn check<T: Scalar + num_traits::Float + std::fmt::Debug>() {
            let n = 37;
            let f = |i: usize, s: f64| T::from((i as f64 * s).sin() * 3.0).unwrap();
            let (x, g): (Vec<T>, Vec<T>) = (
                (0..n).map(|i| f(i, 0.7)).collect(),
                (0..n).map(|i| f(i, 1.3)).collect(),
            );
            let m: Vec<T> = (0..n).map(|i| f(i, 0.2)).collect();
            let v: Vec<T> = (0..n).map(|i| f(i, 0.9).abs()).collect();
            for decoupled in [false, true] {
                let t = |v: f64| T::from(v).unwrap();
                let h = AdamStep {
                    beta1: t(0.9),
                    beta2: t(0.999),
                    correction1: t(0.271),
                    correction2: t(0.003),
                    lr: t(1e-3),
                    eps: t(1e-8),
                    weight_decay: t(0.01),
                    decoupled,
                };
                let (mut xo, mut mo, mut vo) = (vec![T::zero(); n], m.clone(), v.clone());
                adam_update(
                    &h,
                    AdamSlices {
                        x: &x,
                        g: &g,
                        m: &mut mo,
                        v: &mut vo,
                        x_out: &mut xo,
                    },
                );
                for i in 0..n {
                    let (a, b, c) = element(&h, x[i], g[i], m[i], v[i]);
                    assert_eq!(
                        (xo[i], mo[i], vo[i]),
                        (a, b, c),
                        "element {i}, decoupled {decoupled}"
                    );
                }
            }
        }
        check::<f32>();
        check::<f64>();
    }
}
