//! Fourier transforms with gradients. Every transform is linear, and its adjoint is
//! another transform of the family (with the adjoint normalisation, and for the real
//! transforms a weight of 1 or 2 per bin for the bins that stand for two), so the
//! rules are differentiable to any order.

use crate::var::{record, Var};
use tensor::fft::Norm;
use tensor::{layout::normalize_axis, Element, Result, Tensor};

/// Per-bin weights `w_k` along complex axis `axis` of a tensor of `ndim` axes (the
/// last being the pair), as a broadcastable constant.
fn bin_weights<T: Element>(ndim: usize, axis: usize, w: Vec<f64>) -> Result<Var<T>> {
    let mut shape = vec![1; ndim];
    shape[axis] = w.len();
    let t = Tensor::from_vec(w.into_iter().map(T::from_f64).collect(), &shape)?;
    Ok(Var::constant(t))
}

/// How many times bin k stands in the Hermitian spectrum of a real length-n signal.
fn multiplicity(k: usize, n: usize) -> f64 {
    if k == 0 || (n.is_multiple_of(2) && k == n / 2) {
        1.0
    } else {
        2.0
    }
}

impl<T: Element> Var<T> {
    /// Complex FFT along complex axis `axis`; gradient: the inverse transform under the
    /// adjoint normalisation.
    #[track_caller]
    pub fn fft(&self, axis: isize, norm: Norm) -> Result<Var<T>> {
        let v = self.value.fft(axis, norm)?;
        record("fft", &[self], v, move |c| {
            Ok(vec![Some(c.grad.ifft(axis, norm.adjoint())?)])
        })
    }

    /// Inverse complex FFT; gradient: the forward transform under the adjoint
    /// normalisation.
    #[track_caller]
    pub fn ifft(&self, axis: isize, norm: Norm) -> Result<Var<T>> {
        let v = self.value.ifft(axis, norm)?;
        record("ifft", &[self], v, move |c| {
            Ok(vec![Some(c.grad.fft(axis, norm.adjoint())?)])
        })
    }

    /// Real FFT along `axis` (n/2 + 1 complex bins).
    #[track_caller]
    pub fn rfft(&self, axis: isize, norm: Norm) -> Result<Var<T>> {
        let ax = normalize_axis("rfft", axis, self.ndim())?;
        let n = self.shape()[ax];
        let v = self.value.rfft(axis, norm)?;
        record("rfft", &[self], v, move |c| {
            // x̄ = irfft_backward((n·s / c_k) ȳ_k, n), s the forward scale.
            let s = norm.scale(n, false);
            let w: Vec<f64> = (0..n / 2 + 1)
                .map(|k| n as f64 * s / multiplicity(k, n))
                .collect();
            let z = c.grad.mul(&bin_weights(c.grad.ndim(), ax, w)?)?;
            Ok(vec![Some(z.irfft(ax as isize, n, Norm::Backward)?)])
        })
    }

    /// Inverse real FFT to length `n` along complex axis `axis`.
    #[track_caller]
    pub fn irfft(&self, axis: isize, n: usize, norm: Norm) -> Result<Var<T>> {
        let v = self.value.irfft(axis, n, norm)?;
        let ax = normalize_axis("irfft", axis, self.ndim() - 1)?;
        let bins = self.shape()[ax];
        record("irfft", &[self], v, move |c| {
            // X̄_k = s·c_k·rfft_backward(ȳ)_k for the bins that were read, 0 beyond.
            let s = norm.scale(n, true);
            let r = c.grad.rfft(ax as isize, Norm::Backward)?;
            let w: Vec<f64> = (0..n / 2 + 1).map(|k| s * multiplicity(k, n)).collect();
            let g = r.mul(&bin_weights(r.ndim(), ax, w)?)?;
            let have = n / 2 + 1;
            let g = if bins <= have {
                g.narrow(ax as isize, 0, bins)?
            } else {
                let mut pads = vec![(0, 0); g.ndim()];
                pads[ax] = (0, bins - have);
                g.pad(&pads, 0.0)?
            };
            Ok(vec![Some(g)])
        })
    }

    /// 2-D complex FFT over complex axes `axes`.
    #[track_caller]
    pub fn fft2(&self, axes: (isize, isize), norm: Norm) -> Result<Var<T>> {
        self.fft(axes.1, norm)?.fft(axes.0, norm)
    }

    /// Inverse of [`Var::fft2`].
    #[track_caller]
    pub fn ifft2(&self, axes: (isize, isize), norm: Norm) -> Result<Var<T>> {
        self.ifft(axes.1, norm)?.ifft(axes.0, norm)
    }

    /// 2-D real FFT: `rfft` along `axes.1`, then `fft` along `axes.0`.
    #[track_caller]
    pub fn rfft2(&self, axes: (isize, isize), norm: Norm) -> Result<Var<T>> {
        let a0 = normalize_axis("rfft2", axes.0, self.ndim())?;
        self.rfft(axes.1, norm)?.fft(a0 as isize, norm)
    }

    /// Inverse of [`Var::rfft2`] with output lengths `lens`.
    #[track_caller]
    pub fn irfft2(&self, axes: (isize, isize), lens: (usize, usize), norm: Norm) -> Result<Var<T>> {
        self.value.irfft2(axes, lens, norm)?;
        self.ifft(axes.0, norm)?.irfft(axes.1, lens.1, norm)
    }
}
