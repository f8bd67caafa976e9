//! A transform of one length held for reuse on the caller's own buffers: the plan
//! (twiddles, algorithm) and the scratch, with no allocation, look-up or copy per
//! call — the form to use for many small transforms, where the tensor ops' fixed
//! cost (an output tensor, the row machinery) outweighs the transform itself.

use super::plan;
use crate::element::Element;
use crate::error::{Error, Result};
use crate::layout::checked_numel;
use std::sync::Arc;

/// The complex FFT of one length on split data (real parts and imaginary parts in
/// two slices), in place. `forward` is unnormalised, `X_k = Σ_j x_j e^{−2πi jk/n}`;
/// `inverse` is scaled by 1/n (NumPy's default normalisation).
///
/// ```
/// use tensor::fft::FftPlan;
/// let mut plan = FftPlan::<f64>::new(4).unwrap();
/// let (mut re, mut im) = (vec![1.0, 2.0, 3.0, 4.0], vec![0.0; 4]);
/// plan.forward(&mut re, &mut im).unwrap();
/// assert_eq!((re[0], im[0]), (10.0, 0.0));
/// plan.inverse(&mut re, &mut im).unwrap();
/// assert!((re[3] - 4.0).abs() < 1e-15);
/// ```
pub struct FftPlan<T: Element> {
    plan: Arc<plan::Plan<T>>,
    scratch: plan::Scratch<T>,
    n: usize,
}

impl<T: Element> FftPlan<T> {
    /// The plan of length `n` (shared with the tensor ops' cache), with its
    /// scratch; a zero length, or one past the allocation cap, is an error naming
    /// it.
    pub fn new(n: usize) -> Result<Self> {
        if n == 0 {
            return Err(Error::value("FftPlan::new", "the length must be positive"));
        }
        checked_numel("FftPlan::new", &[n])?;
        let plan = plan::plan::<T>(n);
        let scratch = plan.scratch();
        Ok(FftPlan { plan, scratch, n })
    }

    /// The transform's length.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether the length is zero (the transform of nothing).
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    fn check(&self, op: &'static str, re: &[T], im: &[T]) -> Result<()> {
        if re.len() != self.n || im.len() != self.n {
            return Err(Error::shape(
                op,
                format!(
                    "a plan of length {} was given {} real and {} imaginary parts",
                    self.n,
                    re.len(),
                    im.len()
                ),
            ));
        }
        Ok(())
    }

    /// The forward transform of (re, im), in place.
    ///
    /// ```
    /// use tensor::fft::{FftPlan, Norm};
    /// use tensor::Tensor;
    /// # fn main() -> tensor::Result<()> {
    /// // The plan's transform is the tensor op's, on split buffers instead of pairs.
    /// let (re, im) = (vec![1.0, -2.0, 0.5, 3.0, 0.0], vec![0.0, 1.0, -1.0, 2.0, 0.25]);
    /// let pairs: Vec<f64> = re.iter().zip(&im).flat_map(|(&r, &i)| [r, i]).collect();
    /// let want = Tensor::from_vec(pairs, &[5, 2])?.fft(0, Norm::Backward)?.to_vec();
    /// let mut plan = FftPlan::<f64>::new(5)?;
    /// let (mut r, mut i) = (re.clone(), im.clone());
    /// plan.forward(&mut r, &mut i)?;
    /// for k in 0..5 {
    ///     assert!((r[k] - want[2 * k]).abs() < 1e-12 && (i[k] - want[2 * k + 1]).abs() < 1e-12);
    /// }
    /// assert!(plan.forward(&mut r[..4], &mut i[..4]).is_err()); // wrong length
    /// # Ok(())
    /// # }
    /// ```
    pub fn forward(&mut self, re: &mut [T], im: &mut [T]) -> Result<()> {
        self.check("FftPlan::forward", re, im)?;
        if self.n > 0 {
            self.plan.forward(re, im, &mut self.scratch);
        }
        Ok(())
    }

    /// The inverse transform of (re, im), in place: the conjugate of the forward
    /// transform of the conjugate, scaled by 1/n.
    pub fn inverse(&mut self, re: &mut [T], im: &mut [T]) -> Result<()> {
        self.check("FftPlan::inverse", re, im)?;
        if self.n == 0 {
            return Ok(());
        }
        for v in im.iter_mut() {
            *v = -*v;
        }
        self.plan.forward(re, im, &mut self.scratch);
        let s = T::from_f64(1.0 / self.n as f64);
        for (r, i) in re.iter_mut().zip(im.iter_mut()) {
            *r = *r * s;
            *i = -*i * s;
        }
        Ok(())
    }
}
