//! General square matrices (LU with partial pivoting): solve, inverse and slogdet
//! against naive references, and singular matrices named.

use tensor::{Rng, Tensor};

/// det by the Leibniz expansion (n ≤ 4): the sum over permutations.
fn leibniz(a: &[f64], n: usize) -> f64 {
    fn perms(rest: Vec<usize>, acc: &mut Vec<Vec<usize>>, cur: Vec<usize>) {
        if rest.is_empty() {
            acc.push(cur);
            return;
        }
        for i in 0..rest.len() {
            let mut r = rest.clone();
            let x = r.remove(i);
            let mut c = cur.clone();
            c.push(x);
            perms(r, acc, c);
        }
    }
    let mut all = Vec::new();
    perms((0..n).collect(), &mut all, Vec::new());
    all.iter()
        .map(|p| {
            let inversions = (0..n)
                .flat_map(|i| (i + 1..n).map(move |j| (i, j)))
                .filter(|&(i, j)| p[i] > p[j])
                .count();
            let sign = if inversions % 2 == 0 { 1.0 } else { -1.0 };
            sign * (0..n).map(|i| a[i * n + p[i]]).product::<f64>()
        })
        .sum()
}

#[test]
fn solve_inverse_and_slogdet_match_naive_references() {
    let mut rng = Rng::new(3);
    for n in 1..=4 {
        let a = Tensor::<f64>::rand_normal(&[3, n, n], 0.0, 1.0, &mut rng).unwrap();
        let b = Tensor::<f64>::rand_normal(&[3, n, 2], 0.0, 1.0, &mut rng).unwrap();
        let x = a.solve(&b).unwrap();
        let residual = a
            .matmul(&x)
            .unwrap()
            .sub(&b)
            .unwrap()
            .abs()
            .max_all()
            .unwrap();
        assert!(residual < 1e-10, "n = {n}: residual {residual}");
        let eye = a
            .matmul(&a.inverse().unwrap())
            .unwrap()
            .sub(&Tensor::eye(n).unwrap())
            .unwrap();
        assert!(eye.abs().max_all().unwrap() < 1e-10);
        let (sign, log) = a.slogdet().unwrap();
        for (i, m) in a.to_vec().chunks(n * n).enumerate() {
            let d = leibniz(m, n);
            let got = sign.to_vec()[i] * log.to_vec()[i].exp();
            assert!(
                (got - d).abs() <= 1e-12 * (1.0 + d.abs()),
                "n = {n}: {got} vs {d}"
            );
        }
    }
    // A permutation matrix: det ±1 from the row exchanges alone.
    let p = Tensor::<f64>::from_vec(vec![0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0], &[3, 3])
        .unwrap();
    let (sign, log) = p.slogdet().unwrap();
    assert_eq!((sign.item().unwrap(), log.item().unwrap()), (1.0, 0.0));
    // f32 goes through f64.
    let a32 = Tensor::<f32>::from_vec(vec![4.0, 1.0, 2.0, 3.0], &[2, 2]).unwrap();
    assert_eq!(
        a32.solve(&Tensor::from_vec(vec![9.0, 8.0], &[2, 1]).unwrap())
            .unwrap()
            .to_vec(),
        vec![1.9, 1.4]
    );
}

#[test]
fn singular_and_malformed_inputs_are_named_errors() {
    let s = Tensor::<f64>::from_vec(vec![1.0, 2.0, 2.0, 4.0], &[2, 2]).unwrap();
    let e = s.inverse().unwrap_err().to_string();
    assert!(e.contains("singular") && e.contains("pivot 1"), "{e}");
    let (sign, log) = s.slogdet().unwrap();
    assert_eq!(
        (sign.item().unwrap(), log.item().unwrap()),
        (0.0, f64::NEG_INFINITY)
    );
    let a = Tensor::<f64>::eye(3).unwrap();
    assert!(a.solve(&Tensor::zeros(&[2, 1]).unwrap()).is_err());
    assert!(Tensor::<f64>::zeros(&[2, 3]).unwrap().inverse().is_err());
    let nan = Tensor::<f64>::from_vec(vec![f64::NAN, 0.0, 0.0, 1.0], &[2, 2]).unwrap();
    assert!(nan.solve(&Tensor::zeros(&[2, 1]).unwrap()).is_err());
}

/// A matrix whose inverse is beyond the element type's range (diag(10⁻³¹⁰),
/// whose singularity threshold n·ε·max|A| underflows to zero) is an error rather
/// than ∞ and NaN; a well-conditioned tiny one still inverts.
#[test]
fn subnormal_matrices_are_singular_or_overflow_by_name() {
    let t = |v: Vec<f64>| Tensor::<f64>::from_vec(v, &[2, 2]).unwrap();
    let tiny = Tensor::<f64>::eye(3).unwrap().mul_scalar(1e-310);
    let e = tiny.inverse().unwrap_err().to_string();
    assert!(e.contains("overflows F64") && e.contains("(0, 0)"), "{e}");
    let small = t(vec![2e-300, 0.0, 0.0, 4e-300])
        .inverse()
        .unwrap()
        .to_vec();
    assert_eq!(small, vec![1.0 / 2e-300, 0.0, 0.0, 1.0 / 4e-300]);
    // f32 (a subnormal diagonal): an inverse beyond f32's range overflows in the cast.
    let e = Tensor::<f32>::from_vec(vec![1e-39, 0.0, 0.0, 1e-39], &[2, 2])
        .unwrap()
        .inverse()
        .unwrap_err()
        .to_string();
    assert!(e.contains("overflows F32"), "{e}");
}
