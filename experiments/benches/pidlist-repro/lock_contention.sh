#!/bin/bash
# lock_contention.sh ROOT OUT S T R C: runs pidlist_repro for 20 s in 10 s
# windows and traces every lock contention (lock:contention_begin and
# _end) for 2 s from 10 s into the run. Writes OUT.trace and OUT.windows;
# lock_contention.py summarises the trace per lock and mode. Check that
# nothing else runs on the machine first: on two CPUs one more busy
# thread moves the churn tenfold.
set -e
if [ $# -lt 6 ]; then echo "usage: $0 ROOT OUT S T R C" >&2; exit 2; fi
here=$(dirname "$0")
root=$1; out=$2; S=$3; T=$4; R=$5; C=$6
. "$here/tracefs.sh"
trace_reset 16384
"$here/pidlist_repro" "$root" "$S" "$T" "$R" "$C" 20 10 > "$out.windows" &
P=$!
sleep 10
trace_enable lock/contention_begin lock/contention_end
sleep 2
trace_save "$out.trace"
trace_events_off
wait $P
