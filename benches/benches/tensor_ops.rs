//! Tensor kernels: matmul (through `Tensor::matmul` at 1 and 2 threads, and each GEMM
//! micro-kernel this CPU runs, raw on one thread; the peers' figures come from
//! `benches/peers/compare.sh sgemm`), thread scaling, element-wise
//! and reduction throughput against plain slice loops, and per-op overhead.
//!
//! Run: `cargo bench -p benches --bench tensor_ops`.

// criterion_group! generates an undocumented public function.
#![allow(missing_docs)]

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::time::Duration;
use tensor::kernels::gemm::{self, Scalar};
use tensor::kernels::MatRef;
use tensor::{Rng, Tensor};

fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
}

macro_rules! matmul_group {
    ($fn_name:ident, $t:ty, $label:expr) => {
        fn $fn_name(c: &mut Criterion) {
            let mut g = c.benchmark_group(concat!("matmul_", $label));
            g.sample_size(10).measurement_time(Duration::from_secs(3));
            let one = pool(1);
            let two = pool(2);
            for &n in &[64usize, 256, 512, 1024] {
                let mut rng = Rng::new(n as u64);
                let a = Tensor::<$t>::rand_normal(&[n, n], 0.0, 1.0, &mut rng).unwrap();
                let b = Tensor::<$t>::rand_normal(&[n, n], 0.0, 1.0, &mut rng).unwrap();
                g.throughput(Throughput::Elements((2 * n * n * n) as u64));
                g.bench_with_input(BenchmarkId::new("tensor_1thread", n), &n, |bch, _| {
                    one.install(|| bch.iter(|| black_box(a.matmul(&b).unwrap())))
                });
                g.bench_with_input(BenchmarkId::new("tensor_2threads", n), &n, |bch, _| {
                    two.install(|| bch.iter(|| black_box(a.matmul(&b).unwrap())))
                });
                let (sa, sb) = (a.as_slice().unwrap(), b.as_slice().unwrap());
                let mut out = vec![0.0 as $t; n * n];
                let view = |data| MatRef {
                    data,
                    offset: 0,
                    rows: n,
                    cols: n,
                    row_stride: n as isize,
                    col_stride: 1,
                };
                // Each micro-kernel this CPU runs, one thread, no tensor bookkeeping.
                for kern in <$t as Scalar>::kernels() {
                    let id = format!("raw_{}", kern.name);
                    g.bench_with_input(BenchmarkId::new(id, n), &n, |bch, _| {
                        bch.iter(|| {
                            let (a_t, b) = (view(sa).transposed_operand(), view(sb).operand());
                            gemm::gemm_using(kern, 1.0, &a_t, &b, 0.0, &mut out, n, false);
                            black_box(&out);
                        })
                    });
                }
            }
            g.finish();
        }
    };
}

matmul_group!(matmul_f32, f32, "f32");
matmul_group!(matmul_f64, f64, "f64");

fn batched_matmul(c: &mut Criterion) {
    let mut g = c.benchmark_group("batched_matmul_64x64");
    g.sample_size(20);
    let mut rng = Rng::new(1);
    let a = Tensor::<f32>::rand_normal(&[64, 64, 64], 0.0, 1.0, &mut rng).unwrap();
    let b = Tensor::<f32>::rand_normal(&[64, 64, 64], 0.0, 1.0, &mut rng).unwrap();
    g.throughput(Throughput::Elements(64 * 2 * 64 * 64 * 64));
    g.bench_function("batch64", |bch| {
        bch.iter(|| black_box(a.matmul(&b).unwrap()))
    });
    g.finish();
}

fn elementwise(c: &mut Criterion) {
    let mut g = c.benchmark_group("elementwise_f32");
    g.sample_size(10).measurement_time(Duration::from_secs(2));
    for &n in &[1_000usize, 100_000, 10_000_000] {
        let mut rng = Rng::new(2);
        let x = Tensor::<f32>::rand_normal(&[n], 0.0, 1.0, &mut rng).unwrap();
        let y = Tensor::<f32>::rand_normal(&[n], 0.0, 1.0, &mut rng).unwrap();
        // Bytes moved: inputs read plus output written.
        g.throughput(Throughput::Bytes((3 * n * 4) as u64));
        g.bench_with_input(BenchmarkId::new("add", n), &n, |b, _| {
            b.iter(|| black_box(x.add(&y).unwrap()))
        });
        let (xs, ys) = (x.as_slice().unwrap(), y.as_slice().unwrap());
        g.bench_with_input(BenchmarkId::new("add_plain_slice_loop", n), &n, |b, _| {
            b.iter(|| {
                let out: Vec<f32> = xs.iter().zip(ys).map(|(a, b)| a + b).collect();
                black_box(out)
            })
        });
        g.throughput(Throughput::Bytes((2 * n * 4) as u64));
        g.bench_with_input(BenchmarkId::new("exp", n), &n, |b, _| {
            b.iter(|| black_box(x.exp()))
        });
        g.bench_with_input(BenchmarkId::new("exp_plain_std_loop", n), &n, |b, _| {
            b.iter(|| black_box(xs.iter().map(|v| v.exp()).collect::<Vec<f32>>()))
        });
        g.bench_with_input(BenchmarkId::new("softplus", n), &n, |b, _| {
            b.iter(|| black_box(x.softplus()))
        });
        g.throughput(Throughput::Bytes((n * 4) as u64));
        g.bench_with_input(BenchmarkId::new("sum", n), &n, |b, _| {
            b.iter(|| black_box(x.sum_all()))
        });
        g.bench_with_input(BenchmarkId::new("logsumexp", n), &n, |b, _| {
            b.iter(|| black_box(x.logsumexp(&[0], false).unwrap()))
        });
    }
    // A bias gradient: the column sums of a batch of 128 rows (a sum over axis 0).
    let mut rng = Rng::new(3);
    let gy = Tensor::<f32>::rand_normal(&[128, 512], 0.0, 1.0, &mut rng).unwrap();
    g.throughput(Throughput::Bytes((128 * 512 * 4) as u64));
    g.bench_function("sum_axis0/128x512", |b| {
        b.iter(|| black_box(gy.sum(&[0], false).unwrap()))
    });
    g.finish();
}

fn per_op_overhead(c: &mut Criterion) {
    let mut g = c.benchmark_group("per_op_overhead");
    let mut rng = Rng::new(3);
    let x = Tensor::<f32>::rand_normal(&[16], 0.0, 1.0, &mut rng).unwrap();
    let y = Tensor::<f32>::rand_normal(&[16], 0.0, 1.0, &mut rng).unwrap();
    g.throughput(Throughput::Elements(100));
    g.bench_function("chain_of_100_ops_16_elements", |b| {
        b.iter(|| {
            let mut t = x.clone();
            for i in 0..25 {
                t = t.add(&y).unwrap();
                t = t.mul_scalar(0.5);
                t = t.tanh();
                t = if i % 2 == 0 {
                    t.sub(&y).unwrap()
                } else {
                    t.exp().mul(&y).unwrap()
                };
            }
            black_box(t)
        })
    });
    g.finish();
}

criterion_group!(
    benches,
    matmul_f32,
    matmul_f64,
    batched_matmul,
    elementwise,
    per_op_overhead
);
criterion_main!(benches);
