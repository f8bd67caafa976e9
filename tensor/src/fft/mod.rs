//! Fast Fourier transforms in pure Rust: complex transforms of any length along any
//! axis, real transforms (`rfft`, and `irfft` with an explicit output length), 2-D
//! variants, and NumPy's normalisation modes.
//!
//! Complex values are stored as a trailing axis of size 2 (real, imaginary), as
//! `torch.view_as_real` does: a complex tensor of shape `[a, b]` is a real tensor of
//! shape `[a, b, 2]`, so every real op (and autograd) applies to it unchanged. Axes
//! given to the complex transforms count the complex axes only (the trailing pair is
//! not an axis of the transform).
//!
//! [`FftPlan`] runs the same transforms on the caller's own split buffers, with no
//! per-call cost beyond the transform.

mod plan;
mod reusable;

pub use reusable::FftPlan;

use crate::dims::Dims;
use crate::element::Element;
use crate::error::{fmt_shape, Error, Result};
use crate::kernels::four_step::{Input, Output};
use crate::kernels::gemm::with_scratch;
use crate::kernels::{
    half_bin_conj, irfft_precombine, join_pairs, real_bin, rfft_recombine, split_pairs, Ahead,
};
use crate::layout::{checked_numel, normalize_axis};
use crate::parallel;
use crate::storage;
use crate::tensor::Tensor;

/// Normalisation of a transform pair, as in NumPy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Norm {
    /// Forward unscaled, inverse scaled by 1/n (NumPy's default).
    #[default]
    Backward,
    /// Both scaled by 1/√n (unitary).
    Ortho,
    /// Forward scaled by 1/n, inverse unscaled.
    Forward,
}

impl Norm {
    /// Parses "backward", "ortho" or "forward".
    pub fn parse(s: &str) -> Result<Norm> {
        match s {
            "backward" => Ok(Norm::Backward),
            "ortho" => Ok(Norm::Ortho),
            "forward" => Ok(Norm::Forward),
            other => Err(Error::value(
                "fft",
                format!("unknown normalisation '{other}' (backward, ortho, forward)"),
            )),
        }
    }

    /// The scale of the forward (`inverse = false`) or inverse transform of length n.
    pub fn scale(self, n: usize, inverse: bool) -> f64 {
        let n = n.max(1) as f64;
        match (self, inverse) {
            (Norm::Backward, false) | (Norm::Forward, true) => 1.0,
            (Norm::Backward, true) | (Norm::Forward, false) => 1.0 / n,
            (Norm::Ortho, _) => 1.0 / n.sqrt(),
        }
    }

    /// The normalisation whose forward transform is this one's inverse, up to the
    /// conjugation: the adjoint of a transform under `self` is the opposite-direction
    /// transform under `self.adjoint()` times n when the scales differ.
    pub fn adjoint(self) -> Norm {
        match self {
            Norm::Backward => Norm::Forward,
            Norm::Forward => Norm::Backward,
            Norm::Ortho => Norm::Ortho,
        }
    }
}

/// Checks that `t` is complex (trailing axis 2) and returns the normalised complex
/// axis.
fn complex_axis(op: &'static str, t: &Tensor<impl Element>, axis: isize) -> Result<usize> {
    let s = t.shape();
    if s.len() < 2 || s[s.len() - 1] != 2 {
        return Err(Error::shape(
            op,
            format!(
                "needs a complex tensor (trailing axis of size 2), got {}",
                fmt_shape(s)
            ),
        ));
    }
    normalize_axis(op, axis, s.len() - 1)
}

/// The per-row buffers of [`along`]: the row's input split into (re, im) (`n`
/// each) and its output parts (`out_len` each), which a row transform may use as it
/// likes; and the next row's input and output, for the transform to ask the cache
/// for while it computes ([`Ahead`]).
struct RowBufs<'a, T> {
    re: &'a mut [T],
    im: &'a mut [T],
    ore: &'a mut [T],
    oim: &'a mut [T],
    ahead: Ahead,
}

