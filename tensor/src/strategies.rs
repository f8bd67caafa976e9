//! proptest strategies for shapes, broadcast-compatible shape pairs and tensors in
//! arbitrary layouts (permuted, sliced with steps, flipped, broadcast), so that
//! property tests exercise the strided paths and not only contiguous data.
//!
//! The tensors' element values are drawn by proptest too, from a [`Values`]
//! profile, so a failing case shrinks in its values as well as its shape and
//! layout: towards 0 and small integers. `Values::Hostile` draws the values that
//! break numerical code (NaN with payloads, ±∞, ±0, subnormals, the type's largest
//! values, neighbours one ulp apart), mixed with ordinary ones.
//!
//! ```
//! use proptest::prelude::*;
//! use tensor::strategies::{tensor_in, Values};
//! use tensor::Tensor;
//! proptest!(|(t in tensor_in::<f64>(3, 4, Values::Integers))| {
//!     // Integer data: the sum is exact, in any order, whatever the layout.
//!     let by_hand: f64 = t.to_vec().iter().sum();
//!     prop_assert_eq!(t.sum_all().item().unwrap(), by_hand);
//! });
//! ```
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
    /// Builds a tensor of `shape` with values uniform in [-3, 3) (from the
    /// recipe's seed), laid out as the recipe says.
    pub fn build<T: Element>(&self, shape: &[usize]) -> Tensor<T> {
        let stored = self.stored_shape(shape);
        let mut rng = Rng::new(self.seed);
        let base = Tensor::<T>::rand_uniform(&stored, -3.0, 3.0, &mut rng).expect("valid shape");
        self.lay_out(base, shape)
    }

    /// Builds a tensor of `shape` laid out as the recipe says, its stored values
    /// (in storage order) cycling through `pool` (which must not be empty).
    pub fn build_cycled<T: Element>(&self, shape: &[usize], pool: &[T]) -> Tensor<T> {
        let stored = self.stored_shape(shape);
        let n: usize = stored.iter().product();
        let v: Vec<T> = pool.iter().copied().cycle().take(n).collect();
        self.lay_out(Tensor::from_vec(v, &stored).expect("valid shape"), shape)
    }

    /// The recipe for the first `rank` axes: their steps, flips and broadcasts,
    /// and the storage order of those axes as this recipe orders them.
    pub fn truncated(&self, rank: usize) -> LayoutRecipe {
        LayoutRecipe {
            perm: self.perm.iter().copied().filter(|&p| p < rank).collect(),
            steps: self.steps[..rank].to_vec(),
            flips: self.flips[..rank].to_vec(),
            broadcast: self.broadcast[..rank].to_vec(),
            seed: self.seed,
        }
    }

    /// The shape of the fresh storage the view is cut from.
    fn stored_shape(&self, shape: &[usize]) -> Vec<usize> {
        self.perm.iter().map(|&p| self.big(shape)[p]).collect()
    }

    /// Each axis's extent before slicing with steps (1 for a broadcast axis).
    fn big(&self, shape: &[usize]) -> Vec<usize> {
        (0..shape.len())
            .map(|i| {
                let src = if self.broadcast[i] {
                    1.min(shape[i])
                } else {
                    shape[i]
                };
                if src == 0 {
                    0
                } else {
                    (src - 1) * self.steps[i] + 1
                }
            })
            .collect()
    }

    /// The view of `shape` the recipe cuts from `base` (of the stored shape).
    fn lay_out<T: Element>(&self, base: Tensor<T>, shape: &[usize]) -> Tensor<T> {
        let r = shape.len();
        let big = self.big(shape);
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

/// Which element values the tensor strategies draw.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Values {
    /// Finite values in [−3, 3) (the default); they shrink towards 0.
    #[default]
    Finite,
    /// Integers in −8..=8, exactly representable in `f32` and `f64`: sums and
    /// products of a few are exact in any order, so results can be asserted bit
    /// for bit. They shrink towards 0.
    Integers,
    /// Ordinary finite values mixed with the ones that break numerical code: NaN
    /// (both signs, with a payload), ±∞, ±0, the smallest subnormal, a subnormal
    /// near the normal range, ±(largest finite of the type), and 1 with its
    /// neighbours one ulp away (ties and near-ties). Shrinks towards ordinary values.
    Hostile,
}

