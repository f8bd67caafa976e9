//! Tensor storage, with a bounded pool that recycles large buffers.
//!
//! A training step allocates and frees the same large buffers every iteration.
//! Fresh large allocations come from the operating system as untouched pages, and
//! the first write to each page faults. Buffers of at least `POOL_MIN_BYTES` are
//! therefore returned to a pool when their tensor is dropped and handed out again,
//! refilled, for the next request of the same length. The pool holds at most
//! `pool_limit()` bytes (1 GiB by default, a ResNet-18 step's worth at batch 32:
//! that step frees about 0.9 GiB of activations and gradients, and with a smaller
//! pool the rest would come back from the allocator, memset, every step;
//! `set_pool_limit(0)` turns it off). Smaller f32 and f64 buffers, from 256 bytes,
//! are kept by the thread that frees them in a short list of its own
//! (`SMALL_PER_THREAD`), so small ops and per-call scratch skip the allocator and
//! its zeroing. Recycled buffers are always fully overwritten before use, so
//! results never depend on the pool.

use std::any::{Any, TypeId};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::thread::LocalKey;

/// Buffers smaller than this are not put in the shared pool.
const POOL_MIN_BYTES: usize = 64 * 1024;
/// At most this many buffers of one type and length are kept (all within
/// `pool_limit()`): a training step holds many activations of one shape at once (a
/// small conv net's step, a dozen 8 MiB buffers of one length), and with room for
/// only four the rest went back to the allocator and came back as fresh pages or a
/// memset every step.
const POOL_PER_SIZE: usize = 32;

static LIMIT: AtomicUsize = AtomicUsize::new(1 << 30);

type Key = (TypeId, usize);

struct Pool {
    buffers: HashMap<Key, Vec<Box<dyn Any + Send>>>,
    bytes: usize,
}

static POOL: Mutex<Option<Pool>> = Mutex::new(None);

/// The most bytes the pool keeps.
pub fn pool_limit() -> usize {
    LIMIT.load(Ordering::Relaxed)
}

/// Sets the most bytes the pool keeps; 0 disables it and frees what it holds.
pub fn set_pool_limit(bytes: usize) {
    LIMIT.store(bytes, Ordering::Relaxed);
    if bytes == 0 {
        clear_pool();
    }
}

/// Frees every pooled buffer (the shared pool's, and this thread's small ones).
pub fn clear_pool() {
    if let Ok(mut p) = POOL.lock() {
        *p = None;
    }
    with_small(|list: &mut Vec<Vec<f32>>| list.clear());
    with_small(|list: &mut Vec<Vec<f64>>| list.clear());
}

/// Bytes currently held by the pool.
pub fn pooled_bytes() -> usize {
    POOL.lock()
        .ok()
        .and_then(|p| p.as_ref().map(|p| p.bytes))
        .unwrap_or(0)
}

/// Float buffers of at least this many bytes but fewer than `POOL_MIN_BYTES` are
/// kept by the thread that frees them, in a short list of its own (no lock, and
/// typed, so that keeping one allocates nothing): a small op's output or a row's
/// scratch then costs no allocator call, and no zeroing.
const SMALL_MIN_BYTES: usize = 256;
/// At most this many small buffers of each float type are kept per thread.
const SMALL_PER_THREAD: usize = 16;

