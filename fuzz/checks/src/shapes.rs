//! Shape arithmetic: a program of views and joins (broadcast, reshape, permute,
//! slice with steps, narrow, concat, split, squeeze, unsqueeze, flip) on tensors of
//! any rank up to 5 with sizes 0 to 4, run on the engine and on [`Dense`]. Each call
//! must succeed exactly when the reference says it is valid, and then give the same
//! shape and the same values (exactly: the values are small integers that no view
//! changes). Later steps act on the engine's result, so strided and zero-sized
//! views feed every operation.

use crate::input::Input;
use tensor::reference::Dense;
use tensor::Tensor;

/// Sizes stay below this many elements, so no program allocates much.
const MAX_ELEMENTS: usize = 4096;

/// Compares an engine result with the reference's verdict; panics on disagreement.
pub fn agree(what: &str, engine: tensor::Result<Tensor<f64>>, reference: Option<Dense>) {
    match (engine, reference) {
        (Ok(t), Some(r)) => {
            let got = Dense::of(&t);
            assert_eq!(got.shape, r.shape, "{what}: shapes differ");
            assert!(
                got.data
                    .iter()
                    .zip(&r.data)
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
                "{what}: values differ: engine {:?}, reference {:?}",
                got.data,
                r.data
            );
        }
        (Err(_), None) => {}
        (Ok(t), None) => panic!(
            "{what}: the engine accepted it (result shape {:?}), the reference rejects it",
            t.shape()
        ),
        (Err(e), Some(r)) => panic!(
            "{what}: the engine rejected it ({e}), the reference gives shape {:?}",
            r.shape
        ),
    }
}

/// Runs the program in `bytes`.
pub fn run(bytes: &[u8]) {
    let mut input = Input::new(bytes);
    let Some(shape) = input.shape(5, 4) else {
        return;
    };
    let mut reference = Dense::arange(&shape);
    let mut engine = reference.to_tensor();
    while let Some(op) = input.byte() {
        let Some(step) = step(op, &mut input, &engine, &reference) else {
            return;
        };
        let (what, e, r) = step;
        match (e, r) {
            (Ok(t), Some(d)) => {
                agree(&what, Ok(t.clone()), Some(d.clone()));
                if t.numel() > MAX_ELEMENTS {
                    return;
                }
                (engine, reference) = (t, d);
            }
            (e, r) => agree(&what, e, r),
        }
    }
}

type Step = (String, tensor::Result<Tensor<f64>>, Option<Dense>);

/// Decodes and runs one operation.
fn step(op: u8, input: &mut Input, t: &Tensor<f64>, d: &Dense) -> Option<Step> {
    let nd = d.shape.len();
    Some(match op % 10 {
        0 => {
            let target = input.shape(5, 4)?;
            (
                format!("broadcast {:?} to {target:?}", d.shape),
                t.broadcast_to(&target),
                d.broadcast_to(&target),
            )
        }
        1 => {
            let target = input.shape(5, 6)?;
            (
                format!("reshape {:?} to {target:?}", d.shape),
                t.reshape(&target),
                d.reshape(&target),
            )
        }
        2 => {
            let len = input.below(nd + 2)?;
            let axes: Vec<isize> = (0..len).map(|_| input.axis(nd)).collect::<Option<_>>()?;
            (
                format!("permute {:?} by {axes:?}", d.shape),
                t.permute(&axes),
                d.permute(&axes),
            )
        }
        3 => {
            let (ax, start, end, step) = (
                input.axis(nd)?,
                input.below(7)?,
                input.below(7)?,
                input.below(4)?,
            );
            (
                format!("slice {:?} axis {ax} {start}..{end} step {step}", d.shape),
                t.slice(ax, start, end, step),
                d.slice(ax, start, end, step),
            )
        }
        4 => {
            let (ax, start, len) = (input.axis(nd)?, input.below(6)?, input.below(6)?);
            (
                format!("narrow {:?} axis {ax} from {start} len {len}", d.shape),
                t.narrow(ax, start, len),
                d.narrow(ax, start, len),
            )
        }
        5 => {
            // Joined with a piece of its own shape except, possibly, along the axis.
            let ax = input.axis(nd)?;
            let mut other = d.shape.clone();
            if let Some(a) = tensor::reference::axis(ax, nd) {
                other[a] = input.below(4)?;
            }
            if input.below(4)? == 0 {
                other.push(1);
            }
            let o = Dense::arange(&other).map(|v| -v - 1.0);
            (
                format!("cat {:?} and {other:?} on axis {ax}", d.shape),
                Tensor::cat(&[t, &o.to_tensor()], ax),
                Dense::cat(&[d, &o], ax),
            )
        }
        6 => {
            let ax = input.axis(nd)?;
            let pieces = input.below(4)?;
            let sizes: Vec<usize> = (0..pieces).map(|_| input.below(4)).collect::<Option<_>>()?;
            let what = format!("split {:?} axis {ax} into {sizes:?}", d.shape);
            match (t.split(ax, &sizes), d.split(ax, &sizes)) {
                (Ok(ts), Some(ds)) => {
                    assert_eq!(ts.len(), ds.len(), "{what}: piece counts differ");
                    for (i, (a, b)) in ts.into_iter().zip(ds).enumerate() {
                        agree(&format!("{what}, piece {i}"), Ok(a), Some(b));
                    }
                    (what, Ok(t.clone()), Some(d.clone()))
                }
                (Ok(_), None) => (what, Ok(t.clone()), None),
                (Err(e), Some(_)) => (what, Err(e), Some(d.clone())),
                (Err(e), None) => (what, Err(e), None),
            }
        }
        7 => {
            let ax = input.axis(nd)?;
            (
                format!("squeeze {:?} axis {ax}", d.shape),
                t.squeeze(ax),
                d.squeeze(ax),
            )
        }
        8 => {
            let ax = input.axis(nd + 1)?;
            (
                format!("unsqueeze {:?} at {ax}", d.shape),
                t.unsqueeze(ax),
                d.unsqueeze(ax),
            )
        }
        _ => {
            let len = input.below(3)?;
            let axes: Vec<isize> = (0..len).map(|_| input.axis(nd)).collect::<Option<_>>()?;
            (
                format!("flip {:?} on {axes:?}", d.shape),
                t.flip(&axes),
                d.flip(&axes),
            )
        }
    })
}
