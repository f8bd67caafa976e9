//! Spectral convolutions and the Fourier neural operator: against naive DFT loops in
//! f64, the FFT and truncated-DFT paths against each other, the symmetries of a
//! convolution with a band-limited kernel (translation equivariance, resolution
//! invariance), gradients by finite differences, and shape errors.

use autograd::GradcheckOptions;
use autograd::Var;
use nn::check::gradcheck_params;

/// The strict tolerances with `directions` random directions from `seed` (used
/// when the parameters are too many for the full Jacobian).
fn opts(directions: usize, seed: u64) -> GradcheckOptions {
    GradcheckOptions {
        directions,
        seed,
        ..GradcheckOptions::strict()
    }
}
use nn::{
    Activation, Fno, FnoConfig, Module, ParamStore, SpectralConv1d, SpectralConv2d, SpectralPath,
};
use proptest::prelude::*;
use std::f64::consts::PI;
use tensor::{Rng, Tensor};

fn input(shape: &[usize], seed: u64) -> Tensor<f64> {
    Tensor::rand_normal(shape, 0.0, 1.0, &mut Rng::new(seed)).unwrap()
}

fn conv1d(
    cin: usize,
    cout: usize,
    modes: usize,
    path: SpectralPath,
) -> (ParamStore<f64>, SpectralConv1d<f64>) {
    let store = ParamStore::new();
    // Normal weights instead of the layer's small positive ones, so that every
    // complex product matters.
    let layer =
        SpectralConv1d::new(&store.root(), cin, cout, modes, path, &mut Rng::new(3)).unwrap();
    layer.weight.set(input(&[modes, cin, cout, 2], 4)).unwrap();
    (store, layer)
}

/// y[b, o, j] = (1/S) Σ_k c_k Re(e^{2πijk/S} Σ_i X[b, i, k] W[k, i, o]) with X the DFT of
/// x, by loops.
fn naive_1d(x: &Tensor<f64>, w: &Tensor<f64>) -> Vec<f64> {
    let (b, cin, s) = (x.shape()[0], x.shape()[1], x.shape()[2]);
    let (modes, cout) = (w.shape()[0], w.shape()[2]);
    let xv = x.to_vec();
    let wv = w.to_vec();
    let mut out = vec![0.0; b * cout * s];
    for bb in 0..b {
        for k in 0..modes {
            // X[i, k]
            let spec: Vec<(f64, f64)> = (0..cin)
                .map(|i| {
                    (0..s).fold((0.0, 0.0), |(re, im), j| {
                        let a = -2.0 * PI * (j * k) as f64 / s as f64;
                        let v = xv[(bb * cin + i) * s + j];
                        (re + v * a.cos(), im + v * a.sin())
                    })
                })
                .collect();
            for o in 0..cout {
                let (mut yr, mut yi) = (0.0, 0.0);
                for (i, &(xr, xi)) in spec.iter().enumerate() {
                    let at = ((k * cin + i) * cout + o) * 2;
                    let (wr, wi) = (wv[at], wv[at + 1]);
                    yr += xr * wr - xi * wi;
                    yi += xr * wi + xi * wr;
                }
                let c = if k == 0 || 2 * k == s { 1.0 } else { 2.0 };
                for j in 0..s {
                    let a = 2.0 * PI * (j * k) as f64 / s as f64;
                    out[(bb * cout + o) * s + j] += c * (yr * a.cos() - yi * a.sin()) / s as f64;
                }
            }
        }
    }
    out
}

/// The layers take channels last; the naive references and the shift helper work
/// channels first.
fn to_last(x: &Tensor<f64>) -> Tensor<f64> {
    let nd = x.ndim() as isize;
    let mut axes: Vec<isize> = vec![0];
    axes.extend(2..nd);
    axes.push(1);
    x.permute(&axes).unwrap().contiguous()
}

fn to_first(x: &Tensor<f64>) -> Tensor<f64> {
    let nd = x.ndim() as isize;
    let mut axes: Vec<isize> = vec![0, nd - 1];
    axes.extend(1..nd - 1);
    x.permute(&axes).unwrap().contiguous()
}

/// The layer applied to a channels-first input, the result channels first.
fn apply_first(layer: &dyn Module<f64>, x: &Tensor<f64>) -> Tensor<f64> {
    to_first(layer.forward(&Var::constant(to_last(x))).unwrap().value())
}

fn close(a: &[f64], b: &[f64], tol: f64) -> Result<(), String> {
    let scale = b.iter().fold(1.0f64, |m, v| m.max(v.abs()));
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        if (x - y).abs() > tol * scale {
            return Err(format!("element {i}: {x} vs {y}"));
        }
    }
    Ok(())
}

#[test]
fn spectral_conv_1d_matches_the_naive_dft_on_both_paths() {
    // Even and odd lengths, and every mode up to the Nyquist bin.
    for &(s, modes) in &[(16usize, 5usize), (15, 8), (12, 7), (9, 1)] {
        let x = input(&[2, 3, s], s as u64);
        for path in [SpectralPath::Fft, SpectralPath::Dft] {
            let (_, layer) = conv1d(3, 4, modes, path);
            let y = apply_first(&layer, &x);
            assert_eq!(y.shape(), &[2, 4, s]);
            let want = naive_1d(&x, &layer.weight.value());
            close(&y.to_vec(), &want, 1e-12)
                .unwrap_or_else(|e| panic!("S {s} modes {modes} {path:?}: {e}"));
        }
    }
}

