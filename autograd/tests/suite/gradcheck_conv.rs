//! Convolution and pooling: gradcheck and gradgradcheck over proptest-generated
//! geometries, and the pooling ops against naive loops.

use crate::common;

use autograd::{gradcheck, gradgradcheck, GradcheckOptions, Var};
use common::config;
use proptest::prelude::*;
use tensor::{Conv2dSpec, Rng, Tensor};

fn opts() -> GradcheckOptions {
    common::strict()
}

fn rand(shape: &[usize], seed: u64) -> Tensor<f64> {
    Tensor::rand_normal(shape, 0.0, 1.0, &mut Rng::new(seed)).unwrap()
}

proptest! {
    #![proptest_config(config(16))]

    /// First and second derivatives of conv2d in its input and weight (the second
    /// order goes through the recorded adjoints).
    #[test]
    fn conv2d_passes_gradcheck_and_gradgradcheck(
        groups in 1usize..3, cin_g in 1usize..3, cout_g in 1usize..3, h in 2usize..6, w in 2usize..6,
        k in 1usize..3, stride in 1usize..3, pad in 0usize..2, dil in 1usize..3, seed in any::<u64>(),
    ) {
        prop_assume!((k - 1) * dil < h + 2 * pad && (k - 1) * dil < w + 2 * pad);
        let spec = Conv2dSpec { stride: (stride, stride), padding: (pad, pad), dilation: (dil, dil), groups };
        let x = rand(&[2, groups * cin_g, h, w], seed);
        let wt = rand(&[groups * cout_g, cin_g, k, k], seed ^ 7);
        let f = |v: &[Var<f64>]| v[0].conv2d(&v[1], spec)?.tanh();
        let r = gradcheck(f, &[x.clone(), wt.clone()], &opts());
        prop_assert!(r.is_ok(), "{:?}: {:?}", spec, r);
        let r = gradgradcheck(f, &[x.clone(), wt.clone()], &opts());
        prop_assert!(r.is_ok(), "second order {:?}: {:?}", spec, r);
        // With a bias: its gradient is the output gradient summed per channel.
        let b = rand(&[groups * cout_g], seed ^ 11);
        let f = |v: &[Var<f64>]| v[0].conv2d_bias(&v[1], &v[2], spec)?.tanh();
        let r = gradcheck(f, &[x.clone(), wt.clone(), b.clone()], &opts());
        prop_assert!(r.is_ok(), "bias {:?}: {:?}", spec, r);
        let r = gradgradcheck(f, &[x, wt, b], &opts());
        prop_assert!(r.is_ok(), "bias, second order {:?}: {:?}", spec, r);
    }
}

#[test]
fn conv1d_and_pooling_pass_gradcheck() {
    let r = gradcheck(
        |v| v[0].conv1d(&v[1], 2, 1, 2, 1)?.tanh(),
        &[rand(&[2, 3, 9], 1), rand(&[4, 3, 3], 2)],
        &opts(),
    );
    assert!(r.is_ok(), "conv1d: {r:?}");
    let x = rand(&[2, 3, 7, 6], 3);
    for (name, f) in [
        (
            "max",
            (|v: &Var<f64>| v.max_pool2d((3, 2), (2, 2), (1, 1))) as fn(&Var<f64>) -> _,
        ),
        ("avg", |v| v.avg_pool2d((3, 3), (2, 1), (1, 1))),
        ("adaptive", |v| v.adaptive_avg_pool2d((3, 4))),
        ("global", |v| v.adaptive_avg_pool2d((1, 1))),
    ] {
        let r = gradcheck(|v| f(&v[0])?.square(), std::slice::from_ref(&x), &opts());
        assert!(r.is_ok(), "{name}: {r:?}");
        let r = gradgradcheck(|v| f(&v[0])?.square(), std::slice::from_ref(&x), &opts());
        assert!(r.is_ok(), "{name} second order: {r:?}");
    }
}

