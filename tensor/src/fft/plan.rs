//! FFT plans: twiddle tables built once per (type, length) and cached, and the
//! algorithms — radix-4/2 Stockham for powers of two, mixed-radix Stockham for lengths
//! whose prime factors are at most `MAX_RADIX`, Bluestein's chirp-z for the rest;
//! in `f32`, 64 points are one codelet in registers (`kernels::fft64`), and 1024,
//! 2048 and 4096 two passes of 32- or 64-point column transforms
//! (`kernels::four_step`), where radix-4 Stockham makes five or six passes through
//! memory.
//!
//! Each Stockham stage reads one buffer and writes the other in natural order (no
//! bit reversal). A stage combines `radix` sub-sequences of sub-transforms of length
//! `len` that are interleaved with stride `s`; the inner loops run over `s`
//! contiguous elements, except in the first stage (`s` = 1), whose loop runs over the
//! groups, with per-stage twiddle tables so that every load is contiguous. The loops
//! are plain Rust, vectorised by the compiler for the baseline target (SSE2 on
//! x86-64): `Plan::forward` is not inlined into `kernels::simd_scope`, and forcing it
//! in ran slower, the s = 4 stage's loops being shorter than eight lanes.

use crate::element::Element;
use crate::kernels::fft64::Fft64;
use crate::kernels::four_step::{FourStep, Input, Output};
use crate::kernels::{copy_run, fft, Ahead};
use crate::storage;
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::f64::consts::PI;
use std::sync::{Arc, Mutex};

/// Largest prime factor handled by mixed radix; larger ones go through Bluestein.
const MAX_RADIX: usize = 31;

/// One Stockham stage.
struct Stage<T> {
    radix: usize,
    len: usize,
    s: usize,
    /// Twiddles W_len^{u·p}, u = 1..radix, p < len/radix, as [u][p] (re, im).
    tw: Vec<(Vec<T>, Vec<T>)>,
}

/// How a plan computes its transform.
enum Algorithm<T> {
    /// Stockham stages (product of radices = n), and their vectorised form when
    /// this CPU and every stage's shape have one.
    Stockham(Vec<Stage<T>>, Option<fft::Stockham<T>>),
    /// The 64-point `f32` transform in registers (`kernels::fft64`).
    Codelet64(Fft64<T>),
    /// The `f32` transforms of 1024, 2048 and 4096 points as 32 × 32, 64 × 32 and
    /// 64 × 64 in two passes (`kernels::four_step`).
    FourStep(FourStep<T>),
    /// Bluestein: a convolution of length m (a power of two) with a chirp.
    Bluestein {
        m: usize,
        inner: Arc<Plan<T>>,
        /// e^{−iπ j²/n}, j < n.
        chirp: (Vec<T>, Vec<T>),
        /// FFT_m of the zero-padded conjugate chirp.
        kernel: (Vec<T>, Vec<T>),
    },
}

/// A cached transform of one length.
pub(crate) struct Plan<T> {
    n: usize,
    /// W_n^k = e^{−2πi k/n}, k < n.
    tw: (Vec<T>, Vec<T>),
    algorithm: Algorithm<T>,
}

/// Reusable buffers for transforms of one length.
pub(crate) struct Scratch<T: Copy + Send + 'static> {
    /// The real parts, then the imaginary parts (one pooled buffer: every stage
    /// writes all of it before reading it).
    ri: storage::Scratch<T>,
    bluestein: Option<Box<BluesteinScratch<T>>>,
}

/// Bluestein's padded buffers and the scratch of its inner transform.
struct BluesteinScratch<T: Copy + Send + 'static> {
    r: storage::Scratch<T>,
    i: storage::Scratch<T>,
    inner: Scratch<T>,
}

type Key = (TypeId, usize);

/// The plans all threads share, bounded: at most [`MAX_PLANS`] lengths and
/// [`MAX_CACHED_POINTS`] points in all (one longer plan is kept alone), the
/// oldest dropped first (a plan in use stays alive through its `Arc`). Without a bound a process that transforms many
/// distinct lengths would keep every plan it ever built.
#[derive(Default)]
struct Cache {
    plans: HashMap<Key, Arc<dyn Any + Send + Sync>>,
    order: std::collections::VecDeque<Key>,
    points: usize,
}

