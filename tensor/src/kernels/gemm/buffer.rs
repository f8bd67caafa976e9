//! Packing buffers: 64-byte aligned (a packed row of a panel then never straddles
//! cache lines), and recycled through a small per-thread stack, so a product does
//! not allocate, zero and page-fault its panels on every call.

use std::cell::RefCell;
use std::marker::PhantomData;

/// One cache line of raw storage.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u8; 64]);

/// Buffers kept per thread for reuse.
const SPARES: usize = 4;

thread_local! {
    static SPARE: RefCell<Vec<Vec<Line>>> = const { RefCell::new(Vec::new()) };
}

/// `len` elements of `T` (`f32` or `f64`) in aligned storage. Its contents start as
/// whatever the recycled storage held (valid values of `T`, possibly stale): users
/// write before they read.
pub(super) struct Buffer<T> {
    lines: Vec<Line>,
    len: usize,
    _t: PhantomData<T>,
}

impl<T: super::Scalar> Buffer<T> {
    /// A buffer of `len` elements, recycled from this thread when one is large enough.
    pub(super) fn new(len: usize) -> Self {
        let bytes = len * std::mem::size_of::<T>();
        let want = bytes.div_ceil(64);
        let lines = SPARE
            .with(|s| {
                let mut s = s.borrow_mut();
                let at = s.iter().position(|v| v.len() >= want)?;
                Some(s.swap_remove(at))
            })
            .unwrap_or_else(|| vec![Line([0; 64]); want]);
        Buffer {
            lines,
            len,
            _t: PhantomData,
        }
    }

    /// The elements, for writing.
    pub(super) fn as_mut_slice(&mut self) -> &mut [T] {
        debug_assert!(self.lines.len() * 64 >= self.len * std::mem::size_of::<T>());
        // SAFETY: the storage holds at least `len` elements of `T` (checked at
        // construction), is aligned to 64 bytes (more than `T` needs), every bit
        // pattern is a valid `f32`/`f64` (the only `Scalar`s), and `&mut self`
        // makes the borrow unique.
        unsafe { std::slice::from_raw_parts_mut(self.lines.as_mut_ptr().cast::<T>(), self.len) }
    }

    /// The elements, for reading.
    pub(super) fn as_slice(&self) -> &[T] {
        // SAFETY: as for `as_mut_slice`, shared.
        unsafe { std::slice::from_raw_parts(self.lines.as_ptr().cast::<T>(), self.len) }
    }
}

impl<T> Drop for Buffer<T> {
    fn drop(&mut self) {
        let lines = std::mem::take(&mut self.lines);
        // During thread teardown the stack may be gone: the storage is then freed.
        let _ = SPARE.try_with(|s| {
            if let Ok(mut s) = s.try_borrow_mut() {
                if s.len() < SPARES {
                    s.push(lines);
                } else if let Some(small) = s.iter_mut().min_by_key(|v| v.len()) {
                    if small.len() < lines.len() {
                        *small = lines;
                    }
                }
            }
        });
    }
}
