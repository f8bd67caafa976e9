//! Seeded data augmentation for image batches `[N, C, H, W]`: random crop after
//! padding (reflect or zeros), horizontal flip, and Cutout (DeVries & Taylor: a square
//! of zeros at a uniformly random centre, clipped at the border) — the CIFAR recipe
//! of the LLQR+SAM presets (reflect-pad 4, crop 32, flip, Cutout 16 px with p = 0.5).

use tensor::{error::fmt_shape, Element, Error, Result, Rng, Tensor};

/// Which augmentations to apply.
#[derive(Clone, Debug, PartialEq)]
pub struct Augment {
    /// Pixels added on each side before cropping back to the input size (0: none).
    pub crop_padding: usize,
    /// Pad by reflection (else with zeros).
    pub reflect: bool,
    /// Probability of a horizontal flip.
    pub flip: f64,
    /// Cutout: (side of the square, probability), if any.
    pub cutout: Option<(usize, f64)>,
}

impl Augment {
    /// The CIFAR recipe above.
    pub fn cifar() -> Self {
        Augment {
            crop_padding: 4,
            reflect: true,
            flip: 0.5,
            cutout: Some((16, 0.5)),
        }
    }

    /// A new batch: every image transformed independently, its randomness drawn from
    /// `rng` in image order.
    pub fn apply<T: Element>(&self, images: &Tensor<T>, rng: &mut Rng) -> Result<Tensor<T>> {
        if images.ndim() != 4 {
            return Err(Error::shape(
                "Augment",
                format!(
                    "needs images [N, C, H, W], got {}",
                    fmt_shape(images.shape())
                ),
            ));
        }
        let (n, c, h, w) = (
            images.shape()[0],
            images.shape()[1],
            images.shape()[2],
            images.shape()[3],
        );
        let p = self.crop_padding;
        if self.reflect && p > 0 && (p >= h || p >= w) {
            return Err(Error::value(
                "Augment",
                format!("reflection padding {p} needs images larger than it, got {h}×{w}"),
            ));
        }
        let src = images.contiguous().to_vec();
        let mut out = Vec::with_capacity(src.len());
        let reflect = |i: isize, len: usize| -> Option<usize> {
            let len = len as isize;
            if (0..len).contains(&i) {
                Some(i as usize)
            } else if self.reflect {
                Some(if i < 0 { -i } else { 2 * (len - 1) - i } as usize)
            } else {
                None
            }
        };
        for img in src.chunks(c * h * w) {
            let (dy, dx) = (
                rng.below(2 * p as u64 + 1)? as isize - p as isize,
                rng.below(2 * p as u64 + 1)? as isize - p as isize,
            );
            let flip = rng.uniform() < self.flip;
            let hole = match self.cutout {
                Some((side, prob)) if rng.uniform() < prob => {
                    let (cy, cx) = (rng.below(h as u64)? as isize, rng.below(w as u64)? as isize);
                    let half = side as isize / 2;
                    Some((
                        cy - half,
                        cy - half + side as isize,
                        cx - half,
                        cx - half + side as isize,
                    ))
                }
                _ => None,
            };
            for plane in img.chunks(h * w) {
                for y in 0..h as isize {
                    for x in 0..w as isize {
                        let sx = if flip { w as isize - 1 - x } else { x };
                        let in_hole = hole
                            .is_some_and(|(y0, y1, x0, x1)| y >= y0 && y < y1 && x >= x0 && x < x1);
                        let v = match (reflect(y + dy, h), reflect(sx + dx, w)) {
                            (Some(yy), Some(xx)) if !in_hole => plane[yy * w + xx],
                            _ => T::zero(),
                        };
                        out.push(v);
                    }
                }
            }
        }
        Tensor::from_vec(out, &[n, c, h, w])
    }
}
