//! The encoder–decoder Transformer for translation, with one embedding table shared
//! by source, target and output projection (tied embeddings, as in the IWSLT
//! recipes with a joint vocabulary), sinusoidal positions, and teacher-forced
//! training logits. Decoding is in [`crate::decode`].

use crate::layers::attention::{causal_mask, combine_masks, padding_mask};
use crate::layers::positional::sinusoidal;
use crate::layers::transformer::{DecoderLayer, EncoderLayer, LayerConfig};
use crate::module::{Activation, Module};
use crate::param::Scope;
use crate::{Dropout, Embedding, LayerNorm};
use autograd::Var;
use tensor::{Element, Error, Result, Rng, Tensor};

/// Sizes of an encoder–decoder Transformer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TransformerConfig {
    /// Joint vocabulary size.
    pub vocab: usize,
    /// Width d.
    pub dim: usize,
    /// Attention heads.
    pub heads: usize,
    /// Feed-forward width.
    pub ff: usize,
    /// Encoder layers.
    pub encoder_layers: usize,
    /// Decoder layers.
    pub decoder_layers: usize,
    /// Dropout.
    pub dropout: f64,
    /// Pre-norm layers (with a final LayerNorm on each stack) or post-norm.
    pub pre_norm: bool,
    /// Longest sequence the positional table covers.
    pub max_len: usize,
}

impl TransformerConfig {
    /// fairseq's `transformer_iwslt_de_en`: d 512, 4 heads, FF 1024, 6 + 6 layers,
    /// dropout 0.3, post-norm.
    pub fn iwslt_de_en(vocab: usize) -> Self {
        TransformerConfig {
            vocab,
            dim: 512,
            heads: 4,
            ff: 1024,
            encoder_layers: 6,
            decoder_layers: 6,
            dropout: 0.3,
            pre_norm: false,
            max_len: 1024,
        }
    }

    fn layer(&self) -> LayerConfig {
        LayerConfig {
            dim: self.dim,
            heads: self.heads,
            ff: self.ff,
            dropout: self.dropout,
            pre_norm: self.pre_norm,
            activation: Activation::Relu,
        }
    }
}

/// Token sequences padded into one batch.
#[derive(Clone, Debug, PartialEq)]
pub struct TokenBatch {
    /// Ids `[B·L]`, row-major, padded with `pad`.
    pub ids: Vec<usize>,
    /// The length of each sequence.
    pub lengths: Vec<usize>,
    /// L, the longest length.
    pub len: usize,
}

impl TokenBatch {
    /// Pads `seqs` (none empty) to a common length with `pad`.
    pub fn new(seqs: &[Vec<usize>], pad: usize) -> Result<Self> {
        if seqs.is_empty() || seqs.iter().any(|s| s.is_empty()) {
            return Err(Error::value(
                "TokenBatch",
                "needs at least one sequence and no empty ones",
            ));
        }
        let len = seqs.iter().map(Vec::len).max().unwrap_or(0);
        tensor::layout::checked_numel("TokenBatch", &[seqs.len(), len])?;
        let ids = seqs
            .iter()
            .flat_map(|s| s.iter().copied().chain(std::iter::repeat(pad)).take(len))
            .collect();
        Ok(TokenBatch {
            ids,
            lengths: seqs.iter().map(Vec::len).collect(),
            len,
        })
    }

    /// B.
    pub fn batch(&self) -> usize {
        self.lengths.len()
    }
}

/// The encoder–decoder Transformer.
pub struct Transformer<T: Element> {
    embedding: Embedding<T>,
    encoder: Vec<EncoderLayer<T>>,
    decoder: Vec<DecoderLayer<T>>,
    final_norms: Option<(LayerNorm<T>, LayerNorm<T>)>,
    dropout: Dropout<T>,
    positions: Tensor<T>,
    cfg: TransformerConfig,
}

