//! Element-wise ops: unary functions, scalar arithmetic, broadcasting binary
//! arithmetic and `select`. Binary rules reduce the gradient back to each input's
//! shape with `sum_to_shape`.

use super::for_input;
use crate::var::{record, Var};
use std::f64::consts::PI;
use tensor::{Element, Result, Tensor};

fn constant<T: Element>(t: Tensor<T>) -> Var<T> {
    Var::constant(t)
}

impl<T: Element> Var<T> {
    /// −x.
    #[track_caller]
    pub fn neg(&self) -> Result<Var<T>> {
        record("neg", &[self], self.value.neg(), |c| {
            Ok(vec![Some(c.grad.neg()?)])
        })
    }

    /// |x| (gradient sign(x), 0 at 0).
    #[track_caller]
    pub fn abs(&self) -> Result<Var<T>> {
        record("abs", &[self], self.value.abs(), |c| {
            let s = constant(c.inputs[0].value.sign());
            Ok(vec![Some(c.grad.mul(&s)?)])
        })
    }

    /// eˣ.
    #[track_caller]
    pub fn exp(&self) -> Result<Var<T>> {
        record("exp", &[self], self.value.exp(), |c| {
            Ok(vec![Some(c.grad.mul(c.output)?)])
        })
    }

    /// eˣ − 1.
    #[track_caller]
    pub fn expm1(&self) -> Result<Var<T>> {
        record("expm1", &[self], self.value.expm1(), |c| {
            Ok(vec![Some(c.grad.mul(&c.output.add_scalar(1.0)?)?)])
        })
    }

    /// ln x.
    #[track_caller]
    pub fn ln(&self) -> Result<Var<T>> {
        record("ln", &[self], self.value.ln(), |c| {
            Ok(vec![Some(c.grad.div(&c.inputs[0])?)])
        })
    }

    /// ln(1 + x).
    #[track_caller]
    pub fn ln1p(&self) -> Result<Var<T>> {
        record("ln1p", &[self], self.value.ln1p(), |c| {
            Ok(vec![Some(c.grad.div(&c.inputs[0].add_scalar(1.0)?)?)])
        })
    }

    /// √x.
    #[track_caller]
    pub fn sqrt(&self) -> Result<Var<T>> {
        record("sqrt", &[self], self.value.sqrt(), |c| {
            Ok(vec![Some(c.grad.div(c.output)?.mul_scalar(0.5)?)])
        })
    }

    /// 1/√x.
    #[track_caller]
    pub fn rsqrt(&self) -> Result<Var<T>> {
        record("rsqrt", &[self], self.value.rsqrt(), |c| {
            // d/dx x^(-1/2) = -½ x^(-3/2) = -½ y / x
            let d = c.output.div(&c.inputs[0])?.mul_scalar(-0.5)?;
            Ok(vec![Some(c.grad.mul(&d)?)])
        })
    }

    /// x².
    #[track_caller]
    pub fn square(&self) -> Result<Var<T>> {
        record("square", &[self], self.value.square(), |c| {
            Ok(vec![Some(c.grad.mul(&c.inputs[0])?.mul_scalar(2.0)?)])
        })
    }

    /// 1/x.
    #[track_caller]
    pub fn recip(&self) -> Result<Var<T>> {
        record("recip", &[self], self.value.recip(), |c| {
            Ok(vec![Some(c.grad.mul(&c.output.square()?)?.neg()?)])
        })
    }

    /// xᵉ for a scalar exponent.
    #[track_caller]
    pub fn powf(&self, e: f64) -> Result<Var<T>> {
        record("powf", &[self], self.value.powf(e), move |c| {
            let d = c.inputs[0].powf(e - 1.0)?.mul_scalar(e)?;
            Ok(vec![Some(c.grad.mul(&d)?)])
        })
    }

    /// sin x.
    #[track_caller]
    pub fn sin(&self) -> Result<Var<T>> {
        record("sin", &[self], self.value.sin(), |c| {
            Ok(vec![Some(c.grad.mul(&c.inputs[0].cos()?)?)])
        })
    }

    /// cos x.
    #[track_caller]
    pub fn cos(&self) -> Result<Var<T>> {
        record("cos", &[self], self.value.cos(), |c| {
            Ok(vec![Some(c.grad.mul(&c.inputs[0].sin()?)?.neg()?)])
        })
    }

