//! Views and indexing ops against the naive reference, on arbitrary layouts.

use crate::common;

use common::*;
use proptest::prelude::*;
use tensor::strategies::{nonempty_shape, tensor, tensor_with_shape, tensor_with_shape_bcast};
use tensor::{Rng, Tensor};

proptest! {
    #![proptest_config(config(96))]

    #[test]
    fn views_read_the_right_elements(t in tensor::<f64>(4, 5), seed in any::<u64>()) {
        let mut rng = Rng::new(seed);
        let nd = t.ndim();
        // permute by a random permutation
        let perm = rng.permutation(nd);
        let p = t.permute(&perm.iter().map(|&a| a as isize).collect::<Vec<_>>()).unwrap();
        for idx in indices(p.shape()) {
            let mut src = vec![0; nd];
            for (j, &a) in perm.iter().enumerate() { src[a] = idx[j]; }
            prop_assert_eq!(at(&p, &idx), at(&t, &src));
        }
        if nd == 0 { return Ok(()); }
        let ax = rng.below(nd as u64).unwrap() as usize;
        let d = t.shape()[ax];
        // strided slice
        let start = if d == 0 { 0 } else { rng.below(d as u64).unwrap() as usize };
        let step = 1 + rng.below(3).unwrap() as usize;
        let s = t.slice(ax as isize, start, d, step).unwrap();
        prop_assert_eq!(s.shape()[ax], (d - start).div_ceil(step));
        for idx in indices(s.shape()) {
            let mut src = idx.clone();
            src[ax] = start + idx[ax] * step;
            prop_assert_eq!(at(&s, &idx), at(&t, &src));
        }
        // flip
        let f = t.flip(&[ax as isize]).unwrap();
        for idx in indices(f.shape()) {
            let mut src = idx.clone();
            src[ax] = d - 1 - idx[ax];
            prop_assert_eq!(at(&f, &idx), at(&t, &src));
        }
        // unsqueeze then squeeze is the identity
        let u = t.unsqueeze(ax as isize).unwrap();
        prop_assert_eq!(u.shape()[ax], 1);
        prop_assert_eq!(logical(&u.squeeze(ax as isize).unwrap()), logical(&t));
        // reshape to flat and back; contiguous keeps the logical order
        let flat_t = t.reshape(&[t.numel()]).unwrap();
        prop_assert_eq!(logical(&flat_t), logical(&t));
        prop_assert_eq!(logical(&flat_t.reshape(t.shape()).unwrap()), logical(&t));
        prop_assert_eq!(logical(&t.contiguous()), logical(&t));
        prop_assert!(t.contiguous().is_contiguous());
    }

    #[test]
    fn index_select_and_gather_match_the_reference(
        t in nonempty_shape(3, 4).prop_flat_map(tensor_with_shape_bcast::<f64>),
        seed in any::<u64>(),
    ) {
        prop_assume!(t.ndim() > 0);
        let mut rng = Rng::new(seed);
        let ax = rng.below(t.ndim() as u64).unwrap() as usize;
        let d = t.shape()[ax];
        let picks: Vec<usize> = (0..5).map(|_| rng.below(d as u64).unwrap() as usize).collect();
        let s = t.index_select(ax as isize, &picks).unwrap();
        for idx in indices(s.shape()) {
            let mut src = idx.clone();
            src[ax] = picks[idx[ax]];
            prop_assert_eq!(at(&s, &idx), at(&t, &src));
        }
        // gather with an index tensor of the same shape (and one smaller off-axis)
        let mut ishape = t.shape().to_vec();
        ishape[ax] = 3;
        if ax + 1 < ishape.len() && ishape[ax + 1] > 1 { ishape[ax + 1] -= 1; }
        let n: usize = ishape.iter().product();
        let iv: Vec<usize> = (0..n).map(|_| rng.below(d as u64).unwrap() as usize).collect();
        let index = Tensor::from_vec(iv.clone(), &ishape).unwrap();
        let g = t.gather(ax as isize, &index).unwrap();
        for (k, idx) in indices(&ishape).iter().enumerate() {
            let mut src = idx.clone();
            src[ax] = iv[k];
            prop_assert_eq!(at(&g, idx), at(&t, &src));
        }
        // scatter_add is the adjoint of gather: <gather(x), y> = <x, scatter_add(0, y)>
        let y = Tensor::<f64>::rand_normal(&ishape, 0.0, 1.0, &mut rng).unwrap();
        let zeros = Tensor::<f64>::zeros(t.shape()).unwrap();
        let sc = zeros.scatter_add(ax as isize, &index, &y).unwrap();
        let lhs: f64 = logical(&g).iter().zip(logical(&y)).map(|(a, b)| a * b).sum();
        let rhs: f64 = logical(&t.contiguous()).iter().zip(logical(&sc)).map(|(a, b)| a * b).sum();
        prop_assert!((lhs - rhs).abs() <= 1e-12 * (1.0 + lhs.abs()));
    }

    #[test]
    fn cat_split_stack_and_pad_match_the_reference(
        shape in nonempty_shape(3, 4),
        seed in any::<u64>(),
    ) {
        prop_assume!(!shape.is_empty());
        let mut rng = Rng::new(seed);
        let ax = rng.below(shape.len() as u64).unwrap() as usize;
        let mut s2 = shape.clone();
        s2[ax] += 2;
        let a = Tensor::<f64>::rand_normal(&shape, 0.0, 1.0, &mut rng).unwrap().flip(&[0]).unwrap();
        let b = Tensor::<f64>::rand_normal(&s2, 0.0, 1.0, &mut rng).unwrap();
        let c = Tensor::cat(&[&a, &b], ax as isize).unwrap();
        for idx in indices(c.shape()) {
            let want = if idx[ax] < shape[ax] { at(&a, &idx) } else {
                let mut i = idx.clone(); i[ax] -= shape[ax]; at(&b, &i)
            };
            prop_assert_eq!(at(&c, &idx), want);
        }
        let parts = c.split(ax as isize, &[shape[ax], s2[ax]]).unwrap();
        prop_assert_eq!(logical(&parts[0]), logical(&a));
        prop_assert_eq!(logical(&parts[1]), logical(&b));
        let chunks = c.chunk(2, ax as isize).unwrap();
        let rejoined = Tensor::cat(&chunks.iter().collect::<Vec<_>>(), ax as isize).unwrap();
        prop_assert_eq!(logical(&rejoined), logical(&c));
        let st = Tensor::stack(&[&a, &a], ax as isize).unwrap();
        prop_assert_eq!(st.shape()[ax], 2);
        for idx in indices(st.shape()) {
            let mut i = idx.clone(); i.remove(ax);
            prop_assert_eq!(at(&st, &idx), at(&a, &i));
        }
        let pads: Vec<(usize, usize)> = (0..shape.len()).map(|_| (rng.below(3).unwrap() as usize, rng.below(3).unwrap() as usize)).collect();
        let p = a.pad(&pads, -9.0).unwrap();
        for idx in indices(p.shape()) {
            let inside = idx.iter().zip(&pads).zip(&shape).all(|((&i, &(b, _)), &d)| i >= b && i < b + d);
            let want = if inside {
                let i: Vec<usize> = idx.iter().zip(&pads).map(|(&i, &(b, _))| i - b).collect();
                at(&a, &i)
            } else { -9.0 };
            prop_assert_eq!(at(&p, &idx), want);
        }
        let reps: Vec<usize> = (0..shape.len()).map(|_| 1 + rng.below(2).unwrap() as usize).collect();
        let r = a.repeat(&reps).unwrap();
        for idx in indices(r.shape()) {
            let i: Vec<usize> = idx.iter().zip(&shape).map(|(&i, &d)| i % d).collect();
            prop_assert_eq!(at(&r, &idx), at(&a, &i));
        }
    }

    #[test]
    fn broadcast_views_alias_without_copying(t in tensor_with_shape::<f64>(vec![3, 1])) {
        let b = t.broadcast_to(&[2, 3, 4]).unwrap();
        prop_assert!(b.shares_storage(&t));
        for idx in indices(b.shape()) {
            prop_assert_eq!(at(&b, &idx), at(&t, &[idx[1], 0]));
        }
    }
}

