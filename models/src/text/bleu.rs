//! Corpus-level BLEU with sacreBLEU's defaults: the `13a` tokeniser (mteval-v13a),
//! n-grams up to 4 clipped by the reference counts, the brevity penalty
//! exp(1 − r/c) when c < r, and the `exp` smoothing (the k-th n-gram order with no
//! match gets precision 100/(2ᵏ·total)); one reference per sentence. Scores are on
//! sacreBLEU's 0–100 scale.

use std::collections::HashMap;
use tensor::{Error, Result};

/// A corpus BLEU score and its parts.
#[derive(Clone, Debug, PartialEq)]
pub struct Bleu {
    /// The score, 0–100.
    pub score: f64,
    /// n-gram precisions (percent), n = 1..4, after smoothing.
    pub precisions: [f64; 4],
    /// The brevity penalty.
    pub brevity_penalty: f64,
    /// Hypothesis tokens c.
    pub hyp_len: usize,
    /// Reference tokens r.
    pub ref_len: usize,
}

fn is_13a_punctuation(c: char) -> bool {
    // [\{-\~\[-\` -\&\(-\+\:-\@\/]: every ASCII symbol except ' , - .
    matches!(c, '{'..='~' | '['..='`' | ' '..='&' | '('..='+' | ':'..='@' | '/')
}

/// Applies a two-character rule left to right without overlaps, as `re.sub` does
/// for a pattern matching exactly two characters.
fn pairs(chars: &[char], rule: impl Fn(char, char) -> Option<String>) -> Vec<char> {
    let mut out = Vec::with_capacity(chars.len() + 8);
    let mut i = 0;
    while i < chars.len() {
        if let Some(r) = chars.get(i + 1).and_then(|&b| rule(chars[i], b)) {
            out.extend(r.chars());
            i += 2;
        } else {
            out.push(chars[i]);
            i += 1;
        }
    }
    out
}

/// The `13a` tokenisation of one line, tokens separated by single spaces.
pub fn tokenize_13a(line: &str) -> String {
    let mut s = line
        .replace("<skipped>", "")
        .replace("-\n", "")
        .replace('\n', " ");
    if s.contains('&') {
        s = s
            .replace("&quot;", "\"")
            .replace("&amp;", "&")
            .replace("&lt;", "<")
            .replace("&gt;", ">");
    }
    let padded: Vec<char> = format!(" {s} ")
        .chars()
        .flat_map(|c| {
            if is_13a_punctuation(c) {
                vec![' ', c, ' ']
            } else {
                vec![c]
            }
        })
        .collect();
    let digit = |c: char| c.is_ascii_digit();
    let period_comma = |c: char| c == '.' || c == ',';
    let s = pairs(&padded, |a, b| {
        (!digit(a) && period_comma(b)).then(|| format!("{a} {b} "))
    });
    let s = pairs(&s, |a, b| {
        (period_comma(a) && !digit(b)).then(|| format!(" {a} {b}"))
    });
    let s = pairs(&s, |a, b| {
        (digit(a) && b == '-').then(|| format!("{a} {b} "))
    });
    s.iter()
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

fn ngrams(tokens: &[&str], n: usize) -> HashMap<Vec<String>, usize> {
    let mut m = HashMap::new();
    for w in tokens.windows(n) {
        *m.entry(w.iter().map(|s| s.to_string()).collect())
            .or_insert(0) += 1;
    }
    m
}

/// Corpus BLEU of `hypotheses` against one reference each.
pub fn corpus_bleu(hypotheses: &[String], references: &[String]) -> Result<Bleu> {
    if hypotheses.len() != references.len() {
        return Err(Error::value(
            "corpus_bleu",
            format!(
                "{} hypotheses for {} references",
                hypotheses.len(),
                references.len()
            ),
        ));
    }
    let (mut correct, mut total) = ([0usize; 4], [0usize; 4]);
    let (mut hyp_len, mut ref_len) = (0, 0);
    for (h, r) in hypotheses.iter().zip(references) {
        let (h, r) = (tokenize_13a(h), tokenize_13a(r));
        let (ht, rt): (Vec<&str>, Vec<&str>) = (
            h.split(' ').filter(|t| !t.is_empty()).collect(),
            r.split(' ').filter(|t| !t.is_empty()).collect(),
        );
        hyp_len += ht.len();
        ref_len += rt.len();
        for n in 1..=4 {
            let (hn, rn) = (ngrams(&ht, n), ngrams(&rt, n));
            total[n - 1] += ht.len().saturating_sub(n - 1);
            correct[n - 1] += hn
                .iter()
                .map(|(g, &c)| c.min(rn.get(g).copied().unwrap_or(0)))
                .sum::<usize>();
        }
    }
    let brevity_penalty = if hyp_len >= ref_len {
        1.0
    } else if hyp_len == 0 {
        0.0
    } else {
        (1.0 - ref_len as f64 / hyp_len as f64).exp()
    };
    let mut precisions = [0.0; 4];
    if correct.iter().all(|&c| c == 0) {
        return Ok(Bleu {
            score: 0.0,
            precisions,
            brevity_penalty,
            hyp_len,
            ref_len,
        });
    }
    let mut smooth = 1.0;
    for n in 0..4 {
        if total[n] == 0 {
            break;
        }
        precisions[n] = if correct[n] == 0 {
            smooth *= 2.0;
            100.0 / (smooth * total[n] as f64)
        } else {
            100.0 * correct[n] as f64 / total[n] as f64
        };
    }
    // sacreBLEU's log of zero is −9999999999, which makes the score 0.
    let log = |p: f64| if p > 0.0 { p.ln() } else { -9_999_999_999.0 };
    let score = brevity_penalty * (precisions.iter().map(|&p| log(p)).sum::<f64>() / 4.0).exp();
    Ok(Bleu {
        score,
        precisions,
        brevity_penalty,
        hyp_len,
        ref_len,
    })
}
