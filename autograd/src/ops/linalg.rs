//! Linear algebra with gradients: Cholesky, triangular solve, SPD solve, inverse,
//! log-determinant, the symmetric eigendecomposition, QR and least squares.
//!
//! The symmetric routines read only the lower triangle of A, and their gradients are
//! exactly those of that function: Ā = fold(G) = tril(G + Gᵀ) − diag(G), where G is
//! the gradient with respect to the (symmetric) matrix itself. For a symmetric A built
//! upstream (Φ Φᵀ + λI, say) the chain rule gives the same result as the symmetrised
//! convention of other libraries, and `gradcheck` holds for arbitrary perturbations.

use crate::var::{record, Var};
use tensor::linalg::Triangular;
use tensor::{Element, Result, Tensor};

/// A constant n×n mask with `below`, `diag` and `above` on the three parts.
fn mask<T: Element>(n: usize, below: f64, diag: f64, above: f64) -> Result<Var<T>> {
    let v: Vec<T> = (0..n * n)
        .map(|k| {
            let (i, j) = (k / n, k % n);
            T::from_f64(if i > j {
                below
            } else if i == j {
                diag
            } else {
                above
            })
        })
        .collect();
    Ok(Var::constant(Tensor::from_vec(v, &[n, n])?))
}

fn last(v: &Var<impl Element>) -> usize {
    v.shape()[v.ndim() - 1]
}

impl<T: Element> Var<T> {
    /// tril(G + Gᵀ) − diag(G): the gradient with respect to the lower triangle of a
    /// function that reads only that triangle, given the symmetric-matrix gradient G.
    pub fn fold_lower(&self) -> Result<Var<T>> {
        let n = last(self);
        self.add(&self.t()?)?.mul(&mask(n, 1.0, 0.5, 0.0)?)
    }

    /// The lower Cholesky factor (lower triangle of A read). Gradient:
    /// fold(L⁻ᵀ Φ(Lᵀ L̄) L⁻¹) with Φ = lower triangle with the diagonal halved.
    #[track_caller]
    pub fn cholesky(&self) -> Result<Var<T>> {
        let v = self.value.cholesky()?;
        record("cholesky", &[self], v, |c| {
            let l = c.output;
            let n = last(l);
            let phi = l.t()?.matmul(c.grad)?.mul(&mask(n, 1.0, 0.5, 0.0)?)?;
            let right = Triangular {
                left: false,
                ..Triangular::LOWER
            };
            let y = l.solve_triangular(&phi, right)?;
            let s = l.solve_triangular(&y, Triangular::LOWER.transposed())?;
            Ok(vec![Some(s.add(&s.t()?)?.mul_scalar(0.5)?.fold_lower()?)])
        })
    }

    /// Solves a triangular system with `self` as A (see
    /// [`Tensor::solve_triangular`]); differentiable in A and B.
    #[track_caller]
    pub fn solve_triangular(&self, b: &Var<T>, kind: Triangular) -> Result<Var<T>> {
        if !kind.left {
            let k = Triangular {
                left: true,
                transpose: !kind.transpose,
                ..kind
            };
            return self.solve_triangular(&b.t()?, k)?.t();
        }
        let v = self.value.solve_triangular(&b.value, kind)?;
        record("solve_triangular", &[self, b], v, move |c| {
            let (a, b) = (&c.inputs[0], &c.inputs[1]);
            let x = c.output;
            let bbar = a.solve_triangular(c.grad, kind.transposed())?;
            let abar = if a.requires_grad() {
                let g = if kind.transpose {
                    x.matmul(&bbar.t()?)?.neg()?
                } else {
                    bbar.matmul(&x.t()?)?.neg()?
                };
                let n = last(a);
                let d = if kind.unit_diagonal { 0.0 } else { 1.0 };
                let m = if kind.lower {
                    mask(n, 1.0, d, 0.0)?
                } else {
                    mask(n, 0.0, d, 1.0)?
                };
                Some(g.mul(&m)?.sum_to_shape(a.shape())?)
            } else {
                None
            };
            let bbar = if b.requires_grad() {
                Some(bbar.sum_to_shape(b.shape())?)
            } else {
                None
            };
            Ok(vec![abar, bbar])
        })
    }