#[test]
fn one_hot_rows_are_identity_rows() {
    let t = Tensor::<f32>::one_hot(&[2, 0, 1], 3).unwrap();
    assert_eq!(t.to_vec(), vec![0., 0., 1., 1., 0., 0., 0., 1., 0.]);
    let e = Tensor::<f32>::one_hot(&[3], 3).unwrap_err();
    assert_eq!(
        e.to_string(),
        "one_hot: index 3 is out of range for axis 1 of length 3"
    );
}

#[test]
fn index_add_and_slice_assign_are_the_adjoints_of_their_selections() {
    let mut rng = Rng::new(21);
    let x = Tensor::<f64>::rand_normal(&[5, 3], 0.0, 1.0, &mut rng).unwrap();
    let idx = [4, 0, 4];
    let y = Tensor::<f64>::rand_normal(&[3, 3], 0.0, 1.0, &mut rng).unwrap();
    // ⟨index_select(x), y⟩ = ⟨x, index_add(0, y)⟩
    let lhs = x
        .index_select(0, &idx)
        .unwrap()
        .mul(&y)
        .unwrap()
        .sum_all()
        .item()
        .unwrap();
    let rhs = x
        .mul(
            &Tensor::zeros(&[5, 3])
                .unwrap()
                .index_add(0, &idx, &y)
                .unwrap(),
        )
        .unwrap()
        .sum_all()
        .item()
        .unwrap();
    assert!((lhs - rhs).abs() < 1e-12);
    // slice_assign writes exactly the stepped slice.
    let z = Tensor::<f64>::rand_normal(&[2, 3], 0.0, 1.0, &mut rng).unwrap();
    let out = Tensor::<f64>::zeros(&[5, 3])
        .unwrap()
        .slice_assign(0, 1, 2, &z)
        .unwrap();
    assert_eq!(logical(&out.slice(0, 1, 5, 2).unwrap()), logical(&z));
    assert!((out.sum_all().item().unwrap() - z.sum_all().item().unwrap()).abs() < 1e-14);
    assert!(Tensor::<f64>::zeros(&[5, 3])
        .unwrap()
        .slice_assign(0, 4, 2, &z)
        .is_err());
    assert!(Tensor::<f64>::zeros(&[5, 3])
        .unwrap()
        .index_add(0, &[5], &Tensor::zeros(&[1, 3]).unwrap())
        .is_err());
}

