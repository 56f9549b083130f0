#!/bin/bash
# A convoy sweep as a Slurm job array (docs/sweeps.md, "On a cluster").
#
# Each array task runs one shard: the points whose index is
# SLURM_ARRAY_TASK_ID modulo the shard count. convoy reads the index from
# SLURM_ARRAY_TASK_ID itself, so the command is the same in every task.
# Array indices must run from 0 to SHARDS-1 (`--array=0-(SHARDS-1)`).
#
#   sbatch --array=0-15 slurm-array.sh          # 16 shards
#   # when all tasks are done (or as a dependent job):
#   convoy merge "$OUT"/shard-* --out "$OUT"/merged
#
# A task that fails or is preempted can be resubmitted as is
# (`sbatch --array=5 slurm-array.sh`): it skips the points its directory
# already holds. Points run on all the task's CPUs, one point per CPU.

#SBATCH --job-name=convoy-sweep
#SBATCH --array=0-15
#SBATCH --cpus-per-task=4
#SBATCH --mem=2G
#SBATCH --time=02:00:00
#SBATCH --output=convoy-sweep-%A_%a.log

set -euo pipefail

SWEEP=${SWEEP:-inode-alloc-reclaim-map}    # a built-in sweep or a sweep file on shared storage
OUT=${OUT:-$HOME/convoy-sweeps/$SWEEP}     # shared storage, seen by every node
SHARDS=${SHARDS:-16}                       # = the number of array tasks
CONVOY=${CONVOY:-convoy}                   # the same binary for every task (merge checks the version)

# One directory per shard: no two tasks ever write the same file.
exec "$CONVOY" sweep "$SWEEP" \
    --jobs "${SLURM_CPUS_PER_TASK:-1}" \
    --shard-count "$SHARDS" \
    --out "$OUT/shard-$SLURM_ARRAY_TASK_ID"
