//! The kernel room: the only module of the workspace with `unsafe` and `std::arch`.
//!
//! It holds the engine's GEMM (`gemm`: packed, blocked, with AVX-512, AVX2/FMA and
//! portable micro-kernels; operands that pack their own panels), and the explicit
//! SIMD of a few hot loops, each chosen at run time with a portable fallback: the
//! f32 transcendentals (AVX2 polynomials that agree with the standard library's
//! functions to a few ulp, tested below with a relative tolerance of 1e-6; `f64`
//! always uses the standard library, so numerics checked in `f64` are those of the
//! platform's libm), Adam's fused update (`adam`), the many-right-hand-side
//! triangular solve of the blocked Cholesky (`trsm`), the FFT's Stockham stages
//! (`fft`), the (re, im) pairs it splits and joins (`pairs`) and the real
//! transform's even/odd recombination (`real_fft`), the eigensolver's row step of
//! its tridiagonalisation (`rank2`) and its plane rotations (`rotations`), short
//! copies and fills (`runs`), and the cache hints a batched row kernel gives for the
//! next row (`ahead`). Where a kernel's operations are the portable path's
//! (Adam, the FFT and its recombination, the pairs, the eigensolver's kernels), it
//! gives the same bits; where it fuses multiply-adds (GEMM, the solve), it agrees to
//! rounding, as its tests state. It also holds the team of threads kept awake
//! through a region of short parallel loops (`team`, behind
//! [`crate::parallel::with_team`]), which hands the loops' closures across threads.

mod adam;
mod ahead;
#[cfg(target_arch = "x86_64")]
mod avx2;
pub mod fft;
pub mod fft64;
pub mod four_step;
pub mod gemm;
mod pairs;
mod portable;
mod rank2;
mod real_fft;
mod rotations;
mod runs;
#[cfg(feature = "parallel")]
pub(crate) mod team;
mod trsm;

pub use adam::{adam_first_non_finite, adam_update, AdamSlices, AdamStep};
pub use ahead::Ahead;
pub use pairs::{join_pairs, split_pairs};
pub use rank2::rank2_row_update;
pub use real_fft::{half_bin_conj, irfft_precombine, real_bin, rfft_recombine};
pub use rotations::{rotate_rows, PlaneRotation};
pub use runs::{copy_rows, copy_run, gather_runs, zero_run};
pub use trsm::{solve_lower_columns, MAX_ORDER};

/// A slice's base pointer that the tasks of a parallel loop share, each writing
/// only its own elements (a triangular solve's columns, a team's pieces).
pub(crate) struct SharedMut<T>(*mut T);
// SAFETY: every user hands each task a disjoint set of elements (see the uses).
unsafe impl<T: Send> Send for SharedMut<T> {}
unsafe impl<T: Send> Sync for SharedMut<T> {}

impl<T> SharedMut<T> {
    /// The wrapper of `data`'s base pointer.
    pub(crate) fn new(data: &mut [T]) -> Self {
        SharedMut(data.as_mut_ptr())
    }
    /// The pointer to element `i` (a method, so that closures capture the whole
    /// `Sync` wrapper rather than its raw field).
    pub(crate) fn at(&self, i: usize) -> *mut T {
        self.0.wrapping_add(i)
    }
}

/// A strided matrix view into a slice (rows and columns with their strides).
#[derive(Clone, Copy, Debug)]
pub struct MatRef<'a, T> {
    /// Storage the view points into.
    pub data: &'a [T],
    /// Position of element (0, 0) in `data`.
    pub offset: usize,
    /// Number of rows.
    pub rows: usize,
    /// Number of columns.
    pub cols: usize,
    /// Distance between consecutive rows.
    pub row_stride: isize,
    /// Distance between consecutive columns.
    pub col_stride: isize,
}

