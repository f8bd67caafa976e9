//! Linear algebra (Cholesky, eigh, QR; GFLOP/s against our GEMM at the same size)
//! and FFTs side by side with rustfft.
//!
//! Run: `cargo bench -p benches --bench linalg_fft`; the linear algebra side by side
//! with NumPy's LAPACK: `benches/peers/compare.sh linalg`.

// criterion_group! generates an undocumented public function.
#![allow(missing_docs)]

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rustfft::num_complex::Complex;
use rustfft::FftPlanner;
use std::time::Duration;
use tensor::fft::{FftPlan, Norm};
use tensor::{Rng, Tensor};

fn spd(n: usize) -> Tensor<f64> {
    let m = Tensor::<f64>::rand_normal(&[n, n], 0.0, 1.0, &mut Rng::new(n as u64)).unwrap();
    m.matmul(&m.t().unwrap())
        .unwrap()
        .div_scalar(n as f64)
        .add(&Tensor::eye(n).unwrap())
        .unwrap()
}

fn linalg(c: &mut Criterion) {
    let mut g = c.benchmark_group("linalg_f64");
    g.sample_size(10).measurement_time(Duration::from_secs(3));
    for &n in &[64usize, 256, 512] {
        let a = spd(n);
        let nf = n as u64;
        // Throughput in flops: n³/3 for Cholesky, 2n³ for GEMM, 4n³/3 for QR of a
        // square matrix, ~9n³ for eigh with vectors (tridiagonalisation + QL).
        cholesky_and_gemm(&mut g, &a, n);
        g.throughput(Throughput::Elements(4 * nf * nf * nf / 3));
        g.bench_with_input(BenchmarkId::new("qr", n), &n, |b, _| {
            b.iter(|| black_box(a.qr().unwrap()))
        });
        g.throughput(Throughput::Elements(9 * nf * nf * nf));
        g.bench_with_input(BenchmarkId::new("eigh", n), &n, |b, _| {
            b.iter(|| black_box(a.eigh().unwrap()))
        });
    }
    // Cholesky beside the GEMM at n = 1024, where a factorisation's team of threads
    // (`parallel::with_team`) pays the most.
    cholesky_and_gemm(&mut g, &spd(1024), 1024);
    g.finish();
}

/// Cholesky of the order-`n` SPD `a` and the product `a·a`, each with its flops as
/// throughput (n³/3 and 2n³): the factorisation's rate against the GEMM's.
fn cholesky_and_gemm(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    a: &Tensor<f64>,
    n: usize,
) {
    let nf = n as u64;
    g.throughput(Throughput::Elements(nf * nf * nf / 3));
    g.bench_with_input(BenchmarkId::new("cholesky", n), &n, |b, _| {
        b.iter(|| black_box(a.cholesky().unwrap()))
    });
    g.throughput(Throughput::Elements(2 * nf * nf * nf));
    g.bench_with_input(BenchmarkId::new("gemm", n), &n, |b, _| {
        b.iter(|| black_box(a.matmul(a).unwrap()))
    });
}

