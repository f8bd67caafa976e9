//! proptest strategies for shapes, broadcast-compatible shape pairs and tensors in
//! arbitrary layouts (permuted, sliced with steps, flipped, broadcast), so that
//! property tests exercise the strided paths and not only contiguous data.
//!
//! Enabled by the `proptest` feature.

use crate::element::Element;
use crate::rng::Rng;
use crate::tensor::Tensor;
use proptest::prelude::*;

/// Shapes of rank `0..=max_rank` with each axis in `0..=max_dim`.
pub fn shape(max_rank: usize, max_dim: usize) -> impl Strategy<Value = Vec<usize>> {
    proptest::collection::vec(0..=max_dim, 0..=max_rank)
}

/// Shapes with no zero-sized axis.
pub fn nonempty_shape(max_rank: usize, max_dim: usize) -> impl Strategy<Value = Vec<usize>> {
    proptest::collection::vec(1..=max_dim.max(1), 0..=max_rank)
}

/// Two shapes that broadcast together: a result shape, with some leading axes
/// dropped and some axes set to 1 in each operand.
pub fn broadcast_pair(
    max_rank: usize,
    max_dim: usize,
) -> impl Strategy<Value = (Vec<usize>, Vec<usize>)> {
    shape(max_rank, max_dim).prop_flat_map(|full| {
        let r = full.len();
        (
            Just(full),
            0..=r,
            0..=r,
            proptest::collection::vec(any::<bool>(), r),
            proptest::collection::vec(any::<bool>(), r),
        )
            .prop_map(|(full, drop_a, drop_b, ones_a, ones_b)| {
                let make = |drop: usize, ones: &[bool]| -> Vec<usize> {
                    full.iter()
                        .zip(ones)
                        .skip(drop)
                        .map(|(&d, &one)| if one { 1 } else { d })
                        .collect()
                };
                (make(drop_a, &ones_a), make(drop_b, &ones_b))
            })
    })
}

/// How a strided view of a given shape is built from fresh storage.
#[derive(Clone, Debug)]
pub struct LayoutRecipe {
    /// Order in which the axes are stored.
    pub perm: Vec<usize>,
    /// Step of the slice taken along each axis.
    pub steps: Vec<usize>,
    /// Axes that are flipped.
    pub flips: Vec<bool>,
    /// Axes that are broadcast from size 1.
    pub broadcast: Vec<bool>,
    /// Seed of the values.
    pub seed: u64,
}

/// A recipe for a view of rank `rank`; `allow_broadcast` permits stride-0 axes (whose
/// elements alias one another).
pub fn layout_recipe(rank: usize, allow_broadcast: bool) -> impl Strategy<Value = LayoutRecipe> {
    (
        Just((0..rank).collect::<Vec<usize>>()).prop_shuffle(),
        proptest::collection::vec(1usize..=3, rank),
        proptest::collection::vec(any::<bool>(), rank),
        proptest::collection::vec(any::<bool>(), rank),
        any::<u64>(),
    )
        .prop_map(move |(perm, steps, flips, bc, seed)| LayoutRecipe {
            perm,
            steps,
            flips,
            broadcast: if allow_broadcast {
                bc
            } else {
                vec![false; rank]
            },
            seed,
        })
}

impl LayoutRecipe {
    /// Builds a tensor of `shape` with values uniform in [-3, 3), laid out as the
    /// recipe says.
    pub fn build<T: Element>(&self, shape: &[usize]) -> Tensor<T> {
        let r = shape.len();
        let src: Vec<usize> = (0..r)
            .map(|i| {
                if self.broadcast[i] {
                    1.min(shape[i])
                } else {
                    shape[i]
                }
            })
            .collect();
        let big: Vec<usize> = (0..r)
            .map(|i| {
                if src[i] == 0 {
                    0
                } else {
                    (src[i] - 1) * self.steps[i] + 1
                }
            })
            .collect();
        let stored: Vec<usize> = self.perm.iter().map(|&p| big[p]).collect();
        let mut rng = Rng::new(self.seed);
        let base = Tensor::<T>::rand_uniform(&stored, -3.0, 3.0, &mut rng).expect("valid shape");
        let mut inv = vec![0isize; r];
        for (j, &p) in self.perm.iter().enumerate() {
            inv[p] = j as isize;
        }
        let mut t = base.permute(&inv).expect("permutation");
        for i in 0..r {
            t = t
                .slice(i as isize, 0, big[i], self.steps[i])
                .expect("in range");
        }
        let flips: Vec<isize> = (0..r)
            .filter(|&i| self.flips[i])
            .map(|i| i as isize)
            .collect();
        t = t.flip(&flips).expect("axes in range");
        t.broadcast_to(shape).expect("broadcastable")
    }
}

/// A tensor of exactly `shape` in an arbitrary layout (no broadcast axes).
pub fn tensor_with_shape<T: Element>(shape: Vec<usize>) -> impl Strategy<Value = Tensor<T>> {
    layout_recipe(shape.len(), false).prop_map(move |r| r.build(&shape))
}

/// A tensor of exactly `shape` in an arbitrary layout, broadcast axes included.
pub fn tensor_with_shape_bcast<T: Element>(shape: Vec<usize>) -> impl Strategy<Value = Tensor<T>> {
    layout_recipe(shape.len(), true).prop_map(move |r| r.build(&shape))
}

/// A tensor of arbitrary shape (rank ≤ `max_rank`, axes ≤ `max_dim`) and layout.
pub fn tensor<T: Element>(max_rank: usize, max_dim: usize) -> impl Strategy<Value = Tensor<T>> {
    shape(max_rank, max_dim).prop_flat_map(tensor_with_shape_bcast::<T>)
}
