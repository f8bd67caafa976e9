//! The lift models' optimiser: one Adam (or plain SGD) over every trainable
//! parameter, or — for the step-size control, the authors' `direct_m<M>` — the
//! positivity latents in a group of their own whose learning rate is M times the
//! others'. The global gradient norm is clipped over all parameters together, in
//! the store's order, before the groups step, so a model with one group steps
//! exactly as one optimiser.

use nn::{Param, ParamGrads};
use optim::{Adam, AdamConfig, Optimizer, Sgd, SgdConfig};
use tensor::{Error, Result};

/// The update rule of every group.
#[derive(Clone, Debug, PartialEq)]
pub enum Rule {
    /// Adam (the authors' optimiser for every lift experiment).
    Adam(AdamConfig),
    /// SGD, the optimiser the shoulder theory (Itô SGD, Kramers escape) is about.
    Sgd(SgdConfig),
}

impl Rule {
    /// Its learning rate.
    pub fn lr(&self) -> f64 {
        match self {
            Rule::Adam(c) => c.lr,
            Rule::Sgd(c) => c.lr,
        }
    }

    /// The optimiser over `params` at learning rate `lr`.
    fn build(&self, params: Vec<Param<f64>>, lr: f64) -> Result<Box<dyn Optimizer<f64>>> {
        Ok(match self {
            Rule::Adam(c) => Box::new(Adam::new(params, AdamConfig { lr, ..c.clone() })?),
            Rule::Sgd(c) => Box::new(Sgd::new(params, SgdConfig { lr, ..c.clone() })?),
        })
    }
}

/// One update rule over parameter groups that differ only in their learning rate.
pub struct OptimizerGroups {
    /// Every trainable parameter, in the store's order (the order of gradients).
    params: Vec<Param<f64>>,
    /// Each parameter's group.
    group: Vec<usize>,
    /// One optimiser per group, over that group's parameters in the store's order.
    optimizers: Vec<Box<dyn Optimizer<f64>>>,
}

impl OptimizerGroups {
    /// `rule` over `params`; the parameters for which `scaled` holds get their own
    /// group at `factor`·lr when `factor` ≠ 1.
    pub fn new(
        params: Vec<Param<f64>>,
        rule: Rule,
        scaled: impl Fn(&Param<f64>) -> bool,
        factor: f64,
    ) -> Result<OptimizerGroups> {
        if !(factor.is_finite() && factor > 0.0) {
            return Err(Error::value(
                "lift optimiser",
                format!(
                    "the latents' learning-rate factor must be positive and finite, got {factor}"
                ),
            ));
        }
        let group: Vec<usize> = params
            .iter()
            .map(|p| usize::from(factor != 1.0 && scaled(p)))
            .collect();
        let groups = group.iter().max().map_or(1, |g| g + 1);
        let optimizers = (0..groups)
            .map(|k| {
                let members = params
                    .iter()
                    .zip(&group)
                    .filter(|(_, g)| **g == k)
                    .map(|(p, _)| p.clone())
                    .collect();
                let lr = if k == 1 {
                    rule.lr() * factor
                } else {
                    rule.lr()
                };
                rule.build(members, lr)
            })
            .collect::<Result<_>>()?;
        Ok(OptimizerGroups {
            params,
            group,
            optimizers,
        })
    }

    /// Every trainable parameter, in the order gradients are given.
    pub fn params(&self) -> &[Param<f64>] {
        &self.params
    }

    /// One step with `grads` (aligned with [`OptimizerGroups::params`]).
    pub fn step(&mut self, grads: &ParamGrads<f64>) -> Result<()> {
        let tensors = grads.tensors();
        if tensors.len() != self.params.len() {
            return Err(Error::value(
                "lift optimiser",
                format!(
                    "{} gradients for {} parameters",
                    tensors.len(),
                    self.params.len()
                ),
            ));
        }
        for (k, optimizer) in self.optimizers.iter_mut().enumerate() {
            let mine = tensors
                .iter()
                .zip(&self.group)
                .filter(|(_, g)| **g == k)
                .map(|(t, _)| t.clone())
                .collect();
            optimizer.step(&ParamGrads::from_tensors(mine))?;
        }
        Ok(())
    }