/// Transforms the rows of `t` along `axis`: the axis is moved last (for a complex
/// tensor, just before the trailing pair) and made contiguous, and
/// `row(src, out, bufs, plan, scratch)` turns each input row `src` (interleaved
/// pairs when `complex_in`, else reals) into its output row `out` (`out_len`
/// pairs when `complex_out`, else `out_len` reals), rows in parallel; then the
/// axis is moved back. The plan is the one of length `plan_len`.
#[allow(clippy::too_many_arguments)]
fn along<T: Element>(
    t: &Tensor<T>,
    axis: usize,
    complex_in: bool,
    complex_out: bool,
    out_len: usize,
    plan_len: usize,
    row: impl Fn(&[T], &mut [T], RowBufs<'_, T>, &plan::Plan<T>, &mut plan::Scratch<T>) + Sync,
) -> Result<Tensor<T>> {
    let nd = t.ndim();
    let lead = if complex_in { nd - 1 } else { nd };
    // The transformed axis is usually the last (before the pair) already: then the
    // rows are read in place when the tensor is contiguous.
    let identity = axis == lead - 1;
    let perm: Vec<isize> = if identity {
        Vec::new()
    } else {
        let mut perm: Vec<isize> = (0..lead as isize).filter(|&a| a != axis as isize).collect();
        perm.push(axis as isize);
        if complex_in {
            perm.push(nd as isize - 1);
        }
        perm
    };
    let moved;
    let x = match (identity, t.as_slice()) {
        (true, Some(_)) => t,
        (true, None) => {
            moved = t.contiguous();
            &moved
        }
        (false, _) => {
            moved = t.permute(&perm)?.contiguous();
            &moved
        }
    };
    let data = x.as_slice().expect("contiguous");
    let n = t.shape()[axis];
    let width = if complex_in { 2 * n } else { n };
    let rows = if n == 0 { 0 } else { data.len() / width };
    let mut shape = Dims::from_slice(&x.shape()[..lead - 1]);
    shape.push(out_len);
    let out_width = if complex_out {
        shape.push(2);
        2 * out_len
    } else {
        out_len
    };
    let mut out = storage::scratch(rows * out_width, T::zero());
    if out_len > 0 && rows > 0 {
        let p = plan::plan::<T>(plan_len);
        let rows_per_chunk = (parallel::CHUNK / out_width).max(1);
        parallel::for_each_chunk_sized(&mut out, rows_per_chunk * out_width, |start, chunk| {
            crate::kernels::simd_scope(|| {
                let r0 = start / out_width;
                let mut scratch = p.scratch();
                // One buffer for the row's input and output parts, recycled on this
                // thread from call to call (every row writes the parts it reads).
                with_scratch(2 * (n + out_len), |buf: &mut [T]| {
                    let mut rest_of_chunk = chunk;
                    for r in r0.. {
                        let Some((o, later)) = rest_of_chunk.split_at_mut_checked(out_width) else {
                            break;
                        };
                        rest_of_chunk = later;
                        let (re, rest) = buf.split_at_mut(n);
                        let (im, rest) = rest.split_at_mut(n);
                        let (ore, oim) = rest.split_at_mut(out_len);
                        let src = &data[r * width..(r + 1) * width];
                        // The next row of the input, and of this chunk's output.
                        let next_src = data.get((r + 1) * width..(r + 2) * width);
                        let next_out = rest_of_chunk.get(..out_width);
                        let ahead = Ahead::new(next_src.unwrap_or(&[]), next_out.unwrap_or(&[]));
                        let bufs = RowBufs {
                            re,
                            im,
                            ore,
                            oim,
                            ahead,
                        };
                        row(src, o, bufs, &p, &mut scratch);
                    }
                })
            })
        });
    }
    let y = Tensor::from_vec(out, &shape)?;
    if identity {
        return Ok(y);
    }
    // Undo the permutation (a complex output has its pair last).
    let mut full = perm[..lead].to_vec();
    if complex_out {
        full.push(lead as isize);
    }
    let mut inv = vec![0isize; full.len()];
    for (i, &p) in full.iter().enumerate() {
        inv[p as usize] = i as isize;
    }
    Ok(y.permute(&inv)?.contiguous())
}

/// The complex transform of one row of pairs into `out`, forward or inverse,
/// scaled: split (conjugated for the inverse, which is the conjugate of the forward
/// transform of the conjugate), transformed in place, joined back scaled (and
/// conjugated again).
#[inline(always)]
fn transform<T: Element>(
    src: &[T],
    out: &mut [T],
    b: RowBufs<'_, T>,
    p: &plan::Plan<T>,
    sc: &mut plan::Scratch<T>,
    inverse: bool,
    scale: f64,
) {
    let sign = if inverse { -T::one() } else { T::one() };
    let s = T::from_f64(scale);
    if p.moves() {
        let (input, output) = (Input::Pairs(src, sign), Output::Pairs(out, (s, s * sign)));
        p.forward_moved(input, output, sc, &b.ahead);
        return;
    }
    split_pairs(src, b.re, b.im, sign);
    let (re, im) = p.forward_placed(b.re, b.im, sc, &b.ahead);
    join_pairs(re, im, (s, s * sign), out);
}

impl<T: Element> Tensor<T> {
    /// The discrete Fourier transform of a complex tensor (trailing axis 2) along the
    /// complex axis `axis`: X_k = Σ_j x_j e^{−2πi jk/n}, scaled as `norm` says.
    pub fn fft(&self, axis: isize, norm: Norm) -> Result<Tensor<T>> {
        let ax = complex_axis("fft", self, axis)?;
        let n = self.shape()[ax];
        let scale = norm.scale(n, false);
        along(self, ax, true, true, n, n, |src, out, b, p, sc| {
            transform(src, out, b, p, sc, false, scale)
        })
    }

    /// The inverse transform of [`Tensor::fft`] (x_j = Σ_k X_k e^{2πi jk/n}, scaled).
    pub fn ifft(&self, axis: isize, norm: Norm) -> Result<Tensor<T>> {
        let ax = complex_axis("ifft", self, axis)?;
        let n = self.shape()[ax];
        let scale = norm.scale(n, true);
        along(self, ax, true, true, n, n, |src, out, b, p, sc| {
            transform(src, out, b, p, sc, true, scale)
        })
    }

    /// The transform of a real tensor along `axis`, keeping the n/2 + 1 non-negative
    /// frequencies (the rest follow by Hermitian symmetry); the result is complex.
    ///
    /// ```
    /// use tensor::{fft::Norm, Tensor};
    /// # fn main() -> tensor::Result<()> {
    /// // cos(2π·j/8) has all its energy in bin 1: X₁ = n/2 = 4 (real).
    /// let n = 8;
    /// let x = Tensor::<f64>::from_vec(
    ///     (0..n).map(|j| (std::f64::consts::TAU * j as f64 / n as f64).cos()).collect(),
    ///     &[n],
    /// )?;
    /// let spec = x.rfft(0, Norm::Backward)?;
    /// assert_eq!(spec.shape(), &[n / 2 + 1, 2]); // n/2 + 1 bins of (re, im)
    /// assert!((spec.get(&[1, 0])? - 4.0).abs() < 1e-12);
    /// assert!(spec.get(&[0, 0])?.abs() < 1e-12 && spec.get(&[2, 0])?.abs() < 1e-12);
    /// # Ok(())
    /// # }
    /// ```
    pub fn rfft(&self, axis: isize, norm: Norm) -> Result<Tensor<T>> {
        let ax = normalize_axis("rfft", axis, self.ndim())?;
        let n = self.shape()[ax];
        let half = n / 2 + 1;
        let scale = norm.scale(n, false);
        let plan_len = if n % 2 == 1 || n < 4 { n } else { n / 2 };
        // W_n^k for the even/odd recombination, k ≤ n/2: the table of the length-n
        // plan (cached), read in place.
        let full = plan::plan::<T>(n.max(1));
        let w = full.twiddles();
        along(
            self,
            ax,
            false,
            true,
            if n == 0 { 0 } else { half },
            plan_len,
            |src, out, b, p, sc| rfft_row(src, out, b, p, sc, w, scale),
        )
    }

    /// The real signal of length `n` along `axis` whose rfft is `self` (complex):
    /// bins beyond n/2 are ignored, missing ones are zero, and the imaginary parts of
    /// the zero and Nyquist bins do not contribute (as in NumPy).
    ///
    /// ```
    /// use tensor::{fft::Norm, Rng, Tensor};
    /// # fn main() -> tensor::Result<()> {
    /// // rfft then irfft with the length given back: the round trip restores the signal
    /// // for odd and even lengths, under every normalisation.
    /// for n in [7, 16] {
    ///     let x = Tensor::<f64>::rand_normal(&[3, n], 0.0, 1.0, &mut Rng::new(1))?;
    ///     for norm in [Norm::Backward, Norm::Ortho, Norm::Forward] {
    ///         let back = x.rfft(1, norm)?.irfft(1, n, norm)?;
    ///         assert_eq!(back.shape(), &[3, n]);
    ///         assert!(back.sub(&x)?.abs().max_all()? < 1e-13);
    ///     }
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn irfft(&self, axis: isize, n: usize, norm: Norm) -> Result<Tensor<T>> {
        let ax = complex_axis("irfft", self, axis)?;
        if n == 0 {
            return Err(Error::value("irfft", "the output length must be positive"));
        }
        // The output's size is checked against the cap before the length-n plan
        // (two tables of n twiddles) or the output is allocated.
        let mut out_shape = self.shape()[..self.ndim() - 1].to_vec();
        out_shape[ax] = n;
        checked_numel("irfft", &out_shape)?;
        checked_numel("irfft", &[n])?;
        let scale = norm.scale(n, true);
        let plan_len = if n % 2 == 1 || n < 4 { n } else { n / 2 };
        let full = plan::plan::<T>(n);
        let w = full.twiddles();
        along(self, ax, true, false, n, plan_len, |src, out, b, p, sc| {
            irfft_row(src, out, b, p, sc, w, scale)
        })
    }

    /// The 2-D transform over the complex axes `axes` (the last transform first).
    pub fn fft2(&self, axes: (isize, isize), norm: Norm) -> Result<Tensor<T>> {
        self.fft(axes.1, norm)?.fft(axes.0, norm)
    }

    /// The inverse of [`Tensor::fft2`].
    pub fn ifft2(&self, axes: (isize, isize), norm: Norm) -> Result<Tensor<T>> {
        self.ifft(axes.1, norm)?.ifft(axes.0, norm)
    }

    /// The 2-D real transform: `rfft` along `axes.1`, then `fft` along `axes.0`.
    pub fn rfft2(&self, axes: (isize, isize), norm: Norm) -> Result<Tensor<T>> {
        let a0 = normalize_axis("rfft2", axes.0, self.ndim())?;
        self.rfft(axes.1, norm)?.fft(a0 as isize, norm)
    }

    /// The inverse of [`Tensor::rfft2`], with output lengths `lens` along `axes`.
    pub fn irfft2(
        &self,
        axes: (isize, isize),
        lens: (usize, usize),
        norm: Norm,
    ) -> Result<Tensor<T>> {
        let a0 = complex_axis("irfft2", self, axes.0)?;
        let x = self.ifft(a0 as isize, norm)?;
        if x.shape()[a0] != lens.0 {
            return Err(Error::shape(
                "irfft2",
                format!(
                    "axis {a0} has {} bins, the output asks for {}",
                    x.shape()[a0],
                    lens.0
                ),
            ));
        }
        x.irfft(axes.1, lens.1, norm)
    }
}

/// rfft of one real row `x` into n/2 + 1 bins, as pairs in `out` (of the buffers,
/// `re` and `im` hold n, `ore` and `oim` n/2 + 1). Even lengths use one complex
/// transform of half the length on the even/odd samples packed as
/// z_j = x_{2j} + i x_{2j+1}; odd lengths use a full complex transform.
#[inline(always)]
fn rfft_row<T: Element>(
    x: &[T],
    out: &mut [T],
    b: RowBufs<'_, T>,
    p: &plan::Plan<T>,
    sc: &mut plan::Scratch<T>,
    (wr, wi): (&[T], &[T]),
    scale: f64,
) {
    let n = x.len();
    let s = T::from_f64(scale);
    let half = b.ore.len();
    if n % 2 == 1 || n < 4 {
        b.re.copy_from_slice(x);
        b.im.fill(T::zero());
        let (r, i) = p.forward_placed(b.re, b.im, sc, &b.ahead);
        join_pairs(&r[..half], &i[..half], (s, s), out);
        return;
    }
    // Z = FFT_h(x_even + i x_odd), left wherever its last stage put it.
    let h = n / 2;
    let (re, im) = (&mut b.re[..h], &mut b.im[..h]);
    let (zr, zi) = if p.moves() {
        let output = Output::Split(&mut *re, &mut *im);
        p.forward_moved(Input::Pairs(x, T::one()), output, sc, &b.ahead);
        (&*re, &*im)
    } else {
        split_pairs(x, re, im, T::one());
        p.forward_placed(re, im, sc, &b.ahead)
    };
    // X_k = E_k + W_n^k O_k with E_k = (Z_k + conj Z_{h−k})/2 and
    // O_k = −i (Z_k − conj Z_{h−k})/2 (Z_h = Z_0): the halving is folded into the
    // scale (exact: a power of two), and X is written as pairs straight into `out`.
    let s_half = s * T::from_f64(0.5);
    let z0 = (zr[0], zi[0]);
    (out[0], out[1]) = real_bin(z0, z0, (wr[0], wi[0]), s_half);
    (out[2 * h], out[2 * h + 1]) = real_bin(z0, z0, (wr[h], wi[h]), s_half);
    // k = 1..h, compiled for AVX2.
    rfft_recombine((zr, zi), (wr, wi), s_half, out);
}

/// irfft of one row of bins `src` (pairs) into the real row `out` of length n (of
/// the buffers, `re` and `im` hold the row's bins, `ore` and `oim` n values). Even
/// lengths invert [`rfft_row`]'s recombination and run one complex transform of half
/// the length, whose outputs are the even and odd samples; odd lengths rebuild the
/// full Hermitian spectrum. Either way the imaginary parts of the zero and Nyquist
/// bins are not read, as in NumPy.
#[inline(always)]
fn irfft_row<T: Element>(
    src: &[T],
    out: &mut [T],
    b: RowBufs<'_, T>,
    p: &plan::Plan<T>,
    sc: &mut plan::Scratch<T>,
    (wr, wi): (&[T], &[T]),
    scale: f64,
) {
    let n = out.len();
    let s = T::from_f64(scale);
    let bins = (src.len() / 2).min(n / 2 + 1);
    let (ore, oim) = (b.ore, b.oim);
    if n % 2 == 1 || n < 4 {
        // The full spectrum in the row's buffers (missing bins zero).
        let (re, im) = (&mut b.re[..bins], &mut b.im[..bins]);
        split_pairs(src, re, im, T::one());
        let (fr, fi) = (ore, oim);
        fr.fill(T::zero());
        fi.fill(T::zero());
        for k in 0..bins {
            fr[k] = re[k];
            fi[k] = im[k];
            if k > 0 && n - k > k {
                fr[n - k] = re[k];
                fi[n - k] = -im[k];
            }
        }
        // Inverse by conjugation; only the real part is kept.
        for v in fi.iter_mut() {
            *v = -*v;
        }
        let (fr, _) = p.forward_placed(fr, fi, sc, &b.ahead);
        for (o, &r) in out.iter_mut().zip(fr) {
            *o = r * s;
        }
        return;
    }
    // With h = n/2, E_k = (X_k + conj X_{h−k})/2 and O_k = (X_k − conj X_{h−k}) W_n^{−k}/2
    // are the transforms of the even and odd samples, so Z = E + iO is the transform
    // of z_j = x_{2j} + i x_{2j+1}. Missing bins are zero; bins 0 and h are real.
    let h = n / 2;
    let padded;
    let x = if bins == h + 1 {
        &src[..2 * (h + 1)]
    } else {
        let mut pairs = vec![T::zero(); 2 * (h + 1)];
        pairs[..2 * bins].copy_from_slice(&src[..2 * bins]);
        padded = pairs;
        &padded[..]
    };
    let half_t = T::from_f64(0.5);
    // The conjugates of Z_k, for the inverse transform by conjugation.
    let (x0, xh) = ((x[0], T::zero()), (x[2 * h], T::zero()));
    (ore[0], oim[0]) = half_bin_conj(x0, xh, (wr[0], wi[0]), half_t);
    // k = 1..h, compiled for AVX2.
    irfft_precombine(x, (wr, wi), half_t, (&mut ore[..h], &mut oim[..h]));
    // h·z_j is the conjugate of that transform: x_{2j} = 2s·Re, x_{2j+1} = −2s·Im.
    let two_s = s + s;
    let (re, im) = (&mut ore[..h], &mut oim[..h]);
    if p.moves() {
        let output = Output::Pairs(out, (two_s, -two_s));
        p.forward_moved(Input::Split(re, im), output, sc, &b.ahead);
        return;
    }
    let (zr, zi) = p.forward_placed(re, im, sc, &b.ahead);
    join_pairs(zr, zi, (two_s, -two_s), out);
}
