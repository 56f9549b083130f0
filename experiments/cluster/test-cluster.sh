#!/bin/bash
# Runs the cluster files of this directory on the real thing, and checks
# that what they produce, merged, is byte for byte the sweep one machine
# makes (docs/sweeps.md, "On a cluster"):
#
# - slurm-array.sh, submitted as a job array of 4 tasks to a single-node
#   Slurm (slurmctld, slurmd and munge from Debian's packages, installed
#   when missing and started here with a configuration of their own in a
#   temporary directory, stopped on exit);
# - the command of k8s-indexed-job.yaml, run once per index with the
#   environment an Indexed Job gives each pod (JOB_COMPLETION_INDEX, and
#   HOSTNAME as the pod's name), through `/bin/sh -c` as the pod does.
#
#   experiments/cluster/test-cluster.sh [CONVOY]    # CONVOY: the binary (default: convoy on PATH)
#   KEEP=1 experiments/cluster/test-cluster.sh ...  # keep the logs and shards
#
# Needs root (to install the packages and start the daemons). Run by the
# ignored test `cluster::slurm_and_indexed_job_shards_merge_to_the_one_machine_sweep`
# (cargo test -p experiments --test it -- --ignored cluster).
set -euo pipefail

CONVOY=$(realpath "$(command -v "${1:-convoy}")")
HERE=$(cd "$(dirname "$0")" && pwd)
SHARDS=4
W=$(mktemp -d /tmp/convoy-cluster.XXXXXX)
chmod 755 "$W"

if [ "$(id -u)" != 0 ]; then
    echo "test-cluster.sh: needs root (installs slurmctld, slurmd, munge and starts them)" >&2
    exit 2
fi
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        slurmctld slurmd slurm-client munge >"$W/apt.log" 2>&1 ||
        { echo "test-cluster.sh: apt-get install failed; see $W/apt.log" >&2; exit 2; }
fi

pids=()
started_munged=
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    if [ -n "$started_munged" ] && [ -s /run/munge/munged.pid ]; then
        kill "$(cat /run/munge/munged.pid)" 2>/dev/null || true
    fi
    wait 2>/dev/null || true
}
trap cleanup EXIT

# A small sweep of its own: 6 points, 2 replications, 200 ms runs.
cat >"$W/tiny.toml" <<'EOF'
[scenario]
name = "tiny"
duration = "200ms"
cpus = 2
seed = 3
[dists.think]
dist = "exp"
mean = "500us"
[locks.l]
kind = "rwsem"
[tasks.readers]
count = 4
program = ["loop", "  sleep $think", "  down_read l", "  cpu 20us", "  up_read l", "end"]
[tasks.writer]
count = 1
program = ["loop", "  sleep 2ms", "  down_write l", "  cpu 50us", "  up_write l", "end"]
[machine]
profile = 'ideal'
EOF
cat >"$W/sweep.toml" <<'EOF'
[sweep]
name = "tiny-cluster"
scenario = "tiny.toml"
seed = 7
reps = 2
[[param]]
key = "tasks.readers.count"
name = "readers"
values = [2, 4, 8]
[[param]]
key = "dists.think.mean"
name = "think_us"
format = "{}us"
values = [200, 1000]
[[figure]]
metric = "wait"
subject = "l/read/readers"
stat = "p99"
[[figure]]
metric = "counter"
subject = "l/read_acquisitions"
EOF

echo "== one machine"
(cd "$W" && "$CONVOY" sweep sweep.toml --out one --progress off >/dev/null)

echo "== munge, slurmctld, slurmd"
mkdir -p "$W/munge" "$W/state" "$W/spool"
if [ ! -s /etc/munge/munge.key ]; then
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 2>/dev/null
fi
chown munge:munge /etc/munge/munge.key "$W/munge" 2>/dev/null || true
chmod 400 /etc/munge/munge.key
mkdir -p /run/munge && chown munge:munge /run/munge 2>/dev/null || true
if ! munge -n >/dev/null 2>&1; then
    runuser -u munge -- /usr/sbin/munged --force ||
        /usr/sbin/munged --force
    started_munged=1
fi
munge -n | unmunge >/dev/null

