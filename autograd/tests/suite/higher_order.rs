//! Gradients against closed forms: an MLP by hand, Hessian- and Jacobian-vector
//! products, branching graphs.

use autograd::{backward, backward_retaining, grad, hvp, jvp, Var};
use tensor::{Rng, Tensor};

fn close(a: &Tensor<f64>, b: &Tensor<f64>, tol: f64) {
    assert_eq!(a.shape(), b.shape());
    for (x, y) in a.to_vec().iter().zip(b.to_vec()) {
        assert!((x - y).abs() <= tol * (1.0 + y.abs()), "{x} vs {y}");
    }
}

#[test]
fn mlp_gradients_match_the_hand_derived_formula() {
    // loss = ½‖W₂ tanh(W₁ x + b₁) − y‖² / n, with x as columns.
    let mut rng = Rng::new(1);
    let (n, d, h, o) = (5, 4, 6, 3);
    let x = Tensor::<f64>::rand_normal(&[d, n], 0.0, 1.0, &mut rng).unwrap();
    let y = Tensor::<f64>::rand_normal(&[o, n], 0.0, 1.0, &mut rng).unwrap();
    let w1 = Var::leaf(Tensor::rand_normal(&[h, d], 0.0, 0.5, &mut rng).unwrap());
    let b1 = Var::leaf(Tensor::rand_normal(&[h, 1], 0.0, 0.5, &mut rng).unwrap());
    let w2 = Var::leaf(Tensor::rand_normal(&[o, h], 0.0, 0.5, &mut rng).unwrap());
    let xv = Var::constant(x.clone());
    let a = w1.matmul(&xv).unwrap().add(&b1).unwrap();
    let z = a.tanh().unwrap();
    let r = w2.matmul(&z).unwrap().sub(&Var::constant(y)).unwrap();
    let loss = r
        .square()
        .unwrap()
        .sum_all()
        .unwrap()
        .mul_scalar(0.5 / n as f64)
        .unwrap();
    let g = backward_retaining(&loss, &[&a]).unwrap();
    // By hand: δ₂ = r/n; dW₂ = δ₂ zᵀ; δ₁ = (W₂ᵀ δ₂) ⊙ (1 − z²); dW₁ = δ₁ xᵀ; db₁ = Σ δ₁.
    let d2 = r.value().mul_scalar(1.0 / n as f64);
    let zv = z.value();
    let dw2 = d2.matmul(&zv.t().unwrap()).unwrap();
    let d1 = w2
        .value()
        .t()
        .unwrap()
        .matmul(&d2)
        .unwrap()
        .mul(&zv.square().neg().add_scalar(1.0))
        .unwrap();
    let dw1 = d1.matmul(&x.t().unwrap()).unwrap();
    let db1 = d1.sum(&[1], true).unwrap();
    close(g.get(&w2).unwrap(), &dw2, 1e-12);
    close(g.get(&w1).unwrap(), &dw1, 1e-12);
    close(g.get(&b1).unwrap(), &db1, 1e-12);
    // The retained intermediate gradient is δ₁.
    close(g.get(&a).unwrap(), &d1, 1e-12);
}

#[test]
fn hvp_of_a_quadratic_is_a_times_v() {
    let mut rng = Rng::new(2);
    let m = Tensor::<f64>::rand_normal(&[5, 5], 0.0, 1.0, &mut rng).unwrap();
    let a = m.add(&m.t().unwrap()).unwrap();
    let x = Tensor::<f64>::rand_normal(&[5, 1], 0.0, 1.0, &mut rng).unwrap();
    let v = Tensor::<f64>::rand_normal(&[5, 1], 0.0, 1.0, &mut rng).unwrap();
    let av = Var::constant(a.clone());
    let f = |xs: &[Var<f64>]| {
        xs[0]
            .t()?
            .matmul(&av.matmul(&xs[0])?)?
            .mul_scalar(0.5)?
            .sum_all()
    };
    let hv = hvp(f, &[x], std::slice::from_ref(&v)).unwrap();
    close(&hv[0], &a.matmul(&v).unwrap(), 1e-13);
}