/// The two adjoints the conv2d backward records, checked as ops of their own (first
/// and second order), so each is covered where it is defined, not only through
/// conv2d's second derivative.
#[test]
fn the_conv_adjoints_pass_gradcheck_and_gradgradcheck() {
    let spec = Conv2dSpec {
        stride: (2, 1),
        padding: (1, 0),
        dilation: (1, 2),
        groups: 1,
    };
    let (xs, ws) = ([2, 3, 6, 7], [4, 3, 3, 2]);
    let out = rand(&xs, 1)
        .conv2d(&rand(&ws, 2), spec)
        .unwrap()
        .shape()
        .to_vec();
    let g = rand(&out, 3);
    let input_grad = |v: &[Var<f64>]| v[0].conv2d_input_grad(&v[1], &xs, spec)?.tanh();
    let weight_grad = |v: &[Var<f64>]| v[0].conv2d_weight_grad(&v[1], &ws, spec)?.tanh();
    for (name, f, inputs) in [
        (
            "conv2d_input_grad",
            &input_grad as &dyn Fn(&[Var<f64>]) -> tensor::Result<Var<f64>>,
            [g.clone(), rand(&ws, 4)],
        ),
        (
            "conv2d_weight_grad",
            &weight_grad,
            [g.clone(), rand(&xs, 5)],
        ),
    ] {
        let r = gradcheck(f, &inputs, &opts());
        assert!(r.is_ok(), "{name}: {r:?}");
        let r = gradgradcheck(f, &inputs, &opts());
        assert!(r.is_ok(), "{name} second order: {r:?}");
    }
}

/// out[n, c, oy, ox] = reduce over the window, by loops (padding excluded from max,
/// counted as zero in the average).
fn naive_pool(
    x: &Tensor<f64>,
    k: (usize, usize),
    s: (usize, usize),
    p: (usize, usize),
    max: bool,
) -> Vec<f64> {
    let sh = x.shape();
    let (nc, h, w) = (sh[0] * sh[1], sh[2], sh[3]);
    let ho = (h + 2 * p.0 - k.0) / s.0 + 1;
    let wo = (w + 2 * p.1 - k.1) / s.1 + 1;
    let xv = x.to_vec();
    let mut out = Vec::new();
    for plane in 0..nc {
        for oy in 0..ho {
            for ox in 0..wo {
                let mut acc = if max { f64::NEG_INFINITY } else { 0.0 };
                for i in 0..k.0 {
                    for j in 0..k.1 {
                        let iy = (oy * s.0 + i) as isize - p.0 as isize;
                        let ix = (ox * s.1 + j) as isize - p.1 as isize;
                        if iy < 0 || ix < 0 || iy >= h as isize || ix >= w as isize {
                            continue;
                        }
                        let v = xv[plane * h * w + iy as usize * w + ix as usize];
                        acc = if max { acc.max(v) } else { acc + v };
                    }
                }
                out.push(if max { acc } else { acc / (k.0 * k.1) as f64 });
            }
        }
    }
    out
}

#[test]
fn pooling_matches_naive_loops() {
    let x = rand(&[2, 3, 9, 8], 11);
    let v = Var::constant(x.clone());
    for &(k, s, p) in &[
        ((2, 2), (2, 2), (0, 0)),
        ((3, 3), (2, 2), (1, 1)),
        ((3, 2), (1, 3), (1, 0)),
    ] {
        let got = v.max_pool2d(k, s, p).unwrap().value().to_vec();
        assert_eq!(got, naive_pool(&x, k, s, p, true), "max {k:?} {s:?} {p:?}");
        let got = v.avg_pool2d(k, s, p).unwrap().value().to_vec();
        let want = naive_pool(&x, k, s, p, false);
        assert!(
            got.iter().zip(&want).all(|(a, b)| (a - b).abs() < 1e-14),
            "avg {k:?} {s:?} {p:?}"
        );
    }
    // Adaptive pooling to a divisor is plain average pooling; to (1, 1) the mean.
    let a = v.adaptive_avg_pool2d((3, 4)).unwrap().value().to_vec();
    let b = naive_pool(&x, (3, 2), (3, 2), (0, 0), false);
    assert!(a.iter().zip(&b).all(|(x, y)| (x - y).abs() < 1e-14));
    let g = v.adaptive_avg_pool2d((1, 1)).unwrap().value().to_vec();
    let m = x.mean(&[2, 3], false).unwrap().to_vec();
    assert!(g.iter().zip(&m).all(|(x, y)| (x - y).abs() < 1e-14));
    // Uneven windows: 9 rows into 4 cells take rows 0–2, 2–4, 4–6, 6–8.
    let u = v.adaptive_avg_pool2d((4, 8)).unwrap().value().to_vec();
    let xv = x.to_vec();
    let want = (xv[0] + xv[8] + xv[16]) / 3.0;
    assert!((u[0] - want).abs() < 1e-14);
    assert!(v.adaptive_avg_pool2d((10, 1)).is_err());
    assert!(v.avg_pool2d((0, 1), (1, 1), (0, 0)).is_err());
}
