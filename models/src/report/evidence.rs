//! Evidence for the papers' claims: the comparisons a run makes (a method's values
//! over seeds against a baseline's, on one metric and setting), a verdict for each
//! computed by one stated rule, and the summary the demo ends with.

use super::Table;

/// The three methods whose claims the experiments test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Claim {
    /// The closed-form proximal last layer.
    ClosedForm,
    /// LLQR+SAM.
    LlqrSam,
    /// LLQR+SAM's preconditioner, allowed to converge (an upper bound outside the
    /// authors' method), against SAM.
    LlqrSamConverged,
    /// The lift for input-convex networks.
    Lift,
    /// The lift's gain is not capacity: it beats a width-matched softplus.
    LiftCapacity,
    /// The lift's gain is not step size: it beats softplus with faster latents.
    LiftStepSize,
    /// The lift's gain comes from the batch: it beats the learned-code lift.
    LiftCoupling,
}

impl Claim {
    /// Every claim, in the summary's order.
    pub const ALL: [Claim; 7] = [
        Claim::ClosedForm,
        Claim::LlqrSam,
        Claim::LlqrSamConverged,
        Claim::Lift,
        Claim::LiftCapacity,
        Claim::LiftStepSize,
        Claim::LiftCoupling,
    ];

    /// Its short name, as evidence files and `models report` write it.
    pub fn key(self) -> &'static str {
        match self {
            Claim::ClosedForm => "closed-form",
            Claim::LlqrSam => "llqr-sam",
            Claim::LlqrSamConverged => "llqr-sam-converged",
            Claim::Lift => "lift",
            Claim::LiftCapacity => "lift-capacity",
            Claim::LiftStepSize => "lift-step-size",
            Claim::LiftCoupling => "lift-coupling",
        }
    }

    /// The claim whose [`Claim::key`] is `key`; `lift-structural`, the one
    /// structural claim the lift runs of commits 6832f3f to 33a88b9 wrote (kept in
    /// results/), is split by its comparison's `baseline` arm.
    pub fn from_key(key: &str, baseline: &str) -> Option<Claim> {
        if key == "lift-structural" {
            return [
                ("softplus, width-matched", Claim::LiftCapacity),
                ("softplus, latent lr", Claim::LiftStepSize),
                ("lift, learned code", Claim::LiftCoupling),
            ]
            .into_iter()
            .find(|(arm, _)| baseline.starts_with(arm))
            .map(|(_, claim)| claim);
        }
        Claim::ALL.into_iter().find(|c| c.key() == key)
    }

    /// The method's name.
    pub fn method(self) -> &'static str {
        match self {
            Claim::ClosedForm => "closed-form proximal last layer",
            Claim::LlqrSam => "LLQR+SAM",
            Claim::LlqrSamConverged => "LLQR+SAM, U converged (upper bound)",
            Claim::Lift => "lift (ICNN)",
            Claim::LiftCapacity => "lift (ICNN) vs capacity",
            Claim::LiftStepSize => "lift (ICNN) vs step size",
            Claim::LiftCoupling => "lift (ICNN) vs batch coupling",
        }
    }

    /// What the paper claims, in one sentence.
    pub fn statement(self) -> &'static str {
        match self {
            Claim::ClosedForm => {
                "refitting the last layer in closed form (proximal) after each backbone step beats gradient training on the same squared loss (ℓ2-SGD) and the per-batch ridge head, most at small batches (against cross-entropy the paper claims at most a match on CIFAR-100, so that comparison is not a test)"
            }
            Claim::LlqrSam => {
                "LLQR+SAM generalises better than SGD and SAM at the same step budget, the gain growing with label noise"
            }
            Claim::LlqrSamConverged => {
                "the preconditioner, allowed to move, is what helps: SAM with U set at every refresh to the converged diagonal δ/(diag F̄ + δ) (outside the authors' method, an upper bound on what their learned U could do; the outer rate retuned on validation) generalises better than SAM at the same ρ"
            }
            Claim::Lift => {
                "emitting the non-negative weights through the lift fits convex models better than clamping (PGD) or a direct softplus"
            }
            Claim::LiftCapacity => {
                "the lift's gain is not its capacity: it beats a softplus ICNN widened to the lift's parameter count"
            }
            Claim::LiftStepSize => {
                "the lift's gain is not its step size: it beats a softplus whose latents' Adam learning rate is multiplied by M (M chosen on validation)"
            }
            Claim::LiftCoupling => {
                "the lift's gain comes from the batch coupling: it beats the same lift fed a learned code instead of the batch (no coupling, σ²_Jac ≡ 0)"
            }
        }
    }
}

