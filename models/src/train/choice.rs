//! The validation choice of a hyper-parameter on a log grid that cannot sit at an
//! edge unnoticed: when the best value is the grid's smallest or largest, the grid
//! is extended by one of its own steps on that side and the new value scored, up to
//! a stated number of steps per side ([`EXTENSIONS`] in the full settings, none in
//! the quick ones, which keep the demo's budget); a value still at the edge after
//! that is marked.

use crate::report::evidence::Better;
use tensor::{Error, Result};

/// Steps the grid may grow on each side in a full setting.
pub const EXTENSIONS: usize = 2;

/// The steps a run may add per side: [`EXTENSIONS`], or none in a quick setting.
pub fn extensions(quick: bool) -> usize {
    if quick {
        0
    } else {
        EXTENSIONS
    }
}

/// The scored grid and the value chosen.
#[derive(Clone, Debug, PartialEq)]
pub struct Choice {
    /// Every value scored (the given grid and its extensions), ascending, with its
    /// score (NaN: the value failed).
    pub scored: Vec<(f64, f64)>,
    /// The best value, if any scored.
    pub best: Option<f64>,
    /// The best value is still the smallest or largest scored after the extensions
    /// (the optimum may lie beyond).
    pub at_edge: bool,
}

impl Choice {
    /// The score of `value`, if it was scored.
    pub fn score(&self, value: f64) -> Option<f64> {
        self.scored
            .iter()
            .find(|(v, _)| *v == value)
            .map(|(_, s)| *s)
    }

    /// The marker of a table cell: "←" for the chosen value, "← at the edge" when
    /// it is still at the grid's edge, "" otherwise.
    pub fn mark(&self, value: f64) -> &'static str {
        match (self.best == Some(value), self.at_edge) {
            (true, true) => " ← at the edge",
            (true, false) => " ←",
            _ => "",
        }
    }
}

