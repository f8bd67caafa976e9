//! The hostile profile (NaN with payloads, ±∞, ±0, subnormals, the type's largest
//! values, neighbours one ulp apart) through the engine's properties, in `f32` and
//! `f64`, on strided and broadcast layouts: element-wise maps and binary ops,
//! reductions along an axis, indexing, matmul and the linear-algebra routines.
//! Each property states what the result must be for such values (the rules of
//! `tensor::nan_semantics` and IEEE arithmetic) where it is defined, and only the
//! NaN rule where the order of operations decides the rest (sums that overflow).

use crate::common::config;
use proptest::prelude::*;
use tensor::strategies::{broadcast_pair, tensor_in, tensor_with_shape_in, Values};
use tensor::{Element, ErrorKind, Tensor};

/// Values this large may overflow in a sum or a product depending on the order
/// of operations, so only the NaN rule is asserted where they occur.
fn huge<T: Element>(v: f64) -> bool {
    v.is_finite() && v.abs() > T::max_value().as_f64() / 1e6
}

/// `got` against `want` (computed in f64 and rounded to `T`): the same class (NaN,
/// the same infinity) and, for finite values, within `ulps` units of `T`'s epsilon
/// relative to |want| (or absolutely, below `T`'s smallest normal value).
fn close<T: Element>(got: f64, want: f64, ulps: f64) -> bool {
    let want = T::from_f64(want).as_f64();
    if want.is_nan() || got.is_nan() {
        return want.is_nan() && got.is_nan();
    }
    if want.is_infinite() || got.is_infinite() {
        return want == got;
    }
    let scale = want.abs().max(T::min_positive_value().as_f64());
    (got - want).abs() <= ulps * T::EPS * scale
}

/// The values of `t`'s lines along its last axis, in logical order.
fn lines<T: Element>(t: &Tensor<T>) -> Vec<Vec<f64>> {
    let v: Vec<f64> = t.to_vec().iter().map(|x| x.as_f64()).collect();
    let len = *t.shape().last().unwrap();
    if len == 0 {
        let count = t.shape()[..t.ndim() - 1].iter().product();
        return vec![Vec::new(); count];
    }
    v.chunks(len).map(<[f64]>::to_vec).collect()
}