NODE=$(hostname -s)
MEM=$(awk '/MemTotal/ { print int($2 / 1024 / 2) }' /proc/meminfo)
cat >"$W/slurm.conf" <<EOF
ClusterName=convoy-test
SlurmctldHost=$NODE
SlurmUser=root
SlurmdUser=root
SlurmctldPort=16817
SlurmdPort=16818
AuthType=auth/munge
StateSaveLocation=$W/state
SlurmdSpoolDir=$W/spool
SlurmctldPidFile=$W/slurmctld.pid
SlurmdPidFile=$W/slurmd.pid
SlurmctldLogFile=$W/slurmctld.log
SlurmdLogFile=$W/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
NodeName=$NODE CPUs=$(nproc) RealMemory=$MEM State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$W/slurm.conf
slurmctld -D -i -f "$SLURM_CONF" >"$W/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" >"$W/slurmd.out" 2>&1 &
pids+=($!)
for _ in $(seq 60); do
    if sinfo -h -o '%T' 2>/dev/null | grep -qx idle; then break; fi
    sleep 1
done
sinfo -h -o '%T' | grep -qx idle ||
    { echo "test-cluster.sh: the Slurm node never became idle; see $W/slurmctld.log, $W/slurmd.log" >&2; exit 1; }

echo "== slurm-array.sh as a job array of $SHARDS tasks"
# The script's own #SBATCH lines ask for 4 CPUs and 2 GiB a task; the
# command line overrides them for a 2-CPU machine, as a user would.
(cd "$W" && SWEEP="$W/sweep.toml" OUT="$W/slurm" SHARDS=$SHARDS CONVOY="$CONVOY" \
    sbatch --wait --array=0-$((SHARDS - 1)) --cpus-per-task=1 --mem=512M \
    --export=ALL "$HERE/slurm-array.sh" >"$W/sbatch.out")
cat "$W/sbatch.out"
for i in $(seq 0 $((SHARDS - 1))); do
    test -d "$W/slurm/shard-$i/points" ||
        { echo "test-cluster.sh: array task $i wrote no shard; its log:" >&2; cat "$W"/convoy-sweep-*_"$i".log >&2 || true; exit 1; }
done
(cd "$W" && "$CONVOY" merge slurm/shard-* --out slurm/merged >/dev/null)
cmp "$W/one/points.csv" "$W/slurm/merged/points.csv"
echo "slurm: merged points.csv is byte-identical to the one-machine sweep"

echo "== k8s-indexed-job.yaml's command, once per index"
# The pod's command, from the manifest: its `args` block, with the
# built-in sweep and the shard count replaced by this test's, and the
# binary and the volume path by local ones.
ARGS=$(awk '/^ *args:/ { f = 1; next } f && /^ *- >-/ { next } f && /^ *[a-z]+:/ { exit } f { sub(/^ +/, ""); printf "%s ", $0 }' "$HERE/k8s-indexed-job.yaml")
COMPLETIONS=$(awk '/^ *completions:/ { print $2; exit }' "$HERE/k8s-indexed-job.yaml")
case "$ARGS" in
*"--shard-count $COMPLETIONS"*) ;;
*) echo "test-cluster.sh: the Job's --shard-count is not its completions ($COMPLETIONS): $ARGS" >&2; exit 1 ;;
esac
CMD=${ARGS//inode-alloc-reclaim-map/$W\/sweep.toml}
CMD=${CMD//--shard-count $COMPLETIONS/--shard-count $SHARDS --progress off}
CMD=${CMD//\/results/$W\/k8s}
CMD=${CMD/exec convoy/exec $CONVOY}
echo "pod command: $CMD"
for i in $(seq 0 $((SHARDS - 1))); do
    env -i PATH="$PATH" HOME="$W" HOSTNAME="convoy-sweep-$i-x7k2p" JOB_COMPLETION_INDEX=$i \
        /bin/sh -c "$CMD" >/dev/null
done
(cd "$W" && "$CONVOY" merge k8s/shard-* --out k8s/merged >/dev/null)
cmp "$W/one/points.csv" "$W/k8s/merged/points.csv"
echo "k8s: merged points.csv is byte-identical to the one-machine sweep"
echo "cluster-ok"
# The working directory stays for a look only when asked (KEEP=1).
if [ -n "${KEEP:-}" ]; then echo "kept: $W"; else rm -rf "$W"; fi
