//! The audit trace: a per-op record of a run, and the first op where two runs part.
//!
//! With tracing on ([`start`]), every op that passes through [`crate::record`] —
//! forward ops, and backward rules, which are written as ops — appends a
//! [`Record`]: a sequence number, the training step ([`set_step`]), the op's name,
//! the call site, dtype and shape, a 64-bit hash of the output's bits in logical
//! (row-major) order, and optionally its minimum, maximum and count of non-finite
//! values. [`diff`] walks two traces and reports where their op sequences part (a
//! different op or shape) or, when the sequences agree, the first op whose output
//! bits differ — what PyTorch's deterministic mode and anomaly detection cannot say.
//!
//! Off by default, and then one relaxed atomic load per op. Records are kept in
//! memory (up to a cap, the rest counted) and written as CSV, one line per op
//! ([`Trace::write`]): a line is ~100 bytes, diffable with ordinary tools, and
//! readable without this crate; a binary format would be 3× smaller and unreadable.
//! Ops recorded from several threads at once would interleave nondeterministically;
//! the engine records from one thread (kernels parallelise below the tape).

use std::fmt::Write as _;
use std::panic::Location;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use tensor::{DType, Element, Error, Result, Tensor};

/// What to record.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceConfig {
    /// Record the ops of every this many steps (1 = every op; steps are set by the
    /// training loop with [`set_step`], ops before the first call are step 0).
    pub every_steps: u64,
    /// Keep at most this many records; later ones are counted, not kept.
    pub max_records: usize,
    /// Keep only the records of the latest step (each new step discards the
    /// previous one's): the end of a long run at the cost of one step's records.
    pub last_step_only: bool,
    /// Also compute min, max and the count of non-finite values of each output.
    pub stats: bool,
    /// Keep the full values of every op's inputs and output during this step, so
    /// that [`diff`] can report by how much two runs differ at their first
    /// divergent op (when both kept that step).
    pub values_step: Option<u64>,
}

impl Default for TraceConfig {
    fn default() -> Self {
        TraceConfig {
            every_steps: 1,
            max_records: 10_000_000,
            last_step_only: false,
            stats: true,
            values_step: None,
        }
    }
}

/// One executed op.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// Position among all ops executed while tracing (sampled-out ops included).
    pub seq: u64,
    /// The training step it ran in.
    pub step: u64,
    /// The op's name.
    pub op: String,
    /// Where it was called (file:line:column).
    pub site: String,
    /// "f32" or "f64".
    pub dtype: String,
    /// Output shape.
    pub shape: Vec<usize>,
    /// 64-bit hash of the output's bits in row-major order.
    pub hash: u64,
    /// Smallest finite output value (NaN when none or when stats are off).
    pub min: f64,
    /// Largest finite output value (NaN when none or when stats are off).
    pub max: f64,
    /// Number of NaN or infinite outputs (0 when stats are off).
    pub non_finite: usize,
    /// The output's values in row-major order, in the step chosen by
    /// [`TraceConfig::values_step`] (empty otherwise).
    pub values: Vec<f64>,
    /// The inputs' values, in that step (empty otherwise).
    pub inputs: Vec<Vec<f64>>,
}

/// A recorded run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Trace {
    /// The kept records, in execution order.
    pub records: Vec<Record>,
    /// Ops executed while tracing (kept, sampled out or over the cap).
    pub ops: u64,
    /// Ops over the cap, counted but not kept.
    pub dropped: u64,
    /// Where the run came from (`key: value`: build, machine, kernel path), written
    /// as `# key: value` lines after the column names.
    pub header: Vec<(String, String)>,
}

struct State {
    cfg: TraceConfig,
    trace: Trace,
}

static ON: AtomicBool = AtomicBool::new(false);
static STEP: AtomicU64 = AtomicU64::new(0);
static STATE: Mutex<Option<State>> = Mutex::new(None);