impl<'a, T> MatRef<'a, T> {
    /// The matrix as the B operand of [`gemm::gemm`] (depth = rows).
    pub fn operand(&self) -> gemm::Strided<'a, T> {
        gemm::Strided {
            data: self.data,
            offset: self.offset,
            depth: self.rows,
            width: self.cols,
            depth_stride: self.row_stride,
            width_stride: self.col_stride,
        }
    }

    /// The matrix as the A operand of [`gemm::gemm`], which takes A transposed
    /// (depth = columns).
    pub fn transposed_operand(&self) -> gemm::Strided<'a, T> {
        gemm::Strided {
            data: self.data,
            offset: self.offset,
            depth: self.cols,
            width: self.rows,
            depth_stride: self.col_stride,
            width_stride: self.row_stride,
        }
    }

    /// True when every element of the view lies inside `data`.
    fn in_bounds(&self) -> bool {
        if self.rows == 0 || self.cols == 0 {
            return true;
        }
        let base = self.offset as isize;
        let r = (self.rows as isize - 1) * self.row_stride;
        let c = (self.cols as isize - 1) * self.col_stride;
        let lo = base + r.min(0) + c.min(0);
        let hi = base + r.max(0) + c.max(0);
        lo >= 0 && (hi as usize) < self.data.len()
    }
}

/// Per-element-type kernels: GEMM and vectorised transcendentals.
pub trait Kernels: gemm::Scalar {
    /// `C = A · B` where A is `m × k`, B is `k × n`, and C is `m × n` stored row-major
    /// in `c` with row stride `ldc` (≥ n). `c` need not be initialised.
    fn gemm(a: MatRef<'_, Self>, b: MatRef<'_, Self>, c: &mut [Self], ldc: usize) {
        Self::gemm_update(Self::ONE, a, b, Self::ZERO, c, ldc)
    }
    /// `C ← α·A·B + β·C` (C as in [`Kernels::gemm`]; with β = 0 it is not read).
    fn gemm_update(
        alpha: Self,
        a: MatRef<'_, Self>,
        b: MatRef<'_, Self>,
        beta: Self,
        c: &mut [Self],
        ldc: usize,
    );
    /// `out[i] = exp(x[i])`.
    fn exp_slice(x: &[Self], out: &mut [Self]);
    /// `out[i] = tanh(x[i])`.
    fn tanh_slice(x: &[Self], out: &mut [Self]);
    /// `out[i] = 1 / (1 + exp(-x[i]))`.
    fn sigmoid_slice(x: &[Self], out: &mut [Self]);
    /// `out[i] = ln(1 + exp(x[i]))`, stable for large and very negative inputs.
    fn softplus_slice(x: &[Self], out: &mut [Self]);
    /// `out[i] = x·Φ(x)` (GELU, exact erf form).
    fn gelu_slice(x: &[Self], out: &mut [Self]);
    /// `out[i] = Φ(x) + x·φ(x)`, the derivative of GELU.
    fn gelu_grad_slice(x: &[Self], out: &mut [Self]);
}

fn check_gemm<T>(a: &MatRef<'_, T>, b: &MatRef<'_, T>, c: &[T], ldc: usize) {
    assert_eq!(a.cols, b.rows, "gemm: inner dimensions");
    assert!(
        a.in_bounds() && b.in_bounds(),
        "gemm: operand out of bounds"
    );
    assert!(ldc >= b.cols, "gemm: ldc smaller than n");
    if a.rows > 0 && b.cols > 0 {
        assert!(
            (a.rows - 1) * ldc + b.cols <= c.len(),
            "gemm: output out of bounds"
        );
    }
}

macro_rules! gemm_impl {
    ($t:ty) => {
        fn gemm_update(
            alpha: $t,
            a: MatRef<'_, $t>,
            b: MatRef<'_, $t>,
            beta: $t,
            c: &mut [$t],
            ldc: usize,
        ) {
            check_gemm(&a, &b, c, ldc);
            gemm::gemm(
                alpha,
                &a.transposed_operand(),
                &b.operand(),
                beta,
                c,
                ldc,
                false,
            );
        }
    };
}

/// Environment variable that forces the portable (non-SIMD) kernels when set to
/// anything but `0` or the empty string, read once per process: CI runs the suite
/// once that way, so the fallback stays correct on CPUs without AVX2.
pub const PORTABLE_ENV: &str = "TENSOR_PORTABLE";

