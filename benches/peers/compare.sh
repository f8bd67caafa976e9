#!/usr/bin/env bash
# Times one workload in this engine (its criterion bench) and in the peers (the
# scripts beside this one), pinned to the same two cores, one after the other, and
# prints the medians at 1 and 2 threads with the ratios.
#
#   benches/peers/compare.sh convnet|resnet18|mlp|linalg|sgemm [PYTHON]
#
# `linalg` compares Cholesky, QR and eigh at n = 512 (f64, on both cores) with
# NumPy's LAPACK (numpy_linalg.py); `sgemm` the 1024 × 1024 f32 product at 1 and 2
# threads with torch.matmul and numpy.matmul (torch_sgemm.py).
#
# PYTHON is an interpreter with torch (and jax[cpu], for the workloads that have a
# JAX script) installed, e.g. from `python3 -m venv /tmp/peer && /tmp/peer/bin/pip
# install torch "jax[cpu]"`; default python3. The figures are of this machine only.
#
# convnet and mlp also time the Rust peers, candle and burn (its NdArray and Candle
# backends), built by build_rust_peers.sh outside the repository (RUST_PEERS=0 to
# leave them out).
#
# mlp also prints the step against two floors timed in the same bench run:
# `its-GEMMs-alone`, the step's eight matrix products at their shapes and layouts,
# and `its-FLOPs-at-1024²-rate`, the step's FLOPs at the rate of a 1024² product.
#
# ROUNDS=N (convnet, resnet18, mlp; default 1) repeats the engine-then-peers
# sequence N times and ends with the median of each round's ratio: on a machine
# whose speed moves from minute to minute (a shared VM), a ratio measured within
# one round and summarised over rounds says more than a single run.
set -euo pipefail
cd "$(dirname "$0")/../.."
workload=${1:?usage: benches/peers/compare.sh convnet|resnet18|mlp|linalg|sgemm [PYTHON]}
py=${2:-python3}
if [ "$workload" = linalg ]; then
    taskset -c 0,1 cargo bench -q -p benches --bench linalg_fft -- 'linalg_f64/(cholesky|qr|eigh)/512' > /dev/null
    numpy=$(taskset -c 0,1 "$py" benches/peers/numpy_linalg.py 512)
    "$py" - "$numpy" <<'PY'
import json, re, sys
print("linalg, f64, n = 512, 2 threads: median ms (this engine / NumPy's LAPACK) and the ratio")
for op in ["cholesky", "qr", "eigh"]:
    est = f"target/criterion/linalg_f64/{op}/512/new/estimates.json"
    ours = json.load(open(est))["median"]["point_estimate"] / 1e6
    theirs = float(re.search(rf"{op} 512: median ([0-9.]+) ms", sys.argv[1]).group(1))
    print(f"  {op}: {ours:.2f} / {theirs:.2f}   ×{ours / theirs:.2f} NumPy")
PY
    exit 0
fi
if [ "$workload" = sgemm ]; then
    taskset -c 0,1 cargo bench -q -p benches --bench tensor_ops -- 'matmul_f32/tensor_(1thread|2threads)/1024' > /dev/null
    peers=$(taskset -c 0,1 "$py" benches/peers/torch_sgemm.py 1 2)
    "$py" - "$peers" <<'PY'
import json, re, sys
print("sgemm 1024 × 1024 f32: median ms (this engine / PyTorch / NumPy) and this engine's ratio to each")
for t, id in [(1, "tensor_1thread"), (2, "tensor_2threads")]:
    ours = json.load(open(f"target/criterion/matmul_f32/{id}/1024/new/estimates.json"))["median"]["point_estimate"] / 1e6
    def peer(name):
        m = re.search(rf"sgemm 1024 {name} {t} thread\(s\): median ([0-9.]+) ms", sys.argv[1])
        return float(m.group(1)) if m else None
    torch_ms, numpy_ms = peer("torch"), peer("numpy")
    line = f"  {t} thread(s): {ours:.2f} / {torch_ms:.2f} / " + (f"{numpy_ms:.2f}" if numpy_ms else "—")
    line += f"   ×{ours / torch_ms:.2f} PyTorch" + (f", ×{ours / numpy_ms:.2f} NumPy" if numpy_ms else "")
    print(line + f"   ({2 * 1024**3 / ours / 1e6:.0f} GFLOP/s)")
PY
    exit 0
fi
case $workload in
    convnet) bench=conv; group=convnet_3_64_64_b32_32x32_f32_adam; id=step
             torch=torch_convnet_step.py; jax=jax_convnet_step.py ;;
    resnet18) bench=conv; group=resnet18_train_step_f32; id=b32_32x32
              torch=torch_resnet18_step.py; jax= ;;
    mlp) bench=training_step; group=train_step_mlp_784_512_512_10_b128_f32_adam; id=step
         torch=torch_mlp_step.py; jax=jax_mlp_step.py ;;
    *) echo "unknown workload '$workload' (convnet, resnet18, mlp, linalg or sgemm)" >&2; exit 2 ;;
esac
rounds=${ROUNDS:-1}
# The Rust peers (candle, and burn on its NdArray and Candle backends) time the
# conv-net and MLP steps from a scratch crate outside the repository, built once
# (crates.io is needed the first time); RUST_PEERS=0 leaves them out.
rust_peers=()
if [ "${RUST_PEERS:-1}" != 0 ] && [ "$workload" != resnet18 ]; then
    peer_dir=$(bash benches/peers/build_rust_peers.sh)
    rust_peers=("candle:$peer_dir/candle/target/release/candle_steps $workload"
                "burn-ndarray:$peer_dir/burn/target/release/burn_steps $workload ndarray"
                "burn-candle:$peer_dir/burn/target/release/burn_steps $workload candle")
