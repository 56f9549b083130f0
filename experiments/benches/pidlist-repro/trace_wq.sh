#!/bin/bash
# trace_wq.sh ROOT OUT S T R C SECONDS WARMUP [sched]: runs ./pidlist_repro
# ROOT S T R C for WARMUP + SECONDS + 3 s and records the workqueue
# tracepoints (queue, execute start and end) for SECONDS after WARMUP
# into OUT (its 1 s windows into OUT.windows); with `sched`, the
# scheduler's switches, wakeups and migrations too (keep SECONDS under a
# second). wq_spans.py OUT reads it.
set -e
here=$(dirname "$0")
. "$here/tracefs.sh"
root=$1; out=$2; S=$3; T=$4; R=$5; C=$6; secs=$7; warm=$8
events="workqueue/workqueue_queue_work workqueue/workqueue_execute_start workqueue/workqueue_execute_end"
[ "$9" = sched ] && events="$events sched/sched_switch sched/sched_wakeup sched/sched_migrate_task"
total=$(awk -v w="$warm" -v s="$secs" 'BEGIN { print int(w + s + 4) }')   # whole seconds; SECONDS may be 0.5
"$here/pidlist_repro" "$root" "$S" "$T" "$R" "$C" "$total" 1 > "$out.windows" 2>&1 &
pid=$!
sleep "$warm"
trace_reset 131072
# shellcheck disable=SC2086
trace_enable $events
sleep "$secs"
trace_save "$out"
trace_events_off
wait $pid