#[test]
fn hessian_of_a_cubic_through_nested_grads() {
    // f(x) = Σ x³ + x₀x₁: ∇f = 3x² + (x₁, x₀, 0), ∇²f = diag(6x) + offdiag(0,1).
    let x = Var::leaf(Tensor::from_vec(vec![0.5, -1.0, 2.0], &[3]).unwrap());
    let f = x
        .powf(3.0)
        .unwrap()
        .sum_all()
        .unwrap()
        .add(
            &x.narrow(0, 0, 1)
                .unwrap()
                .mul(&x.narrow(0, 1, 1).unwrap())
                .unwrap()
                .sum_all()
                .unwrap(),
        )
        .unwrap();
    let g = grad(&[&f], &[&x], None, true).unwrap().remove(0);
    assert_eq!(g.value().to_vec(), vec![0.75 - 1.0, 3.0 + 0.5, 12.0]);
    let mut rows = vec![];
    for i in 0..3 {
        let mut e = vec![0.0; 3];
        e[i] = 1.0;
        let c = Var::constant(Tensor::from_vec(e, &[3]).unwrap());
        rows.push(
            grad(&[&g], &[&x], Some(&[&c]), false).unwrap()[0]
                .value()
                .to_vec(),
        );
    }
    assert_eq!(
        rows,
        vec![
            vec![3.0, 1.0, 0.0],
            vec![1.0, -6.0, 0.0],
            vec![0.0, 0.0, 12.0]
        ]
    );
}

#[test]
fn jvp_matches_finite_differences() {
    let mut rng = Rng::new(3);
    let x = Tensor::<f64>::rand_normal(&[4, 3], 0.0, 1.0, &mut rng).unwrap();
    let t = Tensor::<f64>::rand_normal(&[4, 3], 0.0, 1.0, &mut rng).unwrap();
    let f = |xs: &[Var<f64>]| xs[0].tanh()?.matmul(&xs[0].t()?)?.softmax(-1);
    let (y, jt) = jvp(f, std::slice::from_ref(&x), std::slice::from_ref(&t)).unwrap();
    let eps = 1e-6;
    let fx = |x: &Tensor<f64>| {
        autograd::no_grad(|| f(&[Var::constant(x.clone())]).unwrap().value().clone())
    };
    let plus = fx(&x.add(&t.mul_scalar(eps)).unwrap());
    let minus = fx(&x.sub(&t.mul_scalar(eps)).unwrap());
    let fd = plus.sub(&minus).unwrap().mul_scalar(0.5 / eps);
    close(&jt, &fd, 1e-7);
    close(&y, &fx(&x), 0.0);
}

#[test]
fn a_var_used_several_times_accumulates_its_gradient() {
    // f = x·x + 3x + sin(x): df/dx = 2x + 3 + cos x.
    let x = Var::leaf(Tensor::from_vec(vec![0.3, -1.2], &[2]).unwrap());
    let f = x
        .mul(&x)
        .unwrap()
        .add(&x.mul_scalar(3.0).unwrap())
        .unwrap()
        .add(&x.sin().unwrap())
        .unwrap()
        .sum_all()
        .unwrap();
    let g = backward(&f).unwrap();
    let want: Vec<f64> = [0.3f64, -1.2]
        .iter()
        .map(|v| 2.0 * v + 3.0 + v.cos())
        .collect();
    close(
        g.get(&x).unwrap(),
        &Tensor::from_vec(want, &[2]).unwrap(),
        1e-15,
    );
}

#[test]
fn gradients_accumulate_over_backward_passes() {
    let x = Var::leaf(Tensor::from_vec(vec![1.0, 2.0], &[2]).unwrap());
    let mut total = backward(&x.square().unwrap().sum_all().unwrap()).unwrap();
    total
        .accumulate(backward(&x.mul_scalar(5.0).unwrap().sum_all().unwrap()).unwrap())
        .unwrap();
    assert_eq!(total.get(&x).unwrap().to_vec(), vec![7.0, 9.0]);
}
