//! A team of threads that stay awake through a region of many short parallel
//! steps, as an OpenMP parallel region's threads do: rayon's workers go to sleep
//! between parallel loops, and waking one can cost as much as a whole step of a
//! blocked factorisation.
//!
//! Inside [`with_team`], the calling thread's parallel loops (every loop of
//! [`crate::parallel`], and its `join`) hand their tasks to helpers that spin
//! between loops instead of to rayon. Both the caller and the helpers claim tasks
//! from one counter, so the caller never waits for a helper to start: if none does,
//! it runs every task itself. Who runs a task never changes what it computes, so
//! results stay the same bits whatever the thread count.

use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

/// A task list as the team runs it.
type Job<'a> = &'a (dyn Fn(usize) + Sync + 'a);

/// The most tasks one published step holds (the task count and the next index share
/// a 64-bit word with the step's number); longer lists run as several steps.
const MAX_TASKS: usize = 0xFFFF;

/// Spins without work after which an idle helper yields its core between checks (so
/// a long serial stretch of the caller's does not starve another process).
const SPINS_BEFORE_YIELD: u32 = 1 << 16;

/// The shared state of one team.
struct Team {
    /// Step number (high 32 bits), task count (next 16), next unclaimed task (low
    /// 16): one word, so a claim sees a step's count and index together.
    state: AtomicU64,
    /// Tasks of the current step finished, by anyone.
    done: AtomicUsize,
    /// The current step's task list: a pointer to a [`Job`] on the caller's stack.
    job: AtomicPtr<()>,
    /// Set when the region ends: helpers return.
    stop: AtomicBool,
    /// A task panicked (on any thread); the caller re-raises after the step.
    panicked: AtomicBool,
}

impl Team {
    fn new() -> Team {
        Team {
            state: AtomicU64::new(0),
            done: AtomicUsize::new(0),
            job: AtomicPtr::new(std::ptr::null_mut()),
            stop: AtomicBool::new(false),
            panicked: AtomicBool::new(false),
        }
    }

    /// Claims the next task of the step published as `state`'s current value, if
    /// one is left.
    fn claim(&self) -> Option<usize> {
        let mut s = self.state.load(Ordering::Acquire);
        loop {
            let (count, next) = ((s >> 16) & 0xFFFF, s & 0xFFFF);
            if next >= count {
                return None;
            }
            match self
                .state
                .compare_exchange_weak(s, s + 1, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Some(next as usize),
                Err(now) => s = now,
            }
        }
    }

    /// Runs task `i` of the current step and counts it done (a panic is recorded,
    /// not propagated: the caller must not unwind while others still read its job).
    fn execute(&self, i: usize) {
        // SAFETY: a successful claim (acquire) of a task of this step follows the
        // caller's publication (release) of the step, which it made after storing
        // `job`; the caller does not return from `run` — so the job and what it
        // borrows stay alive — until `done` counts this task.
        let job = unsafe { *(self.job.load(Ordering::Relaxed) as *const Job<'_>) };
        let outside = ACTIVE.with(|a| a.replace(std::ptr::null()));
        let was_in_task = IN_TASK.with(|t| t.replace(true));
        if catch_unwind(AssertUnwindSafe(|| job(i))).is_err() {
            self.panicked.store(true, Ordering::Relaxed);
        }
        IN_TASK.with(|t| t.set(was_in_task));
        ACTIVE.with(|a| a.set(outside));
        self.done.fetch_add(1, Ordering::Release);
    }

    /// Runs `f(i)` for every `i < n` on the caller and the helpers; returns when
    /// all are done.
    fn run(&self, n: usize, f: &(dyn Fn(usize) + Sync)) {
        for first in (0..n).step_by(MAX_TASKS) {
            let count = MAX_TASKS.min(n - first);
            let shifted = |i: usize| f(first + i);
            let job: Job<'_> = &shifted;
            self.done.store(0, Ordering::Relaxed);
            self.job
                .store(&job as *const Job<'_> as *mut (), Ordering::Relaxed);
            let step = (self.state.load(Ordering::Relaxed) >> 32).wrapping_add(1) & 0xFFFF_FFFF;
            self.state
                .store(step << 32 | (count as u64) << 16, Ordering::Release);
            while let Some(i) = self.claim() {
                self.execute(i);
            }
            while self.done.load(Ordering::Acquire) < count {
                std::hint::spin_loop();
            }
            if self.panicked.load(Ordering::Relaxed) {
                panic!("a task of a team's parallel loop panicked");
            }
        }
    }

    /// A helper's loop: claims and runs tasks until the region ends.
    fn help(&self) {
        let mut idle = 0u32;
        while !self.stop.load(Ordering::Acquire) {
            if let Some(i) = self.claim() {
                self.execute(i);
                idle = 0;
            } else if idle < SPINS_BEFORE_YIELD {
                idle += 1;
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }
}

thread_local! {
    /// The team whose region this thread is running, if any (null inside a task, so
    /// that a task's own parallel loops run on its thread).
    static ACTIVE: Cell<*const Team> = const { Cell::new(std::ptr::null()) };
    /// Whether this thread is running a team's task (a region inside one is just its
    /// closure: the team's threads are taken).
    static IN_TASK: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with a team of `threads() − 1` helpers that stay awake until it returns:
/// its parallel loops run on the team (see the module). On one thread, or inside
/// another team's region or task, it is just `f()`.
pub fn with_team<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    let helpers = crate::threads::threads().saturating_sub(1);
    if helpers == 0 || team_active() || in_task() {
        return f();
    }
    let team = Team::new();
    rayon::scope(|s| {
        for _ in 0..helpers {
            s.spawn(|_| team.help());
        }
        let _region = Region::enter(&team);
        f()
    })
}

/// Whether this thread is inside a team's region (and not inside one of its tasks).
pub fn team_active() -> bool {
    ACTIVE.with(|a| !a.get().is_null())
}

/// Whether this thread is running one of a team's tasks. Its own parallel loops then
/// run on it alone: a task that waited on rayon could pick up another team's helper
/// job and spin in it until that region ended, which might be waiting on this one.
pub fn in_task() -> bool {
    IN_TASK.with(Cell::get)
}

/// Runs `f(i)` for `i < n` on this thread's team and returns true, or returns false
/// (running nothing) when there is no team.
pub(crate) fn run_on_team(n: usize, f: &(dyn Fn(usize) + Sync)) -> bool {
    let team = ACTIVE.with(Cell::get);
    if team.is_null() {
        return false;
    }
    // SAFETY: ACTIVE is non-null only between `Region::enter` and its drop, inside
    // `with_team`, which owns the team for longer.
    unsafe { &*team }.run(n, f);
    true
}

/// Calls `f(start, chunk)` for the `chunk`-long pieces of `out` on this thread's
/// team and returns true, or returns false (calling nothing) when there is none.
pub(crate) fn chunks_on_team<T: Send>(
    out: &mut [T],
    chunk: usize,
    f: &(dyn Fn(usize, &mut [T]) + Sync),
) -> bool {
    if !team_active() {
        return false;
    }
    let (len, base) = (out.len(), super::SharedMut::new(out));
    run_on_team(len.div_ceil(chunk), &|i| {
        let start = i * chunk;
        // SAFETY: task i alone owns elements start..start + its length of `out`,
        // which `out`'s exclusive borrow keeps alive until every task is done.
        let piece =
            unsafe { std::slice::from_raw_parts_mut(base.at(start), chunk.min(len - start)) };
        f(start, piece)
    })
}

/// `(a(), b())` with `a` and `b` as two tasks of this thread's team (which must be
/// active: see [`team_active`]).
pub(crate) fn join_on_team<A: Send, B: Send>(
    a: impl FnOnce() -> A + Send,
    b: impl FnOnce() -> B + Send,
) -> (A, B) {
    let (a, b) = (Mutex::new(Some(a)), Mutex::new(Some(b)));
    let (ra, rb) = (Mutex::new(None), Mutex::new(None));
    let ran = run_on_team(2, &|i| {
        if i == 0 {
            let a = a.lock().expect("unpoisoned").take().expect("run once");
            *ra.lock().expect("unpoisoned") = Some(a());
        } else {
            let b = b.lock().expect("unpoisoned").take().expect("run once");
            *rb.lock().expect("unpoisoned") = Some(b());
        }
    });
    assert!(ran, "join_on_team outside a team's region");
    (taken(ra), taken(rb))
}

/// The value a task left in `slot`.
fn taken<R>(slot: Mutex<Option<R>>) -> R {
    slot.into_inner()
        .expect("unpoisoned")
        .expect("the task ran")
}

/// The span of a team's region on its calling thread: sets [`ACTIVE`], and on drop
/// (also when `f` unwinds) clears it and releases the helpers.
struct Region<'t> {
    team: &'t Team,
    outside: *const Team,
}

impl<'t> Region<'t> {
    fn enter(team: &'t Team) -> Region<'t> {
        let outside = ACTIVE.with(|a| a.replace(team));
        Region { team, outside }
    }
}

impl Drop for Region<'_> {
    fn drop(&mut self) {
        ACTIVE.with(|a| a.set(self.outside));
        self.team.stop.store(true, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parallel;
    use std::sync::atomic::AtomicU32;
    use std::time::{Duration, Instant};

    fn in_pool<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> R {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(f)
    }

    #[test]
    fn every_task_of_every_step_runs_once() {
        for threads in [1, 2, 3] {
            // Several steps, one longer than a published step holds.
            let sizes = [1usize, 2, 7, 64, MAX_TASKS + 5, 3];
            let counts: Vec<Vec<AtomicU32>> = sizes
                .iter()
                .map(|&n| (0..n).map(|_| AtomicU32::new(0)).collect())
                .collect();
            in_pool(threads, || {
                with_team(|| {
                    assert_eq!(team_active(), threads > 1);
                    for (n, c) in sizes.iter().zip(&counts) {
                        parallel::for_each_index(*n, true, |i| {
                            c[i].fetch_add(1, Ordering::Relaxed);
                        });
                    }
                })
            });
            for c in &counts {
                assert!(
                    c.iter().all(|v| v.load(Ordering::Relaxed) == 1),
                    "{threads} threads"
                );
            }
        }
    }

    #[test]
    fn chunks_cover_the_slice_once() {
        let mut out = vec![0usize; 1000];
        in_pool(2, || {
            with_team(|| {
                parallel::for_each_chunk_if(&mut out, 64, true, |start, piece| {
                    for (i, v) in piece.iter_mut().enumerate() {
                        *v += start + i + 1;
                    }
                })
            })
        });
        assert!(out.iter().enumerate().all(|(i, &v)| v == i + 1));
    }

    #[test]
    fn every_kind_of_parallel_loop_gives_its_result_in_a_team() {
        in_pool(2, || {
            with_team(|| {
                let n = 1 << 19;
                let squares = parallel::map_collect(1000, n, |i| i * i);
                assert!(squares.iter().enumerate().all(|(i, &v)| v == i * i));
                let mut out = vec![0u32; n];
                parallel::for_each_chunk(&mut out, |start, c| {
                    for (i, v) in c.iter_mut().enumerate() {
                        *v = (start + i) as u32;
                    }
                });
                assert!(out.iter().enumerate().all(|(i, &v)| v == i as u32));
                let (mut a, mut b) = (vec![0u32; n], vec![0u32; n / 2]);
                let mut groups = vec![vec![&mut a[..]], vec![&mut b[..]]];
                parallel::for_each_chunk_of_each(&mut groups, 1000, |g, start, c| {
                    for (i, v) in c[0].iter_mut().enumerate() {
                        *v = (g * n + start + i) as u32;
                    }
                });
                assert!(a.iter().enumerate().all(|(i, &v)| v == i as u32));
                assert!(b.iter().enumerate().all(|(i, &v)| v == (n + i) as u32));
                assert_eq!(parallel::join(|| 1, || "two"), (1, "two"));
            })
        });
    }

    #[test]
    fn the_helpers_run_tasks_alongside_the_caller() {
        // Two tasks that each wait for the other to start: they finish only if a
        // helper runs one while the caller runs the other.
        let started = [AtomicBool::new(false), AtomicBool::new(false)];
        let met = in_pool(2, || {
            with_team(|| {
                let met = [AtomicBool::new(false), AtomicBool::new(false)];
                parallel::for_each_index(2, true, |i| {
                    started[i].store(true, Ordering::Release);
                    let until = Instant::now() + Duration::from_secs(20);
                    while !started[1 - i].load(Ordering::Acquire) && Instant::now() < until {
                        std::hint::spin_loop();
                    }
                    met[i].store(started[1 - i].load(Ordering::Acquire), Ordering::Relaxed);
                });
                met.iter().all(|m| m.load(Ordering::Relaxed))
            })
        });
        assert!(met, "the two tasks never ran at the same time");
    }

    #[test]
    fn tasks_and_nested_regions_run_on_their_own_thread() {
        in_pool(2, || {
            with_team(|| {
                parallel::for_each_index(4, true, |_| {
                    assert!(!team_active() && in_task());
                    // A region inside a task is just its closure.
                    with_team(|| assert!(!team_active()));
                });
                assert!(team_active());
            });
            assert!(!team_active());
        });
    }

    #[test]
    fn a_panicking_task_panics_the_caller_and_frees_the_team() {
        in_pool(2, || {
            for _ in 0..3 {
                let caught = std::panic::catch_unwind(|| {
                    with_team(|| {
                        parallel::for_each_index(16, true, |i| {
                            assert!(i != 11, "task 11 fails");
                        })
                    })
                });
                assert!(caught.is_err());
                assert!(!team_active());
            }
            // The pool still runs regions and loops.
            let mut out = vec![0u8; 100];
            with_team(|| parallel::for_each_chunk_if(&mut out, 10, true, |_, p| p.fill(1)));
            assert!(out.iter().all(|&v| v == 1));
        });
    }
}
