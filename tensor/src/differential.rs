//! Differential testing: a short program of tensor operations (element-wise with
//! broadcasting, unary maps, reductions, softmax, cumsum, matmul, transposes, and
//! any ops of your own) run on the engine in f64 and on the naive
//! [`Dense`] evaluator, compared element by element after
//! every step, errors included: where one side rejects a call the other must too.
//!
//! Programs come from proptest ([`program`], which shrinks a failure to the
//! fewest, simplest steps on the smallest operands) or from bytes
//! ([`Program::decode`], the body of the `differential` fuzz target).
//!
//! **Tolerance.** The engine sums pairwise and in blocks, the reference in order,
//! so results differ by rounding. Operands have rank ≤ 3 and axes ≤ 4, so every
//! reduction and every matmul depth has at most 16 terms, and a program has at
//! most [`MAX_OPS`] steps: the accumulated error stays below about
//! 16·16·ε·S ≈ 6e-14·S, where S is the largest magnitude any intermediate value of
//! the program reached (maps such as exp scale errors by their derivative, which
//! the same bound on S covers since exp's result is itself an intermediate). The
//! check is |engine − reference| ≤ [`RELATIVE_TOLERANCE`]·(1 + S): four orders of
//! magnitude of slack, and still far below the size of any indexing, broadcasting
//! or axis mistake. Where either value is beyond ±1e300 (overflow may happen at
//! different points of a sum) only a NaN against a finite number counts as a
//! disagreement, and the program ends there. Ops of your own ([`UserOp`]) are held
//! to the same tolerance, so they should be as well conditioned as the built-in
//! ones (no cancellation amplifying rounding by more than about 1e4).
//!
//! ```
//! use proptest::prelude::*;
//! use tensor::differential::{program, UserOp};
//! use tensor::reference::Dense;
//! use tensor::Tensor;
//! // A composition of engine ops, and the same function written plainly.
//! let engine = |t: &Tensor<f64>| Ok(t.square().add_scalar(1.0).ln());
//! let reference = |d: &Dense| Some(d.map(|x| (x * x + 1.0).ln()));
//! let ops = [UserOp { name: "log1p_square", engine: &engine, reference: &reference }];
//! proptest!(|(p in program(ops.len()))| {
//!     p.run_with(&ops).map_err(|e| TestCaseError::fail(e.to_string()))?;
//! });
//! ```
//!
//! Enabled by the `proptest` feature (the testing toolkit).

use crate::reference::{axis as resolve_axis, Dense};
use crate::tensor::Tensor;
use proptest::prelude::*;
use std::fmt;

/// The most steps a program runs.
pub const MAX_OPS: usize = 16;

/// The most elements an intermediate result may hold; a program whose result
/// outgrows it (broadcasting grows results) ends there.
pub const MAX_ELEMENTS: usize = 4096;

/// The relative tolerance of the comparison (see the module's argument).
pub const RELATIVE_TOLERANCE: f64 = 1e-9;

/// A unary map applied element by element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Map {
    /// −x.
    Neg,
    /// |x|.
    Abs,
    /// tanh x.
    Tanh,
    /// 1 / (1 + e^−x).
    Sigmoid,
    /// max(x, 0).
    Relu,
    /// e^x.
    Exp,
    /// x².
    Square,
    /// sin x.
    Sin,
}

impl Map {
    /// Every map, in the order the byte decoder numbers them.
    pub const ALL: [Map; 8] = [
        Map::Neg,
        Map::Abs,
        Map::Tanh,
        Map::Sigmoid,
        Map::Relu,
        Map::Exp,
        Map::Square,
        Map::Sin,
    ];

