//! 21-D tabular density data for the convex potential flow: HEPMASS as MAF
//! preprocesses it (Papamakarios et al., `maf/datasets/hepmass.py`, copied into
//! CP-Flow as `cpflows/datasets/hepmass.py`), and a built-in 21-D stand-in with an
//! exact log-density for when no data is given.

use super::csv::{load_csv, CsvTable};
use std::f64::consts::PI;
use std::path::Path;
use tensor::{Error, Result, Rng, Tensor};

/// Train, validation and test rows `[n, D]`, standardised with the training split's
/// mean and standard deviation.
pub struct TabularSplits {
    /// Training rows.
    pub train: Tensor<f64>,
    /// Validation rows (HEPMASS: the last 10 % of the training file's positives).
    pub validation: Tensor<f64>,
    /// Test rows.
    pub test: Tensor<f64>,
    /// The exact log-density of each test row in the standardised space, when the
    /// data's generator is known (the stand-in), for the entropy floor.
    pub test_log_density: Option<Vec<f64>>,
    /// A line for table captions: source and sizes.
    pub description: String,
}

/// Reads `1000_train.csv` and `1000_test.csv` from `dir` (the UCI HEPMASS files) and
/// applies MAF's preprocessing: keep the signal class (column 0 = 1) and drop the
/// label, drop the test file's last column when it has one more than the training
/// file (MAF: "the data set is messed up"), z-score with the training mean and
/// sample standard deviation, drop every feature whose smallest value occurs more
/// than 5 times (the discrete mass columns), and hold out the last 10 % of the
/// training rows for validation.
pub fn load_hepmass(dir: &Path) -> Result<TabularSplits> {
    let train = load_csv(&dir.join("1000_train.csv"), true)?;
    let test = load_csv(&dir.join("1000_test.csv"), true)?;
    let mut s = preprocess_hepmass(&train, &test)?;
    s.description = format!("HEPMASS from {}, {}", dir.display(), s.description);
    Ok(s)
}

/// MAF's HEPMASS preprocessing on parsed tables (see [`load_hepmass`]).
pub fn preprocess_hepmass(train: &CsvTable, test: &CsvTable) -> Result<TabularSplits> {
    let signal = |t: &CsvTable, what: &str| -> Result<(Vec<Vec<f64>>, usize)> {
        let (rows, cols) = (t.values.shape()[0], t.values.shape()[1]);
        if cols < 2 {
            return Err(Error::format(
                what,
                format!("{cols} column(s): expected a label and features"),
            ));
        }
        let v = t.values.to_vec();
        let kept: Vec<Vec<f64>> = v
            .chunks(cols)
            .filter(|r| r[0] == 1.0)
            .map(|r| r[1..].to_vec())
            .collect();
        if kept.is_empty() {
            return Err(Error::format(
                what,
                format!("none of its {rows} rows has label 1 in column 0"),
            ));
        }
        Ok((kept, cols - 1))
    };
    let (train_rows, d) = signal(train, "HEPMASS 1000_train.csv")?;
    let (mut test_rows, dt) = signal(test, "HEPMASS 1000_test.csv")?;
    if dt == d + 1 {
        test_rows.iter_mut().for_each(|r| {
            r.pop();
        });
    } else if dt != d {
        return Err(Error::format(
            "HEPMASS 1000_test.csv",
            format!("{dt} feature columns against the training file's {d}"),
        ));
    }
    let n = train_rows.len();
    if n < 20 {
        return Err(Error::format(
            "HEPMASS 1000_train.csv",
            format!("{n} signal rows: too few to split off a 10 % validation set"),
        ));
    }
    let mean: Vec<f64> = (0..d)
        .map(|j| train_rows.iter().map(|r| r[j]).sum::<f64>() / n as f64)
        .collect();
    let std: Vec<f64> = (0..d)
        .map(|j| {
            let ss: f64 = train_rows.iter().map(|r| (r[j] - mean[j]).powi(2)).sum();
            (ss / (n - 1) as f64).sqrt()
        })
        .collect();
    // Values large enough to overflow the sums would standardise to ∞ or NaN and
    // surface far later (as a Cholesky failure): refuse them here, by column.
    if let Some(j) = (0..d).find(|&j| !(mean[j].is_finite() && std[j].is_finite())) {
        return Err(Error::format(
            "HEPMASS 1000_train.csv",
            format!(
                "feature column {} has mean {} and standard deviation {}: its values are not finite or overflow f64 sums",
                j + 1,
                mean[j],
                std[j]
            ),
        ));
    }
    let z = |r: &[f64], j: usize| (r[j] - mean[j]) / std[j];
    // MAF counts the repeats of the smallest (normalised) value of each feature.
    let keep: Vec<usize> = (0..d)
        .filter(|&j| {
            if std[j] == 0.0 {
                return false;
            }
            let col: Vec<f64> = train_rows.iter().map(|r| z(r, j)).collect();
            let min = col.iter().cloned().fold(f64::INFINITY, f64::min);
            col.iter().filter(|&&v| v == min).count() <= 5
        })
        .collect();
    if keep.is_empty() {
        return Err(Error::format(
            "HEPMASS 1000_train.csv",
            "every feature is discrete (its smallest value repeats more than 5 times)",
        ));
    }
    let to_tensor = |rows: &[Vec<f64>], what: &str| -> Result<Tensor<f64>> {
        let v: Vec<f64> = rows
            .iter()
            .flat_map(|r| keep.iter().map(|&j| z(r, j)))
            .collect();
        if let Some(i) = v.iter().position(|x| !x.is_finite()) {
            let (row, col) = (i / keep.len(), keep[i % keep.len()]);
            return Err(Error::format(
                what,
                format!(
                    "signal row {} feature column {} is {} ({} after standardisation): not finite",
                    row + 1,
                    col + 1,
                    rows[row][col],
                    v[i]
                ),
            ));
        }
        Tensor::from_vec(v, &[rows.len(), keep.len()])
    };
    let n_val = n / 10;
    let (fit, val) = train_rows.split_at(n - n_val);
    Ok(TabularSplits {
        train: to_tensor(fit, "HEPMASS 1000_train.csv")?,
        validation: to_tensor(val, "HEPMASS 1000_train.csv")?,
        test: to_tensor(&test_rows, "HEPMASS 1000_test.csv")?,
        test_log_density: None,
        description: format!(
            "D = {}, {} / {} / {} rows (MAF preprocessing)",
            keep.len(),
            n - n_val,
            n_val,
            test_rows.len()
        ),
    })
}