fn fft(c: &mut Criterion) {
    let mut g = c.benchmark_group("fft_f32");
    g.sample_size(20).measurement_time(Duration::from_secs(2));
    let mut planner = FftPlanner::<f32>::new();
    for &n in &[64usize, 256, 1024, 4096] {
        let mut rng = Rng::new(n as u64);
        let z = Tensor::<f32>::rand_normal(&[n, 2], 0.0, 1.0, &mut rng).unwrap();
        let x = Tensor::<f32>::rand_normal(&[n], 0.0, 1.0, &mut rng).unwrap();
        g.throughput(Throughput::Elements(n as u64));
        g.bench_with_input(BenchmarkId::new("complex_ours", n), &n, |b, _| {
            b.iter(|| black_box(z.fft(0, Norm::Backward).unwrap()))
        });
        // The same transform through a kept plan on split buffers reused in place:
        // the like-for-like figure against rustfft's `process`.
        let mut ours = FftPlan::<f32>::new(n).expect("a bench size");
        let zv = z.to_vec();
        let mut re: Vec<f32> = zv.iter().step_by(2).copied().collect();
        let mut im: Vec<f32> = zv.iter().skip(1).step_by(2).copied().collect();
        g.bench_with_input(BenchmarkId::new("complex_plan_ours", n), &n, |b, _| {
            b.iter(|| {
                ours.forward(&mut re, &mut im).unwrap();
                black_box((&re, &im));
            })
        });
        let plan = planner.plan_fft_forward(n);
        let mut buf: Vec<Complex<f32>> = z
            .to_vec()
            .chunks(2)
            .map(|c| Complex::new(c[0], c[1]))
            .collect();
        g.bench_with_input(BenchmarkId::new("complex_rustfft", n), &n, |b, _| {
            b.iter(|| {
                plan.process(&mut buf);
                black_box(&buf);
            })
        });
        g.bench_with_input(BenchmarkId::new("real_ours", n), &n, |b, _| {
            b.iter(|| black_box(x.rfft(0, Norm::Backward).unwrap()))
        });
        let spectrum = x.rfft(0, Norm::Backward).unwrap();
        g.bench_with_input(BenchmarkId::new("inverse_real_ours", n), &n, |b, _| {
            b.iter(|| black_box(spectrum.irfft(0, n, Norm::Backward).unwrap()))
        });
        // rustfft has no real transform: the usual route is a complex transform of
        // the real signal (or of half length with post-processing, as ours does).
        let mut rbuf: Vec<Complex<f32>> =
            x.to_vec().iter().map(|&v| Complex::new(v, 0.0)).collect();
        g.bench_with_input(
            BenchmarkId::new("real_as_complex_rustfft", n),
            &n,
            |b, _| {
                b.iter(|| {
                    plan.process(&mut rbuf);
                    black_box(&rbuf);
                })
            },
        );
    }
    // A batch of 1024 rows of length 1024.
    let mut rng = Rng::new(7);
    let z = Tensor::<f32>::rand_normal(&[1024, 1024, 2], 0.0, 1.0, &mut rng).unwrap();
    g.throughput(Throughput::Elements(1024 * 1024));
    // Ours at 1 and 2 threads (rows split across threads); rustfft on one.
    benches::at_thread_counts(&mut g, "batch1024x1024_complex_ours", &[1, 2], || {
        black_box(z.fft(1, Norm::Backward).unwrap());
    });
    // The real transform of the same number of rows, and its inverse: about half
    // the complex one's work.
    let x = Tensor::<f32>::rand_normal(&[1024, 1024], 0.0, 1.0, &mut rng).unwrap();
    benches::at_thread_counts(&mut g, "batch1024x1024_real_ours", &[1, 2], || {
        black_box(x.rfft(1, Norm::Backward).unwrap());
    });
    let spectrum = x.rfft(1, Norm::Backward).unwrap();
    benches::at_thread_counts(&mut g, "batch1024x1024_inverse_real_ours", &[1, 2], || {
        black_box(spectrum.irfft(1, 1024, Norm::Backward).unwrap());
    });
    let plan = planner.plan_fft_forward(1024);
    let mut buf: Vec<Complex<f32>> = z
        .to_vec()
        .chunks(2)
        .map(|c| Complex::new(c[0], c[1]))
        .collect();
    g.bench_function("batch1024x1024_complex_rustfft", |b| {
        b.iter(|| {
            plan.process(&mut buf);
            black_box(&buf);
        })
    });
    // 64 rows of 1024, which stay in the L2 cache (the big batch above is bound by
    // memory): the transforms' own cost, complex against real, on one thread.
    let z64 = Tensor::<f32>::rand_normal(&[64, 1024, 2], 0.0, 1.0, &mut rng).unwrap();
    let x64 = Tensor::<f32>::rand_normal(&[64, 1024], 0.0, 1.0, &mut rng).unwrap();
    let spectrum64 = x64.rfft(1, Norm::Backward).unwrap();
    g.throughput(Throughput::Elements(64 * 1024));
    g.bench_function("batch64x1024_complex_ours", |b| {
        b.iter(|| black_box(z64.fft(1, Norm::Backward).unwrap()))
    });
    g.bench_function("batch64x1024_real_ours", |b| {
        b.iter(|| black_box(x64.rfft(1, Norm::Backward).unwrap()))
    });
    g.bench_function("batch64x1024_inverse_real_ours", |b| {
        b.iter(|| black_box(spectrum64.irfft(1, 1024, Norm::Backward).unwrap()))
    });
    g.finish();
}

criterion_group!(benches, linalg, fft);
criterion_main!(benches);
