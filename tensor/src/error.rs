//! The one error type of the engine: every fallible operation names itself and the
//! offending values, so that a failure can be understood without a debugger.

use std::fmt;

/// Result alias used across the workspace.
pub type Result<T> = std::result::Result<T, Error>;

/// What went wrong, and in which operation.
///
/// Each variant carries the name of the operation (`op`) and a human-readable account
/// of the values that made it fail, for example
/// `matmul: [3, 4] x [5, 2]: inner dimensions 4 and 5 differ`.
///
/// New variants may be added (the enum is `#[non_exhaustive]`); to branch on the
/// kind of failure, match on [`Error::kind`], and read the operation with
/// [`Error::op`].
///
/// ```
/// use tensor::{error::ErrorKind, Tensor};
/// let a = Tensor::<f64>::zeros(&[3, 4]).unwrap();
/// let e = a.matmul(&Tensor::zeros(&[5, 2]).unwrap()).unwrap_err();
/// assert_eq!((e.kind(), e.op()), (ErrorKind::Shape, "matmul"));
/// let e = Tensor::<f32>::zeros(&[1 << 20, 1 << 20]).unwrap_err();
/// assert_eq!(e.kind(), ErrorKind::Limit);
/// assert!(e.to_string().contains("allocation cap"));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// Shapes that the operation cannot combine or accept.
    Shape {
        /// The operation.
        op: &'static str,
        /// The shapes and why they do not fit.
        detail: String,
    },
    /// An axis outside `-ndim..ndim`.
    Axis {
        /// The operation.
        op: &'static str,
        /// The axis asked for.
        axis: isize,
        /// The rank of the tensor.
        ndim: usize,
    },
    /// An index outside `0..len` along some axis.
    Index {
        /// The operation.
        op: &'static str,
        /// The offending index.
        index: usize,
        /// The length of the axis.
        len: usize,
        /// The axis indexed.
        axis: usize,
    },
    /// A caller-supplied value outside its domain (a hyper-parameter, a size, a count).
    Value {
        /// The operation.
        op: &'static str,
        /// The value and its domain.
        detail: String,
    },
    /// A numerical failure: a matrix that is not positive definite, a singular system.
    Numerical {
        /// The operation.
        op: &'static str,
        /// What failed, with the values (pivot index and value, ...).
        detail: String,
    },
    /// A NaN or infinity where finite values are required (anomaly mode, inputs to solvers).
    NonFinite {
        /// The operation.
        op: &'static str,
        /// Where the value appeared.
        detail: String,
    },
    /// Malformed bytes: a checkpoint, a dataset file, a cache.
    Format {
        /// The file or format.
        what: String,
        /// What is wrong with it.
        detail: String,
    },
    /// An I/O failure, with the path involved.
    Io {
        /// The path.
        path: String,
        /// The system's account of the failure.
        detail: String,
    },
    /// A size past a resource bound: a shape whose element count overflows or
    /// exceeds the allocation cap (`tensor::limits`), or another stated bound.
    Limit {
        /// The operation.
        op: &'static str,
        /// What was asked for and the bound (and how to raise it, if it can be).
        detail: String,
    },
}

/// The kind of an [`Error`], for callers that branch on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Shapes that do not fit ([`Error::Shape`]).
    Shape,
    /// An axis or index out of range ([`Error::Axis`], [`Error::Index`]).
    Index,
    /// A caller's value outside its domain ([`Error::Value`]).
    Value,
    /// A numerical failure ([`Error::Numerical`]).
    Numerical,
    /// A NaN or infinity where finite values are required ([`Error::NonFinite`]).
    NonFinite,
    /// Malformed bytes ([`Error::Format`]).
    Format,
    /// An I/O failure ([`Error::Io`]).
    Io,
    /// A size past a resource bound ([`Error::Limit`]).
    Limit,
}

impl Error {
    /// The kind of failure.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Shape { .. } => ErrorKind::Shape,
            Error::Axis { .. } | Error::Index { .. } => ErrorKind::Index,
            Error::Value { .. } => ErrorKind::Value,
            Error::Numerical { .. } => ErrorKind::Numerical,
            Error::NonFinite { .. } => ErrorKind::NonFinite,
            Error::Format { .. } => ErrorKind::Format,
            Error::Io { .. } => ErrorKind::Io,
            Error::Limit { .. } => ErrorKind::Limit,
        }
    }

    /// The operation that failed (for [`Error::Format`] and [`Error::Io`], the
    /// file or format, or the path).
    pub fn op(&self) -> &str {
        match self {
            Error::Shape { op, .. }
            | Error::Axis { op, .. }
            | Error::Index { op, .. }
            | Error::Value { op, .. }
            | Error::Numerical { op, .. }
            | Error::NonFinite { op, .. }
            | Error::Limit { op, .. } => op,
            Error::Format { what, .. } => what,
            Error::Io { path, .. } => path,
        }
    }

    /// A resource-bound error for `op`.
    pub fn limit(op: &'static str, detail: impl Into<String>) -> Self {
        Error::Limit {
            op,
            detail: detail.into(),
        }
    }

    /// A shape error for `op`.
    pub fn shape(op: &'static str, detail: impl Into<String>) -> Self {
        Error::Shape {
            op,
            detail: detail.into(),
        }
    }

    /// A bad-value error for `op`.
    pub fn value(op: &'static str, detail: impl Into<String>) -> Self {
        Error::Value {
            op,
            detail: detail.into(),
        }
    }

    /// A numerical error for `op`.
    pub fn numerical(op: &'static str, detail: impl Into<String>) -> Self {
        Error::Numerical {
            op,
            detail: detail.into(),
        }
    }

    /// A non-finite-value error for `op`.
    pub fn non_finite(op: &'static str, detail: impl Into<String>) -> Self {
        Error::NonFinite {
            op,
            detail: detail.into(),
        }
    }

    /// A format error about `what` (a file name or format name).
    pub fn format(what: impl Into<String>, detail: impl Into<String>) -> Self {
        Error::Format {
            what: what.into(),
            detail: detail.into(),
        }
    }

    /// An I/O error on `path`.
    pub fn io(path: impl Into<String>, err: &std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            detail: err.to_string(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Shape { op, detail }
            | Error::Value { op, detail }
            | Error::Numerical { op, detail }
            | Error::NonFinite { op, detail }
            | Error::Limit { op, detail } => write!(f, "{op}: {detail}"),
            Error::Axis { op, axis, ndim } => write!(
                f,
                "{op}: axis {axis} is out of range for a tensor of rank {ndim}"
            ),
            Error::Index {
                op,
                index,
                len,
                axis,
            } => write!(
                f,
                "{op}: index {index} is out of range for axis {axis} of length {len}"
            ),
            Error::Format { what, detail } => write!(f, "{what}: {detail}"),
            Error::Io { path, detail } => write!(f, "{path}: {detail}"),
        }
    }
}

impl std::error::Error for Error {}

/// Formats a shape as `[3, 4]` for error messages.
pub fn fmt_shape(shape: &[usize]) -> String {
    format!("{shape:?}")
}
