//! Where a step's batch comes from: shuffled passes over a training set (the last
//! batch of a pass kept short or dropped), or draws the task makes itself.

use tensor::{Error, Result, Rng};

/// How the trainer forms batches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Batches {
    /// Passes over `samples` rows in a fresh shuffled order each, cut into batches
    /// of `size`; with `ragged` the last batch of a pass keeps the remainder,
    /// otherwise it is dropped so that every batch has `size` rows.
    Shuffled {
        /// Rows of the training set.
        samples: usize,
        /// Rows per batch.
        size: usize,
        /// Keep a short last batch.
        ragged: bool,
    },
    /// The task draws its own samples at every step (generative targets, sampling
    /// with replacement, several sets at once): the trainer hands it no rows, and
    /// counts `per_pass` steps as one epoch (1 for a task that counts iterations).
    Drawn {
        /// Steps that make one epoch of the task's own drawing.
        per_pass: usize,
    },
}

impl Batches {
    /// Checks the sizes: a positive batch no larger than the set when every batch
    /// must be full.
    pub fn check(&self) -> Result<()> {
        match *self {
            Batches::Shuffled { size: 0, .. } => {
                Err(Error::value("trainer", "the batch size must be positive"))
            }
            Batches::Drawn { per_pass: 0 } => Err(Error::value(
                "trainer",
                "an epoch of drawn batches must have at least one step",
            )),
            Batches::Shuffled {
                samples,
                size,
                ragged,
            } if samples == 0 || (!ragged && size > samples) => Err(Error::value(
                "trainer",
                format!(
                    "batches of {size} from {samples} samples: the set must be non-empty{}",
                    if ragged {
                        ""
                    } else {
                        " and hold at least one full batch"
                    }
                ),
            )),
            _ => Ok(()),
        }
    }

    /// The batches of one pass, drawing the order from `rng` (one permutation per
    /// pass; a drawn task gets one empty batch per step of its epoch instead).
    pub fn pass(&self, rng: &mut Rng) -> Vec<Vec<usize>> {
        match *self {
            Batches::Shuffled {
                samples,
                size,
                ragged,
            } => rng
                .permutation(samples)
                .chunks(size)
                .filter(|c| ragged || c.len() == size)
                .map(<[usize]>::to_vec)
                .collect(),
            Batches::Drawn { per_pass } => vec![Vec::new(); per_pass],
        }
    }

    /// Steps in one pass (an epoch).
    pub fn per_pass(&self) -> usize {
        match *self {
            Batches::Shuffled {
                samples,
                size,
                ragged,
            } if size > 0 => {
                if ragged {
                    samples.div_ceil(size)
                } else {
                    samples / size
                }
            }
            Batches::Shuffled { .. } => 0,
            Batches::Drawn { per_pass } => per_pass,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_covers_every_row_once_and_drops_only_the_short_batch() {
        let ragged = Batches::Shuffled {
            samples: 10,
            size: 4,
            ragged: true,
        };
        let full = Batches::Shuffled {
            samples: 10,
            size: 4,
            ragged: false,
        };
        let a = ragged.pass(&mut Rng::new(3));
        let b = full.pass(&mut Rng::new(3));
        let mut rows: Vec<usize> = a.concat();
        rows.sort_unstable();
        assert_eq!(rows, (0..10).collect::<Vec<_>>());
        assert_eq!(a.iter().map(Vec::len).collect::<Vec<_>>(), [4, 4, 2]);
        // The same order, the short batch dropped.
        assert_eq!(b, a[..2].to_vec());
        assert_eq!((ragged.per_pass(), full.per_pass()), (3, 2));
        assert!(Batches::Shuffled {
            samples: 3,
            size: 4,
            ragged: false
        }
        .check()
        .is_err());
        assert!(Batches::Shuffled {
            samples: 3,
            size: 0,
            ragged: true
        }
        .check()
        .is_err());
    }
}