    /// tanh x.
    #[track_caller]
    pub fn tanh(&self) -> Result<Var<T>> {
        record("tanh", &[self], self.value.tanh(), |c| {
            // 1 − y²
            let d = c.output.square()?.neg()?.add_scalar(1.0)?;
            Ok(vec![Some(c.grad.mul(&d)?)])
        })
    }

    /// The logistic function.
    #[track_caller]
    pub fn sigmoid(&self) -> Result<Var<T>> {
        record("sigmoid", &[self], self.value.sigmoid(), |c| {
            // y (1 − y)
            let d = c.output.mul(&c.output.neg()?.add_scalar(1.0)?)?;
            Ok(vec![Some(c.grad.mul(&d)?)])
        })
    }

    /// ln(1 + eˣ), stable; its derivative is sigmoid(x).
    #[track_caller]
    pub fn softplus(&self) -> Result<Var<T>> {
        record("softplus", &[self], self.value.softplus(), |c| {
            Ok(vec![Some(c.grad.mul(&c.inputs[0].sigmoid()?)?)])
        })
    }

    /// log sigmoid(x) = −softplus(−x) = min(x, 0) − ln(1 + e^{−|x|}), stable at both
    /// ends (log of a sigmoid that rounds to 0 or 1 would lose it); its derivative
    /// is sigmoid(−x).
    #[track_caller]
    pub fn log_sigmoid(&self) -> Result<Var<T>> {
        let v = self.value.neg().softplus().neg();
        record("log_sigmoid", &[self], v, |c| {
            Ok(vec![Some(c.grad.mul(&c.inputs[0].neg()?.sigmoid()?)?)])
        })
    }

    /// max(x, 0) (gradient 0 at 0).
    #[track_caller]
    pub fn relu(&self) -> Result<Var<T>> {
        record("relu", &[self], self.value.relu(), |c| {
            Ok(vec![Some(c.grad.where_positive(&c.inputs[0].value)?)])
        })
    }

    /// `self` where `gate > 0`, zero elsewhere ([`Tensor::where_positive`]): linear
    /// in `self`, and the gate is a constant (its derivative is zero almost
    /// everywhere), so the backward is the same gating of the incoming gradient.
    #[track_caller]
    pub fn where_positive(&self, gate: &Tensor<T>) -> Result<Var<T>> {
        let gate = gate.clone();
        let v = self.value.where_positive(&gate)?;
        record("where_positive", &[self], v, move |c| {
            Ok(vec![Some(c.grad.where_positive(&gate)?)])
        })
    }

    /// x for x > 0, `slope`·x otherwise.
    #[track_caller]
    pub fn leaky_relu(&self, slope: f64) -> Result<Var<T>> {
        record(
            "leaky_relu",
            &[self],
            self.value.leaky_relu(slope),
            move |c| {
                let pos = c.inputs[0].value.gt_scalar(0.0);
                let d = constant(pos.mul_scalar(1.0 - slope).add_scalar(slope));
                Ok(vec![Some(c.grad.mul(&d)?)])
            },
        )
    }

    /// x for x > 0, α(eˣ − 1) otherwise.
    #[track_caller]
    pub fn elu(&self, alpha: f64) -> Result<Var<T>> {
        record("elu", &[self], self.value.elu(alpha), move |c| {
            // 1 for x > 0, y + α otherwise.
            let pos = constant(c.inputs[0].value.gt_scalar(0.0));
            let neg = constant(c.inputs[0].value.le_scalar(0.0));
            let d = pos.add(&neg.mul(&c.output.add_scalar(alpha)?)?)?;
            Ok(vec![Some(c.grad.mul(&d)?)])
        })
    }

    /// x · sigmoid(x).
    #[track_caller]
    pub fn silu(&self) -> Result<Var<T>> {
        record("silu", &[self], self.value.silu(), |c| {
            // s (1 + x (1 − s))
            let x = &c.inputs[0];
            let s = x.sigmoid()?;
            let d = s.mul(&x.mul(&s.neg()?.add_scalar(1.0)?)?.add_scalar(1.0)?)?;
            Ok(vec![Some(c.grad.mul(&d)?)])
        })
    }