fi
measured=$(mktemp)
trap 'rm -f "$measured"' EXIT
# The peers print "... N thread(s): median ... X ms over ..."; keep X.
figure() { sed -n 's/.*thread(s): .* \([0-9.]*\) ms over.*/\1/p'; }
# One line per round and peer: "ROUND PEER MS_1_THREAD MS_2_THREADS" ("-" when a
# peer printed no figure: not installed, failed).
record() { echo "$1 $2 ${3:--} ${4:--}" >> "$measured"; }
for round in $(seq "$rounds"); do
    taskset -c 0,1 cargo bench -q -p benches --bench "$bench" -- "$group" > /dev/null
    ours=()
    for t in 1 2; do
        est="target/criterion/$group/${id}_${t}_threads/new/estimates.json"
        ours+=("$("$py" -c "import json,sys; print(json.load(open(sys.argv[1]))['median']['point_estimate'] / 1e6)" "$est")")
    done
    record "$round" "this-engine" "${ours[0]}" "${ours[1]}"
    if [ "$workload" = mlp ]; then
        # The step's two floors, timed by the same bench: its eight matrix products
        # alone, and its 410,779,648 FLOPs at the rate of a 1024 x 1024 product
        # (2·1024³ FLOPs).
        floor=() rate=()
        for t in 1 2; do
            est="target/criterion/$group/floor_${t}_threads/new/estimates.json"
            floor+=("$("$py" -c "import json,sys; print(json.load(open(sys.argv[1]))['median']['point_estimate'] / 1e6)" "$est")")
            est="target/criterion/$group/square_1024_${t}_threads/new/estimates.json"
            rate+=("$("$py" -c "import json,sys; print(json.load(open(sys.argv[1]))['median']['point_estimate'] / 1e6 * 410779648 / 2**31)" "$est")")
        done
        record "$round" "its-GEMMs-alone" "${floor[0]}" "${floor[1]}"
        record "$round" "its-FLOPs-at-1024²-rate" "${rate[0]}" "${rate[1]}"
    fi
    mapfile -t torch_ms < <(taskset -c 0,1 "$py" "benches/peers/$torch" 1 2 | figure)
    record "$round" PyTorch "${torch_ms[0]:-}" "${torch_ms[1]:-}"
    if [ -n "$jax" ]; then
        record "$round" JAX "$(taskset -c 0 "$py" "benches/peers/$jax" 1 2>/dev/null | figure)" \
            "$(taskset -c 0,1 "$py" "benches/peers/$jax" 2 2>/dev/null | figure)"
    fi
    for peer in "${rust_peers[@]}"; do
        name=${peer%%:*} cmd=${peer#*:}
        ms=()
        for t in 1 2; do
            cores=0; [ "$t" = 2 ] && cores=0,1
            ms+=("$(RAYON_NUM_THREADS=$t MATMUL_NUM_THREADS=$t CANDLE_NUM_THREADS=$t \
                taskset -c "$cores" $cmd "$t" 2>/dev/null | figure)")
        done
        record "$round" "$name" "${ms[0]}" "${ms[1]}"
    done
done
"$py" - "$workload" "$measured" <<'PY'
import statistics, sys
w, path = sys.argv[1], sys.argv[2]
rows = [line.split() for line in open(path) if line.strip()]
peers = list(dict.fromkeys(r[1] for r in rows if r[1] != "this-engine"))
rounds = sorted({int(r[0]) for r in rows})
ms = {(int(r[0]), r[1], t): r[2 + t - 1] for r in rows for t in (1, 2)}
print(f"{w}: median step time in ms (this engine / {' / '.join(peers)}) and this engine's ratio to each")
ratios = {}
def fmt(ratio):
    # Two decimals, three below 0.1: a peer 250 times slower is not "×0.00".
    return f"{ratio:.2f}" if ratio >= 0.1 else f"{ratio:.3f}"
for r in rounds:
    if len(rounds) > 1:
        print(f" round {r}:")
    for threads in (1, 2):
        o = float(ms[(r, "this-engine", threads)])
        line, ratio = f"  {threads} thread(s): {o:.2f}", ""
        for peer in peers:
            p = ms.get((r, peer, threads), "-")
            if p == "-":
                line += " / —"
                continue
            line += f" / {float(p):.2f}"
            ratio += f"{', ' if ratio else '   '}×{fmt(o / float(p))} {peer}"
            ratios.setdefault((threads, peer), []).append(o / float(p))
        print(line + ratio)
    def speedup(who):
        a, b = ms.get((r, who, 1), "-"), ms.get((r, who, 2), "-")
        return f"{float(a) / float(b):.2f}" if "-" not in (a, b) else "—"
    print("  2-thread speed-up: this engine " + speedup("this-engine") + "".join(f", {p} {speedup(p)}" for p in peers))
if len(rounds) > 1:
    print(f" over {len(rounds)} rounds, the median ratio (smallest – largest):")
    for (threads, peer), rs in sorted(ratios.items()):
        print(f"  {threads} thread(s): ×{fmt(statistics.median(rs))} {peer} ({fmt(min(rs))} – {fmt(max(rs))})")
PY
