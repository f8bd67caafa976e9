//! Matrix products against a triple loop, including empty and unit dimensions,
//! transposed views and broadcast batch axes.

use crate::common;

use common::*;
use proptest::prelude::*;
use tensor::strategies::layout_recipe;
use tensor::Tensor;

fn naive(a: &Tensor<f64>, b: &Tensor<f64>) -> (Vec<usize>, Vec<f64>) {
    let (sa, sb) = (a.shape(), b.shape());
    let (m, k, n) = (sa[sa.len() - 2], sa[sa.len() - 1], sb[sb.len() - 1]);
    let batch =
        tensor::layout::broadcast_shapes("t", &sa[..sa.len() - 2], &sb[..sb.len() - 2]).unwrap();
    let mut shape = batch.clone();
    shape.extend([m, n]);
    let mut out = vec![];
    for bi in indices(&batch) {
        let ia = broadcast_index(&bi, &sa[..sa.len() - 2]);
        let ib = broadcast_index(&bi, &sb[..sb.len() - 2]);
        for i in 0..m {
            for j in 0..n {
                let mut s = 0.0;
                for p in 0..k {
                    let mut x = ia.clone();
                    x.extend([i, p]);
                    let mut y = ib.clone();
                    y.extend([p, j]);
                    s += at(a, &x) * at(b, &y);
                }
                out.push(s);
            }
        }
    }
    (shape, out)
}

fn dims() -> impl Strategy<Value = usize> {
    prop_oneof![Just(0usize), Just(1usize), 2usize..9, 30usize..70]
}

proptest! {
    #![proptest_config(config(80))]

    #[test]
    fn matmul_matches_the_triple_loop(
        m in dims(), k in dims(), n in dims(),
        batch_a in proptest::collection::vec(1usize..3, 0..3),
        ones in proptest::collection::vec(any::<bool>(), 3),
        ra in layout_recipe(5, false), rb in layout_recipe(5, false),
    ) {
        let batch_b: Vec<usize> = batch_a.iter().zip(&ones).map(|(&d, &o)| if o { 1 } else { d }).collect();
        let mut sa = batch_a.clone(); sa.extend([m, k]);
        let mut sb = batch_b.clone(); sb.extend([k, n]);
        let cut = |r: &tensor::strategies::LayoutRecipe, len: usize| {
            // Keep the permutation of the trailing axes only among themselves, so that
            // transposed matrices come up often.
            let mut perm: Vec<usize> = r.perm.iter().cloned().filter(|&p| p < len).collect();
            if perm.len() < len { perm = (0..len).collect(); }
            tensor::strategies::LayoutRecipe {
                perm,
                steps: r.steps[..len].to_vec(),
                flips: r.flips[..len].to_vec(),
                broadcast: vec![false; len],
                seed: r.seed,
            }
        };
        let a = cut(&ra, sa.len()).build::<f64>(&sa);
        let b = cut(&rb, sb.len()).build::<f64>(&sb);
        let got = a.matmul(&b).unwrap();
        let (shape, want) = naive(&a, &b);
        prop_assert_eq!(got.shape(), &shape[..]);
        assert_close(&logical(&got), &want, 1e-12, 1e-12, "matmul");
    }
}

#[test]
fn transposed_views_cost_no_copy_and_give_the_same_product() {
    let mut rng = tensor::Rng::new(5);
    let a = Tensor::<f64>::rand_normal(&[40, 30], 0.0, 1.0, &mut rng).unwrap();
    let b = Tensor::<f64>::rand_normal(&[40, 20], 0.0, 1.0, &mut rng).unwrap();
    let at_ = a.t().unwrap();
    assert!(at_.shares_storage(&a) && !at_.is_contiguous());
    let got = at_.matmul(&b).unwrap();
    let want = at_.contiguous().matmul(&b).unwrap();
    assert_close(&got.to_vec(), &want.to_vec(), 1e-13, 1e-13, "aᵀb");
}
