//! QM9 (Ramakrishnan et al., Scientific Data 2014): the seeded subset of 20,000
//! molecules in `data/qm9/` (see its README), parsed into molecules and turned into
//! a regression set with the invariant radial features of [`super::radial`].
//!
//! Targets, in eV: the atomization energy at 0 K (U0 minus the energies of the
//! isolated atoms, QM9's `atomref` values at the same B3LYP/6-31G(2df,p) level), the
//! standard QM9 regression target, or the HOMO–LUMO gap.

use super::csv::parse_csv;
use super::dataset::{Dataset, Targets};
use super::idx::inflate_gzip;
use super::radial;
use tensor::{Error, Result, Tensor};

/// The largest molecule of QM9, in atoms (the file pads every row to it).
pub const MAX_ATOMS: usize = 29;
/// The elements of QM9, in kind order: H, C, N, O, F.
pub const ELEMENTS: [(&str, u32); 5] = [("H", 1), ("C", 6), ("N", 7), ("O", 8), ("F", 9)];
/// The energy at 0 K of each isolated atom, in Hartree, in [`ELEMENTS`] order (QM9's
/// `atomref.txt`, B3LYP/6-31G(2df,p)).
const ATOM_U0_HARTREE: [f64; 5] = [-0.500273, -37.846772, -54.583861, -75.064579, -99.718730];
/// Electronvolts per Hartree (CODATA 2018).
const EV_PER_HARTREE: f64 = 27.211386245988;
/// Features per molecule: RBFs for each of the 15 pairs of elements, plus 5 counts.
pub const FEATURES: usize = radial::feature_count(ELEMENTS.len());
/// Columns of the file: index, atoms, U0, gap, the atomic numbers, the coordinates.
const COLUMNS: usize = 4 + 4 * MAX_ATOMS;

/// One molecule of the file.
#[derive(Clone, Debug, PartialEq)]
pub struct Molecule {
    /// Its index in the QM9 database (the `dsgdb9nsd_NNNNNN` number).
    pub gdb_index: usize,
    /// Each atom's kind, an index into [`ELEMENTS`].
    pub kinds: Vec<usize>,
    /// Each atom's position, in Å.
    pub positions: Vec<[f64; 3]>,
    /// The internal energy at 0 K, in Hartree.
    pub u0_hartree: f64,
    /// The HOMO–LUMO gap, in Hartree.
    pub gap_hartree: f64,
}

impl Molecule {
    /// The atomization energy at 0 K in eV: U0 minus its isolated atoms' energies
    /// (negative for a bound molecule).
    pub fn atomization_ev(&self) -> f64 {
        let atoms: f64 = self.kinds.iter().map(|&k| ATOM_U0_HARTREE[k]).sum();
        (self.u0_hartree - atoms) * EV_PER_HARTREE
    }
}

/// The regression target of [`dataset`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// The atomization energy at 0 K, eV.
    AtomizationEnergy,
    /// The HOMO–LUMO gap, eV.
    Gap,
}

impl std::str::FromStr for Target {
    type Err = Error;
    fn from_str(s: &str) -> Result<Target> {
        match s {
            "u0" => Ok(Target::AtomizationEnergy),
            "gap" => Ok(Target::Gap),
            _ => Err(Error::value(
                "qm9",
                format!("the target must be u0 (atomization energy) or gap, got '{s}'"),
            )),
        }
    }
}

/// The kind index of atomic number `z`, or an error naming the row.
fn kind_of(z: f64, row: usize, what: &str) -> Result<usize> {
    ELEMENTS
        .iter()
        .position(|&(_, n)| f64::from(n) == z)
        .ok_or_else(|| {
            Error::format(
                what,
                format!("row {row}: atomic number {z} is not one of H, C, N, O, F"),
            )
        })
}

/// Parses the subset's gzip CSV (`what` names it in errors); see [`parse_text`].
pub fn parse(gz: &[u8], what: &str) -> Result<Vec<Molecule>> {
    let text = inflate_gzip(gz, super::idx::MAX_INFLATED_BYTES, what)?;
    let text =
        std::str::from_utf8(&text).map_err(|_| Error::format(what, "the CSV is not UTF-8"))?;
    parse_text(text, what)
}

