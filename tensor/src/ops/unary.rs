//! Element-wise unary operations and scalar arithmetic.

use crate::element::{DType, Element};
use crate::kernels::{sigmoid_scalar, softplus_scalar};
use crate::parallel;
use crate::special;
use crate::storage;
use crate::tensor::Tensor;
use num_traits::Float;

impl<T: Element> Tensor<T> {
    /// Applies `f` to every element.
    pub fn map(&self, f: impl Fn(T) -> T + Sync) -> Tensor<T> {
        self.map_to(f)
    }

    /// Applies a slice kernel (possibly vectorised) over contiguous chunks.
    fn map_kernel(&self, kernel: fn(&[T], &mut [T])) -> Tensor<T> {
        let src = self.contiguous();
        let x = src.as_slice().expect("contiguous");
        let mut out = storage::scratch(x.len(), T::zero());
        parallel::for_each_chunk(&mut out, |start, chunk| {
            kernel(&x[start..start + chunk.len()], chunk)
        });
        Tensor::from_contiguous(out, self.shape())
    }

    /// −x.
    pub fn neg(&self) -> Tensor<T> {
        self.map(|x| -x)
    }
    /// |x|.
    pub fn abs(&self) -> Tensor<T> {
        self.map(|x| x.abs())
    }
    /// −1, 0 or 1 by the sign of x (0 for ±0, NaN for NaN).
    pub fn sign(&self) -> Tensor<T> {
        self.map(|x| {
            if x > T::zero() {
                T::one()
            } else if x < T::zero() {
                -T::one()
            } else {
                x * T::zero()
            }
        })
    }
    /// eˣ.
    ///
    /// ```
    /// use tensor::Tensor;
    /// # fn main() -> tensor::Result<()> {
    /// let x = Tensor::<f64>::from_vec(vec![0.0, 1.0, 2.0_f64.ln()], &[3])?;
    /// let y = x.exp().to_vec();
    /// assert_eq!(y[0], 1.0);
    /// assert!((y[1] - std::f64::consts::E).abs() < 1e-15 && (y[2] - 2.0).abs() < 1e-15);
    /// assert!(x.exp().ln().sub(&x)?.abs().max_all()? < 1e-15); // ln inverts exp
    /// # Ok(())
    /// # }
    /// ```
    pub fn exp(&self) -> Tensor<T> {
        self.map_kernel(T::exp_slice)
    }
    /// eˣ − 1, accurate near 0.
    pub fn expm1(&self) -> Tensor<T> {
        self.map(|x| x.exp_m1())
    }
    /// Natural logarithm.
    pub fn ln(&self) -> Tensor<T> {
        self.map(|x| x.ln())
    }
    /// ln(1 + x), accurate near 0.
    pub fn ln1p(&self) -> Tensor<T> {
        self.map(|x| x.ln_1p())
    }
    /// √x.
    pub fn sqrt(&self) -> Tensor<T> {
        self.map(|x| x.sqrt())
    }
    /// 1/√x.
    pub fn rsqrt(&self) -> Tensor<T> {
        self.map(|x| x.sqrt().recip())
    }
    /// x².
    pub fn square(&self) -> Tensor<T> {
        self.map(|x| x * x)
    }
    /// 1/x.
    pub fn recip(&self) -> Tensor<T> {
        self.map(|x| x.recip())
    }
    /// xᵉ for a scalar exponent.
    pub fn powf(&self, e: f64) -> Tensor<T> {
        let e = T::from_f64(e);
        self.map(|x| x.powf(e))
    }
    /// sin x.
    pub fn sin(&self) -> Tensor<T> {
        self.map(|x| x.sin())
    }
    /// cos x.
    pub fn cos(&self) -> Tensor<T> {
        self.map(|x| x.cos())
    }
    /// tanh x.
    pub fn tanh(&self) -> Tensor<T> {
        self.map_kernel(T::tanh_slice)
    }
    /// The logistic function 1/(1 + e⁻ˣ).
    pub fn sigmoid(&self) -> Tensor<T> {
        self.map_kernel(T::sigmoid_slice)
    }
    /// ln(1 + eˣ), stable for large and very negative x.
    pub fn softplus(&self) -> Tensor<T> {
        self.map_kernel(T::softplus_slice)
    }
    /// max(x, 0).
    pub fn relu(&self) -> Tensor<T> {
        // NaN stays NaN; everything else not above zero, −∞ included, is +0 (the
        // `x * 0` this replaces gave NaN for −∞).
        self.map(|x| {
            if x > T::zero() || x.is_nan() {
                x
            } else {
                T::zero()
            }
        })
    }
    /// x for x > 0, `slope`·x otherwise.
    pub fn leaky_relu(&self, slope: f64) -> Tensor<T> {
        let s = T::from_f64(slope);
        self.map(|x| if x > T::zero() { x } else { s * x })
    }
    /// x for x > 0, α(eˣ − 1) otherwise.
    pub fn elu(&self, alpha: f64) -> Tensor<T> {
        let a = T::from_f64(alpha);
        self.map(|x| if x > T::zero() { x } else { a * x.exp_m1() })
    }
    /// x · sigmoid(x).
    pub fn silu(&self) -> Tensor<T> {
        self.map(|x| x * sigmoid_scalar(x))
    }
    /// The error function (full accuracy in f64, single-precision accuracy in f32).
    pub fn erf(&self) -> Tensor<T> {
        let f = if T::DTYPE == DType::F64 {
            special::erf
        } else {
            special::erf_fast
        };
        self.map(|x| T::from_f64(f(x.as_f64())))
    }
    /// GELU in its exact erf form: x · Φ(x) = ½ x erfc(−x/√2).
    pub fn gelu(&self) -> Tensor<T> {
        self.map_kernel(T::gelu_slice)
    }
    /// The derivative of GELU, Φ(x) + x·φ(x) (φ the standard normal density).
    pub fn gelu_grad(&self) -> Tensor<T> {
        self.map_kernel(T::gelu_grad_slice)
    }
    /// Clamps into [lo, hi] (NaN stays NaN).
    pub fn clamp(&self, lo: f64, hi: f64) -> Tensor<T> {
        let (l, h) = (T::from_f64(lo), T::from_f64(hi));
        self.map(|x| {
            if x < l {
                l
            } else if x > h {
                h
            } else {
                x
            }
        })
    }
    /// x + s.
    pub fn add_scalar(&self, s: f64) -> Tensor<T> {
        let s = T::from_f64(s);
        self.map(|x| x + s)
    }
    /// x − s.
    pub fn sub_scalar(&self, s: f64) -> Tensor<T> {
        let s = T::from_f64(s);
        self.map(|x| x - s)
    }
    /// x · s.
    pub fn mul_scalar(&self, s: f64) -> Tensor<T> {
        let s = T::from_f64(s);
        self.map(|x| x * s)
    }
    /// x / s.
    pub fn div_scalar(&self, s: f64) -> Tensor<T> {
        let s = T::from_f64(s);
        self.map(|x| x / s)
    }
}

/// Scalar softplus, shared with code that needs it outside tensors.
pub fn softplus<T: Float>(x: T) -> T {
    softplus_scalar(x)
}

/// Scalar logistic function.
pub fn sigmoid<T: Float>(x: T) -> T {
    sigmoid_scalar(x)
}
