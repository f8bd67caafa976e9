//! The reference evaluator: a dense row-major array of f64 with every operation
//! written as the plainest loop over multi-indices, sharing no code with the engine,
//! to compare the engine with (see [`crate::differential`]). Operations return
//! `None` exactly where the engine's documented rules say the call is invalid.
//!
//! ```
//! use tensor::reference::Dense;
//! use tensor::Tensor;
//! let d = Dense::arange(&[2, 3]);
//! let col_sums = d.reduce(0, false, true, |v| v.iter().sum()).unwrap();
//! let t = Tensor::<f64>::arange(0.0, 6.0, 1.0).unwrap().reshape(&[2, 3]).unwrap();
//! assert_eq!(Dense::of(&t.sum(&[0], false).unwrap()), col_sums);
//! ```
//!
//! Enabled by the `proptest` feature (the testing toolkit).

use crate::tensor::Tensor;

/// A dense row-major array.
#[derive(Clone, Debug, PartialEq)]
pub struct Dense {
    /// Sizes.
    pub shape: Vec<usize>,
    /// Values, row-major.
    pub data: Vec<f64>,
}

/// The multi-index of flat position `i` in `shape`.
fn unravel(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        idx[d] = i % shape[d];
        i /= shape[d];
    }
    idx
}

/// The flat position of `idx` in `shape`.
fn ravel(idx: &[usize], shape: &[usize]) -> usize {
    idx.iter().zip(shape).fold(0, |a, (&i, &d)| a * d + i)
}

/// An axis in `-ndim..ndim` made non-negative.
pub fn axis(a: isize, ndim: usize) -> Option<usize> {
    let n = ndim as isize;
    (-n..n)
        .contains(&a)
        .then(|| a.rem_euclid(n.max(1)) as usize)
}

impl Dense {
    /// `0, 1, 2, …` in `shape`.
    pub fn arange(shape: &[usize]) -> Dense {
        let n = shape.iter().product();
        Dense {
            shape: shape.to_vec(),
            data: (0..n).map(|i| i as f64).collect(),
        }
    }

    /// The engine tensor with the same values.
    pub fn to_tensor(&self) -> Tensor<f64> {
        Tensor::from_vec(self.data.clone(), &self.shape).expect("sizes agree")
    }

    /// The same values in the engine's tensor, read back.
    pub fn of(t: &Tensor<f64>) -> Dense {
        Dense {
            shape: t.shape().to_vec(),
            data: t.to_vec(),
        }
    }

    /// A new array of `shape` whose element at `idx` is `f(idx)`.
    fn build(shape: &[usize], f: impl Fn(&[usize]) -> f64) -> Dense {
        let n: usize = shape.iter().product();
        Dense {
            shape: shape.to_vec(),
            data: (0..n).map(|i| f(&unravel(i, shape))).collect(),
        }
    }

    fn at(&self, idx: &[usize]) -> f64 {
        self.data[ravel(idx, &self.shape)]
    }

    /// NumPy broadcasting to `target`.
    pub fn broadcast_to(&self, target: &[usize]) -> Option<Dense> {
        let lead = target.len().checked_sub(self.shape.len())?;
        let ok = self
            .shape
            .iter()
            .zip(&target[lead..])
            .all(|(&s, &t)| s == t || s == 1);
        ok.then(|| {
            Dense::build(target, |idx| {
                let src: Vec<usize> = self
                    .shape
                    .iter()
                    .zip(&idx[lead..])
                    .map(|(&s, &i)| if s == 1 { 0 } else { i })
                    .collect();
                self.at(&src)
            })
        })
    }

    /// The shape two arrays broadcast to.
    pub fn broadcast_shape(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
        let n = a.len().max(b.len());
        (0..n)
            .map(|i| {
                let da = if i + a.len() >= n {
                    a[i + a.len() - n]
                } else {
                    1
                };
                let db = if i + b.len() >= n {
                    b[i + b.len() - n]
                } else {
                    1
                };
                match (da, db) {
                    _ if da == db => Some(da),
                    (1, d) | (d, 1) => Some(d),
                    _ => None,
                }
            })
            .collect()
    }

    /// Element-wise `f(a, b)` under broadcasting.
    pub fn zip(&self, other: &Dense, f: impl Fn(f64, f64) -> f64) -> Option<Dense> {
        let shape = Dense::broadcast_shape(&self.shape, &other.shape)?;
        let (a, b) = (self.broadcast_to(&shape)?, other.broadcast_to(&shape)?);
        Some(Dense {
            shape,
            data: a.data.iter().zip(&b.data).map(|(&x, &y)| f(x, y)).collect(),
        })
    }

    /// `f` on every element.
    pub fn map(&self, f: impl Fn(f64) -> f64) -> Dense {
        Dense {
            shape: self.shape.clone(),
            data: self.data.iter().map(|&x| f(x)).collect(),
        }
    }

    /// Same values in a new shape of the same size.
    pub fn reshape(&self, shape: &[usize]) -> Option<Dense> {
        (shape.iter().product::<usize>() == self.data.len()).then(|| Dense {
            shape: shape.to_vec(),
            data: self.data.clone(),
        })
    }

