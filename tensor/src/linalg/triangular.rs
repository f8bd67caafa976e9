//! Blocked triangular solves with many right-hand sides. All eight cases (left or
//! right, lower or upper, transposed or not) reduce to one kernel, a lower-triangular
//! solve from the left, through zero-copy views: a transposed lower matrix is an
//! upper one, and an upper matrix read with both axes reversed is a lower one.

use super::finite;
use crate::element::Element;
use crate::error::{fmt_shape, Error, Result};
use crate::kernels::MatRef;
use crate::layout::broadcast_shapes;
use crate::parallel;
use crate::tensor::Tensor;

/// Which triangular system to solve.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Triangular {
    /// A is lower (true) or upper (false) triangular; the other triangle is ignored.
    pub lower: bool,
    /// Solve op(A)·X = B (true) or X·op(A) = B (false).
    pub left: bool,
    /// op(A) = Aᵀ (true) or A (false).
    pub transpose: bool,
    /// Treat the diagonal as ones (it is not read).
    pub unit_diagonal: bool,
}

impl Triangular {
    /// L X = B with L lower triangular.
    pub const LOWER: Triangular = Triangular {
        lower: true,
        left: true,
        transpose: false,
        unit_diagonal: false,
    };
    /// U X = B with U upper triangular.
    pub const UPPER: Triangular = Triangular {
        lower: false,
        left: true,
        transpose: false,
        unit_diagonal: false,
    };

    /// The same system with op(A) transposed.
    pub fn transposed(self) -> Self {
        Triangular {
            transpose: !self.transpose,
            ..self
        }
    }
}

/// Systems up to this size are solved row by row.
const LEAF: usize = 16;

/// Solves L X = B in place for an n×n lower-triangular `l` (any strides) and an n×m
/// row-major `b` with row stride `ldb`, by recursive halving: X₁ = L₁₁⁻¹B₁, then
/// B₂ −= L₂₁X₁ (one GEMM with half the rows), then X₂ = L₂₂⁻¹B₂; small systems are
/// solved row by row. Returns the index of a zero diagonal entry on failure.
pub(crate) fn solve_lower<T: Element>(
    l: MatRef<'_, T>,
    b: &mut [T],
    ldb: usize,
    n: usize,
    m: usize,
    unit: bool,
) -> std::result::Result<(), usize> {
    if n <= LEAF {
        return solve_rows(l, b, ldb, n, m, unit);
    }
    let n1 = n / 2;
    let (b1, b2) = b.split_at_mut(n1 * ldb);
    solve_lower(
        MatRef {
            rows: n1,
            cols: n1,
            ..l
        },
        b1,
        ldb,
        n1,
        m,
        unit,
    )?;
    let l21 = MatRef {
        offset: (l.offset as isize + n1 as isize * l.row_stride) as usize,
        rows: n - n1,
        cols: n1,
        ..l
    };
    let x1 = MatRef {
        data: &*b1,
        offset: 0,
        rows: n1,
        cols: m,
        row_stride: ldb as isize,
        col_stride: 1,
    };
    T::gemm_update(-T::one(), l21, x1, T::one(), b2, ldb);
    let l22 = MatRef {
        offset: (l.offset as isize + n1 as isize * (l.row_stride + l.col_stride)) as usize,
        rows: n - n1,
        cols: n - n1,
        ..l
    };
    solve_lower(l22, b2, ldb, n - n1, m, unit).map_err(|i| i + n1)
}

/// Row-by-row forward substitution for a small system.
fn solve_rows<T: Element>(
    l: MatRef<'_, T>,
    b: &mut [T],
    ldb: usize,
    n: usize,
    m: usize,
    unit: bool,
) -> std::result::Result<(), usize> {
    let at = |i: usize, j: usize| {
        l.data[(l.offset as isize + i as isize * l.row_stride + j as isize * l.col_stride) as usize]
    };
    for i in 0..n {
        let (done, cur) = b.split_at_mut(i * ldb);
        let row = &mut cur[..m];
        for p in 0..i {
            let f = at(i, p);
            if f != T::zero() {
                for (r, &x) in row.iter_mut().zip(&done[p * ldb..p * ldb + m]) {
                    *r = *r - f * x;
                }
            }
        }
        if !unit {
            let d = at(i, i);
            if d == T::zero() {
                return Err(i);
            }
            for r in row.iter_mut() {
                *r = *r / d;
            }
        }
    }
    Ok(())
}

/// Right-hand-side columns per independent parallel block.
const COLS: usize = 64;

