//! The same bits on every machine: a fixed set of workloads (GEMMs at several
//! shapes and layouts, a convolution forward and backward, MLP training steps in
//! `f32` and `f64`, FFTs, a Cholesky solve, the transcendental kernels, a long sum)
//! hashed and compared with fixtures recorded per platform and kernel path
//! (`tests/fixtures/platform_bits.txt`): `x86_64-avx2` and `x86_64-portable`
//! natively, `aarch64-neon` and `aarch64-portable` under qemu, `wasm32-portable`
//! under a WASI runtime. A line either holds a hash or names another line's
//! (`=x86_64-avx2`) where the bits are the same, so the file is the table of which
//! platforms agree on which workloads. An AVX-512 machine without lines of its
//! own is held to the AVX2 lines: the kernels' contract is that the AVX-512 and
//! AVX2 paths give the same bits.
//!
//! A mismatch names the first differing workload. To record the current
//! platform's lines (after a deliberate change of bits), run this test with
//! `PLATFORM_BITS_RECORD=1`: it rewrites that platform's lines and leaves the
//! others alone.

use autograd::{backward, Var};
use std::collections::BTreeMap;
use std::path::PathBuf;
use tensor::fft::Norm;
use tensor::{Conv2dSpec, Element, Rng, Tensor};

/// FNV-1a over the bits of every element, in logical order, and the shape.
fn hash<T: Element>(parts: &[&Tensor<T>]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    };
    for t in parts {
        for &d in t.shape() {
            eat(&(d as u64).to_le_bytes());
        }
        for v in t.to_vec() {
            eat(&v.as_f64().to_bits().to_le_bytes());
        }
    }
    h
}

/// Uniform values in [−1, 1): drawn from the RNG's integer stream, the same bits
/// on every machine.
fn uniform<T: Element>(shape: &[usize], seed: u64) -> Tensor<T> {
    Tensor::rand_uniform(shape, -1.0, 1.0, &mut Rng::new(seed)).unwrap()
}

fn gemm<T: Element>(m: usize, k: usize, n: usize, transposed_a: bool) -> u64 {
    let a = if transposed_a {
        uniform::<T>(&[k, m], 1).t().unwrap()
    } else {
        uniform::<T>(&[m, k], 1)
    };
    hash(&[&a.matmul(&uniform::<T>(&[k, n], 2)).unwrap()])
}

fn conv_forward_backward() -> u64 {
    let x = Var::leaf(uniform::<f32>(&[2, 3, 12, 12], 3));
    let w = Var::leaf(uniform::<f32>(&[8, 3, 3, 3], 4));
    let spec = Conv2dSpec {
        padding: (1, 1),
        ..Conv2dSpec::default()
    };
    let y = x.conv2d(&w, spec).unwrap();
    let loss = y.square().unwrap().sum_all().unwrap();
    let g = backward(&loss).unwrap();
    hash(&[y.value(), g.get(&x).unwrap(), g.get(&w).unwrap()])
}

/// Two steps of SGD on a two-layer tanh MLP with a log-sum-exp loss.
fn mlp_steps<T: Element>() -> u64 {
    let x = Var::constant(uniform::<T>(&[32, 20], 5));
    let mut w1 = uniform::<T>(&[20, 64], 6).mul_scalar(0.3);
    let mut w2 = uniform::<T>(&[64, 10], 7).mul_scalar(0.3);
    let mut losses = Vec::new();
    for _ in 0..2 {
        let (v1, v2) = (Var::leaf(w1.clone()), Var::leaf(w2.clone()));
        let h = x.matmul(&v1).unwrap().tanh().unwrap();
        let logits = h.matmul(&v2).unwrap();
        let loss = logits
            .logsumexp(&[-1], false)
            .unwrap()
            .sub(&logits.narrow(-1, 0, 1).unwrap().squeeze(-1).unwrap())
            .unwrap()
            .mean_all()
            .unwrap();
        let g = backward(&loss).unwrap();
        w1 = w1.sub(&g.get(&v1).unwrap().mul_scalar(0.1)).unwrap();
        w2 = w2.sub(&g.get(&v2).unwrap().mul_scalar(0.1)).unwrap();
        losses.push(loss.value().clone());
    }
    hash(&[&w1, &w2, &losses[0], &losses[1]])
}

fn fft_f64(n: usize) -> u64 {
    let x = uniform::<f64>(&[4, n, 2], 8);
    hash(&[&x.fft(1, Norm::Backward).unwrap()])
}

fn rfft_f32(n: usize) -> u64 {
    let x = uniform::<f32>(&[4, n], 9);
    hash(&[&x.rfft(1, Norm::Backward).unwrap()])
}

fn cholesky_solve(n: usize) -> u64 {
    let a = uniform::<f64>(&[n, n], 10);
    let spd = a
        .matmul(&a.t().unwrap())
        .unwrap()
        .add(&Tensor::eye(n).unwrap().mul_scalar(n as f64))
        .unwrap();
    hash(&[&spd.solve_spd(&uniform::<f64>(&[n, 3], 11)).unwrap()])
}