proptest! {
    #![proptest_config(config(24))]

    /// Permuted views big enough for the tiled transposed copy (sizes that straddle
    /// the 32-row tiles and the batch boundaries, and axes that coalesce) copy to the
    /// elements in logical order.
    #[test]
    fn large_permuted_copies_keep_the_logical_order(
        a in 1usize..5, b in 20usize..70, c in 20usize..70, perm in 0usize..6, seed in any::<u64>()
    ) {
        let perms: [[isize; 3]; 6] = [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]];
        let t = Tensor::<f64>::rand_normal(&[a, b, c], 0.0, 1.0, &mut Rng::new(seed)).unwrap();
        let v = t.permute(&perms[perm]).unwrap();
        prop_assert_eq!(logical(&v.contiguous()), logical(&v));
    }
}

/// `make_mut` writes in place only through the one handle to a whole contiguous
/// storage; a shared storage or a view is copied first (in logical order), so no
/// other tensor sees the write.
#[test]
fn make_mut_is_copy_on_write() {
    let mut a = Tensor::<f64>::from_vec((0..6).map(f64::from).collect(), &[2, 3]).unwrap();
    let ptr = a.storage().as_ptr();
    a.make_mut()[0] = 10.0;
    assert_eq!(
        a.storage().as_ptr(),
        ptr,
        "a unique tensor is written in place"
    );
    let b = a.clone();
    a.make_mut()[1] = 20.0;
    assert!(!a.shares_storage(&b));
    assert_eq!(b.to_vec(), vec![10.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    assert_eq!(a.to_vec(), vec![10.0, 20.0, 2.0, 3.0, 4.0, 5.0]);
    let mut t = b.t().unwrap();
    t.make_mut()[1] = -1.0;
    assert_eq!(t.shape(), [3, 2]);
    assert_eq!(t.to_vec(), vec![10.0, -1.0, 1.0, 4.0, 2.0, 5.0]);
    assert_eq!(b.to_vec(), vec![10.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    let mut part = b.narrow(1, 1, 2).unwrap();
    part.make_mut()[0] = 0.5;
    assert_eq!(part.to_vec(), vec![0.5, 2.0, 4.0, 5.0]);
    assert_eq!(b.to_vec()[1], 1.0);
}
