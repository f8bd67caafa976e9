//! Symmetric positive-definite systems through the Cholesky factor, and functions of
//! SPD matrices through the eigendecomposition.

use super::{square_lower, Triangular};
use crate::element::Element;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

impl<T: Element> Tensor<T> {
    /// Solves A X = B given `self` = L, the lower Cholesky factor of A.
    pub fn cholesky_solve(&self, b: &Tensor<T>) -> Result<Tensor<T>> {
        let y = self.solve_triangular(b, Triangular::LOWER)?;
        self.solve_triangular(&y, Triangular::LOWER.transposed())
    }

    /// Solves A X = B for symmetric positive-definite A = `self` (lower triangle read).
    pub fn solve_spd(&self, b: &Tensor<T>) -> Result<Tensor<T>> {
        self.cholesky()?.cholesky_solve(b)
    }

    /// The inverse of a symmetric positive-definite matrix (lower triangle read).
    pub fn inverse_spd(&self) -> Result<Tensor<T>> {
        let n = square_lower("inverse_spd", self)?;
        let mut eye_shape = self.shape().to_vec();
        eye_shape.truncate(eye_shape.len() - 2);
        eye_shape.extend([n, n]);
        let eye = Tensor::eye(n)?.broadcast_to(&eye_shape)?;
        self.solve_spd(&eye)
    }

    /// log det A for symmetric positive-definite A: 2 Σ log Lᵢᵢ.
    pub fn logdet_spd(&self) -> Result<Tensor<T>> {
        let l = self.cholesky()?;
        let n = l.shape()[l.ndim() - 1];
        let diag = l
            .reshape(&[l.numel() / (n * n).max(1), n * n])?
            .slice(1, 0, n * n, n + 1)?;
        let batch = &self.shape()[..self.ndim() - 2];
        diag.ln().sum(&[1], false)?.mul_scalar(2.0).reshape(batch)
    }

    /// V f(Λ) Vᵀ for a symmetric matrix A = V Λ Vᵀ; `f` sees each eigenvalue and may
    /// refuse it with an error message.
    pub fn spd_function(
        &self,
        op: &'static str,
        f: impl Fn(f64) -> std::result::Result<f64, String>,
    ) -> Result<Tensor<T>> {
        let (values, vectors) = self.eigh()?;
        let mapped: Vec<T> = values
            .to_vec()
            .into_iter()
            .map(|l| {
                f(l.as_f64())
                    .map(T::from_f64)
                    .map_err(|m| Error::numerical(op, m))
            })
            .collect::<Result<_>>()?;
        let mapped = Tensor::from_vec(mapped, values.shape())?;
        vectors.mul(&mapped.unsqueeze(-2)?)?.matmul(&vectors.t()?)
    }

    /// A^p for symmetric positive-definite A (negative and fractional p included).
    pub fn spd_pow(&self, p: f64) -> Result<Tensor<T>> {
        if !p.is_finite() {
            return Err(Error::value(
                "spd_pow",
                format!("the power must be finite, got {p}"),
            ));
        }
        self.spd_function("spd_pow", |l| {
            if l > 0.0 {
                Ok(l.powf(p))
            } else {
                Err(format!(
                    "the matrix is not positive definite: eigenvalue {l}"
                ))
            }
        })
    }

    /// A^(−1/2) for symmetric positive-definite A.
    pub fn spd_inv_sqrt(&self) -> Result<Tensor<T>> {
        self.spd_pow(-0.5)
    }
}
