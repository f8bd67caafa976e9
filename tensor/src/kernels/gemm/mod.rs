//! The engine's own GEMM: `C ← α·A·B + β·C`, blocked and packed in the manner of
//! Goto and BLIS, with register-tiled micro-kernels for AVX-512, AVX2/FMA, aarch64
//! NEON and a portable fallback, chosen at run time.
//!
//! Blocking. The depth k is cut into `⌈k / KC⌉` equal blocks (a function of k
//! alone). For each depth block A is packed into panels of `MR` rows and B into
//! panels of `NR` columns (each panel `kc` deep, contiguous, 64-byte aligned), and
//! every `MR × NR` tile of C is updated by one micro-kernel call. A task owns a set
//! of B's column panels (and, when there are few of them, a share of the rows):
//! it packs its B panels once per depth block, on their first use, and walks its
//! rows in blocks of `MC` so that the packed A block stays in L2 while each B panel
//! stays in L1.
//!
//! Reproducibility. Each element of C is one fused multiply-add chain over a depth
//! block, from zero, in order, then `C ← α·acc + β·C` for the first block and
//! `C ← C + α·acc` for the others. Neither the tile an element falls in, nor the
//! task, nor the thread count changes that sequence, so the result is bitwise the
//! same for any split; and the AVX-512 and AVX2 kernels, which differ only in tile
//! size, give the same bits too. The portable kernel multiplies and adds unfused.
//!
//! Operands are [`PanelSource`]s: a strided matrix ([`Strided`]), or anything that
//! can write its own panels, such as a convolution's patch matrix, which is then
//! never materialised. [`gemm_upper`] computes only the tiles of a square C that
//! reach its upper triangle (a blocked Cholesky's symmetric trailing update), the
//! same bits on and above the diagonal.

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[macro_use]
mod tiles;

mod buffer;
mod gather;
#[cfg(target_arch = "aarch64")]
mod neon;
mod pack;
mod portable;
mod rows;
#[cfg(target_arch = "x86_64")]
mod simd;
mod transpose;

pub use gather::GatherKernel;
pub use pack::{PanelSource, Strided};
pub use rows::{Offsets, RowKernel};
#[cfg(target_arch = "x86_64")]
pub(crate) use transpose::transpose8_f32;
pub use transpose::{pack_transposed, pack_transposed_rows};

use crate::parallel;
use buffer::Buffer;

/// A micro-kernel and its tile.
#[derive(Clone, Copy)]
pub struct MicroKernel<T> {
    /// The instruction set ("avx512", "avx2", "neon", "portable").
    pub name: &'static str,
    /// Rows of the tile (the height of an A panel).
    pub mr: usize,
    /// Columns of the tile (the width of a B panel).
    pub nr: usize,
    /// Whether the kernel fuses its multiply-adds (and so its epilogue).
    fused: bool,
    run: unsafe fn(usize, *const T, *const T, *mut T, usize, T, T),
}

