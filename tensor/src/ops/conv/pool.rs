//! Max pooling's window arg-max (the indices its forward gathers and its backward
//! scatters to).

use super::{Conv2dSpec, Geometry};
use crate::element::Element;
use crate::error::{fmt_shape, Error, Result};
use crate::parallel;
use crate::tensor::Tensor;

impl<T: Element> Tensor<T> {
    /// Max pooling's window arg-max: for `self` `[N, C, H, W]`, windows of `kernel`
    /// moved by `stride` over the input padded by `padding` (padding never wins), the
    /// flat index (into the contiguous input) of each window's maximum, first on ties,
    /// and the output shape. NaN propagates: a window holding one picks it.
    pub fn max_pool2d_indices(
        &self,
        kernel: (usize, usize),
        stride: (usize, usize),
        padding: (usize, usize),
    ) -> Result<(Vec<usize>, [usize; 4])> {
        let spec = Conv2dSpec {
            stride,
            padding,
            ..Conv2dSpec::default()
        };
        if self.ndim() != 4 {
            return Err(Error::shape(
                "max_pool2d",
                format!("needs [N, C, H, W], got {}", fmt_shape(self.shape())),
            ));
        }
        let s = self.shape();
        let geo = Geometry::new("max_pool2d", s, &[s[1], s[1], kernel.0, kernel.1], spec)?;
        if padding.0 * 2 > kernel.0 || padding.1 * 2 > kernel.1 {
            return Err(Error::value(
                "max_pool2d",
                format!("padding {padding:?} must be at most half the kernel {kernel:?}"),
            ));
        }
        let x = self.contiguous();
        let xs = x.as_slice().expect("contiguous");
        let (h, w, ho, wo) = (geo.h, geo.w, geo.ho, geo.wo);
        let planes = geo.n * geo.cin;
        let mut idx = vec![0usize; planes * ho * wo];
        parallel::for_each_chunk_if(
            &mut idx,
            ho * wo,
            planes * h * w >= 1 << 18,
            |start, out| {
                let plane = start / (ho * wo);
                let base = plane * h * w;
                for (t, o) in out.iter_mut().enumerate() {
                    let (oy, ox) = (t / wo, t % wo);
                    let mut best: Option<(usize, T)> = None;
                    for i in 0..kernel.0 {
                        let iy = (oy * stride.0 + i) as isize - padding.0 as isize;
                        if iy < 0 || iy >= h as isize {
                            continue;
                        }
                        for j in 0..kernel.1 {
                            let ix = (ox * stride.1 + j) as isize - padding.1 as isize;
                            if ix < 0 || ix >= w as isize {
                                continue;
                            }
                            let at = base + iy as usize * w + ix as usize;
                            let v = xs[at];
                            let better = match best {
                                None => true,
                                Some((_, b)) => !b.is_nan() && (v > b || v.is_nan()),
                            };
                            if better {
                                best = Some((at, v));
                            }
                        }
                    }
                    *o = best.map_or(base, |(at, _)| at);
                }
            },
        );
        Ok((idx, [geo.n, geo.cin, ho, wo]))
    }
}
