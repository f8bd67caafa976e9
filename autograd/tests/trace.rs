//! The audit trace: identical runs give identical traces; a one-ulp perturbation is
//! found at the first op that reads it; a reordered reduction at that op; a change
//! in the op sequence is a finding of its own kind; sampling and the cap. (Tracing
//! is process-wide: the tests here take one lock.)

use autograd::trace::{self, diff, Divergence, Trace, TraceConfig};
use autograd::{backward, record, Var};
use std::sync::Mutex;
use tensor::{Rng, Tensor};

static LOCK: Mutex<()> = Mutex::new(());

fn traced(f: impl FnOnce()) -> Trace {
    trace::start(TraceConfig::default()).unwrap();
    f();
    trace::stop().unwrap()
}

/// A two-layer network's loss and backward pass with weights `w1`, `w2`.
fn step(x: &Tensor<f64>, w1: &Tensor<f64>, w2: &Tensor<f64>) {
    let (w1, w2) = (Var::leaf(w1.clone()), Var::leaf(w2.clone()));
    let h = Var::constant(x.clone())
        .matmul(&w1)
        .unwrap()
        .tanh()
        .unwrap();
    let loss = h.matmul(&w2).unwrap().square().unwrap().mean_all().unwrap();
    backward(&loss).unwrap();
}

fn data() -> (Tensor<f64>, Tensor<f64>, Tensor<f64>) {
    let mut rng = Rng::new(5);
    (
        Tensor::rand_normal(&[8, 4], 0.0, 1.0, &mut rng).unwrap(),
        Tensor::rand_normal(&[4, 6], 0.0, 1.0, &mut rng).unwrap(),
        Tensor::rand_normal(&[6, 2], 0.0, 1.0, &mut rng).unwrap(),
    )
}

#[test]
fn identical_runs_give_identical_traces_and_the_csv_round_trips() {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let (x, w1, w2) = data();
    let a = traced(|| step(&x, &w1, &w2));
    let b = traced(|| step(&x, &w1, &w2));
    // Forward (matmul, tanh, matmul, square, mean_all) and the backward rules.
    assert!(a.records.len() > 8, "{}", a.records.len());
    assert!(
        a.records.iter().any(|r| r.op == "tanh")
            && a.records.iter().filter(|r| r.op == "matmul").count() >= 4
    );
    assert_eq!(
        diff(&a, &b),
        Divergence::Identical {
            records: a.records.len()
        }
    );
    assert!(diff(&a, &b).to_string().starts_with("bit-identical across"));
    let back = Trace::from_csv(&a.to_csv(), "test").unwrap();
    assert_eq!(back.records.len(), a.records.len());
    assert!(back
        .records
        .iter()
        .zip(&a.records)
        .all(|(p, q)| p.hash == q.hash && p.op == q.op && p.shape == q.shape && p.site == q.site));
    // The header (where the run came from) round-trips, and differing entries are
    // named; a run on another kernel path says so before any op does.
    let mut h = a.clone();
    h.header = vec![
        ("kernel path".into(), "avx2".into()),
        ("commit".into(), "abc: def".into()),
    ];
    let back = Trace::from_csv(&h.to_csv(), "test").unwrap();
    assert_eq!(back.header, h.header);
    let mut other = back.clone();
    other.header[0].1 = "avx512".into();
    assert_eq!(
        trace::header_differences(&back, &other),
        vec!["kernel path: avx2 vs avx512".to_string()]
    );
    assert!(trace::header_differences(&back, &a).is_empty());
    let csv = h.to_csv();
    let (first, rest) = csv.split_once('\n').unwrap();
    let bad = format!("{first}\n# no colon here\n{rest}");
    let e = Trace::from_csv(&bad, "bad").unwrap_err().to_string();
    assert!(e.contains("line 2") && e.contains("key: value"), "{e}");
    let cut = a.to_csv().lines().take(4).collect::<Vec<_>>().join("\n");
    assert!(Trace::from_csv(&cut, "cut")
        .unwrap_err()
        .to_string()
        .contains("truncated"));
    assert!(Trace::from_csv("x,y\n", "bad").is_err());
    // Off: nothing is recorded and stop says so.
    step(&x, &w1, &w2);
    assert!(trace::stop().is_none());
}