/// Which way a metric improves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Better {
    /// Errors, losses, NLL.
    Lower,
    /// Accuracies, BLEU.
    Higher,
}

/// One comparison a run makes to test a claim.
#[derive(Clone, Debug, PartialEq)]
pub struct Evidence {
    /// The claim tested.
    pub claim: Claim,
    /// The experiment and setting ("closed-form-regression, molecules, batch 8").
    pub setting: String,
    /// The metric ("test MSE").
    pub metric: String,
    /// Which way the metric improves.
    pub better: Better,
    /// The method's arm and its values over seeds.
    pub method: (String, Vec<f64>),
    /// The baseline's arm and its values over seeds.
    pub baseline: (String, Vec<f64>),
    /// The values are paired: entry k of both lists came from the same seed, which
    /// gave both arms the same data order, augmentation and label-noise draw. The
    /// test is then on the per-seed differences.
    pub paired: bool,
    /// Set when the method's mechanism did not act in these runs (e.g. U ≈ I, so
    /// LLQR+SAM is SAM by construction): the reason; the comparison then tests
    /// nothing, whatever its t.
    pub idle: Option<String>,
}

/// The outcome of one comparison under [`Evidence::verdict`]'s rule.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// The method is better by at least two standard errors.
    Holds,
    /// The method is worse by at least two standard errors.
    DoesNotHold,
    /// Neither, or too few seeds to say: the reason.
    CannotTell(String),
}

impl Verdict {
    /// As a table cell.
    pub fn cell(&self) -> String {
        match self {
            Verdict::Holds => "holds".into(),
            Verdict::DoesNotHold => "does not hold".into(),
            Verdict::CannotTell(why) => format!("cannot tell ({why})"),
        }
    }
}