/// One element value of profile `values`, representable in `T` (as an `f64`).
pub fn value<T: Element>(values: Values) -> BoxedStrategy<f64> {
    match values {
        Values::Finite => (-3.0f64..3.0).prop_map(|v| T::from_f64(v).as_f64()).boxed(),
        Values::Integers => (-8i32..=8).prop_map(f64::from).boxed(),
        Values::Hostile => {
            let big = T::max_value().as_f64();
            let tiny = T::min_positive_value().as_f64();
            let eps = T::epsilon().as_f64();
            let specials: Vec<f64> = vec![
                f64::NAN,
                -f64::NAN,
                f64::from_bits(0x7ff8_0000_0000_0001),
                f64::INFINITY,
                f64::NEG_INFINITY,
                0.0,
                -0.0,
                T::from_f64(tiny * eps).as_f64(), // the smallest subnormal
                tiny * 0.5,
                big,
                -big,
                1.0,
                1.0 + eps,
                1.0 - eps / 2.0,
            ];
            prop_oneof![
                3 => (-3.0f64..3.0).prop_map(|v| T::from_f64(v).as_f64()),
                1 => proptest::sample::select(specials),
            ]
            .boxed()
        }
    }
}

/// The most distinct values a drawn tensor holds: its stored values cycle through
/// a pool of at most this many, drawn independently of its shape and layout, so
/// that shrinking the shape keeps the values and shrinking the values keeps the
/// shape (a pool regenerated with each shape would lose the failure).
pub const VALUE_POOL: usize = 256;

/// A pool of 1 to [`VALUE_POOL`] values of profile `values`, as `T`.
pub fn value_pool<T: Element>(values: Values) -> impl Strategy<Value = Vec<T>> {
    proptest::collection::vec(value::<T>(values), 1..=VALUE_POOL)
        .prop_map(|v| v.into_iter().map(T::from_f64).collect())
}

/// A tensor of exactly `shape` in an arbitrary layout (no broadcast axes).
pub fn tensor_with_shape<T: Element>(shape: Vec<usize>) -> impl Strategy<Value = Tensor<T>> {
    tensor_with_shape_in(shape, false, Values::Finite)
}

/// A tensor of exactly `shape` in an arbitrary layout, broadcast axes included.
pub fn tensor_with_shape_bcast<T: Element>(shape: Vec<usize>) -> impl Strategy<Value = Tensor<T>> {
    tensor_with_shape_in(shape, true, Values::Finite)
}

/// A tensor of exactly `shape` in an arbitrary layout (broadcast axes when
/// `allow_broadcast`), its values drawn from `values`.
pub fn tensor_with_shape_in<T: Element>(
    shape: Vec<usize>,
    allow_broadcast: bool,
    values: Values,
) -> impl Strategy<Value = Tensor<T>> {
    (
        value_pool::<T>(values),
        layout_recipe(shape.len(), allow_broadcast),
    )
        .prop_map(move |(pool, r)| r.build_cycled(&shape, &pool))
}

/// A tensor of arbitrary shape (rank ≤ `max_rank`, axes ≤ `max_dim`) and layout.
pub fn tensor<T: Element>(max_rank: usize, max_dim: usize) -> impl Strategy<Value = Tensor<T>> {
    tensor_in(max_rank, max_dim, Values::Finite)
}

/// A tensor of arbitrary shape (rank ≤ `max_rank`, axes ≤ `max_dim`) and layout,
/// its values drawn from `values`. Shape, layout and values are drawn
/// independently (the layout for `max_rank` axes, cut to the shape's rank), so
/// each shrinks on its own.
pub fn tensor_in<T: Element>(
    max_rank: usize,
    max_dim: usize,
    values: Values,
) -> impl Strategy<Value = Tensor<T>> {
    // The pool first: a tuple shrinks its parts in order, and a pool shrunk to the
    // failing values lets the shape shrink to a single element afterwards.
    (
        value_pool::<T>(values),
        shape(max_rank, max_dim),
        layout_recipe(max_rank, true),
    )
        .prop_map(|(pool, shape, r)| r.truncated(shape.len()).build_cycled(&shape, &pool))
}
