//! The GEMM operand view of a row-major block of weights or gradients that every
//! lowering of the convolution (`per_image`, `chunked`, `direct`) multiplies by:
//! kept here, below all of them, so that none of them imports another for it.

use crate::kernels::gemm::Strided;

/// The row-major `[rows, cols]` block at `offset` of `data` as a GEMM operand whose
/// depth runs along its rows (`rows` deep, `cols` wide) or, `transposed`, along its
/// columns.
pub(super) fn block<T>(
    data: &[T],
    offset: usize,
    rows: usize,
    cols: usize,
    transposed: bool,
) -> Strided<'_, T> {
    let (depth, width, depth_stride, width_stride) = if transposed {
        (cols, rows, 1, cols as isize)
    } else {
        (rows, cols, cols as isize, 1)
    };
    Strided {
        data,
        offset,
        depth,
        width,
        depth_stride,
        width_stride,
    }
}
