//! Batch normalisation's kernels (`tensor::ops::batch_norm`) against naive f64
//! loops over `[N, C, S]`, on arbitrary batch shapes and non-contiguous inputs, the
//! same bits at every thread count, and their errors.

use crate::common;

use common::*;
use proptest::prelude::*;
use tensor::{Rng, Tensor};

/// The values of channel `ch` of a contiguous `[N, C, S…]` vector.
fn channel(x: &[f64], (n, c, s): (usize, usize, usize), ch: usize) -> Vec<f64> {
    (0..n)
        .flat_map(|i| x[(i * c + ch) * s..(i * c + ch + 1) * s].to_vec())
        .collect()
}

fn mean(v: &[f64]) -> f64 {
    kahan_sum(v) / v.len() as f64
}

/// (μ, σ², y, dx, dγ, dβ) by the textbook formulas, one channel at a time.
#[allow(clippy::type_complexity)]
fn naive(
    x: &[f64],
    g: &[f64],
    gamma: &[f64],
    beta: &[f64],
    eps: f64,
    d @ (n, c, s): (usize, usize, usize),
) -> (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>) {
    let (mut mu, mut var, mut dgamma, mut dbeta) = (vec![], vec![], vec![], vec![]);
    let (mut y, mut dx) = (vec![0.0; x.len()], vec![0.0; x.len()]);
    for ch in 0..c {
        let (xc, gc) = (channel(x, d, ch), channel(g, d, ch));
        let m = mean(&xc);
        let v = mean(&xc.iter().map(|a| (a - m) * (a - m)).collect::<Vec<_>>());
        let r = 1.0 / (v + eps).sqrt();
        let x_hat: Vec<f64> = xc.iter().map(|a| (a - m) * r).collect();
        let g_x_hat: Vec<f64> = gc.iter().zip(&x_hat).map(|(g, h)| g * h).collect();
        let (mg, mgh) = (mean(&gc), mean(&g_x_hat));
        for i in 0..n {
            for k in 0..s {
                let (at, j) = ((i * c + ch) * s + k, i * s + k);
                y[at] = gamma[ch] * x_hat[j] + beta[ch];
                dx[at] = gamma[ch] * r * (gc[j] - mg - x_hat[j] * mgh);
            }
        }
        mu.push(m);
        var.push(v);
        dgamma.push(kahan_sum(&g_x_hat));
        dbeta.push(kahan_sum(&gc));
    }
    (mu, var, y, dx, dgamma, dbeta)
}

fn rand(shape: &[usize], seed: u64) -> Tensor<f64> {
    Tensor::rand_normal(shape, 0.5, 2.0, &mut Rng::new(seed)).unwrap()
}

proptest! {
    #![proptest_config(config(48))]

    #[test]
    fn kernels_match_the_naive_formulas(
        n in 1usize..4, c in 1usize..4, rest in proptest::collection::vec(1usize..6, 0..3),
        long in prop_oneof![3 => Just(None), 1 => (200usize..700).prop_map(Some)],
        transposed in any::<bool>(), seed in any::<u64>(),
    ) {
        let mut shape = vec![n, c];
        shape.extend(&rest);
        // Rows longer than a summation block (256) too, with a partial last block.
        shape.extend(long);
        let rest = &shape[2..];
        let s: usize = rest.iter().product();
        prop_assume!(n * s >= 2);
        let x = rand(&shape, seed);
        let g = rand(&shape, seed ^ 1);
        let gamma = rand(&[c], seed ^ 2);
        let beta = rand(&[c], seed ^ 3);
        let eps = 1e-5;
        let (mu, var, y, dx, dgamma, dbeta) =
            naive(&x.to_vec(), &g.to_vec(), &gamma.to_vec(), &beta.to_vec(), eps, (n, c, s));
        // The kernels read any layout: the same values stored transposed.
        let (xk, gk) = if transposed && shape.len() >= 3 {
            let last = shape.len() as isize - 1;
            let flip = |t: &Tensor<f64>| {
                t.transpose(0, last).unwrap().contiguous().transpose(0, last).unwrap()
            };
            (flip(&x), flip(&g))
        } else {
            (x.clone(), g.clone())
        };
        let (m, v) = xk.batch_norm_stats().unwrap();
        assert_close(&m.to_vec(), &mu, 1e-12, 1e-12, "mean");
        assert_close(&v.to_vec(), &var, 1e-12, 1e-12, "variance");
        let r = v.add_scalar(eps).rsqrt();
        let scale = gamma.mul(&r).unwrap();
        let shift = beta.sub(&m.mul(&scale).unwrap()).unwrap();
        let got = xk.channel_affine(&scale, &shift).unwrap();
        assert_close(&got.to_vec(), &y, 1e-11, 1e-11, "y");
        let (gx, gg, gb) = gk.batch_norm_backward(&xk, &m, &r, &gamma).unwrap();
        assert_close(&gx.to_vec(), &dx, 1e-10, 1e-10, "dx");
        assert_close(&gg.to_vec(), &dgamma, 1e-11, 1e-11, "dγ");
        assert_close(&gb.to_vec(), &dbeta, 1e-11, 1e-11, "dβ");
    }
}

/// Channels split across threads whole and every sum has a fixed order, so the
/// statistics, the output and the gradients are the same bits at 1, 2 and 3
/// threads (the tensor is large enough to go parallel).
#[test]
fn results_are_the_same_bits_at_every_thread_count() {
    let shape = [16, 16, 32, 32];
    let (x, g, gamma) = (rand(&shape, 1), rand(&shape, 2), rand(&[16], 3));
    let run = || {
        let (m, v) = x.batch_norm_stats().unwrap();
        let r = v.add_scalar(1e-5).rsqrt();
        let y = x.channel_affine(&gamma, &m).unwrap();
        let (dx, dg, db) = g.batch_norm_backward(&x, &m, &r, &gamma).unwrap();
        [m, v, y, dx, dg, db].map(|t| t.to_vec())
    };
    let want = run();
    for threads in [1, 2, 3] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        assert!(pool.install(run) == want, "{threads} threads");
    }
}

#[test]
fn bad_shapes_and_empty_batches_are_refused_by_name() {
    let x = rand(&[2, 3, 4], 1);
    let c3 = rand(&[3], 2);
    let err = |r: tensor::Result<_>| r.err().map(|e: tensor::Error| e.to_string()).unwrap();
    let e = err(rand(&[3], 3).batch_norm_stats().map(|_| ()));
    assert!(e.contains("[N, C, ...]"), "{e}");
    let e = err(Tensor::<f64>::zeros(&[0, 3, 4])
        .unwrap()
        .batch_norm_stats()
        .map(|_| ()));
    assert!(e.contains("a value per channel"), "{e}");
    let e = err(x.channel_affine(&rand(&[4], 4), &c3).map(|_| ()));
    assert!(e.contains("the scale must be [3]"), "{e}");
    let e = err(rand(&[2, 3, 5], 5)
        .batch_norm_backward(&x, &c3, &c3, &c3)
        .map(|_| ()));
    assert!(e.contains("differ"), "{e}");
    let e = err(x
        .batch_norm_backward(&x, &c3, &rand(&[1], 6), &c3)
        .map(|_| ()));
    assert!(e.contains("1/σ must be [3]"), "{e}");
}
