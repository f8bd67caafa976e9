//! Fixed-boundary parallelism.
//!
//! Work is split into chunks whose boundaries depend only on the data size, never on
//! the number of threads, and partial results are combined in chunk order. So every
//! kernel gives bitwise-identical results with 1 thread, 2 threads, or the `parallel`
//! feature disabled.
//!
//! The loops run on rayon's pool, whose idle workers sleep; a region of many short
//! steps (a blocked factorisation) can run in [`with_team`] instead, whose threads
//! stay awake between its loops.

pub use crate::threads::threads;

/// Elements per chunk of element-wise and reduction work.
pub const CHUNK: usize = 1 << 14;

/// Work (elements) below which a kernel stays on the calling thread: a quarter of a
/// million element-wise operations take about as long as waking a worker.
pub const PAR_THRESHOLD: usize = 1 << 18;

/// Calls `f(start, chunk)` for consecutive `CHUNK`-sized pieces of `out`, where
/// `start` is the chunk's first index; in parallel when `out` is large.
pub fn for_each_chunk<T: Send>(out: &mut [T], f: impl Fn(usize, &mut [T]) + Sync + Send) {
    for_each_chunk_sized(out, CHUNK, f)
}

/// As [`for_each_chunk`], with an explicit chunk length.
pub fn for_each_chunk_sized<T: Send>(
    out: &mut [T],
    chunk: usize,
    f: impl Fn(usize, &mut [T]) + Sync + Send,
) {
    let chunk = chunk.max(1);
    #[cfg(feature = "parallel")]
    if out.len() >= PAR_THRESHOLD && out.len() > chunk && threads() > 1 {
        return par_chunks(out, chunk, &f);
    }
    for (i, c) in out.chunks_mut(chunk).enumerate() {
        f(i * chunk, c);
    }
}

/// Calls `f(first_row, chunk)` over chunks of whole rows of length `row_len`.
pub fn for_each_row_chunk<T: Send>(
    out: &mut [T],
    row_len: usize,
    f: impl Fn(usize, &mut [T]) + Sync + Send,
) {
    if row_len == 0 {
        return;
    }
    let rows_per_chunk = (CHUNK / row_len).max(1);
    for_each_chunk_sized(out, rows_per_chunk * row_len, |start, c| {
        f(start / row_len, c)
    });
}

/// `(0..n).map(f)` collected in order, computed in parallel when `work` (an estimate
/// of the total cost in elements) is large.
pub fn map_collect<R: Send>(n: usize, work: usize, f: impl Fn(usize) -> R + Sync + Send) -> Vec<R> {
    #[cfg(feature = "parallel")]
    if work >= PAR_THRESHOLD && n > 1 && threads() > 1 {
        return par_map(n, &f);
    }
    let _ = work;
    (0..n).map(f).collect()
}

/// Calls `f(i)` for every `i` in `0..n`, in parallel when `parallel` is true and
/// there is more than one (for tasks that write disjoint parts of a result).
pub fn for_each_index(n: usize, parallel: bool, f: impl Fn(usize) + Sync + Send) {
    #[cfg(feature = "parallel")]
    if parallel && n > 1 && threads() > 1 {
        return par_for_each_index(n, &f);
    }
    let _ = parallel;
    (0..n).for_each(f);
}

/// Runs `a` and `b`, possibly in parallel, returning both results.
pub fn join<A: Send, B: Send>(
    a: impl FnOnce() -> A + Send,
    b: impl FnOnce() -> B + Send,
) -> (A, B) {
    #[cfg(feature = "parallel")]
    {
        if team::in_task() {
            return (a(), b());
        }
        if team::team_active() {
            return team::join_on_team(a, b);
        }
        rayon::join(a, b)
    }
    #[cfg(not(feature = "parallel"))]
    {
        (a(), b())
    }
}

/// Runs `f` with the other threads kept awake until it returns: the parallel loops
/// of this module (and [`join`]) that `f` runs on its own thread go to them rather
/// than to rayon's pool. For a region of many parallel steps too short to pay for
/// waking rayon's sleeping workers each time (a blocked factorisation's). The
/// helpers spin while `f` works alone, so a region should be short. Results are the
/// same bits as without it. (A training step gains nothing from one: its workers
/// are already awake.)
pub fn with_team<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    #[cfg(feature = "parallel")]
    {
        crate::kernels::team::with_team(f)
    }
    #[cfg(not(feature = "parallel"))]
    {
        f()
    }
}

/// Whether this thread runs a [`with_team`] region (its parallel loops then cost
/// about a microsecond to start, not a worker's wake-up).
pub fn in_team() -> bool {
    #[cfg(feature = "parallel")]
    {
        crate::kernels::team::team_active()
    }
    #[cfg(not(feature = "parallel"))]
    {
        false
    }
}

/// As [`for_each_chunk_sized`], parallel whenever there is more than one chunk and
/// `parallel` is true (for kernels whose cost is not proportional to `out.len()`).
pub fn for_each_chunk_if<T: Send>(
    out: &mut [T],
    chunk: usize,
    parallel: bool,
    f: impl Fn(usize, &mut [T]) + Sync + Send,
) {
    let chunk = chunk.max(1);
    #[cfg(feature = "parallel")]
    if parallel && out.len() > chunk && threads() > 1 {
        return par_chunks(out, chunk, &f);
    }
    let _ = parallel;
    for (i, c) in out.chunks_mut(chunk).enumerate() {
        f(i * chunk, c);
    }
}

