//! `evidence.txt`: every comparison a run made, with the values over seeds of both
//! arms, so `models report` can recompute each verdict from a kept run without
//! rerunning it. Values are written in Rust's shortest round-trip form, so the file
//! gives back the very numbers the run computed.

use super::evidence::{Better, Claim, Evidence};
use tensor::{Error, Result};

const MAGIC: &str = "models evidence v1";

/// The text of `evidence.txt` for `evidence`; an error when a name holds a tab or a
/// newline (the file's separators).
pub fn to_text(evidence: &[Evidence]) -> Result<String> {
    let mut s = format!("{MAGIC}\n");
    for e in evidence {
        let names = [&e.setting, &e.metric, &e.method.0, &e.baseline.0];
        let idle = e.idle.as_deref().unwrap_or("-");
        if let Some(bad) = names
            .into_iter()
            .map(String::as_str)
            .chain([idle])
            .find(|n| n.contains(['\t', '\n']))
        {
            return Err(Error::value(
                "evidence",
                format!("{bad:?} holds a tab or newline, which evidence.txt cannot store"),
            ));
        }
        let values = |v: &[f64]| v.iter().map(|x| format!("\t{x:?}")).collect::<String>();
        s.push_str(&format!(
            "comparison\nclaim\t{}\nsetting\t{}\nmetric\t{}\nbetter\t{}\npaired\t{}\nidle\t{idle}\nmethod\t{}{}\nbaseline\t{}{}\n",
            e.claim.key(),
            e.setting,
            e.metric,
            match e.better {
                Better::Lower => "lower",
                Better::Higher => "higher",
            },
            if e.paired { "yes" } else { "no" },
            e.method.0,
            values(&e.method.1),
            e.baseline.0,
            values(&e.baseline.1),
        ));
    }
    Ok(s)
}

/// Parses `evidence.txt` (`origin` names it in errors).
pub fn parse(text: &str, origin: &str) -> Result<Vec<Evidence>> {
    let bad = |line: usize, why: String| {
        Error::value("evidence", format!("{origin}, line {}: {why}", line + 1))
    };
    let lines: Vec<&str> = text.lines().collect();
    if lines.first() != Some(&MAGIC) {
        return Err(bad(0, format!("not an evidence file (no '{MAGIC}' line)")));
    }
    let mut out = Vec::new();
    let mut i = 1;
    while i < lines.len() {
        if lines[i] != "comparison" {
            return Err(bad(i, "expected a 'comparison' line".into()));
        }
        let mut field = |name: &str| -> Result<(usize, Vec<&str>)> {
            i += 1;
            let line = lines
                .get(i)
                .ok_or_else(|| bad(i, format!("ends before the '{name}' line")))?;
            let mut parts = line.split('\t');
            if parts.next() != Some(name) {
                return Err(bad(i, format!("expected the '{name}' line")));
            }
            Ok((i, parts.collect()))
        };
        let one = |(at, parts): (usize, Vec<&str>)| -> Result<String> {
            match parts.as_slice() {
                [v] => Ok(v.to_string()),
                _ => Err(bad(at, "expected one value".into())),
            }
        };
        let arm = |(at, parts): (usize, Vec<&str>)| -> Result<(String, Vec<f64>)> {
            let (name, values) = parts
                .split_first()
                .ok_or_else(|| bad(at, "an arm without a name".into()))?;
            let values = values
                .iter()
                .map(|v| {
                    v.parse::<f64>()
                        .map_err(|_| bad(at, format!("'{v}' is not a number")))
                })
                .collect::<Result<Vec<f64>>>()?;
            Ok((name.to_string(), values))
        };
        let (claim_at, claim) = field("claim")?;
        let claim_key = one((claim_at, claim))?;
        let setting = one(field("setting")?)?;
        let metric = one(field("metric")?)?;
        let (at, better) = field("better")?;
        let better = match one((at, better))?.as_str() {
            "lower" => Better::Lower,
            "higher" => Better::Higher,
            other => {
                return Err(bad(
                    at,
                    format!("'better' is '{other}', not lower or higher"),
                ))
            }
        };
        let (at, paired) = field("paired")?;
        let paired = match one((at, paired))?.as_str() {
            "yes" => true,
            "no" => false,
            other => return Err(bad(at, format!("'paired' is '{other}', not yes or no"))),
        };
        let idle = Some(one(field("idle")?)?).filter(|w| w != "-");
        let method = arm(field("method")?)?;
        let baseline = arm(field("baseline")?)?;
        let claim = Claim::from_key(&claim_key, &baseline.0)
            .ok_or_else(|| bad(claim_at, format!("unknown claim '{claim_key}'")))?;
        out.push(Evidence {
            claim,
            setting,
            metric,
            better,
            method,
            baseline,
            paired,
            idle,
        });
        i += 1;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<Evidence> {
        vec![
            Evidence {
                claim: Claim::Lift,
                setting: "lift-ebm-1d, Gumbel".into(),
                metric: "TV".into(),
                better: Better::Lower,
                method: ("lift".into(), vec![0.1, 1.0 / 3.0, -0.0]),
                baseline: ("pgd".into(), vec![f64::NAN, 1e300, f64::INFINITY]),
                paired: true,
                idle: None,
            },
            Evidence {
                claim: Claim::LlqrSam,
                setting: "llqr-sam, noise 0.2".into(),
                metric: "test accuracy".into(),
                better: Better::Higher,
                method: ("llqr-sam".into(), vec![0.5]),
                baseline: ("sam".into(), vec![]),
                paired: false,
                idle: Some("U ≈ I here".into()),
            },
        ]
    }

    /// Every field, and every value bit for bit (NaN, −0, ∞ included), survives.
    #[test]
    fn evidence_survives_the_file() {
        let e = sample();
        let back = parse(&to_text(&e).unwrap(), "t").unwrap();
        assert_eq!(back.len(), 2);
        for (a, b) in e.iter().zip(&back) {
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&a.method.1), bits(&b.method.1));
            assert_eq!(bits(&a.baseline.1), bits(&b.baseline.1));
            assert_eq!(
                (&a.setting, &a.metric, a.better, a.paired, &a.idle, a.claim),
                (&b.setting, &b.metric, b.better, b.paired, &b.idle, b.claim)
            );
            assert_eq!((&a.method.0, &a.baseline.0), (&b.method.0, &b.baseline.0));
        }
    }

    #[test]
    fn damaged_files_are_refused_with_the_line() {
        let text = to_text(&sample()).unwrap();
        let err = |t: &str| parse(t, "e.txt").unwrap_err().to_string();
        assert!(err("hello").contains("not an evidence file"));
        assert!(err(&text.replace("claim\tlift", "claim\tmagic")).contains("unknown claim"));
        assert!(err(&text.replace("\t0.1\t", "\tzero\t")).contains("line 9"));
        let cut: Vec<&str> = text.lines().take(5).collect();
        assert!(err(&cut.join("\n")).contains("ends before"));
        let mut tabbed = sample();
        tabbed[0].setting = "a\tb".into();
        assert!(to_text(&tabbed).is_err());
    }
}
