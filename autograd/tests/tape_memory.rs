//! The tape is released every step: live nodes stay flat over a training loop.
//! (A test binary of its own, as the node counter is process-wide.)

use autograd::{backward, live_nodes, no_grad, Var};
use tensor::{Rng, Tensor};

#[test]
fn live_nodes_stay_flat_over_1000_steps() {
    let mut rng = Rng::new(0);
    let x = Tensor::<f64>::rand_normal(&[32, 4], 0.0, 1.0, &mut rng).unwrap();
    let y = x.sum(&[1], true).unwrap().sin();
    let mut w1 = Tensor::<f64>::rand_normal(&[4, 16], 0.0, 0.5, &mut rng).unwrap();
    let mut w2 = Tensor::<f64>::rand_normal(&[16, 1], 0.0, 0.5, &mut rng).unwrap();
    let mut counts = vec![];
    let mut losses = vec![];
    for step in 0..1000 {
        let (p1, p2) = (Var::leaf(w1.clone()), Var::leaf(w2.clone()));
        let h = Var::constant(x.clone())
            .matmul(&p1)
            .unwrap()
            .tanh()
            .unwrap();
        let out = h.matmul(&p2).unwrap();
        let loss = out
            .sub(&Var::constant(y.clone()))
            .unwrap()
            .square()
            .unwrap()
            .mean_all()
            .unwrap();
        let g = backward(&loss).unwrap();
        no_grad(|| {
            w1 = w1.sub(&g.get(&p1).unwrap().mul_scalar(0.1)).unwrap();
            w2 = w2.sub(&g.get(&p2).unwrap().mul_scalar(0.1)).unwrap();
        });
        losses.push(loss.item().unwrap());
        drop((p1, p2, h, out, loss, g));
        if step % 100 == 99 {
            counts.push(live_nodes());
        }
    }
    assert!(
        counts.iter().all(|&c| c == counts[0]),
        "live nodes grew: {counts:?}"
    );
    assert_eq!(counts[0], 0, "every node was released");
    assert!(
        losses[999] < 0.5 * losses[0],
        "the loop trains: {} -> {}",
        losses[0],
        losses[999]
    );
}