/// Mean and sample variance.
fn moments(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = if v.len() > 1 {
        v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (mean, var)
}

/// The rule, as the summary states it.
pub const RULE: &str = "over paired seeds, t = mean of the per-seed differences (signed so that > 0 favours the method) / (their standard deviation / √n); over unpaired ones, t = (difference of the means) / √(s²_method/n + s²_baseline/n) (Welch); holds if t ≥ 2, does not hold if t ≤ −2, cannot tell otherwise or with fewer than 2 seeds";

impl Evidence {
    /// The paired t of the per-seed differences when [`Evidence::paired`] (and
    /// both sides have as many seeds), else Welch's statistic; signed so that
    /// positive favours the method; `None` with fewer than two seeds on either side
    /// or with non-finite values. Differences (or arms) without spread give ±∞ when
    /// the means differ, 0 when they tie.
    pub fn t(&self) -> Option<f64> {
        let (m, b) = (&self.method.1, &self.baseline.1);
        if m.len() < 2 || b.len() < 2 || m.iter().chain(b).any(|v| !v.is_finite()) {
            return None;
        }
        let sign = match self.better {
            Better::Lower => -1.0,
            Better::Higher => 1.0,
        };
        let (diff, se) = if self.paired && m.len() == b.len() {
            let d: Vec<f64> = m.iter().zip(b).map(|(x, y)| sign * (x - y)).collect();
            let (mean, var) = moments(&d);
            (mean, (var / d.len() as f64).sqrt())
        } else {
            let ((mm, vm), (mb, vb)) = (moments(m), moments(b));
            (
                sign * (mm - mb),
                (vm / m.len() as f64 + vb / b.len() as f64).sqrt(),
            )
        };
        Some(if se > 0.0 {
            diff / se
        } else if diff == 0.0 {
            0.0
        } else {
            diff.signum() * f64::INFINITY
        })
    }

    /// The verdict under [`RULE`].
    pub fn verdict(&self) -> Verdict {
        if let Some(why) = &self.idle {
            return Verdict::CannotTell(why.clone());
        }
        match self.t() {
            None if self.method.1.len() < 2 || self.baseline.1.len() < 2 => {
                Verdict::CannotTell("fewer than 2 seeds".into())
            }
            None => Verdict::CannotTell("a non-finite value".into()),
            Some(t) if t >= 2.0 => Verdict::Holds,
            Some(t) if t <= -2.0 => Verdict::DoesNotHold,
            Some(_) => Verdict::CannotTell("within 2 standard errors".into()),
        }
    }
}

fn mean_cell(v: &[f64]) -> String {
    let (mean, var) = moments(v);
    let digits = if mean.abs() >= 100.0 { 1 } else { 4 };
    if v.len() > 1 {
        format!("{mean:.digits$} ± {:.digits$}", var.sqrt())
    } else {
        format!("{mean:.digits$}")
    }
}

/// One claim's comparisons counted, with the overall verdict.
#[derive(Clone, Debug, PartialEq)]
pub struct Tally {
    /// The claim.
    pub claim: Claim,
    /// Comparisons that test it.
    pub comparisons: usize,
    /// How many hold.
    pub hold: usize,
    /// How many do not hold.
    pub fail: usize,
    /// The overall verdict (see [`OVERALL_RULE`]).
    pub verdict: &'static str,
}

/// How the comparisons of a claim make its overall verdict.
pub const OVERALL_RULE: &str = "mixed where some comparisons hold and some fail; holds where more than half hold (none failing); does not hold where more than half fail (none holding); cannot tell at this scale otherwise";

/// Counts each claim's comparisons in `evidence` and gives its overall verdict —
/// mixed where some comparisons hold and some fail, holds where more than half hold
/// (and none fails), does not hold where more than half fail (and none holds),
/// cannot tell at this scale otherwise (a lone comparison past two standard errors
/// among many undecided ones is what chance gives).
pub fn tally<'a>(evidence: impl IntoIterator<Item = &'a Evidence> + Clone) -> Vec<Tally> {
    Claim::ALL
        .into_iter()
        .map(|claim| {
            let (mut n, mut hold, mut fail) = (0, 0, 0);
            for e in evidence.clone().into_iter().filter(|e| e.claim == claim) {
                n += 1;
                match e.verdict() {
                    Verdict::Holds => hold += 1,
                    Verdict::DoesNotHold => fail += 1,
                    Verdict::CannotTell(_) => {}
                }
            }
            let verdict = if n == 0 {
                "not tested"
            } else if hold > 0 && fail > 0 {
                "mixed"
            } else if 2 * hold > n {
                "holds"
            } else if 2 * fail > n {
                "does not hold"
            } else {
                "cannot tell at this scale"
            };
            Tally {
                claim,
                comparisons: n,
                hold,
                fail,
                verdict,
            }
        })
        .collect()
}

/// The columns of [`comparison_row`].
pub const COMPARISON_HEADERS: [&str; 9] = [
    "method",
    "setting",
    "metric",
    "method arm",
    "baseline arm",
    "method",
    "baseline",
    "t",
    "verdict",
];

/// One comparison as a table row: the claim's method, the setting and metric, the
/// arms, their mean ± std over seeds, t and the verdict.
pub fn comparison_row(e: &Evidence) -> Vec<String> {
    vec![
        e.claim.method().into(),
        e.setting.clone(),
        e.metric.clone(),
        e.method.0.clone(),
        e.baseline.0.clone(),
        mean_cell(&e.method.1),
        mean_cell(&e.baseline.1),
        e.t().map_or("—".into(), |t| format!("{t:.1}")),
        e.verdict().cell(),
    ]
}