    /// The engine's op name.
    pub fn name(self) -> &'static str {
        match self {
            Map::Neg => "neg",
            Map::Abs => "abs",
            Map::Tanh => "tanh",
            Map::Sigmoid => "sigmoid",
            Map::Relu => "relu",
            Map::Exp => "exp",
            Map::Square => "square",
            Map::Sin => "sin",
        }
    }

    fn engine(self, t: &Tensor<f64>) -> Tensor<f64> {
        match self {
            Map::Neg => t.neg(),
            Map::Abs => t.abs(),
            Map::Tanh => t.tanh(),
            Map::Sigmoid => t.sigmoid(),
            Map::Relu => t.relu(),
            Map::Exp => t.exp(),
            Map::Square => t.square(),
            Map::Sin => t.sin(),
        }
    }

    fn reference(self, x: f64) -> f64 {
        match self {
            Map::Neg => -x,
            Map::Abs => x.abs(),
            Map::Tanh => x.tanh(),
            Map::Sigmoid => 1.0 / (1.0 + (-x).exp()),
            Map::Relu => x.max(0.0),
            Map::Exp => x.exp(),
            Map::Square => x * x,
            Map::Sin => x.sin(),
        }
    }
}

/// A reduction along one axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduction {
    /// Σ (an empty axis sums to 0).
    Sum,
    /// The largest value, NaN if any is (refused on an empty axis).
    Max,
    /// The mean (refused on an empty axis).
    Mean,
    /// log Σ e^x (refused on an empty axis).
    LogSumExp,
}

/// An axis as drawn: a byte, read against the operand's rank r when the step runs
/// as `byte % (2r + 4) − (r + 2)`, so that about one axis in three is out of range
/// and the two sides' error paths are compared too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AxisPick(pub u8);

impl AxisPick {
    fn resolve(self, rank: usize) -> isize {
        let span = 2 * rank as isize + 4;
        self.0 as isize % span - (rank as isize + 2)
    }
}

/// One step of a program. Steps act on two registers: the first operand is
/// replaced by each step's result, the second stays until a [`Op::Swap`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// first + second, broadcast.
    Add,
    /// first − second, broadcast.
    Sub,
    /// first · second, broadcast.
    Mul,
    /// The element-wise larger, NaN where either is NaN.
    Maximum,
    /// A unary map of the first.
    Map(Map),
    /// A reduction of the first along an axis, the axis kept with size 1 if asked.
    Reduce {
        /// Which reduction.
        reduction: Reduction,
        /// Along which axis.
        axis: AxisPick,
        /// Whether the reduced axis stays, with size 1.
        keepdim: bool,
    },
    /// The matrix product of the two (skipped unless both are 2-D).
    Matmul,
    /// Softmax of the first along an axis.
    Softmax(AxisPick),
    /// The registers exchanged.
    Swap,
    /// The first's axes in reverse order (a strided view).
    ReverseAxes,
    /// Running sum of the first along an axis.
    Cumsum(AxisPick),
    /// The user's op of this index in [`Program::run_with`]'s list (taken modulo
    /// its length), applied to the first.
    User(usize),
}

/// An op of your own, taking part in programs: the engine's version and the
/// reference's. `reference` returns `None` where the engine must refuse the input.
pub struct UserOp<'a> {
    /// Its name in a disagreement's message.
    pub name: &'a str,
    /// The op on the engine.
    pub engine: &'a dyn Fn(&Tensor<f64>) -> crate::Result<Tensor<f64>>,
    /// The op written plainly on the reference.
    pub reference: &'a dyn Fn(&Dense) -> Option<Dense>,
}

/// Where the engine and the reference part: the step, what ran, and how they differ.
#[derive(Clone, Debug, PartialEq)]
pub struct Disagreement {
    /// The step (from 0) that disagreed.
    pub step: usize,
    /// The op and its operands' shapes.
    pub what: String,
    /// How the results differ.
    pub detail: String,
}

impl fmt::Display for Disagreement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "step {}: {}: {}", self.step, self.what, self.detail)
    }
}

impl std::error::Error for Disagreement {}

/// Two operands and the steps run on them.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    /// The first register's initial value.
    pub a: Dense,
    /// The second register's initial value.
    pub b: Dense,
    /// The steps, of which the first [`MAX_OPS`] run.
    pub ops: Vec<Op>,
}

/// A byte cursor: each read consumes a byte, an exhausted input reads `None`.
struct Bytes<'a>(std::slice::Iter<'a, u8>);