/// The most lengths the shared cache keeps.
const MAX_PLANS: usize = 64;
/// The most points (sum of the cached lengths) the shared cache keeps: about
/// 2²² complex twiddles, tens of MB in `f64` with the algorithms' own tables.
const MAX_CACHED_POINTS: usize = 1 << 22;

impl Cache {
    fn insert(&mut self, key: Key, plan: Arc<dyn Any + Send + Sync>) {
        if self.plans.contains_key(&key) {
            return;
        }
        while !self.order.is_empty()
            && (self.plans.len() >= MAX_PLANS || self.points + key.1 > MAX_CACHED_POINTS)
        {
            if let Some(old) = self.order.pop_front() {
                self.plans.remove(&old);
                self.points -= old.1;
            }
        }
        self.plans.insert(key, plan);
        self.order.push_back(key);
        self.points += key.1;
    }
}

static PLANS: Mutex<Option<Cache>> = Mutex::new(None);

fn factorise(mut n: usize) -> Option<Vec<usize>> {
    let mut radices = Vec::new();
    while n.is_multiple_of(4) {
        radices.push(4);
        n /= 4;
    }
    let mut p = 2;
    while n > 1 {
        if p > MAX_RADIX {
            return None;
        }
        while n.is_multiple_of(p) {
            radices.push(p);
            n /= p;
        }
        p += 1;
    }
    Some(radices)
}

fn root<T: Element>(num: usize, den: usize) -> (T, T) {
    let a = -2.0 * PI * (num % den.max(1)) as f64 / den.max(1) as f64;
    (T::from_f64(a.cos()), T::from_f64(a.sin()))
}

/// Plans this thread used last, most recent at the end (at most [`LOCAL_PLANS`]):
/// a repeated transform finds its plan without the shared cache's lock and hash.
type Local = Vec<((TypeId, usize), Arc<dyn Any + Send + Sync>)>;
thread_local! {
    static LOCAL: std::cell::RefCell<Local> = const { std::cell::RefCell::new(Vec::new()) };
}
const LOCAL_PLANS: usize = 8;

/// The plan for length `n` (built on first use, then shared).
pub(crate) fn plan<T: Element>(n: usize) -> Arc<Plan<T>> {
    let key = (TypeId::of::<T>(), n);
    let local = LOCAL
        .try_with(|l| {
            let l = l.borrow();
            let (_, p) = l.iter().rev().find(|(k, _)| *k == key)?;
            p.clone().downcast::<Plan<T>>().ok()
        })
        .ok()
        .flatten();
    if let Some(p) = local {
        return p;
    }
    let p = shared_plan::<T>(n);
    let _ = LOCAL.try_with(|l| {
        let mut l = l.borrow_mut();
        if l.len() == LOCAL_PLANS {
            l.remove(0);
        }
        l.push((key, p.clone()));
    });
    p
}

/// The plan for length `n` from the cache all threads share.
fn shared_plan<T: Element>(n: usize) -> Arc<Plan<T>> {
    let key = (TypeId::of::<T>(), n);
    if let Some(p) = PLANS
        .lock()
        .ok()
        .and_then(|c| c.as_ref().and_then(|c| c.plans.get(&key).cloned()))
    {
        if let Ok(p) = p.downcast::<Plan<T>>() {
            return p;
        }
    }
    let built = Arc::new(build::<T>(n));
    if let Ok(mut c) = PLANS.lock() {
        c.get_or_insert_with(Cache::default)
            .insert(key, built.clone());
    }
    built
}

