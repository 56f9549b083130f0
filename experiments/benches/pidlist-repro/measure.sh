#!/bin/bash
# measure.sh ROOT OUT S T R C SECS: runs pidlist_repro on the v1 hierarchy
# mounted at ROOT with the css_free work traced (workqueue tracepoints,
# filtered on css_free_rwork_fn); writes OUT.windows (reads and churn
# cycles per 10 s window) and OUT.trace. Needs root, tracefs and a built
# pidlist_repro beside this script. README.md says how.
set -e
here=$(dirname "$0")
root=$1; out=$2; shift 2
. "$here/tracefs.sh"
addr=0x$(awk '$3=="css_free_rwork_fn"{print $1}' /proc/kallsyms)
case $addr in
  0x|0x0000000000000000)
    echo "measure.sh: no address for css_free_rwork_fn in /proc/kallsyms (run as root)" >&2
    exit 1;;
esac
trace_reset 65536
for e in workqueue_execute_start workqueue_execute_end; do
  echo "function == $addr" > $tr/events/workqueue/$e/filter
done
trace_enable workqueue/workqueue_execute_start workqueue/workqueue_execute_end
"$here/pidlist_repro" "$root" "$@" 10 > $out.windows
trace_save $out.trace
trace_events_off
for e in workqueue_execute_start workqueue_execute_end; do echo 0 > $tr/events/workqueue/$e/filter; done