/// Calls `f(group, start, chunks)` over aligned chunks of several groups of
/// outputs, each group's outputs equally long (`chunks[k]` is the piece of
/// `groups[group][k]`), all the groups' chunks in one parallel loop when they are
/// long in all: one pass that writes several results for several items, such as an
/// optimiser's parameters and their moments, with one wake of the threads.
pub fn for_each_chunk_of_each<T: Send>(
    groups: &mut [Vec<&mut [T]>],
    chunk: usize,
    f: impl Fn(usize, usize, &mut [&mut [T]]) + Sync + Send,
) {
    let chunk = chunk.max(1);
    let mut total = 0;
    let mut pieces: Vec<Piece<'_, T>> = Vec::new();
    for (gi, outs) in groups.iter_mut().enumerate() {
        let len = outs.first().map_or(0, |o| o.len());
        assert!(
            outs.iter().all(|o| o.len() == len),
            "for_each_chunk_of_each: outputs of group {gi} differ in length"
        );
        total += len;
        let mut iters: Vec<_> = outs.iter_mut().map(|o| o.chunks_mut(chunk)).collect();
        for i in 0..len.div_ceil(chunk) {
            let piece = iters
                .iter_mut()
                .map(|it| it.next().expect("aligned chunks"))
                .collect();
            pieces.push((gi, i * chunk, piece));
        }
    }
    #[cfg(feature = "parallel")]
    if total >= PAR_THRESHOLD && pieces.len() > 1 && threads() > 1 {
        return par_pieces(&mut pieces, &f);
    }
    let _ = total;
    for (gi, start, p) in pieces.iter_mut() {
        f(*gi, *start, p);
    }
}

// The parallel loops themselves take the closure as `dyn`: rayon's machinery (its
// producers, consumers and join jobs) is then compiled once per element type, not
// once per closure in every crate that calls a helper: in the autograd test suite
// that machinery was a sixth of the machine code, and its compilation time with it.
// The dynamic call costs nothing beside a chunk's work.
//
// Inside a team's region ([`with_team`]) each loop runs on the team instead, and
// inside one of its tasks on the task's thread alone.

#[cfg(feature = "parallel")]
use crate::kernels::team;

/// The parallel loop of [`for_each_chunk_sized`] and [`for_each_chunk_if`].
#[cfg(feature = "parallel")]
fn par_chunks<T: Send>(out: &mut [T], chunk: usize, f: &(dyn Fn(usize, &mut [T]) + Sync)) {
    use rayon::prelude::*;
    if team::in_task() {
        for (i, c) in out.chunks_mut(chunk).enumerate() {
            f(i * chunk, c);
        }
        return;
    }
    if team::chunks_on_team(out, chunk, f) {
        return;
    }
    out.par_chunks_mut(chunk)
        .enumerate()
        .for_each(|(i, c)| f(i * chunk, c));
}

/// The parallel loop of [`map_collect`].
#[cfg(feature = "parallel")]
fn par_map<R: Send>(n: usize, f: &(dyn Fn(usize) -> R + Sync)) -> Vec<R> {
    use rayon::prelude::*;
    if team::in_task() {
        return (0..n).map(f).collect();
    }
    if team::team_active() {
        let mut out: Vec<Option<R>> = (0..n).map(|_| None).collect();
        team::chunks_on_team(&mut out, 1, &|i, slot| slot[0] = Some(f(i)));
        return out
            .into_iter()
            .map(|r| r.expect("every task ran"))
            .collect();
    }
    (0..n).into_par_iter().map(f).collect()
}

/// The parallel loop of [`for_each_index`].
#[cfg(feature = "parallel")]
fn par_for_each_index(n: usize, f: &(dyn Fn(usize) + Sync)) {
    use rayon::prelude::*;
    if team::in_task() {
        return (0..n).for_each(f);
    }
    if team::run_on_team(n, f) {
        return;
    }
    (0..n).into_par_iter().for_each(f);
}

/// A group's chunk for [`for_each_chunk_of_each`]: its group, its first index, and
/// its piece of each of the group's outputs.
type Piece<'a, T> = (usize, usize, Vec<&'a mut [T]>);

/// What [`for_each_chunk_of_each`] calls on each piece: `f(group, start, chunks)`.
#[cfg(feature = "parallel")]
type PieceFn<'f, T> = dyn Fn(usize, usize, &mut [&mut [T]]) + Sync + 'f;

/// The parallel loop of [`for_each_chunk_of_each`].
#[cfg(feature = "parallel")]
fn par_pieces<T: Send>(pieces: &mut [Piece<'_, T>], f: &PieceFn<'_, T>) {
    use rayon::prelude::*;
    let on_team = |_: usize, p: &mut [Piece<'_, T>]| {
        let (gi, start, chunks) = &mut p[0];
        f(*gi, *start, chunks)
    };
    if team::in_task() {
        for (gi, start, p) in pieces.iter_mut() {
            f(*gi, *start, p);
        }
        return;
    }
    if team::chunks_on_team(pieces, 1, &on_team) {
        return;
    }
    pieces
        .par_iter_mut()
        .for_each(|(gi, start, p)| f(*gi, *start, p));
}