/// Whether the portable kernels are forced (see [`PORTABLE_ENV`]).
pub fn portable_forced() -> bool {
    static FORCED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *FORCED.get_or_init(|| switch_set(PORTABLE_ENV))
}

/// Whether the environment variable `name` is set to anything but `0` or the empty
/// string (how the kernel switches are read).
fn switch_set(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| !v.is_empty() && v != "0")
}

/// Environment variable that keeps the AVX-512 kernels off when set to anything but
/// `0` or the empty string (the AVX2/FMA ones run instead), read once per process:
/// on an AVX-512 machine CI runs the suite once that way too, so both paths are held
/// to the same recorded bits on one machine.
pub const NO_AVX512_ENV: &str = "TENSOR_NO_AVX512";

/// Whether the AVX-512 kernels are switched off (see [`NO_AVX512_ENV`]).
pub fn avx512_disabled() -> bool {
    static OFF: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *OFF.get_or_init(|| switch_set(NO_AVX512_ENV))
}

/// Whether the AVX2/FMA paths run (the CPU has them and the portable kernels are
/// not forced): one relaxed load once known, cheap enough for per-row dispatch.
#[cfg(target_arch = "x86_64")]
#[inline]
fn has_avx2_fma() -> bool {
    use std::sync::atomic::{AtomicU8, Ordering};
    // 0: not yet known; 1: no; 2: yes.
    static STATE: AtomicU8 = AtomicU8::new(0);
    match STATE.load(Ordering::Relaxed) {
        2 => true,
        1 => false,
        _ => {
            let yes = !portable_forced()
                && std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma");
            STATE.store(if yes { 2 } else { 1 }, Ordering::Relaxed);
            yes
        }
    }
}

/// Whether the AVX-512 (F) paths run: the CPU has it, and neither the portable
/// kernels are forced nor AVX-512 switched off. Cached as [`has_avx2_fma`] is.
#[cfg(target_arch = "x86_64")]
#[inline]
fn has_avx512() -> bool {
    use std::sync::atomic::{AtomicU8, Ordering};
    static STATE: AtomicU8 = AtomicU8::new(0);
    match STATE.load(Ordering::Relaxed) {
        2 => true,
        1 => false,
        _ => {
            let yes = !portable_forced()
                && !avx512_disabled()
                && std::arch::is_x86_feature_detected!("avx512f");
            STATE.store(if yes { 2 } else { 1 }, Ordering::Relaxed);
            yes
        }
    }
}

/// Which family of kernels runs in this process: `"avx512"` when the AVX-512 paths
/// run, `"avx2"` when the AVX2/FMA paths run (and AVX-512 is absent), `"neon"` on
/// aarch64 (where the GEMM, and everything built on it, has NEON kernels and the
/// other kernels are the portable ones), otherwise `"portable"` — always on other
/// targets, and whenever the portable kernels are forced (see [`PORTABLE_ENV`]);
/// `"avx2"` on an AVX-512 machine with AVX-512 switched off ([`NO_AVX512_ENV`]).
/// It reads the same cached checks as the dispatch itself, so it names the path the
/// kernels actually take: for recording beside a benchmark or a run's results.
pub fn kernel_path() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx512() {
            return "avx512";
        }
        if has_avx2_fma() {
            return "avx2";
        }
    }
    #[cfg(target_arch = "aarch64")]
    {
        if !portable_forced() && std::arch::is_aarch64_feature_detected!("neon") {
            return "neon";
        }
    }
    "portable"
}

/// The SIMD features the kernels can use that this CPU reports, of `"avx512f"`,
/// `"avx2"` and `"fma"`, in that order, on x86-64, `"neon"` on aarch64 (empty on
/// other targets). It
/// describes the CPU alone: unlike [`kernel_path`], it ignores [`PORTABLE_ENV`].
pub fn cpu_features() -> Vec<&'static str> {
    #[allow(unused_mut)]
    let mut features = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            features.push("avx512f");
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            features.push("avx2");
        }
        if std::arch::is_x86_feature_detected!("fma") {
            features.push("fma");
        }
    }
    #[cfg(target_arch = "aarch64")]
    if std::arch::is_aarch64_feature_detected!("neon") {
        features.push("neon");
    }
    features
}

