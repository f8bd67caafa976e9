#!/usr/bin/env bash
# A crate outside the workspace depends on `ferrotape` through a path with a
# version, as a user's would before the registry release, and builds and runs the
# README's example; the facade's README (its registry page and doc test) must
# carry the same example.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
example() { # the first ```rust block of a Markdown file
    sed -n '/^```rust$/,/^```$/p' "$1" | sed '1d;$d' | awk 'NR==1,/^}$/'
}
example "$root/README.md" > /tmp/dependent-readme.rs
example "$root/ferrotape/README.md" > /tmp/dependent-facade.rs
if ! diff -u /tmp/dependent-facade.rs /tmp/dependent-readme.rs; then
    echo "error: README.md's example differs from ferrotape/README.md's" >&2
    exit 1
fi
lines=$(wc -l < /tmp/dependent-readme.rs)
if [ "$lines" -lt 10 ]; then
    echo "error: no example found in README.md ($lines lines)" >&2
    exit 1
fi
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/src"
cp /tmp/dependent-readme.rs "$scratch/src/main.rs"
cat > "$scratch/Cargo.toml" <<TOML
[package]
name = "uses-ferrotape"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
ferrotape = { path = "$root/ferrotape", version = "0.1.0" }

[profile.dev.package."*"]
opt-level = 3
TOML
echo "dependent crate: building the README's example against ferrotape (path + version)"
(cd "$scratch" && CARGO_TARGET_DIR="$scratch/target" cargo run --quiet)
