//! Tape autograd over `tensor` (higher-order gradients, gradcheck, anomaly mode).
#![forbid(unsafe_code)]