/// Scores every value of `grid` (positive, ascending, log-spaced; a single value is
/// not extended) with `score`, which is better `better`, extending the grid past
/// the best value's edge by at most `limit` steps per side. A non-finite score disqualifies
/// its value.
pub fn choose(
    grid: &[f64],
    better: Better,
    limit: usize,
    mut score: impl FnMut(f64) -> Result<f64>,
) -> Result<Choice> {
    if grid.is_empty()
        || grid.iter().any(|v| !(v.is_finite() && *v > 0.0))
        || grid.windows(2).any(|w| w[0] >= w[1])
    {
        return Err(Error::value(
            "validation choice",
            format!("the grid must be positive, finite and ascending, got {grid:?}"),
        ));
    }
    let mut scored = Vec::with_capacity(grid.len() + 2 * limit);
    for &v in grid {
        let s = score(v)?;
        scored.push((v, if s.is_finite() { s } else { f64::NAN }));
    }
    let (mut low, mut high) = (0, 0);
    loop {
        let best = best_index(&scored, better);
        let n = scored.len();
        let step = match best {
            Some(0) if n > 1 && low < limit => {
                low += 1;
                significant(scored[0].0 * scored[0].0 / scored[1].0)
            }
            Some(i) if i + 1 == n && n > 1 && high < limit => {
                high += 1;
                significant(scored[n - 1].0 * scored[n - 1].0 / scored[n - 2].0)
            }
            _ => {
                let at_edge = n > 1 && matches!(best, Some(i) if i == 0 || i + 1 == n);
                return Ok(Choice {
                    best: best.map(|i| scored[i].0),
                    scored,
                    at_edge,
                });
            }
        };
        let s = score(step)?;
        scored.push((step, if s.is_finite() { s } else { f64::NAN }));
        scored.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
}

/// Every value some of `choices` scored (one choice per column of a table),
/// ascending: the rows of the table.
pub fn scored_values(choices: &[Choice]) -> Vec<f64> {
    let mut values: Vec<f64> = choices
        .iter()
        .flat_map(|c| c.scored.iter().map(|p| p.0))
        .collect();
    values.sort_by(f64::total_cmp);
    values.dedup();
    values
}

/// `v` to 10 significant digits, so that a grid step of 3 from 3e-3 is 9e-3 and
/// not 9.000000000000001e-3 in the tables.
fn significant(v: f64) -> f64 {
    let scale = 10f64.powi(9 - v.log10().floor() as i32);
    (v * scale).round() / scale
}

/// The index of the best non-NaN score (ties: the smaller value).
fn best_index(scored: &[(f64, f64)], better: Better) -> Option<usize> {
    let mut best: Option<usize> = None;
    for (i, &(_, s)) in scored.iter().enumerate() {
        if s.is_nan() {
            continue;
        }
        let wins = best.is_none_or(|k| match better {
            Better::Lower => s < scored[k].1,
            Better::Higher => s > scored[k].1,
        });
        if wins {
            best = Some(i);
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A score with its minimum at `at`, in log space.
    fn bowl(at: f64) -> impl FnMut(f64) -> Result<f64> {
        move |v: f64| Ok((v.ln() - at.ln()).powi(2))
    }

    #[test]
    fn an_interior_best_is_not_extended() {
        let c = choose(&[0.1, 1.0, 10.0], Better::Lower, EXTENSIONS, bowl(1.0)).unwrap();
        assert_eq!(c.best, Some(1.0));
        assert_eq!(c.scored.len(), 3);
        assert!(!c.at_edge);
        assert_eq!(c.mark(1.0), " ←");
    }

    #[test]
    fn a_best_at_the_top_grows_the_grid_by_its_own_step_until_interior() {
        let c = choose(&[0.1, 1.0, 10.0], Better::Lower, EXTENSIONS, bowl(100.0)).unwrap();
        let values: Vec<f64> = c.scored.iter().map(|p| p.0).collect();
        assert_eq!(values.len(), 5);
        assert_eq!(values[3..], [100.0, 1000.0]);
        assert_eq!(c.best, Some(100.0));
        assert!(!c.at_edge);
        // Extended values are written as the grid's own are.
        let far = choose(&[1e-3, 3e-3], Better::Lower, EXTENSIONS, bowl(1.0)).unwrap();
        let values: Vec<f64> = far.scored.iter().map(|p| p.0).collect();
        assert_eq!(values, [1e-3, 3e-3, 9e-3, 2.7e-2]);
    }

    #[test]
    fn a_best_past_the_limit_is_marked_at_the_edge() {
        // Higher is better: the score grows without bound toward the top.
        let c = choose(&[1.0, 2.0, 4.0], Better::Higher, EXTENSIONS, bowl(1e-6)).unwrap();
        assert_eq!(c.scored.len(), 3 + EXTENSIONS);
        assert_eq!(c.best, Some(16.0));
        assert!(c.at_edge);
        assert_eq!(c.mark(16.0), " ← at the edge");
        // At the bottom, likewise.
        let c = choose(&[1.0, 2.0, 4.0], Better::Lower, EXTENSIONS, bowl(1e-6)).unwrap();
        assert_eq!(c.best, Some(0.25));
        assert!(c.at_edge);
    }

    #[test]
    fn failed_values_are_skipped_and_bad_grids_refused() {
        let c = choose(&[0.1, 1.0, 10.0], Better::Lower, EXTENSIONS, |v| {
            Ok(if v == 1.0 { f64::NAN } else { v })
        })
        .unwrap();
        assert_eq!(c.score(1.0).map(f64::is_nan), Some(true));
        assert_eq!(c.best.map(|b| (b * 1e5).round()), Some(100.0));
        assert!(choose(&[], Better::Lower, EXTENSIONS, bowl(1.0)).is_err());
        assert!(choose(&[1.0, 0.5], Better::Lower, EXTENSIONS, bowl(1.0)).is_err());
        assert!(choose(&[0.0, 1.0], Better::Lower, EXTENSIONS, bowl(1.0)).is_err());
        let single = choose(&[3.0], Better::Lower, EXTENSIONS, bowl(1.0)).unwrap();
        assert_eq!((single.best, single.at_edge), (Some(3.0), false));
    }
}
