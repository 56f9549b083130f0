#!/bin/bash
# measure.sh ROOT OUT S T R C SECS: runs pidlist_repro on the v1 hierarchy
# mounted at ROOT with the css_free work traced (workqueue tracepoints,
# filtered on css_free_rwork_fn); writes OUT.windows (reads and churn
# cycles per 10 s window) and OUT.trace. Needs root, tracefs and a built
# pidlist_repro beside this script. README.md says how.
set -e
here=$(dirname "$0")
root=$1; out=$2; shift 2
tr=/sys/kernel/tracing
addr=0x$(awk '$3=="css_free_rwork_fn"{print $1}' /proc/kallsyms)
case $addr in
  0x|0x0000000000000000)
    echo "measure.sh: no address for css_free_rwork_fn in /proc/kallsyms (run as root)" >&2
    exit 1;;
esac
echo 0 > $tr/tracing_on
echo 0 > $tr/events/enable
echo > $tr/trace
echo 65536 > $tr/buffer_size_kb
for e in workqueue_execute_start workqueue_execute_end; do
  echo "function == $addr" > $tr/events/workqueue/$e/filter
  echo 1 > $tr/events/workqueue/$e/enable
done
echo 1 > $tr/tracing_on
"$here/pidlist_repro" "$root" "$@" 10 > $out.windows
echo 0 > $tr/tracing_on
cat $tr/trace > $out.trace
echo 0 > $tr/events/enable
for e in workqueue_execute_start workqueue_execute_end; do echo 0 > $tr/events/workqueue/$e/filter; done
