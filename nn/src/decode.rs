//! Greedy and beam-search decoding for the encoder–decoder [`Transformer`]. Both
//! score tokens by their log-probability (log-softmax of the logits) and break ties
//! toward the lower token id, so a beam of one is exactly greedy decoding.

use crate::nets::transformer::{TokenBatch, Transformer};
use autograd::{no_grad, Var};
use tensor::{Element, Error, Result};

/// Special token ids and limits of a decode.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DecodeConfig {
    /// Padding id.
    pub pad: usize,
    /// Start-of-sequence id (first decoder input).
    pub bos: usize,
    /// End-of-sequence id (ends a hypothesis, kept in the output).
    pub eos: usize,
    /// Most tokens generated.
    pub max_len: usize,
}

/// Log-probabilities of the next token after each prefix in `prefixes` (one source).
fn next_log_probs<T: Element>(
    model: &Transformer<T>,
    memory: &Var<T>,
    mask: &tensor::Tensor<T>,
    prefixes: &[Vec<usize>],
    cfg: &DecodeConfig,
) -> Result<Vec<Vec<f64>>> {
    let tgt = TokenBatch::new(prefixes, cfg.pad)?;
    let lp = model.decode(&tgt, memory, mask)?.value().log_softmax(-1)?;
    prefixes
        .iter()
        .enumerate()
        .map(|(b, p)| {
            Ok(lp
                .index_axis(0, b)?
                .index_axis(0, p.len() - 1)?
                .to_vec()
                .iter()
                .map(|x| x.as_f64())
                .collect())
        })
        .collect()
}

/// The index of the largest value, the lowest index on ties.
fn argmax(v: &[f64]) -> usize {
    v.iter()
        .enumerate()
        .fold((0, f64::NEG_INFINITY), |(bi, bv), (i, &x)| {
            if x > bv {
                (i, x)
            } else {
                (bi, bv)
            }
        })
        .0
}

fn check(src: &[usize], cfg: &DecodeConfig) -> Result<()> {
    if src.is_empty() || cfg.max_len == 0 {
        return Err(Error::value(
            "decode",
            format!(
                "needs a non-empty source and max_len ≥ 1, got {} source tokens and max_len {}",
                src.len(),
                cfg.max_len
            ),
        ));
    }
    Ok(())
}

/// Greedy decoding of one source: the most probable token at each step until `eos`
/// or `max_len` tokens. Returns the generated tokens (without `bos`).
pub fn greedy<T: Element>(
    model: &Transformer<T>,
    src: &[usize],
    cfg: &DecodeConfig,
) -> Result<Vec<usize>> {
    check(src, cfg)?;
    no_grad(|| {
        let (memory, mask) = model.encode(&TokenBatch::new(&[src.to_vec()], cfg.pad)?)?;
        let mut out = vec![cfg.bos];
        while out.len() <= cfg.max_len {
            let lp = next_log_probs(model, &memory, &mask, &[out.clone()], cfg)?;
            let t = argmax(&lp[0]);
            out.push(t);
            if t == cfg.eos {
                break;
            }
        }
        Ok(out[1..].to_vec())
    })
}

/// Beam search over one source with `beam` hypotheses, ranked at the end by total
/// log-probability divided by the GNMT length penalty ((5 + |y|)/6)^α (α = 0: raw
/// sum). A hypothesis ends at `eos`; the search stops when `beam` have ended or at
/// `max_len` tokens.
pub fn beam_search<T: Element>(
    model: &Transformer<T>,
    src: &[usize],
    beam: usize,
    alpha: f64,
    cfg: &DecodeConfig,
) -> Result<Vec<usize>> {
    check(src, cfg)?;
    if beam == 0 || !(alpha >= 0.0 && alpha.is_finite()) {
        return Err(Error::value(
            "beam_search",
            format!("needs beam ≥ 1 and a finite α ≥ 0, got {beam} and {alpha}"),
        ));
    }
    no_grad(|| {
        let (memory, mask) = model.encode(&TokenBatch::new(&[src.to_vec()], cfg.pad)?)?;
        let mut live: Vec<(Vec<usize>, f64)> = vec![(vec![cfg.bos], 0.0)];
        let mut done: Vec<(Vec<usize>, f64)> = Vec::new();
        for _ in 0..cfg.max_len {
            let n = live.len();
            let memory_n = memory
                .value()
                .broadcast_to(&[n, memory.shape()[1], memory.shape()[2]])?
                .contiguous();
            let mask_n = mask.broadcast_to(&[n, 1, 1, mask.shape()[3]])?.contiguous();
            let prefixes: Vec<Vec<usize>> = live.iter().map(|(p, _)| p.clone()).collect();
            let lp = next_log_probs(model, &Var::constant(memory_n), &mask_n, &prefixes, cfg)?;
            let scores: Vec<f64> = live.iter().map(|(_, s)| *s).collect();
            let mut candidates: Vec<(f64, usize, f64, usize)> = lp
                .iter()
                .enumerate()
                .flat_map(|(h, row)| {
                    let base = scores[h];
                    row.iter()
                        .enumerate()
                        .map(move |(t, &l)| (base + l, h, l, t))
                })
                .collect();
            // Highest score first; ties (the sum may round two steps together) to the
            // earlier hypothesis, then the more probable step, then the lower id —
            // so that one beam picks exactly greedy's token.
            candidates.sort_by(|a, b| {
                b.0.total_cmp(&a.0)
                    .then(a.1.cmp(&b.1))
                    .then(b.2.total_cmp(&a.2))
                    .then(a.3.cmp(&b.3))
            });
            let mut next = Vec::new();
            for (score, h, _, t) in candidates.into_iter().take(beam - done.len()) {
                let mut seq = live[h].0.clone();
                seq.push(t);
                if t == cfg.eos {
                    done.push((seq, score));
                } else {
                    next.push((seq, score));
                }
            }
            live = next;
            if done.len() >= beam || live.is_empty() {
                break;
            }
        }
        done.extend(live);
        let penalty = |len: usize| ((5.0 + len as f64) / 6.0).powf(alpha);
        let best = done
            .iter()
            .enumerate()
            .fold((0, f64::NEG_INFINITY), |(bi, bv), (i, (seq, s))| {
                let v = s / penalty(seq.len() - 1);
                if v > bv {
                    (i, v)
                } else {
                    (bi, bv)
                }
            })
            .0;
        Ok(done[best].0[1..].to_vec())
    })
}
