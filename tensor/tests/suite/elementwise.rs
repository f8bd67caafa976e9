//! Element-wise ops against the naive f64 reference on arbitrary layouts.

use crate::common;

use common::*;
use proptest::prelude::*;
use tensor::strategies::{broadcast_pair, layout_recipe, tensor};
use tensor::Tensor;

type Computed = (&'static str, Tensor<f32>, fn(f64) -> f64);
type Unary = (
    &'static str,
    fn(&Tensor<f64>) -> Tensor<f64>,
    fn(f64) -> f64,
);

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

fn unary_ops() -> Vec<Unary> {
    vec![
        ("neg", |t| t.neg(), |x| -x),
        ("abs", |t| t.abs(), f64::abs),
        (
            "sign",
            |t| t.sign(),
            |x| {
                if x > 0.0 {
                    1.0
                } else if x < 0.0 {
                    -1.0
                } else {
                    0.0
                }
            },
        ),
        ("exp", |t| t.exp(), f64::exp),
        ("expm1", |t| t.expm1(), f64::exp_m1),
        (
            "ln",
            |t| t.abs().add_scalar(0.1).ln(),
            |x| (x.abs() + 0.1).ln(),
        ),
        ("ln1p", |t| t.abs().ln1p(), |x| x.abs().ln_1p()),
        ("sqrt", |t| t.abs().sqrt(), |x| x.abs().sqrt()),
        (
            "rsqrt",
            |t| t.abs().add_scalar(0.5).rsqrt(),
            |x| 1.0 / (x.abs() + 0.5).sqrt(),
        ),
        ("square", |t| t.square(), |x| x * x),
        (
            "recip",
            |t| t.add_scalar(10.0).recip(),
            |x| 1.0 / (x + 10.0),
        ),
        ("powf", |t| t.abs().powf(1.7), |x| x.abs().powf(1.7)),
        ("sin", |t| t.sin(), f64::sin),
        ("cos", |t| t.cos(), f64::cos),
        ("tanh", |t| t.tanh(), f64::tanh),
        ("sigmoid", |t| t.sigmoid(), sigmoid),
        ("relu", |t| t.relu(), |x| x.max(0.0)),
        (
            "leaky_relu",
            |t| t.leaky_relu(0.1),
            |x| if x > 0.0 { x } else { 0.1 * x },
        ),
        (
            "elu",
            |t| t.elu(1.5),
            |x| if x > 0.0 { x } else { 1.5 * x.exp_m1() },
        ),
        ("silu", |t| t.silu(), |x| x * sigmoid(x)),
        ("softplus", |t| t.softplus(), |x| (1.0 + x.exp()).ln()),
        ("gelu_grad", |t| t.gelu_grad(), gelu_grad),
        ("erf", |t| t.erf(), tensor::special::erf),
        ("clamp", |t| t.clamp(-1.0, 0.5), |x| x.clamp(-1.0, 0.5)),
        ("add_scalar", |t| t.add_scalar(2.5), |x| x + 2.5),
        ("mul_scalar", |t| t.mul_scalar(-1.5), |x| x * -1.5),
        ("div_scalar", |t| t.div_scalar(4.0), |x| x / 4.0),
    ]
}

/// Φ(x) + x·φ(x), from erf.
fn gelu_grad(x: f64) -> f64 {
    0.5 * (1.0 + tensor::special::erf(x / 2f64.sqrt()))
        + x * (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt()
}

#[test]
fn f32_gelu_and_its_derivative_hold_single_precision_into_the_tails() {
    // Every 1/256 on [−12, 12]: the fast erfc fit and the vector exp together stay
    // within a few single-precision ulps of the f64 reference (absolute 2e-7 near the
    // zeros of the derivative, relative 1e-6 elsewhere).
    let xs: Vec<f32> = (-3072..=3072).map(|i| i as f32 / 256.0).collect();
    let t = Tensor::from_vec(xs.clone(), &[xs.len()]).unwrap();
    for (name, got, f) in [
        (
            "gelu",
            t.gelu().to_vec(),
            (|x| 0.5 * x * (1.0 + tensor::special::erf(x / 2f64.sqrt()))) as fn(f64) -> f64,
        ),
        ("gelu_grad", t.gelu_grad().to_vec(), gelu_grad),
    ] {
        for (x, g) in xs.iter().zip(got) {
            let want = f(*x as f64);
            let err = (g as f64 - want).abs();
            assert!(
                err <= 2e-7 + 1e-6 * want.abs(),
                "{name}({x}) = {g}, want {want}"
            );
        }
    }
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn unary_ops_match_the_reference(t in tensor::<f64>(4, 5)) {
        let x = logical(&t);
        for (name, op, f) in unary_ops() {
            let got = op(&t);
            prop_assert_eq!(got.shape(), t.shape());
            let want: Vec<f64> = x.iter().map(|&v| f(v)).collect();
            // f64 kernels call the same libm functions: only softplus (log1p form vs
            // the reference's ln(1+eˣ)) and gelu_grad (erfc vs 1+erf) round differently.
            assert_close(&logical(&got), &want, 1e-14, 1e-15, name);
        }
    }

    #[test]
    fn gelu_matches_the_reference_within_its_cancellation(t in tensor::<f64>(4, 5)) {
        // The reference ½x(1 + erf(x/√2)) cancels for x < 0: the bracket carries an
        // absolute error of a few ε whatever its size, so the bound is 1e-14·|want|
        // plus 4ε·|x| (the kernel's erfc form has no such cancellation). A failure
        // at x = −2.57 (off by 1.3e-15 against a 1e-15 absolute tolerance) is why
        // gelu is not in the table above.
        let x = logical(&t);
        let got = logical(&t.gelu());
        for (i, (&v, &g)) in x.iter().zip(&got).enumerate() {
            let want = 0.5 * v * (1.0 + tensor::special::erf(v / 2f64.sqrt()));
            let bound = 1e-14 * want.abs() + 4.0 * f64::EPSILON * v.abs();
            prop_assert!((g - want).abs() <= bound, "gelu[{}]({}) = {}, want {}", i, v, g, want);
        }
    }

    #[test]
    fn f32_kernels_match_f64_to_single_precision(t in tensor::<f32>(3, 6)) {
        let x = logical(&t);
        let ops: Vec<Computed> = vec![
            ("exp", t.exp(), f64::exp),
            ("tanh", t.tanh(), f64::tanh),
            ("sigmoid", t.sigmoid(), sigmoid),
            ("softplus", t.softplus(), |x| (1.0 + x.exp()).ln()),
            ("gelu", t.gelu(), |x| 0.5 * x * (1.0 + tensor::special::erf(x / 2f64.sqrt()))),
            ("gelu_grad", t.gelu_grad(), gelu_grad),
        ];
        for (name, got, f) in ops {
            let want: Vec<f64> = x.iter().map(|&v| f(v)).collect();
            assert_close(&logical(&got), &want, 1e-6, 1e-7, name);
        }
    }

    #[test]
    fn binary_ops_broadcast_like_the_reference(
        (sa, sb) in broadcast_pair(4, 4),
        ra in layout_recipe(4, true),
        rb in layout_recipe(4, true),
    ) {
        let ra = tensor::strategies::LayoutRecipe { perm: (0..sa.len()).collect(), ..ra };
        let rb = tensor::strategies::LayoutRecipe { perm: (0..sb.len()).collect(), ..rb };
        let fix = |r: tensor::strategies::LayoutRecipe, n: usize| tensor::strategies::LayoutRecipe {
            steps: r.steps[..n].to_vec(),
            flips: r.flips[..n].to_vec(),
            broadcast: r.broadcast[..n].to_vec(),
            ..r
        };
        let a = fix(ra, sa.len()).build::<f64>(&sa);
        let b = fix(rb, sb.len()).build::<f64>(&sb).add_scalar(3.5);
        type Bin = (&'static str, fn(&Tensor<f64>, &Tensor<f64>) -> tensor::Result<Tensor<f64>>, fn(f64, f64) -> f64);
        let ops: Vec<Bin> = vec![
            ("add", |a, b| a.add(b), |x, y| x + y),
            ("sub", |a, b| a.sub(b), |x, y| x - y),
            ("mul", |a, b| a.mul(b), |x, y| x * y),
            ("div", |a, b| a.div(b), |x, y| x / y),
            ("pow", |a, b| a.abs().pow(b), |x, y| x.abs().powf(y)),
            ("maximum", |a, b| a.maximum(b), f64::max),
            ("minimum", |a, b| a.minimum(b), f64::min),
            ("lt", |a, b| a.lt(b), |x, y| (x < y) as u8 as f64),
            ("ge", |a, b| a.ge(b), |x, y| (x >= y) as u8 as f64),
            ("eq", |a, b| a.eq(b), |x, y| (x == y) as u8 as f64),
        ];
        let out_shape = tensor::layout::broadcast_shapes("t", &sa, &sb).unwrap();
        for (name, op, f) in ops {
            let got = op(&a, &b).unwrap();
            prop_assert_eq!(got.shape(), &out_shape[..]);
            let want: Vec<f64> = indices(&out_shape)
                .iter()
                .map(|i| f(at(&a, &broadcast_index(i, &sa)), at(&b, &broadcast_index(i, &sb))))
                .collect();
            assert_close(&logical(&got), &want, 0.0, 0.0, name);
        }
    }

    #[test]
    fn select_picks_by_mask((sa, sb) in broadcast_pair(3, 4), seed in any::<u64>()) {
        let mut rng = tensor::Rng::new(seed);
        let mask = Tensor::<f64>::rand_bernoulli(&sa, 0.5, &mut rng).unwrap();
        let x = Tensor::<f64>::rand_normal(&sb, 0.0, 1.0, &mut rng).unwrap();
        let y = Tensor::<f64>::scalar(-7.0);
        let got = Tensor::select(&mask, &x, &y).unwrap();
        let shape = got.shape().to_vec();
        let want: Vec<f64> = indices(&shape).iter().map(|i| {
            if at(&mask, &broadcast_index(i, &sa)) != 0.0 { at(&x, &broadcast_index(i, &sb)) } else { -7.0 }
        }).collect();
        assert_close(&logical(&got), &want, 0.0, 0.0, "select");
    }

    /// The ReLU's backward gate: `g` where `x > 0`, exactly zero elsewhere (a NaN
    /// or zero gate closes it), on any layout of either operand.
    #[test]
    fn where_positive_gates_like_the_reference(
        shape in proptest::collection::vec(1usize..5, 1..4),
        seed in any::<u64>(),
    ) {
        let mut rng = tensor::Rng::new(seed);
        let g = Tensor::<f64>::rand_normal(&shape, 0.0, 1.0, &mut rng).unwrap();
        let mut xs = Tensor::<f64>::rand_normal(&shape, 0.0, 1.0, &mut rng).unwrap().to_vec();
        xs[0] = f64::NAN;
        if xs.len() > 1 {
            xs[1] = 0.0;
        }
        let x = Tensor::from_vec(xs.clone(), &shape).unwrap();
        let want: Vec<f64> =
            g.to_vec().iter().zip(&xs).map(|(&g, &x)| if x > 0.0 { g } else { 0.0 }).collect();
        prop_assert_eq!(g.where_positive(&x).unwrap().to_vec(), want.clone());
        // Transposed (non-contiguous) operands give the same gating.
        if shape.len() >= 2 {
            let (gt, xt) = (g.transpose(0, 1).unwrap(), x.transpose(0, 1).unwrap());
            let back = gt.where_positive(&xt).unwrap().transpose(0, 1).unwrap();
            prop_assert_eq!(back.contiguous().to_vec(), want);
        }
    }
}

#[test]
fn where_positive_gives_zero_at_a_closed_gate_even_for_infinities() {
    let g = Tensor::<f32>::from_vec(vec![f32::INFINITY, f32::NAN, -2.0, 3.0], &[4]).unwrap();
    let x = Tensor::<f32>::from_vec(vec![-1.0, 0.0, 5.0, 1e-30], &[4]).unwrap();
    assert_eq!(
        g.where_positive(&x).unwrap().to_vec(),
        vec![0.0, 0.0, -2.0, 3.0]
    );
    let err = g.where_positive(&x.reshape(&[2, 2]).unwrap()).unwrap_err();
    assert!(err.to_string().contains("where_positive"), "{err}");
}

#[test]
fn softplus_is_stable_at_the_extremes() {
    let t = Tensor::<f64>::from_vec(vec![-800.0, -40.0, 0.0, 40.0, 800.0], &[5]).unwrap();
    let s = t.softplus().to_vec();
    assert_eq!(s[0], 0.0f64.max((-800.0f64).exp()));
    assert!((s[1] - (-40.0f64).exp()).abs() < 1e-30);
    assert!((s[2] - 2f64.ln()).abs() < 1e-16);
    assert_eq!(s[3], 40.0 + (-40.0f64).exp().ln_1p());
    assert_eq!(s[4], 800.0);
    let f = t.cast::<f32>().softplus().to_vec();
    assert!(f.iter().all(|v| v.is_finite()));
    assert!((f[1] as f64 - (-40.0f64).exp()).abs() < 1e-24);
}

/// `all_finite` over a tensor of several chunks (scanned on the threads): a NaN or
/// an infinity anywhere — the first element, inside a later chunk, the last
/// element — is found, in a transposed view too, at 1 and 2 threads.
#[test]
fn all_finite_finds_a_bad_value_in_any_chunk() {
    let n = 3 * tensor::parallel::CHUNK + 6;
    let clean: Vec<f32> = (0..n).map(|i| (i % 97) as f32 - 48.0).collect();
    for threads in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            assert!(Tensor::from_vec(clean.clone(), &[n]).unwrap().all_finite());
            for at in [
                0,
                tensor::parallel::CHUNK + 17,
                2 * tensor::parallel::CHUNK,
                n - 1,
            ] {
                for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
                    let mut data = clean.clone();
                    data[at] = bad;
                    let t = Tensor::from_vec(data, &[n / 6, 6]).unwrap();
                    assert!(!t.all_finite(), "{bad} at {at}");
                    assert!(!t.t().unwrap().all_finite(), "{bad} at {at}, transposed");
                }
            }
        });
    }
}
