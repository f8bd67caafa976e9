//! The element types a tensor can hold: `f32` and `f64`.

use crate::kernels::Kernels;
use num_traits::Float;
use std::fmt::{Debug, Display};
use std::iter::Sum;

/// The data type of a tensor's elements, as stored in checkpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    /// IEEE 754 single precision.
    F32,
    /// IEEE 754 double precision.
    F64,
}

impl DType {
    /// Size of one element in bytes.
    pub fn size(self) -> usize {
        match self {
            DType::F32 => 4,
            DType::F64 => 8,
        }
    }

    /// The safetensors / NumPy-style name ("F32", "F64").
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "F32",
            DType::F64 => "F64",
        }
    }
}

/// A floating-point element: arithmetic through num-traits' [`Float`], plus the
/// kernel dispatch (GEMM, vectorised transcendentals) through a trait of the
/// crate's private kernel module, which seals `Element`: it is `f32` and `f64`.
///
/// Implemented for `f32` and `f64` only. Numerical tests run in `f64`.
pub trait Element:
    Float + Kernels + Default + Debug + Display + Send + Sync + Sum + 'static
{
    /// The element's data type tag.
    const DTYPE: DType;
    /// Machine epsilon as `f64`, for tolerances.
    const EPS: f64;

    /// Converts from `f64` (rounding to nearest for `f32`).
    fn from_f64(v: f64) -> Self;
    /// Converts to `f64` (exact for both types).
    fn as_f64(self) -> f64;
    /// Converts a count to this type.
    fn from_usize(n: usize) -> Self {
        Self::from_f64(n as f64)
    }
    /// Little-endian bytes of one element.
    fn to_le_bytes_vec(self, out: &mut Vec<u8>);
    /// Reads one element from exactly `DTYPE.size()` little-endian bytes.
    fn from_le_slice(bytes: &[u8]) -> Self;
}

impl Element for f32 {
    const DTYPE: DType = DType::F32;
    const EPS: f64 = f32::EPSILON as f64;
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    fn as_f64(self) -> f64 {
        self as f64
    }
    fn to_le_bytes_vec(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    fn from_le_slice(bytes: &[u8]) -> Self {
        let mut b = [0u8; 4];
        b.copy_from_slice(&bytes[..4]);
        f32::from_le_bytes(b)
    }
}

impl Element for f64 {
    const DTYPE: DType = DType::F64;
    const EPS: f64 = f64::EPSILON;
    fn from_f64(v: f64) -> Self {
        v
    }
    fn as_f64(self) -> f64 {
        self
    }
    fn to_le_bytes_vec(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    fn from_le_slice(bytes: &[u8]) -> Self {
        let mut b = [0u8; 8];
        b.copy_from_slice(&bytes[..8]);
        f64::from_le_bytes(b)
    }
}