#[test]
fn a_one_ulp_change_is_found_at_the_first_op_that_reads_it() {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let (x, w1, w2) = data();
    // A per-feature scale read by an element-wise product, then the network: one
    // ulp of one scale changes that product's bits (a sum of several terms, like a
    // matmul, can absorb it) and everything after.
    let run = |scale: &Tensor<f64>| {
        let s = Var::leaf(scale.clone());
        let h = Var::constant(x.clone()).mul(&s).unwrap();
        let h = h.matmul(&Var::leaf(w1.clone())).unwrap().tanh().unwrap();
        let loss = h
            .matmul(&Var::leaf(w2.clone()))
            .unwrap()
            .square()
            .unwrap()
            .mean_all()
            .unwrap();
        backward(&loss).unwrap();
    };
    let scale = Tensor::from_vec(vec![0.7f64, 1.3, 0.9, 1.1], &[1, 4]).unwrap();
    let mut v = scale.to_vec();
    v[1] = f64::from_bits(v[1].to_bits() + 1);
    let nudged = Tensor::from_vec(v, &[1, 4]).unwrap();
    let (a, b) = (traced(|| run(&scale)), traced(|| run(&nudged)));
    match diff(&a, &b) {
        Divergence::Values {
            index,
            a: ra,
            b: rb,
            before,
            differences,
        } => {
            assert_eq!((index, ra.op.as_str()), (0, "mul"));
            assert!(before.is_empty() && ra.hash != rb.hash);
            assert!(differences.is_none(), "values were not kept");
        }
        other => panic!("expected a value divergence, got {other:?}"),
    }
    // With the step's values kept, the report says by how much: the scale input by
    // one ulp, the product by at most a few ulps relative.
    let keep = TraceConfig {
        values_step: Some(0),
        ..TraceConfig::default()
    };
    let with_values = |scale: &Tensor<f64>| {
        trace::start(keep.clone()).unwrap();
        run(scale);
        let t = trace::stop().unwrap();
        Trace::from_csv(&t.to_csv(), "kept").unwrap()
    };
    match diff(&with_values(&scale), &with_values(&nudged)) {
        Divergence::Values {
            differences: Some(d),
            ..
        } => {
            let ulp = f64::from_bits(1.3f64.to_bits() + 1) - 1.3;
            assert_eq!(d.inputs.len(), 2);
            assert_eq!(d.inputs[0], (0.0, 0.0));
            assert_eq!(d.inputs[1].0, ulp);
            assert!(d.output.0 > 0.0 && d.output.1 < 4.0 * f64::EPSILON, "{d:?}");
        }
        other => panic!("expected differences, got {other:?}"),
    }
    // One ulp of a weight read only by a matmul: found at the first op whose bits
    // change, never before the first op that reads it.
    let mut v = w2.to_vec();
    v[3] = f64::from_bits(v[3].to_bits() + 1);
    let w2b = Tensor::from_vec(v, w2.shape()).unwrap();
    let (a, b) = (
        traced(|| step(&x, &w1, &w2)),
        traced(|| step(&x, &w1, &w2b)),
    );
    let first_reader = a
        .records
        .iter()
        .filter(|r| r.op == "matmul")
        .nth(1)
        .unwrap()
        .seq as usize;
    match diff(&a, &b) {
        Divergence::Values { index, .. } => assert!(index >= first_reader),
        other => panic!("expected a value divergence, got {other:?}"),
    }
}

#[test]
fn a_reordered_reduction_is_found_at_that_op() {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    // The same sum, its terms added in two orders (recorded as one op each): the
    // trace finds the reduction, not the ops after it.
    let x = Tensor::from_vec(vec![1.0, 1e-16, 1e-16, 1e-16], &[4]).unwrap();
    let sum = |reversed: bool| {
        let xv = Var::leaf(x.clone());
        let mut v = x.to_vec();
        if reversed {
            v.reverse();
        }
        let s = v.iter().fold(0.0, |acc, t| acc + t);
        let total = record("sum_all", &[&xv], Tensor::scalar(s), |c| {
            Ok(vec![Some(c.grad.clone())])
        })
        .unwrap();
        total.mul_scalar(3.0).unwrap().exp().unwrap();
    };
    let (a, b) = (traced(|| sum(false)), traced(|| sum(true)));
    match diff(&a, &b) {
        Divergence::Values {
            index,
            a: ra,
            b: rb,
            ..
        } => {
            assert_eq!((index, ra.op.as_str()), (0, "sum_all"));
            assert_ne!(ra.hash, rb.hash);
        }
        other => panic!("expected a value divergence, got {other:?}"),
    }
}

