//! FFT against a naive O(n²) DFT in f64 for every length 1..=64 and some large and
//! prime ones; round trips, Parseval, linearity, Hermitian symmetry, real transforms,
//! normalisations, axes and errors.

use crate::common;

use common::config;
use proptest::prelude::*;
use tensor::fft::Norm;
use tensor::{Rng, Tensor};

/// The naive DFT of complex (re, im) pairs.
fn dft(x: &[(f64, f64)], inverse: bool) -> Vec<(f64, f64)> {
    let n = x.len();
    let sign = if inverse { 1.0 } else { -1.0 };
    (0..n)
        .map(|k| {
            x.iter()
                .enumerate()
                .fold((0.0, 0.0), |(sr, si), (j, &(r, i))| {
                    // Reduce jk mod n before the angle, to keep it accurate.
                    let a = sign * 2.0 * std::f64::consts::PI * ((j * k) % n) as f64 / n as f64;
                    (
                        sr + r * a.cos() - i * a.sin(),
                        si + r * a.sin() + i * a.cos(),
                    )
                })
        })
        .collect()
}

fn complex(n: usize, seed: u64) -> Tensor<f64> {
    Tensor::rand_normal(&[n, 2], 0.0, 1.0, &mut Rng::new(seed)).unwrap()
}

fn pairs(t: &Tensor<f64>) -> Vec<(f64, f64)> {
    t.to_vec().chunks(2).map(|c| (c[0], c[1])).collect()
}

fn close(a: &[(f64, f64)], b: &[(f64, f64)], tol: f64) {
    let scale = b
        .iter()
        .map(|(r, i)| r.abs().max(i.abs()))
        .fold(1.0, f64::max);
    for (k, (x, y)) in a.iter().zip(b).enumerate() {
        assert!(
            (x.0 - y.0).abs() <= tol * scale && (x.1 - y.1).abs() <= tol * scale,
            "bin {k}: {x:?} vs {y:?}"
        );
    }
}

/// The f32 transforms (whose 64-point complex plan is a register codelet, the
/// rfft of 128 points running it, and whose 1024-, 2048- and 4096-point plans are
/// four-step, the rfft of 4096 running the 2048) against the DFT in f64, to 2e-6
/// of the largest bin (a few roundings at 2⁻²⁴ through log₂ n levels).
#[test]
fn f32_transforms_match_the_dft() {
    for n in [8usize, 64, 128, 1024, 2048, 4096] {
        let x = complex(n, 3 * n as u64);
        let x32 = x.cast::<f32>();
        let exact: Vec<(f64, f64)> = pairs(&x32.cast::<f64>());
        let got = |t: Tensor<f32>| pairs(&t.cast::<f64>());
        close(
            &got(x32.fft(0, Norm::Backward).unwrap()),
            &dft(&exact, false),
            2e-6,
        );
        let inv = dft(&exact, true);
        let inv: Vec<(f64, f64)> = inv
            .iter()
            .map(|&(r, i)| (r / n as f64, i / n as f64))
            .collect();
        close(&got(x32.ifft(0, Norm::Backward).unwrap()), &inv, 2e-6);
        let real = x32.narrow(1, 0, 1).unwrap().squeeze(1).unwrap();
        let as_complex: Vec<(f64, f64)> = exact.iter().map(|&(r, _)| (r, 0.0)).collect();
        let want = dft(&as_complex, false);
        close(
            &got(real.rfft(0, Norm::Backward).unwrap()),
            &want[..n / 2 + 1],
            2e-6,
        );
        // And back (the irfft of 2048 and 4096 points runs the four-step of half
        // the length, which writes the samples as pairs): to 2e-6 of the largest
        // sample, the same roundings again, each spread by the 1/n over n samples.
        let spectrum = real.rfft(0, Norm::Backward).unwrap();
        let back = spectrum.irfft(0, n, Norm::Backward).unwrap().cast::<f64>();
        let (back, x) = (back.to_vec(), real.cast::<f64>().to_vec());
        let largest = x.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let err = back
            .iter()
            .zip(&x)
            .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
        assert!(
            err <= 2e-6 * largest,
            "irfft(rfft(x)) of {n}: error {err} against {largest}"
        );
    }
}