/// Dimension of the built-in stand-in (HEPMASS's after preprocessing).
pub const STAND_IN_DIM: usize = 21;

/// The independent coordinates' densities of a [`StandIn`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Marginals {
    /// Cycling through a symmetric two-Gaussian mixture, a standard Gumbel and a
    /// standard logistic: bimodal, skewed and mildly heavy-tailed, as HEPMASS's
    /// features are.
    Mixed,
    /// Student-t with ν = 3 degrees of freedom in every coordinate: tails heavy
    /// enough (infinite fourth moment) that a flow's per-row NLL can explode.
    StudentT3,
}

/// Differential entropy of the Student-t with ν = 3:
/// (ν+1)/2·(ψ((ν+1)/2) − ψ(ν/2)) + ln(√ν·B(ν/2, ½)) = 4 ln 2 − 2 + ln(√3·π/2).
pub const STUDENT_T3_ENTROPY: f64 = 1.773_477_571_863_290_7;

/// A 21-D correlated non-Gaussian density with an exact log-density: independent
/// coordinates u with the given [`Marginals`], mixed by a fixed unit lower-
/// triangular L (det L = 1), x = L u.
pub struct StandIn {
    l: Vec<f64>,
    marginals: Marginals,
}

impl Default for StandIn {
    fn default() -> Self {
        Self::new(Marginals::Mixed)
    }
}

impl StandIn {
    /// The stand-in with `marginals`; L's off-diagonal entries are N(0, 0.3²),
    /// drawn once from a fixed seed so every run sees the same density.
    pub fn new(marginals: Marginals) -> Self {
        let d = STAND_IN_DIM;
        let mut rng = Rng::new(0x7ab1e);
        let mut l = vec![0.0; d * d];
        for i in 0..d {
            for j in 0..i {
                l[i * d + j] = 0.3 * rng.normal();
            }
            l[i * d + i] = 1.0;
        }
        StandIn { l, marginals }
    }