impl Bytes<'_> {
    fn next(&mut self) -> Option<u8> {
        self.0.next().copied()
    }

    fn below(&mut self, n: usize) -> Option<usize> {
        Some(self.next()? as usize % n)
    }

    /// A shape of rank 0..=3 with sizes 0..=4, then its values k/8 for bytes k read
    /// as signed.
    fn operand(&mut self) -> Option<Dense> {
        let rank = self.below(4)?;
        let shape: Vec<usize> = (0..rank).map(|_| self.below(5)).collect::<Option<_>>()?;
        let n: usize = shape.iter().product();
        let data = (0..n)
            .map(|_| self.next().map(|b| b as i8 as f64 / 8.0))
            .collect::<Option<_>>()?;
        Some(Dense { shape, data })
    }

    fn op(&mut self) -> Option<Op> {
        let reduce = |reduction, b: &mut Self| {
            Some(Op::Reduce {
                reduction,
                axis: AxisPick(b.next()?),
                keepdim: b.below(2)? == 1,
            })
        };
        Some(match self.below(14)? {
            0 => Op::Add,
            1 => Op::Sub,
            2 => Op::Mul,
            3 => Op::Maximum,
            4 => Op::Map(Map::ALL[self.below(8)?]),
            5 => reduce(Reduction::Sum, self)?,
            6 => reduce(Reduction::Max, self)?,
            7 => Op::Matmul,
            8 => Op::Softmax(AxisPick(self.next()?)),
            9 => Op::Swap,
            10 => Op::ReverseAxes,
            11 => reduce(Reduction::Mean, self)?,
            12 => Op::Cumsum(AxisPick(self.next()?)),
            _ => reduce(Reduction::LogSumExp, self)?,
        })
    }
}

/// The largest magnitude below 1e300 in `d` (0 if none).
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

/// Compares one step's results: both refused, or the same shape with every element
/// within [`RELATIVE_TOLERANCE`]·(1 + `scale`) (`scale`: the largest magnitude the
/// computation has reached). `Ok(false)` when some value is beyond ±1e300 in either:
/// the two evaluations may then legitimately part ways (inf − inf against a finite
/// difference), so a program should end there.
pub fn agree(
    engine: crate::Result<Tensor<f64>>,
    reference: Option<&Dense>,
    scale: f64,
) -> Result<bool, String> {
    let (t, r) = match (engine, reference) {
        (Ok(t), Some(r)) => (t, r),
        (Err(_), None) => return Ok(true),
        (Ok(t), None) => {
            return Err(format!(
                "the engine accepted it ({:?}), the reference refuses it",
                t.shape()
            ))
        }
        (Err(e), Some(r)) => {
            return Err(format!(
                "the engine refused it ({e}), the reference gives shape {:?}",
                r.shape
            ))
        }
    };
    let got = Dense::of(&t);
    if got.shape != r.shape {
        return Err(format!(
            "shapes differ: engine {:?}, reference {:?}",
            got.shape, r.shape
        ));
    }
    let tol = RELATIVE_TOLERANCE * (1.0 + scale);
    let tame = |v: f64| v.abs() < 1e300;
    for (i, (&a, &b)) in got.data.iter().zip(&r.data).enumerate() {
        let ok = if tame(a) && tame(b) {
            (a - b).abs() <= tol
        } else {
            !(a.is_nan() && tame(b) || b.is_nan() && tame(a))
        };
        if !ok {
            return Err(format!(
                "element {i}: engine {a}, reference {b}, tolerance {tol}"
            ));
        }
    }
    Ok(got.data.iter().chain(&r.data).all(|&v| tame(v)))
}

/// One step on the engine and on the reference.
type Step = (String, crate::Result<Tensor<f64>>, Option<Dense>);

impl Program {
    /// The program the bytes spell: two operands (a rank byte, size bytes, value
    /// bytes k read as k/8), then steps until the bytes run out. `None` when they
    /// run out before the operands are complete.
    pub fn decode(bytes: &[u8]) -> Option<Program> {
        let mut input = Bytes(bytes.iter());
        let (a, b) = (input.operand()?, input.operand()?);
        let ops = std::iter::from_fn(|| input.op()).take(MAX_OPS).collect();
        Some(Program { a, b, ops })
    }