#[test]
fn every_length_up_to_64_and_large_and_prime_lengths_match_the_dft() {
    let lengths: Vec<usize> = (1..=64)
        .chain([97, 127, 128, 243, 250, 1000, 1009, 2048, 3001, 4096])
        .collect();
    for n in lengths {
        let x = complex(n, n as u64);
        let want = dft(&pairs(&x), false);
        // The naive DFT itself carries O(n ε) error; allow 1e-12 relative at n ≈ 3000.
        let tol = 1e-13 * (n as f64).max(8.0).log2();
        close(&pairs(&x.fft(0, Norm::Backward).unwrap()), &want, tol);
        let back = x
            .fft(0, Norm::Backward)
            .unwrap()
            .ifft(0, Norm::Backward)
            .unwrap();
        close(&pairs(&back), &pairs(&x), tol);
        let inv = dft(&pairs(&x), true);
        let got: Vec<(f64, f64)> = pairs(&x.ifft(0, Norm::Backward).unwrap())
            .iter()
            .map(|(r, i)| (r * n as f64, i * n as f64))
            .collect();
        close(&got, &inv, tol);
    }
}

proptest! {
    #![proptest_config(config(48))]

    #[test]
    fn parseval_linearity_and_normalisations(n in 1usize..200, seed in any::<u64>(), a in -3.0f64..3.0) {
        let x = complex(n, seed);
        let y = complex(n, seed ^ 1);
        let fx = x.fft(0, Norm::Backward).unwrap();
        // Parseval: Σ|X|² = n Σ|x|².
        let ex = x.square().sum_all().item().unwrap();
        let efx = fx.square().sum_all().item().unwrap();
        prop_assert!((efx - n as f64 * ex).abs() <= 1e-11 * efx.max(1.0));
        // Linearity.
        let lhs = x.mul_scalar(a).add(&y).unwrap().fft(0, Norm::Backward).unwrap();
        let rhs = fx.mul_scalar(a).add(&y.fft(0, Norm::Backward).unwrap()).unwrap();
        close(&pairs(&lhs), &pairs(&rhs), 1e-12);
        // Ortho is unitary; forward scales by 1/n.
        let o = x.fft(0, Norm::Ortho).unwrap();
        prop_assert!((o.square().sum_all().item().unwrap() - ex).abs() <= 1e-11 * ex.max(1.0));
        close(&pairs(&x.fft(0, Norm::Forward).unwrap()), &pairs(&fx.div_scalar(n as f64)), 1e-12);
        close(&pairs(&o.ifft(0, Norm::Ortho).unwrap()), &pairs(&x), 1e-12);
        close(&pairs(&x.fft(0, Norm::Forward).unwrap().ifft(0, Norm::Forward).unwrap()), &pairs(&x), 1e-12);
    }

    #[test]
    fn real_transforms_are_the_hermitian_half_and_round_trip(n in 1usize..300, seed in any::<u64>()) {
        let x = Tensor::<f64>::rand_normal(&[n], 0.0, 1.0, &mut Rng::new(seed)).unwrap();
        let full = x.unsqueeze(-1).unwrap().pad(&[(0, 0), (0, 1)], 0.0).unwrap().fft(0, Norm::Backward).unwrap();
        let half = x.rfft(0, Norm::Backward).unwrap();
        prop_assert_eq!(half.shape(), &[n / 2 + 1, 2]);
        close(&pairs(&half), &pairs(&full)[..n / 2 + 1], 1e-12);
        // Hermitian symmetry of the full spectrum: X_{n−k} = conj X_k.
        let f = pairs(&full);
        for k in 1..n { prop_assert!((f[n - k].0 - f[k].0).abs() < 1e-10 && (f[n - k].1 + f[k].1).abs() < 1e-10); }
        let back = half.irfft(0, n, Norm::Backward).unwrap();
        prop_assert_eq!(back.shape(), &[n]);
        for (a, b) in back.to_vec().iter().zip(x.to_vec()) { prop_assert!((a - b).abs() < 1e-12); }
        let o = x.rfft(0, Norm::Ortho).unwrap().irfft(0, n, Norm::Ortho).unwrap();
        for (a, b) in o.to_vec().iter().zip(x.to_vec()) { prop_assert!((a - b).abs() < 1e-12); }
    }
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn irfft_of_any_bins_is_numpys_inverse(n in 1usize..160, extra in 0usize..4, seed in any::<u64>()) {
        // Fewer, exactly n/2 + 1, or more bins than needed, with non-zero imaginary
        // parts everywhere: the reference builds the Hermitian spectrum from bins
        // 0..=n/2 (missing ones zero, the imaginary parts of bins 0 and n/2 dropped)
        // and takes the naive inverse DFT.
        let count = (n / 2 + extra).max(2) - 1;
        let bins = complex(count, seed);
        let b = pairs(&bins);
        let get = |k: usize| if k < count { b[k] } else { (0.0, 0.0) };
        let mut full = vec![(0.0, 0.0); n];
        full[0] = (get(0).0, 0.0);
        for k in 1..n {
            full[k] = if k < n - k {
                get(k)
            } else if k == n - k {
                (get(k).0, 0.0)
            } else {
                let (r, i) = get(n - k);
                (r, -i)
            };
        }
        let want: Vec<f64> = dft(&full, true).iter().map(|&(r, _)| r / n as f64).collect();
        let got = bins.irfft(0, n, Norm::Backward).unwrap().to_vec();
        prop_assert_eq!(got.len(), n);
        for (g, w) in got.iter().zip(&want) {
            prop_assert!((g - w).abs() < 1e-12, "n {}, {} bins: {} against {}", n, count, g, w);
        }
    }
}