    /// log p_j(u) of coordinate j.
    fn log_density_u(&self, j: usize, u: f64) -> f64 {
        if self.marginals == Marginals::StudentT3 {
            // Γ(2) / (Γ(3/2)·√(3π)) · (1 + u²/3)^−2.
            let log_c = 2f64.ln() - 0.5 * PI.ln() - 0.5 * (3.0 * PI).ln();
            return log_c - 2.0 * (u * u / 3.0).ln_1p();
        }
        match j % 3 {
            0 => {
                let (m, s) = (1.2, 0.45);
                let a = -((u - m) / s).powi(2) / 2.0;
                let b = -((u + m) / s).powi(2) / 2.0;
                let top = a.max(b);
                top + (0.5 * ((a - top).exp() + (b - top).exp())).ln()
                    - (s * (2.0 * PI).sqrt()).ln()
            }
            1 => -u - (-u).exp(),
            _ => -u - 2.0 * (-u).exp().ln_1p(),
        }
    }

    /// One draw of coordinate j.
    fn sample_u(&self, j: usize, rng: &mut Rng) -> f64 {
        if self.marginals == Marginals::StudentT3 {
            // z / √(χ²₃ / 3).
            let z = rng.normal();
            let chi2: f64 = (0..3).map(|_| rng.normal().powi(2)).sum();
            return z / (chi2 / 3.0).sqrt();
        }
        let unit = |rng: &mut Rng| rng.uniform().clamp(1e-12, 1.0 - 1e-12);
        match j % 3 {
            0 => {
                let sign = if rng.uniform() < 0.5 { -1.0 } else { 1.0 };
                sign * 1.2 + 0.45 * rng.normal()
            }
            1 => -(-unit(rng).ln()).ln(),
            _ => {
                let p = unit(rng);
                (p / (1.0 - p)).ln()
            }
        }
    }

    /// `n` rows `[n, 21]` of x = L u.
    pub fn sample(&self, n: usize, rng: &mut Rng) -> Result<Tensor<f64>> {
        let d = STAND_IN_DIM;
        let mut out =
            Vec::with_capacity(tensor::layout::checked_numel("StandIn::sample", &[n, d])?);
        for _ in 0..n {
            let u: Vec<f64> = (0..d).map(|j| self.sample_u(j, rng)).collect();
            for i in 0..d {
                out.push((0..=i).map(|j| self.l[i * d + j] * u[j]).sum());
            }
        }
        Tensor::from_vec(out, &[n, d])
    }

    /// The exact log p(x) of each row of `x` `[n, 21]`: Σ_j log p_j(u_j) with
    /// u = L⁻¹x by forward substitution (log |det L| = 0).
    pub fn log_density(&self, x: &Tensor<f64>) -> Result<Vec<f64>> {
        let d = STAND_IN_DIM;
        if x.ndim() != 2 || x.shape()[1] != d {
            return Err(Error::shape(
                "StandIn::log_density",
                format!("expected [n, {d}], got {:?}", x.shape()),
            ));
        }
        Ok(x.to_vec()
            .chunks(d)
            .map(|row| {
                let mut u = vec![0.0; d];
                for i in 0..d {
                    let s: f64 = (0..i).map(|j| self.l[i * d + j] * u[j]).sum();
                    u[i] = row[i] - s;
                }
                u.iter()
                    .enumerate()
                    .map(|(j, &v)| self.log_density_u(j, v))
                    .sum()
            })
            .collect())
    }