/// (y[b, o, h, w]) by the 2-D DFT with loops, keeping rows |k1| < m1 and cols k2 < m2.
fn naive_2d(x: &Tensor<f64>, w: &Tensor<f64>) -> Vec<f64> {
    let (b, cin, h, wd) = (x.shape()[0], x.shape()[1], x.shape()[2], x.shape()[3]);
    let (m1, m2, cout) = (w.shape()[0] / 2, w.shape()[1], w.shape()[3]);
    let (xv, wv) = (x.to_vec(), w.to_vec());
    let mut out = vec![0.0; b * cout * h * wd];
    for bb in 0..b {
        for r in 0..2 * m1 {
            let k1 = if r < m1 { r } else { h - 2 * m1 + r };
            for k2 in 0..m2 {
                let spec: Vec<(f64, f64)> = (0..cin)
                    .map(|i| {
                        let mut acc = (0.0, 0.0);
                        for p in 0..h {
                            for q in 0..wd {
                                let a = -2.0
                                    * PI
                                    * ((p * k1) as f64 / h as f64 + (q * k2) as f64 / wd as f64);
                                let v = xv[((bb * cin + i) * h + p) * wd + q];
                                acc.0 += v * a.cos();
                                acc.1 += v * a.sin();
                            }
                        }
                        acc
                    })
                    .collect();
                for o in 0..cout {
                    let (mut yr, mut yi) = (0.0, 0.0);
                    for (i, &(xr, xi)) in spec.iter().enumerate() {
                        let at = ((((r * m2) + k2) * cin + i) * cout + o) * 2;
                        yr += xr * wv[at] - xi * wv[at + 1];
                        yi += xr * wv[at + 1] + xi * wv[at];
                    }
                    let c = if k2 == 0 || 2 * k2 == wd { 1.0 } else { 2.0 };
                    for p in 0..h {
                        for q in 0..wd {
                            let a = 2.0
                                * PI
                                * ((p * k1) as f64 / h as f64 + (q * k2) as f64 / wd as f64);
                            out[((bb * cout + o) * h + p) * wd + q] +=
                                c * (yr * a.cos() - yi * a.sin()) / (h * wd) as f64;
                        }
                    }
                }
            }
        }
    }
    out
}

#[test]
fn spectral_conv_2d_matches_the_naive_dft() {
    // The zero (k2 = 0) column's imaginary parts are dropped by the inverse real
    // transform, so the naive sum has to treat k2 = 0 the same way: it does, since
    // c·Re(...) with c = 1 is what irfft computes for a lone bin.
    for &(h, wd, m1, m2) in &[(6usize, 5usize, 2usize, 2usize), (4, 8, 2, 3), (7, 6, 3, 4)] {
        let store = ParamStore::new();
        let layer = SpectralConv2d::new(&store.root(), 2, 3, (m1, m2), &mut Rng::new(1)).unwrap();
        layer.weight.set(input(&[2 * m1, m2, 2, 3, 2], 9)).unwrap();
        let x = input(&[2, 2, h, wd], 8);
        let y = apply_first(&layer, &x);
        assert_eq!(y.shape(), &[2, 3, h, wd]);
        close(&y.to_vec(), &naive_2d(&x, &layer.weight.value()), 1e-12)
            .unwrap_or_else(|e| panic!("{h}×{wd} modes ({m1}, {m2}): {e}"));
    }
}

