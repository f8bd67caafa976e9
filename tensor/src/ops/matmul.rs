//! Matrix products: 2-D and batched with broadcast batch axes, through the engine's
//! GEMM (`kernels::gemm`) with the operands' strides passed through (a transposed
//! view costs no copy).
//!
//! Parallelism: batch entries run in parallel; a single large product is split by
//! the GEMM into tasks that own disjoint tiles. The inner dimension is never split,
//! and the GEMM computes every output element with the same sequence of operations
//! whatever tile or task it belongs to, so the result is bitwise independent of the
//! split and hence of the thread count. `tests/suite/reproducibility.rs` checks both
//! claims.

use crate::element::Element;
use crate::error::{fmt_shape, Error, Result};
use crate::kernels::{gemm, MatRef};
use crate::layout::{broadcast_shapes, checked_numel};
use crate::parallel;
use crate::storage;
use crate::tensor::Tensor;

/// `c = a · b` for one matrix (c row-major with row stride n), split across the
/// threads when large (the GEMM's tasks own disjoint tiles; the result is the same
/// bits whatever the split).
pub(crate) fn gemm_parallel<T: Element>(a: MatRef<'_, T>, b: MatRef<'_, T>, c: &mut [T]) {
    gemm::gemm(
        T::ONE,
        &a.transposed_operand(),
        &b.operand(),
        T::ZERO,
        c,
        b.cols,
        true,
    );
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
    ///
    /// ```
    /// use tensor::Tensor;
    /// # fn main() -> tensor::Result<()> {
    /// let a = Tensor::<f64>::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2])?;
    /// let b = Tensor::from_vec(vec![5.0, 6.0, 7.0, 8.0], &[2, 2])?;
    /// assert_eq!(a.matmul(&b)?.to_vec(), vec![19.0, 22.0, 43.0, 50.0]);
    /// // A batch of 3 matrices times one matrix: the batch axis broadcasts.
    /// let batch = Tensor::<f64>::ones(&[3, 4, 2])?;
    /// assert_eq!(batch.matmul(&b)?.shape(), &[3, 4, 2]);
    /// // Mismatched inner dimensions: an error naming the op and both shapes.
    /// let e = a.matmul(&Tensor::zeros(&[3, 1])?).unwrap_err().to_string();
    /// assert!(e.starts_with("matmul: [2, 2] x [3, 1]"), "{e}");
    /// # Ok(())
    /// # }
    /// ```
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
            let par = offs_a.len() * m * n * k >= gemm::PAR_WORK;
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
