//! The GEMM (`kernels::gemm`) against a naive f64 loop at sizes that cross its
//! blocks (depth blocks of 256, row blocks of 192, column groups of 16 panels, the
//! packed-A limit), with α, β, transposed and strided operands; C is not read when
//! β = 0; the parallel split, the thread count and the SIMD kernel do not change a
//! bit; the portable kernel agrees to rounding; the upper-triangle product agrees
//! with the full one to the bit on and above the diagonal.

use crate::common;

use common::config;
use proptest::prelude::*;
use tensor::kernels::gemm::{self, MicroKernel, Scalar, Strided};
use tensor::Rng;

/// An operand laid out in one of three ways: its depth index contiguous, its width
/// index contiguous, or both strided (every other element of a wider buffer).
fn operand(data: &[f64], depth: usize, width: usize, layout: u8) -> Strided<'_, f64> {
    let (depth_stride, width_stride) = match layout {
        0 => (width as isize, 1),
        1 => (1, depth as isize),
        _ => (2 * width as isize, 2),
    };
    Strided {
        data,
        offset: 0,
        depth,
        width,
        depth_stride,
        width_stride,
    }
}

fn at(s: &Strided<'_, f64>, p: usize, j: usize) -> f64 {
    s.data[(s.offset as isize + p as isize * s.depth_stride + j as isize * s.width_stride) as usize]
}

fn random(len: usize, seed: u64) -> Vec<f64> {
    tensor::Tensor::<f64>::rand_normal(&[len], 0.0, 1.0, &mut Rng::new(seed))
        .unwrap()
        .to_vec()
}

fn dims() -> impl Strategy<Value = usize> {
    prop_oneof![1usize..9, 30usize..40, 185usize..200, 255usize..262]
}

fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
}

/// C ← α·A·B + β·C with `kernel` on `threads` threads (split allowed).
#[allow(clippy::too_many_arguments)]
fn run(
    kernel: MicroKernel<f64>,
    threads: usize,
    alpha: f64,
    a_t: &Strided<'_, f64>,
    b: &Strided<'_, f64>,
    beta: f64,
    c0: &[f64],
    ldc: usize,
) -> Vec<f64> {
    let mut c = c0.to_vec();
    pool(threads).install(|| gemm::gemm_using(kernel, alpha, a_t, b, beta, &mut c, ldc, true));
    c
}

