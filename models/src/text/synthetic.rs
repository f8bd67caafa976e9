//! The built-in translation task: a rule-based "English" → "German-like" language
//! pair whose translation needs attention, not word-for-word substitution.
//!
//! Source: `[adverb] subject verb object` with subject and object noun phrases
//! `determiner adjective* noun` (SVO, number shown on the noun and the verb).
//! Target: `[adverb] subject object verb` (verb-final), each noun phrase
//! `determiner noun adjective*` (adjectives after the noun), with
//! - the verb agreeing in number with the subject (which may be far away),
//! - determiners marked for case (subject or object) and number,
//! - adjectives agreeing in number with their noun.
//!
//! So the verb moves past the whole object phrase, adjectives move past their noun,
//! and several target words depend on source words they are not aligned with.

use tensor::{Result, Rng};

const NOUNS: [(&str, &str, &str, &str); 6] = [
    ("dog", "dogs", "hund", "hunde"),
    ("cat", "cats", "katze", "katzen"),
    ("bird", "birds", "vogel", "voegel"),
    ("man", "men", "mann", "maenner"),
    ("woman", "women", "frau", "frauen"),
    ("child", "children", "kind", "kinder"),
];
const ADJECTIVES: [(&str, &str, &str); 5] = [
    ("big", "gross", "grosse"),
    ("small", "klein", "kleine"),
    ("red", "rot", "rote"),
    ("old", "alt", "alte"),
    ("quick", "schnell", "schnelle"),
];
const VERBS: [(&str, &str, &str, &str); 4] = [
    ("sees", "see", "sieht", "sehen"),
    ("chases", "chase", "jagt", "jagen"),
    ("likes", "like", "mag", "moegen"),
    ("finds", "find", "findet", "finden"),
];
const ADVERBS: [(&str, &str); 3] = [("today", "heute"), ("often", "oft"), ("never", "nie")];

/// A noun phrase in both languages: (source words, target words, plural).
fn noun_phrase(
    rng: &mut Rng,
    object: bool,
) -> Result<(Vec<&'static str>, Vec<&'static str>, bool)> {
    let plural = rng.below(2)? == 1;
    let definite = rng.below(2)? == 1;
    let (src_det, tgt_det) = match (definite, plural, object) {
        (true, false, false) => ("the", "der"),
        (true, false, true) => ("the", "den"),
        (true, true, _) => ("the", "die"),
        (false, false, false) => ("a", "ein"),
        (false, false, true) => ("a", "einen"),
        (false, true, _) => ("some", "einige"),
    };
    let n = NOUNS[rng.below(NOUNS.len() as u64)? as usize];
    let adjectives: Vec<(&str, &str, &str)> = (0..rng.below(3)?)
        .map(|_| {
            rng.below(ADJECTIVES.len() as u64)
                .map(|i| ADJECTIVES[i as usize])
        })
        .collect::<Result<_>>()?;
    let mut src = vec![src_det];
    src.extend(adjectives.iter().map(|a| a.0));
    src.push(if plural { n.1 } else { n.0 });
    let mut tgt = vec![tgt_det, if plural { n.3 } else { n.2 }];
    tgt.extend(adjectives.iter().map(|a| if plural { a.2 } else { a.1 }));
    Ok((src, tgt, plural))
}

/// `count` seeded sentence pairs (source, reference translation).
pub fn pairs(count: usize, seed: u64) -> Result<Vec<(String, String)>> {
    let mut rng = Rng::new(seed);
    (0..count)
        .map(|_| {
            let adverb = if rng.below(3)? == 0 {
                Some(ADVERBS[rng.below(ADVERBS.len() as u64)? as usize])
            } else {
                None
            };
            let (s_src, s_tgt, plural) = noun_phrase(&mut rng, false)?;
            let (o_src, o_tgt, _) = noun_phrase(&mut rng, true)?;
            let v = VERBS[rng.below(VERBS.len() as u64)? as usize];
            let mut src: Vec<&str> = adverb.iter().map(|a| a.0).collect();
            src.extend(&s_src);
            src.push(if plural { v.1 } else { v.0 });
            src.extend(&o_src);
            let mut tgt: Vec<&str> = adverb.iter().map(|a| a.1).collect();
            tgt.extend(&s_tgt);
            tgt.extend(&o_tgt);
            tgt.push(if plural { v.3 } else { v.2 });
            Ok((src.join(" "), tgt.join(" ")))
        })
        .collect()
}
