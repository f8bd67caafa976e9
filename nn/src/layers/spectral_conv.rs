//! Spectral convolutions, the global layer of the Fourier neural operator (Li et al.,
//! 2021): transform to frequencies, multiply the lowest `modes` frequencies by learned
//! complex matrices (one C_in × C_out matrix per kept frequency), drop the rest,
//! transform back. The layer is a convolution with a band-limited kernel, so it
//! applies unchanged at any grid resolution.
//!
//! Channels come last, as for every pointwise layer: `[batch, points, channels]` in
//! 1-D, `[batch, rows, cols, channels]` in 2-D, so that a Fourier block needs no
//! transposes. The complex weights are stored with the kept frequencies first and
//! the (real, imaginary) pair last: `[modes, C_in, C_out, 2]` in 1-D and
//! `[2·modes_rows, modes_cols, C_in, C_out, 2]` in 2-D (the low rows, then the rows of
//! negative frequency). Initialised like the reference code: both parts uniform on
//! [0, 1/(C_in·C_out)).

use crate::param::{Param, Scope};
use crate::Module;
use autograd::Var;
use std::sync::Mutex;
use tensor::fft::Norm;
use tensor::{error::fmt_shape, Element, Error, Result, Rng, Tensor};

/// How the 1-D layer moves to frequencies and back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpectralPath {
    /// rfft, keep the lowest modes, irfft: O(S log S) per channel.
    Fft,
    /// The same map as a product with the S × 2·modes truncated DFT matrix (and its
    /// inverse): O(S·modes) per channel but through the matrix-product kernel, which
    /// wins while modes is small against S.
    Dft,
    /// [`SpectralPath::Dft`] when modes ≤ 2·log₂ S, else [`SpectralPath::Fft`].
    Auto,
}

impl SpectralPath {
    fn resolve(self, points: usize, modes: usize) -> SpectralPath {
        match self {
            SpectralPath::Auto => {
                let log2 = usize::BITS - points.max(1).leading_zeros();
                if modes <= 2 * log2 as usize {
                    SpectralPath::Dft
                } else {
                    SpectralPath::Fft
                }
            }
            p => p,
        }
    }
}

/// The truncated DFT matrices of one grid size: forward `[2M, S]` (rows cos, then −sin)
/// and inverse `[S, 2M]` (the irfft of M bins with the rest zero).
fn dft_bases<T: Element>(points: usize, modes: usize) -> Result<(Tensor<T>, Tensor<T>)> {
    let s = points as f64;
    tensor::layout::checked_numel("SpectralConv1d", &[2, modes, points])?;
    let mut fwd = vec![0.0; points * 2 * modes];
    let mut inv = vec![0.0; 2 * modes * points];
    for j in 0..points {
        for k in 0..modes {
            // (j·k) mod S keeps the angle small, so the basis is accurate at any S.
            let angle = 2.0 * std::f64::consts::PI * ((j * k) % points) as f64 / s;
            let (sin, cos) = angle.sin_cos();
            fwd[k * points + j] = cos;
            fwd[(modes + k) * points + j] = -sin;
            let weight = if k == 0 || 2 * k == points { 1.0 } else { 2.0 } / s;
            inv[j * 2 * modes + k] = weight * cos;
            inv[j * 2 * modes + modes + k] = -weight * sin;
        }
    }
    Ok((
        Tensor::from_vec(fwd, &[2 * modes, points])?.cast(),
        Tensor::from_vec(inv, &[points, 2 * modes])?.cast(),
    ))
}

/// Multiplies kept frequencies by complex matrices: `x` is `[M, B, 2·C_in]` (real
/// parts, then imaginary), `w` is `[M, C_in, C_out, 2]`; returns `[M, B, 2·C_out]`.
/// One batched product with the real 2C_in × 2C_out form [[Wr, Wi], [−Wi, Wr]].
fn mix<T: Element>(x: &Var<T>, w: &Var<T>) -> Result<Var<T>> {
    let wr = w.index_axis(-1, 0)?;
    let wi = w.index_axis(-1, 1)?;
    let top = Var::cat(&[&wr, &wi], -1)?;
    let bottom = Var::cat(&[&wi.neg()?, &wr], -1)?;
    x.matmul(&Var::cat(&[&top, &bottom], 1)?)
}