fn transcendentals() -> u64 {
    let x = uniform::<f32>(&[4099], 12).mul_scalar(20.0);
    hash(&[&x.exp(), &x.tanh(), &x.sigmoid(), &x.softplus()])
}

fn long_sum() -> u64 {
    let x = uniform::<f32>(&[100_003], 13);
    let y = uniform::<f32>(&[7, 1500, 10], 14);
    hash(&[&x.sum_all(), &y.sum(&[1], false).unwrap()])
}

/// Every workload, by name.
fn workloads() -> Vec<(&'static str, u64)> {
    vec![
        ("gemm_f32_7x13x5", gemm::<f32>(7, 13, 5, false)),
        ("gemm_f32_64x300x48", gemm::<f32>(64, 300, 48, false)),
        ("gemm_f32_96x70x130_at", gemm::<f32>(96, 70, 130, true)),
        ("gemm_f64_129x65x33", gemm::<f64>(129, 65, 33, false)),
        ("gemm_f64_40x600x40_at", gemm::<f64>(40, 600, 40, true)),
        ("conv2d_f32_forward_backward", conv_forward_backward()),
        ("mlp_sgd_steps_f32", mlp_steps::<f32>()),
        ("mlp_sgd_steps_f64", mlp_steps::<f64>()),
        ("fft_f64_1000", fft_f64(1000)),
        ("fft_f64_64", fft_f64(64)),
        ("rfft_f32_1024", rfft_f32(1024)),
        ("cholesky_solve_f64_100", cholesky_solve(100)),
        ("exp_tanh_sigmoid_softplus_f32", transcendentals()),
        ("sum_f32_100003", long_sum()),
    ]
}

fn fixture_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/platform_bits.txt")
}

/// The fixture's lines: (workload, path) → a hash or `=other path`.
fn read_fixtures() -> BTreeMap<(String, String), String> {
    let text = std::fs::read_to_string(fixture_path()).unwrap_or_default();
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            assert_eq!(f.len(), 3, "malformed fixture line {l:?}");
            ((f[0].to_string(), f[1].to_string()), f[2].to_string())
        })
        .collect()
}

/// The hash a path's line stands for (following one `=path` reference).
fn resolve(
    fixtures: &BTreeMap<(String, String), String>,
    workload: &str,
    path: &str,
) -> Option<u64> {
    let entry = fixtures.get(&(workload.to_string(), path.to_string()))?;
    let entry = match entry.strip_prefix('=') {
        Some(other) => fixtures.get(&(workload.to_string(), other.to_string()))?,
        None => entry,
    };
    u64::from_str_radix(entry, 16).ok()
}

fn record(path: &str, computed: &[(&'static str, u64)]) {
    let mut fixtures = read_fixtures();
    for &(workload, h) in computed {
        // The first other platform with this workload's bits and a hash of its own.
        let same = fixtures
            .iter()
            .filter(|((w, p), e)| w == workload && p != path && !e.starts_with('='))
            .map(|((_, p), _)| p.clone())
            .find(|p| resolve(&fixtures, workload, p) == Some(h));
        let entry = same.map_or(format!("{h:016x}"), |p| format!("={p}"));
        fixtures.insert((workload.into(), path.into()), entry);
    }
    let mut text = String::from(
        "# Output hashes of autograd/tests/suite/platform_bits.rs's workloads, per\n\
         # platform and kernel path: a hash, or `=platform-path` where the bits are that\n\
         # line's. Written by the test with PLATFORM_BITS_RECORD=1 on each platform (see\n\
         # .ci/aarch64.sh and .ci/wasm.sh for the emulated ones); not edited by hand.\n",
    );
    for ((workload, p), e) in &fixtures {
        text.push_str(&format!("{workload} {p} {e}\n"));
    }
    std::fs::create_dir_all(fixture_path().parent().unwrap()).unwrap();
    std::fs::write(fixture_path(), text).unwrap();
}

#[test]
fn every_workload_gives_the_recorded_bits_for_this_kernel_path() {
    let path = format!(
        "{}-{}",
        std::env::consts::ARCH,
        tensor::platform::kernel_path()
    );
    let path = path.as_str();
    let computed = workloads();
    if std::env::var("PLATFORM_BITS_RECORD").is_ok_and(|v| v == "1") {
        record(path, &computed);
        return;
    }
    let fixtures = read_fixtures();
    let mut mismatches = Vec::new();
    for &(workload, h) in &computed {
        // The AVX-512 kernels give the AVX2 kernels' bits by contract: without a
        // line of its own, an AVX-512 machine is held to the AVX2 line.
        let recorded = resolve(&fixtures, workload, path).or_else(|| {
            (path == "x86_64-avx512")
                .then(|| resolve(&fixtures, workload, "x86_64-avx2"))
                .flatten()
        });
        match recorded {
            Some(want) if want == h => {}
            Some(want) => mismatches.push(format!("{workload}: {h:016x}, recorded {want:016x}")),
            None => mismatches.push(format!("{workload}: no fixture for path {path}")),
        }
    }
    assert!(
        mismatches.is_empty(),
        "kernel path {path}: {} of {} workloads differ; the first is {}\nall: {mismatches:#?}",
        mismatches.len(),
        computed.len(),
        mismatches[0]
    );
}
