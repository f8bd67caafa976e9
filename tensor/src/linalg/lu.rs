//! General square matrices by LU factorisation with partial pivoting (P A = L U):
//! `solve`, `inverse` and `slogdet`. Computed in f64 whatever the element type (an
//! f32 input is widened and the result rounded back), batched over leading axes.
//!
//! Singularity: `solve` and `inverse` refuse a matrix whose pivot |u_kk| falls to
//! n·ε·max|A| or below, naming the pivot (the solution would be dominated by
//! rounding); `slogdet` follows NumPy and PyTorch: sign 0 and log|det| = −∞ for an
//! exactly zero pivot, the (possibly tiny) determinant otherwise.

use super::{finite, square};
use crate::element::Element;
use crate::error::{fmt_shape, Error, Result};
use crate::tensor::Tensor;

/// The factorisation of one n×n matrix: L (unit diagonal, below) and U (on and
/// above) packed in `lu`, the row order `perm` and the permutation's sign.
struct Lu {
    lu: Vec<f64>,
    perm: Vec<usize>,
    sign: f64,
    n: usize,
}

impl Lu {
    fn factor(a: &[f64], n: usize) -> Lu {
        let mut lu = a.to_vec();
        let mut perm: Vec<usize> = (0..n).collect();
        let mut sign = 1.0;
        for k in 0..n {
            let p = (k..n)
                .max_by(|&i, &j| lu[i * n + k].abs().total_cmp(&lu[j * n + k].abs()))
                .unwrap_or(k);
            if p != k {
                for j in 0..n {
                    lu.swap(k * n + j, p * n + j);
                }
                perm.swap(k, p);
                sign = -sign;
            }
            let pivot = lu[k * n + k];
            if pivot == 0.0 {
                continue;
            }
            for i in k + 1..n {
                let f = lu[i * n + k] / pivot;
                lu[i * n + k] = f;
                for j in k + 1..n {
                    lu[i * n + j] -= f * lu[k * n + j];
                }
            }
        }
        Lu { lu, perm, sign, n }
    }

    /// The first pivot at or below n·ε·max|A|, with its value and the threshold.
    fn small_pivot(&self, scale: f64) -> Option<(usize, f64, f64)> {
        let threshold = self.n as f64 * f64::EPSILON * scale;
        (0..self.n)
            .map(|k| (k, self.lu[k * self.n + k]))
            .find(|(_, u)| !(u.abs() > threshold))
            .map(|(k, u)| (k, u, threshold))
    }

    /// X = A⁻¹ B for B `[n, m]` row-major.
    fn solve(&self, b: &[f64], m: usize) -> Vec<f64> {
        let n = self.n;
        let mut x = vec![0.0; n * m];
        for (i, &p) in self.perm.iter().enumerate() {
            x[i * m..(i + 1) * m].copy_from_slice(&b[p * m..(p + 1) * m]);
        }
        for i in 0..n {
            for k in 0..i {
                let l = self.lu[i * n + k];
                for j in 0..m {
                    x[i * m + j] -= l * x[k * m + j];
                }
            }
        }
        for i in (0..n).rev() {
            for k in i + 1..n {
                let u = self.lu[i * n + k];
                for j in 0..m {
                    x[i * m + j] -= u * x[k * m + j];
                }
            }
            let d = self.lu[i * n + i];
            for j in 0..m {
                x[i * m + j] /= d;
            }
        }
        x
    }
}

fn refuse_singular(op: &'static str, lu: &Lu, a: &[f64], index: usize) -> Result<()> {
    let scale = a.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    match lu.small_pivot(scale) {
        None => Ok(()),
        Some((k, u, t)) => Err(Error::numerical(
            op,
            format!(
                "matrix {index} of the batch is singular to working precision: pivot {k} is {u:e}, at or below n·ε·max|A| = {t:e}"
            ),
        )),
    }
}

