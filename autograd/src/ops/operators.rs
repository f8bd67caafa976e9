//! Arithmetic operators on `&Var`, between two `Var`s (broadcasting) and with `f64`
//! scalars, so that user code and backward rules read like the maths. Each returns
//! `Result`, as the named methods do (a shape mismatch is an error, not a panic):
//! `let y = (&(&a * &b)? + 1.0)?;` is `a.mul(&b)?.add_scalar(1.0)?`.

use crate::var::Var;
use std::ops::{Add, Div, Mul, Neg, Sub};
use tensor::{Element, Result};

macro_rules! binary {
    ($trait:ident, $method:ident, $scalar:ident) => {
        impl<T: Element> $trait<&Var<T>> for &Var<T> {
            type Output = Result<Var<T>>;
            #[track_caller]
            fn $method(self, rhs: &Var<T>) -> Result<Var<T>> {
                Var::$method(self, rhs)
            }
        }

        impl<T: Element> $trait<f64> for &Var<T> {
            type Output = Result<Var<T>>;
            #[track_caller]
            fn $method(self, rhs: f64) -> Result<Var<T>> {
                self.$scalar(rhs)
            }
        }
    };
}

binary!(Add, add, add_scalar);
binary!(Sub, sub, sub_scalar);
binary!(Mul, mul, mul_scalar);
binary!(Div, div, div_scalar);

impl<T: Element> Add<&Var<T>> for f64 {
    type Output = Result<Var<T>>;
    #[track_caller]
    fn add(self, rhs: &Var<T>) -> Result<Var<T>> {
        rhs.add_scalar(self)
    }
}

impl<T: Element> Mul<&Var<T>> for f64 {
    type Output = Result<Var<T>>;
    #[track_caller]
    fn mul(self, rhs: &Var<T>) -> Result<Var<T>> {
        rhs.mul_scalar(self)
    }
}

impl<T: Element> Sub<&Var<T>> for f64 {
    type Output = Result<Var<T>>;
    /// s − x.
    #[track_caller]
    fn sub(self, rhs: &Var<T>) -> Result<Var<T>> {
        rhs.neg()?.add_scalar(self)
    }
}

impl<T: Element> Neg for &Var<T> {
    type Output = Result<Var<T>>;
    #[track_caller]
    fn neg(self) -> Result<Var<T>> {
        Var::neg(self)
    }
}
