//! `TENSOR_NO_AVX512=1` keeps the AVX-512 kernels off: the AVX2/FMA ones run
//! instead where the CPU has them, and `kernel_path()` says so. (Its own test
//! binary: the switch is read once per process.) CI runs the tensor and autograd
//! suites once more with it on AVX-512 machines, so the platform-bits fixtures hold
//! the AVX2 path there too.

use tensor::platform::{
    avx512_disabled, cpu_features, kernel_path, portable_forced, NO_AVX512_ENV,
};

#[test]
fn the_environment_variable_keeps_avx512_off() {
    std::env::set_var(NO_AVX512_ENV, "1");
    assert!(avx512_disabled());
    let path = kernel_path();
    assert_ne!(path, "avx512", "AVX-512 is switched off");
    let features = cpu_features();
    let avx2 = features.contains(&"avx2") && features.contains(&"fma");
    if cfg!(target_arch = "x86_64") && avx2 && !portable_forced() {
        assert_eq!(path, "avx2", "features {features:?}");
    }
}
