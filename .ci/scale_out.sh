#!/bin/bash
# Runs models/README.md's two scale-out recipes ("Sharded sweeps": a SLURM job array and
# GNU parallel) for real on this one machine, and checks that each one's merged
# table equals the table of an unsharded run of the same sweep.
#
#   bash .ci/scale_out.sh MODELS_BINARY [SCRATCH_DIR]
#
# MODELS_BINARY: an already built `models` (e.g. target/debug/models); nothing is
# built here. SCRATCH_DIR: where everything goes (default: a fresh mktemp dir).
#
# Needs root (apt-get, daemons). Installs slurmd, slurmctld, slurm-client, munge and
# parallel with apt when missing, then runs a private single-node SLURM cluster:
# munged, slurmctld and slurmd started directly (no systemd in the container), with
# their config, key, socket, state, spool, pid and log files all under SCRATCH_DIR,
# so nothing in /etc is touched and a munged/slurm already on the machine is left
# alone. The daemons started here are stopped on exit.
#
# The recipes are run from a working directory of their own with the README's
# relative paths (runs/sweep ...), so the printed recipe texts are what models/README.md
# shows, with the binary's path and the experiment in place.
set -euo pipefail

die() { echo "scale_out: FAIL: $*" >&2; exit 1; }
log() { echo "scale_out: $*"; }