fn state() -> std::sync::MutexGuard<'static, Option<State>> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Starts tracing (process-wide), discarding any trace in progress.
///
/// ```
/// use autograd::{backward, trace, Var};
/// use tensor::Tensor;
/// # fn main() -> tensor::Result<()> {
/// trace::start(trace::TraceConfig::default())?;
/// let x = Var::leaf(Tensor::<f64>::from_vec(vec![1.0, 2.0], &[2])?);
/// backward(&x.exp()?.sum_all()?)?;
/// let t = trace::stop().expect("tracing was on");
/// // The forward ops, then the backward rules (which are ops too).
/// assert_eq!(t.records[0].op, "exp");
/// assert_eq!((t.records[1].op.as_str(), t.records[1].shape.clone()), ("sum", vec![]));
/// assert!(t.records.len() > 2 && t.ops == t.records.len() as u64);
/// assert!(trace::stop().is_none()); // off again
/// # Ok(())
/// # }
/// ```
pub fn start(cfg: TraceConfig) -> Result<()> {
    if cfg.every_steps == 0 || cfg.max_records == 0 {
        return Err(Error::value(
            "trace",
            format!(
                "every_steps and max_records must be positive, got {} and {}",
                cfg.every_steps, cfg.max_records
            ),
        ));
    }
    STEP.store(0, Ordering::Relaxed);
    *state() = Some(State {
        cfg,
        trace: Trace::default(),
    });
    ON.store(true, Ordering::Release);
    Ok(())
}

/// Stops tracing and returns what was recorded (`None` if tracing was off).
///
/// ```
/// use autograd::{trace, Var};
/// use tensor::Tensor;
/// # fn main() -> tensor::Result<()> {
/// assert!(trace::stop().is_none()); // nothing was being traced
/// trace::start(trace::TraceConfig::default())?;
/// let x = Var::leaf(Tensor::<f64>::from_vec(vec![-1.0, 4.0], &[2])?);
/// x.relu()?;
/// let t = trace::stop().unwrap();
/// assert!(!trace::is_on());
/// let r = &t.records[0];
/// assert_eq!((r.op.as_str(), r.dtype.as_str(), r.min, r.max), ("relu", "f64", 0.0, 4.0));
/// assert!(r.site.contains(':')); // file:line:column of the call
/// # Ok(())
/// # }
/// ```
pub fn stop() -> Option<Trace> {
    ON.store(false, Ordering::Release);
    state().take().map(|s| s.trace)
}

/// Whether tracing is on.
pub fn is_on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// Marks the start of training step `step` (for sampling and for the records).
pub fn set_step(step: u64) {
    STEP.store(step, Ordering::Relaxed);
}

/// Advances the step counter by one: the optimisers call it after each update
/// while tracing, so a trace's steps count parameter updates.
pub fn next_step() {
    STEP.fetch_add(1, Ordering::Relaxed);
}

/// A 64-bit hash of a tensor's shape and values: four interleaved
/// multiply-xorshift lanes over the words (the shape, a separator, then each
/// value's bits; word i to lane i mod 4, unrolled so the lanes' dependency chains
/// overlap in the CPU), then the lanes and the length mixed with a final avalanche.
/// Equal inputs, equal hashes; any one-bit change changes it with overwhelming
/// probability.
fn hash_words(words: &[u64]) -> u64 {
    const M: u64 = 0xff51_afd7_ed55_8ccd;
    let mix = |h: u64, w: u64| {
        let h = (h ^ w).wrapping_mul(M);
        h ^ (h >> 33)
    };
    let mut l: [u64; 4] = [
        0x9e37_79b9_7f4a_7c15,
        0xbf58_476d_1ce4_e5b9,
        0x94d0_49bb_1331_11eb,
        0x2545_f491_4f6c_dd1d,
    ];
    let mut chunks = words.chunks_exact(4);
    for c in &mut chunks {
        l = [
            mix(l[0], c[0]),
            mix(l[1], c[1]),
            mix(l[2], c[2]),
            mix(l[3], c[3]),
        ];
    }
    for (k, &w) in chunks.remainder().iter().enumerate() {
        l[k] = mix(l[k], w);
    }
    let mut h = words.len() as u64;
    for lane in l {
        h = (h ^ lane).wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^= h >> 33;
    }
    h
}

/// The hash of a tensor's values in row-major order (shape included, so a reshape
/// of the same bits hashes differently).
pub fn tensor_hash<T: Element>(t: &Tensor<T>) -> u64 {
    let values = row_major(t);
    let mut words: Vec<u64> = Vec::with_capacity(t.ndim() + 1 + values.len());
    words.extend(t.shape().iter().map(|&d| d as u64));
    words.push(u64::MAX);
    words.extend(values.iter().map(|&v| match T::DTYPE {
        DType::F32 => (v.as_f64() as f32).to_bits() as u64,
        DType::F64 => v.as_f64().to_bits(),
    }));
    hash_words(&words)
}

