//! Neural-network building blocks on top of `autograd`: modules, parameters,
//! layers, losses and checkpoints.
#![forbid(unsafe_code)]
