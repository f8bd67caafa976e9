//! Reading fuzz bytes as a stream of small decisions: each read consumes a byte and
//! an exhausted input reads as `None`, which ends the program being decoded.

/// A cursor over the fuzz input.
pub struct Input<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Input<'a> {
    /// A cursor at the start of `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        Input { bytes, at: 0 }
    }

    /// The next byte.
    pub fn byte(&mut self) -> Option<u8> {
        let b = *self.bytes.get(self.at)?;
        self.at += 1;
        Some(b)
    }

    /// A number in `0..n` (`n ≥ 1`).
    pub fn below(&mut self, n: usize) -> Option<usize> {
        Some(self.byte()? as usize % n)
    }

    /// An axis in `-(ndim + 2)..ndim + 2`, so out-of-range axes occur too.
    pub fn axis(&mut self, ndim: usize) -> Option<isize> {
        let span = 2 * ndim as isize + 4;
        Some(self.byte()? as isize % span - (ndim as isize + 2))
    }

    /// A shape of rank `0..=max_rank` with sizes `0..=max_dim`.
    pub fn shape(&mut self, max_rank: usize, max_dim: usize) -> Option<Vec<usize>> {
        let rank = self.below(max_rank + 1)?;
        (0..rank).map(|_| self.below(max_dim + 1)).collect()
    }
}
