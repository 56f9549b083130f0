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
tr=/sys/kernel/tracing
echo 0 > $tr/tracing_on; echo 0 > $tr/events/enable; echo > $tr/trace
echo 16384 > $tr/buffer_size_kb
"$here/pidlist_repro" "$root" "$S" "$T" "$R" "$C" 20 10 > "$out.windows" &
P=$!
sleep 10
echo 1 > $tr/events/lock/contention_begin/enable
echo 1 > $tr/events/lock/contention_end/enable
echo 1 > $tr/tracing_on
sleep 2
echo 0 > $tr/tracing_on
cat $tr/trace > "$out.trace"
echo 0 > $tr/events/enable
wait $P
