//! Loss landscapes along a training trajectory, as the lift repository draws them
//! (`scripts/compute_lifted_landscape_hepmass.py`, after Li et al. 2018): centre on
//! the last snapshot, take the top two PCA directions of the (mean-centred)
//! snapshots, filter-normalise each direction against the centre (every row of a
//! matrix, every vector as a whole, scaled to the centre's norm), place each snapshot
//! in that frame by the 2×2 normal equations (the directions are not orthogonal after
//! normalisation), and evaluate the loss on a grid of radius 1.6 × the trajectory's
//! largest coordinate.

use tensor::{Error, Result, Tensor};

/// Flat parameter snapshots of one training run, with the tensors' shapes.
#[derive(Clone, Debug, Default)]
pub struct Trajectory {
    /// Shapes of the tensors each snapshot concatenates.
    pub shapes: Vec<Vec<usize>>,
    /// The snapshots, each the concatenation of the tensors' values.
    pub snaps: Vec<Vec<f64>>,
}

impl Trajectory {
    /// Appends a snapshot of `tensors` (their shapes must not change).
    pub fn push(&mut self, tensors: &[Tensor<f64>]) -> Result<()> {
        let shapes: Vec<Vec<usize>> = tensors.iter().map(|t| t.shape().to_vec()).collect();
        if self.snaps.is_empty() {
            self.shapes = shapes;
        } else if shapes != self.shapes {
            return Err(Error::shape(
                "Trajectory",
                format!("snapshot of shapes {shapes:?} after {:?}", self.shapes),
            ));
        }
        self.snaps
            .push(tensors.iter().flat_map(|t| t.to_vec()).collect());
        Ok(())
    }
}

/// A 2-D slice through parameter space and the trajectory's place in it.
#[derive(Clone, Debug)]
pub struct Slice {
    /// The centre (the last snapshot).
    pub centre: Vec<f64>,
    /// First direction (filter-normalised).
    pub d1: Vec<f64>,
    /// Second direction (filter-normalised).
    pub d2: Vec<f64>,
    /// Each snapshot's (α, β).
    pub coords: Vec<(f64, f64)>,
    /// Half-width of the evaluation grid.
    pub radius: f64,
    /// Share of the centred trajectory's variance along the two PCA directions.
    pub explained: f64,
    shapes: Vec<Vec<usize>>,
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Li et al.'s filter normalisation of `d` against `centre`, tensor by tensor.
fn filter_normalise(d: &mut [f64], centre: &[f64], shapes: &[Vec<usize>]) {
    let mut at = 0;
    for s in shapes {
        let n: usize = s.iter().product();
        let rows = if s.len() >= 2 && s[0] > 1 { s[0] } else { 1 };
        let len = n / rows.max(1);
        for r in 0..rows {
            let span = at + r * len..at + (r + 1) * len;
            let dn = dot(&d[span.clone()], &d[span.clone()]).sqrt().max(1e-12);
            let wn = dot(&centre[span.clone()], &centre[span.clone()]).sqrt();
            d[span].iter_mut().for_each(|v| *v *= wn / dn);
        }
        at += n;
    }
}

impl Slice {
    /// The slice of `traj` (at least three snapshots that do not all lie on a line).
    pub fn of(traj: &Trajectory) -> Result<Slice> {
        let t = traj.snaps.len();
        if t < 3 {
            return Err(Error::value(
                "landscape",
                format!("needs at least 3 snapshots, got {t}"),
            ));
        }
        let p = traj.snaps[0].len();
        let mean: Vec<f64> = (0..p)
            .map(|k| traj.snaps.iter().map(|s| s[k]).sum::<f64>() / t as f64)
            .collect();
        let centred: Vec<Vec<f64>> = traj
            .snaps
            .iter()
            .map(|s| s.iter().zip(&mean).map(|(x, m)| x - m).collect())
            .collect();
        // Thin SVD through the T×T Gram matrix.
        let gram: Vec<f64> = (0..t * t)
            .map(|k| dot(&centred[k / t], &centred[k % t]))
            .collect();
        let (values, vectors) = Tensor::from_vec(gram, &[t, t])?.eigh()?;
        let (values, vectors) = (values.to_vec(), vectors.to_vec());
        let total: f64 = values.iter().map(|v| v.max(0.0)).sum();
        let (l1, l2) = (values[t - 1], values[t - 2]);
        if !(l2 > 1e-12 * l1.max(1e-300)) {
            return Err(Error::value(
                "landscape",
                "the trajectory lies on a line: no second direction",
            ));
        }
        let direction = |col: usize, lambda: f64| -> Vec<f64> {
            let mut d = vec![0.0; p];
            for (i, row) in centred.iter().enumerate() {
                let u = vectors[i * t + col] / lambda.sqrt();
                d.iter_mut().zip(row).for_each(|(d, x)| *d += u * x);
            }
            d
        };
        let centre = traj.snaps[t - 1].clone();
        let (mut d1, mut d2) = (direction(t - 1, l1), direction(t - 2, l2));
        filter_normalise(&mut d1, &centre, &traj.shapes);
        filter_normalise(&mut d2, &centre, &traj.shapes);
        let (a11, a12, a22) = (dot(&d1, &d1), dot(&d1, &d2), dot(&d2, &d2));
        let det = a11 * a22 - a12 * a12;
        if !(det > 0.0) {
            return Err(Error::value(
                "landscape",
                "the normalised directions are parallel",
            ));
        }
        let coords: Vec<(f64, f64)> = traj
            .snaps
            .iter()
            .map(|s| {
                let v: Vec<f64> = s.iter().zip(&centre).map(|(x, c)| x - c).collect();
                let (r1, r2) = (dot(&d1, &v), dot(&d2, &v));
                ((a22 * r1 - a12 * r2) / det, (a11 * r2 - a12 * r1) / det)
            })
            .collect();
        let max = coords
            .iter()
            .map(|(a, b)| a.abs().max(b.abs()))
            .fold(0.0, f64::max);
        Ok(Slice {
            centre,
            d1,
            d2,
            coords,
            radius: 1.6 * if max > 0.0 { max } else { 1.0 },
            explained: (l1 + l2) / total,
            shapes: traj.shapes.clone(),
        })
    }

