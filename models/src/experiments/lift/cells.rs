//! What a lift run leaves in its grid cell, and the counts read back from the
//! grid: the σ²_Jac snapshots as named numbers (so a merged sweep rebuilds the
//! σ²_Jac table), the parameter count and the skipped steps.

use crate::grid::{Grid, Numbers};
use crate::sweep::field;
use nn::checkpoint::NamedTensors;
use optim::lift::CrossCov;
use tensor::Result;

/// σ²_Jac snapshots: (iteration, reading; `None` without a slack channel).
pub type Probes = Vec<(usize, Option<CrossCov>)>;

/// The snapshots as `probe_count`, `probe<i>_iteration` and, when there is a
/// reading, `probe<i>_trace`, `probe<i>_p_value`, ….
pub fn probe_numbers(probes: &Probes) -> Numbers {
    let mut numbers = vec![("probe_count".to_string(), probes.len() as f64)];
    for (i, (it, reading)) in probes.iter().enumerate() {
        numbers.push((format!("probe{i}_iteration"), *it as f64));
        if let Some(c) = reading {
            numbers.extend(
                [
                    ("trace", c.trace),
                    ("frobenius", c.frobenius),
                    ("asymmetry", c.asymmetry),
                    ("p_value", c.p_value),
                    ("relative_iterate_variance", c.relative_iterate_variance),
                    ("probes", c.probes as f64),
                    ("dim", c.dim as f64),
                ]
                .map(|(k, v)| (format!("probe{i}_{k}"), v)),
            );
        }
    }
    numbers
}

/// The snapshots back from a cell's numbers (none from a placeholder's).
pub fn probes_from(numbers: &Numbers) -> Result<Probes> {
    if numbers.is_empty() {
        return Ok(Vec::new());
    }
    let has = |name: &str| numbers.iter().any(|(k, _)| k == name);
    let mut probes = Vec::new();
    for i in 0..field(numbers, "probe_count")? as usize {
        let at = |k: &str| field(numbers, &format!("probe{i}_{k}"));
        let reading = if has(&format!("probe{i}_trace")) {
            Some(CrossCov {
                trace: at("trace")?,
                frobenius: at("frobenius")?,
                asymmetry: at("asymmetry")?,
                p_value: at("p_value")?,
                relative_iterate_variance: at("relative_iterate_variance")?,
                probes: at("probes")? as usize,
                dim: at("dim")? as usize,
            })
        } else {
            None
        };
        probes.push((at("iteration")? as usize, reading));
    }
    Ok(probes)
}

/// The trainable parameters of `arm`'s model (its cells' `params`; 0 when no
/// cell ran in this process).
pub fn params(grid: &Grid, arm: &str, setting: &str) -> Result<usize> {
    Ok(grid
        .values(arm, setting, "params")?
        .into_iter()
        .find(|v| v.is_finite())
        .map_or(0, |v| v as usize))
}

/// Non-finite steps skipped over `arm`'s cells (`skipped`) that ran here.
pub fn skipped(grid: &Grid, arm: &str, setting: &str) -> Result<usize> {
    Ok(grid
        .values(arm, setting, "skipped")?
        .into_iter()
        .filter(|v| v.is_finite())
        .sum::<f64>() as usize)
}

/// Appends a first-seed model's `tensors` to the run's `model`, each named
/// `setting.arm.name`.
pub fn keep_model(model: &mut NamedTensors, (setting, arm): (&str, &str), tensors: NamedTensors) {
    model.extend(
        tensors
            .into_iter()
            .map(|(k, v)| (format!("{setting}.{arm}.{k}"), v)),
    );
}
