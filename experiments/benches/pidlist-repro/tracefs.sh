# shellcheck shell=bash
# tracefs.sh: the tracefs steps the trace scripts share; sourced, not run.
# trace_reset KB: tracing off, every event off, the buffer emptied and
# sized KB a CPU. trace_enable EVENT...: turn on events (`lock/contention_begin`)
# and start tracing. trace_save FILE: stop tracing and copy the buffer.
# trace_events_off: every event off again.
tr=/sys/kernel/tracing
trace_reset() {
    echo 0 > $tr/tracing_on; echo 0 > $tr/events/enable; echo > $tr/trace
    echo "$1" > $tr/buffer_size_kb
}
trace_enable() {
    for e in "$@"; do echo 1 > "$tr/events/$e/enable"; done
    echo 1 > $tr/tracing_on
}
trace_save() {
    echo 0 > $tr/tracing_on
    cat $tr/trace > "$1"
}
trace_events_off() {
    echo 0 > $tr/events/enable
}