/// Element-wise maps: the scalar function of the value in f64, rounded to `T`
/// (SIMD kernels included, which `ulps` bounds), special values to the class.
fn unary_maps_follow_the_scalar_functions<T: Element>(t: &Tensor<T>) -> Result<(), TestCaseError> {
    let x: Vec<f64> = t.to_vec().iter().map(|v| v.as_f64()).collect();
    type Map<T> = (&'static str, Tensor<T>, fn(f64) -> f64, f64);
    let softplus = |v: f64| if v > 30.0 { v } else { v.exp().ln_1p() };
    let cases: [Map<T>; 11] = [
        ("exp", t.exp(), f64::exp, 4.0),
        ("tanh", t.tanh(), f64::tanh, 4.0),
        ("sigmoid", t.sigmoid(), |v| 1.0 / (1.0 + (-v).exp()), 4.0),
        ("softplus", t.softplus(), softplus, 4.0),
        ("ln", t.ln(), f64::ln, 1.0),
        ("sqrt", t.sqrt(), f64::sqrt, 1.0),
        ("abs", t.abs(), f64::abs, 0.0),
        ("neg", t.neg(), |v| -v, 0.0),
        (
            "relu",
            t.relu(),
            |v| if v.is_nan() { v } else { v.max(0.0) },
            0.0,
        ),
        (
            "sign",
            t.sign(),
            |v| {
                if v.is_nan() || v == 0.0 {
                    v * 0.0
                } else {
                    v.signum()
                }
            },
            0.0,
        ),
        (
            "clamp",
            t.clamp(-2.0, 2.0),
            |v| if v.is_nan() { v } else { v.clamp(-2.0, 2.0) },
            0.0,
        ),
    ];
    for (name, got, f, ulps) in cases {
        for (g, &v) in got.to_vec().iter().zip(&x) {
            let g = g.as_f64();
            prop_assert!(
                close::<T>(g, f(v), ulps),
                "{} {}({:e}) = {:e}, the scalar function gives {:e}",
                T::DTYPE.name(),
                name,
                v,
                g,
                T::from_f64(f(v)).as_f64()
            );
        }
    }
    Ok(())
}

/// Binary ops under broadcasting: the IEEE operation in `T` on each pair, to the
/// bit (NaN to a NaN); `maximum`/`minimum` propagate NaN and keep the first
/// argument on a tie (−0 against +0); comparisons are false against NaN.
fn binary_ops_are_the_ieee_operations<T: Element>(
    a: &Tensor<T>,
    b: &Tensor<T>,
) -> Result<(), TestCaseError> {
    let shape = a.add(b).unwrap().shape().to_vec();
    let (x, y) = (
        a.broadcast_to(&shape).unwrap().to_vec(),
        b.broadcast_to(&shape).unwrap().to_vec(),
    );
    type Op<T> = (&'static str, Tensor<T>, fn(T, T) -> T);
    let cases: [Op<T>; 8] = [
        ("add", a.add(b).unwrap(), |p, q| p + q),
        ("sub", a.sub(b).unwrap(), |p, q| p - q),
        ("mul", a.mul(b).unwrap(), |p, q| p * q),
        ("div", a.div(b).unwrap(), |p, q| p / q),
        ("maximum", a.maximum(b).unwrap(), |p, q| {
            if p.is_nan() || q.is_nan() {
                T::nan()
            } else if q > p {
                q
            } else {
                p
            }
        }),
        ("minimum", a.minimum(b).unwrap(), |p, q| {
            if p.is_nan() || q.is_nan() {
                T::nan()
            } else if q < p {
                q
            } else {
                p
            }
        }),
        ("lt", a.lt(b).unwrap(), |p, q| {
            if p < q {
                T::one()
            } else {
                T::zero()
            }
        }),
        ("eq", a.eq(b).unwrap(), |p, q| {
            if p == q {
                T::one()
            } else {
                T::zero()
            }
        }),
    ];
    for (name, got, f) in cases {
        for ((g, &p), &q) in got.to_vec().iter().zip(&x).zip(&y) {
            let want = f(p, q);
            let same =
                (g.is_nan() && want.is_nan()) || g.as_f64().to_bits() == want.as_f64().to_bits();
            prop_assert!(
                same,
                "{} {}({:e}, {:e}) = {:e}, IEEE gives {:e}",
                T::DTYPE.name(),
                name,
                p.as_f64(),
                q.as_f64(),
                g.as_f64(),
                want.as_f64()
            );
        }
    }
    Ok(())
}

/// Reductions along the last axis against the line's values: `max`/`min` and
/// `argmax`/`argmin` by the NaN table, `sum` and `mean` by IEEE classes (NaN from a
/// NaN or from +∞ meeting −∞, an infinity otherwise, close to the exact sum when
/// finite), `cumsum` NaN from the first NaN on, `softmax` and `logsumexp` by the
/// table. An empty line: `max` and friends refuse it with an error.
fn reductions_follow_the_nan_table<T: Element>(t: &Tensor<T>) -> Result<(), TestCaseError> {
    let name = T::DTYPE.name();
    let ls = lines(t);
    let len = *t.shape().last().unwrap();
    if len == 0 {
        prop_assert!(t.max(&[-1], false).is_err() && t.argmax(-1, false).is_err());
        return Ok(());
    }
    let f = |r: Tensor<T>| -> Vec<f64> { r.to_vec().iter().map(|v| v.as_f64()).collect() };
    let (max, min) = (
        f(t.max(&[-1], false).unwrap()),
        f(t.min(&[-1], false).unwrap()),
    );
    let (argmax, argmin) = (
        t.argmax(-1, false).unwrap().to_vec(),
        t.argmin(-1, false).unwrap().to_vec(),
    );
    let (sum, mean) = (
        f(t.sum(&[-1], false).unwrap()),
        f(t.mean(&[-1], false).unwrap()),
    );
    let cumsum = lines(&t.cumsum(-1).unwrap());
    let softmax = lines(&t.softmax(-1).unwrap());
    let lse = f(t.logsumexp(&[-1], false).unwrap());
    for (i, line) in ls.iter().enumerate() {
        let first_nan = line.iter().position(|v| v.is_nan());
        let top = line.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let bottom = line.iter().copied().fold(f64::INFINITY, f64::min);
        match first_nan {
            Some(j) => {
                prop_assert!(
                    max[i].is_nan() && min[i].is_nan(),
                    "{name} max/min of {line:?}"
                );
                prop_assert_eq!(argmax[i], j, "{} argmax of {:?}", name, line);
                prop_assert_eq!(argmin[i], j, "{} argmin of {:?}", name, line);
                prop_assert!(
                    sum[i].is_nan() && mean[i].is_nan() && lse[i].is_nan(),
                    "{name} sum/mean/logsumexp of {line:?}"
                );
                prop_assert!(
                    cumsum[i][j..].iter().all(|v| v.is_nan()),
                    "{name} cumsum of {line:?}"
                );
                prop_assert!(
                    softmax[i].iter().all(|v| v.is_nan()),
                    "{name} softmax of {line:?}"
                );
                continue;
            }
            None => {
                prop_assert_eq!(max[i], top, "{} max of {:?}", name, line);
                prop_assert_eq!(min[i], bottom, "{} min of {:?}", name, line);
                prop_assert_eq!(argmax[i], line.iter().position(|&v| v == top).unwrap());
                prop_assert_eq!(argmin[i], line.iter().position(|&v| v == bottom).unwrap());
            }
        }
        let (pos, neg) = (
            line.contains(&f64::INFINITY),
            line.contains(&f64::NEG_INFINITY),
        );
        // softmax and logsumexp shift by the maximum, so huge values are fine.
        if pos || line.iter().all(|&v| v == f64::NEG_INFINITY) {
            prop_assert!(
                softmax[i].iter().all(|v| v.is_nan()),
                "{name} softmax of {line:?}"
            );
            prop_assert_eq!(lse[i], top, "{} logsumexp of {:?}", name, line);
        } else {
            let total: f64 = softmax[i].iter().sum();
            prop_assert!(
                (total - 1.0).abs() <= 4.0 * len as f64 * T::EPS,
                "{name} softmax of {line:?} sums to {total}"
            );
            for (p, v) in softmax[i].iter().zip(line) {
                prop_assert!((0.0..=1.0).contains(p), "{name} softmax of {line:?}");
                prop_assert!(
                    *v != f64::NEG_INFINITY || *p == 0.0,
                    "{name} softmax of {line:?}"
                );
            }
            prop_assert!(
                lse[i] >= T::from_f64(top).as_f64() && lse[i].is_finite(),
                "{name} logsumexp of {line:?}: {}",
                lse[i]
            );
        }
        if line.iter().any(|&v| huge::<T>(v)) {
            continue; // the order of the additions decides overflow
        }
        let want = match (pos, neg) {
            (true, true) => f64::NAN,
            (true, false) => f64::INFINITY,
            (false, true) => f64::NEG_INFINITY,
            (false, false) => line.iter().sum(),
        };
        let magnitude: f64 = line.iter().filter(|v| v.is_finite()).map(|v| v.abs()).sum();
        let ok = if want.is_finite() {
            (sum[i] - want).abs()
                <= 2.0 * len as f64 * T::EPS * magnitude + T::min_positive_value().as_f64()
        } else {
            want.to_bits() == sum[i].to_bits() || want.is_nan() && sum[i].is_nan()
        };
        prop_assert!(
            ok,
            "{} sum of {:?} = {:e}, want {:e}",
            name,
            line,
            sum[i],
            want
        );
    }
    Ok(())
}

/// matmul: an entry is NaN where a product term is (a NaN, or 0·∞) or where terms
/// of both infinite signs meet; an infinity where they are of one sign; close to
/// the exact sum otherwise. Rows or columns holding huge values, whose partial sums
/// may overflow in any order, are held to the NaN rule only.
fn matmul_follows_ieee_sums<T: Element>(a: &Tensor<T>, b: &Tensor<T>) -> Result<(), TestCaseError> {
    let (m, k, n) = (a.shape()[0], a.shape()[1], b.shape()[1]);
    let c: Vec<f64> = a
        .matmul(b)
        .unwrap()
        .to_vec()
        .iter()
        .map(|v| v.as_f64())
        .collect();
    let (av, bv): (Vec<f64>, Vec<f64>) = (
        a.to_vec().iter().map(|v| v.as_f64()).collect(),
        b.to_vec().iter().map(|v| v.as_f64()).collect(),
    );
    for i in 0..m {
        for j in 0..n {
            let terms: Vec<f64> = (0..k).map(|p| av[i * k + p] * bv[p * n + j]).collect();
            let factors_huge = (0..k).any(|p| huge::<T>(av[i * k + p]) || huge::<T>(bv[p * n + j]));
            let got = c[i * n + j];
            let what = || {
                format!(
                    "{} matmul entry ({i}, {j}) of {:?} · {:?}: {got:e}",
                    T::DTYPE.name(),
                    (0..k).map(|p| av[i * k + p]).collect::<Vec<_>>(),
                    (0..k).map(|p| bv[p * n + j]).collect::<Vec<_>>()
                )
            };
            if terms.iter().any(|t| t.is_nan()) {
                prop_assert!(got.is_nan(), "{}", what());
                continue;
            }
            if factors_huge {
                continue;
            }
            let (pos, neg) = (
                terms.contains(&f64::INFINITY),
                terms.contains(&f64::NEG_INFINITY),
            );
            match (pos, neg) {
                (true, true) => prop_assert!(got.is_nan(), "{}", what()),
                (true, false) => prop_assert_eq!(got, f64::INFINITY, "{}", what()),
                (false, true) => prop_assert_eq!(got, f64::NEG_INFINITY, "{}", what()),
                (false, false) => {
                    let want: f64 = terms.iter().sum();
                    let magnitude: f64 = terms.iter().map(|t| t.abs()).sum();
                    let tol =
                        2.0 * k as f64 * T::EPS * magnitude + T::min_positive_value().as_f64();
                    prop_assert!((got - want).abs() <= tol, "{} (want {want:e})", what());
                }
            }
        }
    }
    Ok(())
}

/// Indexing and joining move bits: `cat`, `stack`, `gather` and `narrow` give the
/// operands' own bits (NaN payloads, −0 and subnormals included).
fn indexing_moves_bits<T: Element>(
    t: &Tensor<T>,
    u: &Tensor<T>,
    pick: &[usize],
) -> Result<(), TestCaseError> {
    let bits = |v: Vec<T>| -> Vec<u64> { v.iter().map(|x| x.as_f64().to_bits()).collect() };
    let joined = Tensor::cat(&[t, u], 0).unwrap();
    let want: Vec<u64> = bits(t.to_vec())
        .into_iter()
        .chain(bits(u.to_vec()))
        .collect();
    prop_assert_eq!(bits(joined.to_vec()), want);
    let stacked = Tensor::stack(&[t, u], 0).unwrap();
    prop_assert_eq!(
        bits(stacked.narrow(0, 1, 1).unwrap().to_vec()),
        bits(u.to_vec())
    );
    let rows = t.shape()[0];
    if rows > 0 {
        let rest: Vec<usize> = t.shape()[1..].to_vec();
        let idx: Vec<usize> = pick.iter().map(|p| p % rows).collect();
        let mut index_shape = vec![idx.len()];
        index_shape.extend(&rest);
        let cols: usize = rest.iter().product();
        let index: Vec<usize> = idx
            .iter()
            .flat_map(|&r| std::iter::repeat_n(r, cols))
            .collect();
        let index = Tensor::from_vec(index, &index_shape).unwrap();
        let gathered = t.gather(0, &index).unwrap();
        let selected = t.index_select(0, &idx).unwrap();
        prop_assert_eq!(bits(gathered.to_vec()), bits(selected.to_vec()));
        let source = bits(t.contiguous().to_vec());
        let want: Vec<u64> = idx
            .iter()
            .flat_map(|&r| source[r * cols..(r + 1) * cols].to_vec())
            .collect();
        prop_assert_eq!(bits(gathered.to_vec()), want);
    }
    Ok(())
}

/// A square matrix from hostile values, and an integer right-hand side.
fn square_system(max_n: usize) -> impl Strategy<Value = (Tensor<f64>, Tensor<f64>)> {
    (1..=max_n).prop_flat_map(|n| {
        (
            tensor_with_shape_in::<f64>(vec![n, n], false, Values::Hostile),
            tensor_with_shape_in::<f64>(vec![n, 2], false, Values::Integers),
        )
    })
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn unary_maps_meet_hostile_values(a in tensor_in::<f32>(3, 9, Values::Hostile), b in tensor_in::<f64>(3, 9, Values::Hostile)) {
        unary_maps_follow_the_scalar_functions(&a)?;
        unary_maps_follow_the_scalar_functions(&b)?;
    }

    #[test]
    fn binary_ops_meet_hostile_values(
        (a, b, c, d) in broadcast_pair(3, 5).prop_flat_map(|(sa, sb)| (
            tensor_with_shape_in::<f32>(sa.clone(), true, Values::Hostile),
            tensor_with_shape_in::<f32>(sb.clone(), true, Values::Hostile),
            tensor_with_shape_in::<f64>(sa, true, Values::Hostile),
            tensor_with_shape_in::<f64>(sb, true, Values::Hostile),
        ))
    ) {
        binary_ops_are_the_ieee_operations(&a, &b)?;
        binary_ops_are_the_ieee_operations(&c, &d)?;
        // Ties, −0 against +0 among them, and NaN against itself.
        binary_ops_are_the_ieee_operations(&a, &a.neg())?;
        binary_ops_are_the_ieee_operations(&c.abs(), &c)?;
    }

    #[test]
    fn reductions_meet_hostile_values(a in tensor_in::<f32>(3, 9, Values::Hostile), b in tensor_in::<f64>(3, 9, Values::Hostile)) {
        if a.ndim() > 0 { reductions_follow_the_nan_table(&a)?; }
        if b.ndim() > 0 { reductions_follow_the_nan_table(&b)?; }
    }

    /// Short depths (so that some entries meet no special value) and sizes past
    /// the micro-kernels' tiles, operands in any layout.
    #[test]
    fn matmul_meets_hostile_values(
        (a, b, c, d) in (1usize..=20, 0usize..=6, 1usize..=20).prop_flat_map(|(m, k, n)| (
            tensor_with_shape_in::<f32>(vec![m, k], false, Values::Hostile),
            tensor_with_shape_in::<f32>(vec![k, n], false, Values::Hostile),
            tensor_with_shape_in::<f64>(vec![m, k], false, Values::Hostile),
            tensor_with_shape_in::<f64>(vec![k, n], false, Values::Hostile),
        ))
    ) {
        matmul_follows_ieee_sums(&a, &b)?;
        matmul_follows_ieee_sums(&c, &d)?;
    }

    #[test]
    fn indexing_meets_hostile_values(
        (a, b, c, d, pick) in proptest::collection::vec(1usize..=4, 1..=3).prop_flat_map(|s| (
            tensor_with_shape_in::<f32>(s.clone(), true, Values::Hostile),
            tensor_with_shape_in::<f32>(s.clone(), true, Values::Hostile),
            tensor_with_shape_in::<f64>(s.clone(), true, Values::Hostile),
            tensor_with_shape_in::<f64>(s, true, Values::Hostile),
            proptest::collection::vec(0usize..16, 0..6),
        ))
    ) {
        indexing_moves_bits(&a, &b, &pick)?;
        indexing_moves_bits(&c, &d, &pick)?;
    }

}

proptest! {
    #![proptest_config(config(256))]

    /// The linear-algebra routines refuse a NaN or infinity where they read (the
    /// lower triangle for the symmetric ones, everything for the others) with an
    /// error of kind `NonFinite`; on finite input they either succeed with finite
    /// results or return an error, never a silent NaN or infinity.
    #[test]
    fn linalg_refuses_non_finite_input((a, rhs) in square_system(5)) {
        let n = a.shape()[0];
        let v = a.to_vec();
        let lower_finite = (0..n).all(|i| (0..=i).all(|j| v[i * n + j].is_finite()));
        let all_finite = v.iter().all(|x| x.is_finite());
        type Routine = (&'static str, bool, tensor::Result<Vec<f64>>);
        let routines: [Routine; 8] = [
            ("cholesky", true, a.cholesky().map(|t| t.to_vec())),
            ("solve_spd", true, a.solve_spd(&rhs).map(|t| t.to_vec())),
            ("inverse_spd", true, a.inverse_spd().map(|t| t.to_vec())),
            ("eigh", true, a.eigh().map(|(w, q)| [w.to_vec(), q.to_vec()].concat())),
            ("solve", false, a.solve(&rhs).map(|t| t.to_vec())),
            ("inverse", false, a.inverse().map(|t| t.to_vec())),
            ("slogdet", false, a.slogdet().map(|(s, l)| [s.to_vec(), l.to_vec()].concat())),
            ("qr", false, a.qr().map(|(q, r)| [q.to_vec(), r.to_vec()].concat())),
        ];
        for (name, lower_only, result) in routines {
            let readable_finite = if lower_only { lower_finite } else { all_finite };
            match result {
                Err(e) if !readable_finite => prop_assert_eq!(e.kind(), ErrorKind::NonFinite, "{}: {}", name, e),
                Err(e) => prop_assert!(e.kind() != ErrorKind::NonFinite, "{}: {} on finite input {:?}", name, e, v),
                Ok(_) if !readable_finite => prop_assert!(false, "{} accepted {:?}", name, v),
                Ok(out) => prop_assert!(
                    out.iter().all(|x| x.is_finite() || name == "slogdet"),
                    "{} of {:?} gives {:?}", name, v, out
                ),
            }
        }
    }
}
