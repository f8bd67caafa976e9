//! Blocked Householder QR (reduced; compact-WY panels) and least squares, in f64.

use super::reflector::{dot, make_reflector, Block};
use super::{finite, per_matrix};
use crate::element::Element;
use crate::error::{fmt_shape, Error, Result};
use crate::tensor::Tensor;

/// Columns per panel: each panel is factored one reflector at a time, then applied
/// to everything on its right as one compact-WY block (three GEMMs).
const PANEL: usize = 32;

/// Factors the panel of columns `c0..c0 + width` of the m×n row-major `a` from row
/// `c0` down, one reflector at a time: leaves R's rows `c0..c0 + width` (their panel
/// part) in `a` and returns the panel's reflector block.
fn factor_panel(a: &mut [f64], m: usize, n: usize, c0: usize, width: usize) -> Block {
    let len = m - c0;
    // pt[q] = column c0 + q from row c0 down, contiguous.
    let mut pt = vec![0.0; width * len];
    for i in 0..len {
        for q in 0..width {
            pt[q * len + i] = a[(c0 + i) * n + c0 + q];
        }
    }
    let mut taus = vec![0.0; width];
    let mut betas = vec![0.0; width];
    for r in 0..width {
        let (done, rest) = pt.split_at_mut((r + 1) * len);
        let v = &mut done[r * len + r..];
        (betas[r], taus[r]) = make_reflector(v);
        let v = &*v;
        for col in rest.chunks_mut(len) {
            let tail = &mut col[r..];
            let f = taus[r] * dot(v, tail);
            tail.iter_mut().zip(v).for_each(|(t, &x)| *t -= f * x);
        }
    }
    for r in 0..width {
        a[(c0 + r) * n + c0 + r] = betas[r];
        for q in r + 1..width {
            a[(c0 + r) * n + c0 + q] = pt[q * len + r];
        }
        pt[r * len..r * len + r].fill(0.0);
    }
    Block::new(pt, &taus, len)
}

/// Householder QR of one m×n row-major matrix: Q (m×k, orthonormal columns) and R
/// (k×n, upper triangular) with k = min(m, n). Blocked: panels of [`PANEL`] columns
/// are factored, each applied to the columns on its right as one block, and Q is
/// accumulated block by block from the last.
fn qr_f64(a: &[f64], m: usize, n: usize) -> (Vec<f64>, Vec<f64>) {
    let k = m.min(n);
    let mut a = a.to_vec();
    let mut blocks = Vec::with_capacity(k.div_ceil(PANEL));
    for c0 in (0..k).step_by(PANEL) {
        let width = PANEL.min(k - c0);
        let block = factor_panel(&mut a, m, n, c0, width);
        let right = c0 + width;
        block.apply_transposed_left(&mut a[c0 * n + right..], n, n - right);
        blocks.push(block);
    }
    // Q = P₀ P₁ ⋯ applied to the first k columns of the identity; the block at c0
    // only touches rows and columns from c0 on.
    let mut q = vec![0.0; m * k];
    for i in 0..k {
        q[i * k + i] = 1.0;
    }
    for (b, block) in blocks.iter().enumerate().rev() {
        let c0 = b * PANEL;
        block.apply_plain_left(&mut q[c0 * k + c0..], k, k - c0);
    }
    let mut rk = vec![0.0; k * n];
    for i in 0..k {
        rk[i * n + i..(i + 1) * n].copy_from_slice(&a[i * n + i..(i + 1) * n]);
    }
    // R's diagonal made non-negative (row j of R and column j of Q flipped
    // together): for a full-rank A this is the unique factorization, the one whose
    // derivative exists.
    for j in 0..k {
        if rk[j * n + j] < 0.0 {
            rk[j * n + j..(j + 1) * n].iter_mut().for_each(|v| *v = -*v);
            for i in 0..m {
                q[i * k + j] = -q[i * k + j];
            }
        }
    }
    (q, rk)
}