    /// Solves A X = B for symmetric positive-definite A = `self` (lower triangle).
    /// Gradients: B̄ = A⁻¹ X̄, Ā = fold(−B̄ Xᵀ).
    #[track_caller]
    pub fn solve_spd(&self, b: &Var<T>) -> Result<Var<T>> {
        let v = self.value.solve_spd(&b.value)?;
        record("solve_spd", &[self, b], v, |c| {
            let (a, b) = (&c.inputs[0], &c.inputs[1]);
            let bbar = a.solve_spd(c.grad)?;
            let abar = if a.requires_grad() {
                let g = bbar.matmul(&c.output.t()?)?.neg()?;
                Some(
                    g.add(&g.t()?)?
                        .mul_scalar(0.5)?
                        .fold_lower()?
                        .sum_to_shape(a.shape())?,
                )
            } else {
                None
            };
            let bbar = if b.requires_grad() {
                Some(bbar.sum_to_shape(b.shape())?)
            } else {
                None
            };
            Ok(vec![abar, bbar])
        })
    }

    /// X with A X = B for square A `[.., n, n]` (`self`) and B `[.., n, m]` (LU with
    /// partial pivoting). Gradients: B̄ = A⁻ᵀ X̄ (a recorded solve, so second order
    /// works), Ā = −B̄ Xᵀ.
    #[track_caller]
    pub fn solve(&self, b: &Var<T>) -> Result<Var<T>> {
        let v = self.value.solve(&b.value)?;
        record("solve", &[self, b], v, |c| {
            let gb = c.inputs[0].t()?.solve(c.grad)?;
            let ga = gb.matmul(&c.output.t()?)?.neg()?;
            Ok(vec![Some(ga), Some(gb)])
        })
    }

    /// A⁻¹ for square A `[.., n, n]`. Gradient: −Yᵀ Ȳ Yᵀ.
    #[track_caller]
    pub fn inverse(&self) -> Result<Var<T>> {
        let v = self.value.inverse()?;
        record("inverse", &[self], v, |c| {
            let yt = c.output.t()?;
            Ok(vec![Some(yt.matmul(c.grad)?.matmul(&yt)?.neg()?)])
        })
    }

    /// log|det A| for square A `[.., n, n]`, with the sign as a constant tensor
    /// (an exactly singular A gives −∞, whose gradient is an error). Gradient:
    /// ȳ A⁻ᵀ (a recorded inverse, so second order works).
    #[track_caller]
    pub fn slogdet(&self) -> Result<(Tensor<T>, Var<T>)> {
        let (sign, log) = self.value.slogdet()?;
        let out = record("slogdet", &[self], log, |c| {
            let inv_t = c.inputs[0].inverse()?.t()?;
            Ok(vec![Some(
                inv_t.mul(&c.grad.unsqueeze(-1)?.unsqueeze(-1)?)?,
            )])
        })?;
        Ok((sign, out))
    }

    /// det A = sign · exp(log|det A|) for square A `[.., n, n]`. Gradient: det · A⁻ᵀ.
    #[track_caller]
    pub fn det(&self) -> Result<Var<T>> {
        let (sign, log) = self.slogdet()?;
        log.exp()?.mul(&Var::constant(sign))
    }

    /// The inverse of a symmetric positive-definite matrix. Gradient: fold(−Y Ȳ Y).
    #[track_caller]
    pub fn inverse_spd(&self) -> Result<Var<T>> {
        let v = self.value.inverse_spd()?;
        record("inverse_spd", &[self], v, |c| {
            let y = c.output;
            let g = y.matmul(c.grad)?.matmul(y)?.neg()?;
            Ok(vec![Some(g.add(&g.t()?)?.mul_scalar(0.5)?.fold_lower()?)])
        })
    }

    /// log det A for symmetric positive-definite A. Gradient: fold(ȳ A⁻¹).
    #[track_caller]
    pub fn logdet_spd(&self) -> Result<Var<T>> {
        let v = self.value.logdet_spd()?;
        record("logdet_spd", &[self], v, |c| {
            let inv = c.inputs[0].inverse_spd()?;
            let g = inv.mul(&c.grad.unsqueeze(-1)?.unsqueeze(-1)?)?;
            Ok(vec![Some(g.fold_lower()?)])
        })
    }

