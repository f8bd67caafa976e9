//! Bitwise reproducibility across thread counts, at sizes above the parallel
//! thresholds.

use tensor::{Rng, Tensor};

fn in_pool<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> R {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
        .install(f)
}

fn check<T: PartialEq + std::fmt::Debug + Send>(what: &str, f: impl Fn() -> T + Sync) {
    let one = in_pool(1, &f);
    let two = in_pool(2, &f);
    let three = in_pool(3, &f);
    assert!(
        one == two && two == three,
        "{what} differs across thread counts"
    );
}

fn bits32(t: &Tensor<f32>) -> Vec<u32> {
    t.to_vec().iter().map(|v| v.to_bits()).collect()
}

fn bits64(t: &Tensor<f64>) -> Vec<u64> {
    t.to_vec().iter().map(|v| v.to_bits()).collect()
}

#[test]
fn reductions_softmax_and_elementwise_are_thread_count_invariant() {
    let mut rng = Rng::new(1);
    let x = Tensor::<f32>::rand_normal(&[1 << 20], 0.0, 1.0, &mut rng).unwrap();
    let m = Tensor::<f64>::rand_normal(&[512, 700], 0.0, 1.0, &mut rng).unwrap();
    check("sum f32", || bits32(&x.sum_all()));
    check("sum f64 axis 0", || bits64(&m.sum(&[0], false).unwrap()));
    check("mean f64 axis 1", || bits64(&m.mean(&[1], false).unwrap()));
    check("var", || bits64(&m.var(&[0, 1], 1, false).unwrap()));
    check("logsumexp", || bits64(&m.logsumexp(&[1], false).unwrap()));
    check("softmax", || bits64(&m.softmax(0).unwrap()));
    check("exp", || bits32(&x.exp()));
    check("softplus strided", || bits64(&m.t().unwrap().softplus()));
    check("add broadcast", || {
        bits64(&m.add(&m.sum(&[0], true).unwrap()).unwrap())
    });
}

#[test]
fn matmul_is_thread_count_invariant() {
    let mut rng = Rng::new(2);
    for &(mm, k, n) in &[(300, 200, 250), (8, 512, 2048), (1024, 64, 160)] {
        let a = Tensor::<f32>::rand_normal(&[mm, k], 0.0, 1.0, &mut rng).unwrap();
        let b = Tensor::<f32>::rand_normal(&[k, n], 0.0, 1.0, &mut rng).unwrap();
        check("matmul f32", || bits32(&a.matmul(&b).unwrap()));
        let a64 = a.cast::<f64>();
        let b64 = b.cast::<f64>().t().unwrap().contiguous().t().unwrap();
        check("matmul f64 transposed", || {
            bits64(&a64.matmul(&b64).unwrap())
        });
    }
    let a = Tensor::<f64>::rand_normal(&[32, 64, 64], 0.0, 1.0, &mut rng).unwrap();
    let b = Tensor::<f64>::rand_normal(&[64, 64], 0.0, 1.0, &mut rng).unwrap();
    check("batched matmul", || bits64(&a.matmul(&b).unwrap()));
}

#[test]
fn matmul_blocks_give_the_same_bits_as_one_call() {
    // The parallel split must not change any element: compare a large product with
    // the rows computed one small product at a time.
    let mut rng = Rng::new(3);
    let a = Tensor::<f32>::rand_normal(&[257, 300], 0.0, 1.0, &mut rng).unwrap();
    let b = Tensor::<f32>::rand_normal(&[300, 190], 0.0, 1.0, &mut rng).unwrap();
    let full = in_pool(2, || a.matmul(&b).unwrap());
    for r in [0usize, 1, 100, 256] {
        let row = a.narrow(0, r, 1).unwrap().matmul(&b).unwrap();
        let want = full.narrow(0, r, 1).unwrap();
        assert_eq!(bits32(&row), bits32(&want), "row {r}");
    }
}

#[test]
fn sampling_is_reproducible_from_the_seed() {
    let draw = || {
        let mut rng = Rng::new(42);
        let a = Tensor::<f32>::rand_normal(&[100_000], 0.0, 1.0, &mut rng).unwrap();
        let b = Tensor::<f64>::rand_uniform(&[1000], -1.0, 1.0, &mut rng).unwrap();
        let c = Tensor::<f64>::rand_bernoulli(&[1000], 0.3, &mut rng).unwrap();
        (bits32(&a), bits64(&b), bits64(&c))
    };
    check("sampling", draw);
}

