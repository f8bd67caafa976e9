//! Invariant radial features of a 3-D configuration of atoms: for each unordered
//! pair of kinds, Gaussian radial basis functions of the pair distances summed over
//! the pairs (a radial distribution function per pair of kinds), then the count of
//! each kind. Invariant to rotation, translation and permutation of like atoms; used
//! by the synthetic molecules and by QM9 alike, so the two differ only in their data.

/// Radial basis functions per pair of kinds.
pub const RBF: usize = 16;
/// The first and last centre of the basis, in Å.
const CENTRES: (f64, f64) = (0.7, 5.0);
/// The width of each Gaussian, in Å.
const WIDTH: f64 = 0.25;

/// The number of features for `kinds` kinds of atom.
pub const fn feature_count(kinds: usize) -> usize {
    kinds * (kinds + 1) / 2 * RBF + kinds
}

/// Index of the unordered pair (i, j) among (0,0), (0,1), …, (0,k−1), (1,1), … for
/// `kinds` = k kinds.
fn pair_index(i: usize, j: usize, kinds: usize) -> usize {
    let (a, b) = (i.min(j), i.max(j));
    a * kinds - a * (a + 1) / 2 + b
}

/// The Euclidean distance between two positions.
pub fn distance(a: &[f64; 3], b: &[f64; 3]) -> f64 {
    ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2) + (a[2] - b[2]).powi(2)).sqrt()
}

/// The [`feature_count`]`(kinds)` features of atoms of kinds `atom_kinds` (each below
/// `kinds`) at positions `pos` (Å).
pub fn features(atom_kinds: &[usize], pos: &[[f64; 3]], kinds: usize) -> Vec<f64> {
    let mut f = vec![0.0; feature_count(kinds)];
    let counts = kinds * (kinds + 1) / 2 * RBF;
    for i in 0..atom_kinds.len() {
        f[counts + atom_kinds[i]] += 1.0;
        for j in i + 1..atom_kinds.len() {
            let r = distance(&pos[i], &pos[j]);
            let base = pair_index(atom_kinds[i], atom_kinds[j], kinds) * RBF;
            for k in 0..RBF {
                let mu = CENTRES.0 + (CENTRES.1 - CENTRES.0) * k as f64 / (RBF - 1) as f64;
                f[base + k] += (-(r - mu).powi(2) / (2.0 * WIDTH * WIDTH)).exp();
            }
        }
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_are_numbered_without_gaps() {
        for kinds in 1..7 {
            let mut seen: Vec<usize> = (0..kinds)
                .flat_map(|i| (i..kinds).map(move |j| pair_index(i, j, kinds)))
                .collect();
            seen.sort();
            assert_eq!(seen, (0..kinds * (kinds + 1) / 2).collect::<Vec<_>>());
            assert!((0..kinds)
                .all(|i| (0..kinds).all(|j| pair_index(i, j, kinds) == pair_index(j, i, kinds))));
        }
    }

    #[test]
    fn one_pair_at_a_centre_peaks_there() {
        // Two atoms of kinds 1 and 2 (of 3) at the basis's 5th centre.
        let mu = CENTRES.0 + (CENTRES.1 - CENTRES.0) * 4.0 / (RBF - 1) as f64;
        let f = features(&[2, 1], &[[0.0; 3], [0.0, mu, 0.0]], 3);
        let base = pair_index(1, 2, 3) * RBF;
        assert_eq!(f[base + 4], 1.0);
        assert!(f[..base]
            .iter()
            .chain(&f[base + RBF..6 * RBF])
            .all(|&v| v == 0.0));
        assert_eq!(&f[6 * RBF..], &[0.0, 1.0, 1.0]);
    }
}