[ $# -ge 1 ] && [ $# -le 2 ] || die "usage: $0 MODELS_BINARY [SCRATCH_DIR]"
[ -x "$1" ] || die "not an executable: $1"
MODELS=$(realpath "$1")
OWN_SCRATCH=0
if [ $# -ge 2 ]; then
    mkdir -p "$2"
    SCRATCH=$(realpath "$2")
else
    SCRATCH=$(mktemp -d /tmp/scale_out.XXXXXX)
    OWN_SCRATCH=1   # removed on success, kept on failure
fi
[ "$(id -u)" = 0 ] || die "needs root (apt-get and the munge/slurm daemons)"

# The sweep: fast in a debug build (about a second unsharded), 6 cells
# (2 optimisers x 3 seeds), so each of 3 shards runs 2.
EXP=diabetes
EXP_ARGS="--quick --seeds 3"
N=3

START=$(date +%s)

# ---------------------------------------------------------------- daemons, cleanup
DAEMON_PIDS=()
cleanup() {
    local rc=$?
    if command -v scancel >/dev/null 2>&1 && [ -n "${SLURM_CONF:-}" ] && [ -f "${SLURM_CONF}" ]; then
        scancel --quiet --full --user=root >/dev/null 2>&1 || true
    fi
    # Stop only what this script started, newest first (slurmd, slurmctld, munged).
    local i
    for ((i = ${#DAEMON_PIDS[@]} - 1; i >= 0; i--)); do
        kill "${DAEMON_PIDS[i]}" 2>/dev/null || true
    done
    for ((i = ${#DAEMON_PIDS[@]} - 1; i >= 0; i--)); do
        local t=0
        while kill -0 "${DAEMON_PIDS[i]}" 2>/dev/null && [ $t -lt 50 ]; do sleep 0.1; t=$((t + 1)); done
        kill -9 "${DAEMON_PIDS[i]}" 2>/dev/null || true
    done
    if [ $rc -ne 0 ]; then
        echo "scale_out: exit $rc; files kept in $SCRATCH" >&2
    elif [ $OWN_SCRATCH = 1 ]; then
        rm -rf "$SCRATCH"
    fi
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

dump_logs() {
    local f
    for f in "$SCRATCH"/munge/munged.log "$SCRATCH"/slurm/*.log "$SCRATCH"/slurm/*.stderr; do
        [ -f "$f" ] || continue
        echo "===== $f (last 60 lines) =====" >&2
        tail -n 60 "$f" >&2
    done
}

# ---------------------------------------------------------------- packages
need=()
command -v slurmctld >/dev/null 2>&1 || need+=(slurmctld)
command -v slurmd >/dev/null 2>&1 || need+=(slurmd)
command -v sbatch >/dev/null 2>&1 || need+=(slurm-client)
command -v munged >/dev/null 2>&1 || need+=(munge)
# Debian's moreutils also has a `parallel`; the recipe needs GNU parallel.
parallel --version 2>/dev/null | grep -q 'GNU parallel' || need+=(parallel)
if [ ${#need[@]} -gt 0 ]; then
    log "installing ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >"$SCRATCH/apt.log" 2>&1 || { cat "$SCRATCH/apt.log" >&2; die "apt-get update"; }
    apt-get install -y -qq --no-install-recommends "${need[@]}" >>"$SCRATCH/apt.log" 2>&1 \
        || { tail -n 40 "$SCRATCH/apt.log" >&2; die "apt-get install ${need[*]}"; }
fi
# GNU parallel keeps its state in PARALLEL_HOME (default ~/.parallel): keep it in
# SCRATCH. Its citation notice goes to a terminal only, so none here; will-cite
# silences it for a run by hand too.
export PARALLEL_HOME=$SCRATCH/parallel-home
mkdir -p "$PARALLEL_HOME" && touch "$PARALLEL_HOME/will-cite"

# ---------------------------------------------------------------- munge
# A private munged: own key, socket, pid and log under SCRATCH; slurm is pointed at
# its socket by AuthInfo (auth and job credentials both use it). --force: munged
# refuses root and world-writable ancestors (/tmp) without it.
mkdir -p "$SCRATCH/munge"
chmod 700 "$SCRATCH/munge"
MUNGE_KEY=$SCRATCH/munge/munge.key
MUNGE_SOCKET=$SCRATCH/munge/munge.socket
if [ ! -s "$MUNGE_KEY" ]; then
    dd if=/dev/urandom of="$MUNGE_KEY" bs=1024 count=1 status=none
fi
chmod 400 "$MUNGE_KEY"
munged --foreground --force \
    --key-file="$MUNGE_KEY" --socket="$MUNGE_SOCKET" \
    --pid-file="$SCRATCH/munge/munged.pid" --log-file="$SCRATCH/munge/munged.log" \
    --seed-file="$SCRATCH/munge/munged.seed" \
    >"$SCRATCH/munge/munged.stdout" 2>&1 &
DAEMON_PIDS+=($!)
for _ in $(seq 100); do
    munge --socket="$MUNGE_SOCKET" -n 2>/dev/null | unmunge --socket="$MUNGE_SOCKET" >/dev/null 2>&1 && break
    kill -0 "${DAEMON_PIDS[-1]}" 2>/dev/null || break
    sleep 0.1
done
munge --socket="$MUNGE_SOCKET" -n 2>/dev/null | unmunge --socket="$MUNGE_SOCKET" >/dev/null 2>&1 \
    || { cat "$SCRATCH/munge/munged.stdout" >&2; dump_logs; die "munged did not come up"; }
log "munged up (socket $MUNGE_SOCKET)"

# ---------------------------------------------------------------- slurm
HOST=$(hostname -s)
NCPU=$(nproc)
SL=$SCRATCH/slurm
mkdir -p "$SL/state" "$SL/spool"
export SLURM_CONF=$SL/slurm.conf
# Ports: override with SLURMCTLD_PORT/SLURMD_PORT if the defaults are taken.
cat >"$SLURM_CONF" <<EOF
ClusterName=scaleout
SlurmctldHost=$HOST
SlurmctldPort=${SLURMCTLD_PORT:-6817}
SlurmdPort=${SLURMD_PORT:-6818}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE_SOCKET
StateSaveLocation=$SL/state
SlurmdSpoolDir=$SL/spool
SlurmctldPidFile=$SL/slurmctld.pid
SlurmdPidFile=$SL/slurmd.pid
SlurmctldLogFile=$SL/slurmctld.log
SlurmdLogFile=$SL/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
MailProg=/bin/true
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
NodeName=$HOST CPUs=$NCPU RealMemory=1000 State=UNKNOWN
PartitionName=main Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF

# -D: stay in the foreground, so $! is the daemon itself (no systemd here).
slurmctld -D -i -f "$SLURM_CONF" >"$SL/slurmctld.stderr" 2>&1 &
DAEMON_PIDS+=($!)
slurmd -D -f "$SLURM_CONF" -N "$HOST" >"$SL/slurmd.stderr" 2>&1 &
DAEMON_PIDS+=($!)

state=""
for _ in $(seq 60); do
    state=$(sinfo -h -N -n "$HOST" -o '%T' 2>/dev/null || true)
    [ "$state" = idle ] && break
    for p in "${DAEMON_PIDS[@]}"; do
        kill -0 "$p" 2>/dev/null || { dump_logs; die "a daemon (pid $p) exited during start-up"; }
    done
    sleep 1
done
if [ "$state" != idle ]; then
    sinfo -N -l >&2 || true
    dump_logs
    die "node $HOST not idle after 60 s (state: '${state:-none}')"
fi
log "slurm up: node $HOST idle, $NCPU CPUs"

# ---------------------------------------------------------------- table check
# table.txt has one wall-time column, "seconds / run" (mean ± spread of each
# cell's training time), which differs between any two runs; every other cell is
# made from the cells' stored bit patterns and must match exactly. normalise()
# blanks the cells of columns whose header matches TIME_COLUMNS (header row,
# separator row and body rows of that table, since the column's width follows its
# contents; the header keeps its name, unpadded) and leaves every other character
# as it is.
TIME_COLUMNS='^seconds / run$'
normalise() {
    awk -v re="$TIME_COLUMNS" '
        BEGIN { FS = "|"; OFS = "|" }
        /^\|/ {
            if (!intable) {
                intable = 1; n = 0
                for (k in tc) delete tc[k]
                for (i = 2; i < NF; i++) { h = $i; gsub(/^ +| +$/, "", h); if (h ~ re) { tc[i] = 1; n++ } }
                if (n) timecols += n
                for (i in tc) { h = $i; gsub(/^ +| +$/, "", h); $i = " " h " " }
                print; next
            }
            for (i in tc) $i = " <wall time> "
            print; next
        }
        { intable = 0; print }
        END { if (!timecols) print "(no wall-time column found)" > "/dev/stderr" }' "$1"
}

one_dir() { # the single directory a glob names, or fail
    local label=$1; shift
    [ $# -eq 1 ] && [ -d "$1" ] || die "$label: expected one folder, got: $*"
    echo "$1"
}

WANT_SHARDS=$N
check_recipe() { # check_recipe NAME SHARD_GLOB_DIR MERGED_PARENT
    local name=$1 shard_parent=$2 merged_parent=$3
    local shards=("$shard_parent"/*-shard*of$N)
    [ ${#shards[@]} -eq $WANT_SHARDS ] && [ -d "${shards[0]}" ] \
        || die "$name: expected $WANT_SHARDS shard folders in $shard_parent, got: ${shards[*]}"
    local s
    for s in "${shards[@]}"; do [ -s "$s/cells.txt" ] || die "$name: no cells.txt in $s"; done
    local merged
    merged=$(one_dir "$name merged folder" "$merged_parent"/*-merged)
    [ -s "$merged/table.txt" ] || die "$name: no table.txt in $merged"
    if ! diff -u <(normalise "$REF_TABLE") <(normalise "$merged/table.txt") >"$SCRATCH/$name.diff"; then
        cat "$SCRATCH/$name.diff" >&2
        die "$name recipe: merged table $merged/table.txt differs from the unsharded $REF_TABLE (wall-time column ignored)"
    fi
    log "$name recipe: merged table equals the unsharded one (wall-time column ignored)"
}

# ---------------------------------------------------------------- unsharded reference
mkdir -p "$SCRATCH/whole"
# shellcheck disable=SC2086
( cd "$SCRATCH/whole" && "$MODELS" $EXP $EXP_ARGS --threads 1 --quiet --out runs/sweep ) \
    >"$SCRATCH/whole.log" 2>&1 || { cat "$SCRATCH/whole.log" >&2; die "unsharded reference run"; }
REF_DIR=$(one_dir "unsharded run" "$SCRATCH"/whole/runs/sweep/$EXP/*)
REF_TABLE=$REF_DIR/table.txt
[ -s "$REF_TABLE" ] || die "unsharded run wrote no table.txt in $REF_DIR"
log "unsharded reference: $REF_TABLE"

# ---------------------------------------------------------------- recipe 1: SLURM job array
WD=$SCRATCH/slurm-recipe
mkdir -p "$WD"
cat >"$WD/sweep.sh" <<EOF
#!/bin/bash
#SBATCH --array=0-$((N - 1)) --cpus-per-task=1
N=$N
$MODELS $EXP $EXP_ARGS \\
    --threads 1 --out runs/sweep --shard \$SLURM_ARRAY_TASK_ID/\$N
# afterwards, once: $MODELS merge runs/sweep
EOF
SLURM_MERGE="$MODELS merge runs/sweep"
echo "----- recipe 1 (SLURM job array), run in $WD -----"
echo "sbatch sweep.sh   # sweep.sh:"
cat "$WD/sweep.sh"
echo "$SLURM_MERGE"
echo "-----"
# --wait: return when every array task has ended, with the highest exit code;
# --time caps each task, timeout caps the whole.
if ! (cd "$WD" && timeout 300 sbatch --wait --time=5 --output=slurm-%A_%a.out sweep.sh) >"$SCRATCH/sbatch.log" 2>&1; then
    cat "$SCRATCH/sbatch.log" >&2
    for f in "$WD"/slurm-*.out; do [ -f "$f" ] && { echo "===== $f =====" >&2; cat "$f" >&2; }; done
    squeue >&2 || true
    dump_logs
    die "SLURM recipe: the job array failed or timed out"
fi
cat "$SCRATCH/sbatch.log"
( cd "$WD" && eval "$SLURM_MERGE" ) >"$SCRATCH/slurm-merge.log" 2>&1 \
    || { cat "$SCRATCH/slurm-merge.log" >&2; die "SLURM recipe: models merge"; }
# merge without --out writes to runs/<experiment>/<id>-merged
check_recipe slurm "$WD/runs/sweep/$EXP" "$WD/runs/$EXP"

# ---------------------------------------------------------------- recipe 2: GNU parallel
WD=$SCRATCH/parallel-recipe
mkdir -p "$WD"
PAR_RUN="parallel -j2 $MODELS $EXP $EXP_ARGS --threads 1 --quiet --out runs/sweep --shard {}/$N ::: $(seq -s ' ' 0 $((N - 1)))"
PAR_MERGE="$MODELS merge runs/sweep"
echo "----- recipe 2 (GNU parallel), run in $WD -----"
echo "$PAR_RUN"
echo "$PAR_MERGE"
echo "-----"
# --halt now,fail=1 is not in the recipe: parallel's exit code already counts the
# failed jobs (non-zero if any), which is all the check needs.
( cd "$WD" && timeout 300 bash -c "$PAR_RUN" ) >"$SCRATCH/parallel.log" 2>&1 \
    || { cat "$SCRATCH/parallel.log" >&2; die "GNU parallel recipe: a shard failed or timed out"; }
( cd "$WD" && eval "$PAR_MERGE" ) >"$SCRATCH/parallel-merge.log" 2>&1 \
    || { cat "$SCRATCH/parallel-merge.log" >&2; die "GNU parallel recipe: models merge"; }
check_recipe parallel "$WD/runs/sweep/$EXP" "$WD/runs/$EXP"

log "both recipes pass in $(( $(date +%s) - START )) s"
