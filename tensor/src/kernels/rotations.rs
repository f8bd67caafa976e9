//! Plane rotations applied to the rows of a panel, for the symmetric
//! eigensolver's QL phase: rotation `(i, c, s)` takes rows x = i and y = i + 1 to
//! `x ← c·x − s·y`, `y ← s·x + c·y`. A QL sweep's rotations come with i falling
//! by one each, so the row a rotation leaves in x is the next one's y: along such a
//! run the AVX-512 path keeps that row in registers (a 32-wide row of `f64` is four
//! vectors), loading and storing one row per rotation instead of two. Both paths
//! multiply and add unfused, in the same order, so they give the same bits.

/// One plane rotation of rows `i` and `i + 1`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlaneRotation {
    /// The first of the two rows.
    pub i: usize,
    /// The cosine.
    pub c: f64,
    /// The sine.
    pub s: f64,
}

/// Width of the panels the AVX-512 path takes (four vectors of eight `f64`).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
const WIDE: usize = 32;

/// Applies `rotations` in order to the rows of `panel` (rows of `w` elements,
/// contiguous).
///
/// # Panics
/// When a rotation's rows `i`, `i + 1` are not both inside the panel.
pub fn rotate_rows(panel: &mut [f64], w: usize, rotations: &[PlaneRotation]) {
    if w == 0 || rotations.is_empty() {
        return;
    }
    let rows = panel.len() / w;
    #[cfg(target_arch = "x86_64")]
    if w == WIDE && super::has_avx512() {
        // SAFETY: AVX-512F is present, and the panel holds `rows` rows of WIDE
        // elements (the kernel checks each rotation against `rows`).
        unsafe { avx512_rotate(panel.as_mut_ptr(), rows, rotations) };
        return;
    }
    // Other widths, and CPUs without AVX-512: the plain loop, compiled for AVX2
    // where the CPU has it (4 lanes of f64 rather than SSE2's 2).
    super::simd_scope(|| {
        for rot in rotations {
            assert!(
                rot.i < rows.saturating_sub(1),
                "rotate_rows: a rotation leaves the panel"
            );
            let (top, bottom) = panel.split_at_mut((rot.i + 1) * w);
            let (x, y) = (&mut top[rot.i * w..], &mut bottom[..w]);
            for (x, y) in x.iter_mut().zip(y.iter_mut()) {
                let t = *y;
                *y = rot.s * *x + rot.c * t;
                *x = rot.c * *x - rot.s * t;
            }
        }
    })
}

/// Panics on a rotation whose rows are not both below `rows`, before it loads or
/// stores either: the check rides along the loop, which reads each rotation anyway,
/// rather than taking a pass of its own over the rotations for every panel.
///
/// # Safety
/// AVX-512F is available; `panel` points to `rows` rows of [`WIDE`] elements.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn avx512_rotate(panel: *mut f64, rows: usize, rotations: &[PlaneRotation]) {
    use std::arch::x86_64::*;
    // i + 1 < rows, written so that it cannot wrap.
    let check = |rot: &PlaneRotation| {
        assert!(
            rot.i < rows.saturating_sub(1),
            "rotate_rows: a rotation leaves the panel"
        );
    };
    // SAFETY (every load and store below): row r of the panel is the WIDE elements
    // from panel + r·WIDE, inside it for every row of a checked rotation.
    let load = |r: usize| -> [__m512d; 4] {
        std::array::from_fn(|q| unsafe { _mm512_loadu_pd(panel.add(r * WIDE + 8 * q)) })
    };
    let store = |r: usize, v: [__m512d; 4]| {
        for (q, v) in v.into_iter().enumerate() {
            unsafe { _mm512_storeu_pd(panel.add(r * WIDE + 8 * q), v) };
        }
    };
    let mut k = 0;
    while k < rotations.len() {
        // A run of rotations whose i falls by one: row i of one is row i + 1 of the
        // next, carried in `y`.
        check(&rotations[k]);
        let mut y = load(rotations[k].i + 1);
        loop {
            let rot = rotations[k];
            check(&rot);
            let x = load(rot.i);
            let (c, s) = (_mm512_set1_pd(rot.c), _mm512_set1_pd(rot.s));
            let mut new_x = x;
            for q in 0..4 {
                let (xq, yq) = (x[q], y[q]);
                y[q] = _mm512_add_pd(_mm512_mul_pd(s, xq), _mm512_mul_pd(c, yq));
                new_x[q] = _mm512_sub_pd(_mm512_mul_pd(c, xq), _mm512_mul_pd(s, yq));
            }
            store(rot.i + 1, y);
            y = new_x;
            k += 1;
            if k == rotations.len() || rotations[k].i + 1 != rot.i {
                store(rot.i, y);
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs that fall by one, runs broken by jumps and by repeats of a row, at the
    /// panel's edges: the AVX-512 path (where the CPU has it) gives the bits of the
    /// plain loop.
    #[test]
    fn the_carried_row_path_gives_the_plain_loops_bits() {
        let rows = 40;
        let mut rng = crate::Rng::new(3);
        let start: Vec<f64> = (0..rows * WIDE).map(|_| rng.uniform() - 0.5).collect();
        let mut rotations = Vec::new();
        for (i, t) in [
            (38usize, 0.3),
            (37, 1.1),
            (36, 2.0),
            (10, 0.7),
            (9, 0.2),
            (9, 0.9),
            (0, 1.4),
            (20, 2.9),
            (21, 0.5),
        ] {
            rotations.push(PlaneRotation {
                i,
                c: f64::cos(t),
                s: f64::sin(t),
            });
        }
        for i in (0..39).rev() {
            rotations.push(PlaneRotation {
                i,
                c: (i as f64).cos(),
                s: (i as f64).sin(),
            });
        }
        let mut fast = start.clone();
        rotate_rows(&mut fast, WIDE, &rotations);
        let mut plain = start.clone();
        for rot in &rotations {
            for j in 0..WIDE {
                let (x, t) = (plain[rot.i * WIDE + j], plain[(rot.i + 1) * WIDE + j]);
                plain[(rot.i + 1) * WIDE + j] = rot.s * x + rot.c * t;
                plain[rot.i * WIDE + j] = rot.c * x - rot.s * t;
            }
        }
        assert!(fast
            .iter()
            .zip(&plain)
            .all(|(a, b)| a.to_bits() == b.to_bits()));
        assert_ne!(fast, start);
    }

    /// A rotation of the last row and the one past it, or of a row so far out that
    /// i + 1 wraps around, is refused, on both paths (32 wide and 5 wide).
    #[test]
    fn a_rotation_past_the_last_row_is_refused() {
        for w in [WIDE, 5] {
            for i in [3, usize::MAX] {
                let refused = std::panic::catch_unwind(|| {
                    let mut panel = vec![0.0; 4 * w];
                    rotate_rows(&mut panel, w, &[PlaneRotation { i, c: 1.0, s: 0.0 }]);
                });
                assert!(refused.is_err(), "row {i}, width {w}");
            }
        }
    }
}
