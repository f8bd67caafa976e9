//! A differential target: a short program of tensor operations decoded from the
//! bytes (element-wise with broadcasting, unary maps, reductions, softmax, cumsum,
//! matmul, transposes), run on the engine in f64 and on the naive [`Dense`]
//! evaluator.
//!
//! Tolerance: the engine sums pairwise and in blocks, the reference in order, so
//! results differ by rounding. Every reduction here has at most 16 terms and a
//! program at most 16 operations, so the accumulated error stays below
//! ~16·16·ε·S ≈ 6e-14·S, where S is the largest magnitude any intermediate value of
//! the program reached (maps such as exp scale errors by their derivative, which the
//! same bound on S covers since exp's result is itself an intermediate). The check
//! is |engine − reference| ≤ 1e-9·(1 + S): four orders of magnitude of slack, and
//! still far below the size of any indexing, broadcasting or axis mistake. Where
//! either value is beyond ±1e300 (overflow may happen at different points of a sum)
//! only a NaN against a finite number counts as a disagreement.

use crate::dense::Dense;
use crate::input::Input;
use tensor::Tensor;

const MAX_OPS: usize = 16;
const MAX_ELEMENTS: usize = 4096;

/// A tensor of `shape` with values k/8 for bytes k read as signed.
fn operand(input: &mut Input) -> Option<Dense> {
    let shape = input.shape(3, 4)?;
    let n: usize = shape.iter().product();
    let data = (0..n)
        .map(|_| input.byte().map(|b| b as i8 as f64 / 8.0))
        .collect::<Option<_>>()?;
    Some(Dense { shape, data })
}

fn largest(d: &Dense) -> f64 {
    d.data
        .iter()
        .filter(|v| v.abs() < 1e300)
        .fold(0.0, |m, v| m.max(v.abs()))
}

/// The larger of two numbers, NaN if either is (the engine's convention, as in
/// PyTorch's `maximum` and `max`).
fn nan_max(x: f64, y: f64) -> f64 {
    if x.is_nan() || y.is_nan() {
        f64::NAN
    } else {
        x.max(y)
    }
}

/// Compares results; panics when they disagree beyond the tolerance above. Returns
/// false when some value is beyond ±1e300 in either: the two evaluations may then
/// legitimately part ways (inf − inf against a finite difference), so the program
/// ends there.
fn compare(
    what: &str,
    engine: tensor::Result<Tensor<f64>>,
    reference: &Option<Dense>,
    s: f64,
) -> bool {
    let (t, r) = match (engine, reference) {
        (Ok(t), Some(r)) => (t, r),
        (Err(_), None) => return true,
        (Ok(t), None) => panic!(
            "{what}: the engine accepted it ({:?}), the reference rejects it",
            t.shape()
        ),
        (Err(e), Some(r)) => panic!(
            "{what}: the engine rejected it ({e}), the reference gives {:?}",
            r.shape
        ),
    };
    let got = Dense::of(&t);
    assert_eq!(got.shape, r.shape, "{what}: shapes differ");
    let tol = 1e-9 * (1.0 + s);
    let tame = |v: f64| v.abs() < 1e300;
    for (i, (&a, &b)) in got.data.iter().zip(&r.data).enumerate() {
        let ok = if tame(a) && tame(b) {
            (a - b).abs() <= tol
        } else {
            !(a.is_nan() && tame(b) || b.is_nan() && tame(a))
        };
        assert!(
            ok,
            "{what}: element {i}: engine {a}, reference {b}, tolerance {tol}"
        );
    }
    got.data.iter().chain(&r.data).all(|&v| tame(v))
}

/// Runs the program in `bytes`.
pub fn run(bytes: &[u8]) {
    // The program simply stops where the bytes run out.
    let _ = program(bytes);
}

