//! BLEU against hand-computed values and against sacreBLEU 2.6.0 (values recorded by
//! `tests/data/bleu/sacrebleu_reference.py`); the 13a tokeniser; the vocabulary; the
//! synthetic language pair's rules.

use models::text::bleu::{corpus_bleu, tokenize_13a};
use models::text::synthetic::pairs;
use models::text::vocab::{Vocab, EOS, UNK};

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

#[test]
fn bleu_matches_hand_computed_values() {
    // Identical corpora score 100.
    let same = s(&["a b c d e", "f g h i"]);
    assert!((corpus_bleu(&same, &same).unwrap().score - 100.0).abs() < 1e-12);
    // "the cat sat on the mat" vs "the cat is on the mat": clipped matches 5/6, 3/5,
    // 1/4 and 0/3 (smoothed to 1/(2·3)); equal lengths, no brevity penalty.
    let b = corpus_bleu(
        &s(&["the cat sat on the mat"]),
        &s(&["the cat is on the mat"]),
    )
    .unwrap();
    let want = 100.0 * (5.0 / 6.0 * 3.0 / 5.0 * 1.0 / 4.0 * 1.0 / 6.0f64).powf(0.25);
    assert!((b.score - want).abs() < 1e-12, "{} vs {want}", b.score);
    // Clipping: "the the the" against "the cat" matches one "the" of three.
    let b = corpus_bleu(&s(&["the the the"]), &s(&["the cat"])).unwrap();
    assert!((b.precisions[0] - 100.0 / 3.0).abs() < 1e-12);
    // Brevity: 3 tokens against 4 give exp(1 − 4/3); no 4-gram exists in the
    // hypothesis, so the score is 0 (sacreBLEU's log of zero).
    let b = corpus_bleu(&s(&["a b c"]), &s(&["a b c d"])).unwrap();
    assert!((b.brevity_penalty - (1.0 - 4.0 / 3.0f64).exp()).abs() < 1e-15);
    assert_eq!(b.score, 0.0);
    assert!(corpus_bleu(&s(&["a"]), &s(&[])).is_err());
}

#[test]
fn bleu_matches_sacrebleu() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/bleu/");
    let cases = std::fs::read_to_string(format!("{dir}cases.txt")).unwrap();
    let reference = std::fs::read_to_string(format!("{dir}sacrebleu_reference.txt")).unwrap();
    let rows: Vec<Vec<f64>> = reference
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split(' ').map(|x| x.parse().unwrap()).collect())
        .collect();
    let blocks: Vec<&str> = cases.split("===\n").collect();
    assert_eq!(blocks.len(), rows.len());
    for (block, row) in blocks.iter().zip(&rows) {
        let pick = |p: &str| -> Vec<String> {
            block
                .lines()
                .filter_map(|l| l.strip_prefix(p))
                .map(String::from)
                .collect()
        };
        let b = corpus_bleu(&pick("H: "), &pick("R: ")).unwrap();
        // sacreBLEU computes the same floating-point expression; allow for the
        // order of the log sum.
        assert!(
            (b.score - row[0]).abs() < 1e-9,
            "{block}: {} vs {}",
            b.score,
            row[0]
        );
        for n in 0..4 {
            assert!(
                (b.precisions[n] - row[1 + n]).abs() < 1e-9,
                "{block}: p{}",
                n + 1
            );
        }
        assert!((b.brevity_penalty - row[5]).abs() < 1e-12);
        assert_eq!((b.hyp_len, b.ref_len), (row[6] as usize, row[7] as usize));
    }
}

#[test]
fn the_13a_tokeniser_splits_like_mteval() {
    assert_eq!(tokenize_13a("Hello, world!"), "Hello , world !");
    assert_eq!(
        tokenize_13a("It costs $3.50, ok."),
        "It costs $ 3.50 , ok ."
    );
    assert_eq!(
        tokenize_13a("1990-2000 and well-known"),
        "1990 - 2000 and well-known"
    );
    assert_eq!(tokenize_13a("&quot;a&quot; &amp; b"), "\" a \" & b");
    assert_eq!(tokenize_13a("don't (x)"), "don't ( x )");
}

#[test]
fn the_vocabulary_round_trips_known_words_and_maps_others_to_unk() {
    let v = Vocab::build(["the dog sees the cat", "a cat sees the bird ."], 1, 100).unwrap();
    // 4 specials + the, dog, sees, cat, a, bird, "." = 11 ids; "the" is the most frequent.
    assert_eq!(v.len(), 11);
    let ids = v.encode("the cat sees a bird");
    assert_eq!(ids[0], 4);
    assert_eq!(*ids.last().unwrap(), EOS);
    assert_eq!(v.decode(&ids), "the cat sees a bird");
    let unknown = v.encode("the zebra");
    assert_eq!(unknown[1], UNK);
    assert_eq!(v.decode(&unknown), "the <unk>");
    assert_eq!(Vocab::build(["a a b"], 2, 100).unwrap().len(), 5);
    assert_eq!(Vocab::build(["a b c d"], 1, 6).unwrap().len(), 6);
    assert!(Vocab::build(["a"], 1, 4).is_err());
}

#[test]
fn synthetic_pairs_follow_their_grammar() {
    let p = pairs(500, 9).unwrap();
    assert_eq!(p, pairs(500, 9).unwrap());
    let plural_verbs = ["sehen", "jagen", "moegen", "finden"];
    let singular_verbs = ["sieht", "jagt", "mag", "findet"];
    for (src, tgt) in &p {
        let (sw, tw): (Vec<&str>, Vec<&str>) = (src.split(' ').collect(), tgt.split(' ').collect());
        // Same number of words: the translation reorders and inflects, one to one.
        assert_eq!(sw.len(), tw.len(), "{src} / {tgt}");
        // The verb is last and agrees with the subject, whose determiner opens the
        // subject phrase (after an optional adverb).
        let verb = *tw.last().unwrap();
        let det = if ["heute", "oft", "nie"].contains(&tw[0]) {
            tw[1]
        } else {
            tw[0]
        };
        let plural = ["die", "einige"].contains(&det);
        assert!(
            if plural {
                plural_verbs.contains(&verb)
            } else {
                singular_verbs.contains(&verb)
            },
            "{tgt}"
        );
    }
}
