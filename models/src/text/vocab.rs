//! A word-level vocabulary and tokeniser (words are the `13a` tokens, so punctuation
//! splits off as it does for BLEU). Word level rather than BPE: the built-in task has
//! a closed vocabulary of a few dozen words, and for real parallel text the
//! vocabulary is capped, rare words mapping to `<unk>`.

use super::bleu::tokenize_13a;
use std::collections::HashMap;
use tensor::{Error, Result};

/// Padding id.
pub const PAD: usize = 0;
/// Start-of-sequence id.
pub const BOS: usize = 1;
/// End-of-sequence id.
pub const EOS: usize = 2;
/// Unknown-word id.
pub const UNK: usize = 3;
const SPECIALS: [&str; 4] = ["<pad>", "<bos>", "<eos>", "<unk>"];

/// Words and their ids; ids 0–3 are `<pad>`, `<bos>`, `<eos>`, `<unk>`.
#[derive(Clone, Debug)]
pub struct Vocab {
    words: Vec<String>,
    ids: HashMap<String, usize>,
}

impl Vocab {
    /// The words of `lines` seen at least `min_count` times, most frequent first (ties
    /// alphabetical), at most `max_size` ids in all.
    pub fn build<'a>(
        lines: impl IntoIterator<Item = &'a str>,
        min_count: usize,
        max_size: usize,
    ) -> Result<Vocab> {
        if max_size <= SPECIALS.len() {
            return Err(Error::value(
                "Vocab",
                format!("max_size {max_size} leaves no room for words"),
            ));
        }
        let mut counts: HashMap<String, usize> = HashMap::new();
        for line in lines {
            for w in tokenize_13a(line).split_whitespace() {
                *counts.entry(w.to_string()).or_insert(0) += 1;
            }
        }
        let mut by_count: Vec<(String, usize)> = counts
            .into_iter()
            .filter(|(_, c)| *c >= min_count.max(1))
            .collect();
        by_count.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let words: Vec<String> = SPECIALS
            .iter()
            .map(|s| s.to_string())
            .chain(by_count.into_iter().map(|(w, _)| w))
            .take(max_size)
            .collect();
        let ids = words
            .iter()
            .enumerate()
            .map(|(i, w)| (w.clone(), i))
            .collect();
        Ok(Vocab { words, ids })
    }

    /// Number of ids.
    pub fn len(&self) -> usize {
        self.words.len()
    }

    /// True when only the special tokens are present.
    pub fn is_empty(&self) -> bool {
        self.words.len() <= SPECIALS.len()
    }

    /// The ids of a line's words followed by `<eos>`.
    pub fn encode(&self, line: &str) -> Vec<usize> {
        tokenize_13a(line)
            .split_whitespace()
            .map(|w| self.ids.get(w).copied().unwrap_or(UNK))
            .chain(std::iter::once(EOS))
            .collect()
    }

    /// The words of `ids` up to the first `<eos>`, special tokens other than `<unk>`
    /// left out, joined by spaces.
    pub fn decode(&self, ids: &[usize]) -> String {
        ids.iter()
            .take_while(|&&i| i != EOS)
            .filter(|&&i| i == UNK || i >= SPECIALS.len())
            .map(|&i| self.words.get(i).map_or("<unk>", String::as_str))
            .collect::<Vec<_>>()
            .join(" ")
    }
}
