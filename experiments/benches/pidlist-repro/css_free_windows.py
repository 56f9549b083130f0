"""css_free work durations per window from measure.sh's trace.

usage: css_free_windows.py OUT.trace

Pairs each workqueue_execute_start of css_free_rwork_fn with its
execute_end (same kworker, same work), keeps the pairs inside one of the
reproducer's windows (its trace_marker lines), and prints per window the
frees, the mean, p50, p90, p99 and max in microseconds (the trace's
resolution is 1 us), then the log2 histogram of all windows.
"""
import re,sys,collections
# css_free work durations per window from a trace with window markers
starts={}; win=-1; per=collections.defaultdict(list)
for l in open(sys.argv[1]):
    m=re.search(r'\[(\d+)\].*?\s(\d+\.\d+): (.*)',l)
    if not m: continue
    cpu,ts,msg=m.group(1),float(m.group(2)),m.group(3)
    if 'window' in msg and 'start' in msg: win=int(msg.split()[-2]); continue
    if 'window end' in msg: win=-2; continue
    w=re.search(r'work struct (\w+)',msg)
    if not w: continue
    key=(l.split()[0],w.group(1))
    if 'execute_start' in msg: starts[key]=(ts,win)
    elif 'execute_end' in msg and key in starts:
        t0,w0=starts.pop(key)
        if w0>=0 and win==w0: per[w0].append((ts-t0)*1e6)
allv=[]
for w in sorted(per):
    v=sorted(per[w]); allv+=v
    n=len(v); print(f"window {w}: frees {n} mean {sum(v)/n:.1f} us p50 {v[n//2]:.0f} p90 {v[int(n*.9)]:.0f} p99 {v[min(n-1,int(n*.99))]:.0f} max {v[-1]:.0f}")
h=collections.Counter()
for x in allv:
    b=0 if x<1 else 1<<(int(x).bit_length()-1)
    h[b]+=1
print("log2 us:", ", ".join(f"[{b}] {h[b]}" for b in sorted(h)))