fn program(bytes: &[u8]) -> Option<()> {
    let mut input = Input::new(bytes);
    let (a, b) = (operand(&mut input)?, operand(&mut input)?);
    let mut regs = [(a.to_tensor(), a), (b.to_tensor(), b)];
    let mut s = largest(&regs[0].1).max(largest(&regs[1].1));
    for _ in 0..MAX_OPS {
        let op = input.byte()?;
        let [(t, d), (u, e)] = &regs;
        let nd = d.shape.len();
        let (what, engine, reference): (String, _, _) = match op % 14 {
            0 => ("add".into(), t.add(u), d.zip(e, |x, y| x + y)),
            1 => ("sub".into(), t.sub(u), d.zip(e, |x, y| x - y)),
            2 => ("mul".into(), t.mul(u), d.zip(e, |x, y| x * y)),
            3 => ("maximum".into(), t.maximum(u), d.zip(e, nan_max)),
            4 => {
                let k = input.below(8)?;
                let (name, engine, f): (&str, Tensor<f64>, fn(f64) -> f64) = match k {
                    0 => ("neg", t.neg(), |x| -x),
                    1 => ("abs", t.abs(), f64::abs),
                    2 => ("tanh", t.tanh(), f64::tanh),
                    3 => ("sigmoid", t.sigmoid(), |x| 1.0 / (1.0 + (-x).exp())),
                    4 => ("relu", t.relu(), |x| x.max(0.0)),
                    5 => ("exp", t.exp(), f64::exp),
                    6 => ("square", t.square(), |x| x * x),
                    _ => ("sin", t.sin(), f64::sin),
                };
                (name.into(), Ok(engine), Some(d.map(f)))
            }
            op @ (5 | 6 | 11 | 13) => {
                let (ax, keep) = (input.axis(nd)?, input.below(2)? == 1);
                let (name, engine, reference) = match op {
                    5 => (
                        "sum",
                        t.sum(&[ax], keep),
                        d.reduce(ax, keep, true, |v| v.iter().sum()),
                    ),
                    6 => (
                        "max",
                        t.max(&[ax], keep),
                        d.reduce(ax, keep, false, |v| {
                            v.iter().copied().fold(f64::NEG_INFINITY, nan_max)
                        }),
                    ),
                    11 => (
                        "mean",
                        t.mean(&[ax], keep),
                        d.reduce(ax, keep, false, |v| v.iter().sum::<f64>() / v.len() as f64),
                    ),
                    _ => (
                        "logsumexp",
                        t.logsumexp(&[ax], keep),
                        d.reduce(ax, keep, false, |v| {
                            let m = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                            if m.is_infinite() {
                                m
                            } else {
                                m + v.iter().map(|x| (x - m).exp()).sum::<f64>().ln()
                            }
                        }),
                    ),
                };
                (
                    format!("{name} over axis {ax} (keepdim {keep}) of {:?}", d.shape),
                    engine,
                    reference,
                )
            }
            7 => {
                if d.shape.len() != 2 || e.shape.len() != 2 {
                    continue;
                }
                ("matmul".into(), t.matmul(u), d.matmul(e))
            }
            8 => {
                let ax = input.axis(nd)?;
                let reference = crate::dense::axis(ax, nd).map(|a| {
                    let m = d
                        .reduce(a as isize, true, true, |v| {
                            v.iter().copied().fold(f64::NEG_INFINITY, f64::max)
                        })
                        .expect("valid axis");
                    let z = d.zip(&m, |x, m| (x - m).exp()).expect("broadcasts");
                    let sum = z
                        .reduce(a as isize, true, true, |v| v.iter().sum())
                        .expect("valid axis");
                    z.zip(&sum, |x, s| x / s).expect("broadcasts")
                });
                (
                    format!("softmax over axis {ax} of {:?}", d.shape),
                    t.softmax(ax),
                    reference,
                )
            }
            9 => {
                regs.swap(0, 1);
                continue;
            }
            10 => {
                let axes: Vec<isize> = (0..nd as isize).rev().collect();
                ("reverse axes".into(), t.permute(&axes), d.permute(&axes))
            }
            _ => {
                let ax = input.axis(nd)?;
                let reference = crate::dense::axis(ax, nd).map(|a| {
                    let mut out = d.clone();
                    let stride: usize = d.shape[a + 1..].iter().product();
                    for i in 0..d.data.len() {
                        if !(i / stride).is_multiple_of(d.shape[a]) {
                            out.data[i] = out.data[i - stride] + d.data[i];
                        }
                    }
                    out
                });
                (
                    format!("cumsum over axis {ax} of {:?}", d.shape),
                    t.cumsum(ax),
                    reference,
                )
            }
        };
        if let Some(r) = &reference {
            s = s.max(largest(r));
        }
        let what = format!("{what} on {:?} and {:?}", d.shape, e.shape);
        if !compare(&what, engine.clone(), &reference, s) {
            return None;
        }
        if let (Ok(t), Some(r)) = (engine, reference) {
            if t.numel() > MAX_ELEMENTS {
                return None;
            }
            regs[0] = (t, r);
        }
    }
    Some(())
}