fn roll_last(x: &Tensor<f64>, shift: usize) -> Tensor<f64> {
    let s = *x.shape().last().unwrap();
    let v = x.to_vec();
    let mut out = vec![0.0; v.len()];
    for (row, chunk) in v.chunks(s).enumerate() {
        for j in 0..s {
            out[row * s + (j + shift) % s] = chunk[j];
        }
    }
    Tensor::from_vec(out, x.shape()).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// A convolution commutes with circular shifts.
    #[test]
    fn spectral_conv_1d_is_translation_equivariant(
        s in 8usize..40, shift in 0usize..40, seed in 0u64..1000, dft in any::<bool>()
    ) {
        let modes = (s / 2 + 1).min(6);
        let path = if dft { SpectralPath::Dft } else { SpectralPath::Fft };
        let (_, layer) = conv1d(2, 2, modes, path);
        let x = input(&[1, 2, s], seed);
        let shifted = roll_last(&x, shift % s);
        let y = apply_first(&layer, &x);
        let ys = apply_first(&layer, &shifted);
        close(&ys.to_vec(), &roll_last(&y, shift % s).to_vec(), 1e-11).map_err(TestCaseError::fail)?;
    }

    /// For an input band-limited below the kept modes, the output on a grid twice as
    /// fine, subsampled, is the output on the coarse grid: the layer does not depend
    /// on the resolution.
    #[test]
    fn spectral_conv_1d_is_resolution_invariant(
        s in 12usize..32, seed in 0u64..1000, dft in any::<bool>()
    ) {
        let modes = 5;
        let path = if dft { SpectralPath::Dft } else { SpectralPath::Fft };
        let (_, layer) = conv1d(1, 2, modes, path);
        let mut rng = Rng::new(seed);
        let coef: Vec<(f64, f64)> = (0..4).map(|_| (rng.normal(), rng.normal())).collect();
        let sample = |n: usize| {
            let v: Vec<f64> = (0..n)
                .map(|j| {
                    let x = j as f64 / n as f64;
                    coef.iter().enumerate().map(|(k, (a, b))| {
                        let t = 2.0 * PI * k as f64 * x;
                        a * t.cos() + b * t.sin()
                    }).sum()
                })
                .collect();
            Tensor::from_vec(v, &[1, 1, n]).unwrap()
        };
        let coarse = apply_first(&layer, &sample(s)).to_vec();
        let fine = apply_first(&layer, &sample(2 * s)).to_vec();
        let every_other: Vec<f64> = (0..2).flat_map(|o| (0..s).map(move |j| (o, j)))
            .map(|(o, j)| fine[o * 2 * s + 2 * j])
            .collect();
        close(&every_other, &coarse, 1e-11).map_err(TestCaseError::fail)?;
    }
}

#[test]
fn spectral_conv_gradients_match_finite_differences() {
    for path in [SpectralPath::Fft, SpectralPath::Dft] {
        let (store, layer) = conv1d(2, 3, 4, path);
        let x = Var::leaf(input(&[2, 10, 2], 5));
        let target = Var::constant(input(&[2, 10, 3], 6));
        let loss = || layer.forward(&x)?.sub(&target)?.square()?.sum_all();
        assert!(gradcheck_params(&store, loss, &opts(3, 1)).unwrap().checks > 0);
        let r = autograd::gradcheck(
            |v| layer.forward(&v[0])?.tanh(),
            &[input(&[1, 9, 2], 7)],
            &autograd::GradcheckOptions::default(),
        );
        assert!(r.is_ok(), "{path:?}: {r:?}");
    }
    let store = ParamStore::new();
    let layer = SpectralConv2d::new(&store.root(), 2, 2, (2, 2), &mut Rng::new(2)).unwrap();
    let x = Var::constant(input(&[2, 6, 7, 2], 5));
    let loss = || layer.forward(&x)?.square()?.sum_all();
    assert!(gradcheck_params(&store, loss, &opts(3, 2)).unwrap().checks > 0);
    let r = autograd::gradcheck(
        |v| layer.forward(&v[0])?.tanh(),
        &[input(&[1, 4, 5, 2], 8)],
        &autograd::GradcheckOptions::default(),
    );
    assert!(r.is_ok(), "2-D: {r:?}");
}

fn small(modes: Vec<usize>) -> FnoConfig {
    FnoConfig {
        in_channels: 1,
        out_channels: 2,
        width: 4,
        modes,
        layers: 2,
        projection: 6,
        activation: Activation::Gelu,
        path: SpectralPath::Auto,
    }
}

#[test]
fn fno_gradients_shapes_and_errors() {
    for (modes, shape) in [(vec![3], vec![2, 8, 1]), (vec![2, 2], vec![2, 5, 6, 1])] {
        let store = ParamStore::new();
        let fno = Fno::new(&store.root(), small(modes.clone()), &mut Rng::new(1)).unwrap();
        let x = Var::constant(input(&shape, 2));
        let y = fno.forward(&x).unwrap();
        let mut want = shape.clone();
        *want.last_mut().unwrap() = 2;
        assert_eq!(y.shape(), want.as_slice());
        assert_eq!(
            *fno.features(&x).unwrap().shape().last().unwrap(),
            6,
            "features end in the projection width"
        );
        let loss = || fno.forward(&x)?.square()?.mean_all();
        assert!(
            gradcheck_params(&store, loss, &opts(2, 3)).unwrap().checks > 0,
            "modes {modes:?}"
        );
    }
    let store = ParamStore::new();
    let fno = Fno::new(&store.root(), small(vec![3]), &mut Rng::new(1)).unwrap();
    // Wrong channel count, wrong rank, too few points for the modes.
    for bad in [vec![2, 8, 2], vec![8, 1], vec![2, 3, 1]] {
        let e = fno.forward(&Var::constant(Tensor::zeros(&bad).unwrap()));
        assert!(e.is_err(), "{bad:?} accepted");
    }
    assert!(Fno::<f64>::new(&store.root().sub("x"), small(vec![]), &mut Rng::new(1)).is_err());
    assert!(Fno::<f64>::new(
        &store.root().sub("y"),
        small(vec![1, 2, 3]),
        &mut Rng::new(1)
    )
    .is_err());
    assert!(SpectralConv1d::<f64>::new(
        &store.root().sub("z"),
        1,
        1,
        0,
        SpectralPath::Fft,
        &mut Rng::new(1)
    )
    .is_err());
}