macro_rules! dispatch_f32 {
    ($name:ident, $avx:ident, $portable:ident) => {
        fn $name(x: &[f32], out: &mut [f32]) {
            assert_eq!(x.len(), out.len());
            #[cfg(target_arch = "x86_64")]
            if has_avx2_fma() {
                // SAFETY: the CPU supports AVX2 and FMA (checked just above), which is
                // all the `target_feature` function requires; it stays within the
                // equal-length slices it is given.
                unsafe { avx2::$avx(x, out) };
                return;
            }
            portable::$portable(x, out);
        }
    };
}

impl Kernels for f32 {
    gemm_impl!(f32);
    dispatch_f32!(exp_slice, exp, exp);
    dispatch_f32!(tanh_slice, tanh, tanh);
    dispatch_f32!(sigmoid_slice, sigmoid, sigmoid);
    dispatch_f32!(softplus_slice, softplus, softplus);
    fn gelu_slice(x: &[f32], out: &mut [f32]) {
        assert_eq!(x.len(), out.len());
        #[cfg(target_arch = "x86_64")]
        if has_avx2_fma() {
            // SAFETY: AVX2 and FMA are present (checked just above); the kernel stays
            // within the equal-length slices.
            unsafe { avx2::gelu(x, out) };
            return;
        }
        portable::gelu(x, out, crate::special::erfc_fast);
    }
    fn gelu_grad_slice(x: &[f32], out: &mut [f32]) {
        assert_eq!(x.len(), out.len());
        #[cfg(target_arch = "x86_64")]
        if has_avx2_fma() {
            // SAFETY: as for `gelu_slice`.
            unsafe { avx2::gelu_grad(x, out) };
            return;
        }
        portable::gelu_grad(x, out, crate::special::erfc_fast);
    }
}

impl Kernels for f64 {
    gemm_impl!(f64);
    fn exp_slice(x: &[f64], out: &mut [f64]) {
        portable::exp(x, out)
    }
    fn tanh_slice(x: &[f64], out: &mut [f64]) {
        portable::tanh(x, out)
    }
    fn sigmoid_slice(x: &[f64], out: &mut [f64]) {
        portable::sigmoid(x, out)
    }
    fn softplus_slice(x: &[f64], out: &mut [f64]) {
        portable::softplus(x, out)
    }
    fn gelu_slice(x: &[f64], out: &mut [f64]) {
        portable::gelu(x, out, crate::special::erfc)
    }
    fn gelu_grad_slice(x: &[f64], out: &mut [f64]) {
        portable::gelu_grad(x, out, crate::special::erfc)
    }
}

pub use portable::{sigmoid_scalar, softplus_scalar};

/// Runs `f` compiled for AVX2/FMA when the CPU has them: `f` is inlined into a
/// function with those target features, so the loops it contains (written as plain
/// safe Rust) are auto-vectorised with 256-bit registers. Only code inlined into the
/// scope gets the features: a function that `f` calls without inlining it is
/// compiled for the baseline, so the scope belongs around the loops themselves.
/// Floating-point semantics are unchanged (no contraction into FMA without
/// fast-math), so the results are the same bits as the portable path.
#[inline(always)]
pub fn simd_scope<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    if has_avx2_fma() {
        // SAFETY: AVX2 and FMA are available (checked just above), the only
        // requirement of the target-feature function.
        return unsafe { avx2::scope(f) };
    }
    f()
}

#[cfg(test)]
mod path_tests {
    use super::*;

