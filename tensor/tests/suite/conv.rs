//! conv2d against a naive loop over proptest-generated geometries (stride, padding,
//! dilation, groups) in f64; its two adjoints through the adjoint identities
//! ⟨conv(x, w), g⟩ = ⟨x, convᵀ(g, w)⟩ = ⟨w, convᵂ(g, x)⟩; large inputs that take the
//! tiled and multi-image lowering paths; the max-pool arg-max; errors.

use crate::common;

use common::config;
use proptest::prelude::*;
use tensor::{Conv2dSpec, Rng, Tensor};

fn rand(shape: &[usize], seed: u64) -> Tensor<f64> {
    Tensor::rand_normal(shape, 0.0, 1.0, &mut Rng::new(seed)).unwrap()
}

/// y[n, o, oy, ox] = Σ_{c, i, j} x[n, g·C_in/g + c, oy·s − p + i·d, ox·s − p + j·d] ·
/// w[o, c, i, j], by loops, in f64.
fn naive(x: &Tensor<f64>, w: &Tensor<f64>, spec: Conv2dSpec) -> (Vec<f64>, [usize; 4]) {
    let (xs, ws) = (x.shape(), w.shape());
    let (n, cin, h, wd) = (xs[0], xs[1], xs[2], xs[3]);
    let (cout, cing, kh, kw) = (ws[0], ws[1], ws[2], ws[3]);
    let (sh, sw) = spec.stride;
    let (ph, pw) = spec.padding;
    let (dh, dw) = spec.dilation;
    let ho = (h + 2 * ph - (kh - 1) * dh - 1) / sh + 1;
    let wo = (wd + 2 * pw - (kw - 1) * dw - 1) / sw + 1;
    let coutg = cout / spec.groups;
    let (xv, wv) = (x.to_vec(), w.to_vec());
    let mut out = vec![0.0; n * cout * ho * wo];
    for b in 0..n {
        for o in 0..cout {
            let g = o / coutg;
            for oy in 0..ho {
                for ox in 0..wo {
                    let mut acc = 0.0;
                    for c in 0..cing {
                        for i in 0..kh {
                            for j in 0..kw {
                                let iy = (oy * sh + i * dh) as isize - ph as isize;
                                let ix = (ox * sw + j * dw) as isize - pw as isize;
                                if iy < 0 || ix < 0 || iy >= h as isize || ix >= wd as isize {
                                    continue;
                                }
                                let ci = g * cing + c;
                                acc += xv[((b * cin + ci) * h + iy as usize) * wd + ix as usize]
                                    * wv[((o * cing + c) * kh + i) * kw + j];
                            }
                        }
                    }
                    out[((b * cout + o) * ho + oy) * wo + ox] = acc;
                }
            }
        }
    }
    (out, [n, cout, ho, wo])
}

fn dot(a: &Tensor<f64>, b: &Tensor<f64>) -> f64 {
    a.to_vec().iter().zip(b.to_vec()).map(|(x, y)| x * y).sum()
}

