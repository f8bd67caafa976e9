//! What each op does with NaN, ±∞ and signed zeros, stated once and tested row by
//! row (`tests/suite/nan_semantics.rs`, in `f32` and `f64`, with the special value
//! at every position of slices longer than a SIMD register, so the vector paths
//! are held to the same rule as the scalar ones), and held again on random
//! strided tensors of the hostile profile (`tests/suite/hostile.rs`). The rule follows NumPy and
//! PyTorch where they agree, which they do on every row here; the engine has no
//! NaN-skipping variants (`nanmax`, `nansum`, `fmax`).
//!
//! | op | NaN in the input | ±∞ and signed zeros |
//! |---|---|---|
//! | `max`, `min` (over axes), `max_all`, `min_all` | NaN (propagates) | ordinary values |
//! | `argmax`, `argmin` | the index of the first NaN | ordinary values, first on ties |
//! | `maximum`, `minimum` (element-wise) | NaN where either is NaN | on a tie (−0 and +0) the first argument |
//! | `clamp(lo, hi)` | NaN stays NaN | ±∞ clamp to the bounds |
//! | `relu`, `leaky_relu`, `sign`, `abs` | NaN stays NaN | `sign(±0) = 0`, `abs(−0) = +0`, `relu(−∞) = 0` |
//! | `sum`, `mean`, `prod`, `cumsum`, `var`, `std` | NaN (from the NaN on, for `cumsum`) | ∞ − ∞ gives NaN as in IEEE arithmetic |
//! | `softmax`, `log_softmax` (along an axis) | the whole slice is NaN | −∞ gets probability 0 (log-probability −∞); a +∞, or a slice of only −∞, makes the slice NaN |
//! | `logsumexp` | NaN | a +∞ gives +∞; only −∞ gives −∞ |
//! | `eq`, `ne`, `lt`, `le`, `gt`, `ge` | NaN equals nothing, itself included: `ne` is 1, the others 0 | −0 equals +0 |
//! | `max_pool2d` | a window holding a NaN gives NaN (its index, the first NaN) | ordinary values |
//! | `sqrt`, `ln` | NaN | `sqrt(x < 0)` and `ln(x < 0)` are NaN, `ln(0) = −∞` |
//! | `sigmoid`, `tanh`, `softplus` | NaN | limits: `sigmoid(±∞) = 1, 0`, `tanh(±∞) = ±1`, `softplus(+∞) = +∞`, `softplus(−∞) = 0` |
//! | `cholesky`, `solve`, `inverse`, `eigh`, `qr`, the SPD routines | an error of kind [`NonFinite`](crate::ErrorKind::NonFinite), naming the op (the symmetric routines read, and check, only the lower triangle) | ∞ too; finite input whose result overflows the type (a near-singular matrix, entries near its largest value) is an error of kind [`Numerical`](crate::ErrorKind::Numerical), never a silent ∞ or NaN |
//!
//! Gradients follow the same values (autograd's rules are written with these ops);
//! `autograd::detect_anomaly` names the first op whose output is not finite, and the
//! optimisers refuse a non-finite gradient with an error naming the parameter.