fn spectral_weight<T: Element>(
    scope: &Scope<T>,
    shape: &[usize],
    cin: usize,
    cout: usize,
    rng: &mut Rng,
) -> Result<Param<T>> {
    let scale = 1.0 / (cin * cout) as f64;
    scope.param("weight", Tensor::rand_uniform(shape, 0.0, scale, rng)?)
}

fn check_sizes(op: &'static str, sizes: &[usize]) -> Result<()> {
    if sizes.contains(&0) {
        return Err(Error::value(
            op,
            format!("channels and modes must be positive, got {sizes:?}"),
        ));
    }
    Ok(())
}

/// Truncated DFT matrices (forward, inverse) per grid size, built on first use.
type BasisCache<T> = Mutex<Vec<(usize, Tensor<T>, Tensor<T>)>>;

/// The 1-D spectral convolution `[B, S, C_in] → [B, S, C_out]`.
///
/// ```
/// use autograd::Var;
/// use nn::{Module, ParamStore, SpectralConv1d, SpectralPath};
/// use tensor::{Rng, Tensor};
/// # fn main() -> tensor::Result<()> {
/// let store = ParamStore::<f64>::new();
/// let layer = |name, path| SpectralConv1d::new(&store.root().sub(name), 2, 3, 5, path, &mut Rng::new(0));
/// let (fft, dft) = (layer("fft", SpectralPath::Fft)?, layer("dft", SpectralPath::Dft)?);
/// assert_eq!(fft.sizes(), (5, 2, 3)); // modes, C_in, C_out
/// let x = Var::constant(Tensor::rand_normal(&[4, 16, 2], 0.0, 1.0, &mut Rng::new(1))?);
/// let (a, b) = (fft.forward(&x)?, dft.forward(&x)?);
/// assert_eq!(a.shape(), &[4, 16, 3]);
/// // The two paths compute the same map (same seed, same weights).
/// assert!(a.value().sub(b.value())?.abs().max_all()? < 1e-12);
/// # Ok(())
/// # }
/// ```
pub struct SpectralConv1d<T: Element> {
    /// Complex weights `[modes, C_in, C_out, 2]`.
    pub weight: Param<T>,
    path: SpectralPath,
    bases: BasisCache<T>,
}

impl<T: Element> SpectralConv1d<T> {
    /// A layer keeping `modes` frequencies, with its weight in `scope`.
    pub fn new(
        scope: &Scope<T>,
        cin: usize,
        cout: usize,
        modes: usize,
        path: SpectralPath,
        rng: &mut Rng,
    ) -> Result<Self> {
        check_sizes("SpectralConv1d", &[cin, cout, modes])?;
        Ok(SpectralConv1d {
            weight: spectral_weight(scope, &[modes, cin, cout, 2], cin, cout, rng)?,
            path,
            bases: Mutex::new(Vec::new()),
        })
    }

    /// (modes, C_in, C_out).
    pub fn sizes(&self) -> (usize, usize, usize) {
        let s = self.weight.shape();
        (s[0], s[1], s[2])
    }

    fn bases(&self, points: usize) -> Result<(Tensor<T>, Tensor<T>)> {
        let mut cache = self.bases.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, f, i)) = cache.iter().find(|(s, _, _)| *s == points) {
            return Ok((f.clone(), i.clone()));
        }
        let (f, i) = dft_bases(points, self.sizes().0)?;
        cache.push((points, f.clone(), i.clone()));
        Ok((f, i))
    }
}