thread_local! {
    static SMALL_F32: RefCell<Vec<Vec<f32>>> = const { RefCell::new(Vec::new()) };
    static SMALL_F64: RefCell<Vec<Vec<f64>>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` on this thread's list of small buffers of `T`: `None` for types other
/// than f32 and f64 (not kept), or on a thread being torn down.
fn with_small<T: 'static, R>(f: impl FnOnce(&mut Vec<Vec<T>>) -> R) -> Option<R> {
    fn typed<U: 'static, T: 'static, R>(
        list: &'static LocalKey<RefCell<Vec<Vec<U>>>>,
        f: impl FnOnce(&mut Vec<Vec<T>>) -> R,
    ) -> Option<R> {
        list.try_with(|l| {
            let mut l = l.borrow_mut();
            (&mut *l as &mut dyn Any)
                .downcast_mut::<Vec<Vec<T>>>()
                .map(f)
        })
        .ok()
        .flatten()
    }
    if TypeId::of::<T>() == TypeId::of::<f32>() {
        typed(&SMALL_F32, f)
    } else if TypeId::of::<T>() == TypeId::of::<f64>() {
        typed(&SMALL_F64, f)
    } else {
        None
    }
}

/// Where a buffer of `len` elements of `T` is recycled, if anywhere.
#[derive(Debug, PartialEq)]
enum Recycled {
    /// In the shared pool.
    Shared,
    /// In the freeing thread's own list.
    Local,
    /// Not at all (too small, or the pool is off).
    No,
}

fn recycled<T: 'static>(len: usize) -> Recycled {
    let bytes = len * std::mem::size_of::<T>();
    let float = [TypeId::of::<f32>(), TypeId::of::<f64>()].contains(&TypeId::of::<T>());
    if pool_limit() == 0 || bytes < SMALL_MIN_BYTES {
        Recycled::No
    } else if bytes < POOL_MIN_BYTES {
        if float {
            Recycled::Local
        } else {
            Recycled::No
        }
    } else {
        Recycled::Shared
    }
}

/// A vector of `n` copies of `v`, reusing a pooled buffer of that length if any.
pub(crate) fn filled<T: Copy + Send + 'static>(n: usize, v: T) -> Vec<T> {
    if let Some(mut buf) = take::<T>(n) {
        buf.fill(v);
        return buf;
    }
    vec![v; n]
}

/// A vector of length `n` for a kernel that overwrites every element: a recycled
/// buffer (holding stale but valid values) when one is pooled, else `n` copies of
/// `v`. Saves the refill of `filled`; a caller that leaves an element unwritten
/// would read a stale value, so use it only for outputs written in full. In debug
/// and test builds (`debug_assertions`) every float scratch buffer, recycled or
/// fresh, is filled with NaN instead, so a kernel that misses an element fails
/// loudly rather than passing on a stale or zero value.
pub fn scratch<T: Copy + Send + 'static>(n: usize, v: T) -> Vec<T> {
    let mut buf = match take::<T>(n) {
        Some(buf) => buf,
        None => vec![v; n],
    };
    if cfg!(debug_assertions) {
        poison(&mut buf);
    }
    buf
}

/// A temporary buffer for a kernel that overwrites it before reading it (as
/// [`scratch`]), handed back to the pool when dropped: a kernel's im2col or
/// partial-sum buffers are then recycled from one call to the next instead of being
/// zeroed and page-faulted afresh.
pub(crate) struct Scratch<T: Copy + Send + 'static>(Vec<T>);

impl<T: Copy + Send + 'static> Scratch<T> {
    /// `n` elements, stale or NaN-poisoned as [`scratch`] gives them.
    pub(crate) fn new(n: usize, v: T) -> Self {
        Scratch(scratch(n, v))
    }
}

impl<T: Copy + Send + 'static> std::ops::Deref for Scratch<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.0
    }
}

impl<T: Copy + Send + 'static> std::ops::DerefMut for Scratch<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.0
    }
}

impl<T: Copy + Send + 'static> Drop for Scratch<T> {
    fn drop(&mut self) {
        give(std::mem::take(&mut self.0));
    }
}

/// Fills a float buffer with NaN (other element types are left as they are). Takes
/// the `Vec` because the type test (`Any`) needs a sized value, which a slice is not.
#[allow(clippy::ptr_arg)]
fn poison<T: 'static>(buf: &mut Vec<T>) {
    let any = buf as &mut dyn Any;
    if let Some(b) = any.downcast_mut::<Vec<f32>>() {
        b.fill(f32::NAN);
    } else if let Some(b) = any.downcast_mut::<Vec<f64>>() {
        b.fill(f64::NAN);
    }
}

fn take<T: Send + 'static>(n: usize) -> Option<Vec<T>> {
    match recycled::<T>(n) {
        Recycled::No => return None,
        Recycled::Local => {
            return with_small(|list: &mut Vec<Vec<T>>| {
                let at = list.iter().rposition(|b| b.len() == n)?;
                Some(list.swap_remove(at))
            })
            .flatten();
        }
        Recycled::Shared => {}
    }
    let mut guard = POOL.lock().ok()?;
    let pool = guard.as_mut()?;
    let buf = pool.buffers.get_mut(&(TypeId::of::<T>(), n))?.pop()?;
    pool.bytes -= n * std::mem::size_of::<T>();
    buf.downcast::<Vec<T>>().ok().map(|b| *b)
}

/// Hands a buffer back to the pool (or to the allocator when it does not fit).
fn give<T: Send + 'static>(buf: Vec<T>) {
    let n = buf.len();
    let place = recycled::<T>(n);
    if buf.capacity() != n || place == Recycled::No {
        return;
    }
    if place == Recycled::Local {
        // On a thread being torn down the list is gone: the buffer is just freed.
        with_small(|list: &mut Vec<Vec<T>>| {
            if list.len() < SMALL_PER_THREAD {
                list.push(buf);
            }
        });
        return;
    }
    let bytes = n * std::mem::size_of::<T>();
    if let Ok(mut guard) = POOL.lock() {
        let pool = guard.get_or_insert_with(|| Pool {
            buffers: HashMap::new(),
            bytes: 0,
        });
        let list = pool.buffers.entry((TypeId::of::<T>(), n)).or_default();
        if list.len() < POOL_PER_SIZE && pool.bytes + bytes <= pool_limit() {
            pool.bytes += bytes;
            list.push(Box::new(buf));
        }
    }
}

/// The elements of a tensor; large buffers go back to the pool on drop.
pub(crate) struct Storage<T: Send + 'static> {
    data: Vec<T>,
}

impl<T: Send + 'static> Storage<T> {
    pub(crate) fn new(data: Vec<T>) -> Self {
        Storage { data }
    }

    /// The elements, writable (the caller holds the only handle).
    pub(crate) fn as_mut_slice(&mut self) -> &mut [T] {
        &mut self.data
    }
}

impl<T: Send + 'static> std::ops::Deref for Storage<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.data
    }
}

impl<T: Send + 'static> Drop for Storage<T> {
    fn drop(&mut self) {
        give(std::mem::take(&mut self.data));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_recycled_and_refilled() {
        let n = 1 << 16;
        let a = filled(n, 1.5f64);
        let ptr = a.as_ptr();
        drop(Storage::new(a));
        let b = filled(n, 0.0f64);
        assert!(b.iter().all(|&v| v == 0.0));
        // Another test may take it first; when it is ours, it is the same memory.
        if b.as_ptr() == ptr {
            assert_eq!(b.len(), n);
        }
        let small = filled(10, 2.0f32);
        assert_eq!(small, vec![2.0; 10]);
    }

    /// A small buffer goes back to its thread's own list and comes out refilled on
    /// the next request of its length there; tiny ones are left to the allocator.
    #[test]
    fn small_buffers_are_recycled_on_their_thread() {
        let n = 1000;
        let a = filled(n, 2.5f64);
        let ptr = a.as_ptr();
        drop(Storage::new(a));
        let b = filled(n, 0.0f64);
        assert_eq!(b.as_ptr(), ptr, "this thread's list is not shared");
        assert!(b.iter().all(|&v| v == 0.0));
        assert_eq!(recycled::<f32>(8), Recycled::No);
        assert_eq!(recycled::<f32>(1 << 10), Recycled::Local);
        assert_eq!(recycled::<f32>(1 << 16), Recycled::Shared);
        // Only float buffers have a thread list.
        assert_eq!(recycled::<usize>(1 << 10), Recycled::No);
        assert_eq!(recycled::<usize>(1 << 16), Recycled::Shared);
    }

    /// Debug and test builds hand out NaN-filled float scratch, fresh or recycled,
    /// so a kernel that leaves an element unwritten cannot pass unnoticed.
    #[test]
    fn scratch_is_poisoned_in_debug_builds() {
        if !cfg!(debug_assertions) {
            return;
        }
        assert!(scratch(10, 0.0f32).iter().all(|v| v.is_nan()));
        let n = 1 << 15;
        drop(Storage::new(vec![1.0f64; n]));
        assert!(scratch(n, 0.0f64).iter().all(|v| v.is_nan()));
        assert_eq!(scratch(3, 7usize), vec![7; 3]);
    }
}