#[test]
fn transforms_along_inner_axes_and_in_two_dimensions() {
    let mut rng = Rng::new(5);
    let x = Tensor::<f64>::rand_normal(&[6, 5, 4, 2], 0.0, 1.0, &mut rng).unwrap();
    // Along axis 1: each [i, :, j] column is a length-5 DFT.
    let f = x.fft(1, Norm::Backward).unwrap();
    for i in 0..6 {
        for j in 0..4 {
            let col: Vec<(f64, f64)> = (0..5)
                .map(|k| (x.get(&[i, k, j, 0]).unwrap(), x.get(&[i, k, j, 1]).unwrap()))
                .collect();
            let got: Vec<(f64, f64)> = (0..5)
                .map(|k| (f.get(&[i, k, j, 0]).unwrap(), f.get(&[i, k, j, 1]).unwrap()))
                .collect();
            close(&got, &dft(&col, false), 1e-13);
        }
    }
    // 2-D: fft2 over (0, 2) equals two 1-D passes, and rfft2/irfft2 round trip.
    let two = x.fft2((0, 2), Norm::Ortho).unwrap();
    let step = x.fft(2, Norm::Ortho).unwrap().fft(0, Norm::Ortho).unwrap();
    close(&pairs(&two), &pairs(&step), 1e-13);
    close(
        &pairs(&two.ifft2((0, 2), Norm::Ortho).unwrap()),
        &pairs(&x),
        1e-13,
    );
    let r = Tensor::<f64>::rand_normal(&[3, 8, 6], 0.0, 1.0, &mut rng).unwrap();
    let spec = r.rfft2((1, 2), Norm::Backward).unwrap();
    assert_eq!(spec.shape(), &[3, 8, 4, 2]);
    let back = spec.irfft2((1, 2), (8, 6), Norm::Backward).unwrap();
    for (a, b) in back.to_vec().iter().zip(r.to_vec()) {
        assert!((a - b).abs() < 1e-12);
    }
    // The real transforms along an inner axis (moved last and back) round trip, and
    // equal the transforms of the axis made last by hand.
    let inner = r.rfft(1, Norm::Ortho).unwrap();
    assert_eq!(inner.shape(), &[3, 5, 6, 2]);
    let moved = r.transpose(1, 2).unwrap().rfft(2, Norm::Ortho).unwrap();
    close(
        &pairs(&inner.transpose(1, 2).unwrap().contiguous()),
        &pairs(&moved),
        1e-13,
    );
    let round = inner.irfft(1, 8, Norm::Ortho).unwrap();
    assert_eq!(round.shape(), &[3, 8, 6]);
    for (a, b) in round.to_vec().iter().zip(r.to_vec()) {
        assert!((a - b).abs() < 1e-12);
    }
    // f32 agrees with f64 to single precision.
    let x32 = x
        .cast::<f32>()
        .fft(1, Norm::Backward)
        .unwrap()
        .cast::<f64>();
    close(&pairs(&x32), &pairs(&f), 2e-6);
}