fn check(x: &Tensor<f64>, w: &Tensor<f64>, spec: Conv2dSpec, seed: u64) -> Result<(), String> {
    let y = x.conv2d(w, spec).map_err(|e| e.to_string())?;
    let (want, shape) = naive(x, w, spec);
    if y.shape() != shape {
        return Err(format!("shape {:?} vs {shape:?}", y.shape()));
    }
    let scale = want.iter().fold(1.0f64, |m, v| m.max(v.abs()));
    for (a, b) in y.to_vec().iter().zip(&want) {
        if (a - b).abs() > 1e-12 * scale {
            return Err(format!("forward {a} vs {b} ({spec:?})"));
        }
    }
    let g = rand(&shape, seed);
    let gx = g
        .conv2d_input_grad(w, x.shape(), spec)
        .map_err(|e| e.to_string())?;
    let gw = g
        .conv2d_weight_grad(x, w.shape(), spec)
        .map_err(|e| e.to_string())?;
    let (lhs, rx, rw) = (dot(&y, &g), dot(x, &gx), dot(w, &gw));
    let tol = 1e-10 * (1.0 + lhs.abs());
    if (lhs - rx).abs() > tol || (lhs - rw).abs() > tol {
        return Err(format!(
            "adjoints: ⟨y, g⟩ {lhs}, ⟨x, convᵀ⟩ {rx}, ⟨w, convᵂ⟩ {rw} ({spec:?})"
        ));
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn conv2d_and_its_adjoints_match_the_naive_loop(
        n in 1usize..3, groups in 1usize..4, cin_g in 1usize..3, cout_g in 1usize..3,
        h in 1usize..9, w in 1usize..9, kh in 1usize..4, kw in 1usize..4,
        sh in 1usize..3, sw in 1usize..3, ph in 0usize..3, pw in 0usize..3,
        dh in 1usize..3, dw in 1usize..3, seed in any::<u64>(),
    ) {
        let spec = Conv2dSpec { stride: (sh, sw), padding: (ph, pw), dilation: (dh, dw), groups };
        // Only geometries where the dilated kernel fits the padded input.
        prop_assume!((kh - 1) * dh < h + 2 * ph && (kw - 1) * dw < w + 2 * pw);
        let x = rand(&[n, groups * cin_g, h, w], seed);
        let wt = rand(&[groups * cout_g, cin_g, kh, kw], seed ^ 1);
        check(&x, &wt, spec, seed ^ 2).map_err(TestCaseError::fail)?;
        let b = rand(&[groups * cout_g], seed ^ 3);
        prop_assert_eq!(x.conv2d_bias(&wt, &b, spec).unwrap().to_vec(), with_bias_added(&x, &wt, &b, spec));
    }
}

/// conv2d followed by the broadcast add of a `[C_out]` bias, the two-op reference
/// of `conv2d_bias`.
fn with_bias_added(
    x: &Tensor<f64>,
    w: &Tensor<f64>,
    b: &Tensor<f64>,
    spec: Conv2dSpec,
) -> Vec<f64> {
    let per_channel = b.reshape(&[b.shape()[0], 1, 1]).unwrap();
    x.conv2d(w, spec)
        .unwrap()
        .add(&per_channel)
        .unwrap()
        .to_vec()
}

/// An empty batch has a zero weight gradient and an empty input gradient and
/// output, on the chunked path (small images) and the one-image path alike.
#[test]
fn an_empty_batch_gives_zero_gradients() {
    for side in [4, 16] {
        let x = Tensor::<f64>::zeros(&[0, 3, side, side]).unwrap();
        let w = rand(&[2, 3, 3, 3], 1);
        let spec = Conv2dSpec::new(1, 1);
        let y = x.conv2d(&w, spec).unwrap();
        assert_eq!(y.shape(), [0, 2, side, side]);
        let dw = y.conv2d_weight_grad(&x, w.shape(), spec).unwrap();
        assert_eq!(dw.to_vec(), vec![0.0; 54], "{side}×{side}");
        assert_eq!(y.conv2d_input_grad(&w, x.shape(), spec).unwrap().numel(), 0);
    }
}

/// The fused bias gives the bits of the convolution followed by the add, on the
/// one-image-at-a-time path (grouped too) and the chunked one, at every thread
/// count; a bias of the wrong shape is refused.
#[test]
fn conv2d_bias_is_the_convolution_then_the_add_on_every_path() {
    let grouped = Conv2dSpec {
        groups: 2,
        ..Conv2dSpec::new(1, 1)
    };
    for (x, w, spec) in [
        (
            rand(&[3, 4, 16, 16], 1),
            rand(&[6, 4, 3, 3], 2),
            Conv2dSpec::new(1, 1),
        ),
        (rand(&[3, 4, 16, 16], 3), rand(&[6, 2, 3, 3], 4), grouped),
        (
            rand(&[3, 6, 10, 10], 5),
            rand(&[5, 6, 3, 3], 6),
            Conv2dSpec::new(2, 1),
        ),
    ] {
        let b = rand(&[w.shape()[0]], 7);
        let want = with_bias_added(&x, &w, &b, spec);
        for threads in [1, 2, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let got = pool.install(|| x.conv2d_bias(&w, &b, spec).unwrap().to_vec());
            assert_eq!(got, want, "{spec:?} at {threads} threads");
        }
    }
    // Non-contiguous operands (stored transposed) give the same bits.
    let (x, w, b) = (
        rand(&[2, 3, 9, 7], 11),
        rand(&[4, 3, 3, 3], 12),
        rand(&[4], 13),
    );
    let flip = |t: &Tensor<f64>| {
        t.transpose(2, 3)
            .unwrap()
            .contiguous()
            .transpose(2, 3)
            .unwrap()
    };
    let spec = Conv2dSpec::new(1, 1);
    let want = x.conv2d_bias(&w, &b, spec).unwrap().to_vec();
    assert!(!flip(&x).is_contiguous() && !flip(&w).is_contiguous());
    assert_eq!(
        flip(&x).conv2d_bias(&flip(&w), &b, spec).unwrap().to_vec(),
        want
    );
    let x = rand(&[1, 2, 5, 5], 8);
    let w = rand(&[3, 2, 3, 3], 9);
    let err = x
        .conv2d_bias(&w, &rand(&[3, 1, 1], 10), Conv2dSpec::new(1, 1))
        .unwrap_err();
    assert!(err.to_string().contains("bias [3]"), "{err}");
}

/// Each lowering path of `tensor::ops::conv` against the naive loop: tiles of one
/// image, one image at a time (plain, strided and grouped, patches read in place,
/// 1×1 in place, and more images than the weight gradient's 8 groups), and several
/// images per chunk.
#[test]
fn large_inputs_take_every_lowering_path() {
    // Tiles: 64 channels, 3×3 gives K = 576 rows; an 88×88 image has 7744 positions,
    // so its patch matrix (4.46 M elements) exceeds COL_BUDGET (4.19 M).
    let big = rand(&[1, 64, 88, 88], 1);
    const { assert!(576 * 88 * 88 > tensor::ops::conv::COL_BUDGET) };
    check(&big, &rand(&[2, 64, 3, 3], 2), Conv2dSpec::new(1, 1), 3).unwrap();
    // One image at a time, strided and grouped (91×91 outputs).
    let spec = Conv2dSpec {
        groups: 2,
        ..Conv2dSpec::new(2, 1)
    };
    check(
        &rand(&[2, 16, 181, 181], 4),
        &rand(&[4, 8, 3, 3], 5),
        spec,
        6,
    )
    .unwrap();
    // One image at a time, 10 images: the weight gradient sums 5 groups of 2.
    check(
        &rand(&[10, 4, 16, 16], 10),
        &rand(&[3, 4, 3, 3], 11),
        Conv2dSpec::new(1, 1),
        12,
    )
    .unwrap();
    // One image at a time with the patches read in place (unit stride along the
    // width, output rows of whole runs of the SIMD kernel): strided down the rows,
    // dilated, 7 output channels (a cut tile).
    let spec = Conv2dSpec {
        stride: (2, 1),
        padding: (1, 1),
        dilation: (2, 1),
        groups: 1,
    };
    check(
        &rand(&[3, 5, 33, 16], 16),
        &rand(&[7, 5, 3, 3], 17),
        spec,
        18,
    )
    .unwrap();
    // The input gradient of a unit-stride convolution flips the kernel in bands of
    // 64 input channels: 130 in two groups give three bands, the second straddling
    // the groups, the last partial.
    check(
        &rand(&[2, 130, 5, 5], 19),
        &rand(&[6, 65, 3, 3], 20),
        Conv2dSpec {
            groups: 2,
            ..Conv2dSpec::new(1, 1)
        },
        21,
    )
    .unwrap();
    // The weight gradient is transposed into dW in bands of 32 output channels: 40
    // in two groups of 20 give a band straddling the groups and a partial one.
    check(
        &rand(&[2, 4, 6, 6], 22),
        &rand(&[40, 2, 3, 3], 23),
        Conv2dSpec {
            groups: 2,
            ..Conv2dSpec::new(1, 1)
        },
        24,
    )
    .unwrap();
    // A 1×1 convolution one image at a time reads the input in place.
    check(
        &rand(&[3, 6, 16, 16], 13),
        &rand(&[5, 6, 1, 1], 14),
        Conv2dSpec::default(),
        15,
    )
    .unwrap();
    // Several images per chunk: 1×1 on small maps gathers the positions.
    check(
        &rand(&[1, 6, 10, 10], 7),
        &rand(&[5, 6, 1, 1], 8),
        Conv2dSpec::default(),
        9,
    )
    .unwrap();
    check(
        &rand(&[3, 6, 10, 10], 7),
        &rand(&[5, 6, 1, 1], 8),
        Conv2dSpec::default(),
        9,
    )
    .unwrap();
}

#[test]
fn max_pool_indices_pick_the_first_maximum_and_never_the_padding() {
    // One 3×4 plane; 2×2 windows, stride 2, padding 1: windows at the border see one,
    // two or four real elements.
    let x = Tensor::<f64>::from_vec(
        vec![
            1.0, 5.0, 5.0, 0.0, -1.0, -2.0, 7.0, 3.0, 4.0, 4.0, -9.0, 8.0,
        ],
        &[1, 1, 3, 4],
    )
    .unwrap();
    let (idx, shape) = x.max_pool2d_indices((2, 2), (2, 2), (1, 1)).unwrap();
    assert_eq!(shape, [1, 1, 2, 3]);
    // Windows (rows −1..0, 1..2) × (cols −1..0, 1..2, 3..4).
    assert_eq!(idx, vec![0, 1, 3, 8, 6, 11]);
    let all_negative = Tensor::<f64>::full(&[1, 1, 2, 2], -3.0).unwrap();
    let (idx, _) = all_negative
        .max_pool2d_indices((2, 2), (2, 2), (1, 1))
        .unwrap();
    assert_eq!(idx, vec![0, 1, 2, 3], "padding (zero) must not beat −3");
    assert!(
        x.max_pool2d_indices((2, 2), (2, 2), (2, 2)).is_err(),
        "padding over half the kernel"
    );
}

#[test]
fn bad_geometries_are_refused_with_their_shapes() {
    let x = rand(&[1, 4, 5, 5], 1);
    let cases = [
        (rand(&[2, 3, 3, 3], 2), Conv2dSpec::default(), "channels"),
        (
            rand(&[3, 2, 3, 3], 2),
            Conv2dSpec {
                groups: 2,
                ..Conv2dSpec::default()
            },
            "C_out not divisible",
        ),
        (
            rand(&[2, 4, 7, 7], 2),
            Conv2dSpec::default(),
            "kernel larger than the input",
        ),
        (
            rand(&[2, 4, 3, 3], 2),
            Conv2dSpec {
                stride: (0, 1),
                ..Conv2dSpec::default()
            },
            "zero stride",
        ),
        (rand(&[2, 4, 3], 2), Conv2dSpec::default(), "3-D weight"),
    ];
    for (w, spec, what) in cases {
        let e = x.conv2d(&w, spec);
        assert!(e.is_err(), "{what} accepted");
    }
    let msg = x
        .conv2d(&rand(&[2, 3, 3, 3], 2), Conv2dSpec::default())
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("[1, 4, 5, 5]") && msg.contains("[2, 3, 3, 3]"),
        "{msg}"
    );
    // An output gradient of the wrong shape.
    let w = rand(&[2, 4, 3, 3], 3);
    assert!(rand(&[1, 2, 4, 4], 4)
        .conv2d_input_grad(&w, &[1, 4, 5, 5], Conv2dSpec::default())
        .is_err());
}