#[test]
fn convolutions_are_thread_count_invariant() {
    let mut rng = Rng::new(9);
    // Many images per chunk (8×8 maps); one image at a time, split across threads
    // by images (16×16 maps, 12 images: the weight gradient in 6 groups of 2; the
    // forward reads its patches in place), also 1×1; one image at a time with too
    // little work to split (patches in place on one thread, packed on more); and
    // one image in tiles (66×66, K = 1152).
    for (x_shape, w_shape) in [
        ([16, 32, 8, 8], [32, 32, 3, 3]),
        ([12, 16, 16, 16], [16, 16, 3, 3]),
        ([2, 4, 16, 16], [8, 4, 3, 3]),
        ([12, 64, 16, 16], [64, 64, 1, 1]),
        ([2, 128, 66, 66], [4, 128, 3, 3]),
    ] {
        let x = Tensor::<f32>::rand_normal(&x_shape, 0.0, 1.0, &mut rng).unwrap();
        let w = Tensor::<f32>::rand_normal(&w_shape, 0.0, 1.0, &mut rng).unwrap();
        let spec = tensor::Conv2dSpec::new(1, 1);
        let y = x.conv2d(&w, spec).unwrap();
        check("conv2d", || bits32(&x.conv2d(&w, spec).unwrap()));
        check("conv2d input grad", || {
            bits32(&y.conv2d_input_grad(&w, x.shape(), spec).unwrap())
        });
        check("conv2d weight grad", || {
            bits32(&y.conv2d_weight_grad(&x, w.shape(), spec).unwrap())
        });
    }
}

#[test]
fn factorizations_are_thread_count_invariant() {
    // Sizes above the parallel thresholds: the Cholesky trailing GEMMs, QR's
    // compact-WY products (tall and wide), eigh's rotation panels and its
    // back-transformation.
    let mut rng = Rng::new(7);
    let m = Tensor::<f64>::rand_normal(&[400, 400], 0.0, 1.0, &mut rng).unwrap();
    let spd = m
        .matmul(&m.t().unwrap())
        .unwrap()
        .add(&Tensor::eye(400).unwrap())
        .unwrap();
    check("cholesky", || bits64(&spd.cholesky().unwrap()));
    // The Cholesky updates go parallel only from about 1.3e8 multiply-adds: at
    // n = 1408 its first trailing update (704 × 704 × 704 / 2) does.
    let big = Tensor::<f64>::rand_normal(&[1408, 1408], 0.0, 1.0, &mut rng).unwrap();
    let big_spd = big
        .matmul(&big.t().unwrap())
        .unwrap()
        .add(&Tensor::eye(1408).unwrap())
        .unwrap();
    check("cholesky parallel updates", || {
        let l = big_spd.cholesky().unwrap();
        let rec = l.matmul(&l.t().unwrap()).unwrap().sub(&big_spd).unwrap();
        let err = rec.abs().max_all().unwrap();
        assert!(err <= 1e-10 * 1408.0, "L Lᵀ − A is {err}");
        bits64(&l)
    });
    // A batch runs one matrix a thread, outside any team: its updates split on
    // rayon from 2²⁷ multiply-adds, as the top one at 1408 does.
    let pair = Tensor::stack(&[&big_spd, &big_spd.mul_scalar(2.0)], 0).unwrap();
    check("cholesky of a batch, parallel updates", || {
        bits64(&pair.cholesky().unwrap())
    });
    // From order 448 a single factorisation runs in a team's region (helpers kept
    // awake, its solves and updates split from 2¹⁶ multiply-adds); 500 cuts the
    // blocks of 64 and the solves' column tasks.
    let m500 = Tensor::<f64>::rand_normal(&[500, 500], 0.0, 1.0, &mut rng).unwrap();
    let spd500 = m500
        .matmul(&m500.t().unwrap())
        .unwrap()
        .add(&Tensor::eye(500).unwrap().mul_scalar(50.0))
        .unwrap();
    check("cholesky in a team, f64", || {
        bits64(&spd500.cholesky().unwrap())
    });
    let spd500_32 = spd500.cast::<f32>();
    check("cholesky in a team, f32", || {
        bits32(&spd500_32.cholesky().unwrap())
    });
    check("eigh", || {
        let (values, vectors) = spd.eigh().unwrap();
        (bits64(&values), bits64(&vectors))
    });
    // A leading block of an SPD matrix is SPD (and symmetric).
    let spd460 = spd500.narrow(0, 0, 460).unwrap().narrow(1, 0, 460).unwrap();
    check("eigh in a team", || {
        let (values, vectors) = spd460.eigh().unwrap();
        (bits64(&values), bits64(&vectors))
    });
    let tall = Tensor::<f64>::rand_normal(&[600, 400], 0.0, 1.0, &mut rng).unwrap();
    for a in [tall.clone(), tall.t().unwrap()] {
        check("qr", || {
            let (q, r) = a.qr().unwrap();
            (bits64(&q), bits64(&r))
        });
    }
    // A single matrix of order 448 or more is factored in a team's region, its
    // compact-WY products split from 2¹⁶ multiply-adds (outside one, from 2²⁶).
    let big = Tensor::<f64>::rand_normal(&[2200, 1100], 0.0, 1.0, &mut rng).unwrap();
    check("qr parallel updates", || {
        let (q, r) = big.qr().unwrap();
        (bits64(&q), bits64(&r))
    });
    // In a batch, outside a team, from 2²⁶: the first panels' updates at 1600 × 1400
    // (32 × 1600 × 1368) split on rayon.
    let pair = Tensor::<f64>::rand_normal(&[2, 1600, 1400], 0.0, 1.0, &mut rng).unwrap();
    check("qr of a batch, parallel updates", || {
        let (q, r) = pair.qr().unwrap();
        (bits64(&q), bits64(&r))
    });
}

