//! Text for the translation experiment: a word-level vocabulary and tokeniser, corpus
//! BLEU as sacreBLEU computes it by default, and the built-in synthetic language
//! pair.

pub mod bleu;
pub mod synthetic;
pub mod vocab;