impl<T: Element> Tensor<T> {
    /// Reduced QR of each `[m, n]` matrix: Q `[m, k]` with orthonormal columns and R
    /// `[k, n]` upper triangular with a non-negative diagonal, k = min(m, n), A = Q R
    /// (for A of full rank k, the unique such factorization). Computed in f64.
    ///
    /// ```
    /// use tensor::Tensor;
    /// # fn main() -> tensor::Result<()> {
    /// let a = Tensor::<f64>::from_vec(vec![1.0, 2.0, 3.0, 4.0, 5.0, 7.0], &[3, 2])?;
    /// let (q, r) = a.qr()?;
    /// assert_eq!((q.shape(), r.shape()), (&[3, 2][..], &[2, 2][..]));
    /// assert!(q.matmul(&r)?.sub(&a)?.abs().max_all()? < 1e-14); // A = QR
    /// assert!(q.t()?.matmul(&q)?.sub(&Tensor::eye(2)?)?.abs().max_all()? < 1e-14); // QᵀQ = I
    /// assert_eq!(r.get(&[1, 0])?, 0.0); // R is upper triangular
    /// assert!(r.get(&[0, 0])? > 0.0 && r.get(&[1, 1])? > 0.0);
    /// # Ok(())
    /// # }
    /// ```
    pub fn qr(&self) -> Result<(Tensor<T>, Tensor<T>)> {
        let s = self.shape();
        if s.len() < 2 {
            return Err(Error::shape(
                "qr",
                format!("needs matrices, got {}", fmt_shape(s)),
            ));
        }
        finite("qr", self)?;
        let (m, n) = (s[s.len() - 2], s[s.len() - 1]);
        let k = m.min(n);
        let single = self.numel() == m * n;
        let parts = per_matrix(self, 2 * m * n * k, |a| {
            let a: Vec<f64> = a.iter().map(|v| v.as_f64()).collect();
            let qr = || crate::kernels::simd_scope(|| qr_f64(&a, m, n));
            Ok(super::in_team_if(single, k, qr))
        })?;
        let batch = &s[..s.len() - 2];
        let (mut qs, mut rs) = (batch.to_vec(), batch.to_vec());
        qs.extend([m, k]);
        rs.extend([k, n]);
        let q: Vec<T> = parts
            .iter()
            .flat_map(|(q, _)| q.iter().map(|&v| T::from_f64(v)))
            .collect();
        let r: Vec<T> = parts
            .iter()
            .flat_map(|(_, r)| r.iter().map(|&v| T::from_f64(v)))
            .collect();
        super::finite_result("qr", "Q", &q)?;
        super::finite_result("qr", "R", &r)?;
        Ok((Tensor::from_vec(q, &qs)?, Tensor::from_vec(r, &rs)?))
    }

    /// Least squares: the X minimising ‖A X − B‖ for each `[m, n]` A with m ≥ n and
    /// full column rank, through QR (X = R⁻¹ Qᵀ B). A rank-deficient A fails, naming
    /// the negligible diagonal entry of R.
    ///
    /// ```
    /// use tensor::Tensor;
    /// # fn main() -> tensor::Result<()> {
    /// // Fit y = c₀ + c₁·t to four points on the line y = 1 + 2t.
    /// let a = Tensor::<f64>::from_vec(vec![1.0, 0.0, 1.0, 1.0, 1.0, 2.0, 1.0, 3.0], &[4, 2])?;
    /// let y = Tensor::from_vec(vec![1.0, 3.0, 5.0, 7.0], &[4, 1])?;
    /// let c = a.lstsq(&y)?.to_vec();
    /// assert!((c[0] - 1.0).abs() < 1e-13 && (c[1] - 2.0).abs() < 1e-13);
    /// // Two identical columns: rank-deficient, refused with the op's name.
    /// let rank1 = Tensor::<f64>::ones(&[4, 2])?;
    /// assert!(rank1.lstsq(&y).unwrap_err().to_string().starts_with("lstsq"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn lstsq(&self, b: &Tensor<T>) -> Result<Tensor<T>> {
        let s = self.shape();
        if s.len() < 2 || s[s.len() - 2] < s[s.len() - 1] {
            return Err(Error::shape(
                "lstsq",
                format!("needs [m, n] matrices with m ≥ n, got {}", fmt_shape(s)),
            ));
        }
        let (q, r) = self.qr()?;
        r.check_full_rank("lstsq", s[s.len() - 2])?;
        let qtb = q.t()?.matmul(b)?;
        r.solve_triangular(&qtb, super::Triangular::UPPER)
    }

    /// Checks that each `[n, n]` R of a QR of `[m, n]` matrices (`rows` = m) has
    /// no negligible diagonal entry, |R_ii| ≤ max_j |R_jj| · max(m, n) · ε, that is,
    /// that A has full column rank to working precision: least squares and the QR
    /// derivative need it. The error names the batch entry and the diagonal entry.
    pub fn check_full_rank(&self, op: &'static str, rows: usize) -> Result<()> {
        let s = self.shape();
        let n = s.last().copied().unwrap_or(0);
        if s.len() < 2 || s[s.len() - 2] != n {
            return Err(Error::shape(
                op,
                format!("R must be [.., n, n], got {}", fmt_shape(s)),
            ));
        }
        if n == 0 {
            return Ok(());
        }
        let r = self.contiguous().to_vec();
        for (b, mat) in r.chunks(n * n).enumerate() {
            let diag: Vec<f64> = (0..n).map(|i| mat[i * n + i].as_f64().abs()).collect();
            let big = diag.iter().cloned().fold(0.0, f64::max);
            let tol = big * (rows.max(n) as f64) * T::EPS;
            if let Some(i) = diag.iter().position(|&d| d <= tol) {
                return Err(Error::numerical(
                    op,
                    format!(
                        "matrix {b} is rank-deficient: |R[{i}][{i}]| = {:e} is below {tol:e}",
                        diag[i]
                    ),
                ));
            }
        }
        Ok(())
    }
}
