//! Matrix products: 2-D and batched with broadcast batch axes, through
//! matrixmultiply's GEMM with the operands' strides passed through (a transposed
//! view costs no copy).
//!
//! Parallelism: batch entries run in parallel; a single large product is split into
//! blocks of rows (or of columns when there are few rows), one per thread. The inner
//! dimension is never split, and matrixmultiply computes every output element with
//! the same sequence of operations whatever block it belongs to (its k-blocking does
//! not depend on m or n), so the result is bitwise independent of the split and hence
//! of the thread count. `tests/reproducibility.rs` checks both claims.

use crate::element::Element;
use crate::error::{fmt_shape, Error, Result};
use crate::kernels::MatRef;
use crate::layout::{broadcast_shapes, checked_numel};
use crate::parallel;
use crate::storage;
use crate::tensor::Tensor;

/// Products with fewer multiply-adds than this run on one thread: waking a sleeping
/// worker costs about 20 µs on a 2-core machine, the time of a 2²³-multiply-add
/// product, and below it the split only loses (measured on 64×128 by 128×128: 10.6 µs
/// on one thread, 28.5 µs split).
const PAR_WORK: usize = 1 << 23;
/// Row blocks are multiples of this (the micro-kernel height).
const ROW_ALIGN: usize = 8;
/// Column blocks are multiples of this.
const COL_ALIGN: usize = 64;

/// `c = a · b` for one matrix (c row-major with row stride n), using the threads.
///
/// Each block packs its own copy of the operand it shares: a row split repacks B
/// (k·n elements) per block, a column split repacks A (m·k). The split that repacks
/// the smaller operand wins; with a batch of 128 rows against a 784×512 weight,
/// packing the shared weight twice would cost a third of the multiply.
pub(crate) fn gemm_parallel<T: Element>(a: MatRef<'_, T>, b: MatRef<'_, T>, c: &mut [T]) {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    let threads = parallel::threads();
    let prefer_columns = m < n && n >= 2 * COL_ALIGN;
    if m * n * k < PAR_WORK || threads == 1 {
        T::gemm(a, b, c, n);
    } else if m >= 2 * ROW_ALIGN && !prefer_columns {
        let rows = m.div_ceil(threads).div_ceil(ROW_ALIGN) * ROW_ALIGN;
        parallel::for_each_chunk_if(&mut c[..m * n], rows * n, true, |start, chunk| {
            let r0 = start / n;
            let sub = MatRef {
                offset: (a.offset as isize + r0 as isize * a.row_stride) as usize,
                rows: chunk.len() / n,
                ..a
            };
            T::gemm(sub, b, chunk, n);
        });
    } else if n >= 2 * COL_ALIGN {
        let cols = n.div_ceil(threads).div_ceil(COL_ALIGN) * COL_ALIGN;
        let blocks = n.div_ceil(cols);
        let parts = parallel::map_collect(blocks, m * k * n, |j| {
            let c0 = j * cols;
            let w = cols.min(n - c0);
            let sub = MatRef {
                offset: (b.offset as isize + c0 as isize * b.col_stride) as usize,
                cols: w,
                ..b
            };
            let mut buf = vec![T::zero(); m * w];
            T::gemm(a, sub, &mut buf, w);
            buf
        });
        for (j, buf) in parts.iter().enumerate() {
            let c0 = j * cols;
            let w = buf.len() / m.max(1);
            for r in 0..m {
                c[r * n + c0..r * n + c0 + w].copy_from_slice(&buf[r * w..(r + 1) * w]);
            }
        }
    } else {
        T::gemm(a, b, c, n);
    }
}

/// Storage offsets of every batch entry of a layout broadcast to `batch ++ [r, c]`.
fn batch_offsets(offset: usize, strides: &[isize], batch: &[usize]) -> Vec<usize> {
    let nb: usize = batch.iter().product();
    let mut out = Vec::with_capacity(nb);
    let mut idx = vec![0usize; batch.len()];
    for _ in 0..nb {
        let p: isize = offset as isize
            + idx
                .iter()
                .zip(strides)
                .map(|(&i, &s)| i as isize * s)
                .sum::<isize>();
        out.push(p as usize);
        for d in (0..batch.len()).rev() {
            idx[d] += 1;
            if idx[d] < batch[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    out
}

impl<T: Element> Tensor<T> {
    /// Matrix product over the last two axes, broadcasting the leading (batch) axes:
    /// `[..., m, k] x [..., k, n] -> [..., m, n]`.
    pub fn matmul(&self, rhs: &Tensor<T>) -> Result<Tensor<T>> {
        let (sa, sb) = (self.shape(), rhs.shape());
        if sa.len() < 2 || sb.len() < 2 {
            return Err(Error::shape(
                "matmul",
                format!(
                    "{} x {}: both operands need at least 2 axes",
                    fmt_shape(sa),
                    fmt_shape(sb)
                ),
            ));
        }
        let (m, k) = (sa[sa.len() - 2], sa[sa.len() - 1]);
        let (k2, n) = (sb[sb.len() - 2], sb[sb.len() - 1]);
        if k != k2 {
            return Err(Error::shape(
                "matmul",
                format!(
                    "{} x {}: inner dimensions {k} and {k2} differ",
                    fmt_shape(sa),
                    fmt_shape(sb)
                ),
            ));
        }
        let batch = broadcast_shapes("matmul", &sa[..sa.len() - 2], &sb[..sb.len() - 2])?;
        let mut out_shape = batch.clone();
        out_shape.extend([m, n]);
        let total = checked_numel("matmul", &out_shape)?;
        let mut out = storage::scratch(total, T::zero());
        if total == 0 {
            return Ok(Tensor::from_contiguous(out, &out_shape));
        }
        let mut a_full = batch.clone();
        a_full.extend([m, k]);
        let mut b_full = batch.clone();
        b_full.extend([k, n]);
        let la = self.layout().broadcast_to("matmul", &a_full)?;
        let lb = rhs.layout().broadcast_to("matmul", &b_full)?;
        let nbat = batch.len();
        let offs_a = batch_offsets(la.offset(), la.strides(), &batch);
        let offs_b = batch_offsets(lb.offset(), lb.strides(), &batch);
        let view = |data, offset, rows, cols, strides: &[isize]| MatRef {
            data,
            offset,
            rows,
            cols,
            row_stride: strides[nbat],
            col_stride: strides[nbat + 1],
        };
        let (da, db) = (self.storage(), rhs.storage());
        if offs_a.len() == 1 {
            let a = view(da, offs_a[0], m, k, la.strides());
            let b = view(db, offs_b[0], k, n, lb.strides());
            gemm_parallel(a, b, &mut out);
        } else {
            let par = offs_a.len() * m * n * k >= PAR_WORK;
            parallel::for_each_chunk_if(&mut out, m * n, par, |start, c| {
                let i = start / (m * n);
                let a = view(da, offs_a[i], m, k, la.strides());
                let b = view(db, offs_b[i], k, n, lb.strides());
                T::gemm(a, b, c, n);
            });
        }
        Ok(Tensor::from_contiguous(out, &out_shape))
    }
}
