//! The micro-kernels' bodies, written once over a vector type and its intrinsics
//! and instantiated for each instruction set (`simd.rs` for x86-64, `neon.rs` for
//! aarch64). Each element of a tile is one fused multiply-add chain over the
//! depth, in order, from zero, followed by the same epilogue, whatever the vector
//! width: that is what makes every instantiation give the same bits.
//!
//! The intrinsics are passed by name with x86's argument order: `$fma(a, b, c)` is
//! a·b + c fused, `$splat(x)` broadcasts a scalar, `$zero()` is the zero vector.

/// Defines one micro-kernel: `$mr` rows of two `$lanes`-wide vectors.
macro_rules! micro_kernel {
    ($name:ident, $feature:literal, $t:ty, $v:ty, $lanes:literal, $mr:literal,
     $zero:ident, $load:ident, $store:ident, $splat:ident, $fma:ident, $mul:ident) => {
        /// `C[..MR, ..NR] ← α·(A·B) + β·C` for one tile (β = 0: C is not read).
        ///
        /// # Safety
        /// The CPU has the kernel's features; `a` holds `kc·MR` and `b` `kc·NR`
        /// readable elements; `c` addresses MR rows of NR writable elements at row
        /// stride `ldc`.
        #[target_feature(enable = $feature)]
        unsafe fn $name(
            kc: usize,
            a: *const $t,
            b: *const $t,
            c: *mut $t,
            ldc: usize,
            alpha: $t,
            beta: $t,
        ) {
            const NR: usize = 2 * $lanes;
            let mut acc = [[$zero(); 2]; $mr];
            for p in 0..kc {
                // SAFETY: p < kc, so the row p of each panel is inside the buffers.
                let (b0, b1) = unsafe { ($load(b.add(p * NR)), $load(b.add(p * NR + $lanes))) };
                for i in 0..$mr {
                    let ai = $splat(unsafe { *a.add(p * $mr + i) });
                    acc[i][0] = $fma(ai, b0, acc[i][0]);
                    acc[i][1] = $fma(ai, b1, acc[i][1]);
                }
            }
            store_tile!(acc, c, ldc, alpha, beta, $lanes, $mr, $load, $store, $splat, $fma, $mul);
        }
    };
}

/// The epilogue every kernel shares: `C ← α·acc` (β = 0, C unread) or
/// `fma(α, acc, β·C)` for the `MR × 2` vectors of `acc`.
macro_rules! store_tile {
    ($acc:ident, $c:ident, $ldc:ident, $alpha:ident, $beta:ident, $lanes:literal, $mr:literal,
     $load:ident, $store:ident, $splat:ident, $fma:ident, $mul:ident) => {
        let va = $splat($alpha);
        for i in 0..$mr {
            for h in 0..2 {
                // SAFETY: row i < MR, columns h·lanes.. < NR of the tile.
                let at = unsafe { $c.add(i * $ldc + h * $lanes) };
                let r = if $beta == 0.0 {
                    $mul(va, $acc[i][h])
                } else {
                    let old = unsafe { $load(at) };
                    $fma(va, $acc[i][h], $mul($splat($beta), old))
                };
                unsafe { $store(at, r) };
            }
        }
    };
}

/// Defines one kernel that reads B in place ([`RowKernel`]): row p of the tile's
/// B is the `$lanes` values at `b[0] + offs[p]` then the `$lanes` at
/// `b[1] + offs[p]`; otherwise the kernel of the same tile, operation for operation.
macro_rules! row_kernel {
    ($name:ident, $feature:literal, $t:ty, $lanes:literal, $mr:literal,
     $zero:ident, $load:ident, $store:ident, $splat:ident, $fma:ident, $mul:ident) => {
        /// `C[..MR, ..NR] ← α·(A·B) + β·C` for one tile, B read where it lies.
        ///
        /// # Safety
        /// The CPU has the kernel's features; `a` holds `kc·MR` readable elements,
        /// `offs` holds `kc` offsets, and `b[h] + offs[p]` starts `$lanes` readable
        /// elements for every p < kc and h < 2; `c` addresses MR rows of NR
        /// writable elements at row stride `ldc`.
        #[target_feature(enable = $feature)]
        #[allow(clippy::too_many_arguments)]
        unsafe fn $name(
            kc: usize,
            a: *const $t,
            offs: *const usize,
            b: [*const $t; 2],
            c: *mut $t,
            ldc: usize,
            alpha: $t,
            beta: $t,
        ) {
            let mut acc = [[$zero(); 2]; $mr];
            for p in 0..kc {
                // SAFETY: p < kc; the offsets and B rows are readable as required.
                let (b0, b1) = unsafe {
                    let o = *offs.add(p);
                    ($load(b[0].add(o)), $load(b[1].add(o)))
                };
                for i in 0..$mr {
                    let ai = $splat(unsafe { *a.add(p * $mr + i) });
                    acc[i][0] = $fma(ai, b0, acc[i][0]);
                    acc[i][1] = $fma(ai, b1, acc[i][1]);
                }
            }
            store_tile!(acc, c, ldc, alpha, beta, $lanes, $mr, $load, $store, $splat, $fma, $mul);
        }
    };
}

/// Defines one kernel that reads A in place ([`GatherKernel`]): A's value at row i,
/// depth p is `a[rows[i] + cols[p]]`; B is a packed panel. Otherwise the kernel of
/// the same tile, operation for operation.
macro_rules! gather_kernel {
    ($name:ident, $feature:literal, $t:ty, $lanes:literal, $mr:literal,
     $zero:ident, $load:ident, $store:ident, $splat:ident, $fma:ident, $mul:ident) => {
        /// `C[..MR, ..NR] ← α·(A·B) + β·C` for one tile, A read where it lies.
        ///
        /// # Safety
        /// The CPU has the kernel's features; `rows` holds MR offsets and `cols`
        /// `kc`, every `a + rows[i] + cols[p]` is readable; `b` holds `kc·NR`
        /// readable elements; `c` addresses MR rows of NR writable elements at row
        /// stride `ldc`.
        #[target_feature(enable = $feature)]
        #[allow(clippy::too_many_arguments)]
        unsafe fn $name(
            kc: usize,
            a: *const $t,
            rows: *const usize,
            cols: *const usize,
            b: *const $t,
            c: *mut $t,
            ldc: usize,
            alpha: $t,
            beta: $t,
        ) {
            const NR: usize = 2 * $lanes;
            // SAFETY: rows holds MR offsets; each row start is inside `a`'s reach.
            let starts: [*const $t; $mr] = std::array::from_fn(|i| unsafe { a.add(*rows.add(i)) });
            let mut acc = [[$zero(); 2]; $mr];
            for p in 0..kc {
                // SAFETY: p < kc; the panel row and the A values are readable.
                let (b0, b1, o) = unsafe {
                    (
                        $load(b.add(p * NR)),
                        $load(b.add(p * NR + $lanes)),
                        *cols.add(p),
                    )
                };
                for i in 0..$mr {
                    let ai = $splat(unsafe { *starts[i].add(o) });
                    acc[i][0] = $fma(ai, b0, acc[i][0]);
                    acc[i][1] = $fma(ai, b1, acc[i][1]);
                }
            }
            store_tile!(acc, c, ldc, alpha, beta, $lanes, $mr, $load, $store, $splat, $fma, $mul);
        }
    };
}