    #[test]
    fn kernel_path_names_one_of_the_four_paths() {
        let path = kernel_path();
        assert!(
            ["avx512", "avx2", "neon", "portable"].contains(&path),
            "unexpected kernel path {path:?}"
        );
        if portable_forced() {
            assert_eq!(path, "portable");
        }
        // The path agrees with what the CPU reports.
        let features = cpu_features();
        match path {
            "avx512" => assert!(features.contains(&"avx512f")),
            "avx2" => assert!(features.contains(&"avx2") && features.contains(&"fma")),
            "neon" => assert!(features.contains(&"neon")),
            _ => {}
        }
        assert!(features
            .iter()
            .all(|f| ["avx512f", "avx2", "fma", "neon"].contains(f)));
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    fn inputs() -> Vec<f32> {
        let mut v: Vec<f32> = (-2000..2000).map(|i| i as f32 * 0.05).collect();
        v.extend([
            0.0,
            -0.0,
            1e-8,
            -1e-8,
            1e-30,
            88.7,
            89.0,
            -87.5,
            -103.0,
            -110.0,
            200.0,
            -200.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            0.624,
            0.626,
            -0.626,
        ]);
        v
    }

    fn close(a: f32, b: f32, atol: f32, rtol: f32) -> bool {
        if a.is_nan() || b.is_nan() {
            return a.is_nan() && b.is_nan();
        }
        if a == b {
            return true;
        }
        let scale = a.abs().max(b.abs());
        // Subnormal results are flushed differently by the two paths.
        scale < 1e-37 || (a - b).abs() <= atol + rtol * scale
    }

    fn compare(name: &str, simd: unsafe fn(&[f32], &mut [f32]), port: fn(&[f32], &mut [f32])) {
        compare_within(name, simd, port, 0.0, 1e-6);
    }

    fn compare_within(
        name: &str,
        simd: unsafe fn(&[f32], &mut [f32]),
        port: fn(&[f32], &mut [f32]),
        atol: f32,
        rtol: f32,
    ) {
        if !has_avx2_fma() {
            return;
        }
        let mut x = inputs();
        x.push(f32::NAN);
        let mut a = vec![0.0; x.len()];
        let mut b = vec![0.0; x.len()];
        // SAFETY: AVX2 and FMA are available (checked above).
        unsafe { simd(&x, &mut a) };
        port(&x, &mut b);
        for i in 0..x.len() {
            assert!(
                close(a[i], b[i], atol, rtol),
                "{name}({}) = {} (simd) vs {} (portable)",
                x[i],
                a[i],
                b[i]
            );
        }
    }

    #[test]
    fn avx2_paths_agree_with_the_portable_ones() {
        compare("exp", avx2::exp, portable::exp);
        compare("tanh", avx2::tanh, portable::tanh);
        compare("sigmoid", avx2::sigmoid, portable::sigmoid);
        compare("softplus", avx2::softplus, portable::softplus);
        // gelu's contract is 2e-7 absolute + 1e-6 relative against f64 for each
        // path (see the tail test in tests/suite/elementwise.rs), so the two paths agree
        // within twice that.
        let gelu = |x: &[f32], o: &mut [f32]| portable::gelu(x, o, crate::special::erfc_fast);
        compare_within("gelu", avx2::gelu, gelu, 4e-7, 2e-6);
        let grad = |x: &[f32], o: &mut [f32]| portable::gelu_grad(x, o, crate::special::erfc_fast);
        compare_within("gelu_grad", avx2::gelu_grad, grad, 4e-7, 2e-6);
    }

    #[test]
    fn gemm_handles_k_zero_and_strided_views() {
        let a = [1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0];
        // A = rows of a viewed transposed: 3x2 with row stride 1, col stride 3.
        let av = MatRef {
            data: &a,
            offset: 0,
            rows: 3,
            cols: 2,
            row_stride: 1,
            col_stride: 3,
        };
        let bv = MatRef {
            data: &a,
            offset: 0,
            rows: 2,
            cols: 1,
            row_stride: 1,
            col_stride: 0,
        };
        let mut c = [0.0; 3];
        f64::gemm(av, bv, &mut c, 1);
        // rows of A: [1,4], [2,5], [3,6]; B = [1, 2]
        assert_eq!(c, [9.0, 12.0, 15.0]);
        let empty = MatRef {
            data: &a,
            offset: 0,
            rows: 2,
            cols: 0,
            row_stride: 0,
            col_stride: 1,
        };
        let eb = MatRef {
            data: &a,
            offset: 0,
            rows: 0,
            cols: 2,
            row_stride: 2,
            col_stride: 1,
        };
        let mut c = [7.0; 4];
        f64::gemm(empty, eb, &mut c, 2);
        assert_eq!(c, [0.0; 4]);
    }
}
