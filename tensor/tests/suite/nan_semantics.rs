//! One test per row of the NaN table in `tensor::nan_semantics`: each in `f32` and
//! `f64`, with the special value at every position of a slice of 37 (longer than
//! any SIMD register, with a remainder), so the vector paths meet it in every lane.

use tensor::{Element, ErrorKind, Tensor};

const LEN: usize = 37;

/// 1, 2, … LEN with `special` at `at`.
fn with<T: Element>(special: f64, at: usize) -> Tensor<T> {
    let v: Vec<T> = (0..LEN)
        .map(|i| {
            T::from_f64(if i == at {
                special
            } else {
                (i % 7) as f64 + 1.0
            })
        })
        .collect();
    Tensor::from_vec(v, &[LEN]).unwrap()
}

fn f64s<T: Element>(t: &Tensor<T>) -> Vec<f64> {
    t.to_vec().iter().map(|v| v.as_f64()).collect()
}

/// Runs a generic test body in `f32` and in `f64`.
macro_rules! both_types {
    ($body:ident) => {
        $body::<f32>();
        $body::<f64>();
    };
}

#[test]
fn max_and_min_propagate_nan_and_argmax_points_at_it() {
    fn run<T: Element>() {
        for at in 0..LEN {
            let x = with::<T>(f64::NAN, at);
            assert!(
                f64s(&x.max(&[0], false).unwrap())[0].is_nan(),
                "max, NaN at {at}"
            );
            assert!(
                f64s(&x.min(&[0], false).unwrap())[0].is_nan(),
                "min, NaN at {at}"
            );
            assert!(x.max_all().unwrap().as_f64().is_nan());
            assert!(x.min_all().unwrap().as_f64().is_nan());
            assert_eq!(x.argmax(0, false).unwrap().to_vec(), vec![at]);
            assert_eq!(x.argmin(0, false).unwrap().to_vec(), vec![at]);
        }
        // Two NaNs: the first one's index.
        let mut v = f64s(&with::<T>(f64::NAN, 30));
        v[9] = f64::NAN;
        let x = Tensor::<T>::from_vec(v.iter().map(|&a| T::from_f64(a)).collect(), &[LEN]).unwrap();
        assert_eq!(x.argmax(0, false).unwrap().to_vec(), vec![9]);
        // ±∞ are ordinary values.
        let x = with::<T>(f64::NEG_INFINITY, 4);
        assert_eq!(x.argmin(0, false).unwrap().to_vec(), vec![4]);
        assert_eq!(x.min_all().unwrap().as_f64(), f64::NEG_INFINITY);
    }
    both_types!(run);
}

#[test]
fn maximum_and_minimum_propagate_nan_and_keep_the_first_zero() {
    fn run<T: Element>() {
        for at in 0..LEN {
            let (a, b) = (with::<T>(f64::NAN, at), with::<T>(0.5, (at + 3) % LEN));
            for r in [
                a.maximum(&b).unwrap(),
                b.maximum(&a).unwrap(),
                a.minimum(&b).unwrap(),
            ] {
                let r = f64s(&r);
                assert!(r[at].is_nan(), "NaN at {at}");
                assert_eq!(r.iter().filter(|v| v.is_nan()).count(), 1);
            }
        }
        let z = |v: f64| Tensor::<T>::from_vec(vec![T::from_f64(v)], &[1]).unwrap();
        let neg_first = f64s(&z(-0.0).maximum(&z(0.0)).unwrap())[0];
        let pos_first = f64s(&z(0.0).minimum(&z(-0.0)).unwrap())[0];
        assert!(neg_first == 0.0 && neg_first.is_sign_negative());
        assert!(pos_first == 0.0 && pos_first.is_sign_positive());
    }
    both_types!(run);
}

#[test]
fn clamp_relu_sign_and_abs_keep_nan() {
    fn run<T: Element>() {
        for at in 0..LEN {
            let x = with::<T>(f64::NAN, at);
            for (name, r) in [
                ("clamp", x.clamp(2.0, 3.0)),
                ("relu", x.relu()),
                ("leaky_relu", x.leaky_relu(0.1)),
                ("sign", x.sign()),
                ("abs", x.abs()),
            ] {
                let r = f64s(&r);
                assert!(r[at].is_nan(), "{name}, NaN at {at}");
                assert_eq!(r.iter().filter(|v| v.is_nan()).count(), 1, "{name}");
            }
        }
        let x = Tensor::<T>::from_vec(
            [f64::INFINITY, f64::NEG_INFINITY, -0.0, 0.0]
                .iter()
                .map(|&v| T::from_f64(v))
                .collect(),
            &[4],
        )
        .unwrap();
        assert_eq!(f64s(&x.clamp(-1.0, 1.0)), vec![1.0, -1.0, 0.0, 0.0]);
        assert_eq!(f64s(&x.relu())[1], 0.0);
        assert_eq!(f64s(&x.sign())[2..], [0.0, 0.0]);
        assert!(f64s(&x.abs())[2].is_sign_positive());
    }
    both_types!(run);
}

#[test]
fn sums_and_statistics_propagate_nan() {
    fn run<T: Element>() {
        for at in 0..LEN {
            let x = with::<T>(f64::NAN, at);
            assert!(
                x.sum_all().item().unwrap().as_f64().is_nan(),
                "sum, NaN at {at}"
            );
            assert!(x.mean_all().unwrap().item().unwrap().as_f64().is_nan());
            assert!(f64s(&x.prod(&[0], false).unwrap())[0].is_nan());
            assert!(f64s(&x.var(&[0], 1, false).unwrap())[0].is_nan());
            let c = f64s(&x.cumsum(0).unwrap());
            assert!(c[..at].iter().all(|v| v.is_finite()) && c[at..].iter().all(|v| v.is_nan()));
        }
        let mut v = f64s(&with::<T>(f64::INFINITY, 3));
        v[20] = f64::NEG_INFINITY;
        let x = Tensor::<T>::from_vec(v.iter().map(|&a| T::from_f64(a)).collect(), &[LEN]).unwrap();
        assert!(x.sum_all().item().unwrap().as_f64().is_nan(), "∞ − ∞");
    }
    both_types!(run);
}

