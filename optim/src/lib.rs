//! Update rules: the `Optimizer` trait, SGD/Adam, and the engine's three methods
//! (closed-form last layer, LLQR+SAM, the ICNN lift).
#![forbid(unsafe_code)]