    /// Train / validation / test splits of the given sizes (seeded), standardised
    /// with the training mean and standard deviation as the HEPMASS path does; the
    /// test rows' exact log-density includes the standardisation's Σ log s_j.
    pub fn splits(
        &self,
        train: usize,
        validation: usize,
        test: usize,
        seed: u64,
    ) -> Result<TabularSplits> {
        if train < 2 || validation == 0 || test == 0 {
            return Err(Error::value(
                "tabular stand-in",
                format!("split sizes must be ≥ 2, ≥ 1, ≥ 1, got {train}, {validation}, {test}"),
            ));
        }
        let d = STAND_IN_DIM;
        let mut rng = Rng::new(seed);
        let raw = [
            self.sample(train, &mut rng)?,
            self.sample(validation, &mut rng)?,
            self.sample(test, &mut rng)?,
        ];
        let t = raw[0].to_vec();
        let mean: Vec<f64> = (0..d)
            .map(|j| t.iter().skip(j).step_by(d).sum::<f64>() / train as f64)
            .collect();
        let std: Vec<f64> = (0..d)
            .map(|j| {
                let ss: f64 = t
                    .iter()
                    .skip(j)
                    .step_by(d)
                    .map(|v| (v - mean[j]).powi(2))
                    .sum();
                (ss / (train - 1) as f64).sqrt()
            })
            .collect();
        let log_scale: f64 = std.iter().map(|s| s.ln()).sum();
        let standardise = |x: &Tensor<f64>| -> Result<Tensor<f64>> {
            let v: Vec<f64> = x
                .to_vec()
                .chunks(d)
                .flat_map(|r| {
                    (0..d)
                        .map(|j| (r[j] - mean[j]) / std[j])
                        .collect::<Vec<_>>()
                })
                .collect();
            Tensor::from_vec(v, x.shape())
        };
        let test_log_density: Vec<f64> = self
            .log_density(&raw[2])?
            .into_iter()
            .map(|l| l + log_scale)
            .collect();
        Ok(TabularSplits {
            train: standardise(&raw[0])?,
            validation: standardise(&raw[1])?,
            test: standardise(&raw[2])?,
            test_log_density: Some(test_log_density),
            description: format!(
                "built-in 21-D stand-in ({} coordinates mixed by a unit lower-triangular L), {train} / {validation} / {test} rows",
                match self.marginals {
                    Marginals::Mixed => "mixture/Gumbel/logistic",
                    Marginals::StudentT3 => "Student-t (ν = 3)",
                }
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(header: &str, rows: &[Vec<f64>]) -> CsvTable {
        let text: String = std::iter::once(header.to_string())
            .chain(rows.iter().map(|r| {
                r.iter()
                    .map(|v| v.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            }))
            .collect::<Vec<_>>()
            .join("\n");
        crate::data::csv::parse_csv(&text, true, "test").unwrap()
    }

    #[test]
    fn hepmass_preprocessing_follows_maf() {
        // Label, two continuous features, one discrete "mass" feature; the test
        // file carries one extra trailing column. 40 signal rows, 10 background.
        let mut rng = Rng::new(1);
        let mut train = Vec::new();
        for i in 0..50 {
            let label = if i % 5 == 4 { 0.0 } else { 1.0 };
            let mass = [500.0, 750.0, 1000.0][i % 3];
            train.push(vec![label, rng.normal(), 3.0 + 2.0 * rng.normal(), mass]);
        }
        let test: Vec<Vec<f64>> = (0..12)
            .map(|i| vec![(i % 2) as f64, rng.normal(), rng.normal(), 1000.0, 7.0])
            .collect();
        let s = preprocess_hepmass(
            &table("# label,f0,f1,mass", &train),
            &table("# label,f0,f1,mass,extra", &test),
        )
        .unwrap();
        // The mass column (smallest value repeated > 5 times) is gone.
        assert_eq!(s.train.shape(), &[36, 2]);
        assert_eq!(s.validation.shape(), &[4, 2]);
        assert_eq!(s.test.shape(), &[6, 2]);
        // z-scored with the mean and sample std of all 40 signal rows (train+val),
        // and the validation rows are the last ones of the file.
        let signal: Vec<&Vec<f64>> = train.iter().filter(|r| r[0] == 1.0).collect();
        let col: Vec<f64> = signal.iter().map(|r| r[2]).collect();
        let mean = col.iter().sum::<f64>() / 40.0;
        let sd = (col.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / 39.0).sqrt();
        let last = (signal[39][2] - mean) / sd;
        assert!((s.validation.to_vec()[7] - last).abs() < 1e-12);
        let first_test = test.iter().find(|r| r[0] == 1.0).unwrap();
        assert!((s.test.to_vec()[1] - (first_test[2] - mean) / sd).abs() < 1e-12);
    }

    #[test]
    fn hepmass_errors_name_what_is_wrong() {
        let rows = vec![vec![0.0, 1.0]; 30];
        let e = preprocess_hepmass(&table("l,a", &rows), &table("l,a", &rows))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("label 1"), "{e}");
        let signal = vec![vec![1.0, 1.0, 2.0]; 30];
        let wide = vec![vec![1.0, 1.0, 2.0, 3.0, 4.0]; 3];
        let e = preprocess_hepmass(&table("l,a,b", &signal), &table("l,a,b,c,d", &wide))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("4 feature columns"), "{e}");
        let e = load_hepmass(Path::new("/nonexistent-hepmass"))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("1000_train.csv"), "{e}");
        // Values whose sums overflow, in training or only in the test file.
        let mut rng = Rng::new(4);
        let huge: Vec<Vec<f64>> = (0..30)
            .map(|_| vec![1.0, rng.normal(), 1e308 * (1.0 + 0.5 * rng.uniform())])
            .collect();
        let fine: Vec<Vec<f64>> = (0..30)
            .map(|_| vec![1.0, rng.normal(), 0.01 * rng.normal()])
            .collect();
        let e = preprocess_hepmass(&table("l,a,b", &huge), &table("l,a,b", &fine))
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("feature column 2") && e.contains("overflow"),
            "{e}"
        );
        let mut far = fine.clone();
        // Finite, but ~10³⁰⁹ once divided by the column's std of ~0.01.
        far[3][2] = 1e307;
        let e = preprocess_hepmass(&table("l,a,b", &fine), &table("l,a,b", &far))
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("1000_test.csv") && e.contains("signal row 4"),
            "{e}"
        );
    }

