//! Symmetric eigendecomposition in f64, in three phases:
//!
//! 1. Householder reduction to tridiagonal form, A = Q T Qᵀ, one reflector a step
//!    (LAPACK's dsytd2, on the upper triangle). Each step's rank-2 update of the
//!    trailing block is fused with the next step's symmetric matrix-vector product,
//!    so the trailing triangle is streamed once per step; each row of it is one call
//!    of the vector kernel `kernels::rank2_row_update`. This phase runs on one
//!    thread: splitting its rows moved them between the cores' caches at every step
//!    and ran slower on two threads than on one.
//! 2. The implicit QL algorithm on T (EISPACK's tql2, Wilkinson-like shifts), which
//!    only records its plane rotations; they are then applied to the identity in
//!    column panels, the panels in parallel (`kernels::rotate_rows`, which keeps the
//!    row that consecutive rotations of a sweep share in registers), giving the
//!    eigenvectors Z of T as rows.
//! 3. The back-transformation Vᵀ = Zᵀ Qᵀ, the reflectors grouped into compact-WY
//!    blocks applied with GEMMs.
//!
//! Eigenvalues come out ascending with orthonormal eigenvectors. Every phase computes
//! each entry with the same operations whatever the split, so results do not depend
//! on the thread count.

use super::reflector::{dot, make_reflector, Block};
use super::{per_matrix, square_lower};
use crate::element::Element;
use crate::error::{Error, Result};
use crate::kernels::PlaneRotation as Rotation;
use crate::parallel;
use crate::tensor::Tensor;

/// Reflectors per compact-WY block of the back-transformation.
const BLOCK: usize = 64;
/// Columns per panel when the rotations are applied (a 512-row panel is 128 KB;
/// wider and narrower panels were slower).
const PANEL: usize = 32;
/// Tile edge of the transposing copies (two 32×32 tiles of f64 fit in L1).
const TILE: usize = 32;

/// The reduction A = Q T Qᵀ of the symmetric n×n row-major matrix whose upper
/// triangle is `s` (overwritten; the strict lower triangle is neither read nor
/// written): T's diagonal, its sub-diagonal (`e[k]` = T[k+1][k], `e[n−1]` = 0), and
/// Q = H₀ ⋯ H_{n−2} as compact-WY blocks of [`BLOCK`] reflectors (block b acts on
/// indices b·BLOCK + 1 onwards).
fn tridiagonalise(s: &mut [f64], n: usize) -> (Vec<f64>, Vec<f64>, Vec<Block>) {
    let (mut d, mut e) = (vec![0.0; n], vec![0.0; n]);
    let mut taus = vec![0.0; n];
    if n == 0 {
        return (d, e, Vec::new());
    }
    // Reflector k from row k's tail (stored back there); returns τ.
    let reflect_row = |s: &mut [f64], k: usize, d: &mut [f64], e: &mut [f64], taus: &mut [f64]| {
        d[k] = s[k * n + k];
        if k + 1 < n {
            let (beta, tau) = make_reflector(&mut s[k * n + k + 1..(k + 1) * n]);
            e[k] = beta;
            taus[k] = tau;
        }
        taus[k]
    };
    let tau = reflect_row(s, 0, &mut d, &mut e, &mut taus);
    let v = s[1..n].to_vec();
    let zeros = vec![0.0; n];
    // p = τ S v for the trailing block S = s[1.., 1..] (a pass with a zero update).
    let mut p = update_and_multiply(s, n, 1, (&zeros, &zeros), &v, tau);
    for k in 0..n.saturating_sub(1) {
        let m = n - k - 1;
        let v = s[k * n + k + 1..(k + 1) * n].to_vec();
        // w = p − (τ/2)(pᵀv) v; S −= v wᵀ + w vᵀ, row k+1 first: it holds the next
        // reflector's column.
        let half = 0.5 * taus[k] * dot(&p, &v);
        let w: Vec<f64> = p.iter().zip(&v).map(|(pi, vi)| pi - half * vi).collect();
        let first = &mut s[(k + 1) * n + k + 1..(k + 2) * n];
        for c in 0..m {
            first[c] -= v[0] * w[c] + w[0] * v[c];
        }
        let tau = reflect_row(s, k + 1, &mut d, &mut e, &mut taus);
        if m == 1 {
            break;
        }
        let next = s[(k + 1) * n + k + 2..(k + 2) * n].to_vec();
        p = update_and_multiply(s, n, k + 2, (&v[1..], &w[1..]), &next, tau);
    }
    let mut blocks = Vec::new();
    for k0 in (0..n - 1).step_by(BLOCK) {
        let count = BLOCK.min(n - 1 - k0);
        let len = n - k0 - 1;
        let mut vt = vec![0.0; count * len];
        for r in 0..count {
            let k = k0 + r;
            vt[r * len + r..(r + 1) * len].copy_from_slice(&s[k * n + k + 1..(k + 1) * n]);
        }
        blocks.push(Block::new(vt, &taus[k0..k0 + count], len));
    }
    (d, e, blocks)
}

