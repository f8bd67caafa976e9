#!/usr/bin/env bash
# WebAssembly: the library crates build for wasm32-unknown-unknown without default
# features (no threads), and the tensor and autograd suites run for wasm32-wasip1
# under Wasmtime (.ci/wasi_runner.py), on the portable kernels.
#
# Installs what it needs: the Rust targets, and Wasmtime (the `wasmtime` package
# from PyPI) in a scratch venv outside the repository.
set -euo pipefail
cd "$(dirname "$0")/.."

rustup target add wasm32-unknown-unknown wasm32-wasip1 >/dev/null
VENV="${TMPDIR:-/tmp}/ferrotape-wasm-venv"
if ! "$VENV/bin/python" -c "import wasmtime" 2>/dev/null; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q wasmtime
fi
echo "wasm: wasmtime $("$VENV/bin/pip" show wasmtime | sed -n 's/^Version: //p')"

cargo build -p ferrotape --no-default-features --target wasm32-unknown-unknown

export CARGO_TARGET_WASM32_WASIP1_RUNNER="$VENV/bin/python $PWD/.ci/wasi_runner.py"

# Skipped on wasm32-wasip1, which has no threads and aborts on a panic:
SKIP=(
    # tests that build thread pools of given sizes (thread-count invariance), or
    # the kernels' own thread team;
    reproducibility::
    kernels::team::
    batch_norm::results_are_the_same_bits_at_every_thread_count
    conv::conv2d_bias_is_the_convolution_then_the_add_on_every_path
    elementwise::all_finite_finds_a_bad_value_in_any_chunk
    gemm::gemm_matches_the_naive_loop_and_splits_change_no_bit
    gemm::gemm_upper_matches_the_full_product_on_and_above_the_diagonal
    gemm::large_products_walk_their_super_blocks
    racing_writers_never_overwrite_a_trace
    # and tests that catch a panic (a kernel's refusal of bad arguments).
    kernels::rotations::tests::a_rotation_past_the_last_row_is_refused
    kernels::runs::tests::copy_rows_refuses_runs_outside_its_slices
    kernels::runs::tests::gather_runs_refuses_runs_whose_ends_overflow
)
args=(--test-threads=1)
for t in "${SKIP[@]}"; do args+=(--skip "$t"); done

start=$SECONDS
cargo test --target wasm32-wasip1 -p ferrotape-tensor -p ferrotape-autograd --no-default-features --tests --no-fail-fast -- "${args[@]}"
echo "wasm: the tensor and autograd suites passed under Wasmtime in $((SECONDS - start)) s"