    #[test]
    fn the_stand_in_density_is_normalised_and_matches_its_sampler() {
        let mixed = StandIn::new(Marginals::Mixed);
        // Each coordinate density integrates to 1 (trapezoid on a wide grid).
        for j in 0..3 {
            let h = 1e-3;
            let total: f64 = (-30_000..=40_000)
                .map(|k| mixed.log_density_u(j, k as f64 * h).exp() * h)
                .sum();
            assert!((total - 1.0).abs() < 1e-6, "coordinate {j}: {total}");
        }
        // The sampler draws from that density: the mean of −log p over samples is
        // the entropy, Σ_j H_j (mixture by quadrature, Gumbel 1 + γ, logistic 2).
        let h = 1e-3;
        let mix_entropy: f64 = (-10_000..=10_000)
            .map(|k| {
                let l = mixed.log_density_u(0, k as f64 * h);
                -l * l.exp() * h
            })
            .sum();
        let gamma = 0.577_215_664_901_532_9;
        let entropy = 7.0 * (mix_entropy + 1.0 + gamma + 2.0);
        let s = StandIn::new(Marginals::Mixed);
        let x = s.sample(20_000, &mut Rng::new(5)).unwrap();
        let lp = s.log_density(&x).unwrap();
        let mc = -lp.iter().sum::<f64>() / lp.len() as f64;
        let se = {
            let v = lp.iter().map(|l| (l + mc).powi(2)).sum::<f64>() / lp.len() as f64;
            (v / lp.len() as f64).sqrt()
        };
        assert!((mc - entropy).abs() < 4.0 * se, "{mc} vs {entropy} ± {se}");
    }

    #[test]
    fn the_heavy_tailed_stand_in_is_student_t_and_matches_its_sampler() {
        // The ν = 3 density integrates to 1 (the tail beyond ±2000 holds about
        // 2·10⁻¹⁰), and −log p over samples averages to 21 Student-t entropies
        // (det L = 1), within four standard errors.
        let heavy = StandIn::new(Marginals::StudentT3);
        let h = 1e-3;
        let total: f64 = (-2_000_000..=2_000_000)
            .map(|k| heavy.log_density_u(0, k as f64 * h).exp() * h)
            .sum();
        assert!((total - 1.0).abs() < 1e-8, "{total}");
        let x = heavy.sample(40_000, &mut Rng::new(6)).unwrap();
        let lp = heavy.log_density(&x).unwrap();
        let mc = -lp.iter().sum::<f64>() / lp.len() as f64;
        let se = {
            let v = lp.iter().map(|l| (l + mc).powi(2)).sum::<f64>() / lp.len() as f64;
            (v / lp.len() as f64).sqrt()
        };
        let entropy = STAND_IN_DIM as f64 * STUDENT_T3_ENTROPY;
        assert!((mc - entropy).abs() < 4.0 * se, "{mc} vs {entropy} ± {se}");
        // Heavier tails than the mixed stand-in: a far larger largest |x|.
        let largest = |t: &Tensor<f64>| t.to_vec().iter().fold(0f64, |a, v| a.max(v.abs()));
        let mixed = StandIn::new(Marginals::Mixed)
            .sample(40_000, &mut Rng::new(6))
            .unwrap();
        assert!(largest(&x) > 3.0 * largest(&mixed));
    }
}
