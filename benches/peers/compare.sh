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
measured=$(mktemp)
trap 'rm -f "$measured"' EXIT
# The peers print "... N thread(s): median ... X ms ..."; keep X.
figure() { sed -n 's/.*thread(s): .* \([0-9.]*\) ms over.*/\1/p'; }
for _ in $(seq "$rounds"); do
    taskset -c 0,1 cargo bench -q -p benches --bench "$bench" -- "$group" > /dev/null
    ours=()
    for t in 1 2; do
        est="target/criterion/$group/${id}_${t}_threads/new/estimates.json"
        ours+=("$("$py" -c "import json,sys; print(json.load(open(sys.argv[1]))['median']['point_estimate'] / 1e6)" "$est")")
    done
    mapfile -t torch_ms < <(taskset -c 0,1 "$py" "benches/peers/$torch" 1 2 | figure)
    jax_ms=("-" "-")
    if [ -n "$jax" ]; then
        jax_ms[0]=$(taskset -c 0 "$py" "benches/peers/$jax" 1 2>/dev/null | figure)
        jax_ms[1]=$(taskset -c 0,1 "$py" "benches/peers/$jax" 2 2>/dev/null | figure)
    fi
    # A peer that printed no figure (not installed, failed) counts as "-".
    echo "${ours[*]} ${torch_ms[0]:--} ${torch_ms[1]:--} ${jax_ms[0]:--} ${jax_ms[1]:--}" >> "$measured"
done
"$py" - "$workload" "$measured" <<'PY'
import statistics, sys
w, path = sys.argv[1], sys.argv[2]
rounds = [line.split() for line in open(path) if line.strip()]
print(f"{w}: median step time in ms (this engine / PyTorch / JAX) and this engine's ratio to each")
ratios = {}
for r, (o1, o2, t1, t2, j1, j2) in enumerate(rounds):
    if len(rounds) > 1:
        print(f" round {r + 1}:")
    for threads, o, t, j in [(1, o1, t1, j1), (2, o2, t2, j2)]:
        o = float(o)
        line = f"  {threads} thread(s): {o:.2f}"
        ratio = ""
        for ms, peer in [(t, "PyTorch"), (j, "JAX")]:
            if ms == "-":
                line += " / —"
                continue
            line += f" / {float(ms):.2f}"
            ratio += f"{', ' if ratio else '   '}×{o / float(ms):.2f} {peer}"
            ratios.setdefault((threads, peer), []).append(o / float(ms))
        print(line + ratio)
    torch_speedup = f"{float(t1) / float(t2):.2f}" if "-" not in (t1, t2) else "—"
    print(f"  2-thread speed-up: this engine {float(o1) / float(o2):.2f}, PyTorch {torch_speedup}")
if len(rounds) > 1:
    print(f" over {len(rounds)} rounds, the median ratio (smallest – largest):")
    for (threads, peer), rs in sorted(ratios.items()):
        print(f"  {threads} thread(s): ×{statistics.median(rs):.2f} {peer} ({min(rs):.2f} – {max(rs):.2f})")
PY
