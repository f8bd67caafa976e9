//! Algebraic laws: broadcasting commutativity and associativity, transpose
//! involution, reshape round trips, nested sums.

use crate::common;

use common::*;
use proptest::prelude::*;
use tensor::strategies::{broadcast_pair, tensor, tensor_with_shape_bcast};
use tensor::Tensor;

proptest! {
    #![proptest_config(config(96))]

    #[test]
    fn broadcasting_addition_commutes_and_associates(
        ((sa, sb), sc) in (broadcast_pair(4, 3), proptest::collection::vec(1usize..2, 0..3)),
        seed in any::<u64>(),
    ) {
        let mut rng = tensor::Rng::new(seed);
        let a = Tensor::<f64>::rand_normal(&sa, 0.0, 1.0, &mut rng).unwrap();
        let b = Tensor::<f64>::rand_normal(&sb, 0.0, 1.0, &mut rng).unwrap();
        let c = Tensor::<f64>::rand_normal(&sc, 0.0, 1.0, &mut rng).unwrap();
        let ab = a.add(&b).unwrap();
        let ba = b.add(&a).unwrap();
        prop_assert!(ab.bit_eq(&ba));
        let mab = a.mul(&b).unwrap();
        prop_assert!(mab.bit_eq(&b.mul(&a).unwrap()));
        if let Ok(abc) = ab.add(&c) {
            let a_bc = a.add(&b.add(&c).unwrap()).unwrap();
            prop_assert_eq!(abc.shape(), a_bc.shape());
            assert_close(&logical(&abc), &logical(&a_bc), 1e-15, 1e-15, "assoc");
        }
    }

    #[test]
    fn transpose_is_an_involution(t in tensor::<f64>(4, 4), i in 0isize..4, j in 0isize..4) {
        prop_assume!((i as usize) < t.ndim() && (j as usize) < t.ndim());
        let tt = t.transpose(i, j).unwrap().transpose(i, j).unwrap();
        prop_assert_eq!(tt.shape(), t.shape());
        prop_assert_eq!(tt.strides(), t.strides());
        prop_assert_eq!(logical(&tt), logical(&t));
    }

    #[test]
    fn reshape_round_trips(t in tensor::<f64>(4, 4)) {
        let n = t.numel();
        let two = if n % 2 == 0 && n > 0 { vec![2, n / 2] } else { vec![n, 1] };
        let r = t.reshape(&two).unwrap().reshape(t.shape()).unwrap();
        prop_assert_eq!(logical(&r), logical(&t));
    }

    #[test]
    fn sum_over_all_axes_equals_nested_sums(t in tensor_with_shape_bcast::<f64>(vec![3, 4, 2])) {
        let all = t.sum_all().item().unwrap();
        let nested = t.sum(&[2], false).unwrap().sum(&[1], false).unwrap().sum(&[0], false).unwrap().item().unwrap();
        let together = t.sum(&[0, 1, 2], false).unwrap().item().unwrap();
        prop_assert!((all - nested).abs() <= 1e-13 * (1.0 + all.abs()));
        prop_assert!((all - together).abs() <= 1e-13 * (1.0 + all.abs()));
    }

    #[test]
    fn matmul_transposes_like_matrices(m in 1usize..6, k in 1usize..6, n in 1usize..6, seed in any::<u64>()) {
        let mut rng = tensor::Rng::new(seed);
        let a = Tensor::<f64>::rand_normal(&[m, k], 0.0, 1.0, &mut rng).unwrap();
        let b = Tensor::<f64>::rand_normal(&[k, n], 0.0, 1.0, &mut rng).unwrap();
        let ab_t = a.matmul(&b).unwrap().t().unwrap();
        let bt_at = b.t().unwrap().matmul(&a.t().unwrap()).unwrap();
        assert_close(&logical(&ab_t), &logical(&bt_at), 1e-14, 1e-14, "(ab)ᵀ = bᵀaᵀ");
    }
}