/// The values of `t` in row-major order: its storage itself when contiguous (no
/// copy), a gathered copy otherwise.
fn row_major<T: Element>(t: &Tensor<T>) -> std::borrow::Cow<'_, [T]> {
    match t.as_slice() {
        Some(s) => std::borrow::Cow::Borrowed(s),
        None => std::borrow::Cow::Owned(t.to_vec()),
    }
}

/// (min, max) of the finite values (NaN, NaN when there are none) and the count of
/// the others, over four independent lanes with branch-free updates so the loop
/// has no serial dependency.
fn finite_range<T: Element>(values: &[T]) -> (f64, f64, usize) {
    let (mut lo, mut hi, mut bad) = ([f64::INFINITY; 4], [f64::NEG_INFINITY; 4], [0usize; 4]);
    let mut step = |k: usize, v: T| {
        let v = v.as_f64();
        let ok = v.is_finite();
        lo[k] = if ok && v < lo[k] { v } else { lo[k] };
        hi[k] = if ok && v > hi[k] { v } else { hi[k] };
        bad[k] += usize::from(!ok);
    };
    let mut chunks = values.chunks_exact(4);
    for c in &mut chunks {
        for (k, &v) in c.iter().enumerate() {
            step(k, v);
        }
    }
    for (k, &v) in chunks.remainder().iter().enumerate() {
        step(k, v);
    }
    let (lo, hi) = (
        lo.iter().fold(f64::INFINITY, |a, &b| a.min(b)),
        hi.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b)),
    );
    let bad = bad.iter().sum();
    if lo <= hi {
        (lo, hi, bad)
    } else {
        (f64::NAN, f64::NAN, bad)
    }
}

/// Called by [`crate::record`] for every op while tracing is on.
pub(crate) fn observe<T: Element>(
    op: &'static str,
    site: &Location<'_>,
    value: &Tensor<T>,
    inputs: &[&Tensor<T>],
) {
    let mut guard = state();
    let Some(st) = guard.as_mut() else {
        return;
    };
    let seq = st.trace.ops;
    st.trace.ops += 1;
    let step = STEP.load(Ordering::Relaxed);
    if !step.is_multiple_of(st.cfg.every_steps) {
        return;
    }
    if st.cfg.last_step_only && st.trace.records.last().is_some_and(|r| r.step != step) {
        st.trace.records.clear();
        st.trace.dropped = 0;
    }
    if st.trace.records.len() >= st.cfg.max_records {
        st.trace.dropped += 1;
        return;
    }
    let (min, max, non_finite) = if st.cfg.stats {
        finite_range(&row_major(value))
    } else {
        (f64::NAN, f64::NAN, 0)
    };
    let keep = st.cfg.values_step == Some(step);
    let floats = |t: &Tensor<T>| t.to_vec().into_iter().map(|v| v.as_f64()).collect();
    st.trace.records.push(Record {
        values: if keep { floats(value) } else { Vec::new() },
        inputs: if keep {
            inputs.iter().map(|t| floats(t)).collect()
        } else {
            Vec::new()
        },
        seq,
        step,
        op: op.to_string(),
        site: format!("{}:{}:{}", site.file(), site.line(), site.column()),
        dtype: match T::DTYPE {
            DType::F32 => "f32".into(),
            DType::F64 => "f64".into(),
        },
        shape: value.shape().to_vec(),
        hash: tensor_hash(value),
        min,
        max,
        non_finite,
    });
}

const HEADER: &str = "seq,step,op,dtype,shape,hash,min,max,non_finite,values,inputs,site";

/// Values as hex bit patterns separated by spaces (exact, and NaN-safe).
fn hex_values(v: &[f64]) -> String {
    v.iter()
        .map(|x| format!("{:x}", x.to_bits()))
        .collect::<Vec<_>>()
        .join(" ")
}

fn parse_values(s: &str) -> Option<Vec<f64>> {
    s.split(' ')
        .filter(|w| !w.is_empty())
        .map(|w| u64::from_str_radix(w, 16).ok().map(f64::from_bits))
        .collect()
}

