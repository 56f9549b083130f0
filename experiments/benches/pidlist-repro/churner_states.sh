#!/bin/bash
# churner_states.sh ROOT OUT S T R C [stacks]: runs pidlist_repro with one
# churner (C should be 1) and traces that churner's scheduler events for
# 2 s from 10 s into the run: sched_switch in and out of it and its
# sched_wakeup. With `stacks`, every switch out also records the kernel
# stack (an event trigger; no kprobes needed), which slows the churner.
# Also prints the churner's CPU time over the second 10 s window (from
# /proc/PID/task/TID/schedstat) and so its CPU time per churn cycle.
# Writes OUT.trace and OUT.windows; churner_states.py summarises the trace.
set -e
if [ $# -lt 6 ]; then echo "usage: $0 ROOT OUT S T R C [stacks]" >&2; exit 2; fi
here=$(dirname "$0")
root=$1; out=$2; S=$3; T=$4; R=$5; C=$6; stacks=$7
. "$here/tracefs.sh"
trace_reset 16384
"$here/pidlist_repro" "$root" "$S" "$T" "$R" "$C" 20 10 > "$out.windows" &
P=$!
sleep 4
tid=$(ls /proc/$P/task | sort -n | tail -1)   # the last thread created: a churner
sleep 6
cpu0=$(cut -d' ' -f1 /proc/$P/task/$tid/schedstat)
echo "prev_pid == $tid || next_pid == $tid" > $tr/events/sched/sched_switch/filter
echo "pid == $tid" > $tr/events/sched/sched_wakeup/filter
[ "$stacks" = stacks ] && echo "stacktrace if prev_pid == $tid" > $tr/events/sched/sched_switch/trigger
trace_enable sched/sched_switch sched/sched_wakeup
sleep 2
trace_save "$out.trace"
[ "$stacks" = stacks ] && echo "!stacktrace if prev_pid == $tid" > $tr/events/sched/sched_switch/trigger
echo 0 > $tr/events/sched/sched_switch/filter
echo 0 > $tr/events/sched/sched_wakeup/filter
trace_events_off
sleep 7.9
cpu1=$(cut -d' ' -f1 /proc/$P/task/$tid/schedstat)
wait $P
cycles=$(awk '$1=="window" && $2==1 {print $6}' "$out.windows")
echo "churner CPU in the second window: $(( (cpu1 - cpu0) / 1000000 )) ms for $cycles cycles: $(( (cpu1 - cpu0) / (cycles > 0 ? cycles : 1) )) ns a cycle"
