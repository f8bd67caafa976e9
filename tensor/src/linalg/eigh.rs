//! Symmetric eigendecomposition: Householder reduction to tridiagonal form, then
//! the implicit QL algorithm with Wilkinson-like shifts (the EISPACK tred2/tql2
//! pair), in f64. Eigenvalues come out ascending with orthonormal eigenvectors.

use super::{per_matrix, square};
use crate::element::Element;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// Reduces the symmetric matrix in `v` (n×n row-major, lower triangle used) to
/// tridiagonal form: on return `d` holds the diagonal, `e[1..]` the sub-diagonal, and
/// `v` the orthogonal transformation.
fn tridiagonalise(v: &mut [f64], d: &mut [f64], e: &mut [f64], n: usize) {
    let at = |i: usize, j: usize| i * n + j;
    for j in 0..n {
        d[j] = v[at(n - 1, j)];
    }
    for i in (1..n).rev() {
        let mut scale = 0.0;
        let mut h = 0.0;
        for k in 0..i {
            scale += d[k].abs();
        }
        if scale == 0.0 {
            e[i] = d[i - 1];
            for j in 0..i {
                d[j] = v[at(i - 1, j)];
                v[at(i, j)] = 0.0;
                v[at(j, i)] = 0.0;
            }
        } else {
            for k in 0..i {
                d[k] /= scale;
                h += d[k] * d[k];
            }
            let f = d[i - 1];
            let mut g = h.sqrt();
            if f > 0.0 {
                g = -g;
            }
            e[i] = scale * g;
            h -= f * g;
            d[i - 1] = f - g;
            for j in 0..i {
                e[j] = 0.0;
            }
            for j in 0..i {
                let f = d[j];
                v[at(j, i)] = f;
                let mut g = e[j] + v[at(j, j)] * f;
                for k in j + 1..i {
                    g += v[at(k, j)] * d[k];
                    e[k] += v[at(k, j)] * f;
                }
                e[j] = g;
            }
            let mut f = 0.0;
            for j in 0..i {
                e[j] /= h;
                f += e[j] * d[j];
            }
            let hh = f / (h + h);
            for j in 0..i {
                e[j] -= hh * d[j];
            }
            for j in 0..i {
                let (f, g) = (d[j], e[j]);
                for k in j..i {
                    v[at(k, j)] -= f * e[k] + g * d[k];
                }
                d[j] = v[at(i - 1, j)];
                v[at(i, j)] = 0.0;
            }
        }
        d[i] = h;
    }
    // Accumulate the transformations.
    for i in 0..n.saturating_sub(1) {
        v[at(n - 1, i)] = v[at(i, i)];
        v[at(i, i)] = 1.0;
        let h = d[i + 1];
        if h != 0.0 {
            for k in 0..=i {
                d[k] = v[at(k, i + 1)] / h;
            }
            for j in 0..=i {
                let mut g = 0.0;
                for k in 0..=i {
                    g += v[at(k, i + 1)] * v[at(k, j)];
                }
                for k in 0..=i {
                    v[at(k, j)] -= g * d[k];
                }
            }
        }
        for k in 0..=i {
            v[at(k, i + 1)] = 0.0;
        }
    }
    for j in 0..n {
        d[j] = v[at(n - 1, j)];
        v[at(n - 1, j)] = 0.0;
    }
    if n > 0 {
        v[at(n - 1, n - 1)] = 1.0;
    }
    e[0] = 0.0;
}