/// The demo's closing tables: every comparison with its verdict, then one line per
/// claim counting them, with an overall verdict by [`tally`], beside the verdict
/// `models report` gives from the committed full-setting runs (`kept`; `None`
/// when they could not be read).
pub fn summary(evidence: &[Evidence], kept: Option<&[Tally]>) -> Vec<Table> {
    let mut rows = Table::new(
        &format!("demo summary — every comparison that tests a claim, from this run's numbers; rule: {RULE}"),
        &COMPARISON_HEADERS,
    );
    for claim in Claim::ALL {
        for e in evidence.iter().filter(|e| e.claim == claim) {
            rows.row(comparison_row(e));
        }
    }
    let mut claims = Table::new(
        &format!("demo summary — the claims: {OVERALL_RULE}; the last column is `models report`'s verdict from the full-setting runs in results/"),
        &[
            "method",
            "the paper's claim",
            "comparisons",
            "hold",
            "do not hold",
            "cannot tell",
            "verdict (this quick run)",
            "verdict (results/)",
        ],
    );
    for t in tally(evidence) {
        let from_results = kept
            .and_then(|k| k.iter().find(|k| k.claim == t.claim))
            .map_or("— (results/ not read)".to_string(), |k| {
                format!("{} ({} comparisons)", k.verdict, k.comparisons)
            });
        claims.row(vec![
            t.claim.method().into(),
            t.claim.statement().into(),
            t.comparisons.to_string(),
            t.hold.to_string(),
            t.fail.to_string(),
            (t.comparisons - t.hold - t.fail).to_string(),
            t.verdict.into(),
            from_results,
        ]);
    }
    vec![rows, claims]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_reads_back_and_the_old_structural_key_splits_by_baseline() {
        for claim in Claim::ALL {
            assert_eq!(Claim::from_key(claim.key(), "any arm"), Some(claim));
        }
        let old = |baseline| Claim::from_key("lift-structural", baseline);
        assert_eq!(old("softplus, width-matched"), Some(Claim::LiftCapacity));
        assert_eq!(old("softplus, latent lr × 30"), Some(Claim::LiftStepSize));
        assert_eq!(old("lift, learned code"), Some(Claim::LiftCoupling));
        assert_eq!(old("PGD"), None);
        assert_eq!(Claim::from_key("lift-nonsense", "PGD"), None);
    }

    fn ev(better: Better, m: &[f64], b: &[f64]) -> Evidence {
        Evidence {
            claim: Claim::Lift,
            setting: "s".into(),
            metric: "m".into(),
            better,
            method: ("a".into(), m.to_vec()),
            baseline: ("b".into(), b.to_vec()),
            paired: false,
            idle: None,
        }
    }

    /// A seed effect shared by both arms hides a constant gain from Welch's test
    /// and not from the paired one, whose statistic is the mean of the per-seed
    /// differences over their standard error.
    #[test]
    fn paired_seeds_test_the_per_seed_differences() {
        let base = [1.0, 3.0, 5.0, 7.0];
        let method = [0.9, 2.8, 4.9, 6.8];
        let welch = ev(Better::Lower, &method, &base);
        assert!(matches!(welch.verdict(), Verdict::CannotTell(_)));
        let paired = Evidence {
            paired: true,
            idle: None,
            ..welch.clone()
        };
        // Differences 0.1, 0.2, 0.1, 0.2: mean 0.15, sd 0.0577, se 0.0289, t = 5.196.
        let t = paired.t().unwrap();
        let sd = (0.01f64 / 3.0).sqrt();
        assert!((t - 0.15 / (sd / 2.0)).abs() < 1e-9, "{t}");
        assert_eq!(paired.verdict(), Verdict::Holds);
        // Higher-is-better flips the sign.
        let flipped = Evidence {
            better: Better::Higher,
            ..paired.clone()
        };
        assert_eq!(flipped.verdict(), Verdict::DoesNotHold);
        // A mechanism that did not act makes the comparison test nothing.
        let idle = Evidence {
            idle: Some("U ≈ I here: LLQR+SAM reduces to SAM".into()),
            ..paired.clone()
        };
        assert_eq!(
            idle.verdict(),
            Verdict::CannotTell("U ≈ I here: LLQR+SAM reduces to SAM".into())
        );
        // Unequal lengths cannot be paired: Welch's test applies.
        let uneven = Evidence {
            method: ("a".into(), method[..3].to_vec()),
            ..paired
        };
        assert!(matches!(uneven.verdict(), Verdict::CannotTell(_)));
    }

    #[test]
    fn the_rule_is_welch_t_at_two_standard_errors() {
        // Means 1 and 2, each sd 0.5 over 4 seeds: se = √(0.25/4 · 2) = 0.3536, t = 2.83.
        let lo = [0.5, 1.5, 0.5, 1.5];
        let hi = [1.5, 2.5, 1.5, 2.5];
        let sd = (1.0f64 / 3.0).sqrt();
        let t = ev(Better::Lower, &lo, &hi).t().unwrap();
        assert!(
            (t - 1.0 / (2.0 * sd * sd / 4.0).sqrt()).abs() < 1e-12,
            "{t}"
        );
        assert_eq!(ev(Better::Lower, &lo, &hi).verdict(), Verdict::Holds);
        assert_eq!(ev(Better::Higher, &lo, &hi).verdict(), Verdict::DoesNotHold);
        // Overlapping arms: cannot tell.
        let near = [0.6, 1.6, 0.6, 1.6];
        assert!(matches!(
            ev(Better::Lower, &lo, &near).verdict(),
            Verdict::CannotTell(_)
        ));
        // One seed: cannot tell, whatever the gap.
        assert_eq!(
            ev(Better::Lower, &[0.0], &[9.0]).verdict(),
            Verdict::CannotTell("fewer than 2 seeds".into())
        );
        // No spread: a strict difference decides, a tie does not.
        assert_eq!(
            ev(Better::Lower, &[1.0, 1.0], &[2.0, 2.0]).verdict(),
            Verdict::Holds
        );
        assert!(matches!(
            ev(Better::Lower, &[1.0, 1.0], &[1.0, 1.0]).verdict(),
            Verdict::CannotTell(_)
        ));
        assert_eq!(
            ev(Better::Lower, &[1.0, f64::NAN], &[2.0, 2.0]).verdict(),
            Verdict::CannotTell("a non-finite value".into())
        );
    }

    #[test]
    fn the_summary_counts_and_combines_the_verdicts() {
        let holds = ev(Better::Lower, &[1.0, 1.1], &[2.0, 2.1]);
        let fails = ev(Better::Higher, &[1.0, 1.1], &[2.0, 2.1]);
        let t = summary(&[holds.clone(), fails], None);
        let claims = &t[1];
        let lift = claims.rows.iter().find(|r| r[0] == "lift (ICNN)").unwrap();
        assert_eq!(lift[2..7], ["2", "1", "1", "0", "mixed"].map(String::from));
        assert_eq!(t[0].rows.len(), 2);
        let t = summary(std::slice::from_ref(&holds), None);
        let lift = t[1].rows.iter().find(|r| r[0] == "lift (ICNN)").unwrap();
        assert_eq!(lift[6], "holds");
        // One comparison past two standard errors among three: not a majority.
        let tie = ev(Better::Lower, &[1.0, 1.1], &[1.0, 1.1]);
        let t = summary(&[holds, tie.clone(), tie], None);
        let lift = t[1].rows.iter().find(|r| r[0] == "lift (ICNN)").unwrap();
        assert_eq!(lift[6], "cannot tell at this scale");
        let cf = t[1]
            .rows
            .iter()
            .find(|r| r[0].starts_with("closed"))
            .unwrap();
        assert_eq!(cf[6], "not tested");
        assert_eq!(cf[7], "— (results/ not read)");
    }
}
