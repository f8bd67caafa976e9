//! Reductions and row-wise ops against the naive reference, on arbitrary layouts.

use crate::common;

use common::*;
use proptest::prelude::*;
use tensor::strategies::{nonempty_shape, tensor, tensor_with_shape_bcast};
use tensor::Tensor;

/// A non-empty tensor and a subset of its axes.
fn tensor_and_axes() -> impl Strategy<Value = (Tensor<f64>, Vec<isize>)> {
    nonempty_shape(4, 4).prop_flat_map(|shape| {
        let r = shape.len();
        (
            tensor_with_shape_bcast::<f64>(shape),
            proptest::collection::vec(any::<bool>(), r),
        )
            .prop_map(|(t, pick)| {
                let axes = pick
                    .iter()
                    .enumerate()
                    .filter(|(_, &p)| p)
                    .map(|(i, _)| i as isize)
                    .collect();
                (t, axes)
            })
    })
}

/// Groups the elements of `t` by their index off `axes`: (output shape with keepdim,
/// groups in output order).
fn groups(t: &Tensor<f64>, axes: &[isize]) -> (Vec<usize>, Vec<Vec<f64>>) {
    let shape = t.shape().to_vec();
    let red: Vec<usize> = axes.iter().map(|&a| a as usize).collect();
    let keep: Vec<usize> = shape
        .iter()
        .enumerate()
        .map(|(d, &s)| if red.contains(&d) { 1 } else { s })
        .collect();
    let mut out = vec![vec![]; keep.iter().product()];
    for idx in indices(&shape) {
        let k: Vec<usize> = idx
            .iter()
            .enumerate()
            .map(|(d, &i)| if red.contains(&d) { 0 } else { i })
            .collect();
        out[flat(&k, &keep)].push(at(t, &idx));
    }
    (keep, out)
}

fn max_of(g: &[f64]) -> f64 {
    g.iter().cloned().fold(f64::NEG_INFINITY, f64::max)
}