    /// Multiplies every group's learning rate by `factor` (a step decay).
    pub fn scale_lr(&mut self, factor: f64) -> Result<()> {
        for optimizer in &mut self.optimizers {
            let lr = optimizer.lr() * factor;
            optimizer.set_lr(lr)?;
        }
        Ok(())
    }

    /// The learning rates, the base group's first.
    pub fn lrs(&self) -> Vec<f64> {
        self.optimizers.iter().map(|o| o.lr()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nn::ParamStore;
    use tensor::Tensor;

    #[test]
    fn the_scaled_group_moves_its_factor_times_farther_and_the_rest_as_one_adam() {
        // Adam's first step moves each entry by lr·sign(g): the latent by M·lr, the
        // other parameter by lr, exactly as a single Adam would move it.
        let store = ParamStore::<f64>::new();
        let other = store
            .root()
            .param("other", Tensor::ones(&[2]).unwrap())
            .unwrap();
        let latent = store
            .root()
            .sub("positivity")
            .param("latent", Tensor::ones(&[2]).unwrap())
            .unwrap();
        let mut groups = OptimizerGroups::new(
            store.trainable(),
            Rule::Adam(AdamConfig::adam(0.01)),
            |p| p.name().starts_with("positivity"),
            30.0,
        )
        .unwrap();
        assert_eq!(groups.lrs(), vec![0.01, 0.3]);
        let g = |v: f64| Tensor::from_vec(vec![v, -v], &[2]).unwrap();
        groups
            .step(&ParamGrads::from_tensors(vec![g(2.0), g(5.0)]))
            .unwrap();
        let moved = |p: &Param<f64>| 1.0 - p.value().to_vec()[0];
        assert!((moved(&other) - 0.01).abs() < 1e-9, "{}", moved(&other));
        assert!((moved(&latent) - 0.3).abs() < 1e-9, "{}", moved(&latent));
        groups.scale_lr(0.5).unwrap();
        assert_eq!(groups.lrs(), vec![0.005, 0.15]);
        // Factor 1 is one group; a bad factor is refused.
        let adam = || Rule::Adam(AdamConfig::adam(0.01));
        let one = OptimizerGroups::new(store.trainable(), adam(), |_| true, 1.0);
        assert_eq!(one.unwrap().lrs().len(), 1);
        let bad = OptimizerGroups::new(store.trainable(), adam(), |_| true, 0.0);
        assert!(bad.err().unwrap().to_string().contains("factor"));
        assert!(groups
            .step(&ParamGrads::from_tensors(vec![g(1.0)]))
            .is_err());
    }

    #[test]
    fn sgd_groups_step_by_their_rates_times_the_gradient() {
        let store = ParamStore::<f64>::new();
        let other = store
            .root()
            .param("other", Tensor::ones(&[1]).unwrap())
            .unwrap();
        let latent = store
            .root()
            .sub("positivity")
            .param("latent", Tensor::ones(&[1]).unwrap())
            .unwrap();
        let mut groups = OptimizerGroups::new(
            store.trainable(),
            Rule::Sgd(SgdConfig::new(0.1)),
            |p| p.name().starts_with("positivity"),
            10.0,
        )
        .unwrap();
        let g = |v: f64| Tensor::from_vec(vec![v], &[1]).unwrap();
        groups
            .step(&ParamGrads::from_tensors(vec![g(2.0), g(0.5)]))
            .unwrap();
        assert!((other.value().item().unwrap() - 0.8).abs() < 1e-12);
        assert!((latent.value().item().unwrap() - 0.5).abs() < 1e-12);
    }
}