#[test]
fn softmax_and_logsumexp_follow_the_limits() {
    fn run<T: Element>() {
        for at in 0..LEN {
            let nan = with::<T>(f64::NAN, at);
            assert!(f64s(&nan.softmax(0).unwrap()).iter().all(|v| v.is_nan()));
            assert!(f64s(&nan.log_softmax(0).unwrap())
                .iter()
                .all(|v| v.is_nan()));
            assert!(f64s(&nan.logsumexp(&[0], false).unwrap())[0].is_nan());
            let neg = with::<T>(f64::NEG_INFINITY, at);
            let p = f64s(&neg.softmax(0).unwrap());
            assert_eq!(p[at], 0.0);
            assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-5);
            assert_eq!(f64s(&neg.log_softmax(0).unwrap())[at], f64::NEG_INFINITY);
            let pos = with::<T>(f64::INFINITY, at);
            assert!(f64s(&pos.softmax(0).unwrap()).iter().all(|v| v.is_nan()));
            assert_eq!(f64s(&pos.logsumexp(&[0], false).unwrap())[0], f64::INFINITY);
        }
        let all_neg = Tensor::<T>::full(&[LEN], T::from_f64(f64::NEG_INFINITY)).unwrap();
        assert!(f64s(&all_neg.softmax(0).unwrap())
            .iter()
            .all(|v| v.is_nan()));
        assert_eq!(
            f64s(&all_neg.logsumexp(&[0], false).unwrap())[0],
            f64::NEG_INFINITY
        );
    }
    both_types!(run);
}

#[test]
fn comparisons_are_ieee() {
    fn run<T: Element>() {
        for at in 0..LEN {
            let x = with::<T>(f64::NAN, at);
            let y = with::<T>(f64::NAN, (at + 1) % LEN);
            let eq = f64s(&x.eq(&x).unwrap());
            assert_eq!(eq[at], 0.0, "NaN equals nothing, itself included");
            assert_eq!(eq.iter().sum::<f64>(), (LEN - 1) as f64);
            assert_eq!(f64s(&x.ne(&x).unwrap())[at], 1.0);
            for r in [x.lt(&y), x.le(&y), x.gt(&y), x.ge(&y)] {
                assert_eq!(f64s(&r.unwrap())[at], 0.0);
            }
        }
        let z = |v: f64| Tensor::<T>::from_vec(vec![T::from_f64(v)], &[1]).unwrap();
        assert_eq!(f64s(&z(-0.0).eq(&z(0.0)).unwrap()), vec![1.0]);
    }
    both_types!(run);
}

#[test]
fn max_pooling_picks_a_nan() {
    fn run<T: Element>() {
        let mut v = vec![T::from_f64(1.0); 16];
        v[5] = T::from_f64(f64::NAN);
        v[6] = T::from_f64(9.0);
        let img = Tensor::<T>::from_vec(v, &[1, 1, 4, 4]).unwrap();
        let (idx, shape) = img.max_pool2d_indices((2, 2), (2, 2), (0, 0)).unwrap();
        assert_eq!(shape, [1, 1, 2, 2]);
        assert_eq!(idx, vec![5, 6, 8, 10]);
    }
    both_types!(run);
}

#[test]
fn roots_logs_and_squashing_functions_take_their_limits() {
    fn run<T: Element>() {
        let x = Tensor::<T>::from_vec(
            [-1.0, 0.0, f64::INFINITY, f64::NEG_INFINITY, f64::NAN]
                .iter()
                .map(|&v| T::from_f64(v))
                .collect(),
            &[5],
        )
        .unwrap();
        let sqrt = f64s(&x.sqrt());
        assert!(sqrt[0].is_nan() && sqrt[4].is_nan() && sqrt[2] == f64::INFINITY);
        let ln = f64s(&x.ln());
        assert!(ln[0].is_nan() && ln[1] == f64::NEG_INFINITY && ln[4].is_nan());
        assert_eq!(f64s(&x.sigmoid())[2..4], [1.0, 0.0]);
        assert_eq!(f64s(&x.tanh())[2..4], [1.0, -1.0]);
        assert_eq!(f64s(&x.softplus())[2..4], [f64::INFINITY, 0.0]);
        for f in [x.sigmoid(), x.tanh(), x.softplus()] {
            assert!(f64s(&f)[4].is_nan());
        }
    }
    both_types!(run);
}

#[test]
fn solvers_refuse_non_finite_input_by_kind() {
    fn run<T: Element>() {
        for bad in [f64::NAN, f64::INFINITY] {
            let a = Tensor::<T>::from_vec(
                [4.0, bad, bad, 3.0]
                    .iter()
                    .map(|&v| T::from_f64(v))
                    .collect(),
                &[2, 2],
            )
            .unwrap();
            let b = Tensor::<T>::ones(&[2, 1]).unwrap();
            for (name, e) in [
                ("cholesky", a.cholesky().err()),
                ("solve", a.solve(&b).err()),
                ("inverse", a.inverse().err()),
                ("eigh", a.eigh().err()),
                ("solve_spd", a.solve_spd(&b).err()),
            ] {
                let e = e.unwrap_or_else(|| panic!("{name} accepted {bad}"));
                assert_eq!(e.kind(), ErrorKind::NonFinite, "{name}: {e}");
            }
        }
    }
    both_types!(run);
}