/// Diagonalises the tridiagonal (d, e) by implicit QL, applying the rotations to the
/// rows of `w` = Vᵀ (rows are contiguous, so each rotation streams through memory).
/// Fails if an eigenvalue does not converge in 60 iterations.
fn ql_implicit(
    d: &mut [f64],
    e: &mut [f64],
    w: &mut [f64],
    n: usize,
) -> std::result::Result<(), usize> {
    for i in 1..n {
        e[i - 1] = e[i];
    }
    if n > 0 {
        e[n - 1] = 0.0;
    }
    let mut f = 0.0;
    let mut tst1: f64 = 0.0;
    let eps = f64::EPSILON;
    for l in 0..n {
        tst1 = tst1.max(d[l].abs() + e[l].abs());
        let mut m = l;
        while m < n && e[m].abs() > eps * tst1 {
            m += 1;
        }
        let m = m.min(n - 1);
        if m > l {
            let mut iter = 0;
            loop {
                iter += 1;
                if iter > 60 {
                    return Err(l);
                }
                let g = d[l];
                let mut p = (d[l + 1] - g) / (2.0 * e[l]);
                let mut r = p.hypot(1.0);
                if p < 0.0 {
                    r = -r;
                }
                d[l] = e[l] / (p + r);
                d[l + 1] = e[l] * (p + r);
                let dl1 = d[l + 1];
                let mut h = g - d[l];
                for di in d.iter_mut().take(n).skip(l + 2) {
                    *di -= h;
                }
                f += h;
                p = d[m];
                let (mut c, mut c2, mut c3) = (1.0, 1.0, 1.0);
                let el1 = e[l + 1];
                let (mut s, mut s2) = (0.0, 0.0);
                for i in (l..m).rev() {
                    c3 = c2;
                    c2 = c;
                    s2 = s;
                    let g = c * e[i];
                    h = c * p;
                    r = p.hypot(e[i]);
                    e[i + 1] = s * r;
                    s = e[i] / r;
                    c = p / r;
                    p = c * d[i] - s * g;
                    d[i + 1] = h + s * (c * g + s * d[i]);
                    let (lo, hi) = w.split_at_mut((i + 1) * n);
                    let (wi, wi1) = (&mut lo[i * n..(i + 1) * n], &mut hi[..n]);
                    for (a, b) in wi.iter_mut().zip(wi1.iter_mut()) {
                        let t = *b;
                        *b = s * *a + c * t;
                        *a = c * *a - s * t;
                    }
                }
                p = -s * s2 * c3 * el1 * e[l] / dl1;
                e[l] = s * p;
                d[l] = c * p;
                if e[l].abs() <= eps * tst1 {
                    break;
                }
            }
        }
        d[l] += f;
        e[l] = 0.0;
    }
    Ok(())
}

/// Eigenvalues (ascending) and eigenvectors (as the rows of the returned Vᵀ) of one
/// symmetric matrix given row-major in f64.
pub(crate) fn eigh_f64(a: &[f64], n: usize) -> std::result::Result<(Vec<f64>, Vec<f64>), usize> {
    if n == 0 {
        return Ok((Vec::new(), Vec::new()));
    }
    let mut v = vec![0.0; n * n];
    // Symmetrise from the lower triangle.
    for i in 0..n {
        for j in 0..=i {
            v[i * n + j] = a[i * n + j];
            v[j * n + i] = a[i * n + j];
        }
    }
    let mut d = vec![0.0; n];
    let mut e = vec![0.0; n];
    tridiagonalise(&mut v, &mut d, &mut e, n);
    // W = Vᵀ, so that rotations act on contiguous rows.
    let mut w = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            w[j * n + i] = v[i * n + j];
        }
    }
    ql_implicit(&mut d, &mut e, &mut w, n)?;
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&i, &j| d[i].total_cmp(&d[j]));
    let values = order.iter().map(|&i| d[i]).collect();
    let mut vt = vec![0.0; n * n];
    for (r, &i) in order.iter().enumerate() {
        vt[r * n..(r + 1) * n].copy_from_slice(&w[i * n..(i + 1) * n]);
    }
    Ok((values, vt))
}

impl<T: Element> Tensor<T> {
    /// Eigenvalues (ascending, shape `[..., n]`) and orthonormal eigenvectors (the
    /// columns of `[..., n, n]`) of each symmetric matrix, reading its lower triangle:
    /// A = V diag(λ) Vᵀ. Computed in f64; accurate to about 1e-14 relative to ‖A‖.
    pub fn eigh(&self) -> Result<(Tensor<T>, Tensor<T>)> {
        let n = square("eigh", self)?;
        let parts = per_matrix(self, 8 * n * n * n, |m| {
            let a: Vec<f64> = m.iter().map(|v| v.as_f64()).collect();
            crate::kernels::simd_scope(|| eigh_f64(&a, n)).map_err(|l| {
                Error::numerical(
                    "eigh",
                    format!("eigenvalue {l} did not converge in 60 QL iterations"),
                )
            })
        })?;
        let batch = &self.shape()[..self.ndim() - 2];
        let mut vshape = batch.to_vec();
        vshape.push(n);
        let mut mshape = batch.to_vec();
        mshape.extend([n, n]);
        let mut values = Vec::with_capacity(parts.len() * n);
        let mut vectors = Vec::with_capacity(parts.len() * n * n);
        for (vals, vt) in parts {
            values.extend(vals.into_iter().map(T::from_f64));
            // Column j of V is row j of Vᵀ.
            for i in 0..n {
                for j in 0..n {
                    vectors.push(T::from_f64(vt[j * n + i]));
                }
            }
        }
        Ok((
            Tensor::from_vec(values, &vshape)?,
            Tensor::from_vec(vectors, &mshape)?,
        ))
    }
}
