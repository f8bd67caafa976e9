//! Helpers shared by the LLQR tests (each test binary uses a subset): a tiny tanh
//! MLP classifier with an independent finite-difference Fisher, and a two-parameter
//! quadratic with its gradient in closed form.
#![allow(dead_code)]

use autograd::Var;
use nn::{loss, Activation, Mlp, Module, ParamStore};
use tensor::{Rng, Tensor};

pub struct Tiny {
    pub store: ParamStore<f64>,
    pub mlp: Mlp<f64>,
    pub x: Tensor<f64>,
    pub y: Vec<usize>,
}

pub fn tiny(seed: u64) -> Tiny {
    let store = ParamStore::new();
    let mut rng = Rng::new(seed);
    let mlp = Mlp::new(&store.root(), &[3, 4, 3], Activation::Tanh, &mut rng).unwrap();
    let x = Tensor::rand_normal(&[6, 3], 0.0, 1.0, &mut rng).unwrap();
    Tiny {
        store,
        mlp,
        x,
        y: vec![0, 2, 1, 1, 0, 2],
    }
}

pub fn flat(ts: &[Tensor<f64>]) -> Vec<f64> {
    ts.iter().flat_map(|t| t.to_vec()).collect()
}

pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

impl Tiny {
    pub fn logits(&self) -> tensor::Result<Var<f64>> {
        self.mlp.forward(&Var::constant(self.x.clone()))
    }

    /// The mean cross-entropy's gradient, flat.
    pub fn grad(&self) -> Vec<f64> {
        let l = loss::cross_entropy(&self.logits().unwrap(), &self.y, 0.0).unwrap();
        let g = autograd::backward(&l).unwrap();
        flat(&nn::ParamGrads::collect(&self.store.trainable(), &g).into_tensors())
    }

    pub fn shaped(&self, flat_v: &[f64]) -> Vec<Tensor<f64>> {
        optim::llqr::curvature::unflatten(&self.store.trainable(), flat_v).unwrap()
    }

    /// The batch-summed Fisher times `v`, computed independently of the library's
    /// curvature code: J v by central differences of the logits, the output Hessian
    /// Σ_b (diag p_b − p_b p_bᵀ) written out row by row, and Jᵀ w by plain backward.
    pub fn summed_fisher_times(&self, v: &[f64]) -> Vec<f64> {
        let params = self.store.trainable();
        let theta: Vec<f64> = flat(&params.iter().map(|p| p.value()).collect::<Vec<_>>());
        let set = |t: &[f64]| {
            for (p, x) in params.iter().zip(self.shaped(t)) {
                p.set(x).unwrap();
            }
        };
        let h = 1e-5;
        let logits_at = |s: f64| {
            let t: Vec<f64> = theta.iter().zip(v).map(|(a, b)| a + s * b).collect();
            set(&t);
            self.logits().unwrap().value().to_vec()
        };
        let (plus, minus) = (logits_at(h), logits_at(-h));
        set(&theta);
        let jv: Vec<f64> = plus
            .iter()
            .zip(&minus)
            .map(|(a, b)| (a - b) / (2.0 * h))
            .collect();
        let z = self.logits().unwrap();
        let c = z.shape()[1];
        let logits = z.value().to_vec();
        let mut w = vec![0.0; logits.len()];
        for k in 0..logits.len() / c {
            let (row, jv_row) = (&logits[k * c..(k + 1) * c], &jv[k * c..(k + 1) * c]);
            let m = row.iter().fold(f64::MIN, |a, &b| a.max(b));
            let e: Vec<f64> = row.iter().map(|x| (x - m).exp()).collect();
            let s: f64 = e.iter().sum();
            let p: Vec<f64> = e.iter().map(|x| x / s).collect();
            let pj = dot(&p, jv_row);
            for i in 0..c {
                w[k * c + i] = p[i] * jv_row[i] - p[i] * pj;
            }
        }
        let wt = Var::constant(Tensor::from_vec(w, z.shape()).unwrap());
        let g = autograd::backward(&z.mul(&wt).unwrap().sum_all().unwrap()).unwrap();
        flat(&nn::ParamGrads::collect(&params, &g).into_tensors())
    }
}

pub fn quadratic_model() -> (
    ParamStore<f64>,
    impl Fn(&Var<f64>) -> tensor::Result<Var<f64>>,
) {
    let store = ParamStore::<f64>::new();
    store
        .root()
        .param("theta", Tensor::from_vec(vec![0.7, -1.3], &[2]).unwrap())
        .unwrap();
    let loss = |theta: &Var<f64>| {
        let a = Var::constant(Tensor::from_vec(vec![3.0, 0.5, 0.5, 1.0], &[2, 2]).unwrap());
        let b = Var::constant(Tensor::from_vec(vec![0.2, -0.4], &[2]).unwrap());
        let col = theta.reshape(&[2, 1])?;
        let quad = col
            .t()?
            .matmul(&a.matmul(&col)?)?
            .sum_all()?
            .mul_scalar(0.5)?;
        quad.add(&theta.mul(&b)?.sum_all()?)
    };
    (store, loss)
}

pub fn gradient_at(theta: [f64; 2]) -> [f64; 2] {
    [
        3.0 * theta[0] + 0.5 * theta[1] + 0.2,
        0.5 * theta[0] + theta[1] - 0.4,
    ]
}