/// One pass over the trailing block S = s[j0.., j0..] (its upper triangle): applies
/// the rank-2 update S −= v wᵀ + w vᵀ (v, w given on S's indices) and returns
/// τ S z for the updated S, reading each row once.
fn update_and_multiply(
    s: &mut [f64],
    n: usize,
    j0: usize,
    (v, w): (&[f64], &[f64]),
    z: &[f64],
    tau: f64,
) -> Vec<f64> {
    let mut p = vec![0.0; n - j0];
    for r in 0..n - j0 {
        let i = j0 + r;
        let row = &mut s[i * n + i..(i + 1) * n];
        let (vr, wr) = (v[r], w[r]);
        // The diagonal, then the row's tail: S[i][j], and by symmetry S[j][i].
        row[0] -= vr * wr + wr * vr;
        let (p_head, p_tail) = p.split_at_mut(r + 1);
        let along = crate::kernels::rank2_row_update(
            &mut row[1..],
            (vr, &w[r + 1..]),
            (wr, &v[r + 1..]),
            &z[r + 1..],
            (z[r], p_tail),
        );
        p_head[r] += row[0] * z[r] + along;
    }
    p.iter_mut().for_each(|x| *x *= tau);
    p
}

/// Rotations recorded before they are applied (24 MB of them): the memory stays
/// bounded whatever n, and each batch is one parallel pass over the panels. A
/// 512×512 matrix needs about 240,000 rotations, so one pass (smaller batches, so
/// more passes, were slower).
const BATCH: usize = 1 << 20;

