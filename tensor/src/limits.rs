//! The allocation cap: the largest element count a tensor may have. Every shape that
//! would be allocated is checked against it before any memory is requested, so a
//! mistaken size (`--hidden 4000000000`, a huge padding) is an error naming the
//! shape instead of an abort from the allocator.

use crate::error::{Error, Result};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The default cap: 2³⁰ elements (8 GiB of f64, 4 GiB of f32), well under the
/// memory of the machines this engine targets and far above any model it trains;
/// on 32-bit targets (wasm32), whose whole address space is 4 GiB, 2²⁷ (1 GiB of
/// f64).
pub const DEFAULT_MAX_ELEMENTS: usize = if usize::BITS >= 64 { 1 << 30 } else { 1 << 27 };

static MAX_ELEMENTS: AtomicUsize = AtomicUsize::new(DEFAULT_MAX_ELEMENTS);

/// The current cap on a tensor's element count.
pub fn max_elements() -> usize {
    MAX_ELEMENTS.load(Ordering::Relaxed)
}

/// Sets the cap on a tensor's element count (process-wide), e.g. higher on a
/// machine with more memory. Zero is refused.
///
/// ```
/// use tensor::{limits, Tensor};
/// # fn main() -> tensor::Result<()> {
/// assert_eq!(limits::max_elements(), limits::DEFAULT_MAX_ELEMENTS);
/// limits::set_max_elements(1000)?;
/// // A shape past the cap is refused before any memory is asked for.
/// let e = Tensor::<f32>::zeros(&[100, 100]).unwrap_err().to_string();
/// assert!(e.contains("[100, 100]") && e.contains("allocation cap of 1000"), "{e}");
/// assert!(Tensor::<f32>::zeros(&[10, 100]).is_ok()); // 1000 elements: at the cap
/// assert!(limits::set_max_elements(0).is_err());
/// limits::set_max_elements(limits::DEFAULT_MAX_ELEMENTS)?; // restore the default
/// # Ok(())
/// # }
/// ```
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
