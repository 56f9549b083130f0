#!/bin/bash
# trace_cycles.sh ROOT OUT S T R C SECONDS WARMUP RUN: runs pidlist_repro
# (RUN seconds, 1 s windows) and, from WARMUP seconds in, traces SECONDS
# of every task's scheduler events (sched_switch, sched_wakeup), every
# lock contention (lock:contention_begin and _end) and the churners'
# mkdir and rmdir system calls (syscalls:sys_enter/exit_mkdir, _rmdir).
# Writes OUT.trace, OUT.windows and OUT.tids (the reproducer's threads:
# the main thread, then the R readers, then the C churners; the seeds'
# sleeping tasks are processes of their own). cycle_states.py and
# wake_latency.py read them. Check that nothing else runs first: on two
# CPUs one more busy thread moves the churn tenfold. The syscall
# tracepoints slow the churn by about a third.
set -e
if [ $# -lt 9 ]; then echo "usage: $0 ROOT OUT S T R C SECONDS WARMUP RUN" >&2; exit 2; fi
here=$(dirname "$0")
root=$1; out=$2; S=$3; T=$4; R=$5; C=$6; D=$7; W=$8; RUN=$9
. "$here/tracefs.sh"
trace_reset 65536
"$here/pidlist_repro" "$root" "$S" "$T" "$R" "$C" "$RUN" 1 > "$out.windows" &
P=$!
sleep "$W"
ls /proc/$P/task | sort -n > "$out.tids"
trace_enable sched/sched_switch sched/sched_wakeup lock/contention_begin lock/contention_end \
    syscalls/sys_enter_mkdir syscalls/sys_exit_mkdir syscalls/sys_enter_rmdir syscalls/sys_exit_rmdir
sleep "$D"
trace_save "$out.trace"
trace_events_off
wait $P