impl Trace {
    /// The trace as CSV: the column names, the run's [`Trace::header`] as
    /// `# key: value` lines, then one line per record (`shape` as 2x3, `hash` as 16
    /// hex digits, kept values as hex bit patterns — inputs separated by `|` — the
    /// call site last), then a `#` line with the op counts.
    pub fn to_csv(&self) -> String {
        let mut s = String::with_capacity(64 + 100 * self.records.len());
        let _ = writeln!(s, "{HEADER}");
        for (k, v) in &self.header {
            let _ = writeln!(s, "# {}: {}", k.replace('\n', " "), v.replace('\n', " "));
        }
        for r in &self.records {
            let shape: Vec<String> = r.shape.iter().map(|d| d.to_string()).collect();
            let inputs: Vec<String> = r.inputs.iter().map(|v| hex_values(v)).collect();
            let _ = writeln!(
                s,
                "{},{},{},{},{},{:016x},{:e},{:e},{},{},{},{}",
                r.seq,
                r.step,
                r.op,
                r.dtype,
                shape.join("x"),
                r.hash,
                r.min,
                r.max,
                r.non_finite,
                hex_values(&r.values),
                inputs.join("|"),
                r.site
            );
        }
        let _ = writeln!(s, "# ops {} dropped {}", self.ops, self.dropped);
        s
    }

    /// Parses what [`Trace::to_csv`] wrote; `what` names the source in errors.
    pub fn from_csv(text: &str, what: &str) -> Result<Trace> {
        let mut lines = text.lines().enumerate();
        match lines.next() {
            Some((_, h)) if h == HEADER => {}
            _ => {
                return Err(Error::format(
                    what,
                    format!("not a trace: the first line must be '{HEADER}'"),
                ))
            }
        }
        let mut trace = Trace::default();
        let mut counts = None;
        for (i, line) in lines {
            let bad = |d: &str| Error::format(what, format!("line {}: {d}", i + 1));
            if let Some(rest) = line.strip_prefix("# ops ") {
                let (ops, dropped) = rest
                    .split_once(" dropped ")
                    .ok_or_else(|| bad("malformed count line"))?;
                counts = Some((
                    ops.parse().map_err(|_| bad("bad op count"))?,
                    dropped.parse().map_err(|_| bad("bad dropped count"))?,
                ));
                continue;
            }
            if let Some(rest) = line.strip_prefix("# ") {
                let (k, v) = rest
                    .split_once(": ")
                    .ok_or_else(|| bad("a '#' line that is neither 'key: value' nor the count"))?;
                trace.header.push((k.to_string(), v.to_string()));
                continue;
            }
            let f: Vec<&str> = line.splitn(12, ',').collect();
            if f.len() != 12 {
                return Err(bad(&format!("{} fields, expected 12", f.len())));
            }
            let values = parse_values(f[9]).ok_or_else(|| bad("bad values"))?;
            let inputs = if f[10].is_empty() {
                Vec::new()
            } else {
                f[10]
                    .split('|')
                    .map(parse_values)
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| bad("bad input values"))?
            };
            let num = |s: &str, name: &str| -> Result<f64> {
                s.parse().map_err(|_| bad(&format!("bad {name} '{s}'")))
            };
            let shape = if f[4].is_empty() {
                Vec::new()
            } else {
                f[4].split('x')
                    .map(|d| d.parse().map_err(|_| bad(&format!("bad shape '{}'", f[4]))))
                    .collect::<Result<_>>()?
            };
            trace.records.push(Record {
                seq: f[0].parse().map_err(|_| bad("bad seq"))?,
                step: f[1].parse().map_err(|_| bad("bad step"))?,
                op: f[2].to_string(),
                dtype: f[3].to_string(),
                shape,
                hash: u64::from_str_radix(f[5], 16).map_err(|_| bad("bad hash"))?,
                min: num(f[6], "min")?,
                max: num(f[7], "max")?,
                non_finite: f[8].parse().map_err(|_| bad("bad non_finite"))?,
                values,
                inputs,
                site: f[11].to_string(),
            });
        }
        let (ops, dropped) = counts.ok_or_else(|| {
            Error::format(what, "no '# ops' line at the end: the trace is truncated")
        })?;
        trace.ops = ops;
        trace.dropped = dropped;
        Ok(trace)
    }

    /// Writes the CSV to `path` atomically and never over an existing file: the
    /// CSV goes to a temp file in the same folder, which is then hard-linked to
    /// `path` (the link fails if `path` exists, unlike a rename) and removed. If
    /// `path` appeared meanwhile (another run took the name), the error names the
    /// temp file, which keeps this trace. A file system without hard links gets a
    /// create-new write instead (still never an overwrite, but not atomic).
    pub fn write(&self, path: &Path) -> Result<()> {
        static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut tmp_name = path.as_os_str().to_os_string();
        tmp_name.push(format!(".tmp-{}-{n}", std::process::id()));
        let tmp = std::path::PathBuf::from(tmp_name);
        let io = |p: &Path, e: std::io::Error| Error::io(p.display().to_string(), &e);
        let csv = self.to_csv();
        std::fs::write(&tmp, &csv).map_err(|e| io(&tmp, e))?;
        match std::fs::hard_link(&tmp, path) {
            Ok(()) => std::fs::remove_file(&tmp).map_err(|e| io(&tmp, e)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(Error::value(
                "trace",
                format!(
                    "{} exists (a trace never overwrites another); this trace is kept in {}",
                    path.display(),
                    tmp.display()
                ),
            )),
            Err(_) => {
                let _ = std::fs::remove_file(&tmp);
                write_new(path, csv.as_bytes()).map_err(|e| io(path, e))
            }
        }
    }

    /// Reads a trace file.
    pub fn read(path: &Path) -> Result<Trace> {
        let what = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(&what, &e))?;
        Trace::from_csv(&text, &what)
    }
}

