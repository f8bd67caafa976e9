#!/usr/bin/env bash
# Builds the Rust peers of the training-step benchmarks — candle_steps.rs (candle
# 0.11.1) and burn_steps.rs (burn 0.20.1 on NdArray and on Candle) — as two scratch
# crates in PEER_DIR (default ${TMPDIR:-/tmp}/ferrotape-rust-peers), outside the
# repository, so neither enters this project's dependency tree. Prints PEER_DIR.
# The versions are pinned; the first build needs crates.io and takes a few minutes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=${PEER_DIR:-${TMPDIR:-/tmp}/ferrotape-rust-peers}
mkdir -p "$dir/candle/src" "$dir/burn/src"
cat > "$dir/candle/Cargo.toml" <<'TOML'
[package]
name = "candle_steps"
version = "0.1.0"
edition = "2021"
publish = false

[dependencies]
candle-core = "=0.11.1"
candle-nn = "=0.11.1"

[profile.release]
codegen-units = 1
TOML
cat > "$dir/burn/Cargo.toml" <<'TOML'
[package]
name = "burn_steps"
version = "0.1.0"
edition = "2021"
publish = false

[dependencies]
burn = { version = "=0.20.1", features = ["ndarray", "candle", "autodiff"] }
# burn-candle 0.20.1 does not build against candle-core 0.9.2 (new dtypes its
# matches do not cover); the last release it builds with:
candle-core = "=0.9.1"

[profile.release]
codegen-units = 1
TOML
cp "$here/candle_steps.rs" "$dir/candle/src/main.rs"
cp "$here/burn_steps.rs" "$dir/burn/src/main.rs"
for crate in candle burn; do
    # Its own target folder: a CARGO_TARGET_DIR set for the workspace must not mix in.
    (cd "$dir/$crate" && cargo build --release -q --target-dir "$dir/$crate/target" >&2)
done
echo "$dir"
