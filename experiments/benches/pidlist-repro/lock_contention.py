#!/usr/bin/env python3
"""Summarise lock_contention.sh's trace: for each lock address and mode
(READ, WRITE, MUTEX, SPIN), the contentions, their mean, p50, p90 and
longest wait (contention_begin to contention_end of one task), and the
tasks that waited. The busiest rwsem is case 2's kernfs_rwsem; its WRITE
waiter is the churner. Usage: lock_contention.py OUT.trace"""
import collections
import re
import sys

began, waits, first, last = {}, collections.defaultdict(list), None, None
pat = re.compile(r"-(\d+)\s+\[\d+\]\s+\S+\s+([\d.]+): contention_(begin|end): (\w+) \((?:flags|ret)=([^)]*)\)")
for line in open(sys.argv[1]):
    m = pat.search(line)
    if not m:
        continue
    pid, t, kind, addr, flags = m.groups()
    t = float(t)
    first = first if first is not None else t
    last = t
    if kind == "begin":
        began[pid] = (t, addr, flags)
    elif pid in began:
        t0, a, f = began.pop(pid)
        waits[(a, f)].append((t - t0, pid))
print(f"{last - first:.3f} s traced")
for (addr, flags), v in sorted(waits.items(), key=lambda kv: -sum(d for d, _ in kv[1]))[:10]:
    d = sorted(x for x, _ in v)
    tasks = collections.Counter(p for _, p in v)
    print(f"{addr} {flags:12s} n {len(d):7d}  mean {1e6 * sum(d) / len(d):9.1f} us  p50 {1e6 * d[len(d) // 2]:8.1f}"
          f"  p90 {1e6 * d[len(d) * 9 // 10]:8.1f}  max {1e6 * d[-1]:8.1f} us  tasks {len(tasks)}")