impl<T: Element> Transformer<T> {
    /// A model with parameters in `scope`. The shared embedding starts N(0, 1/d) and
    /// is multiplied by √d on input.
    pub fn new(scope: &Scope<T>, cfg: TransformerConfig, rng: &mut Rng) -> Result<Self> {
        if cfg.vocab == 0 || cfg.max_len == 0 || cfg.encoder_layers == 0 || cfg.decoder_layers == 0
        {
            return Err(Error::value(
                "Transformer",
                format!("invalid configuration {cfg:?}"),
            ));
        }
        let embedding = Embedding::new(&scope.sub("embedding"), cfg.vocab, cfg.dim, rng)?;
        embedding.weight.set(
            embedding
                .weight
                .value()
                .mul_scalar(1.0 / (cfg.dim as f64).sqrt()),
        )?;
        let layer = cfg.layer();
        Ok(Transformer {
            embedding,
            encoder: (0..cfg.encoder_layers)
                .map(|i| EncoderLayer::new(&scope.sub(format!("encoder.{i}")), &layer, rng))
                .collect::<Result<_>>()?,
            decoder: (0..cfg.decoder_layers)
                .map(|i| DecoderLayer::new(&scope.sub(format!("decoder.{i}")), &layer, rng))
                .collect::<Result<_>>()?,
            final_norms: if cfg.pre_norm {
                Some((
                    LayerNorm::new(&scope.sub("encoder_norm"), cfg.dim, 1e-5, true)?,
                    LayerNorm::new(&scope.sub("decoder_norm"), cfg.dim, 1e-5, true)?,
                ))
            } else {
                None
            },
            dropout: Dropout::new(scope.store(), cfg.dropout, rng.split())?,
            positions: sinusoidal(cfg.max_len, cfg.dim)?,
            cfg,
        })
    }

    /// Its configuration.
    pub fn config(&self) -> &TransformerConfig {
        &self.cfg
    }

    /// Embedded tokens ·√d plus positions, with dropout: `[B, L, d]`.
    fn embed(&self, tokens: &TokenBatch) -> Result<Var<T>> {
        if tokens.len > self.cfg.max_len {
            return Err(Error::value(
                "Transformer",
                format!(
                    "a sequence of {} tokens exceeds max_len {}",
                    tokens.len, self.cfg.max_len
                ),
            ));
        }
        if let Some(&bad) = tokens.ids.iter().find(|&&t| t >= self.cfg.vocab) {
            return Err(Error::value(
                "Transformer",
                format!(
                    "token {bad} is outside the vocabulary of {}",
                    self.cfg.vocab
                ),
            ));
        }
        let e = self
            .embedding
            .forward_ids(&tokens.ids, &[tokens.batch(), tokens.len])?
            .mul_scalar((self.cfg.dim as f64).sqrt())?
            .add(&Var::constant(self.positions.narrow(0, 0, tokens.len)?))?;
        self.dropout.forward(&e)
    }

    /// The encoder's memory `[B, Ls, d]` and the padding mask over it.
    pub fn encode(&self, src: &TokenBatch) -> Result<(Var<T>, Tensor<T>)> {
        let mask = padding_mask(&src.lengths, src.len)?;
        let mut h = self.embed(src)?;
        for layer in &self.encoder {
            h = layer.forward(&h, Some(&mask))?;
        }
        if let Some((norm, _)) = &self.final_norms {
            h = norm.forward(&h)?;
        }
        Ok((h, mask))
    }

    /// Next-token logits `[B, Lt, vocab]` for the target inputs `tgt` (teacher
    /// forcing: position t sees target tokens ≤ t and the whole source).
    pub fn decode(
        &self,
        tgt: &TokenBatch,
        memory: &Var<T>,
        memory_mask: &Tensor<T>,
    ) -> Result<Var<T>> {
        let causal = causal_mask::<T>(tgt.len, tgt.len)?;
        let pad = padding_mask::<T>(&tgt.lengths, tgt.len)?;
        let self_mask = combine_masks(Some(&causal), Some(&pad))?;
        let mut h = self.embed(tgt)?;
        for layer in &self.decoder {
            h = layer.forward(&h, memory, self_mask.as_ref(), Some(memory_mask))?;
        }
        if let Some((_, norm)) = &self.final_norms {
            h = norm.forward(&h)?;
        }
        h.matmul(&self.embedding.weight.var().t()?)
    }

    /// Teacher-forced logits of `tgt` given `src`.
    pub fn forward(&self, src: &TokenBatch, tgt: &TokenBatch) -> Result<Var<T>> {
        let (memory, mask) = self.encode(src)?;
        self.decode(tgt, &memory, &mask)
    }
}
