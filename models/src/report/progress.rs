//! Progress lines on stderr: position, loss, elapsed time and an ETA, at most every
//! half second.

use std::time::{Duration, Instant};

/// A progress reporter for a run of `total` steps.
pub struct Progress {
    label: String,
    total: usize,
    start: Instant,
    last: Option<Instant>,
    quiet: bool,
}

impl Progress {
    /// A reporter printing `label` before each line; silent when `quiet`.
    pub fn new(label: impl Into<String>, total: usize, quiet: bool) -> Self {
        Progress {
            label: label.into(),
            total: total.max(1),
            start: Instant::now(),
            last: None,
            quiet,
        }
    }

    /// Reports `done` steps finished at `epoch`, with the latest loss; printed if half
    /// a second passed since the last line, or at the end.
    pub fn update(&mut self, done: usize, epoch: usize, loss: f64) {
        let now = Instant::now();
        let due = self
            .last
            .is_none_or(|t| now - t >= Duration::from_millis(500))
            || done >= self.total;
        if self.quiet || !due {
            return;
        }
        self.last = Some(now);
        let elapsed = now - self.start;
        let eta =
            elapsed.as_secs_f64() * (self.total.saturating_sub(done)) as f64 / done.max(1) as f64;
        eprintln!(
            "[{}] epoch {epoch} step {done}/{} loss {loss:.5} elapsed {:.1}s eta {eta:.1}s",
            self.label,
            self.total,
            elapsed.as_secs_f64()
        );
    }

    /// Seconds since the start.
    pub fn elapsed(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }
}
