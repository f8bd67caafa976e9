//! Householder QR (reduced) and least squares, in f64.

use super::{finite, per_matrix};
use crate::element::Element;
use crate::error::{fmt_shape, Error, Result};
use crate::parallel;
use crate::tensor::Tensor;

/// Dot product with four accumulators (so that it vectorises).
fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut acc = [0.0; 4];
    let (ca, cb) = (a.chunks_exact(4), b.chunks_exact(4));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for k in 0..4 {
            acc[k] += x[k] * y[k];
        }
    }
    let tail: f64 = ra.iter().zip(rb).map(|(x, y)| x * y).sum();
    (acc[0] + acc[2]) + (acc[1] + acc[3]) + tail
}

/// Applies the reflector I − 2vvᵀ/vᵀv to the tails (from `j` on) of the given
/// columns, each a contiguous row of a transposed matrix; in parallel when large.
fn reflect(cols: &mut [f64], len: usize, j: usize, v: &[f64], vnorm2: f64) {
    let apply = |col: &mut [f64]| {
        let tail = &mut col[j..j + v.len()];
        let f = 2.0 * dot(v, tail) / vnorm2;
        for (t, &x) in tail.iter_mut().zip(v) {
            *t -= f * x;
        }
    };
    let work = cols.len() / len.max(1) * v.len();
    parallel::for_each_chunk_if(cols, len * 16, work >= 1 << 18, |_, chunk| {
        chunk.chunks_mut(len).for_each(apply)
    });
}

/// Householder QR of one m×n row-major matrix: Q (m×k, orthonormal columns) and R
/// (k×n, upper triangular) with k = min(m, n). Works on Aᵀ and Qᵀ, whose rows are the
/// columns being reflected, so every inner loop is contiguous.
fn qr_f64(a: &[f64], m: usize, n: usize) -> (Vec<f64>, Vec<f64>) {
    let k = m.min(n);
    // at[c][i] = a[i][c]: column c of A as a contiguous row.
    let mut at = vec![0.0; n * m];
    for i in 0..m {
        for c in 0..n {
            at[c * m + i] = a[i * n + c];
        }
    }
    let mut vs: Vec<Vec<f64>> = Vec::with_capacity(k);
    for j in 0..k {
        // v = x + sign(x₀)‖x‖e₁ for the column x below the diagonal.
        let mut v = at[j * m + j..(j + 1) * m].to_vec();
        let norm = dot(&v, &v).sqrt();
        if norm == 0.0 {
            vs.push(Vec::new());
            continue;
        }
        v[0] += if v[0] >= 0.0 { norm } else { -norm };
        let vnorm2 = dot(&v, &v);
        reflect(&mut at[j * m..], m, j, &v, vnorm2);
        vs.push(v);
    }
    // Qᵀ = H_{k−1} … H₀ applied to the first k rows of the identity, as rows.
    let mut qt = vec![0.0; k * m];
    for i in 0..k {
        qt[i * m + i] = 1.0;
    }
    for j in (0..k).rev() {
        let v = &vs[j];
        if !v.is_empty() {
            reflect(&mut qt, m, j, v, dot(v, v));
        }
    }
    let mut q = vec![0.0; m * k];
    for c in 0..k {
        for i in 0..m {
            q[i * k + c] = qt[c * m + i];
        }
    }
    let mut rk = vec![0.0; k * n];
    for i in 0..k {
        for c in i..n {
            rk[i * n + c] = at[c * m + i];
        }
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
        let parts = per_matrix(self, 2 * m * n * k, |a| {
            let a: Vec<f64> = a.iter().map(|v| v.as_f64()).collect();
            Ok(crate::kernels::simd_scope(|| qr_f64(&a, m, n)))
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
        Ok((Tensor::from_vec(q, &qs)?, Tensor::from_vec(r, &rs)?))
    }

    /// Least squares: the X minimising ‖A X − B‖ for each `[m, n]` A with m ≥ n and
    /// full column rank, through QR (X = R⁻¹ Qᵀ B). A rank-deficient A fails, naming
    /// the negligible diagonal entry of R.
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
