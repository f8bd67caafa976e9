//! `TENSOR_PORTABLE=1` forces the portable kernels: f32 transcendentals are then the
//! standard library's, bit for bit. (Its own test binary: the switch is read once
//! per process.)

use tensor::platform::{portable_forced, PORTABLE_ENV};
use tensor::Tensor;

#[test]
fn the_environment_variable_forces_the_portable_kernels() {
    std::env::set_var(PORTABLE_ENV, "1");
    assert!(portable_forced());
    let x: Vec<f32> = (-4000..4000).map(|i| i as f32 * 0.0217).collect();
    let t = Tensor::from_vec(x.clone(), &[x.len()]).unwrap();
    let bits = |v: Vec<f32>| v.into_iter().map(f32::to_bits).collect::<Vec<_>>();
    assert_eq!(
        bits(t.exp().to_vec()),
        bits(x.iter().map(|v| v.exp()).collect())
    );
    assert_eq!(
        bits(t.tanh().to_vec()),
        bits(x.iter().map(|v| v.tanh()).collect())
    );
}
