//! Whole networks. Image classifiers (the CIFAR variants used by the LLQR+SAM and
//! closed-form papers: ResNet-18/34, VGG16-BN, wide ResNets; and the ViT), each a
//! backbone ending in a pooled feature vector and a linear head, so the head can be
//! replaced by a closed-form one; and the encoder–decoder Transformer.

pub mod resnet;
pub mod transformer;
pub mod vgg;
pub mod vit;
pub mod wide_resnet;

use crate::module::Module;
use crate::Linear;
use autograd::Var;
use tensor::{Element, Result};

/// A classifier whose last layer is a linear map of pooled features.
pub trait Classifier<T: Element>: Module<T> {
    /// The pooled features `[N, D]` the head acts on.
    fn features(&self, x: &Var<T>) -> Result<Var<T>>;
    /// The linear head (D → classes).
    fn head(&self) -> &Linear<T>;
}