impl<T: Element> Tensor<T> {
    /// X with A X = B for each square A `[.., n, n]` and B `[.., n, m]` with the same
    /// leading axes. A matrix singular to working precision is an error naming the
    /// batch entry and the pivot.
    ///
    /// ```
    /// use tensor::Tensor;
    /// # fn main() -> tensor::Result<()> {
    /// // 3x + y = 9, x + 2y = 8.
    /// let a = Tensor::<f64>::from_vec(vec![3.0, 1.0, 1.0, 2.0], &[2, 2])?;
    /// let b = Tensor::from_vec(vec![9.0, 8.0], &[2, 1])?;
    /// let x = a.solve(&b)?.to_vec();
    /// assert!((x[0] - 2.0).abs() < 1e-14 && (x[1] - 3.0).abs() < 1e-14);
    /// // A singular system is an error, never a silent infinity.
    /// let s = Tensor::<f64>::from_vec(vec![1.0, 2.0, 2.0, 4.0], &[2, 2])?;
    /// assert!(s.solve(&b).unwrap_err().to_string().starts_with("solve"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn solve(&self, b: &Tensor<T>) -> Result<Tensor<T>> {
        let n = square("solve", self)?;
        finite("solve", b)?;
        let (sa, sb) = (self.shape(), b.shape());
        if sb.len() != sa.len() || sb[..sb.len() - 2] != sa[..sa.len() - 2] || sb[sb.len() - 2] != n
        {
            return Err(Error::shape(
                "solve",
                format!(
                    "A {} needs B [.., {n}, m] with the same leading axes, got {}",
                    fmt_shape(sa),
                    fmt_shape(sb)
                ),
            ));
        }
        let m = sb[sb.len() - 1];
        let (a, bv) = (self.contiguous().to_vec(), b.contiguous().to_vec());
        let count: usize = sa[..sa.len() - 2].iter().product();
        let mut out = Vec::with_capacity(count * n * m);
        for i in 0..count {
            let ai: Vec<f64> = a[i * n * n..(i + 1) * n * n]
                .iter()
                .map(|v| v.as_f64())
                .collect();
            let bi: Vec<f64> = bv[i * n * m..(i + 1) * n * m]
                .iter()
                .map(|v| v.as_f64())
                .collect();
            let lu = Lu::factor(&ai, n);
            refuse_singular("solve", &lu, &ai, i)?;
            let x: Vec<T> = lu.solve(&bi, m).into_iter().map(T::from_f64).collect();
            if let Some(j) = x.iter().position(|v| !v.as_f64().is_finite()) {
                return Err(Error::numerical(
                    "solve",
                    format!(
                        "the solution of matrix {i} of the batch overflows {} at entry ({}, {}): A is too close to singular for its scale",
                        T::DTYPE.name(),
                        j / m,
                        j % m
                    ),
                ));
            }
            out.extend(x);
        }
        Tensor::from_vec(out, sb)
    }

    /// A⁻¹ for each square A `[.., n, n]` (errors as [`Tensor::solve`]).
    ///
    /// ```
    /// use tensor::Tensor;
    /// # fn main() -> tensor::Result<()> {
    /// let a = Tensor::<f64>::from_vec(vec![2.0, 1.0, 0.0, 1.0, 3.0, 1.0, 0.0, 1.0, 4.0], &[3, 3])?;
    /// let inv = a.inverse()?;
    /// let err = inv.matmul(&a)?.sub(&Tensor::eye(3)?)?.abs().max_all()?;
    /// assert!(err < 1e-14, "{err}");
    /// // Batched: a [2, 3, 3] stack gives two inverses.
    /// let stack = Tensor::stack(&[&a, &Tensor::eye(3)?], 0)?;
    /// assert_eq!(stack.inverse()?.index_axis(0, 1)?.to_vec(), Tensor::<f64>::eye(3)?.to_vec());
    /// # Ok(())
    /// # }
    /// ```
    pub fn inverse(&self) -> Result<Tensor<T>> {
        let n = square("inverse", self)?;
        let mut shape = self.shape().to_vec();
        shape.truncate(shape.len() - 2);
        shape.extend([n, n]);
        self.solve(&Tensor::eye(n)?.broadcast_to(&shape)?.contiguous())
    }

    /// (sign, log|det A|) for each square A `[.., n, n]`, both of the batch shape;
    /// an exactly singular A gives (0, −∞).
    pub fn slogdet(&self) -> Result<(Tensor<T>, Tensor<T>)> {
        let n = square("slogdet", self)?;
        let a = self.contiguous().to_vec();
        let batch = &self.shape()[..self.ndim() - 2];
        let count: usize = batch.iter().product();
        let (mut signs, mut logs) = (Vec::with_capacity(count), Vec::with_capacity(count));
        for i in 0..count {
            let ai: Vec<f64> = a[i * n * n..(i + 1) * n * n]
                .iter()
                .map(|v| v.as_f64())
                .collect();
            let lu = Lu::factor(&ai, n);
            let (mut sign, mut log) = (lu.sign, 0.0);
            for k in 0..n {
                let u = lu.lu[k * n + k];
                if u == 0.0 {
                    (sign, log) = (0.0, f64::NEG_INFINITY);
                    break;
                }
                sign *= u.signum();
                log += u.abs().ln();
            }
            signs.push(T::from_f64(sign));
            logs.push(T::from_f64(log));
        }
        Ok((
            Tensor::from_vec(signs, batch)?,
            Tensor::from_vec(logs, batch)?,
        ))
    }
}