/// Diagonalises the tridiagonal (d, e) by implicit QL (`e[i]` = T[i+1][i]), leaving
/// the eigenvalues in `d` and handing `apply` the rotations that take the identity
/// to the eigenvectors (as rows), in order, in batches of `batch` (see [`BATCH`]).
/// Fails with the index of an eigenvalue that does not converge in 60 iterations.
fn ql_implicit(
    d: &mut [f64],
    e: &mut [f64],
    batch: usize,
    apply: &mut impl FnMut(&[Rotation]),
) -> std::result::Result<(), usize> {
    let n = d.len();
    let mut rotations = Vec::with_capacity(batch.min(n * n));
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
                for di in d.iter_mut().skip(l + 2) {
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
                    rotations.push(Rotation { i, c, s });
                    if rotations.len() == batch {
                        apply(&rotations);
                        rotations.clear();
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
    apply(&rotations);
    Ok(())
}

/// The product of plane rotations applied to the identity's rows, kept in column
/// panels of [`PANEL`] (panel c0 is n rows × its width, from n·c0): a rotation then
/// touches two short contiguous rows per panel, and the panels are independent.
struct Panels {
    data: Vec<f64>,
    n: usize,
}

impl Panels {
    /// The n×n identity.
    fn identity(n: usize) -> Panels {
        let mut data = vec![0.0; n * n];
        for c0 in (0..n).step_by(PANEL) {
            let w = PANEL.min(n - c0);
            for j in 0..w {
                data[n * c0 + (c0 + j) * w + j] = 1.0;
            }
        }
        Panels { data, n }
    }

    /// Applies the rotations in order, the panels in parallel.
    fn rotate(&mut self, rotations: &[Rotation]) {
        let n = self.n;
        let parallel = rotations.len() * n >= 1 << 18;
        parallel::for_each_chunk_if(&mut self.data, n * PANEL, parallel, |start, panel| {
            let w = PANEL.min(n - start / n);
            crate::kernels::rotate_rows(panel, w, rotations);
        });
    }

    /// The matrix, row-major.
    fn into_rows(self) -> Vec<f64> {
        let n = self.n;
        let mut out = vec![0.0; n * n];
        for c0 in (0..n).step_by(PANEL) {
            let w = PANEL.min(n - c0);
            for (i, row) in self.data[n * c0..n * c0 + n * w].chunks(w).enumerate() {
                out[i * n + c0..i * n + c0 + w].copy_from_slice(row);
            }
        }
        out
    }
}

/// 2^k for any k with a finite result, as a product of two factors (2^±1074 alone
/// is not representable).
fn two_to(k: i32) -> (f64, f64) {
    (2f64.powi(k / 2), 2f64.powi(k - k / 2))
}

/// Eigenvalues (ascending) and eigenvectors (the columns of the returned row-major
/// V) of one symmetric matrix given row-major in f64 (lower triangle read).
pub(crate) fn eigh_f64(a: &[f64], n: usize) -> std::result::Result<(Vec<f64>, Vec<f64>), usize> {
    if n == 0 {
        return Ok((Vec::new(), Vec::new()));
    }
    // The lower triangle moved to the upper, scaled by a power of two (exactly) when the
    // entries are so large or small that squares would overflow or underflow.
    let big = (0..n)
        .flat_map(|i| a[i * n..=i * n + i].iter())
        .fold(0.0f64, |m, x| m.max(x.abs()));
    let exponent = if big != 0.0 && !(2f64.powi(-500)..2f64.powi(500)).contains(&big) {
        big.log2().floor() as i32
    } else {
        0
    };
    let (s1, s2) = two_to(-exponent);
    let mut s = vec![0.0; n * n];
    for i0 in (0..n).step_by(TILE) {
        for j0 in (0..=i0).step_by(TILE) {
            for i in i0..(i0 + TILE).min(n) {
                for j in j0..(j0 + TILE).min(i + 1) {
                    s[j * n + i] = a[i * n + j] * s1 * s2;
                }
            }
        }
    }
    let (mut d, mut e, blocks) = tridiagonalise(&mut s, n);
    let mut panels = Panels::identity(n);
    ql_implicit(&mut d, &mut e, BATCH, &mut |rotations| {
        panels.rotate(rotations)
    })?;
    let mut w = panels.into_rows();
    // Vᵀ = Zᵀ Qᵀ = Zᵀ P_lastᵀ ⋯ P₀ᵀ.
    for (b, block) in blocks.iter().enumerate().rev() {
        block.apply_transposed_right(&mut w[b * BLOCK + 1..], n, n);
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&i, &j| d[i].total_cmp(&d[j]));
    let (u1, u2) = two_to(exponent);
    let values = order.iter().map(|&i| d[i] * u1 * u2).collect();
    // V[i][r] = W[order[r]][i], tile by tile.
    let mut v = vec![0.0; n * n];
    for r0 in (0..n).step_by(TILE) {
        for i0 in (0..n).step_by(TILE) {
            for r in r0..(r0 + TILE).min(n) {
                let row = &w[order[r] * n..(order[r] + 1) * n];
                for i in i0..(i0 + TILE).min(n) {
                    v[i * n + r] = row[i];
                }
            }
        }
    }
    Ok((values, v))
}

impl<T: Element> Tensor<T> {
    /// Eigenvalues (ascending, shape `[..., n]`) and orthonormal eigenvectors (the
    /// columns of `[..., n, n]`) of each symmetric matrix, reading its lower triangle:
    /// A = V diag(λ) Vᵀ. Computed in f64; accurate to about 1e-14 relative to ‖A‖.
    ///
    /// ```
    /// use tensor::Tensor;
    /// # fn main() -> tensor::Result<()> {
    /// let a = Tensor::<f64>::from_vec(vec![2.0, 1.0, 1.0, 2.0], &[2, 2])?;
    /// let (values, v) = a.eigh()?;
    /// let l = values.to_vec();
    /// assert!((l[0] - 1.0).abs() < 1e-14 && (l[1] - 3.0).abs() < 1e-14); // ascending
    /// // A = V diag(λ) Vᵀ, and the eigenvectors are orthonormal.
    /// let rebuilt = v.mul(&values.reshape(&[1, 2])?)?.matmul(&v.t()?)?;
    /// assert!(rebuilt.sub(&a)?.abs().max_all()? < 1e-14);
    /// assert!(v.t()?.matmul(&v)?.sub(&Tensor::eye(2)?)?.abs().max_all()? < 1e-14);
    /// # Ok(())
    /// # }
    /// ```
    pub fn eigh(&self) -> Result<(Tensor<T>, Tensor<T>)> {
        let n = square_lower("eigh", self)?;
        let single = self.numel() == n * n;
        let parts = per_matrix(self, 8 * n * n * n, |m| {
            let a: Vec<f64> = m.iter().map(|v| v.as_f64()).collect();
            let eigh = || crate::kernels::simd_scope(|| eigh_f64(&a, n));
            super::in_team_if(single, n, eigh).map_err(|l| {
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
        for (vals, v) in parts {
            values.extend(vals.into_iter().map(T::from_f64));
            vectors.extend(v.into_iter().map(T::from_f64));
        }
        super::finite_result("eigh", "an eigenvalue", &values)?;
        super::finite_result("eigh", "an eigenvector", &vectors)?;
        Ok((
            Tensor::from_vec(values, &vshape)?,
            Tensor::from_vec(vectors, &mshape)?,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotations_applied_in_small_batches_give_the_same_bits() {
        let n = 70;
        let mut rng = crate::Rng::new(6);
        let d0: Vec<f64> = (0..n).map(|_| rng.uniform() - 0.5).collect();
        let mut e0: Vec<f64> = (0..n).map(|_| rng.uniform() - 0.5).collect();
        e0[n - 1] = 0.0;
        let run = |batch: usize| {
            let (mut d, mut e) = (d0.clone(), e0.clone());
            let mut panels = Panels::identity(n);
            let mut calls = 0;
            ql_implicit(&mut d, &mut e, batch, &mut |r| {
                calls += 1;
                panels.rotate(r)
            })
            .unwrap();
            (d, panels.into_rows(), calls)
        };
        let (d_one, w_one, one) = run(BATCH);
        let (d_many, w_many, many) = run(7);
        assert_eq!(one, 1);
        assert!(many > 100, "{many} batches");
        assert_eq!(d_one, d_many);
        assert!(w_one
            .iter()
            .zip(&w_many)
            .all(|(a, b)| a.to_bits() == b.to_bits()));
        // The rows are orthonormal eigenvectors of T: W T Wᵀ = diag(d).
        for i in 0..n {
            for j in 0..n {
                let wi = &w_one[i * n..(i + 1) * n];
                let wj = &w_one[j * n..(j + 1) * n];
                let twj: Vec<f64> = (0..n)
                    .map(|k| {
                        let mut t = d0[k] * wj[k];
                        if k > 0 {
                            t += e0[k - 1] * wj[k - 1];
                        }
                        if k + 1 < n {
                            t += e0[k] * wj[k + 1];
                        }
                        t
                    })
                    .collect();
                let want = if i == j { d_one[i] } else { 0.0 };
                assert!((dot(wi, &twj) - want).abs() < 1e-13, "({i}, {j})");
            }
        }
    }

    #[test]
    fn the_reduction_is_an_orthogonal_similarity_to_a_tridiagonal() {
        let n = 9;
        let mut rng = crate::Rng::new(5);
        let mut a = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..=i {
                let x = rng.uniform() - 0.5;
                a[i * n + j] = x;
                a[j * n + i] = x;
            }
        }
        let mut s = a.clone();
        let (d, e, blocks) = tridiagonalise(&mut s, n);
        // Q = P₀ P₁ ⋯ as the product applied to the identity.
        let mut q = vec![0.0; n * n];
        (0..n).for_each(|i| q[i * n + i] = 1.0);
        for (b, block) in blocks.iter().enumerate().rev() {
            let c0 = b * BLOCK + 1;
            block.apply_plain_left(&mut q[c0 * n..], n, n);
        }
        // T = Qᵀ A Q.
        let mut t = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                t[i * n + j] = (0..n)
                    .flat_map(|k| (0..n).map(move |l| (k, l)))
                    .map(|(k, l)| q[k * n + i] * a[k * n + l] * q[l * n + j])
                    .sum();
            }
        }
        for i in 0..n {
            for j in 0..n {
                let want = if i == j {
                    d[i]
                } else if i == j + 1 {
                    e[j]
                } else if j == i + 1 {
                    e[i]
                } else {
                    0.0
                };
                assert!(
                    (t[i * n + j] - want).abs() < 1e-13,
                    "T[{i}][{j}] = {} not {want}",
                    t[i * n + j]
                );
            }
        }
    }
}