    /// Eigenvalues (ascending) and eigenvectors (columns) of a symmetric matrix
    /// (lower triangle read). Gradient: fold(V (diag λ̄ + F ∘ Vᵀ V̄) Vᵀ), symmetrised,
    /// with F_ij = 1/(λ_j − λ_i). For repeated eigenvalues the eigenvectors are not
    /// unique and their gradient is undefined: F is set to zero for pairs closer than
    /// 1e-10 relative, which keeps the gradients of the eigenvalues, and of any
    /// function invariant to the choice of basis within an eigenspace, exact.
    #[track_caller]
    pub fn eigh(&self) -> Result<(Var<T>, Var<T>)> {
        let (lam, vecs) = self.value.eigh()?;
        let packed = Tensor::cat(&[&lam.unsqueeze(-2)?, &vecs], -2)?;
        let n = lam.shape()[lam.ndim() - 1];
        let out = record("eigh", &[self], packed, move |c| {
            let lam = c.output.narrow(-2, 0, 1)?;
            let v = c.output.narrow(-2, 1, n)?;
            let lbar = c.grad.narrow(-2, 0, 1)?;
            let vbar = c.grad.narrow(-2, 1, n)?;
            // diff[i][j] = λ_j − λ_i
            let diff = lam.sub(&lam.t()?)?;
            let lv = lam.value().to_vec();
            let scale = lv.iter().fold(1.0f64, |m, x| m.max(x.as_f64().abs()));
            let d = diff.value().to_vec();
            let keep: Vec<T> = d
                .iter()
                .enumerate()
                .map(|(k, &x)| {
                    let (i, j) = ((k / n) % n, k % n);
                    if i != j && x.as_f64().abs() > 1e-10 * scale {
                        T::one()
                    } else {
                        T::zero()
                    }
                })
                .collect();
            let keep = Var::constant(Tensor::from_vec(keep, diff.shape())?);
            let eye = Var::constant(Tensor::eye(n)?);
            let f = diff.add(&eye)?.recip()?.mul(&keep)?;
            let inner = v.t()?.matmul(&vbar)?.mul(&f)?.add(&eye.mul(&lbar)?)?;
            let g = v.matmul(&inner)?.matmul(&v.t()?)?;
            Ok(vec![Some(g.add(&g.t()?)?.mul_scalar(0.5)?.fold_lower()?)])
        })?;
        Ok((out.narrow(-2, 0, 1)?.squeeze(-2)?, out.narrow(-2, 1, n)?))
    }

    /// Reduced QR of each tall or square `[m, n]` matrix (m ≥ n): Q `[m, n]` with
    /// orthonormal columns and R `[n, n]` upper triangular with a non-negative
    /// diagonal — the unique factorization of a full-rank A, so the derivative
    /// exists; a rank-deficient A is an error naming the entry of R. Gradient
    /// (Walter & Lehmann; Seeger et al.): with M = R R̄ᵀ − Q̄ᵀ Q and copyltu(M) the
    /// symmetric matrix that copies M's lower triangle upwards,
    /// Ā = (Q̄ + Q copyltu(M)) R⁻ᵀ. Written with differentiable ops, so second
    /// order follows. Wide matrices (m < n) are refused: R is then not square and
    /// this rule does not apply.
    #[track_caller]
    pub fn qr(&self) -> Result<(Var<T>, Var<T>)> {
        let s = self.shape();
        if s.len() < 2 || s[s.len() - 2] < s[s.len() - 1] {
            return Err(tensor::Error::shape(
                "Var::qr",
                format!("the differentiable QR needs [.., m, n] matrices with m ≥ n, got {s:?}"),
            ));
        }
        let (m, n) = (s[s.len() - 2], s[s.len() - 1]);
        let (q, r) = self.value.qr()?;
        r.check_full_rank("Var::qr", m)?;
        let packed = Tensor::cat(&[&q, &r], -2)?;
        let out = record("qr", &[self], packed, move |c| {
            let q = c.output.narrow(-2, 0, m)?;
            let r = c.output.narrow(-2, m, n)?;
            let qbar = c.grad.narrow(-2, 0, m)?;
            let rbar = c.grad.narrow(-2, m, n)?;
            let big_m = r.matmul(&rbar.t()?)?.sub(&qbar.t()?.matmul(&q)?)?;
            let lower = big_m.mul(&mask(n, 1.0, 1.0, 0.0)?)?;
            let strictly = big_m.mul(&mask(n, 1.0, 0.0, 0.0)?)?;
            let copyltu = lower.add(&strictly.t()?)?;
            let b = qbar.add(&q.matmul(&copyltu)?)?;
            // X Rᵀ = B.
            let right_t = Triangular {
                left: false,
                ..Triangular::UPPER.transposed()
            };
            Ok(vec![Some(r.solve_triangular(&b, right_t)?)])
        })?;
        Ok((out.narrow(-2, 0, m)?, out.narrow(-2, m, n)?))
    }

    /// Least squares: the X minimising ‖A X − B‖ for each `[m, n]` A (`self`) with
    /// m ≥ n and full column rank, X = R⁻¹ Qᵀ B through [`Var::qr`]; differentiable
    /// in A and B to any order. A rank-deficient A is an error naming the entry of R.
    #[track_caller]
    pub fn lstsq(&self, b: &Var<T>) -> Result<Var<T>> {
        let (q, r) = self.qr()?;
        r.solve_triangular(&q.t()?.matmul(b)?, Triangular::UPPER)
    }
}