impl<T: Element> Module<T> for SpectralConv1d<T> {
    fn forward(&self, x: &Var<T>) -> Result<Var<T>> {
        let (modes, cin, cout) = self.sizes();
        let shape = x.shape().to_vec();
        if shape.len() != 3 || shape[2] != cin || shape[1] / 2 + 1 < modes {
            return Err(Error::shape(
                "SpectralConv1d",
                format!(
                    "input {} must be [batch, points, {cin}] with at least {} points for {modes} modes",
                    fmt_shape(&shape),
                    2 * (modes - 1)
                ),
            ));
        }
        let (b, s) = (shape[0], shape[1]);
        let w = self.weight.var();
        match self.path.resolve(s, modes) {
            SpectralPath::Dft => {
                let (fwd, inv) = self.bases(s)?;
                // [2M, S] · [B, S, C] → [B, 2M, C] → [M, B, 2C]
                let spec = Var::constant(fwd)
                    .matmul(x)?
                    .reshape(&[b, 2, modes, cin])?
                    .permute(&[2, 0, 1, 3])?
                    .reshape(&[modes, b, 2 * cin])?;
                let out = mix(&spec, &w)?
                    .reshape(&[modes, b, 2, cout])?
                    .permute(&[1, 2, 0, 3])?
                    .reshape(&[b, 2 * modes, cout])?;
                Var::constant(inv).matmul(&out)
            }
            _ => {
                // [B, S, C] → [B, M, C, 2] → [M, B, 2, C]
                let spec = x
                    .rfft(1, Norm::Backward)?
                    .narrow(1, 0, modes)?
                    .permute(&[1, 0, 3, 2])?
                    .reshape(&[modes, b, 2 * cin])?;
                mix(&spec, &w)?
                    .reshape(&[modes, b, 2, cout])?
                    .permute(&[1, 0, 3, 2])?
                    .irfft(1, s, Norm::Backward)
            }
        }
    }
}

/// The 2-D spectral convolution `[B, H, W, C_in] → [B, H, W, C_out]`, keeping
/// frequencies |k_rows| < modes_rows (both signs) and 0 ≤ k_cols < modes_cols.
pub struct SpectralConv2d<T: Element> {
    /// Complex weights `[2·modes_rows, modes_cols, C_in, C_out, 2]`.
    pub weight: Param<T>,
}

impl<T: Element> SpectralConv2d<T> {
    /// A layer keeping `(modes_rows, modes_cols)` frequencies, weight in `scope`.
    pub fn new(
        scope: &Scope<T>,
        cin: usize,
        cout: usize,
        (m1, m2): (usize, usize),
        rng: &mut Rng,
    ) -> Result<Self> {
        check_sizes("SpectralConv2d", &[cin, cout, m1, m2])?;
        Ok(SpectralConv2d {
            weight: spectral_weight(scope, &[2 * m1, m2, cin, cout, 2], cin, cout, rng)?,
        })
    }

    /// (modes_rows, modes_cols, C_in, C_out).
    pub fn sizes(&self) -> (usize, usize, usize, usize) {
        let s = self.weight.shape();
        (s[0] / 2, s[1], s[2], s[3])
    }
}

impl<T: Element> Module<T> for SpectralConv2d<T> {
    fn forward(&self, x: &Var<T>) -> Result<Var<T>> {
        let (m1, m2, cin, cout) = self.sizes();
        let shape = x.shape().to_vec();
        if shape.len() != 4 || shape[3] != cin || shape[1] < 2 * m1 || shape[2] / 2 + 1 < m2 {
            return Err(Error::shape(
                "SpectralConv2d",
                format!(
                    "input {} must be [batch, rows ≥ {}, cols ≥ {}, {cin}] for modes ({m1}, {m2})",
                    fmt_shape(&shape),
                    2 * m1,
                    2 * (m2 - 1)
                ),
            ));
        }
        let (b, h, wd) = (shape[0], shape[1], shape[2]);
        let modes = 2 * m1 * m2;
        // [B, H, W/2+1, C, 2], the kept rows and columns → [2m1·m2, B, 2C]
        let spec = x.rfft2((1, 2), Norm::Backward)?.narrow(2, 0, m2)?;
        let kept = Var::cat(&[&spec.narrow(1, 0, m1)?, &spec.narrow(1, h - m1, m1)?], 1)?
            .permute(&[1, 2, 0, 4, 3])?
            .reshape(&[modes, b, 2 * cin])?;
        let w = self.weight.var().reshape(&[modes, cin, cout, 2])?;
        // → [B, 2m1, m2, C_out, 2]
        let out = mix(&kept, &w)?
            .reshape(&[2 * m1, m2, b, 2, cout])?
            .permute(&[2, 0, 1, 4, 3])?;
        let (low, high) = (out.narrow(1, 0, m1)?, out.narrow(1, m1, m1)?);
        let full = if h > 2 * m1 {
            let gap = Var::constant(Tensor::zeros(&[b, h - 2 * m1, m2, cout, 2])?);
            Var::cat(&[&low, &gap, &high], 1)?
        } else {
            Var::cat(&[&low, &high], 1)?
        };
        full.irfft2((1, 2), (h, wd), Norm::Backward)
    }
}