fn build<T: Element>(n: usize) -> Plan<T> {
    let tw: (Vec<T>, Vec<T>) = (0..n.max(1)).map(|k| root::<T>(k, n)).unzip();
    let is_f32 = TypeId::of::<T>() == TypeId::of::<f32>();
    let four_step = if is_f32 {
        FourStep::new(&tw.0, &tw.1)
    } else {
        None
    };
    let algorithm = match (factorise(n), four_step) {
        (_, Some(f)) => Algorithm::FourStep(f),
        (Some(_), None) if n == 64 && is_f32 => Algorithm::Codelet64(Fft64::new(&tw.0, &tw.1)),
        (Some(radices), None) => {
            let (mut len, mut s) = (n, 1);
            let stages: Vec<Stage<T>> = radices
                .into_iter()
                .map(|radix| {
                    let m = len / radix;
                    let tw = (1..radix)
                        .map(|u| (0..m).map(|p| root::<T>(u * p, len)).unzip())
                        .collect();
                    let st = Stage { radix, len, s, tw };
                    len /= radix;
                    s *= radix;
                    st
                })
                .collect();
            let refs: Vec<fft::StageRef<'_, T>> = stages
                .iter()
                .map(|st: &Stage<T>| {
                    let w = |u: usize| {
                        st.tw
                            .get(u)
                            .map_or((&[][..], &[][..]), |t| (&t.0[..], &t.1[..]))
                    };
                    let (w1, w2, w3) = (w(0), w(1), w(2));
                    fft::StageRef {
                        radix: st.radix,
                        s: st.s,
                        tw: [w1.0, w1.1, w2.0, w2.1, w3.0, w3.1],
                    }
                })
                .collect();
            let vector = fft::Stockham::new(n, &refs);
            Algorithm::Stockham(stages, vector)
        }
        (None, None) => {
            let m = (2 * n - 1).next_power_of_two();
            let inner = plan::<T>(m);
            let (cr, ci): (Vec<T>, Vec<T>) = (0..n)
                .map(|j| {
                    // j² mod 2n keeps the angle accurate for large j.
                    let a = -PI * ((j as u128 * j as u128) % (2 * n as u128)) as f64 / n as f64;
                    (T::from_f64(a.cos()), T::from_f64(a.sin()))
                })
                .unzip();
            let mut kr = vec![T::zero(); m];
            let mut ki = vec![T::zero(); m];
            for j in 0..n {
                kr[j] = cr[j];
                ki[j] = -ci[j];
                if j > 0 {
                    kr[m - j] = cr[j];
                    ki[m - j] = -ci[j];
                }
            }
            let mut scratch = inner.scratch();
            inner.forward(&mut kr, &mut ki, &mut scratch);
            Algorithm::Bluestein {
                m,
                inner,
                chirp: (cr, ci),
                kernel: (kr, ki),
            }
        }
    };
    Plan { n, tw, algorithm }
}

impl<T: Element> Plan<T> {
    /// The table W_n^k = e^{−2πi k/n}, k < n, as (real parts, imaginary parts).
    pub(crate) fn twiddles(&self) -> (&[T], &[T]) {
        (&self.tw.0, &self.tw.1)
    }

    /// Buffers for [`Plan::forward`], to reuse across rows.
    pub(crate) fn scratch(&self) -> Scratch<T> {
        let bluestein = match &self.algorithm {
            Algorithm::Bluestein { m, inner, .. } => Some(Box::new(BluesteinScratch {
                r: storage::Scratch::new(*m, T::zero()),
                i: storage::Scratch::new(*m, T::zero()),
                inner: inner.scratch(),
            })),
            Algorithm::Stockham(..) | Algorithm::Codelet64(..) | Algorithm::FourStep(..) => None,
        };
        Scratch {
            // Stockham's ping-pong buffers, the four-step's transposed array;
            // Bluestein keeps its own.
            ri: storage::Scratch::new(
                match self.algorithm {
                    Algorithm::Stockham(..) | Algorithm::FourStep(..) => 2 * self.n,
                    _ => 0,
                },
                T::zero(),
            ),
            bluestein,
        }
    }

    /// The forward transform of (re, im) in place.
    pub(crate) fn forward(&self, re: &mut [T], im: &mut [T], scratch: &mut Scratch<T>) {
        if self.run(re, im, scratch, &Ahead::NONE) {
            let (r, i) = scratch.ri.split_at(self.n);
            copy_run(re, r);
            copy_run(im, i);
        }
    }

