//! `vit`: a Vision Transformer on the `cifar` experiment's images (CIFAR-10/100 with
//! `--data`, else the digits upscaled to 32×32×3), trained with AdamW, SAM around
//! AdamW and LLQR+SAM. It is the `cifar` experiment with ViT defaults: every
//! `cifar` option applies.

use crate::cli::RunConfig;
use crate::error::Result;
use crate::experiments::cifar::{run_with, Defaults};
use crate::report::Table;

/// Options of this experiment (those of `cifar`).
pub const OPTIONS: &[(&str, &str)] = super::cifar::OPTIONS;

/// Runs the experiment and returns its table.
pub fn run(cfg: &RunConfig) -> Result<Vec<Table>> {
    run_with(
        cfg,
        &Defaults {
            experiment: "vit",
            model: "vit-tiny",
            optimisers: &["adamw", "sam-adamw", "llqr-sam-adamw"],
            // A ViT learns slowly from 1.4k images: the quick setting trades
            // resolution (patch 8: 16 tokens) and depth (2) for 30 epochs.
            epochs: (30, 100),
            vit: (if cfg.quick { 8 } else { 4 }, 2),
        },
    )
}
