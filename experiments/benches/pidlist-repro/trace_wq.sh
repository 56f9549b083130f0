#!/bin/bash
# trace_wq.sh ROOT OUT S T R C SECONDS WARMUP: runs ./pidlist_repro ROOT S T R C
# for WARMUP + SECONDS + 3 s and records the workqueue tracepoints
# (queue, execute start and end) for SECONDS after WARMUP into OUT (its
# 1 s windows into OUT.windows). wq_spans.py OUT reads it.
set -e
here=$(dirname "$0")
. "$here/tracefs.sh"
root=$1; out=$2; S=$3; T=$4; R=$5; C=$6; secs=$7; warm=$8
"$here/pidlist_repro" "$root" "$S" "$T" "$R" "$C" $((warm + secs + 3)) 1 > "$out.windows" 2>&1 &
pid=$!
sleep "$warm"
trace_reset 65536
trace_enable workqueue/workqueue_queue_work workqueue/workqueue_execute_start workqueue/workqueue_execute_end
sleep "$secs"
trace_save "$out"
trace_events_off
wait $pid