    /// The forward transform of (re, im), left where its last stage put it: in
    /// (re, im) or in the scratch, whose parts are returned (a caller that reads the
    /// result once saves the copy back of [`Plan::forward`]). The four-step and
    /// vectorised Stockham algorithms ask for the lines of `ahead` (the next row of
    /// a batch) along the way; the others ignore it.
    pub(crate) fn forward_placed<'a>(
        &self,
        re: &'a mut [T],
        im: &'a mut [T],
        scratch: &'a mut Scratch<T>,
        ahead: &Ahead,
    ) -> (&'a [T], &'a [T]) {
        if self.run(re, im, scratch, ahead) {
            return scratch.ri.split_at(self.n);
        }
        (re, im)
    }

    /// Whether [`Plan::forward_moved`] runs this plan's transform (the four-step's
    /// passes have ends that read and write pairs; the others work on split parts).
    pub(crate) fn moves(&self) -> bool {
        matches!(self.algorithm, Algorithm::FourStep(_))
    }

    /// The forward transform of `input` into `output`, pairs read and written by the
    /// transform's own passes (no split or join pass), when [`Plan::moves`] says so:
    /// the bits of [`Plan::forward_placed`] between `kernels::split_pairs` and
    /// `kernels::join_pairs`. `ahead` as for `forward_placed`.
    ///
    /// # Panics
    /// When the plan does not move (a caller's bug), or a buffer is not of its length.
    pub(crate) fn forward_moved(
        &self,
        input: Input<'_, T>,
        output: Output<'_, T>,
        scratch: &mut Scratch<T>,
        ahead: &Ahead,
    ) {
        let Algorithm::FourStep(f) = &self.algorithm else {
            panic!(
                "Plan::forward_moved: the plan of {} points does not move",
                self.n
            );
        };
        let (r, i) = scratch.ri.split_at_mut(self.n);
        f.run_moved(input, output, r, i, ahead);
    }

    /// The forward transform from (re, im): returns whether the result is in the
    /// scratch's Stockham buffers (after an odd number of stages) rather than in
    /// (re, im).
    fn run(&self, re: &mut [T], im: &mut [T], scratch: &mut Scratch<T>, ahead: &Ahead) -> bool {
        debug_assert!(re.len() == self.n && im.len() == self.n);
        match &self.algorithm {
            Algorithm::Stockham(stages, vector) => {
                let (r, i) = scratch.ri.split_at_mut(self.n);
                match vector {
                    Some(v) => v.run(re, im, r, i, ahead),
                    None => stockham(stages, &self.tw, re, im, r, i),
                }
            }
            Algorithm::Codelet64(c) => {
                c.run(re, im);
                false
            }
            Algorithm::FourStep(f) => {
                let (r, i) = scratch.ri.split_at_mut(self.n);
                f.run(re, im, r, i, ahead);
                false
            }
            Algorithm::Bluestein {
                m,
                inner,
                chirp,
                kernel,
            } => {
                let (n, m) = (self.n, *m);
                let bufs = scratch.bluestein.as_mut().expect("Bluestein scratch");
                let (ar, ai, sc) = (&mut bufs.r, &mut bufs.i, &mut bufs.inner);
                ar.fill(T::zero());
                ai.fill(T::zero());
                for j in 0..n {
                    ar[j] = re[j] * chirp.0[j] - im[j] * chirp.1[j];
                    ai[j] = re[j] * chirp.1[j] + im[j] * chirp.0[j];
                }
                inner.forward(ar, ai, sc);
                for k in 0..m {
                    let (r, i) = (ar[k], ai[k]);
                    ar[k] = r * kernel.0[k] - i * kernel.1[k];
                    // Conjugated, for the inverse transform by conjugation below.
                    ai[k] = -(r * kernel.1[k] + i * kernel.0[k]);
                }
                inner.forward(ar, ai, sc);
                let scale = T::from_f64(1.0 / m as f64);
                for k in 0..n {
                    let (r, i) = (ar[k] * scale, -ai[k] * scale);
                    re[k] = r * chirp.0[k] - i * chirp.1[k];
                    im[k] = r * chirp.1[k] + i * chirp.0[k];
                }
                false
            }
        }
    }
}