    /// The error function; derivative 2/√π · e^(−x²).
    #[track_caller]
    pub fn erf(&self) -> Result<Var<T>> {
        record("erf", &[self], self.value.erf(), |c| {
            let d = c.inputs[0]
                .square()?
                .neg()?
                .exp()?
                .mul_scalar(2.0 / PI.sqrt())?;
            Ok(vec![Some(c.grad.mul(&d)?)])
        })
    }

    /// GELU (erf form); derivative Φ(x) + x·φ(x).
    #[track_caller]
    pub fn gelu(&self) -> Result<Var<T>> {
        record("gelu", &[self], self.value.gelu(), |c| {
            Ok(vec![Some(c.grad.mul(&c.inputs[0].gelu_grad()?)?)])
        })
    }

    /// The derivative of GELU, Φ(x) + x·φ(x) (one fused kernel; its own derivative is
    /// φ(x)(2 − x²), so GELU stays twice differentiable).
    #[track_caller]
    pub fn gelu_grad(&self) -> Result<Var<T>> {
        record("gelu_grad", &[self], self.value.gelu_grad(), |c| {
            let x = &c.inputs[0];
            let pdf = x
                .square()?
                .mul_scalar(-0.5)?
                .exp()?
                .mul_scalar(1.0 / (2.0 * PI).sqrt())?;
            let d = pdf.mul(&x.square()?.neg()?.add_scalar(2.0)?)?;
            Ok(vec![Some(c.grad.mul(&d)?)])
        })
    }

    /// Clamps into [lo, hi]; the gradient passes only strictly inside.
    #[track_caller]
    pub fn clamp(&self, lo: f64, hi: f64) -> Result<Var<T>> {
        record("clamp", &[self], self.value.clamp(lo, hi), move |c| {
            let x = &c.inputs[0].value;
            let inside = constant(x.gt_scalar(lo).mul(&x.lt_scalar(hi))?);
            Ok(vec![Some(c.grad.mul(&inside)?)])
        })
    }

    /// x + s.
    #[track_caller]
    pub fn add_scalar(&self, s: f64) -> Result<Var<T>> {
        record("add_scalar", &[self], self.value.add_scalar(s), |c| {
            Ok(vec![Some(c.grad.clone())])
        })
    }

    /// x − s.
    #[track_caller]
    pub fn sub_scalar(&self, s: f64) -> Result<Var<T>> {
        self.add_scalar(-s)
    }

    /// x · s.
    #[track_caller]
    pub fn mul_scalar(&self, s: f64) -> Result<Var<T>> {
        record("mul_scalar", &[self], self.value.mul_scalar(s), move |c| {
            Ok(vec![Some(c.grad.mul_scalar(s)?)])
        })
    }

    /// x / s: a true division, bit-identical to `Tensor::div_scalar` (x · (1/s)
    /// differs in the last bit for most s).
    #[track_caller]
    pub fn div_scalar(&self, s: f64) -> Result<Var<T>> {
        record("div_scalar", &[self], self.value.div_scalar(s), move |c| {
            Ok(vec![Some(c.grad.div_scalar(s)?)])
        })
    }

    /// a + b (broadcasting).
    #[track_caller]
    pub fn add(&self, other: &Var<T>) -> Result<Var<T>> {
        let v = self.value.add(&other.value)?;
        record("add", &[self, other], v, |c| {
            let (a, b) = (&c.inputs[0], &c.inputs[1]);
            Ok(vec![
                for_input(a, || c.grad.sum_to_shape(a.shape()))?,
                for_input(b, || c.grad.sum_to_shape(b.shape()))?,
            ])
        })
    }

    /// a − b (broadcasting).
    #[track_caller]
    pub fn sub(&self, other: &Var<T>) -> Result<Var<T>> {
        let v = self.value.sub(&other.value)?;
        record("sub", &[self, other], v, |c| {
            let (a, b) = (&c.inputs[0], &c.inputs[1]);
            Ok(vec![
                for_input(a, || c.grad.sum_to_shape(a.shape()))?,
                for_input(b, || c.grad.neg()?.sum_to_shape(b.shape()))?,
            ])
        })
    }