#[test]
fn a_different_op_sequence_is_its_own_finding_and_sampling_keeps_the_chosen_steps() {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let x = Var::leaf(Tensor::from_vec(vec![0.5, -1.0], &[2]).unwrap());
    let a = traced(|| {
        x.exp().unwrap().sum_all().unwrap();
    });
    let b = traced(|| {
        x.exp().unwrap().tanh().unwrap().sum_all().unwrap();
    });
    match diff(&a, &b) {
        Divergence::Sequence {
            index,
            a: ra,
            b: rb,
        } => {
            assert_eq!(index, 1);
            assert_eq!(
                (ra.unwrap().op, rb.unwrap().op),
                ("sum".to_string(), "tanh".to_string())
            );
        }
        other => panic!("expected a sequence divergence, got {other:?}"),
    }
    // Four steps of two ops each, traced with `cfg`.
    let four_steps = |cfg: TraceConfig| {
        trace::start(cfg).unwrap();
        for s in 0..4 {
            trace::set_step(s);
            x.exp().unwrap().sum_all().unwrap();
        }
        trace::stop().unwrap()
    };
    // Every 2nd step, at most 3 records: steps 0 and 2 kept up to the cap.
    let t = four_steps(TraceConfig {
        every_steps: 2,
        max_records: 3,
        ..TraceConfig::default()
    });
    assert_eq!(t.ops, 8);
    assert_eq!(
        t.records.iter().map(|r| r.step).collect::<Vec<_>>(),
        vec![0, 0, 2]
    );
    assert_eq!(t.dropped, 1);
    // Only the last step: the records of steps 0–2 are discarded as step 3 starts.
    let t = four_steps(TraceConfig {
        last_step_only: true,
        ..TraceConfig::default()
    });
    assert_eq!((t.ops, t.records.len()), (8, 2));
    assert!(t.records.iter().all(|r| r.step == 3));
    assert!(trace::start(TraceConfig {
        every_steps: 0,
        ..TraceConfig::default()
    })
    .is_err());
    // Stats: a non-finite output is counted.
    let t = traced(|| {
        Var::leaf(Tensor::from_vec(vec![-1.0, 4.0], &[2]).unwrap())
            .ln()
            .unwrap();
    });
    assert_eq!((t.records[0].non_finite, t.records[0].max), (1, 4f64.ln()));
}

/// A trace never lands over another: of several writers racing for one path,
/// exactly one publishes it whole, and each other one gets an error naming the
/// temp file that still holds its own trace.
#[test]
fn racing_writers_never_overwrite_a_trace() {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let x = Var::leaf(Tensor::from_vec(vec![0.5, -1.0], &[2]).unwrap());
    let dir = std::env::temp_dir().join(format!("trace-race-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("same.csv");
    let traces: Vec<Trace> = (0..4)
        .map(|k| {
            let mut t = traced(|| {
                x.exp().unwrap().sum_all().unwrap();
            });
            t.header = vec![("writer".into(), k.to_string())];
            t
        })
        .collect();
    let results: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = traces.iter().map(|t| s.spawn(|| t.write(&path))).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 1);
    let winner = Trace::read(&path).unwrap();
    let k = results.iter().position(|r| r.is_ok()).unwrap();
    assert_eq!(winner.header, traces[k].header);
    for (i, r) in results.iter().enumerate().filter(|(_, r)| r.is_err()) {
        let e = r.as_ref().unwrap_err().to_string();
        assert!(e.contains("never overwrites"), "{e}");
        let kept = e.rsplit("kept in ").next().unwrap();
        assert_eq!(
            Trace::read(std::path::Path::new(kept)).unwrap().header,
            traces[i].header
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
