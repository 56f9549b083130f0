#!/usr/bin/env python3
"""Summarise churner_states.sh's trace: the share of the churner's time
running, asleep, runnable after a wakeup and runnable after being
preempted, with counts and medians; and, if the trace has stacks, where
it went to sleep. Usage: churner_states.py OUT.trace"""
import collections
import re
import sys

events, stacks = [], collections.Counter()
lines = open(sys.argv[1]).read().split("\n")
i, state = 0, None
while i < len(lines):
    m = re.search(r"\s(\d+\.\d+): (sched_switch|sched_wakeup):(.*)", lines[i])
    if m:
        events.append((float(m.group(1)), m.group(2), m.group(3)))
        s = re.search(r"prev_state=(\S+)", m.group(3))
        state = s.group(1) if s else state
    elif "<stack trace>" in lines[i]:
        frames = []
        while i + 1 < len(lines) and lines[i + 1].strip().startswith("=>"):
            i += 1
            frames.append(lines[i].strip()[3:].split("+")[0])
        skip = {"__schedule", "schedule", "__traceiter_sched_switch", "trace_event_raw_event_sched_switch",
                "event_triggers_call", "trace_event_buffer_commit"}
        stacks[(state, " < ".join([f for f in frames if f not in skip][:6]))] += 1
    i += 1

prev = collections.Counter(re.search(r"prev_pid=(\d+)", a).group(1) for _, k, a in events if k == "sched_switch")
tid = prev.most_common(1)[0][0]
state, since = None, None
spent, spans = collections.defaultdict(float), collections.defaultdict(list)
for t, kind, args in events:
    if kind == "sched_wakeup":
        if state == "asleep":
            spent[state] += t - since; spans[state].append(t - since)
            state, since = "runnable after a wakeup", t
    elif re.search(r"next_pid=%s\b" % tid, args):
        if state in ("runnable after a wakeup", "runnable after preemption"):
            spent[state] += t - since; spans[state].append(t - since)
        state, since = "running", t
    elif re.search(r"prev_pid=%s\b" % tid, args):
        if state == "running":
            spent[state] += t - since; spans[state].append(t - since)
        state = "runnable after preemption" if re.search(r"prev_state=R", args) else "asleep"
        since = t
total = sum(spent.values())
print(f"churner {tid}, {total:.3f} s traced")
for k in ("running", "asleep", "runnable after a wakeup", "runnable after preemption"):
    v = sorted(spans[k])
    if v:
        print(f"{k:27s} {100 * spent[k] / total:5.1f}%  n {len(v):6d}  p50 {v[len(v) // 2] * 1e6:8.1f} us"
              f"  p90 {v[len(v) * 9 // 10] * 1e6:8.1f} us  mean {spent[k] / len(v) * 1e6:8.1f} us")
for (s, where), n in stacks.most_common(12):
    print(f"{n:6d} {s:3s} {where}")
