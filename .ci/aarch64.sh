#!/usr/bin/env bash
# The tensor and autograd suites for aarch64: cross-built for
# aarch64-unknown-linux-gnu and run under qemu-user, NEON kernels included (the
# platform-bits test then checks the NEON GEMM against the x86 fixtures). Emulation
# proves correctness, not speed: no ARM timing is claimed from it.
#
# Installs what it needs: the Rust target, and Debian's qemu-user and the aarch64
# cross linker when absent. Test binaries are built with the target directory
# given by CARGO_TARGET_DIR (default target/).
set -euo pipefail
cd "$(dirname "$0")/.."

TARGET=aarch64-unknown-linux-gnu
rustup target add "$TARGET" >/dev/null
if ! command -v qemu-aarch64 >/dev/null || ! command -v aarch64-linux-gnu-gcc >/dev/null; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO=sudo
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq qemu-user gcc-aarch64-linux-gnu >/dev/null
fi
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64 -L /usr/aarch64-linux-gnu"

# Skipped under emulation for their time alone (each over 60 s under qemu, against
# about a second natively; they run natively in the main pass). The NEON GEMM's
# bits stay checked by the platform-bits fixtures and the other gemm tests.
SKIP=(
    fft::every_length_up_to_64_and_large_and_prime_lengths_match_the_dft
    fft::f32_transforms_match_the_dft
    gemm::gemm_matches_the_naive_loop_and_splits_change_no_bit
    gemm::gemm_upper_matches_the_full_product_on_and_above_the_diagonal
    reproducibility::factorizations_are_thread_count_invariant
)
args=()
for t in "${SKIP[@]}"; do args+=(--skip "$t"); done

start=$SECONDS
cargo test --target "$TARGET" -p ferrotape-tensor -p ferrotape-autograd --tests -- "${args[@]}"
echo "aarch64: the tensor and autograd suites passed under qemu in $((SECONDS - start)) s"
# The portable kernels on aarch64 against their fixtures too.
TENSOR_PORTABLE=1 cargo test --target "$TARGET" -p ferrotape-autograd --test suite platform_bits
