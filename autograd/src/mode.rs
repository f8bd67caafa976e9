//! Thread-local switches: gradient recording and anomaly detection.

use std::cell::Cell;

thread_local! {
    static GRAD_ENABLED: Cell<bool> = const { Cell::new(true) };
    static ANOMALY: Cell<bool> = const { Cell::new(false) };
}

/// True when ops on this thread record onto the tape.
pub fn grad_enabled() -> bool {
    GRAD_ENABLED.with(|g| g.get())
}

/// True when anomaly detection is on for this thread.
pub fn anomaly_enabled() -> bool {
    ANOMALY.with(|a| a.get())
}

/// Restores a thread-local flag when dropped (also on early return or panic).
struct Restore {
    flag: &'static std::thread::LocalKey<Cell<bool>>,
    old: bool,
}

impl Drop for Restore {
    fn drop(&mut self) {
        self.flag.with(|f| f.set(self.old));
    }
}

fn with_flag<R>(
    flag: &'static std::thread::LocalKey<Cell<bool>>,
    on: bool,
    f: impl FnOnce() -> R,
) -> R {
    let old = flag.with(|g| g.replace(on));
    let _restore = Restore { flag, old };
    f()
}

/// Runs `f` without recording: every op inside returns constants. Use it for
/// inference, evaluation and parameter updates.
///
/// ```
/// use autograd::{grad_enabled, no_grad, Var};
/// use tensor::Tensor;
/// # fn main() -> tensor::Result<()> {
/// let w = Var::leaf(Tensor::<f64>::ones(&[2])?);
/// let y = no_grad(|| w.mul_scalar(3.0))?; // evaluation: nothing recorded
/// assert!(!y.requires_grad());
/// assert_eq!(y.value().to_vec(), vec![3.0, 3.0]);
/// assert!(grad_enabled()); // switched back on when the closure returns
/// assert!(w.mul_scalar(3.0)?.requires_grad());
/// # Ok(())
/// # }
/// ```
pub fn no_grad<R>(f: impl FnOnce() -> R) -> R {
    with_flag(&GRAD_ENABLED, false, f)
}

/// Runs `f` with recording switched on or off.
pub fn with_grad<R>(enabled: bool, f: impl FnOnce() -> R) -> R {
    with_flag(&GRAD_ENABLED, enabled, f)
}

/// Runs `f` with anomaly detection: the first op (forward or backward) that produces
/// a NaN or infinity fails with an error naming it, its input shapes and where it
/// was recorded.
///
/// ```
/// use autograd::{detect_anomaly, Var};
/// use tensor::Tensor;
/// # fn main() -> tensor::Result<()> {
/// let x = Var::leaf(Tensor::<f64>::from_vec(vec![1.0, -1.0], &[2])?);
/// // Without anomaly mode, ln(−1) is a silent NaN.
/// assert!(x.ln()?.value().get(&[1])?.is_nan());
/// // With it, the first op producing a NaN fails, naming itself and where it ran.
/// let e = detect_anomaly(|| x.ln()?.sum_all()).unwrap_err().to_string();
/// assert!(e.starts_with("ln: produced a NaN or infinity"), "{e}");
/// assert!(e.contains(file!()));
/// # Ok(())
/// # }
/// ```
pub fn detect_anomaly<R>(f: impl FnOnce() -> R) -> R {
    with_flag(&ANOMALY, true, f)
}