mod sealed {
    /// Only `f32` and `f64` are GEMM scalars (the packing buffers rely on every bit
    /// pattern being a valid value).
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// The element types the GEMM runs on (`f32`, `f64`; sealed).
pub trait Scalar:
    sealed::Sealed
    + Copy
    + Send
    + Sync
    + PartialEq
    + std::ops::Add<Output = Self>
    + std::ops::Mul<Output = Self>
    + 'static
{
    /// Zero.
    const ZERO: Self;
    /// One.
    const ONE: Self;
    /// The largest depth block (the same for every kernel of the type, so that they
    /// agree to the bit).
    const KC: usize;
    /// The kernel this CPU runs (AVX-512, else AVX2/FMA, else NEON, else portable; the
    /// portable one when `TENSOR_PORTABLE` is set).
    fn kernel() -> MicroKernel<Self>;
    /// Every kernel this CPU can run, the preferred first (for tests and benches
    /// that compare them).
    fn kernels() -> Vec<MicroKernel<Self>>;
    /// The twin of [`Scalar::kernel`] that reads B in place, if it has one (the
    /// SIMD kernels do, the portable one does not).
    fn row_kernel() -> Option<RowKernel<Self>>;
    /// The twin of [`Scalar::kernel`] that reads A in place, if it has one (the
    /// SIMD kernels do, the portable one does not).
    fn gather_kernel() -> Option<GatherKernel<Self>>;
    /// `a·b + c` rounded once.
    fn fused_mul_add(a: Self, b: Self, c: Self) -> Self;
    /// The kernels' epilogue for one element: `α·acc` when β = 0 (`old` unread),
    /// else `α·acc + β·old`, fused or not as the kernel is.
    #[inline(always)]
    fn epilogue(fused: bool, alpha: Self, acc: Self, beta: Self, old: Self) -> Self {
        if beta == Self::ZERO {
            alpha * acc
        } else if fused {
            Self::fused_mul_add(alpha, acc, beta * old)
        } else {
            alpha * acc + beta * old
        }
    }
}

/// The twin (of two) of the kernel named `chosen`: the chosen kernel's name says
/// which features were detected; the portable kernel has no twin.
#[cfg(target_arch = "x86_64")]
fn simd_twin<K>(chosen: &str, avx512: K, avx2: K) -> Option<K> {
    match chosen {
        "avx512" => Some(avx512),
        "avx2" => Some(avx2),
        _ => None,
    }
}

/// The NEON twin of the kernel named `chosen` (none for the portable kernel).
#[cfg(target_arch = "aarch64")]
fn neon_twin<K>(chosen: &str, neon: K) -> Option<K> {
    (chosen == "neon").then_some(neon)
}

macro_rules! scalar_impl {
    ($t:ty, $avx512:ident, $avx2:ident, $avx512_rows:ident, $avx2_rows:ident,
     $avx512_gather:ident, $avx2_gather:ident, $neon:ident, $neon_rows:ident,
     $neon_gather:ident) => {
        impl Scalar for $t {
            const ZERO: $t = 0.0;
            const ONE: $t = 1.0;
            const KC: usize = 256;
            fn kernel() -> MicroKernel<$t> {
                static CHOSEN: std::sync::OnceLock<MicroKernel<$t>> = std::sync::OnceLock::new();
                *CHOSEN.get_or_init(|| {
                    if super::portable_forced() {
                        portable::kernel()
                    } else {
                        // The fastest this CPU runs, AVX-512 only if not switched off;
                        // the portable kernel is always in the list.
                        Self::kernels()
                            .into_iter()
                            .find(|k| !(k.name == "avx512" && super::avx512_disabled()))
                            .unwrap_or_else(portable::kernel)
                    }
                })
            }
            fn kernels() -> Vec<MicroKernel<$t>> {
                let mut out = Vec::new();
                #[cfg(target_arch = "x86_64")]
                {
                    if std::arch::is_x86_feature_detected!("avx512f") {
                        out.push(simd::$avx512);
                    }
                    if std::arch::is_x86_feature_detected!("avx2")
                        && std::arch::is_x86_feature_detected!("fma")
                    {
                        out.push(simd::$avx2);
                    }
                }
                #[cfg(target_arch = "aarch64")]
                if std::arch::is_aarch64_feature_detected!("neon") {
                    out.push(neon::$neon);
                }
                out.push(portable::kernel());
                out
            }
            fn row_kernel() -> Option<RowKernel<$t>> {
                #[cfg(target_arch = "x86_64")]
                return simd_twin(Self::kernel().name, simd::$avx512_rows, simd::$avx2_rows);
                #[cfg(target_arch = "aarch64")]
                return neon_twin(Self::kernel().name, neon::$neon_rows);
                #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
                None
            }
            fn gather_kernel() -> Option<GatherKernel<$t>> {
                #[cfg(target_arch = "x86_64")]
                return simd_twin(
                    Self::kernel().name,
                    simd::$avx512_gather,
                    simd::$avx2_gather,
                );
                #[cfg(target_arch = "aarch64")]
                return neon_twin(Self::kernel().name, neon::$neon_gather);
                #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
                None
            }
            fn fused_mul_add(a: $t, b: $t, c: $t) -> $t {
                a.mul_add(b, c)
            }
        }
    };
}
scalar_impl!(
    f32,
    F32_AVX512,
    F32_AVX2,
    F32_AVX512_ROWS,
    F32_AVX2_ROWS,
    F32_AVX512_GATHER,
    F32_AVX2_GATHER,
    F32_NEON,
    F32_NEON_ROWS,
    F32_NEON_GATHER
);
scalar_impl!(
    f64,
    F64_AVX512,
    F64_AVX2,
    F64_AVX512_ROWS,
    F64_AVX2_ROWS,
    F64_AVX512_GATHER,
    F64_AVX2_GATHER,
    F64_NEON,
    F64_NEON_ROWS,
    F64_NEON_GATHER
);

/// Rows of C per block of a task: the packed A block (`MC × KC`) stays in L2.
const MC: usize = 192;
/// Column panels per task at most, so that a task's packed B (`KC × 16·NR`) stays
/// in L2 as well.
const GROUP_PANELS: usize = 16;
/// Column groups per thread at least, when there are enough B panels: a thread
/// slowed down (a busy core, a cold cache) then leaves its remaining groups to the
/// others instead of holding up the product. Each task packs only its own panels,
/// so more tasks pack nothing twice.
const TASKS_PER_THREAD: usize = 8;
/// Elements of packed A at most at a time (rows and depth are walked in
/// super-blocks beyond it).
const A_LIMIT: usize = 1 << 20;
/// Multiply-adds below which a product stays on the calling thread (waking a
/// worker costs about as much as a product of this size).
pub const PAR_WORK: usize = 1 << 22;

/// Calls `f` with a scratch buffer of `len` elements recycled on this thread (not
/// zeroed: it holds stale values, so `f` writes before it reads), for operands that
/// stage a block before packing it, and the FFT's rows. Always inlined, so that `f`
/// is compiled with its caller's target features: called from the FFT's AVX2 scope
/// and left out of line, it had compiled the real transform's post-processing loop
/// to 4-wide SSE.
#[inline(always)]
pub fn with_scratch<T: Scalar, R>(len: usize, f: impl FnOnce(&mut [T]) -> R) -> R {
    let mut buf = Buffer::<T>::new(len);
    f(buf.as_mut_slice())
}

/// How a product of depth `k` is cut into depth blocks: their number and the depth
/// of each but the last (which takes the rest). Each element's chain restarts at
/// every block, so a kernel that reproduces the GEMM's bits cuts the depth so too.
pub fn depth_blocks<T: Scalar>(k: usize) -> (usize, usize) {
    let kblocks = k.div_ceil(T::KC);
    (kblocks, k.div_ceil(kblocks.max(1)))
}

/// A pointer to C that tasks share; each writes only its own tiles.
#[derive(Clone, Copy)]
struct SharedC<T>(*mut T);
// SAFETY: tasks write disjoint tiles of C (distinct columns, or distinct rows), so
// sending the pointer across threads cannot make two of them touch one element.
unsafe impl<T: Send> Send for SharedC<T> {}
unsafe impl<T: Send> Sync for SharedC<T> {}

/// `C ← α·A·B + β·C`: A is `m × k` given as its transpose (a `k × m`
/// [`PanelSource`]), B is `k × n`, C is the `m × n` row-major matrix at the start of
/// `c` with row stride `ldc`. With β = 0, C is not read (it may hold anything). With
/// `parallel`, a product large enough is split across the threads (the result does
/// not depend on it).
///
/// # Panics
/// When the operands' depths differ or C does not fit `c` (callers check shapes
/// and report errors first).
pub fn gemm<T: Scalar>(
    alpha: T,
    a_t: &impl PanelSource<T>,
    b: &impl PanelSource<T>,
    beta: T,
    c: &mut [T],
    ldc: usize,
    parallel: bool,
) {
    gemm_using(T::kernel(), alpha, a_t, b, beta, c, ldc, parallel)
}

/// [`gemm`] on the upper triangle of a square C only (a symmetric rank-k update,
/// as a blocked Cholesky's trailing update `C −= R₁₂ᵀ R₁₂` is): the tiles wholly
/// below the diagonal are skipped, and the B panels only they use are not packed,
/// so the operands are packed once for the whole triangle rather than once per
/// block of rows. The tiles that straddle the diagonal are computed whole: the
/// elements they hold below it are overwritten with meaningless values. Every
/// element on or above the diagonal gets the bits [`gemm`] gives it.
///
/// # Panics
/// As [`gemm`], and when C is not square.
pub fn gemm_upper<T: Scalar>(
    alpha: T,
    a_t: &impl PanelSource<T>,
    b: &impl PanelSource<T>,
    beta: T,
    c: &mut [T],
    ldc: usize,
    parallel: bool,
) {
    assert_eq!(a_t.width(), b.width(), "gemm_upper: C must be square");
    let region = Region::Upper;
    gemm_in(T::kernel(), region, alpha, a_t, b, beta, c, ldc, parallel)
}

/// [`gemm`] with a given micro-kernel (one of [`Scalar::kernels`]), for tests and
/// benches that compare them.
#[allow(clippy::too_many_arguments)]
pub fn gemm_using<T: Scalar>(
    kern: MicroKernel<T>,
    alpha: T,
    a_t: &impl PanelSource<T>,
    b: &impl PanelSource<T>,
    beta: T,
    c: &mut [T],
    ldc: usize,
    parallel: bool,
) {
    gemm_in(kern, Region::Full, alpha, a_t, b, beta, c, ldc, parallel)
}

/// Which tiles of C a product computes.
#[derive(Clone, Copy, PartialEq)]
enum Region {
    /// All of them.
    Full,
    /// Those that reach the diagonal or above it.
    Upper,
}

/// The product on `region` of C ([`gemm_using`], [`gemm_upper`]).
#[allow(clippy::too_many_arguments)]
fn gemm_in<T: Scalar>(
    kern: MicroKernel<T>,
    region: Region,
    alpha: T,
    a_t: &impl PanelSource<T>,
    b: &impl PanelSource<T>,
    beta: T,
    c: &mut [T],
    ldc: usize,
    parallel: bool,
) {
    let (m, n, k) = (a_t.width(), b.width(), a_t.depth());
    assert_eq!(b.depth(), k, "gemm: inner dimensions");
    if m == 0 || n == 0 {
        return;
    }
    assert!(
        ldc >= n && (m - 1) * ldc + n <= c.len(),
        "gemm: C out of bounds"
    );
    if k == 0 {
        for row in c.chunks_mut(ldc).take(m) {
            for v in &mut row[..n] {
                *v = if beta == T::ZERO { T::ZERO } else { beta * *v };
            }
        }
        return;
    }
    // In a team's region the caller has judged the split worth it: starting a
    // parallel loop there costs about a microsecond, not a worker's wake-up.
    let large = m.saturating_mul(n).saturating_mul(k) >= PAR_WORK;
    let threads = if parallel && (large || parallel::in_team()) {
        parallel::threads()
    } else {
        1
    };
    let (kblocks, kstep) = depth_blocks::<T>(k);
    let rows_max = (A_LIMIT / kstep).max(MC) / MC * MC;
    let c_ptr = SharedC(c.as_mut_ptr());
    for i0 in (0..m).step_by(rows_max) {
        let rows = rows_max.min(m - i0);
        let row_panels = rows.div_ceil(kern.mr);
        let per_block = row_panels * kern.mr * kstep;
        let blocks_at_once = (A_LIMIT / per_block).max(1);
        for kb0 in (0..kblocks).step_by(blocks_at_once) {
            let kbs = kb0..kblocks.min(kb0 + blocks_at_once);
            let depth = |kb: usize| (kb * kstep, kstep.min(k - kb * kstep));
            // Pack A's rows i0.. for these depth blocks: block t, panel r at
            // (t·row_panels + r)·MR·kstep.
            let mut apack = Buffer::<T>::new(kbs.len() * per_block);
            let panel_len = kern.mr * kstep;
            parallel::for_each_chunk_if(
                apack.as_mut_slice(),
                panel_len,
                threads > 1 && (kbs.len() * per_block >= 1 << 16 || parallel::in_team()),
                |start, out| {
                    let (t, r) = (start / per_block, start % per_block / panel_len);
                    let (k0, kc) = depth(kb0 + t);
                    a_t.pack(k0, kc, i0 + r * kern.mr, kern.mr, &mut out[..kc * kern.mr]);
                },
            );
            let apack = apack.as_slice();
            let plan = Plan::new(rows, n, kern, threads, region == Region::Upper && i0 == 0);
            let task = |id: usize| {
                let (r0, r1, p0, p1) = plan.task(id);
                let mut bpack = Buffer::<T>::new((p1 - p0) * kern.nr * kstep);
                for kb in kbs.clone() {
                    let (k0, kc) = depth(kb);
                    let beta_here = if kb == 0 { beta } else { T::ONE };
                    let a_block = &apack[(kb - kb0) * per_block..];
                    for ic in (r0..r1).step_by(MC) {
                        for jp in p0..p1 {
                            // The panel's last column, against the task's first row.
                            let last_col = (jp * kern.nr + kern.nr).min(n) - 1;
                            if region == Region::Upper && i0 + r0 > last_col {
                                continue;
                            }
                            let bp = &mut bpack.as_mut_slice()[(jp - p0) * kern.nr * kstep..];
                            if ic == r0 {
                                b.pack(k0, kc, jp * kern.nr, kern.nr, &mut bp[..kc * kern.nr]);
                            }
                            let bp = &bp[..kc * kern.nr];
                            for ip in ic / kern.mr..(r1.min(ic + MC)).div_ceil(kern.mr) {
                                if region == Region::Upper && i0 + ip * kern.mr > last_col {
                                    break;
                                }
                                let ap = &a_block[ip * panel_len..ip * panel_len + kc * kern.mr];
                                let tile = Tile {
                                    row: i0 + ip * kern.mr,
                                    col: jp * kern.nr,
                                    rows: kern.mr.min(rows - ip * kern.mr),
                                    cols: kern.nr.min(n - jp * kern.nr),
                                };
                                // SAFETY: the panels hold kc·MR and kc·NR elements;
                                // the tile lies inside C (rows < m, columns < n,
                                // checked against c.len() above); this task alone
                                // writes it.
                                unsafe {
                                    run_tile(kern, kc, ap, bp, c_ptr, ldc, tile, alpha, beta_here)
                                };
                            }
                        }
                    }
                }
            };
            parallel::for_each_index(plan.tasks(), threads > 1, task);
        }
    }
}

/// Where one micro-kernel call writes: rows `row..row+rows`, columns
/// `col..col+cols` of C (fewer than MR × NR at the edges).
#[derive(Clone, Copy)]
struct Tile {
    row: usize,
    col: usize,
    rows: usize,
    cols: usize,
}

/// Runs the micro-kernel on one tile: in place when the tile is whole, else into a
/// local tile whose valid part then gets the same epilogue element by element.
///
/// # Safety
/// `a` and `b` hold `kc·MR` and `kc·NR` elements; the tile lies inside the C that
/// `c` points to (row stride `ldc`) and no other thread writes it.
#[allow(clippy::too_many_arguments)]
unsafe fn run_tile<T: Scalar>(
    kern: MicroKernel<T>,
    kc: usize,
    a: &[T],
    b: &[T],
    c: SharedC<T>,
    ldc: usize,
    tile: Tile,
    alpha: T,
    beta: T,
) {
    debug_assert!(a.len() >= kc * kern.mr && b.len() >= kc * kern.nr);
    // SAFETY: the tile's first element lies inside C.
    let corner = unsafe { c.0.add(tile.row * ldc + tile.col) };
    if tile.rows == kern.mr && tile.cols == kern.nr {
        // SAFETY: a whole tile inside C, the panels' lengths as required.
        unsafe { (kern.run)(kc, a.as_ptr(), b.as_ptr(), corner, ldc, alpha, beta) };
        return;
    }
    let mut local = [T::ZERO; 8 * 32];
    debug_assert!(kern.mr * kern.nr <= local.len());
    // SAFETY: `local` holds MR rows of NR elements at row stride NR.
    unsafe {
        (kern.run)(
            kc,
            a.as_ptr(),
            b.as_ptr(),
            local.as_mut_ptr(),
            kern.nr,
            T::ONE,
            T::ZERO,
        )
    };
    for i in 0..tile.rows {
        for j in 0..tile.cols {
            // SAFETY: (i, j) is inside the tile, hence inside C.
            let at = unsafe { corner.add(i * ldc + j) };
            let acc = local[i * kern.nr + j];
            unsafe { *at = T::epilogue(kern.fused, alpha, acc, beta, *at) };
        }
    }
}

/// How the tiles of one row super-block are split into tasks: column groups of B
/// panels, and, when there are fewer panels than threads, row chunks too.
struct Plan {
    rows: usize,
    row_chunks: usize,
    chunk_rows: usize,
    panels: usize,
    groups: usize,
    group_panels: usize,
    /// Groups of equal triangle area rather than equal width (an upper-triangle
    /// product from row 0, whose column j holds j + 1 rows of work): group g ends
    /// at panel ⌈panels·√((g + 1)/groups)⌉.
    triangle: bool,
}

impl Plan {
    fn new<T>(rows: usize, n: usize, kern: MicroKernel<T>, threads: usize, triangle: bool) -> Plan {
        let panels = n.div_ceil(kern.nr);
        let (row_chunks, col_threads) = if threads > 1 && panels < 2 * threads {
            (threads, 1)
        } else {
            (1, threads)
        };
        let groups = panels.div_ceil(GROUP_PANELS * col_threads) * col_threads;
        // Several groups a thread when the panels allow (see TASKS_PER_THREAD).
        let groups = if col_threads > 1 {
            groups.max(TASKS_PER_THREAD * col_threads)
        } else {
            groups
        };
        let groups = groups.min(panels).max(1);
        let group_panels = panels.div_ceil(groups);
        let chunk_rows = rows.div_ceil(row_chunks).div_ceil(kern.mr) * kern.mr;
        Plan {
            rows,
            row_chunks: rows.div_ceil(chunk_rows),
            chunk_rows,
            panels,
            groups: panels.div_ceil(group_panels),
            group_panels,
            triangle: triangle && row_chunks == 1,
        }
    }
    fn tasks(&self) -> usize {
        self.row_chunks * self.groups
    }
    /// The first panel of group `g` (`panels` for g = groups).
    fn group_start(&self, g: usize) -> usize {
        if self.triangle {
            let share = (g as f64 / self.groups as f64).sqrt();
            ((self.panels as f64 * share).ceil() as usize).min(self.panels)
        } else {
            self.panels.min(g * self.group_panels)
        }
    }
    /// Task `id`'s rows `r0..r1` (of the super-block) and panels `p0..p1`.
    fn task(&self, id: usize) -> (usize, usize, usize, usize) {
        let (rc, g) = (id / self.groups, id % self.groups);
        let r0 = rc * self.chunk_rows;
        (
            r0,
            self.rows.min(r0 + self.chunk_rows),
            self.group_start(g),
            self.group_start(g + 1),
        )
    }
}