    /// Runs the program on the engine and on the reference, comparing after every
    /// step; the first disagreement is returned.
    pub fn run(&self) -> Result<(), Disagreement> {
        self.run_with(&[])
    }

    /// As [`Program::run`], with `user` the ops that [`Op::User`] steps name (those
    /// steps are skipped when `user` is empty).
    pub fn run_with(&self, user: &[UserOp<'_>]) -> Result<(), Disagreement> {
        let mut regs = [
            (self.a.to_tensor(), self.a.clone()),
            (self.b.to_tensor(), self.b.clone()),
        ];
        let mut scale = largest(&self.a).max(largest(&self.b));
        for (step, &op) in self.ops.iter().take(MAX_OPS).enumerate() {
            if op == Op::Swap {
                regs.swap(0, 1);
                continue;
            }
            let [(t, d), (u, e)] = &regs;
            let Some((what, engine, reference)) = one_step(op, t, d, u, e, user) else {
                continue;
            };
            if let Some(r) = &reference {
                scale = scale.max(largest(r));
            }
            let what = format!("{what} on {:?} and {:?}", d.shape, e.shape);
            let tame = agree(engine.clone(), reference.as_ref(), scale)
                .map_err(|detail| Disagreement { step, what, detail })?;
            if !tame {
                return Ok(());
            }
            if let (Ok(t), Some(r)) = (engine, reference) {
                if t.numel() > MAX_ELEMENTS {
                    return Ok(());
                }
                regs[0] = (t, r);
            }
        }
        Ok(())
    }
}

/// Runs `op` on the registers (engine `t`, `u`; reference `d`, `e`); `None` for a
/// step that does not apply (a matmul of operands that are not both 2-D, a user op
/// with no user ops given).
fn one_step(
    op: Op,
    t: &Tensor<f64>,
    d: &Dense,
    u: &Tensor<f64>,
    e: &Dense,
    user: &[UserOp<'_>],
) -> Option<Step> {
    let nd = d.shape.len();
    Some(match op {
        Op::Add => ("add".into(), t.add(u), d.zip(e, |x, y| x + y)),
        Op::Sub => ("sub".into(), t.sub(u), d.zip(e, |x, y| x - y)),
        Op::Mul => ("mul".into(), t.mul(u), d.zip(e, |x, y| x * y)),
        Op::Maximum => ("maximum".into(), t.maximum(u), d.zip(e, nan_max)),
        Op::Map(m) => (
            m.name().into(),
            Ok(m.engine(t)),
            Some(d.map(|x| m.reference(x))),
        ),
        Op::Reduce {
            reduction,
            axis,
            keepdim,
        } => {
            let ax = axis.resolve(nd);
            let (name, engine, reference) = match reduction {
                Reduction::Sum => (
                    "sum",
                    t.sum(&[ax], keepdim),
                    d.reduce(ax, keepdim, true, |v| v.iter().sum()),
                ),
                Reduction::Max => (
                    "max",
                    t.max(&[ax], keepdim),
                    d.reduce(ax, keepdim, false, |v| {
                        v.iter().copied().fold(f64::NEG_INFINITY, nan_max)
                    }),
                ),
                Reduction::Mean => (
                    "mean",
                    t.mean(&[ax], keepdim),
                    d.reduce(ax, keepdim, false, |v| {
                        v.iter().sum::<f64>() / v.len() as f64
                    }),
                ),
                Reduction::LogSumExp => (
                    "logsumexp",
                    t.logsumexp(&[ax], keepdim),
                    d.reduce(ax, keepdim, false, |v| {
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
                format!("{name} over axis {ax} (keepdim {keepdim})"),
                engine,
                reference,
            )
        }
        Op::Matmul => {
            if d.shape.len() != 2 || e.shape.len() != 2 {
                return None;
            }
            ("matmul".into(), t.matmul(u), d.matmul(e))
        }
        Op::Softmax(axis) => {
            let ax = axis.resolve(nd);
            let reference = resolve_axis(ax, nd).map(|a| {
                let a = a as isize;
                let m = d
                    .reduce(a, true, true, |v| {
                        v.iter().copied().fold(f64::NEG_INFINITY, f64::max)
                    })
                    .expect("valid axis");
                let z = d.zip(&m, |x, m| (x - m).exp()).expect("broadcasts");
                let sum = z
                    .reduce(a, true, true, |v| v.iter().sum())
                    .expect("valid axis");
                z.zip(&sum, |x, s| x / s).expect("broadcasts")
            });
            (format!("softmax over axis {ax}"), t.softmax(ax), reference)
        }
        Op::Swap => return None,
        Op::ReverseAxes => {
            let axes: Vec<isize> = (0..nd as isize).rev().collect();
            ("reverse axes".into(), t.permute(&axes), d.permute(&axes))
        }
        Op::Cumsum(axis) => {
            let ax = axis.resolve(nd);
            let reference = resolve_axis(ax, nd).map(|a| {
                let mut out = d.clone();
                let stride: usize = d.shape[a + 1..].iter().product();
                for i in 0..d.data.len() {
                    if !(i / stride).is_multiple_of(d.shape[a]) {
                        out.data[i] = out.data[i - stride] + d.data[i];
                    }
                }
                out
            });
            (format!("cumsum over axis {ax}"), t.cumsum(ax), reference)
        }
        Op::User(i) => {
            let op = user.get(i % user.len().max(1))?;
            (op.name.into(), (op.engine)(t), (op.reference)(d))
        }
    })
}

/// An operand as the byte decoder makes them: rank 0..=3, sizes 0..=4, values k/8
/// for k in −128..=127; shrinks towards small shapes and zeros.
pub fn operand() -> impl Strategy<Value = Dense> {
    proptest::collection::vec(0usize..=4, 0..=3).prop_flat_map(|shape| {
        let n: usize = shape.iter().product();
        proptest::collection::vec(-128i32..=127, n).prop_map(move |v| Dense {
            shape: shape.clone(),
            data: v.into_iter().map(|k| f64::from(k) / 8.0).collect(),
        })
    })
}

/// One step: the built-in ops, and [`Op::User`] steps (about one in three) when
/// `user_ops` is not zero.
pub fn op(user_ops: usize) -> BoxedStrategy<Op> {
    let reduction = prop_oneof![
        Just(Reduction::Sum),
        Just(Reduction::Max),
        Just(Reduction::Mean),
        Just(Reduction::LogSumExp),
    ];
    let axis = any::<u8>().prop_map(AxisPick);
    let built_in = prop_oneof![
        Just(Op::Add),
        Just(Op::Sub),
        Just(Op::Mul),
        Just(Op::Maximum),
        proptest::sample::select(Map::ALL.to_vec()).prop_map(Op::Map),
        (reduction, axis.clone(), any::<bool>()).prop_map(|(reduction, axis, keepdim)| {
            Op::Reduce {
                reduction,
                axis,
                keepdim,
            }
        }),
        Just(Op::Matmul),
        axis.clone().prop_map(Op::Softmax),
        Just(Op::Swap),
        Just(Op::ReverseAxes),
        axis.prop_map(Op::Cumsum),
    ];
    if user_ops == 0 {
        built_in.boxed()
    } else {
        prop_oneof![2 => built_in, 1 => (0..user_ops).prop_map(Op::User)].boxed()
    }
}

/// A program of up to [`MAX_OPS`] steps on two operands, with [`Op::User`] steps
/// when `user_ops` is not zero; a failure shrinks towards fewer steps, smaller
/// operands and zeros.
pub fn program(user_ops: usize) -> impl Strategy<Value = Program> {
    (
        proptest::collection::vec(op(user_ops), 1..=MAX_OPS),
        operand(),
        operand(),
    )
        .prop_map(|(ops, a, b)| Program { a, b, ops })
}
