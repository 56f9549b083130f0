#!/usr/bin/env python3
"""How long case 2's churners wait for a CPU after a wakeup, from
trace_cycles.sh's trace, by how the CPU came free: the CPU was idle, the
task running there blocked (D or S), was preempted (R, R+) or was an idle
kworker (I); `migrated` when the churner ran on another CPU than the one
it was woken onto. Also how long that task had been running when the
churner was woken. Usage: wake_latency.py OUT R (OUT.trace and OUT.tids;
R readers)."""
import collections
import re
import sys

out, readers = sys.argv[1], int(sys.argv[2])
tids = [int(x) for x in open(out + ".tids")]
churners = {str(t) for t in tids[1 + readers:]}
switch = re.compile(r"\[(\d+)\]\s+\S+\s+([\d.]+): sched_switch: prev_comm=\S+ prev_pid=(\d+) prev_prio=\d+ "
                    r"prev_state=(\S+) ==> next_comm=\S+ next_pid=(\d+)")
wakeup = re.compile(r"\[(\d+)\]\s+\S+\s+([\d.]+): sched_wakeup: comm=\S+ pid=(\d+) prio=\d+ target_cpu=(\d+)")
current, since, pending, res = {}, {}, {}, collections.defaultdict(list)
for text in open(out + ".trace"):
    m = switch.search(text)
    if m:
        cpu, t, prev, pstate, nxt = m.groups()
        cpu, t = int(cpu), float(t)
        if nxt in pending:
            woken, target, ran = pending.pop(nxt)
            how = "idle" if prev == "0" else "after " + pstate
            if target != cpu:
                how += ", migrated"
            res[how].append((t - woken, ran))
        current[cpu], since[cpu] = nxt, t
        continue
    m = wakeup.search(text)
    if m and m.group(3) in churners:
        t, target = float(m.group(2)), int(m.group(4))
        busy = current.get(target, "0") != "0" and target in since
        pending[m.group(3)] = (t, target, t - since[target] if busy else None)
for how, v in sorted(res.items(), key=lambda kv: -len(kv[1])):
    d = sorted(x for x, _ in v)
    r = sorted(x for _, x in v if x is not None)
    ran = f"; it had run p50 {r[len(r) // 2] * 1e6:.0f} us" if r else ""
    print(f"{how:20s} {len(v):5d} wakeups, to run p50 {d[len(d) // 2] * 1e6:7.0f} us, "
          f"p90 {d[len(d) * 9 // 10] * 1e6:7.0f} us{ran}")
