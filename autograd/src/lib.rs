//! Tape autograd over `tensor`.
//!
//! A [`Var`] is a tensor value plus, when it takes part in differentiation, a node of
//! an append-only graph (the tape) recording the op that made it. An op is recorded
//! only when one of its inputs requires a gradient and recording is enabled, so
//! inference and plain tensor code pay nothing.
//!
//! Backward rules are written with `Var` operations. [`backward`] runs them on plain
//! tensors (nothing recorded: the fast path); [`grad`] with `create_graph` records
//! them, so gradients can be differentiated again ([`hvp`], [`jvp`], log-det of an
//! input Hessian). [`gradcheck()`] and [`gradgradcheck`] compare the analytic
//! derivatives with finite differences; [`detect_anomaly`] reports the first op that
//! produces a NaN or infinity; [`trace`] records every op and finds the first one
//! where two runs part. The tape is released when the last `Var` of a forward
//! pass is dropped.
//!
//! ```
//! use autograd::{grad, hvp, Var};
//! use tensor::Tensor;
//! # fn main() -> tensor::Result<()> {
//! // f(x) = Σ x³: ∇f = 3x², and the Hessian-vector product is 6x ⊙ v.
//! let x = Var::leaf(Tensor::<f64>::from_vec(vec![1.0, -2.0], &[2])?);
//! let f = x.square()?.mul(&x)?.sum_all()?;
//! let g = grad(&[&f], &[&x], None, false)?;
//! assert_eq!(g[0].value().to_vec(), vec![3.0, 12.0]);
//! let v = Tensor::from_vec(vec![1.0, 1.0], &[2])?;
//! let hv = hvp(|p| p[0].square()?.mul(&p[0])?.sum_all(), &[x.value().clone()], &[v])?;
//! assert_eq!(hv[0].to_vec(), vec![6.0, -12.0]);
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]

pub mod engine;
pub mod functional;
pub mod gradcheck;
#[cfg(feature = "proptest")]
pub mod gradcheck_property;
pub mod mode;
pub mod ops;
pub mod trace;
pub mod var;

pub use engine::{backward, backward_retaining, grad, Grads};
pub use functional::{hvp, jvp};
pub use gradcheck::{gradcheck, gradgradcheck, GradcheckOptions, GradcheckReport};
pub use mode::{detect_anomaly, grad_enabled, no_grad, with_grad};
pub use var::{live_nodes, record, Ctx, NodeId, Var};