    /// The grid coordinates: `n` evenly spaced values in [−radius, radius].
    pub fn axis(&self, n: usize) -> Vec<f64> {
        (0..n)
            .map(|i| -self.radius + 2.0 * self.radius * i as f64 / (n.max(2) - 1) as f64)
            .collect()
    }

    /// The parameters at centre + α d1 + β d2, as tensors of the snapshot shapes.
    pub fn point(&self, alpha: f64, beta: f64) -> Result<Vec<Tensor<f64>>> {
        let flat: Vec<f64> = (0..self.centre.len())
            .map(|k| self.centre[k] + alpha * self.d1[k] + beta * self.d2[k])
            .collect();
        let mut at = 0;
        self.shapes
            .iter()
            .map(|s| {
                let n: usize = s.iter().product();
                let t = Tensor::from_vec(flat[at..at + n].to_vec(), s);
                at += n;
                t
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tensor::Rng;

    #[test]
    fn a_planar_trajectory_is_recovered_exactly_in_the_slice() {
        // Snapshots c + a_t e + b_t f of one vector: normalising a whole vector keeps
        // the span, so the slice reproduces every snapshot from its coordinates and
        // explains all of the variance. (Row-wise normalisation of a matrix does
        // not keep the span; there only the row norms are checked.)
        let mut rng = Rng::new(4);
        let p = 9;
        let draw = |rng: &mut Rng| -> Vec<f64> { (0..p).map(|_| rng.normal()).collect() };
        let (c, e, f) = (draw(&mut rng), draw(&mut rng), draw(&mut rng));
        let path = |shape: &[usize]| {
            let mut traj = Trajectory::default();
            for k in 0..12 {
                let (a, b) = ((k as f64 * 0.3).sin(), 0.1 * k as f64);
                let v: Vec<f64> = (0..p).map(|i| c[i] + a * e[i] + b * f[i]).collect();
                traj.push(&[Tensor::from_vec(v, shape).unwrap()]).unwrap();
            }
            traj
        };
        let traj = path(&[9]);
        let s = Slice::of(&traj).unwrap();
        assert!((s.explained - 1.0).abs() < 1e-9, "{}", s.explained);
        for (snap, &(a, b)) in traj.snaps.iter().zip(&s.coords) {
            let back: Vec<f64> = s
                .point(a, b)
                .unwrap()
                .iter()
                .flat_map(|t| t.to_vec())
                .collect();
            let err = back
                .iter()
                .zip(snap)
                .map(|(x, y)| (x - y).abs())
                .fold(0.0, f64::max);
            assert!(err < 1e-9, "{err}");
        }
        assert_eq!(s.coords.last().unwrap(), &(0.0, 0.0));
        let norm = |v: &[f64], r: std::ops::Range<usize>| dot(&v[r.clone()], &v[r]).sqrt();
        assert!((norm(&s.d1, 0..9) - norm(&s.centre, 0..9)).abs() < 1e-9);
        let m = Slice::of(&path(&[3, 3])).unwrap();
        for r in [0..3, 3..6, 6..9] {
            assert!((norm(&m.d2, r.clone()) - norm(&m.centre, r.clone())).abs() < 1e-9);
        }
        // A trajectory on a line has no second direction.
        let mut line = Trajectory::default();
        for k in 0..5 {
            line.push(&[Tensor::from_vec(vec![k as f64, 2.0 * k as f64], &[2]).unwrap()])
                .unwrap();
        }
        assert!(Slice::of(&line).is_err());
    }
}
