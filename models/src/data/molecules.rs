//! A synthetic molecular-energy regression, the stand-in for QM9: random 3-D
//! configurations of a few atoms of three kinds, an energy from physically motivated
//! terms, and input features invariant to rotation, translation and permutation of
//! like atoms.
//!
//! Energy: a Morse pair potential per pair of kinds,
//! V(r) = D (1 − e^{−a(r − r₀)})² − D, plus a many-body coordination term
//! Σᵢ κ (cᵢ − c̄)² with cᵢ = Σⱼ exp(−(rᵢⱼ/1.6)⁴) (which no sum of pair terms can
//! represent, so the features' linear span does not contain the energy).
//!
//! Features: the invariant radial features of [`super::radial`] (the same as QM9's
//! in `closed-form-regression`).

use super::dataset::{Dataset, Targets};
use super::radial::{self, distance as dist};
use tensor::{Result, Rng, Tensor};

/// Atom kinds.
const KINDS: usize = 3;
/// Features per molecule: RBFs for each of the 6 kind pairs, plus 3 counts.
pub const FEATURES: usize = radial::feature_count(KINDS);

/// Morse parameters (D, a, r₀) for kinds (i, j), i ≤ j.
fn morse(i: usize, j: usize) -> (f64, f64, f64) {
    match (i.min(j), i.max(j)) {
        (0, 0) => (3.6, 1.9, 1.54),
        (0, 1) => (4.3, 1.8, 1.09),
        (0, 2) => (3.8, 2.1, 1.43),
        (1, 1) => (4.5, 1.9, 0.74),
        (1, 2) => (4.6, 2.2, 0.96),
        _ => (1.5, 2.6, 1.48),
    }
}

/// One molecule: kinds and positions.
fn molecule(rng: &mut Rng) -> Result<(Vec<usize>, Vec<[f64; 3]>)> {
    let n = 4 + rng.below(5)? as usize;
    let mut kinds = Vec::with_capacity(n);
    let mut pos: Vec<[f64; 3]> = Vec::with_capacity(n);
    while pos.len() < n {
        let u = rng.uniform();
        let kind = if u < 0.4 {
            0
        } else if u < 0.8 {
            1
        } else {
            2
        };
        // Grow a chain: bond to a random earlier atom at about bonding distance.
        let p = if pos.is_empty() {
            [0.0; 3]
        } else {
            let anchor = pos[rng.below(pos.len() as u64)? as usize];
            let (dx, dy, dz) = (rng.normal(), rng.normal(), rng.normal());
            let norm = (dx * dx + dy * dy + dz * dz).sqrt().max(1e-9);
            let r = 1.0 + 0.6 * rng.uniform();
            [
                anchor[0] + r * dx / norm,
                anchor[1] + r * dy / norm,
                anchor[2] + r * dz / norm,
            ]
        };
        if pos.iter().all(|q| dist(q, &p) > 0.85) {
            kinds.push(kind);
            pos.push(p);
        }
    }
    Ok((kinds, pos))
}

/// The energy of a configuration.
pub fn energy(kinds: &[usize], pos: &[[f64; 3]]) -> f64 {
    let n = kinds.len();
    let mut e = 0.0;
    let mut coord = vec![0.0; n];
    for i in 0..n {
        for j in i + 1..n {
            let r = dist(&pos[i], &pos[j]);
            let (d, a, r0) = morse(kinds[i], kinds[j]);
            e += d * (1.0 - (-a * (r - r0)).exp()).powi(2) - d;
            let c = (-(r / 1.6).powi(4)).exp();
            coord[i] += c;
            coord[j] += c;
        }
    }
    e + coord.iter().map(|c| 0.8 * (c - 2.0).powi(2)).sum::<f64>()
}

/// The invariant features of a configuration.
pub fn features(kinds: &[usize], pos: &[[f64; 3]]) -> Vec<f64> {
    radial::features(kinds, pos, KINDS)
}

/// `n` molecules: features `[n, FEATURES]` and energies `[n, 1]`, seeded.
pub fn generate(n: usize, seed: u64) -> Result<Dataset> {
    tensor::layout::checked_numel("molecules::generate", &[n, FEATURES])?;
    let mut rng = Rng::new(seed);
    let mut x = Vec::with_capacity(n * FEATURES);
    let mut y = Vec::with_capacity(n);
    for _ in 0..n {
        let (kinds, pos) = molecule(&mut rng)?;
        x.extend(features(&kinds, &pos));
        y.push(energy(&kinds, &pos));
    }
    Dataset::new(
        Tensor::from_vec(x, &[n, FEATURES])?,
        Targets::Values(Tensor::from_vec(y, &[n, 1])?),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn features_are_invariant_and_energy_is_physical() {
        let mut rng = Rng::new(3);
        let (kinds, pos) = molecule(&mut rng).unwrap();
        // Rotate about z by 0.7 rad, translate, and reverse the atom order.
        let (c, s) = (0.7f64.cos(), 0.7f64.sin());
        let moved: Vec<[f64; 3]> = pos
            .iter()
            .rev()
            .map(|p| {
                [
                    c * p[0] - s * p[1] + 3.0,
                    s * p[0] + c * p[1] - 1.0,
                    p[2] + 0.5,
                ]
            })
            .collect();
        let rk: Vec<usize> = kinds.iter().rev().cloned().collect();
        let (f1, f2) = (features(&kinds, &pos), features(&rk, &moved));
        assert!(f1.iter().zip(&f2).all(|(a, b)| (a - b).abs() < 1e-12));
        assert!((energy(&kinds, &pos) - energy(&rk, &moved)).abs() < 1e-12);
        // Two atoms at the Morse minimum, far from others: the pair term is −D.
        let e = energy(&[1, 1], &[[0.0; 3], [0.74, 0.0, 0.0]]);
        let c = (-(0.74f64 / 1.6).powi(4)).exp();
        assert!((e - (-4.5 + 2.0 * 0.8 * (c - 2.0).powi(2))).abs() < 1e-12);
        let d = generate(50, 1).unwrap();
        assert_eq!(d.x.shape(), &[50, FEATURES]);
        assert!(d.values().unwrap().all_finite());
    }
}
