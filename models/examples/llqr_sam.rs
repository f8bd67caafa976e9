//! LLQR+SAM around SGD on the shipped digits: every `refresh_every` steps the
//! caller refits the preconditioner U on a preconditioning batch; every step
//! perturbs along U·g and hands U·∇L(θ+ε) to SGD with momentum. Compared with plain
//! SGD at the same budget, through the same training loop (`step_closure` is the
//! step both share).
//!
//! `cargo run --release --example llqr_sam`

use autograd::{no_grad, Var};
use models::data::{builtin, Dataset};
use nn::{loss, Activation, Mlp, Module, ParamStore};
use optim::llqr::{LlqrConfig, LlqrSam};
use optim::{Optimizer, Sgd, SgdConfig};
use tensor::{Result, Rng};

/// A model on the digits' training split.
struct Problem {
    store: ParamStore<f32>,
    mlp: Mlp<f32>,
    train: Dataset,
    test: Dataset,
}

impl Problem {
    fn new() -> Result<Self> {
        let mut rng = Rng::new(0);
        let (train, test) = builtin::digits()?.split(0.2, &mut rng)?;
        let store = ParamStore::new();
        let mlp = Mlp::new(&store.root(), &[64, 64, 10], Activation::Relu, &mut rng)?;
        Ok(Problem {
            store,
            mlp,
            train,
            test,
        })
    }

    /// The rows `idx` as inputs and labels.
    fn rows(&self, idx: &[usize]) -> Result<(Var<f32>, Vec<usize>)> {
        let labels = self.train.labels()?.0;
        let x = Var::constant(self.train.x.index_select(0, idx)?.cast::<f32>());
        Ok((x, idx.iter().map(|&i| labels[i]).collect()))
    }

    /// `epochs` of batches of 32 with `opt`, `before(opt)` called before each step;
    /// returns the test accuracy.
    fn fit<O: Optimizer<f32>>(
        &self,
        opt: &mut O,
        epochs: usize,
        mut before: impl FnMut(&mut O) -> Result<()>,
    ) -> Result<f64> {
        let mut order = Rng::new(1);
        for _ in 0..epochs {
            for idx in self.train.batches(32, Some(&mut order))? {
                before(opt)?;
                let (x, y) = self.rows(&idx)?;
                opt.step_closure(&|| loss::cross_entropy(&self.mlp.forward(&x)?, &y, 0.0))?;
            }
        }
        let x = Var::constant(self.test.x.cast::<f32>());
        let scores = no_grad(|| self.mlp.forward(&x))?;
        loss::accuracy(scores.value(), self.test.labels()?.0)
    }

    fn sgd(&self) -> Result<Sgd<f32>> {
        Sgd::new(self.store.trainable(), SgdConfig::new(0.05).momentum(0.9))
    }
}

fn main() -> Result<()> {
    let epochs = 10;
    let p = Problem::new()?;
    let sgd = p.fit(&mut p.sgd()?, epochs, |_| Ok(()))?;

    let p = Problem::new()?;
    // The authors' defaults (NGD geometry, diagonal U, ρ = 0.1, ‖Ug‖₂), with U
    // refreshed every 50 steps for this short run (their CIFAR runs: 1000).
    let cfg = LlqrConfig {
        refresh_every: 50,
        ..LlqrConfig::default()
    };
    let mut llqr = LlqrSam::with_outer(Box::new(p.sgd()?), cfg)?;
    let mut pick = Rng::new(9);
    let refresh = |l: &mut LlqrSam<f32>| -> Result<()> {
        if l.refresh_due() {
            // A preconditioning batch of 128 rows drawn with replacement.
            let idx: Vec<usize> = (0..128)
                .map(|_| pick.below(p.train.len() as u64).map(|i| i as usize))
                .collect::<Result<_>>()?;
            let (x, y) = p.rows(&idx)?;
            l.refresh(&|| p.mlp.forward(&x), &y, 0.0)?;
        }
        Ok(())
    };
    let llqr_sam = p.fit(&mut llqr, epochs, refresh)?;
    println!(
        "test accuracy after {epochs} epochs: SGD {:.2} %, LLQR+SAM {:.2} %",
        100.0 * sgd,
        100.0 * llqr_sam
    );
    Ok(())
}