#[test]
fn bad_calls_are_named() {
    let real = Tensor::<f64>::zeros(&[4, 3]).unwrap();
    assert!(real
        .fft(0, Norm::Backward)
        .unwrap_err()
        .to_string()
        .contains("complex tensor"));
    let c = Tensor::<f64>::zeros(&[4, 2]).unwrap();
    assert!(
        c.fft(1, Norm::Backward).is_err(),
        "the pair axis is not a transform axis"
    );
    assert!(c.irfft(0, 0, Norm::Backward).is_err());
    assert!(Norm::parse("sideways")
        .unwrap_err()
        .to_string()
        .contains("unknown normalisation"));
    assert_eq!(Norm::parse("ortho").unwrap(), Norm::Ortho);
}

proptest! {
    /// A reusable plan gives the tensor op's bits on the caller's split buffers,
    /// forward and inverse.
    #[test]
    fn a_reusable_plan_gives_the_tensor_ops_bits(n in 1usize..300, seed in any::<u64>()) {
        use tensor::fft::FftPlan;
        let mut rng = Rng::new(seed);
        let x = Tensor::<f64>::rand_normal(&[n, 2], 0.0, 1.0, &mut rng).unwrap();
        let v = x.to_vec();
        let (mut re, mut im): (Vec<f64>, Vec<f64>) = v.chunks(2).map(|c| (c[0], c[1])).unzip();
        let mut plan = FftPlan::<f64>::new(n).unwrap();
        plan.forward(&mut re, &mut im).unwrap();
        let want = x.fft(0, Norm::Backward).unwrap().to_vec();
        let got: Vec<f64> = re.iter().zip(&im).flat_map(|(a, b)| [*a, *b]).collect();
        prop_assert_eq!(bits(&got), bits(&want));
        plan.inverse(&mut re, &mut im).unwrap();
        let back = x.fft(0, Norm::Backward).unwrap().ifft(0, Norm::Backward).unwrap().to_vec();
        let got: Vec<f64> = re.iter().zip(&im).flat_map(|(a, b)| [*a, *b]).collect();
        prop_assert_eq!(bits(&got), bits(&back));
    }
}

/// A zero length (whose plan would never finish factorising) and a length past
/// the allocation cap are errors; buffers of the wrong length too.
#[test]
fn reusable_plans_refuse_bad_lengths() {
    use tensor::fft::FftPlan;
    let e = FftPlan::<f32>::new(0).err().unwrap().to_string();
    assert!(e.contains("positive"), "{e}");
    assert!(FftPlan::<f64>::new(usize::MAX / 4).is_err());
    let mut plan = FftPlan::<f64>::new(8).unwrap();
    let (mut re, mut im) = (vec![0.0; 8], vec![0.0; 7]);
    assert!(plan.forward(&mut re, &mut im).is_err());
}

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}
