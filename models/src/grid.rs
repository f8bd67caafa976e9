//! The grid a sweep walks: arms × settings × seeds. Each (arm, setting, seed) is
//! one cell run through [`RunConfig::cell`], so `--shard` and `models merge` work
//! on every experiment that walks its grid here. Seeds are paired: cell seed k is
//! the same seed for every arm and setting, which the experiments use for the data
//! order, the augmentation and the label-noise draw, so a comparison between two
//! arms is the paired one of [`Evidence`]. The grid keeps every cell's named
//! numbers and gives them back per seed, as "mean ± std" cells and as evidence.

use crate::cli::RunConfig;
use crate::error::Result;
use crate::report::evidence::{Better, Claim, Evidence};
use crate::report::{mean_std, Metrics};

/// The named numbers one cell produced.
pub type Numbers = Vec<(String, f64)>;

/// One run cell's place and result.
struct Cell {
    arm: String,
    setting: String,
    seed: u64,
    numbers: Numbers,
}

/// The cells of one experiment's grid.
pub struct Grid<'a> {
    cfg: &'a RunConfig,
    seeds: Vec<u64>,
    cells: Vec<Cell>,
}

impl<'a> Grid<'a> {
    /// A grid over `seeds`, run with `cfg`'s sweep (whole, shard or merge).
    pub fn new(cfg: &'a RunConfig, seeds: Vec<u64>) -> Grid<'a> {
        Grid {
            cfg,
            seeds,
            cells: Vec::new(),
        }
    }

    /// The seeds, in the order every (arm, setting) runs them.
    pub fn seeds(&self) -> &[u64] {
        &self.seeds
    }

    /// A validation score every shard needs before its next cells, called `key`:
    /// computed by every shard, given back from the record by a resumed shard and
    /// by the merge ([`RunConfig::shared_score`]).
    pub fn shared_score(
        &self,
        key: &str,
        compute: impl FnOnce() -> tensor::Result<f64>,
    ) -> tensor::Result<f64> {
        self.cfg.shared_score(key, compute)
    }

    /// The series name of a cell: `arm/setting/seedS`, or `arm/seedS` without a
    /// setting (the curves' names in metrics.csv, and the cell's key in a sweep).
    pub fn series(arm: &str, setting: &str, seed: u64) -> String {
        if setting.is_empty() {
            format!("{arm}/seed{seed}")
        } else {
            format!("{arm}/{setting}/seed{seed}")
        }
    }

    /// Runs `arm` at `setting` at every seed: `run(seed, series, metrics)` trains
    /// and scores one cell, pushing its curves to `metrics` under `series`.
    pub fn run(
        &mut self,
        arm: &str,
        setting: &str,
        metrics: &mut Metrics,
        run: impl FnMut(u64, &str, &mut Metrics) -> Result<Numbers>,
    ) -> Result<()> {
        let seeds = self.seeds.clone();
        self.run_at(&seeds, arm, setting, metrics, run)
    }

    /// Runs `arm` at `setting` at the first seed only: a diagnostic measured on
    /// one seed (read it back with [`Grid::numbers`]).
    pub fn run_first(
        &mut self,
        arm: &str,
        setting: &str,
        metrics: &mut Metrics,
        run: impl FnMut(u64, &str, &mut Metrics) -> Result<Numbers>,
    ) -> Result<()> {
        let first = [self.seeds[0]];
        self.run_at(&first, arm, setting, metrics, run)
    }

    fn run_at(
        &mut self,
        seeds: &[u64],
        arm: &str,
        setting: &str,
        metrics: &mut Metrics,
        mut run: impl FnMut(u64, &str, &mut Metrics) -> Result<Numbers>,
    ) -> Result<()> {
        for &seed in seeds {
            let series = Self::series(arm, setting, seed);
            let numbers = self.cfg.cell(&series, metrics, |m| run(seed, &series, m))?;
            self.cells.push(Cell {
                arm: arm.to_string(),
                setting: setting.to_string(),
                seed,
                numbers,
            });
        }
        Ok(())
    }

    /// The values of `name` for `arm` at `setting`, one per seed in seed order
    /// (NaN for a cell another shard runs).
    pub fn values(&self, arm: &str, setting: &str, name: &str) -> Result<Vec<f64>> {
        let missing = || {
            tensor::Error::value(
                "grid",
                format!("no cell of arm '{arm}' at setting '{setting}' has a number '{name}'"),
            )
        };
        let values = self
            .seeds
            .iter()
            .map(|&seed| {
                let numbers = self.numbers(arm, setting, seed).map_err(|_| missing())?;
                // A cell another shard runs is a placeholder: NaN.
                if numbers.is_empty() {
                    return Ok(f64::NAN);
                }
                numbers
                    .iter()
                    .find(|(k, _)| k == name)
                    .map(|(_, v)| *v)
                    .ok_or_else(missing)
            })
            .collect::<tensor::Result<Vec<f64>>>()?;
        Ok(values)
    }

    /// Every number of the cell (`arm`, `setting`, `seed`): empty for a cell
    /// another shard runs.
    pub fn numbers(&self, arm: &str, setting: &str, seed: u64) -> Result<&Numbers> {
        Ok(self
            .cells
            .iter()
            .find(|c| c.arm == arm && c.setting == setting && c.seed == seed)
            .map(|c| &c.numbers)
            .ok_or_else(|| {
                tensor::Error::value(
                    "grid",
                    format!("no cell of arm '{arm}' at setting '{setting}' and seed {seed}"),
                )
            })?)
    }

    /// "mean ± std" of `name` over the seeds, with `digits` decimals.
    pub fn mean_std(&self, arm: &str, setting: &str, name: &str, digits: usize) -> Result<String> {
        Ok(mean_std(&self.values(arm, setting, name)?, digits))
    }

    /// The paired comparison of `method` against `baseline` on `name` at
    /// `setting`, testing `claim`; `label` names the setting in the summary and
    /// `metric` the number.
    #[allow(clippy::too_many_arguments)]
    pub fn evidence(
        &self,
        claim: Claim,
        label: &str,
        (metric, better): (&str, Better),
        (method, baseline): (&str, &str),
        setting: &str,
        name: &str,
    ) -> Result<Evidence> {
        Ok(Evidence {
            claim,
            setting: label.to_string(),
            metric: metric.to_string(),
            better,
            method: (method.to_string(), self.values(method, setting, name)?),
            baseline: (baseline.to_string(), self.values(baseline, setting, name)?),
            paired: true,
            idle: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_come_back_per_seed_and_compare_paired() {
        let cfg = RunConfig::default();
        let mut grid = Grid::new(&cfg, vec![3, 4, 5]);
        let mut metrics = Metrics::default();
        for (arm, offset) in [("base", 0.0), ("method", -0.1)] {
            grid.run(arm, "b8", &mut metrics, |seed, series, m| {
                assert_eq!(series, format!("{arm}/b8/seed{seed}"));
                m.push(series, 1, "loss", 1.0);
                // A large seed effect shared by both arms, a constant gain.
                Ok(vec![("err".into(), 10.0 * seed as f64 + offset)])
            })
            .unwrap();
        }
        assert_eq!(
            grid.values("base", "b8", "err").unwrap(),
            [30.0, 40.0, 50.0]
        );
        assert_eq!(
            grid.mean_std("base", "b8", "err", 1).unwrap(),
            "40.0 ± 10.0"
        );
        let e = grid
            .evidence(
                Claim::ClosedForm,
                "toy",
                ("error", Better::Lower),
                ("method", "base"),
                "b8",
                "err",
            )
            .unwrap();
        assert!(e.paired);
        assert_eq!(e.verdict(), crate::report::evidence::Verdict::Holds);
        assert!(grid.values("base", "b32", "err").is_err());
        assert!(grid.values("base", "b8", "nope").is_err());
        // A placeholder cell (another shard's) reads NaN.
        grid.run("other", "b8", &mut metrics, |_, _, _| Ok(Vec::new()))
            .unwrap();
        assert!(grid.values("other", "b8", "err").unwrap()[0].is_nan());
        assert_eq!(metrics.to_csv().lines().count(), 7);
    }
}
