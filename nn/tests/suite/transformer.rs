//! Attention against a naive f64 loop with and without masks; gradcheck of attention,
//! LayerNorm and whole encoder/decoder layers; causal masking leaks nothing from the
//! future (bit-identical earlier outputs); beam search with one beam is greedy
//! decoding; the ViT presets have the published parameter counts.

use crate::common::opts;
use autograd::{gradcheck, GradcheckOptions, Var};
use nn::check::gradcheck_params;
use nn::decode::{beam_search, greedy, DecodeConfig};
use nn::layers::attention::{causal_mask, padding_mask, scaled_dot_product_attention};
use nn::nets::transformer::{TokenBatch, Transformer, TransformerConfig};
use nn::nets::vit::{Vit, VitConfig};
use nn::nets::Classifier;
use nn::{Activation, DecoderLayer, EncoderLayer, LayerConfig, LayerNorm, Module, ParamStore};
use proptest::prelude::*;
use tensor::{Rng, Tensor};

fn rand(shape: &[usize], seed: u64) -> Tensor<f64> {
    Tensor::rand_normal(shape, 0.0, 1.0, &mut Rng::new(seed)).unwrap()
}

/// softmax(q·kᵀ/√d + m)·v by loops over every index.
fn naive_attention(
    q: &Tensor<f64>,
    k: &Tensor<f64>,
    v: &Tensor<f64>,
    mask: Option<&Tensor<f64>>,
) -> Vec<f64> {
    let (b, h, lq, d) = (q.shape()[0], q.shape()[1], q.shape()[2], q.shape()[3]);
    let (lk, dv) = (k.shape()[2], v.shape()[3]);
    let m = mask.map(|m| m.broadcast_to(&[b, h, lq, lk]).unwrap());
    let mut out = Vec::new();
    for bi in 0..b {
        for hi in 0..h {
            for i in 0..lq {
                let s: Vec<f64> = (0..lk)
                    .map(|j| {
                        let dot: f64 = (0..d)
                            .map(|c| {
                                q.get(&[bi, hi, i, c]).unwrap() * k.get(&[bi, hi, j, c]).unwrap()
                            })
                            .sum();
                        dot / (d as f64).sqrt()
                            + m.as_ref().map_or(0.0, |m| m.get(&[bi, hi, i, j]).unwrap())
                    })
                    .collect();
                let top = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let e: Vec<f64> = s.iter().map(|x| (x - top).exp()).collect();
                let z: f64 = e.iter().sum();
                for c in 0..dv {
                    out.push(
                        (0..lk)
                            .map(|j| e[j] / z * v.get(&[bi, hi, j, c]).unwrap())
                            .sum(),
                    );
                }
            }
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn attention_matches_a_naive_loop(
        (b, h, lq, lk, d) in (1usize..3, 1usize..4, 1usize..5, 1usize..6, 1usize..5),
        which in 0usize..3,
        seed in 0u64..1000,
    ) {
        let lq = lq.min(lk);
        let (q, k, v) = (rand(&[b, h, lq, d], seed), rand(&[b, h, lk, d], seed + 1), rand(&[b, h, lk, d + 1], seed + 2));
        let lengths: Vec<usize> = (0..b).map(|i| lk - i.min(lk - 1)).collect();
        let mask = match which {
            0 => None,
            1 => Some(causal_mask::<f64>(lq, lk).unwrap()),
            _ => Some(padding_mask::<f64>(&lengths, lk).unwrap()),
        };
        let got = scaled_dot_product_attention(
            &Var::constant(q.clone()), &Var::constant(k.clone()), &Var::constant(v.clone()), mask.as_ref(), None,
        ).unwrap();
        let want = naive_attention(&q, &k, &v, mask.as_ref());
        prop_assert_eq!(got.shape(), &[b, h, lq, d + 1]);
        for (x, y) in got.value().to_vec().iter().zip(&want) {
            // Both are a handful of f64 roundings away from the exact value.
            prop_assert!((x - y).abs() <= 1e-12 * (1.0 + y.abs()), "{} vs {}", x, y);
        }
    }
}

#[test]
fn attention_and_layer_norm_pass_gradcheck() {
    let mask = causal_mask::<f64>(3, 4).unwrap();
    let r = gradcheck(
        |x| scaled_dot_product_attention(&x[0], &x[1], &x[2], Some(&mask), None),
        &[
            rand(&[1, 2, 3, 2], 1),
            rand(&[1, 2, 4, 2], 2),
            rand(&[1, 2, 4, 3], 3),
        ],
        &GradcheckOptions::default(),
    );
    assert!(r.is_ok(), "{r:?}");
    let store = ParamStore::<f64>::new();
    let ln = LayerNorm::new(&store.root(), 5, 1e-5, true).unwrap();
    let r = gradcheck(
        |x| ln.forward(&x[0]),
        &[rand(&[3, 5], 4)],
        &GradcheckOptions::default(),
    );
    assert!(r.is_ok(), "{r:?}");
}

fn layer_config(pre_norm: bool) -> LayerConfig {
    LayerConfig {
        dim: 6,
        heads: 2,
        ff: 10,
        dropout: 0.0,
        pre_norm,
        activation: Activation::Gelu,
    }
}

#[test]
fn whole_encoder_and_decoder_layers_pass_gradcheck() {
    for pre_norm in [false, true] {
        let store = ParamStore::<f64>::new();
        let mut rng = Rng::new(7);
        let enc =
            EncoderLayer::new(&store.root().sub("enc"), &layer_config(pre_norm), &mut rng).unwrap();
        let dec =
            DecoderLayer::new(&store.root().sub("dec"), &layer_config(pre_norm), &mut rng).unwrap();
        let (x, y) = (rand(&[2, 4, 6], 8), rand(&[2, 3, 6], 9));
        let pad = padding_mask::<f64>(&[4, 2], 4).unwrap();
        let causal = causal_mask::<f64>(3, 3).unwrap();
        // Through the inputs...
        let r = gradcheck(
            |v| {
                let memory = enc.forward(&v[0], Some(&pad))?;
                dec.forward(&v[1], &memory, Some(&causal), Some(&pad))?
                    .tanh()
            },
            &[x.clone(), y.clone()],
            &GradcheckOptions::default(),
        );
        assert!(r.is_ok(), "pre_norm {pre_norm}: {r:?}");
        // ...and through every parameter.
        let loss = || {
            let memory = enc.forward(&Var::constant(x.clone()), Some(&pad))?;
            dec.forward(
                &Var::constant(y.clone()),
                &memory,
                Some(&causal),
                Some(&pad),
            )?
            .tanh()?
            .sum_all()
        };
        assert!(gradcheck_params(&store, loss, &opts(2, 11)).unwrap().checks > 0);
    }
}

fn tiny_transformer(store: &ParamStore<f64>, pre_norm: bool) -> Transformer<f64> {
    let cfg = TransformerConfig {
        vocab: 12,
        dim: 8,
        heads: 2,
        ff: 16,
        encoder_layers: 2,
        decoder_layers: 2,
        dropout: 0.0,
        pre_norm,
        max_len: 32,
    };
    Transformer::new(&store.root(), cfg, &mut Rng::new(3)).unwrap()
}

#[test]
fn causal_masking_leaks_nothing_from_the_future() {
    for pre_norm in [false, true] {
        let store = ParamStore::<f64>::new();
        let model = tiny_transformer(&store, pre_norm);
        let src = TokenBatch::new(&[vec![4, 5, 6, 7, 2]], 0).unwrap();
        let a = TokenBatch::new(&[vec![1, 8, 9, 10, 11]], 0).unwrap();
        let logits_a = model.forward(&src, &a).unwrap().value().clone();
        for t in 1..5 {
            let mut changed = a.clone();
            changed.ids[t] = 3;
            let logits_b = model.forward(&src, &changed).unwrap().value().clone();
            // Positions before t are bit-identical; position t itself changes.
            assert!(logits_a
                .narrow(1, 0, t)
                .unwrap()
                .bit_eq(&logits_b.narrow(1, 0, t).unwrap()));
            assert!(!logits_a
                .narrow(1, t, 1)
                .unwrap()
                .bit_eq(&logits_b.narrow(1, t, 1).unwrap()));
        }
    }
}

#[test]
fn padding_does_not_change_a_sequence_s_outputs() {
    let store = ParamStore::<f64>::new();
    let model = tiny_transformer(&store, true);
    let (src, tgt) = (vec![4, 5, 6], vec![1, 7, 8]);
    let alone = model
        .forward(
            &TokenBatch::new(std::slice::from_ref(&src), 0).unwrap(),
            &TokenBatch::new(std::slice::from_ref(&tgt), 0).unwrap(),
        )
        .unwrap();
    let padded = model
        .forward(
            &TokenBatch::new(&[src, vec![9, 9, 9, 9, 9, 9]], 0).unwrap(),
            &TokenBatch::new(&[tgt, vec![1, 2, 3, 4, 5]], 0).unwrap(),
        )
        .unwrap();
    let first = padded
        .value()
        .index_axis(0, 0)
        .unwrap()
        .narrow(0, 0, 3)
        .unwrap();
    let want = alone.value().index_axis(0, 0).unwrap();
    for (x, y) in first.to_vec().iter().zip(want.to_vec()) {
        assert!((x - y).abs() <= 1e-12 * (1.0 + y.abs()), "{x} vs {y}");
    }
}

#[test]
fn beam_search_with_one_beam_is_greedy_decoding() {
    let cfg = DecodeConfig {
        pad: 0,
        bos: 1,
        eos: 2,
        max_len: 12,
    };
    for (seed, pre_norm) in [(0u64, false), (1, true), (2, true)] {
        let store = ParamStore::<f64>::new();
        let model = tiny_transformer(&store, pre_norm);
        let mut rng = Rng::new(seed);
        for _ in 0..4 {
            let src: Vec<usize> = (0..5).map(|_| 3 + rng.below(9).unwrap() as usize).collect();
            let g = greedy(&model, &src, &cfg).unwrap();
            assert_eq!(beam_search(&model, &src, 1, 0.0, &cfg).unwrap(), g);
            assert_eq!(beam_search(&model, &src, 1, 0.6, &cfg).unwrap(), g);
            assert!(
                g.len() <= cfg.max_len && (g.last() == Some(&cfg.eos) || g.len() == cfg.max_len)
            );
            // A wider beam finds a sequence at least as probable as greedy's under
            // the raw-sum score it ranks by.
            let wide = beam_search(&model, &src, 4, 0.0, &cfg).unwrap();
            let score = |seq: &[usize]| -> f64 {
                let mut prefix = vec![cfg.bos];
                prefix.extend_from_slice(seq);
                let lp = model
                    .forward(
                        &TokenBatch::new(std::slice::from_ref(&src), 0).unwrap(),
                        &TokenBatch::new(&[prefix[..prefix.len() - 1].to_vec()], 0).unwrap(),
                    )
                    .unwrap()
                    .value()
                    .log_softmax(-1)
                    .unwrap();
                seq.iter()
                    .enumerate()
                    .map(|(t, &tok)| lp.get(&[0, t, tok]).unwrap())
                    .sum()
            };
            assert!(score(&wide) >= score(&g) - 1e-9, "{wide:?} vs {g:?}");
        }
    }
}

#[test]
fn vit_presets_have_the_published_parameter_counts() {
    // timm's vit_{tiny,small,base,large}_patch16_224 with 1000 classes.
    for (cfg, want) in [
        (VitConfig::tiny(224, 16, 1000), 5_717_416),
        (VitConfig::small(224, 16, 1000), 22_050_664),
        (VitConfig::base(224, 16, 1000), 86_567_656),
        (VitConfig::large(224, 16, 1000), 304_326_632),
    ] {
        let store = ParamStore::<f32>::new();
        Vit::new(&store.root(), cfg, &mut Rng::new(0)).unwrap();
        assert_eq!(store.num_trainable(), want, "{cfg:?}");
    }
    let store = ParamStore::<f32>::new();
    let vit = Vit::new(
        &store.root(),
        VitConfig {
            depth: 2,
            ..VitConfig::tiny(32, 8, 10)
        },
        &mut Rng::new(0),
    )
    .unwrap();
    let x = Var::constant(
        Tensor::<f32>::rand_normal(&[3, 3, 32, 32], 0.0, 1.0, &mut Rng::new(1)).unwrap(),
    );
    assert_eq!(vit.forward(&x).unwrap().shape(), &[3, 10]);
    assert_eq!(vit.features(&x).unwrap().shape(), &[3, 192]);
    assert!(vit
        .forward(&Var::constant(Tensor::zeros(&[1, 3, 16, 16]).unwrap()))
        .is_err());
}

#[test]
fn bad_attention_inputs_are_named() {
    let store = ParamStore::<f64>::new();
    let e = nn::MultiHeadAttention::new(&store.root(), 6, 4, 0.0, &mut Rng::new(0))
        .err()
        .unwrap();
    assert!(
        e.to_string()
            .contains("6 features do not split into 4 heads"),
        "{e}"
    );
    // A mask that blocks every key of a query.
    let blocked = Tensor::<f64>::full(&[1, 1, 2, 3], f64::NEG_INFINITY).unwrap();
    let q = Var::constant(rand(&[1, 1, 2, 2], 0));
    let kv = Var::constant(rand(&[1, 1, 3, 2], 1));
    let e = scaled_dot_product_attention(&q, &kv, &kv, Some(&blocked), None)
        .err()
        .unwrap();
    assert!(e.to_string().contains("blocks every key"), "{e}");
    let model = tiny_transformer(&store, false);
    let e = model
        .forward(
            &TokenBatch::new(&[vec![4, 99]], 0).unwrap(),
            &TokenBatch::new(&[vec![1]], 0).unwrap(),
        )
        .err()
        .unwrap();
    assert!(e.to_string().contains("token 99"), "{e}");
    assert!(TokenBatch::new(&[vec![]], 0).is_err());
}

/// Attention without recording (heads one at a time, the scores being over budget)
/// equals attention on recording leaves (all heads at once) to the bit.
fn assert_heads_one_at_a_time_match(
    q: Tensor<f64>,
    k: Tensor<f64>,
    v: Tensor<f64>,
    mask: &Tensor<f64>,
) {
    let split = autograd::no_grad(|| {
        scaled_dot_product_attention(
            &Var::constant(q.clone()),
            &Var::constant(k.clone()),
            &Var::constant(v.clone()),
            Some(mask),
            None,
        )
    })
    .unwrap();
    let whole = scaled_dot_product_attention(
        &Var::leaf(q),
        &Var::leaf(k),
        &Var::leaf(v),
        Some(mask),
        None,
    )
    .unwrap();
    assert!(split.value().bit_eq(whole.value()));
}

#[test]
fn heads_one_at_a_time_give_the_same_bits_as_all_at_once() {
    // 2 heads × 1500 × 1500 scores exceed the budget, so without recording the
    // heads are computed one after another.
    let (q, k, v) = (
        rand(&[1, 2, 1500, 3], 1),
        rand(&[1, 2, 1500, 3], 2),
        rand(&[1, 2, 1500, 2], 3),
    );
    let mask = causal_mask::<f64>(1500, 1500).unwrap();
    assert_heads_one_at_a_time_match(q, k, v, &mask);
}

#[test]
fn a_per_head_mask_is_sliced_per_head_when_heads_run_one_at_a_time() {
    // A 3-D mask [H, Lq, Lk]: head 0 causal, head 1 open.
    let l = 1500;
    let causal = causal_mask::<f64>(l, l).unwrap();
    let mask = Tensor::stack(&[&causal, &Tensor::zeros(&[l, l]).unwrap()], 0).unwrap();
    let (q, k, v) = (
        rand(&[1, 2, l, 2], 4),
        rand(&[1, 2, l, 2], 5),
        rand(&[1, 2, l, 2], 6),
    );
    assert_heads_one_at_a_time_match(q, k, v, &mask);
}

#[test]
fn attention_on_strided_views_equals_attention_on_copies() {
    // Heads split off a [B, L, H, D] layout, as multi-head attention does.
    let views: Vec<Tensor<f64>> = (0..3)
        .map(|i| rand(&[2, 5, 3, 4], 20 + i).permute(&[0, 2, 1, 3]).unwrap())
        .collect();
    assert!(!views[0].is_contiguous());
    let mask = causal_mask::<f64>(5, 5).unwrap();
    let run = |t: &[Tensor<f64>]| {
        scaled_dot_product_attention(
            &Var::constant(t[0].clone()),
            &Var::constant(t[1].clone()),
            &Var::constant(t[2].clone()),
            Some(&mask),
            None,
        )
        .unwrap()
        .value()
        .clone()
    };
    let copies: Vec<Tensor<f64>> = views.iter().map(|t| t.contiguous()).collect();
    assert!(run(&views).bit_eq(&run(&copies)));
    let r = gradcheck(
        |x| scaled_dot_product_attention(&x[0], &x[1], &x[2], Some(&mask), None),
        &views,
        &GradcheckOptions::default(),
    );
    assert!(r.is_ok(), "{r:?}");
}

#[test]
fn bad_masks_positions_lengths_and_decode_settings_are_named() {
    let e = causal_mask::<f64>(4, 3).err().unwrap().to_string();
    assert!(e.contains("4 queries cannot follow 3 keys"), "{e}");
    let e = padding_mask::<f64>(&[2, 0], 3).err().unwrap().to_string();
    assert!(e.contains("a length of 0 is not in 1..=3"), "{e}");
    let store = ParamStore::<f64>::new();
    let pos = nn::LearnedPositional::new(&store.root(), 4, 2, &mut Rng::new(0)).unwrap();
    let e = pos
        .add_to(&Var::constant(rand(&[1, 5, 2], 0)))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("L ≤ 4"), "{e}");
    let model = tiny_transformer(&store, true);
    let long = vec![4; 40];
    let e = model
        .forward(
            &TokenBatch::new(&[long], 0).unwrap(),
            &TokenBatch::new(&[vec![1]], 0).unwrap(),
        )
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("40 tokens exceeds max_len 32"), "{e}");
    let cfg = DecodeConfig {
        pad: 0,
        bos: 1,
        eos: 2,
        max_len: 5,
    };
    let e = beam_search(&model, &[4, 5], 0, 0.0, &cfg)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("beam ≥ 1") && e.contains("got 0"), "{e}");
    let e = greedy(&model, &[], &cfg).err().unwrap().to_string();
    assert!(e.contains("0 source tokens"), "{e}");
    let e = greedy(&model, &[4], &DecodeConfig { max_len: 0, ..cfg })
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("max_len 0"), "{e}");
}

#[test]
fn a_patch_that_does_not_divide_the_image_is_named() {
    let store = ParamStore::<f32>::new();
    let e = Vit::new(&store.root(), VitConfig::tiny(32, 5, 10), &mut Rng::new(0))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("the patch must divide the image"), "{e}");
}
