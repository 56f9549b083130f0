#!/usr/bin/env python3
"""wq_spans.py TRACE: from trace_wq.sh's trace, who queued the pidlist
destroy works (a task, or a timer in softirq context), and each work
function's execution time (execute_start to execute_end on one kworker),
with a log2 histogram of css_free_rwork_fn's (the free path that calls
cgroup1_pidlist_destroy_all, flush included). With sched_switch events
in the trace: what ran next on the CPU when a css_free kworker slept
after queueing its cgroup's destroy work (the flush's wait), how soon
that work started, and (with sched_wakeup and sched_migrate_task too)
how many other tasks, not kworkers, were runnable on that CPU then and
how long the longest of them had waited."""
import collections
import math
import re
import sys

LINE = re.compile(r'^\s*(\S+)-(\d+)\s+\[(\d+)\]\s+(\S+)\s+([\d.]+): (\w+): (.*)$')
events = []
for line in open(sys.argv[1]):
    m = LINE.match(line)
    if not m:
        continue
    comm, pid, cpu, flags, ts, name, rest = m.groups()
    fields = dict(kv.split('=', 1) for kv in rest.split() if '=' in kv)
    fn = re.search(r'function[ =](\S+)', rest)
    if fn:
        fields['function'] = fn.group(1)
    fields['cpu'] = int(cpu)
    events.append((float(ts), comm, int(pid), flags, name, fields))
print('events', len(events), 'over', round(events[-1][0] - events[0][0], 3), 's')

queued = collections.Counter()
for ts, comm, pid, flags, name, f in events:
    if name == 'workqueue_queue_work' and f.get('function') == 'cgroup_pidlist_destroy_work_fn':
        context = 'softirq (a timer)' if 's' in flags else 'task ' + comm.split('/')[0]
        queued[context] += 1
print('destroy works queued by:', dict(queued))

started, spans = {}, collections.defaultdict(list)
for ts, comm, pid, flags, name, f in events:
    fn = f.get('function')
    if name == 'workqueue_execute_start':
        started[pid] = (ts, fn)
    elif name == 'workqueue_execute_end' and started.get(pid, (0, None))[1] == fn:
        spans[fn].append((ts - started.pop(pid)[0]) * 1e6)
for fn, v in sorted(spans.items(), key=lambda kv: -len(kv[1])):
    v.sort()
    print(f'{fn}: n {len(v)}, mean {sum(v) / len(v):.1f} us, p50 {v[len(v) // 2]:.0f}, '
          f'p90 {v[int(len(v) * 0.9)]:.0f}, p99 {v[int(len(v) * 0.99)]:.0f}, max {v[-1]:.0f}')
hist = collections.Counter(0 if x < 1 else int(math.log2(x)) for x in spans.get('css_free_rwork_fn', []))
print('css_free_rwork_fn, log2 us:', ' '.join(f'[{2 ** b},{2 ** (b + 1)}) {hist[b]}' for b in sorted(hist)))

# The flush's wait: a css_free kworker queues its destroy work, then
# sleeps in flush_workqueue; what does its CPU run next, and who else
# was waiting for that CPU? `where`: a task's ('R', cpu, since) while
# runnable, 'run' or 'S' otherwise.
state, nxt = {}, collections.Counter()
late = 0
where, names, waiting = {}, {}, []
for ts, comm, pid, flags, name, f in events:
    if name == 'sched_wakeup':
        p = int(f['pid'])
        names[p] = f.get('comm', '?')
        if where.get(p, ('S',))[0] != 'run':
            where[p] = ('R', int(f['target_cpu']), ts)
    elif name == 'sched_migrate_task':
        p = int(f['pid'])
        if where.get(p, ('S',))[0] == 'R':
            where[p] = ('R', int(f['dest_cpu']), where[p][2])
    if name == 'workqueue_execute_start' and f.get('function') == 'css_free_rwork_fn':
        state[pid] = ['running']
    elif (name == 'workqueue_queue_work' and f.get('function') == 'cgroup_pidlist_destroy_work_fn'
          and state.get(pid, [''])[0] == 'running'):
        state[pid] = ['queued']
    elif name == 'sched_switch':
        prev, nxt_comm = int(f.get('prev_pid', -1)), f.get('next_comm', '?')
        nxt_pid, on = int(f.get('next_pid', -1)), f['cpu']
        if state.get(prev, [''])[0] == 'queued' and not f.get('prev_state', 'R').startswith('R'):
            state[prev] = ['slept', ts, nxt_comm.split('/')[0]]
            others = [ts - w[2] for q, w in where.items()
                      if w[0] == 'R' and w[1] == on and q != nxt_pid
                      and not names.get(q, '').startswith('kworker')]
            waiting.append((len(others), max(others, default=0.0) * 1e6))
        names[prev], names[nxt_pid] = f.get('prev_comm', '?'), nxt_comm
        where[prev] = ('R', on, ts) if f.get('prev_state', 'R').startswith('R') else ('S',)
        where[nxt_pid] = ('run',)
    elif name == 'workqueue_execute_start' and f.get('function') == 'cgroup_pidlist_destroy_work_fn':
        for fp, st in state.items():
            if st[0] == 'slept':
                nxt[st[2]] += 1
                late += (ts - st[1]) * 1e6 > 20
                state[fp] = ['done']
                break
if nxt:
    print('after a flusher slept its CPU ran next:', dict(nxt), f'; its work started over 20 us later: {late}')
if waiting and any(n for n, _ in waiting):
    counts = collections.Counter(min(n, 5) for n, _ in waiting)
    longest = sorted(w for n, w in waiting if n)
    print('other tasks (not kworkers) runnable on that CPU then (5 = 5 or more):', dict(sorted(counts.items())),
          f'; the longest-waiting of them had waited p50 {longest[len(longest) // 2]:.0f} us,'
          f' p90 {longest[int(len(longest) * 0.9)]:.0f} us')
