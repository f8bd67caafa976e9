//! MNIST pairs: a 100-class task built from the shipped digits. Two digit images
//! side by side (28×56) carry the label 10a + b, a for the left digit and b for
//! the right. Pairs are drawn from one split's digits only, so the pairs of the
//! test digits never share a digit image with the pairs of the training digits,
//! and they are stratified: the labels take turns, so every label has the same
//! count (±1).

use super::dataset::{Dataset, Targets};
use tensor::{Error, Result, Rng, Tensor};

/// Classes of a pair: 10 left digits × 10 right digits.
pub const PAIR_CLASSES: usize = 100;

/// Pairs of digit images with their sources.
pub struct DigitPairs {
    /// The pair images `[count, 28·56]` (row-major 28 rows of 56 pixels) and
    /// their labels 10a + b.
    pub data: Dataset,
    /// The indices in the source set of each pair's left and right digit.
    pub sources: Vec<(usize, usize)>,
}

/// `count` pairs of the square `digits` (10 classes), drawn with a generator
/// seeded by `seed`: label k mod 100 for the k-th draw, each half an image of its
/// digit chosen uniformly, then the pairs shuffled.
pub fn digit_pairs(digits: &Dataset, count: usize, seed: u64) -> Result<DigitPairs> {
    let Targets::Classes {
        labels,
        classes: 10,
    } = &digits.y
    else {
        return Err(Error::value(
            "digit_pairs",
            "the source must be a 10-class image set",
        ));
    };
    let pixels = digits.x.shape()[1];
    let side = (pixels as f64).sqrt().round() as usize;
    if side * side != pixels || digits.x.ndim() != 2 {
        return Err(Error::shape(
            "digit_pairs",
            format!("{pixels} pixels per image are not a square image"),
        ));
    }
    let mut by_digit = vec![Vec::new(); 10];
    for (i, &l) in labels.iter().enumerate() {
        by_digit[l].push(i);
    }
    if let Some(d) = (0..10).find(|&d| by_digit[d].is_empty()) {
        return Err(Error::value(
            "digit_pairs",
            format!("the source has no image of digit {d}"),
        ));
    }
    let mut rng = Rng::new(seed);
    tensor::layout::checked_numel("digit_pairs", &[count, 2 * pixels])?;
    let mut sources = Vec::with_capacity(count);
    for k in 0..count {
        let label = k % PAIR_CLASSES;
        let mut pick = |digit: usize| -> Result<usize> {
            let pool = &by_digit[digit];
            Ok(pool[rng.below(pool.len() as u64)? as usize])
        };
        let left = pick(label / 10)?;
        sources.push((left, pick(label % 10)?));
    }
    rng.shuffle(&mut sources);
    let x = digits.x.to_vec();
    let mut out = Vec::with_capacity(count * 2 * pixels);
    for &(a, b) in &sources {
        for row in 0..side {
            out.extend_from_slice(&x[a * pixels + row * side..][..side]);
            out.extend_from_slice(&x[b * pixels + row * side..][..side]);
        }
    }
    let pair_labels = sources
        .iter()
        .map(|&(a, b)| 10 * labels[a] + labels[b])
        .collect();
    Ok(DigitPairs {
        data: Dataset::new(
            Tensor::from_vec(out, &[count, 2 * pixels])?,
            Targets::Classes {
                labels: pair_labels,
                classes: PAIR_CLASSES,
            },
        )?,
        sources,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::builtin;
    use std::collections::HashSet;

    /// The bits of one image's pixels, to compare images exactly.
    fn image_bits(x: &[f64]) -> Vec<u64> {
        x.iter().map(|v| v.to_bits()).collect()
    }

    #[test]
    fn pairs_are_two_digits_side_by_side_with_label_ten_a_plus_b() {
        let (train, _) = builtin::mnist().unwrap();
        let pairs = digit_pairs(&train, 300, 5).unwrap();
        let Targets::Classes { labels, classes } = &pairs.data.y else {
            panic!("classes")
        };
        let Targets::Classes { labels: digit, .. } = &train.y else {
            panic!("classes")
        };
        assert_eq!(*classes, 100);
        let (x, src) = (pairs.data.x.to_vec(), train.x.to_vec());
        for (k, &(a, b)) in pairs.sources.iter().enumerate() {
            assert_eq!(labels[k], 10 * digit[a] + digit[b]);
            for row in 0..28 {
                let got = &x[k * 1568 + row * 56..][..56];
                assert_eq!(got[..28], src[a * 784 + row * 28..][..28]);
                assert_eq!(got[28..], src[b * 784 + row * 28..][..28]);
            }
        }
        // Stratified: 300 draws over 100 labels give each label 3 times.
        let mut counts = [0usize; 100];
        labels.iter().for_each(|&l| counts[l] += 1);
        assert!(counts.iter().all(|&c| c == 3), "{counts:?}");
        // Seeded: the same seed gives the same pairs, another seed others.
        assert_eq!(digit_pairs(&train, 300, 5).unwrap().sources, pairs.sources);
        assert_ne!(digit_pairs(&train, 300, 6).unwrap().sources, pairs.sources);
    }

    #[test]
    fn no_test_digit_appears_in_a_training_pair() {
        let (train, test) = builtin::mnist().unwrap();
        let pairs = digit_pairs(&train, 2000, 1).unwrap();
        let test_images: HashSet<Vec<u64>> = test.x.to_vec().chunks(784).map(image_bits).collect();
        let x = pairs.data.x.to_vec();
        for pair in x.chunks(1568) {
            for half in [0, 28] {
                let image: Vec<f64> = (0..28)
                    .flat_map(|row| pair[row * 56 + half..][..28].to_vec())
                    .collect();
                assert!(!test_images.contains(&image_bits(&image)));
            }
        }
    }

    #[test]
    fn a_source_without_every_digit_is_refused() {
        let (train, _) = builtin::mnist().unwrap();
        let Targets::Classes { labels, .. } = &train.y else {
            panic!("classes")
        };
        let no_sevens: Vec<usize> = (0..train.len()).filter(|&i| labels[i] != 7).collect();
        let err = digit_pairs(&train.subset(&no_sevens).unwrap(), 10, 1)
            .err()
            .unwrap();
        assert!(err.to_string().contains("digit 7"), "{err}");
    }
}