/// The scalar Stockham stages from (re, im), ping-ponging with (yr, yi): returns
/// whether the result is in (yr, yi).
#[inline(always)]
fn stockham<T: Element>(
    stages: &[Stage<T>],
    tw: &(Vec<T>, Vec<T>),
    re: &mut [T],
    im: &mut [T],
    yr: &mut [T],
    yi: &mut [T],
) -> bool {
    let mut in_x = true;
    for st in stages {
        let (xr, xi, or, oi): (&[T], &[T], &mut [T], &mut [T]) = if in_x {
            (&*re, &*im, &mut *yr, &mut *yi)
        } else {
            (&*yr, &*yi, &mut *re, &mut *im)
        };
        match (st.radix, st.s) {
            (4, 1) => stage4_first(st, xr, xi, or, oi),
            (4, _) => stage4(st, xr, xi, or, oi),
            (2, _) => stage2(st, xr, xi, or, oi),
            _ => stage_generic(st, tw, xr, xi, or, oi),
        }
        in_x = !in_x;
    }
    !in_x
}

/// The radix-4 butterfly with twiddles, on values (a, b, c, d); with `rotate`
/// false (a stage of one group, whose twiddles are all 1) the outputs are not
/// multiplied.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn bfly4<T: Element>(
    a: (T, T),
    b: (T, T),
    c: (T, T),
    d: (T, T),
    w1: (T, T),
    w2: (T, T),
    w3: (T, T),
    rotate: bool,
) -> [(T, T); 4] {
    let apc = (a.0 + c.0, a.1 + c.1);
    let amc = (a.0 - c.0, a.1 - c.1);
    let bpd = (b.0 + d.0, b.1 + d.1);
    // j(b − d), j the imaginary unit.
    let jbmd = (d.1 - b.1, b.0 - d.0);
    let t1 = (amc.0 - jbmd.0, amc.1 - jbmd.1);
    let t2 = (apc.0 - bpd.0, apc.1 - bpd.1);
    let t3 = (amc.0 + jbmd.0, amc.1 + jbmd.1);
    if !rotate {
        return [(apc.0 + bpd.0, apc.1 + bpd.1), t1, t2, t3];
    }
    [
        (apc.0 + bpd.0, apc.1 + bpd.1),
        (t1.0 * w1.0 - t1.1 * w1.1, t1.0 * w1.1 + t1.1 * w1.0),
        (t2.0 * w2.0 - t2.1 * w2.1, t2.0 * w2.1 + t2.1 * w2.0),
        (t3.0 * w3.0 - t3.1 * w3.1, t3.0 * w3.1 + t3.1 * w3.0),
    ]
}

/// The first radix-4 stage (s = 1): the loop runs over the groups p, reading four
/// contiguous quarters and the stage's contiguous twiddles.
#[inline(always)]
fn stage4_first<T: Element>(st: &Stage<T>, xr: &[T], xi: &[T], yr: &mut [T], yi: &mut [T]) {
    let m = st.len / 4;
    let (w1, w2, w3) = (&st.tw[0], &st.tw[1], &st.tw[2]);
    let (ar, br, cr, dr) = (
        &xr[..m],
        &xr[m..2 * m],
        &xr[2 * m..3 * m],
        &xr[3 * m..4 * m],
    );
    let (ai, bi, ci, di) = (
        &xi[..m],
        &xi[m..2 * m],
        &xi[2 * m..3 * m],
        &xi[3 * m..4 * m],
    );
    let (w1r, w1i, w2r, w2i, w3r, w3i) = (
        &w1.0[..m],
        &w1.1[..m],
        &w2.0[..m],
        &w2.1[..m],
        &w3.0[..m],
        &w3.1[..m],
    );
    let (yr, yi) = (&mut yr[..4 * m], &mut yi[..4 * m]);
    for p in 0..m {
        let o = bfly4(
            (ar[p], ai[p]),
            (br[p], bi[p]),
            (cr[p], ci[p]),
            (dr[p], di[p]),
            (w1r[p], w1i[p]),
            (w2r[p], w2i[p]),
            (w3r[p], w3i[p]),
            m > 1,
        );
        for u in 0..4 {
            yr[4 * p + u] = o[u].0;
            yi[4 * p + u] = o[u].1;
        }
    }
}

