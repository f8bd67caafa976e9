//! Helpers shared by the nn suite's files.

use autograd::GradcheckOptions;

/// The strict tolerances with `directions` random directions from `seed` (used
/// when the parameters are too many for the full Jacobian).
pub fn opts(directions: usize, seed: u64) -> GradcheckOptions {
    GradcheckOptions {
        directions,
        seed,
        ..GradcheckOptions::strict()
    }
}
