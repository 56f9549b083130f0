#!/usr/bin/env python3
"""Where case 2's churners spend their mkdir and rmdir calls, from
trace_cycles.sh's trace: for each call that began and ended in the trace,
its wall time and how it splits between running, asleep, runnable after a
wakeup and runnable after a preemption; the lock contentions inside the
calls (a contention_begin is a sleep: the tracepoint fires after an
rwsem's or mutex's optimistic spin fails), and whether need_resched (the
N flag) was set when the sleep began. Usage: cycle_states.py OUT R
(OUT.trace and OUT.tids; R readers)."""
import collections
import re
import sys

out, readers = sys.argv[1], int(sys.argv[2])
tids = [int(x) for x in open(out + ".tids")]
churners = set(tids[1 + readers:])
line = re.compile(r"^\s*(.+?)-(\d+)\s+\[(\d+)\]\s+(\S+)\s+([\d.]+): (\S+?):? (.*)$")
switch = re.compile(r"prev_pid=(\d+) prev_prio=\d+ prev_state=(\S+) ==> next_comm=\S+ next_pid=(\d+)")
state, calls, done = {}, {}, collections.defaultdict(list)
began, sleeps = {}, collections.defaultdict(list)


def charge(tid, t):
    if tid in state and tid in calls:
        s, t0 = state[tid]
        calls[tid][2][s] += t - t0


for text in open(out + ".trace"):
    m = line.match(text)
    if not m:
        continue
    _, pid, _, flags, t, name, rest = m.groups()
    pid, t = int(pid), float(t)
    if name == "sched_switch":
        prev, pstate, nxt = switch.search(rest).groups()
        prev, nxt = int(prev), int(nxt)
        charge(prev, t)
        state[prev] = ("runnable after a preemption" if pstate.startswith("R") else "asleep", t)
        charge(nxt, t)
        state[nxt] = ("running", t)
    elif name == "sched_wakeup":
        p = int(re.search(r"pid=(\d+) ", rest).group(1))
        charge(p, t)
        state[p] = ("runnable after a wakeup", t)
    elif name.startswith(("sys_mkdir", "sys_rmdir")) and pid in churners:
        call = name.split("(")[0].replace("sys_", "")
        if rest.startswith("->") or name.endswith("->"):
            if pid in calls:
                charge(pid, t)
                c, t0, acc = calls.pop(pid)
                done[c].append((t - t0, acc))
        else:
            calls[pid] = (call, t, collections.Counter())
            state[pid] = ("running", t)
    elif name == "contention_begin" and pid in calls:
        lock_flags = rest.split("flags=")[1].rstrip(")")
        began[pid] = (t, calls[pid][0], rest.split()[0], lock_flags, "N" in flags)
    elif name == "contention_end" and pid in began:
        t0, call, addr, lock_flags, need_resched = began.pop(pid)
        sleeps[(call, addr, lock_flags)].append((t - t0, need_resched))

for call, v in done.items():
    walls = sorted(w for w, _ in v)
    total = collections.Counter()
    for _, acc in v:
        total.update(acc)
    n = len(v)
    split = ", ".join(f"{k} {x / n * 1e6:.0f} us" for k, x in total.most_common())
    print(f"{call}: {n} calls, wall p50 {walls[n // 2] * 1e6:.0f} us, p90 {walls[n * 9 // 10] * 1e6:.0f} us, "
          f"mean {sum(walls) / n * 1e6:.0f} us; a call: {split}")
print("contentions inside the calls (lock address, flags): count, p50, p90, with need_resched set")
for key, v in sorted(sleeps.items(), key=lambda kv: -sum(d for d, _ in kv[1]))[:8]:
    d = sorted(x for x, _ in v)
    print(f"  {key}: {len(v)}, p50 {d[len(d) // 2] * 1e6:.0f} us, p90 {d[len(d) * 9 // 10] * 1e6:.0f} us, "
          f"N set {sum(1 for _, n in v if n)}")