proptest! {
    #![proptest_config(config(96))]

    #[test]
    fn reductions_match_the_reference((t, axes) in tensor_and_axes()) {
        let (keep, gs) = groups(&t, &axes);
        let n = gs[0].len() as f64;
        type Red = (&'static str, tensor::Result<Tensor<f64>>, Box<dyn Fn(&[f64]) -> f64>);
        let cases: Vec<Red> = vec![
            ("sum", t.sum(&axes, true), Box::new(|g: &[f64]| kahan_sum(g))),
            ("mean", t.mean(&axes, true), Box::new(move |g: &[f64]| kahan_sum(g) / n)),
            ("prod", t.prod(&axes, true), Box::new(|g: &[f64]| g.iter().product())),
            ("max", t.max(&axes, true), Box::new(|g: &[f64]| max_of(g))),
            ("min", t.min(&axes, true), Box::new(|g: &[f64]| g.iter().cloned().fold(f64::INFINITY, f64::min))),
            ("logsumexp", t.logsumexp(&axes, true), Box::new(|g: &[f64]| {
                let m = max_of(g);
                m + g.iter().map(|v| (v - m).exp()).sum::<f64>().ln()
            })),
            ("norm1", t.norm(1.0, &axes, true), Box::new(|g: &[f64]| g.iter().map(|v| v.abs()).sum())),
            ("norm2", t.norm(2.0, &axes, true), Box::new(|g: &[f64]| g.iter().map(|v| v * v).sum::<f64>().sqrt())),
            ("norm3", t.norm(3.0, &axes, true), Box::new(|g: &[f64]| g.iter().map(|v| v.abs().powi(3)).sum::<f64>().cbrt())),
            ("norminf", t.norm(f64::INFINITY, &axes, true), Box::new(|g: &[f64]| g.iter().map(|v| v.abs()).fold(0.0, f64::max))),
        ];
        for (name, got, f) in cases {
            let got = got.unwrap();
            prop_assert_eq!(got.shape(), &keep[..], "{}", name);
            let want: Vec<f64> = gs.iter().map(|g| f(g)).collect();
            assert_close(&logical(&got), &want, 1e-13, 1e-13, name);
        }
        // Without keepdim the reduced axes disappear but the values are the same.
        let flat_sum = t.sum(&axes, false).unwrap();
        prop_assert_eq!(flat_sum.numel(), keep.iter().product::<usize>());
        prop_assert_eq!(flat_sum.ndim(), t.ndim() - axes.len());
        if n > 1.0 {
            let var = t.var(&axes, 1, true).unwrap();
            let want: Vec<f64> = gs.iter().map(|g| {
                let m = kahan_sum(g) / n;
                g.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (n - 1.0)
            }).collect();
            assert_close(&logical(&var), &want, 1e-12, 1e-13, "var");
            let std = t.std(&axes, 1, true).unwrap();
            let want: Vec<f64> = want.iter().map(|v| v.sqrt()).collect();
            assert_close(&logical(&std), &want, 1e-12, 1e-13, "std");
        }
    }

    /// A sum over the leading axes of a contiguous tensor adds rows into column
    /// accumulators; each column must get the bits of the pairwise sum the
    /// transposed copy gives (a trailing-axis sum of the transpose), for columns
    /// from one lane to past a block of 64, and for more rows than a pairwise leaf
    /// (256) or than a chunk (16384, where the sum takes the copying path).
    #[test]
    fn leading_axis_sums_have_the_bits_of_the_transposed_sum(
        rows in prop_oneof![1usize..40, 250usize..700, Just(16_390usize)],
        cols in 1usize..140, split in any::<bool>(), keepdim in any::<bool>(), seed in any::<u64>(),
    ) {
        let x = Tensor::<f32>::rand_normal(&[rows, cols], 0.5, 3.0, &mut tensor::Rng::new(seed)).unwrap();
        let want = x.transpose(0, 1).unwrap().contiguous().sum(&[1], false).unwrap();
        // Two leading axes when the rows factor, one otherwise.
        let (x, axes): (Tensor<f32>, Vec<isize>) = if split && rows % 2 == 0 {
            (x.reshape(&[2, rows / 2, cols]).unwrap(), vec![0, 1])
        } else {
            (x, vec![0])
        };
        let got = x.sum(&axes, keepdim).unwrap();
        let mut shape = vec![1; if keepdim { axes.len() } else { 0 }];
        shape.push(cols);
        prop_assert_eq!(got.shape(), &shape[..]);
        prop_assert!(got.reshape(&[cols]).unwrap().bit_eq(&want), "rows {} cols {}", rows, cols);
    }

    #[test]
    fn argmax_and_argmin_find_first_extremes(t in tensor_with_shape_bcast::<f64>(vec![3, 4, 5]), axis in 0isize..3) {
        let am = t.argmax(axis, false).unwrap();
        let an = t.argmin(axis, false).unwrap();
        let a = axis as usize;
        let out_shape = am.shape().to_vec();
        for (k, oi) in indices(&out_shape).iter().enumerate() {
            let col: Vec<f64> = (0..t.shape()[a]).map(|j| {
                let mut idx = oi.clone();
                idx.insert(a, j);
                at(&t, &idx)
            }).collect();
            let mx = max_of(&col);
            let mn = col.iter().cloned().fold(f64::INFINITY, f64::min);
            prop_assert_eq!(am.to_vec()[k], col.iter().position(|&v| v == mx).unwrap());
            prop_assert_eq!(an.to_vec()[k], col.iter().position(|&v| v == mn).unwrap());
        }
    }

    #[test]
    fn softmax_rows_sum_to_one_and_match_the_reference(t in tensor::<f64>(3, 5), axis in -3isize..3) {
        prop_assume!(t.ndim() > 0 && (axis as i64) < t.ndim() as i64 && axis >= -(t.ndim() as isize));
        let s = t.softmax(axis).unwrap();
        let ls = t.log_softmax(axis).unwrap();
        let cs = t.cumsum(axis).unwrap();
        let a = if axis < 0 { (axis + t.ndim() as isize) as usize } else { axis as usize };
        let sums = s.sum(&[a as isize], false).unwrap();
        if t.shape()[a] > 0 {
            assert_close(&sums.to_vec(), &vec![1.0; sums.numel()], 1e-14, 0.0, "softmax sum");
        }
        for idx in indices(t.shape()) {
            let col: Vec<f64> = (0..t.shape()[a]).map(|j| { let mut i = idx.clone(); i[a] = j; at(&t, &i) }).collect();
            let m = max_of(&col);
            let z: f64 = col.iter().map(|v| (v - m).exp()).sum();
            let x = at(&t, &idx);
            let k = flat(&idx, t.shape());
            assert_close(&[s.to_vec()[k]], &[(x - m).exp() / z], 1e-14, 1e-16, "softmax");
            assert_close(&[ls.to_vec()[k]], &[x - m - z.ln()], 1e-14, 1e-14, "log_softmax");
            let prefix: f64 = col[..=idx[a]].iter().sum();
            assert_close(&[cs.to_vec()[k]], &[prefix], 1e-13, 1e-13, "cumsum");
        }
    }

    #[test]
    fn sum_to_shape_undoes_broadcasting(t in tensor::<f64>(3, 4), lead in 1usize..3, seed in any::<u64>()) {
        let mut big = vec![2; lead];
        big.extend_from_slice(t.shape());
        // Expand some size-1 axes too.
        let small: Vec<usize> = t.shape().iter().enumerate().map(|(i, &d)| if (seed >> i) & 1 == 1 { 1 } else { d }).collect();
        let mut big2 = vec![2; lead];
        big2.extend(small.iter().zip(t.shape()).map(|(&s, &d)| if s == 1 { 3 } else { d }));
        let x = Tensor::<f64>::ones(&small).unwrap().broadcast_to(&big2).unwrap();
        let r = x.sum_to_shape(&small).unwrap();
        prop_assert_eq!(r.shape(), &small[..]);
        let per = (big2.iter().product::<usize>() / small.iter().product::<usize>().max(1)) as f64;
        if r.numel() > 0 {
            assert_close(&r.to_vec(), &vec![per; r.numel()], 0.0, 0.0, "sum_to_shape");
        }
        let _ = big;
    }

    /// On a contiguous tensor (values, not a broadcast view) every target shape,
    /// including the bias pattern [N, C, H, W] → [C, 1, 1] whose trailing axes are
    /// summed first, against a naive f64 loop.
    #[test]
    fn sum_to_shape_of_stored_values_matches_a_naive_loop(
        dims in proptest::collection::vec(1usize..5, 2..5),
        keep in any::<u8>(),
        lead in 0usize..2,
        seed in any::<u64>(),
    ) {
        let x = Tensor::<f64>::rand_normal(&dims, 0.0, 1.0, &mut tensor::Rng::new(seed)).unwrap();
        let target: Vec<usize> = dims[lead..]
            .iter()
            .enumerate()
            .map(|(i, &d)| if (keep >> i) & 1 == 1 { d } else { 1 })
            .collect();
        // The values of each output element's group, by a naive walk.
        let mut groups = vec![Vec::new(); target.iter().product()];
        for (flat, &v) in x.to_vec().iter().enumerate() {
            let (mut rem, mut at, mut stride) = (flat, 0, 1);
            for a in (0..dims.len()).rev() {
                let i = rem % dims[a];
                rem /= dims[a];
                if a >= lead {
                    let t = target[a - lead];
                    at += if t == 1 { 0 } else { i } * stride;
                    stride *= t;
                }
            }
            groups[at].push(v);
        }
        let sums: Vec<f64> = groups.iter().map(|g| g.iter().sum()).collect();
        let r = x.sum_to_shape(&target).unwrap();
        prop_assert_eq!(r.shape(), &target[..]);
        assert_close(&r.to_vec(), &sums, 1e-12, 1e-12, "sum_to_shape");
        // The same axes through sum, mean and var, with and without keepdim.
        let axes: Vec<isize> = (0..dims.len())
            .filter(|&a| a < lead || target[a - lead] == 1)
            .map(|a| a as isize)
            .collect();
        if axes.is_empty() {
            return Ok(());
        }
        let n = groups[0].len();
        let means: Vec<f64> = sums.iter().map(|s| s / n as f64).collect();
        let vars: Vec<f64> = groups
            .iter()
            .zip(&means)
            .map(|(g, m)| g.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (n as f64 - 1.0))
            .collect();
        for keepdim in [true, false] {
            let sum = x.sum(&axes, keepdim).unwrap();
            prop_assert_eq!(sum.numel(), sums.len());
            assert_close(&sum.to_vec(), &sums, 1e-12, 1e-12, "sum");
            let mean = x.mean(&axes, keepdim).unwrap();
            prop_assert_eq!(mean.shape(), sum.shape());
            assert_close(&mean.to_vec(), &means, 1e-12, 1e-12, "mean");
            if n > 1 {
                let var = x.var(&axes, 1, keepdim).unwrap();
                prop_assert_eq!(var.shape(), sum.shape());
                assert_close(&var.to_vec(), &vars, 1e-12, 1e-12, "var");
            }
        }
    }
}

#[test]
fn long_sums_are_accurate_against_kahan() {
    // The algorithm's worst-case bound: each lane adds at most 256/8 terms, then 3
    // levels join the lanes, then ⌈log₂(n/256)⌉ + 1 pairwise levels (the last one
    // joining the chunks), so |error| ≤ (32 + 3 + log₂(n/256) + 2)·ε·Σ|x|.
    let n = 1_000_000;
    let mut rng = tensor::Rng::new(11);
    let t = Tensor::<f64>::rand_normal(&[n], 0.3, 10.0, &mut rng).unwrap();
    let v = t.to_vec();
    let exact = kahan_sum(&v);
    let got = t.sum_all().item().unwrap();
    let scale: f64 = v.iter().map(|x| x.abs()).sum();
    let depth = 32.0 + 3.0 + (n as f64 / 256.0).log2().ceil() + 2.0;
    assert!(
        (got - exact).abs() <= depth * f64::EPSILON * scale,
        "{got} vs {exact}"
    );
}

#[test]
fn chunked_f32_sum_avoids_the_stagnation_of_a_running_sum() {
    // 10^7 × 0.1 in f32: a running sum stalls once its ulp nears 0.1 (relative error
    // of several percent); the lane-and-chunk sum stays within 1e-5.
    let n = 10_000_000;
    let t = Tensor::<f32>::full(&[n], 0.1).unwrap();
    let got = t.sum_all().item().unwrap() as f64;
    let exact = n as f64 * 0.1f32 as f64;
    let naive: f32 = t.as_slice().unwrap().iter().sum();
    assert!(
        ((naive as f64 - exact) / exact).abs() > 1e-2,
        "naive {naive}"
    );
    assert!(((got - exact) / exact).abs() < 1e-5, "{got} vs {exact}");
}

#[test]
fn empty_reductions_are_errors_except_sum_and_prod() {
    let e = Tensor::<f64>::zeros(&[3, 0]).unwrap();
    assert_eq!(e.sum(&[1], false).unwrap().to_vec(), vec![0.0; 3]);
    assert_eq!(e.prod(&[1], false).unwrap().to_vec(), vec![1.0; 3]);
    for err in [
        e.max(&[1], false).unwrap_err(),
        e.mean(&[1], false).unwrap_err(),
        e.argmax(1, false).map(|_| ()).unwrap_err(),
        e.logsumexp(&[1], false).unwrap_err(),
    ] {
        assert!(err.to_string().contains("empty"), "{err}");
    }
    let v = Tensor::<f64>::ones(&[4, 1])
        .unwrap()
        .var(&[1], 1, false)
        .unwrap_err();
    assert!(v.to_string().contains("degrees of freedom"), "{v}");
}
