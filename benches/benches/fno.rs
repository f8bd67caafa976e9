//! The Fourier neural operator: forward + backward per batch at the reference Burgers
//! size (s = 1024, width 64, 16 modes, 4 layers, batch 20, f32), and one spectral
//! convolution by FFT and by the truncated-DFT product across mode counts (which
//! decides `SpectralPath::Auto`). The JAX peer is `benches/peers/jax_fno_step.py`.
//!
//! Run: `cargo bench -p benches --bench fno`.

// criterion_group! generates an undocumented public function.
#![allow(missing_docs)]

use autograd::{backward, Var};
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};
use nn::{Fno, FnoConfig, Module, ParamStore, SpectralConv1d, SpectralPath};
use std::time::Duration;
use tensor::{Rng, Tensor};

fn spectral_paths(c: &mut Criterion) {
    let mut g = c.benchmark_group("spectral_conv1d_fwd_bwd_f32_b20_c64");
    g.sample_size(10)
        .measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_millis(300));
    let mut rng = Rng::new(0);
    for &s in &[256usize, 1024, 4096] {
        let x = Var::leaf(Tensor::<f32>::rand_normal(&[20, 64, s], 0.0, 1.0, &mut rng).unwrap());
        for &modes in &[8usize, 16, 32, 64] {
            for (name, path) in [("fft", SpectralPath::Fft), ("dft", SpectralPath::Dft)] {
                let store = ParamStore::<f32>::new();
                let layer =
                    SpectralConv1d::new(&store.root(), 64, 64, modes, path, &mut rng).unwrap();
                let id = format!("s{s}_m{modes}");
                g.bench_with_input(BenchmarkId::new(name, &id), &id, |b, _| {
                    b.iter(|| {
                        let y = layer.forward(&x).unwrap().sum_all().unwrap();
                        black_box(backward(&y).unwrap())
                    })
                });
            }
        }
    }
    g.finish();
}

fn fno_step(c: &mut Criterion) {
    let mut g = c.benchmark_group("fno1d_fwd_bwd_f32");
    g.sample_size(10)
        .measurement_time(Duration::from_secs(4))
        .warm_up_time(Duration::from_millis(500));
    let mut rng = Rng::new(1);
    for (name, path) in [("auto", SpectralPath::Auto), ("fft", SpectralPath::Fft)] {
        let store = ParamStore::<f32>::new();
        let cfg = FnoConfig {
            path,
            ..FnoConfig::burgers()
        };
        let fno = Fno::new(&store.root(), cfg, &mut rng).unwrap();
        let x =
            Var::constant(Tensor::<f32>::rand_normal(&[20, 1024, 1], 0.0, 1.0, &mut rng).unwrap());
        let y = Tensor::<f32>::rand_normal(&[20, 1024, 1], 0.0, 1.0, &mut rng).unwrap();
        g.bench_function(BenchmarkId::new(name, "s1024_w64_m16_l4_b20"), |b| {
            b.iter(|| {
                let loss = fno
                    .forward(&x)
                    .unwrap()
                    .sub(&Var::constant(y.clone()))
                    .unwrap()
                    .square()
                    .unwrap()
                    .mean_all()
                    .unwrap();
                black_box(backward(&loss).unwrap())
            })
        });
    }
    g.finish();
}

criterion_group!(benches, spectral_paths, fno_step);
criterion_main!(benches);
