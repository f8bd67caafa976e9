//! The allocation cap: the largest element count a tensor may have. Every shape that
//! would be allocated is checked against it before any memory is requested, so a
//! mistaken size (`--hidden 4000000000`, a huge padding) is an error naming the
//! shape instead of an abort from the allocator.

use crate::error::{Error, Result};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The default cap: 2³⁰ elements (8 GiB of f64, 4 GiB of f32), well under the
/// memory of the machines this engine targets and far above any model it trains.
pub const DEFAULT_MAX_ELEMENTS: usize = 1 << 30;

static MAX_ELEMENTS: AtomicUsize = AtomicUsize::new(DEFAULT_MAX_ELEMENTS);

/// The current cap on a tensor's element count.
pub fn max_elements() -> usize {
    MAX_ELEMENTS.load(Ordering::Relaxed)
}

/// Sets the cap on a tensor's element count (process-wide), e.g. higher on a
/// machine with more memory. Zero is refused.
pub fn set_max_elements(n: usize) -> Result<()> {
    if n == 0 {
        return Err(Error::value(
            "set_max_elements",
            "the element cap must be positive",
        ));
    }
    MAX_ELEMENTS.store(n, Ordering::Relaxed);
    Ok(())
}