/// Writes `bytes` to `path`, which must not exist yet.
fn write_new(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?
        .write_all(bytes)
}

/// Runs `f` with tracing on and writes the trace, headed by `header`, to `path`
/// (refusing, before anything runs, a path that exists: a trace never overwrites
/// another), keeping the values of step `values_step` if given. Returns `f`'s
/// result; the trace is written even when `f` fails, so a failing run can be
/// audited too.
pub fn traced<R>(
    path: &Path,
    values_step: Option<u64>,
    header: Vec<(String, String)>,
    f: impl FnOnce() -> Result<R>,
) -> Result<R> {
    if path.exists() {
        return Err(Error::value(
            "--trace",
            format!(
                "{} exists; a trace never overwrites another",
                path.display()
            ),
        ));
    }
    start(TraceConfig {
        values_step,
        ..TraceConfig::default()
    })?;
    let out = f();
    let mut recorded = stop().unwrap_or_default();
    recorded.header = header;
    recorded.write(path)?;
    eprintln!(
        "trace: {} ops ({} kept, {} over the cap) in {}",
        recorded.ops,
        recorded.records.len(),
        recorded.dropped,
        path.display()
    );
    out
}

/// The header entries two traces both carry with different values ("kernel path:
/// avx2 vs avx512"), which explain a divergence before any op does.
pub fn header_differences(a: &Trace, b: &Trace) -> Vec<String> {
    a.header
        .iter()
        .filter_map(|(k, va)| {
            let (_, vb) = b.header.iter().find(|(kb, _)| kb == k)?;
            (va != vb).then(|| format!("{k}: {va} vs {vb}"))
        })
        .collect()
}

/// Where two traces part.
#[derive(Clone, Debug, PartialEq)]
pub enum Divergence {
    /// Same ops, same shapes, same bits for every kept record.
    Identical {
        /// Records compared.
        records: usize,
    },
    /// The op sequences agree up to `index`, where the op name, dtype or shape
    /// differ, or one trace ends.
    Sequence {
        /// Position of the first difference among the kept records.
        index: usize,
        /// Record of the first trace there (None: it ended).
        a: Option<Record>,
        /// Record of the second trace there.
        b: Option<Record>,
    },
    /// Same op sequence; the first op whose output bits differ.
    Values {
        /// Position among the kept records.
        index: usize,
        /// Its record in the first trace.
        a: Record,
        /// Its record in the second trace.
        b: Record,
        /// Up to five records before it (from the first trace).
        before: Vec<Record>,
        /// Largest absolute and relative differences of the output and of each
        /// input, when both traces kept that step's values.
        differences: Option<Differences>,
    },
}

/// By how much two records' kept values differ.
#[derive(Clone, Debug, PartialEq)]
pub struct Differences {
    /// (max |a − b|, max |a − b| / max(|a|, |b|)) of the output.
    pub output: (f64, f64),
    /// The same for each input, in order.
    pub inputs: Vec<(f64, f64)>,
}

fn max_differences(a: &[f64], b: &[f64]) -> (f64, f64) {
    a.iter().zip(b).fold((0.0, 0.0), |(abs, rel), (x, y)| {
        let d = (x - y).abs();
        let scale = x.abs().max(y.abs());
        let r = if scale > 0.0 { d / scale } else { 0.0 };
        (f64::max(abs, d), f64::max(rel, r))
    })
}