/// Parses the subset's CSV text, checking every row: the atom count within 1..=29,
/// an element for each atom and zero padding after.
pub fn parse_text(text: &str, what: &str) -> Result<Vec<Molecule>> {
    let table = parse_csv(text, true, what)?;
    let shape = table.values.shape().to_vec();
    if shape[1] != COLUMNS {
        return Err(Error::format(
            what,
            format!("{} columns, expected {COLUMNS}", shape[1]),
        ));
    }
    let v = table.values.to_vec();
    let mut molecules = Vec::with_capacity(shape[0]);
    for (row, r) in v.chunks(COLUMNS).enumerate() {
        let n = r[1];
        if !(1.0..=MAX_ATOMS as f64).contains(&n) || n.fract() != 0.0 {
            return Err(Error::format(
                what,
                format!("row {}: {n} atoms, expected 1..={MAX_ATOMS}", row + 1),
            ));
        }
        let n = n as usize;
        let numbers = &r[4..4 + MAX_ATOMS];
        if numbers[n..].iter().any(|&z| z != 0.0) {
            return Err(Error::format(
                what,
                format!("row {}: atomic numbers past its {n} atoms", row + 1),
            ));
        }
        let kinds = numbers[..n]
            .iter()
            .map(|&z| kind_of(z, row + 1, what))
            .collect::<Result<Vec<_>>>()?;
        let xyz = &r[4 + MAX_ATOMS..];
        let positions = (0..n)
            .map(|a| [xyz[3 * a], xyz[3 * a + 1], xyz[3 * a + 2]])
            .collect();
        molecules.push(Molecule {
            gdb_index: r[0] as usize,
            kinds,
            positions,
            u0_hartree: r[2],
            gap_hartree: r[3],
        });
    }
    Ok(molecules)
}

/// The first `n` molecules as a regression set: features `[n, FEATURES]` and the
/// `target` in eV, `[n, 1]`. The subset is in a seeded random order, so a prefix is
/// a uniform sample of QM9.
pub fn dataset(molecules: &[Molecule], n: usize, target: Target) -> Result<Dataset> {
    if n == 0 || n > molecules.len() {
        return Err(Error::value(
            "qm9",
            format!(
                "asked for {n} molecules; the subset holds {}",
                molecules.len()
            ),
        ));
    }
    let mut x = Vec::with_capacity(n * FEATURES);
    let mut y = Vec::with_capacity(n);
    for m in &molecules[..n] {
        x.extend(radial::features(&m.kinds, &m.positions, ELEMENTS.len()));
        y.push(match target {
            Target::AtomizationEnergy => m.atomization_ev(),
            Target::Gap => m.gap_hartree * EV_PER_HARTREE,
        });
    }
    Dataset::new(
        Tensor::from_vec(x, &[n, FEATURES])?,
        Targets::Values(Tensor::from_vec(y, &[n, 1])?),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file of one row: water (O, H, H) with `numbers` in place of its atomic
    /// numbers and `atoms` as its count.
    fn water(atoms: usize, numbers: [u32; 4]) -> String {
        let mut header = vec!["gdb_index,atoms,u0_hartree,gap_hartree".to_string()];
        header.extend((1..=MAX_ATOMS).map(|i| format!("number_{i}")));
        header.extend((1..=MAX_ATOMS).flat_map(|i| ["x", "y", "z"].map(|c| format!("{c}_{i}"))));
        let mut row = vec![
            "3".to_string(),
            atoms.to_string(),
            "-76.404702".into(),
            "0.3036".into(),
        ];
        row.extend(numbers.iter().map(|z| z.to_string()));
        row.extend((numbers.len()..MAX_ATOMS).map(|_| "0".to_string()));
        let xyz = [
            [-0.0344, 0.9775, 0.0076],
            [0.0647, 0.0205, 0.0015],
            [0.8717, 1.3008, 0.0007],
        ];
        row.extend(xyz.iter().flatten().map(|c| c.to_string()));
        row.extend((9..3 * MAX_ATOMS).map(|_| "0".to_string()));
        format!("{}\n{}\n", header.join(","), row.join(","))
    }

    #[test]
    fn water_parses_to_its_atomization_energy() {
        let m = parse_text(&water(3, [8, 1, 1, 0]), "water").unwrap();
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].gdb_index, 3);
        assert_eq!(m[0].kinds, vec![3, 0, 0]);
        assert_eq!(m[0].positions[2], [0.8717, 1.3008, 0.0007]);
        // −76.404702 − (−75.064579 − 2 · 0.500273) Hartree = −0.339577 Hartree.
        let expected = -0.339577 * EV_PER_HARTREE;
        assert!((m[0].atomization_ev() - expected).abs() < 1e-9);
        let d = dataset(&m, 1, Target::Gap).unwrap();
        assert_eq!(d.x.shape(), &[1, FEATURES]);
        assert!((d.values().unwrap().to_vec()[0] - 0.3036 * EV_PER_HARTREE).abs() < 1e-12);
        assert!(dataset(&m, 2, Target::Gap).is_err());
    }

    #[test]
    fn malformed_rows_are_refused_by_row() {
        for (text, needle) in [
            (water(3, [8, 1, 5, 0]), "row 1: atomic number 5"),
            (
                water(3, [8, 1, 1, 1]),
                "row 1: atomic numbers past its 3 atoms",
            ),
            (water(0, [0, 0, 0, 0]), "row 1: 0 atoms"),
            (water(30, [8, 1, 1, 0]), "row 1: 30 atoms"),
        ] {
            let e = parse_text(&text, "water").unwrap_err().to_string();
            assert!(e.contains(needle), "{e}");
        }
        assert!(parse_text("a,b\n1,2\n", "two")
            .unwrap_err()
            .to_string()
            .contains("2 columns, expected 120"));
    }
}
