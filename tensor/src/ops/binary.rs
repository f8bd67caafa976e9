//! Broadcasting binary operations, comparisons (giving 0/1 masks) and `select`.

use crate::element::Element;
use crate::error::{fmt_shape, Error, Result};
use crate::layout::{broadcast_shapes, checked_numel, Rows};
use crate::parallel;
use crate::storage;
use crate::tensor::Tensor;

impl<T: Element> Tensor<T> {
    /// Combines two tensors element-wise under NumPy broadcasting. `op` names the
    /// operation in errors.
    pub fn zip_with(
        &self,
        other: &Tensor<T>,
        op: &'static str,
        f: impl Fn(T, T) -> T + Sync,
    ) -> Result<Tensor<T>> {
        let shape = broadcast_shapes(op, self.shape(), other.shape())?;
        let n = checked_numel(op, &shape)?;
        if n == 0 {
            return Ok(Tensor::from_contiguous(Vec::new(), &shape));
        }
        let mut out = storage::scratch(n, T::zero());
        if let (true, Some(a), Some(b)) = (
            self.shape() == other.shape(),
            self.as_slice(),
            other.as_slice(),
        ) {
            parallel::for_each_chunk(&mut out, |s, c| {
                for ((o, &x), &y) in c.iter_mut().zip(&a[s..]).zip(&b[s..]) {
                    *o = f(x, y);
                }
            });
            return Ok(Tensor::from_contiguous(out, &shape));
        }
        let la = self.layout().broadcast_to(op, &shape)?;
        let lb = other.layout().broadcast_to(op, &shape)?;
        let rows = Rows::new([&la, &lb]);
        let (da, db): (&[T], &[T]) = (self.storage(), other.storage());
        let len = rows.len;
        parallel::for_each_row_chunk(&mut out, len, |r0, chunk| {
            let r1 = r0 + chunk.len() / len;
            rows.for_each(r0, r1, |r, [pa, pb]| {
                let o = &mut chunk[(r - r0) * len..(r - r0 + 1) * len];
                match rows.inner {
                    [1, 1] => {
                        for ((o, &x), &y) in
                            o.iter_mut().zip(&da[pa..pa + len]).zip(&db[pb..pb + len])
                        {
                            *o = f(x, y);
                        }
                    }
                    [1, 0] => {
                        let y = db[pb];
                        for (o, &x) in o.iter_mut().zip(&da[pa..pa + len]) {
                            *o = f(x, y);
                        }
                    }
                    [0, 1] => {
                        let x = da[pa];
                        for (o, &y) in o.iter_mut().zip(&db[pb..pb + len]) {
                            *o = f(x, y);
                        }
                    }
                    [sa, sb] => {
                        let (mut qa, mut qb) = (pa as isize, pb as isize);
                        for o in o.iter_mut() {
                            *o = f(da[qa as usize], db[qb as usize]);
                            qa += sa;
                            qb += sb;
                        }
                    }
                }
            });
        });
        Ok(Tensor::from_contiguous(out, &shape))
    }

    /// a + b.
    ///
    /// ```
    /// use tensor::Tensor;
    /// # fn main() -> tensor::Result<()> {
    /// let m = Tensor::<f64>::from_vec(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])?;
    /// let row = Tensor::from_vec(vec![10.0, 20.0, 30.0], &[3])?;
    /// assert_eq!(m.add(&row)?.to_vec(), vec![11.0, 22.0, 33.0, 14.0, 25.0, 36.0]);
    /// // [2, 1] + [1, 3] broadcasts both ways to [2, 3]: an outer sum.
    /// let col = Tensor::from_vec(vec![0.0, 100.0], &[2, 1])?;
    /// let outer = col.add(&row.reshape(&[1, 3])?)?;
    /// assert_eq!(outer.to_vec(), vec![10.0, 20.0, 30.0, 110.0, 120.0, 130.0]);
    /// // Shapes that do not broadcast are an error naming the op.
    /// let e = m.add(&Tensor::zeros(&[2])?).unwrap_err();
    /// assert!(e.to_string().starts_with("add:"), "{e}");
    /// # Ok(())
    /// # }
    /// ```
    pub fn add(&self, other: &Tensor<T>) -> Result<Tensor<T>> {
        self.zip_with(other, "add", |a, b| a + b)
    }
    /// a − b.
    pub fn sub(&self, other: &Tensor<T>) -> Result<Tensor<T>> {
        self.zip_with(other, "sub", |a, b| a - b)
    }
    /// a · b.
    pub fn mul(&self, other: &Tensor<T>) -> Result<Tensor<T>> {
        self.zip_with(other, "mul", |a, b| a * b)
    }
    /// a / b.
    pub fn div(&self, other: &Tensor<T>) -> Result<Tensor<T>> {
        self.zip_with(other, "div", |a, b| a / b)
    }
    /// aᵇ.
    pub fn pow(&self, other: &Tensor<T>) -> Result<Tensor<T>> {
        self.zip_with(other, "pow", |a, b| a.powf(b))
    }
    /// Element-wise maximum (NaN if either is NaN).
    pub fn maximum(&self, other: &Tensor<T>) -> Result<Tensor<T>> {
        self.zip_with(other, "maximum", |a, b| {
            if a.is_nan() || b.is_nan() {
                T::nan()
            } else if a >= b {
                a
            } else {
                b
            }
        })
    }
    /// Element-wise minimum (NaN if either is NaN).
    pub fn minimum(&self, other: &Tensor<T>) -> Result<Tensor<T>> {
        self.zip_with(other, "minimum", |a, b| {
            if a.is_nan() || b.is_nan() {
                T::nan()
            } else if a <= b {
                a
            } else {
                b
            }
        })
    }