/// Compares two traces: a difference in the op sequence (name, dtype, shape) is
/// reported where it occurs, even after differing values; otherwise the first
/// value difference.
///
/// ```
/// use autograd::trace::{self, Divergence, Trace, TraceConfig};
/// use autograd::Var;
/// use tensor::Tensor;
/// # fn main() -> tensor::Result<()> {
/// // The same little computation, traced from a given input.
/// let run = |a: f64| -> tensor::Result<Trace> {
///     trace::start(TraceConfig::default())?;
///     let x = Var::leaf(Tensor::<f64>::from_vec(vec![a, 2.0], &[2])?);
///     x.square()?.exp()?.sum_all()?;
///     Ok(trace::stop().unwrap())
/// };
/// let (a, b) = (run(1.0)?, run(1.0)?);
/// assert_eq!(trace::diff(&a, &b), Divergence::Identical { records: 3 });
/// // One changed input: found at the first op whose output bits differ.
/// match trace::diff(&a, &run(1.0 + 1e-12)?) {
///     Divergence::Values { index, a, .. } => assert_eq!((index, a.op.as_str()), (0, "square")),
///     other => panic!("{other}"),
/// }
/// # Ok(())
/// # }
/// ```
pub fn diff(a: &Trace, b: &Trace) -> Divergence {
    let mut first_value = None;
    let n = a.records.len().max(b.records.len());
    for i in 0..n {
        match (a.records.get(i), b.records.get(i)) {
            (Some(x), Some(y)) if x.op == y.op && x.dtype == y.dtype && x.shape == y.shape => {
                if first_value.is_none() && x.hash != y.hash {
                    first_value = Some(i);
                }
            }
            (x, y) => {
                if let Some(v) = first_value {
                    return values(a, b, v);
                }
                return Divergence::Sequence {
                    index: i,
                    a: x.cloned(),
                    b: y.cloned(),
                };
            }
        }
    }
    match first_value {
        Some(v) => values(a, b, v),
        None => Divergence::Identical { records: n },
    }
}

fn values(a: &Trace, b: &Trace, index: usize) -> Divergence {
    let (ra, rb) = (&a.records[index], &b.records[index]);
    let kept = !ra.values.is_empty()
        && ra.values.len() == rb.values.len()
        && ra.inputs.len() == rb.inputs.len();
    Divergence::Values {
        index,
        a: ra.clone(),
        b: rb.clone(),
        before: a.records[index.saturating_sub(5)..index].to_vec(),
        differences: kept.then(|| Differences {
            output: max_differences(&ra.values, &rb.values),
            inputs: ra
                .inputs
                .iter()
                .zip(&rb.inputs)
                .map(|(x, y)| max_differences(x, y))
                .collect(),
        }),
    }
}

impl std::fmt::Display for Divergence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let line = |r: &Record| {
            format!(
                "#{} step {} {} {} {:?} hash {:016x} [min {:e}, max {:e}, non-finite {}] at {}",
                r.seq, r.step, r.op, r.dtype, r.shape, r.hash, r.min, r.max, r.non_finite, r.site
            )
        };
        match self {
            Divergence::Identical { records } => {
                write!(f, "bit-identical across {records} ops")
            }
            Divergence::Sequence { index, a, b } => {
                writeln!(f, "the op sequences part at record {index}:")?;
                let show = |r: &Option<Record>| r.as_ref().map_or("(trace ends)".into(), line);
                writeln!(f, "  A: {}", show(a))?;
                write!(f, "  B: {}", show(b))
            }
            Divergence::Values {
                index,
                a,
                b,
                before,
                differences,
            } => {
                writeln!(
                    f,
                    "first divergent op at record {index} (same op sequence up to there):"
                )?;
                writeln!(f, "  A: {}", line(a))?;
                writeln!(f, "  B: {}", line(b))?;
                if let Some(d) = differences {
                    write!(
                        f,
                        "  output differs by up to {:e} ({:e} relative)",
                        d.output.0, d.output.1
                    )?;
                    for (i, (abs, rel)) in d.inputs.iter().enumerate() {
                        write!(f, "; input {i} by {abs:e} ({rel:e} relative)")?;
                    }
                    writeln!(f)?;
                }
                write!(f, "  after (identical in both):")?;
                for r in before {
                    write!(f, "\n    {}", line(r))?;
                }
                Ok(())
            }
        }
    }
}
