//! Householder reflectors H = I − τ v vᵀ (v₀ = 1) and their blocked application in
//! compact WY form, H₀ H₁ ⋯ H_{b−1} = I − V T Vᵀ with T upper triangular (LAPACK's
//! dlarfg/dlarft convention): the shared machinery of the blocked QR and of the
//! back-transformation in `eigh`. Applying a block of b reflectors is three GEMMs
//! instead of b passes over the matrix, so the bulk of both runs at GEMM speed.

use super::gemm_rows;
use crate::kernels::MatRef;

/// Dot product with four accumulators (so that it vectorises).
pub(super) fn dot(a: &[f64], b: &[f64]) -> f64 {
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

/// The Euclidean norm of `x`: √(x·x), or, where the squares overflow or fall below
/// the normal range, the norm of x scaled by its largest magnitude, scaled back
/// (LAPACK's dnrm2 guards the same way), so that a column of values near the
/// type's largest or smallest is still reduced. The common case keeps the plain
/// dot product's bits.
pub(super) fn norm(x: &[f64]) -> f64 {
    let squares = dot(x, x);
    if squares.is_finite() && squares >= f64::MIN_POSITIVE {
        return squares.sqrt();
    }
    let largest = x.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    if largest == 0.0 || !largest.is_finite() {
        return squares.sqrt();
    }
    let scaled: Vec<f64> = x.iter().map(|v| v / largest).collect();
    largest * dot(&scaled, &scaled).sqrt()
}

/// Turns `x` into the vector v of the reflector H = I − τ v vᵀ with H x = β e₁ and
/// returns (β, τ); on return x = v (x[0] = 1). When x is already a multiple of e₁,
/// τ = 0 and H is the identity.
pub(super) fn make_reflector(x: &mut [f64]) -> (f64, f64) {
    let Some((&mut alpha, tail)) = x.split_first_mut() else {
        return (0.0, 0.0);
    };
    let tail_norm = norm(tail);
    x[0] = 1.0;
    if tail_norm == 0.0 {
        return (alpha, 0.0);
    }
    let beta = -alpha.hypot(tail_norm).copysign(alpha);
    let pivot = alpha - beta;
    let scale = 1.0 / pivot;
    if scale.abs() >= f64::MIN_POSITIVE {
        x[1..].iter_mut().for_each(|v| *v *= scale);
    } else {
        // 1/pivot would be subnormal and lose bits: divide instead.
        x[1..].iter_mut().for_each(|v| *v /= pivot);
    }
    (beta, (beta - alpha) / beta)
}

/// A block of `count` reflectors acting on `len` consecutive indices, in compact WY
/// form: H₀ ⋯ H_{count−1} = I − V T Vᵀ.
pub(super) struct Block {
    /// Vᵀ, `count × len` row-major: row r is v_r, zero before index r, 1 at r.
    vt: Vec<f64>,
    /// T, `count × count` row-major upper triangular.
    t: Vec<f64>,
    count: usize,
    len: usize,
}

impl Block {
    /// The block of the reflectors whose vectors are the rows of `vt` (`count × len`,
    /// row r zero before r and 1 at r) and whose scalars are `taus`.
    pub(super) fn new(vt: Vec<f64>, taus: &[f64], len: usize) -> Block {
        let count = taus.len();
        debug_assert_eq!(vt.len(), count * len);
        // T[i][i] = τᵢ; T[..i][i] = −τᵢ T[..i][..i] (V[.., ..i]ᵀ vᵢ).
        let mut t = vec![0.0; count * count];
        let mut w = vec![0.0; count];
        for i in 0..count {
            let vi = &vt[i * len + i..(i + 1) * len];
            for (j, wj) in w.iter_mut().enumerate().take(i) {
                *wj = -taus[i] * dot(&vt[j * len + i..(j + 1) * len], vi);
            }
            for j in 0..i {
                let row = &t[j * count..(j + 1) * count];
                let s: f64 = (j..i).map(|q| row[q] * w[q]).sum();
                t[j * count + i] = s;
            }
            t[i * count + i] = taus[i];
        }
        Block { vt, t, count, len }
    }

    /// V as a `len × count` view.
    fn v(&self) -> MatRef<'_, f64> {
        MatRef {
            data: &self.vt,
            offset: 0,
            rows: self.len,
            cols: self.count,
            row_stride: 1,
            col_stride: self.len as isize,
        }
    }

    /// Vᵀ as a `count × len` view.
    fn vt(&self) -> MatRef<'_, f64> {
        MatRef {
            data: &self.vt,
            offset: 0,
            rows: self.count,
            cols: self.len,
            row_stride: self.len as isize,
            col_stride: 1,
        }
    }

    /// The `rows × count` matrix `z` with each row z replaced by T z (`transposed`:
    /// by Tᵀ z), as a GEMM against T's dense square (zeros below the diagonal).
    fn times_t(&self, z: &[f64], transposed: bool) -> Vec<f64> {
        let b = self.count;
        let rows = z.len() / b;
        let zm = MatRef {
            data: z,
            offset: 0,
            rows,
            cols: b,
            row_stride: b as isize,
            col_stride: 1,
        };
        // Row z times Tᵀ is T z; times T is Tᵀ z.
        let (row_stride, col_stride) = if transposed { (b, 1) } else { (1, b) };
        let tm = MatRef {
            data: &self.t,
            offset: 0,
            rows: b,
            cols: b,
            row_stride: row_stride as isize,
            col_stride: col_stride as isize,
        };
        let mut out = vec![0.0; rows * b];
        gemm_rows(1.0, zm, tm, 0.0, &mut out, b);
        out
    }

    /// C ← (I − V T Vᵀ)ᵀ C = H_{count−1} ⋯ H₀ C for the `len × cols` matrix at the
    /// start of `c` (row stride `ldc`): the trailing update of a QR panel.
    pub(super) fn apply_transposed_left(&self, c: &mut [f64], ldc: usize, cols: usize) {
        self.apply_left(c, ldc, cols, true)
    }

    /// C ← (I − V T Vᵀ) C = H₀ ⋯ H_{count−1} C (as [`Block::apply_transposed_left`]):
    /// accumulating Q.
    pub(super) fn apply_plain_left(&self, c: &mut [f64], ldc: usize, cols: usize) {
        self.apply_left(c, ldc, cols, false)
    }

    /// C ← (I − V T Vᵀ)ᵀ C (`transposed`) or (I − V T Vᵀ) C.
    fn apply_left(&self, c: &mut [f64], ldc: usize, cols: usize, transposed: bool) {
        if cols == 0 || self.count == 0 {
            return;
        }
        // Zᵀ = Cᵀ V (cols × count), then Zᵀ ← (T Z)ᵀ or (Tᵀ Z)ᵀ, then C −= V Z.
        let cv = MatRef {
            data: c,
            offset: 0,
            rows: cols,
            cols: self.len,
            row_stride: 1,
            col_stride: ldc as isize,
        };
        let mut zt = vec![0.0; cols * self.count];
        gemm_rows(1.0, cv, self.v(), 0.0, &mut zt, self.count);
        let zt = self.times_t(&zt, transposed);
        let z = MatRef {
            data: &zt,
            offset: 0,
            rows: self.count,
            cols,
            row_stride: 1,
            col_stride: self.count as isize,
        };
        gemm_rows(-1.0, self.v(), z, 1.0, c, ldc);
    }

    /// C ← C (I − V T Vᵀ)ᵀ for the `rows × len` matrix at the start of `c` (row
    /// stride `ldc`): the back-transformation of eigenvectors held as rows.
    pub(super) fn apply_transposed_right(&self, c: &mut [f64], ldc: usize, rows: usize) {
        if rows == 0 || self.count == 0 {
            return;
        }
        // X = C V (rows × count), X ← X Tᵀ (each row x becomes T x), C −= X Vᵀ.
        let cm = MatRef {
            data: c,
            offset: 0,
            rows,
            cols: self.len,
            row_stride: ldc as isize,
            col_stride: 1,
        };
        let mut x = vec![0.0; rows * self.count];
        gemm_rows(1.0, cm, self.v(), 0.0, &mut x, self.count);
        let x = self.times_t(&x, false);
        let xm = MatRef {
            data: &x,
            offset: 0,
            rows,
            cols: self.count,
            row_stride: self.count as isize,
            col_stride: 1,
        };
        gemm_rows(-1.0, xm, self.vt(), 1.0, c, ldc);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The dense product H₀ ⋯ H_{b−1} of the reflectors, one at a time.
    fn product(vt: &[f64], taus: &[f64], len: usize) -> Vec<f64> {
        let mut p = vec![0.0; len * len];
        for i in 0..len {
            p[i * len + i] = 1.0;
        }
        for (r, &tau) in taus.iter().enumerate() {
            let v = &vt[r * len..(r + 1) * len];
            // P ← P (I − τ v vᵀ).
            for row in p.chunks_mut(len) {
                let f = tau * dot(row, v);
                row.iter_mut().zip(v).for_each(|(x, &vi)| *x -= f * vi);
            }
        }
        p
    }

    #[test]
    fn a_reflector_maps_x_to_beta_e1_and_is_orthogonal() {
        let x0 = [3.0, -1.0, 2.0, 0.5];
        let mut v = x0;
        let (beta, tau) = make_reflector(&mut v);
        assert_eq!(v[0], 1.0);
        let f = tau * dot(&v, &x0);
        let hx: Vec<f64> = x0.iter().zip(&v).map(|(x, vi)| x - f * vi).collect();
        assert!((hx[0] - beta).abs() < 1e-14 && hx[1..].iter().all(|h| h.abs() < 1e-14));
        assert!((beta.abs() - dot(&x0, &x0).sqrt()).abs() < 1e-14 && beta < 0.0);
        let mut e = [-2.0, 0.0, 0.0];
        assert_eq!(make_reflector(&mut e), (-2.0, 0.0));
    }

    #[test]
    fn the_compact_wy_block_equals_the_product_of_its_reflectors() {
        let (len, count) = (9, 4);
        let mut rng = crate::Rng::new(3);
        let mut vt = vec![0.0; count * len];
        let mut taus = vec![0.0; count];
        for r in 0..count {
            let mut x: Vec<f64> = (r..len).map(|_| rng.uniform() - 0.5).collect();
            taus[r] = make_reflector(&mut x).1;
            vt[r * len + r..(r + 1) * len].copy_from_slice(&x);
        }
        let p = product(&vt, &taus, len);
        let block = Block::new(vt, &taus, len);
        // Applying to the identity from each side gives P, Pᵀ.
        let eye = |n: usize| {
            let mut e = vec![0.0; n * n];
            (0..n).for_each(|i| e[i * n + i] = 1.0);
            e
        };
        let mut left = eye(len);
        block.apply_plain_left(&mut left, len, len);
        let mut left_t = eye(len);
        block.apply_transposed_left(&mut left_t, len, len);
        let mut right_t = eye(len);
        block.apply_transposed_right(&mut right_t, len, len);
        for i in 0..len {
            for j in 0..len {
                assert!((left[i * len + j] - p[i * len + j]).abs() < 1e-14);
                assert!((left_t[i * len + j] - p[j * len + i]).abs() < 1e-14);
                assert!((right_t[i * len + j] - p[j * len + i]).abs() < 1e-14);
            }
        }
    }
}