/// A radix-4 stage with s > 1: the inner loop runs over s contiguous elements.
#[inline(always)]
fn stage4<T: Element>(st: &Stage<T>, xr: &[T], xi: &[T], yr: &mut [T], yi: &mut [T]) {
    let (s, m) = (st.s, st.len / 4);
    let (w1, w2, w3) = (&st.tw[0], &st.tw[1], &st.tw[2]);
    for p in 0..m {
        let (w1, w2, w3) = ((w1.0[p], w1.1[p]), (w2.0[p], w2.1[p]), (w3.0[p], w3.1[p]));
        let at = |k: usize| s * (p + k * m);
        let (ar, br, cr, dr) = (
            &xr[at(0)..at(0) + s],
            &xr[at(1)..at(1) + s],
            &xr[at(2)..at(2) + s],
            &xr[at(3)..at(3) + s],
        );
        let (ai, bi, ci, di) = (
            &xi[at(0)..at(0) + s],
            &xi[at(1)..at(1) + s],
            &xi[at(2)..at(2) + s],
            &xi[at(3)..at(3) + s],
        );
        let o = s * 4 * p;
        let (y0r, rest) = yr[o..o + 4 * s].split_at_mut(s);
        let (y1r, rest) = rest.split_at_mut(s);
        let (y2r, y3r) = rest.split_at_mut(s);
        let (y0i, rest) = yi[o..o + 4 * s].split_at_mut(s);
        let (y1i, rest) = rest.split_at_mut(s);
        let (y2i, y3i) = rest.split_at_mut(s);
        for q in 0..s {
            let v = bfly4(
                (ar[q], ai[q]),
                (br[q], bi[q]),
                (cr[q], ci[q]),
                (dr[q], di[q]),
                w1,
                w2,
                w3,
                m > 1,
            );
            y0r[q] = v[0].0;
            y0i[q] = v[0].1;
            y1r[q] = v[1].0;
            y1i[q] = v[1].1;
            y2r[q] = v[2].0;
            y2i[q] = v[2].1;
            y3r[q] = v[3].0;
            y3i[q] = v[3].1;
        }
    }
}

/// A radix-2 stage (the last one when log₂ n is odd, where s = n/2).
#[inline(always)]
fn stage2<T: Element>(st: &Stage<T>, xr: &[T], xi: &[T], yr: &mut [T], yi: &mut [T]) {
    let (s, m) = (st.s, st.len / 2);
    let w = &st.tw[0];
    for p in 0..m {
        let (wr, wi) = (w.0[p], w.1[p]);
        let (a0, b0, o) = (s * p, s * (p + m), s * 2 * p);
        let (ar, br) = (&xr[a0..a0 + s], &xr[b0..b0 + s]);
        let (ai, bi) = (&xi[a0..a0 + s], &xi[b0..b0 + s]);
        let (y0r, y1r) = yr[o..o + 2 * s].split_at_mut(s);
        let (y0i, y1i) = yi[o..o + 2 * s].split_at_mut(s);
        for q in 0..s {
            y0r[q] = ar[q] + br[q];
            y0i[q] = ai[q] + bi[q];
            let (dr, di) = (ar[q] - br[q], ai[q] - bi[q]);
            // One group: its twiddle is 1.
            (y1r[q], y1i[q]) = if m > 1 {
                (dr * wr - di * wi, dr * wi + di * wr)
            } else {
                (dr, di)
            };
        }
    }
}

