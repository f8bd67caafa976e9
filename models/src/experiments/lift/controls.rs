//! The step-size control's choice: the direct softplus is trained at each latent
//! learning-rate multiplier M of a grid over every seed, and the M with the lowest
//! mean validation NLL stands against the lift (the validation samples are not the
//! test samples). The grid is not grown past its edges, so a sharded sweep's merge
//! needs no cell its shards did not run; a choice at an edge is marked.

use super::Strategy;
use crate::report::evidence::Better;
use crate::report::Table;
use crate::train::{choose, Choice};
use tensor::Result;

/// The multipliers of the latents' learning rate: the authors' 10, 30 and 100, and
/// one step beyond, since the 1-D EBM prefers 100.
pub const MULTIPLIERS: [f64; 4] = [10.0, 30.0, 100.0, 300.0];

/// The quick settings' multipliers: the authors' three (the demo's time budget).
pub fn multipliers(quick: bool) -> &'static [f64] {
    if quick {
        &MULTIPLIERS[..3]
    } else {
        &MULTIPLIERS
    }
}

/// The `--multipliers` option's help.
pub const MULTIPLIERS_HELP: &str =
    "latent learning-rate multipliers M of the step-size control, M chosen per setting by the mean validation NLL over seeds (quick 10,30,100; full 10,30,100,300)";

/// Chooses M from `multipliers`: `validate(M)` trains the control at M over every
/// seed and returns its mean validation NLL.
pub fn choose_multiplier(
    multipliers: &[f64],
    validate: impl FnMut(f64) -> Result<f64>,
) -> Result<Choice> {
    choose(multipliers, Better::Lower, 0, validate)
}

/// Trains every arm of `arms` and the step-size control at each M with `train`
/// (which returns the arm's validation NLLs over seeds) and chooses M: the arms in
/// table order, the chosen control before the learned-code lift, and the choice.
pub fn train_with_controls(
    mut arms: Vec<Strategy>,
    multipliers: &[f64],
    mut train: impl FnMut(Strategy) -> Result<Vec<f64>>,
) -> Result<(Vec<Strategy>, Choice)> {
    for &strategy in &arms {
        train(strategy)?;
    }
    let choice = choose_multiplier(multipliers, |m| {
        Ok(mean_finite(&train(Strategy::SoftplusFast(m))?))
    })?;
    let at = arms
        .iter()
        .position(|s| *s == Strategy::LiftCode)
        .unwrap_or(arms.len());
    arms.insert(at, chosen(&choice));
    Ok((arms, choice))
}

/// The chosen control: the softplus at the best M (the grid's first when every M
/// failed, which its row then shows).
pub fn chosen(choice: &Choice) -> Strategy {
    Strategy::SoftplusFast(choice.best.unwrap_or(choice.scored[0].0))
}

/// The mean of the finite values (NaN when none is): a validation score over seeds
/// where a diverged seed does not hide the others, nor a shard's missing cells.
pub fn mean_finite(values: &[f64]) -> f64 {
    let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    if finite.is_empty() {
        f64::NAN
    } else {
        finite.iter().sum::<f64>() / finite.len() as f64
    }
}

/// The table of the choices, titled after `setting` (what trains and on what).
pub fn choice_table(experiment: &str, setting: &str) -> Table {
    Table::new(
        &format!("{experiment}: the step-size control's choice of M (the direct softplus with its latents' Adam learning rate × M, the authors' direct_m<M>) — mean validation NLL over seeds, on validation samples drawn apart from the test samples; {setting}; the best per target (←) stands against the lift; one at the grid's edge is marked"),
        &["target", "M", "validation NLL (mean over seeds)"],
    )
}

/// The rows of one target's choice.
pub fn choice_rows(table: &mut Table, target: &str, choice: &Choice) {
    for &(m, score) in &choice.scored {
        let cell = if score.is_nan() {
            "diverged".to_string()
        } else {
            format!("{score:.4}{}", choice.mark(m))
        };
        table.row(vec![target.into(), format!("{m}"), cell]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_best_mean_validation_nll_is_chosen_without_growing_the_grid() {
        let choice = choose_multiplier(&MULTIPLIERS, |m| Ok((m - 30.0).abs())).unwrap();
        assert_eq!(chosen(&choice), Strategy::SoftplusFast(30.0));
        assert!(!choice.at_edge);
        // At the edge: marked, not grown.
        let edge = choose_multiplier(&MULTIPLIERS, |m| Ok(-m)).unwrap();
        assert_eq!(edge.scored.len(), MULTIPLIERS.len());
        assert!(edge.at_edge);
        let mut t = choice_table("lift-ebm-1d", "test");
        choice_rows(&mut t, "Gumbel", &edge);
        assert!(t.render().contains("← at the edge"));
        assert_eq!(mean_finite(&[1.0, f64::NAN, 3.0]), 2.0);
        assert!(mean_finite(&[f64::NAN]).is_nan());
    }
}