    /// a · b (broadcasting).
    #[track_caller]
    pub fn mul(&self, other: &Var<T>) -> Result<Var<T>> {
        let v = self.value.mul(&other.value)?;
        record("mul", &[self, other], v, |c| {
            let (a, b) = (&c.inputs[0], &c.inputs[1]);
            Ok(vec![
                for_input(a, || c.grad.mul(b)?.sum_to_shape(a.shape()))?,
                for_input(b, || c.grad.mul(a)?.sum_to_shape(b.shape()))?,
            ])
        })
    }

    /// a / b (broadcasting).
    #[track_caller]
    pub fn div(&self, other: &Var<T>) -> Result<Var<T>> {
        let v = self.value.div(&other.value)?;
        record("div", &[self, other], v, |c| {
            let (a, b) = (&c.inputs[0], &c.inputs[1]);
            Ok(vec![
                for_input(a, || c.grad.div(b)?.sum_to_shape(a.shape()))?,
                for_input(b, || {
                    // −g a / b² = −g y / b
                    c.grad.mul(c.output)?.div(b)?.neg()?.sum_to_shape(b.shape())
                })?,
            ])
        })
    }

    /// aᵇ (broadcasting; a > 0 where b's gradient is needed).
    #[track_caller]
    pub fn pow(&self, other: &Var<T>) -> Result<Var<T>> {
        let v = self.value.pow(&other.value)?;
        record("pow", &[self, other], v, |c| {
            let (a, b) = (&c.inputs[0], &c.inputs[1]);
            Ok(vec![
                for_input(a, || {
                    // g · b · a^(b−1)
                    let d = b.mul(&a.pow(&b.add_scalar(-1.0)?)?)?;
                    c.grad.mul(&d)?.sum_to_shape(a.shape())
                })?,
                for_input(b, || {
                    c.grad.mul(c.output)?.mul(&a.ln()?)?.sum_to_shape(b.shape())
                })?,
            ])
        })
    }

    /// Element-wise maximum; ties send the gradient to `self`.
    #[track_caller]
    pub fn maximum(&self, other: &Var<T>) -> Result<Var<T>> {
        let v = self.value.maximum(&other.value)?;
        record("maximum", &[self, other], v, |c| {
            pick_grads(c.inputs, c.grad, true)
        })
    }

    /// Element-wise minimum; ties send the gradient to `self`.
    #[track_caller]
    pub fn minimum(&self, other: &Var<T>) -> Result<Var<T>> {
        let v = self.value.minimum(&other.value)?;
        record("minimum", &[self, other], v, |c| {
            pick_grads(c.inputs, c.grad, false)
        })
    }

    /// `on_true` where `cond` is non-zero, `on_false` elsewhere (all broadcast); the
    /// condition is a constant mask.
    #[track_caller]
    pub fn select(cond: &Tensor<T>, on_true: &Var<T>, on_false: &Var<T>) -> Result<Var<T>> {
        let v = Tensor::select(cond, &on_true.value, &on_false.value)?;
        let cond = cond.clone();
        record("select", &[on_true, on_false], v, move |c| {
            let (a, b) = (&c.inputs[0], &c.inputs[1]);
            let zero = Var::constant(Tensor::zeros_like(c.grad.value()));
            Ok(vec![
                for_input(a, || {
                    Var::select(&cond, c.grad, &zero)?.sum_to_shape(a.shape())
                })?,
                for_input(b, || {
                    Var::select(&cond, &zero, c.grad)?.sum_to_shape(b.shape())
                })?,
            ])
        })
    }
}

/// Gradients of maximum (`max = true`) or minimum: to `a` where it won (ties
/// included), to `b` elsewhere.
fn pick_grads<T: Element>(
    inputs: &[Var<T>],
    grad: &Var<T>,
    max: bool,
) -> Result<Vec<Option<Var<T>>>> {
    let (a, b) = (&inputs[0], &inputs[1]);
    let won = if max {
        a.value.ge(&b.value)?
    } else {
        a.value.le(&b.value)?
    };
    let lost = won.neg().add_scalar(1.0);
    let (won, lost) = (Var::constant(won), Var::constant(lost));
    Ok(vec![
        for_input(a, || grad.mul(&won)?.sum_to_shape(a.shape()))?,
        for_input(b, || grad.mul(&lost)?.sum_to_shape(b.shape()))?,
    ])
}
