//! The `seq2seq` experiment: a small Transformer learns the synthetic language pair
//! (BLEU far above an untrained model's), every optimiser runs end to end on parallel
//! text files, and malformed corpora are named.

use crate::common;

use common::{args, tmpdir};

use models::cli::RunConfig;
use models::experiments::seq2seq::{corpus, run, train_arm, Optimiser, Settings};
use models::report::Metrics;
use models::text::vocab::Vocab;
use models::train::{Hyper, CONVERGED_DAMPING};
use nn::nets::transformer::TransformerConfig;

#[test]
fn a_small_transformer_learns_the_synthetic_language_pair() {
    let c = corpus(None, 2000, 60).unwrap();
    assert!(c.test.iter().all(|t| !c.train.iter().any(|p| p.0 == t.0)));
    let vocab = Vocab::build(
        c.train.iter().flat_map(|(a, b)| [a.as_str(), b.as_str()]),
        1,
        1000,
    )
    .unwrap();
    let s = Settings {
        model: TransformerConfig {
            vocab: vocab.len(),
            dim: 32,
            heads: 4,
            ff: 64,
            encoder_layers: 2,
            decoder_layers: 2,
            dropout: 0.0,
            pre_norm: true,
            max_len: 64,
        },
        epochs: 8,
        batch: 32,
        lr: 2e-3,
        hyper: Hyper {
            lr: 0.1,
            momentum: 0.9,
            weight_decay: 0.0,
            rho: 0.05,
            fsam_sigma: 1.0,
            fsam_decay: 0.9,
            refresh_every: 100,
            precond_batch: 32,
            inner_lr: 1e-3,
            converged_damping: CONVERGED_DAMPING,
        },
        warmup: 100,
        smoothing: 0.1,
        quiet: true,
    };
    let r = train_arm(
        Optimiser::Adam,
        &c,
        &vocab,
        &s,
        2,
        0,
        &mut Metrics::default(),
    )
    .unwrap();
    // An untrained model emits unrelated words (BLEU near 0); 40 needs most of the
    // reordering and agreement right.
    assert!(r.bleu_greedy > 40.0, "BLEU {}", r.bleu_greedy);
    assert!(r.bleu_beam > 40.0, "BLEU {}", r.bleu_beam);
}

#[test]
fn every_optimiser_runs_on_parallel_text_files() {
    let dir = tmpdir("seq2seq-run");
    let lines = |v: &[&str]| v.join("\n") + "\n";
    std::fs::write(
        dir.join("train.src"),
        lines(&["a b c", "b c d", "c d a", "d a b"]),
    )
    .unwrap();
    std::fs::write(
        dir.join("train.tgt"),
        lines(&["x y z", "y z w", "z w x", "w x y"]),
    )
    .unwrap();
    std::fs::write(dir.join("test.src"), lines(&["a b d"])).unwrap();
    std::fs::write(dir.join("test.tgt"), lines(&["x y w"])).unwrap();
    let out = dir.join("runs");
    let cfg = RunConfig::parse(&args(&[
        "--quick",
        "--quiet",
        "--data",
        dir.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--dim",
        "8",
        "--heads",
        "2",
        "--layers",
        "1",
        "--epochs",
        "2",
        "--batch",
        "2",
        "--warmup",
        "2",
        "--beam",
        "2",
    ]))
    .unwrap();
    let tables = run(&cfg).unwrap();
    let text = tables[0].render();
    for name in ["Adam", "SAM around Adam", "LLQR+SAM"] {
        assert!(text.contains(name), "{name}:\n{text}");
    }
    assert!(text.contains("4 train / 1 test"), "{text}");
    // A missing file and unequal line counts are named.
    std::fs::write(dir.join("test.tgt"), lines(&["x y w", "extra"])).unwrap();
    let e = run(&cfg).err().unwrap().to_string();
    assert!(e.contains("test.src has 1 lines and test.tgt 2"), "{e}");
    std::fs::remove_file(dir.join("test.tgt")).unwrap();
    let e = run(&cfg).err().unwrap().to_string();
    assert!(e.contains("test.tgt"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_optimisers_and_norms_are_named() {
    for (extra, needle) in [
        (["--optimisers", "lbfgs"], "unknown optimiser 'lbfgs'"),
        (
            ["--norm", "middle"],
            "--norm must be pre or post, got 'middle'",
        ),
    ] {
        let mut a = args(&["--quick", "--quiet", "--pairs", "20", "--test-pairs", "2"]);
        a.extend(args(&extra));
        let e = run(&RunConfig::parse(&a).unwrap())
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains(needle), "{extra:?}: {e}");
    }
}

/// The decode budget follows the sentence being translated (not the longest
/// training line) and stays inside the model's positions.
#[test]
fn the_decode_budget_follows_the_source_and_the_positions() {
    use models::experiments::seq2seq::decode_budget;
    assert_eq!(decode_budget(5, 1000), 20);
    assert_eq!(decode_budget(3000, 100), 99);
    assert_eq!(decode_budget(0, 1), 1);
    assert!(decode_budget(7, 64) < decode_budget(8, 64));
}
