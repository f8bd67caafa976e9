//! The spread of LLQR's preconditioner U: its entries' minimum, median and maximum,
//! and the share that moved from the identity.

use crate::report::Metrics;
use crate::sweep::field;
use tensor::Result;

/// Minimum, median, maximum and the fraction moved from 1 of a set of values (U's entries).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spread {
    /// Smallest value.
    pub min: f64,
    /// Median.
    pub median: f64,
    /// Largest value.
    pub max: f64,
    /// Fraction of the values more than 1 % away from 1 (U's initial entries).
    pub moved: f64,
}

impl Spread {
    /// Its numbers as a sweep cell's fields (`u_min`, `u_median`, `u_max`,
    /// `u_moved`); none for `None`.
    pub fn fields(u: Option<Spread>) -> Vec<(String, f64)> {
        u.map_or_else(Vec::new, |u| {
            vec![
                ("u_min".into(), u.min),
                ("u_median".into(), u.median),
                ("u_max".into(), u.max),
                ("u_moved".into(), u.moved),
            ]
        })
    }

    /// The spread back from a cell's numbers (`None` when they hold none, as a
    /// placeholder's or a non-LLQR arm's do).
    pub fn from_numbers(numbers: &[(String, f64)]) -> Result<Option<Spread>> {
        if !numbers.iter().any(|(k, _)| k == "u_median") {
            return Ok(None);
        }
        let get = |name: &str| field(numbers, name);
        Ok(Some(Spread {
            min: get("u_min")?,
            median: get("u_median")?,
            max: get("u_max")?,
            moved: get("u_moved")?,
        }))
    }

    /// The spread of `values`; `None` when empty.
    pub fn of(mut values: Vec<f64>) -> Option<Spread> {
        if values.is_empty() {
            return None;
        }
        values.sort_by(f64::total_cmp);
        let n = values.len();
        let moved = values.iter().filter(|v| (*v - 1.0).abs() > 0.01).count() as f64 / n as f64;
        let median = if n % 2 == 1 {
            values[n / 2]
        } else {
            0.5 * (values[n / 2 - 1] + values[n / 2])
        };
        Some(Spread {
            min: values[0],
            median,
            max: values[n - 1],
            moved,
        })
    }

    /// As a table cell: "median [min, max], moved %".
    pub fn cell(self) -> String {
        format!(
            "{:.3} [{:.3}, {:.3}], {:.1} %",
            self.median,
            self.min,
            self.max,
            100.0 * self.moved
        )
    }

    /// Logs the spread at `step` of `series` (metrics `u_min`, `u_median`, `u_max`,
    /// `u_moved`).
    pub fn log(self, metrics: &mut Metrics, series: &str, step: usize) {
        metrics.push(series, step, "u_min", self.min);
        metrics.push(series, step, "u_median", self.median);
        metrics.push(series, step, "u_max", self.max);
        metrics.push(series, step, "u_moved", self.moved);
    }
}
