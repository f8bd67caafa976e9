//! Cache hints for what a row-by-row kernel touches next: while one row of a batch
//! is transformed in the cache, the next row's input and output are asked for a
//! share at a time, so that memory is read and written under the computation
//! instead of in phases of their own.
//!
//! Asking for the next input row during the four-step's passes, and for the next
//! output row as well, each made a batch of transforms faster. A burst of the whole
//! row before the transform gained nothing (the core stalled on its miss buffers
//! instead), so the hints are spread over the kernel's steps ([`Ahead::part`]). A
//! write-intent prefetch of the output gained nothing over a plain one.

/// Two regions — the next input and the next output — to ask the cache for, by
/// shares, during the current row's work. A hint only: addresses are never
/// dereferenced, so a region may be empty, and results do not depend on it.
#[derive(Clone, Copy, Debug)]
pub struct Ahead {
    /// (address, bytes) of each region.
    regions: [(usize, usize); 2],
}

/// Bytes of a cache line.
const LINE: usize = 64;

impl Ahead {
    /// No hint.
    pub const NONE: Ahead = Ahead {
        regions: [(0, 0); 2],
    };

    /// The hint for the next row's input `read` and output `write`.
    pub fn new<T, U>(read: &[T], write: &[U]) -> Ahead {
        let region = |p: *const u8, bytes: usize| (p as usize, bytes);
        Ahead {
            regions: [
                region(read.as_ptr().cast(), std::mem::size_of_val(read)),
                region(write.as_ptr().cast(), std::mem::size_of_val(write)),
            ],
        }
    }

    /// Asks for share `step` of `steps` of each region's cache lines (the lines
    /// split into `steps` runs of equal count, the last shorter): a kernel calls it
    /// once per step of its work, `step` from 0 to `steps − 1`.
    #[inline(always)]
    pub fn part(&self, step: usize, steps: usize) {
        for &(start, bytes) in &self.regions {
            for line in share(bytes.div_ceil(LINE), step, steps) {
                fetch(start.wrapping_add(line * LINE));
            }
        }
    }
}

/// The lines of share `step` of `steps` of `lines` lines: runs of equal count in
/// order, the last shorter, empty past the end.
#[inline(always)]
fn share(lines: usize, step: usize, steps: usize) -> std::ops::Range<usize> {
    let per = lines.div_ceil(steps.max(1));
    let from = (step * per).min(lines);
    from..(from + per).min(lines)
}

/// Asks for the cache line at `address` (into every level).
#[inline(always)]
fn fetch(address: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: a prefetch is a hint: it never faults and changes no value,
        // whatever the address (SSE, which every x86-64 has).
        unsafe { _mm_prefetch::<_MM_HINT_T0>(address as *const i8) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = address;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shares of [`Ahead::part`] cover every line of a region exactly once,
    /// in order, whatever the count of steps.
    #[test]
    fn the_shares_cover_each_line_once_in_order() {
        for lines in [0usize, 1, 2, 7, 128, 129, 1000] {
            for steps in 1..40 {
                let all: Vec<usize> = (0..steps).flat_map(|s| share(lines, s, steps)).collect();
                assert_eq!(
                    all,
                    (0..lines).collect::<Vec<_>>(),
                    "{lines} lines, {steps} steps"
                );
            }
        }
        // And asking is harmless on any region, even one of nothing.
        let (a, b) = (vec![1.0f32; 3000], vec![0u8; 0]);
        let hint = Ahead::new(&a, &b);
        for step in 0..7 {
            hint.part(step, 7);
        }
        Ahead::NONE.part(0, 1);
    }
}
