//! The error of the `models` command line, its experiments and its results
//! commands: a usage mistake, a folder that cannot be used as asked, or an error of
//! the engine kept whole. `main` exits with status 2 on a usage mistake, 1 otherwise.

use std::fmt;

/// What went wrong in a `models` command.
#[non_exhaustive]
#[derive(Debug)]
pub enum Error {
    /// A mistake in the command line: an unknown command or option, a value that
    /// cannot be parsed or is out of range, options that contradict each other. The
    /// message names the option.
    Usage(String),
    /// A run, shard, journal or results folder (or file) that cannot be used as
    /// asked: shards of different sweeps, a journal written by another build, a kept
    /// setting that would be overwritten, a malformed record.
    Refused {
        /// The command that refused it: merge, resume, keep, report.
        command: &'static str,
        /// Why, naming the folder or file.
        why: String,
    },
    /// An error of the engine, a loader or the file system, as the engine gave it.
    Engine(tensor::Error),
}

/// The result of a `models` command.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A usage mistake; `message` names the option or argument.
    pub fn usage(message: impl Into<String>) -> Error {
        Error::Usage(message.into())
    }

    /// A refusal by `command` (merge, resume, keep, report); `why` names the folder
    /// or file.
    pub fn refused(command: &'static str, why: impl Into<String>) -> Error {
        Error::Refused {
            command,
            why: why.into(),
        }
    }

    /// Whether this is a usage mistake (exit status 2).
    pub fn is_usage(&self) -> bool {
        matches!(self, Error::Usage(_))
    }
}

impl From<tensor::Error> for Error {
    fn from(e: tensor::Error) -> Error {
        Error::Engine(e)
    }
}

/// Back into the engine's error, for an experiment's error passing through an
/// engine callback (a training cell, a closure the engine calls): an engine error
/// comes back whole, a usage mistake or a refusal as a value error naming it.
impl From<Error> for tensor::Error {
    fn from(e: Error) -> tensor::Error {
        match e {
            Error::Engine(e) => e,
            Error::Usage(m) => tensor::Error::value("usage", m),
            Error::Refused { command, why } => tensor::Error::value(command, why),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(m) => f.write_str(m),
            Error::Refused { command, why } => write!(f, "{command}: {why}"),
            Error::Engine(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Engine(e) => Some(e),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_display_and_keep_the_engine_error() {
        let u = Error::usage("--epochs must be at least 1, got 0");
        assert!(u.is_usage());
        assert_eq!(u.to_string(), "--epochs must be at least 1, got 0");
        let r = Error::refused("resume", "runs/a: written by another build");
        assert!(!r.is_usage());
        assert_eq!(r.to_string(), "resume: runs/a: written by another build");
        let e: Error = tensor::Error::value("matmul", "bad").into();
        let inner = tensor::Error::value("matmul", "bad");
        assert_eq!(e.to_string(), inner.to_string());
        assert!(std::error::Error::source(&e).is_some());
        assert!(matches!(e, Error::Engine(ref t) if t.kind() == inner.kind()));
    }
}