/// [`solve_lower`] with the right-hand sides split into independent column blocks
/// solved in parallel when there are many (each column's result does not depend on
/// the split).
pub(crate) fn solve_lower_parallel<T: Element>(
    l: MatRef<'_, T>,
    x: &mut [T],
    n: usize,
    m: usize,
    unit: bool,
) -> std::result::Result<(), usize> {
    if m <= COLS || parallel::threads() == 1 {
        return solve_lower(l, x, m, n, m, unit);
    }
    let blocks = m.div_ceil(COLS);
    let parts = parallel::map_collect(blocks, n * n * m, |j| {
        let c0 = j * COLS;
        let w = COLS.min(m - c0);
        let mut part = Vec::with_capacity(n * w);
        for r in 0..n {
            part.extend_from_slice(&x[r * m + c0..r * m + c0 + w]);
        }
        solve_lower(l, &mut part, w, n, w, unit).map(|_| part)
    });
    for (j, part) in parts.into_iter().enumerate() {
        let part = part?;
        let c0 = j * COLS;
        let w = COLS.min(m - c0);
        for r in 0..n {
            x[r * m + c0..r * m + c0 + w].copy_from_slice(&part[r * w..(r + 1) * w]);
        }
    }
    Ok(())
}

/// Solves op(A) X = B from the left for one matrix: `a` n×n (strided view), `b` n×m.
fn solve_left_one<T: Element>(
    a: MatRef<'_, T>,
    b: &[T],
    n: usize,
    m: usize,
    kind: Triangular,
) -> Result<Vec<T>> {
    // op(A) lower ⟺ (lower and not transposed) or (upper and transposed).
    let op_lower = kind.lower != kind.transpose;
    let (rs, cs) = if kind.transpose {
        (a.col_stride, a.row_stride)
    } else {
        (a.row_stride, a.col_stride)
    };
    // An upper op(A) is solved as a lower one with rows and columns reversed (and the
    // rows of B reversed likewise).
    let view = if op_lower {
        MatRef {
            row_stride: rs,
            col_stride: cs,
            ..a
        }
    } else {
        let last = (n as isize - 1).max(0);
        MatRef {
            offset: (a.offset as isize + last * rs + last * cs) as usize,
            row_stride: -rs,
            col_stride: -cs,
            ..a
        }
    };
    let mut x: Vec<T> = if op_lower {
        b.to_vec()
    } else {
        b.chunks(m.max(1)).rev().flatten().copied().collect()
    };
    solve_lower_parallel(view, &mut x, n, m, kind.unit_diagonal).map_err(|i| {
        let idx = if op_lower { i } else { n - 1 - i };
        Error::numerical(
            "solve_triangular",
            format!("the matrix is singular: diagonal entry {idx} is zero"),
        )
    })?;
    if !op_lower {
        x = x.chunks(m.max(1)).rev().flatten().copied().collect();
    }
    Ok(x)
}

impl<T: Element> Tensor<T> {
    /// Solves a triangular system with `self` as A (batched; batch axes broadcast):
    /// op(A)·X = B when `kind.left`, X·op(A) = B otherwise. Fails on a zero diagonal
    /// entry (a singular matrix), non-square A, mismatched B, or non-finite input.
    pub fn solve_triangular(&self, b: &Tensor<T>, kind: Triangular) -> Result<Tensor<T>> {
        if !kind.left {
            // X op(A) = B  ⟺  op(A)ᵀ Xᵀ = Bᵀ.
            let k = Triangular {
                left: true,
                transpose: !kind.transpose,
                ..kind
            };
            return self
                .solve_triangular(&b.t()?, k)?
                .t()
                .map(|t| t.contiguous());
        }
        let n = super::square("solve_triangular", self)?;
        finite("solve_triangular", b)?;
        let (sa, sb) = (self.shape(), b.shape());
        if sb.len() < 2 || sb[sb.len() - 2] != n {
            return Err(Error::shape(
                "solve_triangular",
                format!(
                    "A {} and B {}: B needs {n} rows",
                    fmt_shape(sa),
                    fmt_shape(sb)
                ),
            ));
        }
        let m = sb[sb.len() - 1];
        let batch = broadcast_shapes("solve_triangular", &sa[..sa.len() - 2], &sb[..sb.len() - 2])?;
        let mut a_shape = batch.clone();
        a_shape.extend([n, n]);
        let mut b_shape = batch.clone();
        b_shape.extend([n, m]);
        let a = self.broadcast_to(&a_shape)?.contiguous();
        let bb = b.broadcast_to(&b_shape)?.contiguous();
        let (ad, bd) = (
            a.as_slice().expect("contiguous"),
            bb.as_slice().expect("contiguous"),
        );
        let count: usize = batch.iter().product();
        let results = parallel::map_collect(count, count * n * n * m, |i| {
            let view = MatRef {
                data: ad,
                offset: i * n * n,
                rows: n,
                cols: n,
                row_stride: n as isize,
                col_stride: 1,
            };
            crate::kernels::simd_scope(|| {
                solve_left_one(view, &bd[i * n * m..(i + 1) * n * m], n, m, kind)
            })
        });
        let out: Vec<T> = results.into_iter().collect::<Result<Vec<_>>>()?.concat();
        super::finite_result("solve_triangular", "the solution", &out)?;
        Tensor::from_vec(out, &b_shape)
    }
}