    fn mask(b: bool) -> T {
        if b {
            T::one()
        } else {
            T::zero()
        }
    }

    /// 1 where a = b, else 0.
    pub fn eq(&self, other: &Tensor<T>) -> Result<Tensor<T>> {
        self.zip_with(other, "eq", |a, b| Self::mask(a == b))
    }
    /// 1 where a ≠ b, else 0.
    pub fn ne(&self, other: &Tensor<T>) -> Result<Tensor<T>> {
        self.zip_with(other, "ne", |a, b| Self::mask(a != b))
    }
    /// 1 where a < b, else 0.
    pub fn lt(&self, other: &Tensor<T>) -> Result<Tensor<T>> {
        self.zip_with(other, "lt", |a, b| Self::mask(a < b))
    }
    /// 1 where a ≤ b, else 0.
    pub fn le(&self, other: &Tensor<T>) -> Result<Tensor<T>> {
        self.zip_with(other, "le", |a, b| Self::mask(a <= b))
    }
    /// 1 where a > b, else 0.
    pub fn gt(&self, other: &Tensor<T>) -> Result<Tensor<T>> {
        self.zip_with(other, "gt", |a, b| Self::mask(a > b))
    }
    /// 1 where a ≥ b, else 0.
    pub fn ge(&self, other: &Tensor<T>) -> Result<Tensor<T>> {
        self.zip_with(other, "ge", |a, b| Self::mask(a >= b))
    }
    /// 1 where x > s, else 0.
    pub fn gt_scalar(&self, s: f64) -> Tensor<T> {
        let s = T::from_f64(s);
        self.map(|x| Self::mask(x > s))
    }
    /// 1 where x ≥ s, else 0.
    pub fn ge_scalar(&self, s: f64) -> Tensor<T> {
        let s = T::from_f64(s);
        self.map(|x| Self::mask(x >= s))
    }
    /// 1 where x < s, else 0.
    pub fn lt_scalar(&self, s: f64) -> Tensor<T> {
        let s = T::from_f64(s);
        self.map(|x| Self::mask(x < s))
    }
    /// 1 where x ≤ s, else 0.
    pub fn le_scalar(&self, s: f64) -> Tensor<T> {
        let s = T::from_f64(s);
        self.map(|x| Self::mask(x <= s))
    }

    /// `self` where `gate > 0`, zero elsewhere (NaN gates give zero); shapes must
    /// match. The ReLU's backward in one pass (PyTorch's `threshold_backward`):
    /// unlike `self · (gate > 0)` it gives 0, not NaN, for an infinite `self` at a
    /// closed gate.
    pub fn where_positive(&self, gate: &Tensor<T>) -> Result<Tensor<T>> {
        if self.shape() != gate.shape() {
            return Err(Error::shape(
                "where_positive",
                format!(
                    "needs a gate of the same shape, got {} and {}",
                    fmt_shape(self.shape()),
                    fmt_shape(gate.shape())
                ),
            ));
        }
        self.zip_with(gate, "where_positive", |g, x| {
            if x > T::zero() {
                g
            } else {
                T::zero()
            }
        })
    }

    /// `on_true` where `cond` is non-zero, `on_false` elsewhere; all three broadcast.
    pub fn select(
        cond: &Tensor<T>,
        on_true: &Tensor<T>,
        on_false: &Tensor<T>,
    ) -> Result<Tensor<T>> {
        let shape = broadcast_shapes("select", cond.shape(), on_true.shape())?;
        let shape = broadcast_shapes("select", &shape, on_false.shape())?;
        checked_numel("select", &shape)?;
        let c = cond.broadcast_to(&shape)?.contiguous();
        let a = on_true.broadcast_to(&shape)?.contiguous();
        let b = on_false.broadcast_to(&shape)?.contiguous();
        let (c, a, b) = (
            c.as_slice().expect("contiguous"),
            a.as_slice().expect("contiguous"),
            b.as_slice().expect("contiguous"),
        );
        let mut out = storage::scratch(c.len(), T::zero());
        parallel::for_each_chunk(&mut out, |s, o| {
            for (i, o) in o.iter_mut().enumerate() {
                *o = if c[s + i] != T::zero() {
                    a[s + i]
                } else {
                    b[s + i]
                };
            }
        });
        Ok(Tensor::from_contiguous(out, &shape))
    }
}