/// A stage of any radix p: a length-p DFT of each group, then the twiddles.
fn stage_generic<T: Element>(
    st: &Stage<T>,
    tw: &(Vec<T>, Vec<T>),
    xr: &[T],
    xi: &[T],
    yr: &mut [T],
    yi: &mut [T],
) {
    let (p, s, m) = (st.radix, st.s, st.len / st.radix);
    let n = tw.0.len();
    // W_p^{e} = W_n^{e·n/p}.
    let wp = |e: usize| (tw.0[(e % p) * (n / p)], tw.1[(e % p) * (n / p)]);
    let mut ar = vec![T::zero(); p];
    let mut ai = vec![T::zero(); p];
    for pp in 0..m {
        for q in 0..s {
            for r in 0..p {
                ar[r] = xr[q + s * (pp + r * m)];
                ai[r] = xi[q + s * (pp + r * m)];
            }
            for u in 0..p {
                let (mut sr, mut si) = (T::zero(), T::zero());
                for r in 0..p {
                    let (wr, wi) = wp(r * u);
                    sr = sr + ar[r] * wr - ai[r] * wi;
                    si = si + ar[r] * wi + ai[r] * wr;
                }
                let (wr, wi) = if u == 0 {
                    (T::one(), T::zero())
                } else {
                    (st.tw[u - 1].0[pp], st.tw[u - 1].1[pp])
                };
                yr[q + s * (p * pp + u)] = sr * wr - si * wi;
                yi[q + s * (p * pp + u)] = sr * wi + si * wr;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shared cache stays within its bounds however many lengths are planned,
    /// dropping the oldest first, and a plan built again gives the same bits.
    #[test]
    fn the_shared_cache_is_bounded() {
        let mut cache = Cache::default();
        let key = |n: usize| (TypeId::of::<f64>(), n);
        let dummy = || Arc::new(()) as Arc<dyn Any + Send + Sync>;
        for n in 1..=200 {
            cache.insert(key(n), dummy());
            assert!(cache.plans.len() <= MAX_PLANS && cache.points <= MAX_CACHED_POINTS);
            assert_eq!(cache.plans.len(), cache.order.len());
        }
        assert!(cache.plans.contains_key(&key(200)) && !cache.plans.contains_key(&key(1)));
        cache.insert(key(MAX_CACHED_POINTS), dummy());
        assert_eq!(cache.plans.len(), 1);
        assert_eq!(cache.points, MAX_CACHED_POINTS);
        // Through the real cache: many lengths, then the first again, same bits.
        let first = shared_plan::<f64>(97).tw.0.clone();
        for n in 100..100 + 2 * MAX_PLANS {
            shared_plan::<f64>(n);
        }
        let again = shared_plan::<f64>(97).tw.0.clone();
        assert_eq!(first, again);
        let lock = PLANS.lock().unwrap();
        let c = lock.as_ref().unwrap();
        assert!(c.plans.len() <= MAX_PLANS && c.points <= MAX_CACHED_POINTS);
    }

    /// The vectorised stages (`kernels::fft`) give the scalar stages' bits, for every
    /// stage shape they take: the first stage (s = 1), the f32 s = 4 stage, whole
    /// vectors, the one-group last stage, and a radix-2 last stage.
    #[test]
    fn vector_stages_give_the_scalar_bits() {
        fn check<T: Element>() {
            for n in [16usize, 32, 64, 128, 256, 512, 2048, 4096] {
                let p = build::<T>(n);
                let Algorithm::Stockham(stages, Some(vector)) = &p.algorithm else {
                    // No AVX2 here (or the portable kernels forced): nothing to compare.
                    continue;
                };
                let x: Vec<T> = (0..2 * n)
                    .map(|i| T::from_f64(((i * 7919) % 1000) as f64 / 77.0 - 6.0))
                    .collect();
                let (mut ar, mut ai) = (x[..n].to_vec(), x[n..].to_vec());
                let (mut br, mut bi) = (ar.clone(), ai.clone());
                let (mut yr, mut yi) = (vec![T::zero(); n], vec![T::zero(); n]);
                let (mut zr, mut zi) = (yr.clone(), yi.clone());
                let in_y = vector.run(&mut ar, &mut ai, &mut yr, &mut yi, &Ahead::NONE);
                let in_z = stockham(stages, &p.tw, &mut br, &mut bi, &mut zr, &mut zi);
                assert_eq!(in_y, in_z, "where the result lands, n = {n}");
                let (vr, vi, sr, si) = if in_y {
                    (yr, yi, zr, zi)
                } else {
                    (ar, ai, br, bi)
                };
                let bits = |v: &[T]| v.iter().map(|x| x.as_f64().to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&vr), bits(&sr), "real parts, n = {n}");
                assert_eq!(bits(&vi), bits(&si), "imaginary parts, n = {n}");
            }
        }
        check::<f32>();
        check::<f64>();
    }
}