    /// Axes reordered: output axis `i` is input axis `axes[i]`.
    pub fn permute(&self, axes: &[isize]) -> Option<Dense> {
        let nd = self.shape.len();
        let axes: Vec<usize> = axes.iter().map(|&a| axis(a, nd)).collect::<Option<_>>()?;
        let mut seen = vec![false; nd];
        if axes.len() != nd || axes.iter().any(|&a| std::mem::replace(&mut seen[a], true)) {
            return None;
        }
        let shape: Vec<usize> = axes.iter().map(|&a| self.shape[a]).collect();
        Some(Dense::build(&shape, |idx| {
            let mut src = vec![0; nd];
            for (o, &a) in axes.iter().enumerate() {
                src[a] = idx[o];
            }
            self.at(&src)
        }))
    }

    /// `start, start + step, …` below `min(end, len)` along an axis.
    pub fn slice(&self, ax: isize, start: usize, end: usize, step: usize) -> Option<Dense> {
        let ax = axis(ax, self.shape.len())?;
        let end = end.min(self.shape[ax]);
        if step == 0 || start > end {
            return None;
        }
        let mut shape = self.shape.clone();
        shape[ax] = (end - start).div_ceil(step);
        Some(Dense::build(&shape, |idx| {
            let mut src = idx.to_vec();
            src[ax] = start + idx[ax] * step;
            self.at(&src)
        }))
    }

    /// `len` elements from `start` along an axis.
    pub fn narrow(&self, ax: isize, start: usize, len: usize) -> Option<Dense> {
        let a = axis(ax, self.shape.len())?;
        (start.checked_add(len)? <= self.shape[a]).then(|| self.slice(ax, start, start + len, 1))?
    }

    /// Joined along an axis; other sizes must agree.
    pub fn cat(parts: &[&Dense], ax: isize) -> Option<Dense> {
        let first = parts.first()?;
        let ax = axis(ax, first.shape.len())?;
        let agree = parts.iter().all(|p| {
            p.shape.len() == first.shape.len()
                && (0..p.shape.len()).all(|d| d == ax || p.shape[d] == first.shape[d])
        });
        if !agree {
            return None;
        }
        let mut shape = first.shape.clone();
        shape[ax] = parts.iter().map(|p| p.shape[ax]).sum();
        Some(Dense::build(&shape, |idx| {
            let mut src = idx.to_vec();
            for p in parts {
                if src[ax] < p.shape[ax] {
                    return p.at(&src);
                }
                src[ax] -= p.shape[ax];
            }
            unreachable!("the index lies in some part")
        }))
    }

    /// Pieces of `sizes` along an axis; the sizes must add up to it.
    pub fn split(&self, ax: isize, sizes: &[usize]) -> Option<Vec<Dense>> {
        let a = axis(ax, self.shape.len())?;
        if sizes.iter().sum::<usize>() != self.shape[a] {
            return None;
        }
        let mut start = 0;
        sizes
            .iter()
            .map(|&s| {
                start += s;
                self.narrow(ax, start - s, s)
            })
            .collect()
    }

    /// Removes a size-1 axis.
    pub fn squeeze(&self, ax: isize) -> Option<Dense> {
        let a = axis(ax, self.shape.len())?;
        (self.shape[a] == 1).then(|| {
            let mut shape = self.shape.clone();
            shape.remove(a);
            Dense {
                shape,
                data: self.data.clone(),
            }
        })
    }

    /// Inserts a size-1 axis at position `ax` of the result.
    pub fn unsqueeze(&self, ax: isize) -> Option<Dense> {
        let a = axis(ax, self.shape.len() + 1)?;
        let mut shape = self.shape.clone();
        shape.insert(a, 1);
        Some(Dense {
            shape,
            data: self.data.clone(),
        })
    }

    /// Reversed along each of `axes` (no duplicates).
    pub fn flip(&self, axes: &[isize]) -> Option<Dense> {
        let nd = self.shape.len();
        let axes: Vec<usize> = axes.iter().map(|&a| axis(a, nd)).collect::<Option<_>>()?;
        let mut seen = vec![false; nd];
        if axes.iter().any(|&a| std::mem::replace(&mut seen[a], true)) {
            return None;
        }
        Some(Dense::build(&self.shape, |idx| {
            let mut src = idx.to_vec();
            for &a in &axes {
                src[a] = self.shape[a] - 1 - idx[a];
            }
            self.at(&src)
        }))
    }

    /// Reduces one axis with `f` over its values in order (the axis is kept with size 1
    /// when `keepdim`); `None` when the axis is invalid or `empty_ok` is false and the
    /// axis is empty.
    pub fn reduce(
        &self,
        ax: isize,
        keepdim: bool,
        empty_ok: bool,
        f: impl Fn(&[f64]) -> f64,
    ) -> Option<Dense> {
        let a = axis(ax, self.shape.len())?;
        if self.shape[a] == 0 && !empty_ok {
            return None;
        }
        let mut shape = self.shape.clone();
        shape[a] = 1;
        let mut out = Dense::build(&shape, |idx| {
            let mut src = idx.to_vec();
            let line: Vec<f64> = (0..self.shape[a])
                .map(|i| {
                    src[a] = i;
                    self.at(&src)
                })
                .collect();
            f(&line)
        });
        if !keepdim {
            out.shape.remove(a);
        }
        Some(out)
    }

    /// The matrix product of two 2-D arrays.
    pub fn matmul(&self, other: &Dense) -> Option<Dense> {
        let [m, k] = self.shape[..] else { return None };
        let [k2, n] = other.shape[..] else {
            return None;
        };
        (k == k2).then(|| {
            Dense::build(&[m, n], |idx| {
                (0..k)
                    .map(|p| self.at(&[idx[0], p]) * other.at(&[p, idx[1]]))
                    .sum()
            })
        })
    }
}
