//! Pooling and flattening as modules (NCHW).

use crate::module::Module;
use autograd::Var;
use tensor::{Element, Result};

/// Max pooling over square windows.
#[derive(Clone, Copy, Debug)]
pub struct MaxPool2d {
    /// Window size.
    pub kernel: usize,
    /// Step between windows.
    pub stride: usize,
    /// Padding (never selected).
    pub padding: usize,
}

impl<T: Element> Module<T> for MaxPool2d {
    fn forward(&self, x: &Var<T>) -> Result<Var<T>> {
        let (k, s, p) = (self.kernel, self.stride, self.padding);
        x.max_pool2d((k, k), (s, s), (p, p))
    }
}

/// Average pooling over square windows (padding counts as zeros).
#[derive(Clone, Copy, Debug)]
pub struct AvgPool2d {
    /// Window size.
    pub kernel: usize,
    /// Step between windows.
    pub stride: usize,
    /// Padding.
    pub padding: usize,
}

impl<T: Element> Module<T> for AvgPool2d {
    fn forward(&self, x: &Var<T>) -> Result<Var<T>> {
        let (k, s, p) = (self.kernel, self.stride, self.padding);
        x.avg_pool2d((k, k), (s, s), (p, p))
    }
}

/// Adaptive average pooling to a fixed output size; `(1, 1)` is global average
/// pooling.
#[derive(Clone, Copy, Debug)]
pub struct AdaptiveAvgPool2d {
    /// Output (rows, cols).
    pub out: (usize, usize),
}

impl<T: Element> Module<T> for AdaptiveAvgPool2d {
    fn forward(&self, x: &Var<T>) -> Result<Var<T>> {
        x.adaptive_avg_pool2d(self.out)
    }
}

/// `[N, ...] → [N, prod(...)]`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Flatten;

impl<T: Element> Module<T> for Flatten {
    fn forward(&self, x: &Var<T>) -> Result<Var<T>> {
        let n = x.shape().first().copied().unwrap_or(0);
        x.reshape(&[n, x.numel() / n.max(1)])
    }
}
