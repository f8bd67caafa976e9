//! LLQR: a learned layer-wise preconditioner fitted to a quadratic model of the loss,
//! its exact Riccati counterpart for tiny networks, curvature-vector products by
//! higher-order autograd, the LLQR+SAM optimiser and, outside the authors' method,
//! the converged diagonal U it is measured against.

pub mod converged_diagonal;
pub mod curvature;
pub mod llqr_sam;
pub mod preconditioner;
pub mod riccati;

pub use converged_diagonal::Refit;
pub use curvature::{
    dense_curvature, fisher_vector_product, hessian_vector_product, BatchScale, CurvatureProducts,
    Geometry,
};
pub use llqr_sam::{LlqrConfig, LlqrSam, PerturbationNorm};
pub use preconditioner::{Gvp, InnerSolve, InnerTrace, Preconditioner, Structure};
pub use riccati::exact_lqr_step;