#[test]
fn ffts_are_thread_count_invariant() {
    // Every batch below has at least 2¹⁸ output values, so its rows are split
    // across threads; the lengths take each algorithm: the 64-point codelet, the
    // four-step 1024 and 4096 (f32), radix-4/2 Stockham (256), mixed radix (12),
    // Bluestein (97), the real transforms' even and odd paths; the strided axes
    // are moved last and back.
    let mut rng = Rng::new(11);
    let normal32 =
        |shape: &[usize], rng: &mut Rng| Tensor::<f32>::rand_normal(shape, 0.0, 1.0, rng).unwrap();
    let normal64 =
        |shape: &[usize], rng: &mut Rng| Tensor::<f64>::rand_normal(shape, 0.0, 1.0, rng).unwrap();
    let norm = tensor::fft::Norm::Backward;
    for n in [64, 1024, 4096] {
        let z = normal32(&[(1 << 18) / n, n, 2], &mut rng);
        check("fft f32", || bits32(&z.fft(1, norm).unwrap()));
        check("ifft f32", || bits32(&z.ifft(1, norm).unwrap()));
    }
    let z = normal64(&[512, 256, 2], &mut rng);
    check("fft f64 Stockham", || bits64(&z.fft(1, norm).unwrap()));
    let z = normal32(&[11000, 12, 2], &mut rng);
    check("fft f32 mixed radix", || bits32(&z.fft(1, norm).unwrap()));
    let z = normal64(&[97, 1400, 2], &mut rng);
    check("fft f64 Bluestein, axis 0", || {
        bits64(&z.fft(0, norm).unwrap())
    });
    let x = normal32(&[128, 4096], &mut rng);
    check("rfft f32", || bits32(&x.rfft(1, norm).unwrap()));
    let x = normal64(&[300, 1001], &mut rng);
    check("rfft f64 odd length", || bits64(&x.rfft(1, norm).unwrap()));
    let spectrum = normal32(&[256, 513, 2], &mut rng);
    check("irfft f32", || {
        bits32(&spectrum.irfft(1, 1024, norm).unwrap())
    });
    let spectrum = normal64(&[600, 251, 2], &mut rng);
    check("irfft f64 odd length", || {
        bits64(&spectrum.irfft(1, 501, norm).unwrap())
    });
    let images = normal32(&[16, 128, 128], &mut rng);
    check("rfft2 and irfft2 f32", || {
        let y = images.rfft2((1, 2), norm).unwrap();
        (
            bits32(&y),
            bits32(&y.irfft2((1, 2), (128, 128), norm).unwrap()),
        )
    });
}