proptest! {
    #![proptest_config(config(40))]

    #[test]
    fn gemm_matches_the_naive_loop_and_splits_change_no_bit(
        m in dims(), n in prop_oneof![dims(), 510usize..530], k in prop_oneof![dims(), 510usize..530],
        la in 0u8..3, lb in 0u8..3, pad in 0usize..3,
        alpha in prop_oneof![Just(1.0), Just(-1.0), Just(0.5)],
        beta in prop_oneof![Just(0.0), Just(1.0), Just(-2.5)],
        seed in any::<u64>(),
    ) {
        let (da, db) = (random(2 * m * k, seed), random(2 * k * n, seed ^ 1));
        let a_t = operand(&da, k, m, la);
        let b = operand(&db, k, n, lb);
        let ldc = n + pad;
        // With β = 0, C must not be read: NaN there would show.
        let c0: Vec<f64> = if beta == 0.0 { vec![f64::NAN; m * ldc] } else { random(m * ldc, seed ^ 2) };
        let kernels = f64::kernels();
        let got = run(kernels[0], 1, alpha, &a_t, &b, beta, &c0, ldc);
        for i in 0..m {
            for j in 0..n {
                let dot: f64 = (0..k).map(|p| at(&a_t, p, i) * at(&b, p, j)).sum();
                let scale: f64 = (0..k).map(|p| (at(&a_t, p, i) * at(&b, p, j)).abs()).sum();
                let old = if beta == 0.0 { 0.0 } else { beta * c0[i * ldc + j] };
                let want = alpha * dot + old;
                let g = got[i * ldc + j];
                prop_assert!((g - want).abs() <= 1e-14 * (scale + old.abs()) * (k as f64).sqrt() + 1e-300,
                    "C[{}, {}] = {} vs {} ({}×{}×{})", i, j, g, want, m, n, k);
            }
            // Past n, the row's padding is untouched.
            for j in n..ldc {
                prop_assert_eq!(got[i * ldc + j].to_bits(), c0[i * ldc + j].to_bits());
            }
        }
        // Two threads (the product split into tasks) give the same bits.
        let two = run(kernels[0], 2, alpha, &a_t, &b, beta, &c0, ldc);
        prop_assert!(got.iter().zip(&two).all(|(x, y)| x.to_bits() == y.to_bits()), "1 vs 2 threads");
        // Every SIMD kernel gives the same bits; the portable one agrees to rounding.
        for kern in &kernels[1..] {
            let other = run(*kern, 2, alpha, &a_t, &b, beta, &c0, ldc);
            for (x, y) in got.iter().zip(&other) {
                if x.is_nan() {
                    // The padding past n (β = 0), untouched by both.
                    prop_assert!(y.is_nan());
                } else if kern.name == "portable" {
                    prop_assert!((x - y).abs() <= 1e-12 * (1.0 + x.abs()) * (k as f64).sqrt(), "portable {} vs {}", y, x);
                } else {
                    prop_assert_eq!(x.to_bits(), y.to_bits(), "{} vs {}", kern.name, kernels[0].name);
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(config(24))]

    /// The upper-triangle product (a Cholesky's trailing update) gives every element
    /// on or above the diagonal the bits of the full product, at 1, 2 and 3 threads
    /// (the column groups then of equal triangle area), and leaves the rows' padding
    /// alone.
    #[test]
    fn gemm_upper_matches_the_full_product_on_and_above_the_diagonal(
        n in prop_oneof![dims(), 510usize..530], k in prop_oneof![1usize..40, 250usize..262],
        la in 0u8..3, lb in 0u8..3, pad in 0usize..3,
        beta in prop_oneof![Just(0.0), Just(1.0)],
        seed in any::<u64>(),
    ) {
        let (da, db) = (random(2 * n * k, seed), random(2 * k * n, seed ^ 1));
        let a_t = operand(&da, k, n, la);
        let b = operand(&db, k, n, lb);
        let ldc = n + pad;
        let c0 = random(n * ldc, seed ^ 2);
        let full = run(f64::kernel(), 1, -1.0, &a_t, &b, beta, &c0, ldc);
        for threads in 1..=3 {
            let mut c = c0.clone();
            pool(threads).install(|| gemm::gemm_upper(-1.0, &a_t, &b, beta, &mut c, ldc, true));
            for i in 0..n {
                for j in i..n {
                    prop_assert_eq!(c[i * ldc + j].to_bits(), full[i * ldc + j].to_bits(),
                        "C[{}, {}] at {} threads ({}×{})", i, j, threads, n, k);
                }
                for j in n..ldc {
                    prop_assert_eq!(c[i * ldc + j].to_bits(), c0[i * ldc + j].to_bits());
                }
            }
        }
    }
}

/// A product whose packed A exceeds the limit at once (rows and depth walked in
/// super-blocks) still matches the naive loop, in f32 against f64.
#[test]
fn large_products_walk_their_super_blocks() {
    let (m, k, n) = (4200, 300, 40);
    let da: Vec<f32> = random(m * k, 7).iter().map(|&v| v as f32).collect();
    let db: Vec<f32> = random(k * n, 8).iter().map(|&v| v as f32).collect();
    let a_t = Strided {
        data: &da,
        offset: 0,
        depth: k,
        width: m,
        depth_stride: 1,
        width_stride: k as isize,
    };
    let b = Strided {
        data: &db,
        offset: 0,
        depth: k,
        width: n,
        depth_stride: n as isize,
        width_stride: 1,
    };
    let mut c = vec![f32::NAN; m * n];
    pool(2).install(|| gemm::gemm(1.0, &a_t, &b, 0.0, &mut c, n, true));
    for i in (0..m).step_by(97) {
        for j in 0..n {
            let want: f64 = (0..k)
                .map(|p| da[i * k + p] as f64 * db[p * n + j] as f64)
                .sum();
            assert!(
                (c[i * n + j] as f64 - want).abs() < 1e-4 * (k as f64).sqrt(),
                "C[{i}, {j}]"
            );
        }
    }
}
