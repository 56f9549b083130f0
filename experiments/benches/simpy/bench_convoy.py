#!/usr/bin/env python3
"""bench-convoy in SimPy 4, for the side-by-side ratio with `convoy bench`.

The benchmark is defined in docs/bench-convoy.md (normative): R readers and
W writers on one FIFO, writer-queued reader-writer lock, exponential think
and hold times, unlimited CPUs, T simulated seconds. This script follows
that definition and prints the same lines as `convoy bench`, the last one
`acquisitions_per_sec=N`.

Each reader and writer is a SimPy process: its think and hold times are
timeouts, and its wait for the lock is an event that the lock triggers at
the grant. Time is in microseconds (floats).
"""

import argparse
from collections import deque
import math
import random
import re
import sys
import time

import simpy

READER_THINK_US = 200.0
READER_HOLD_US = 20.0
WRITER_THINK_US = 2000.0
WRITER_HOLD_US = 100.0


class RWLock:
    """The benchmark's lock: FIFO, writer-queued.

    `acquire` returns an event that succeeds at the grant; the process
    yields it. A request is granted at once only if it is compatible with
    the holders and nobody waits; otherwise it joins the FIFO queue. A
    release that leaves the lock free grants the head writer alone, or the
    run of readers at the head, up to the first writer, at the same instant.
    """

    def __init__(self, env):
        self.env = env
        self.readers = 0
        self.writer = False
        self.queue = deque()  # (event, is_write), oldest first

    def acquire(self, write):
        ev = self.env.event()
        if self.queue or self.writer or (write and self.readers):
            self.queue.append((ev, write))
        else:
            if write:
                self.writer = True
            else:
                self.readers += 1
            ev.succeed()
        return ev

    def release(self, write):
        if write:
            self.writer = False
        else:
            self.readers -= 1
        q = self.queue
        if self.readers or self.writer or not q:
            return
        if q[0][1]:
            self.writer = True
            q.popleft()[0].succeed()
            return
        while q and not q[0][1]:
            self.readers += 1
            q.popleft()[0].succeed()


def task(env, lock, rng, waits, write, think_us, hold_us):
    """A reader (write False) or a writer: think, ask, hold, release."""
    think = 1.0 / think_us
    hold = 1.0 / hold_us
    while True:
        yield env.timeout(rng.expovariate(think))
        asked = env.now
        yield lock.acquire(write)
        waits.append(env.now - asked)
        yield env.timeout(rng.expovariate(hold))
        lock.release(write)


def run(readers, writers, duration_us, seed):
    """Builds and runs the model; returns the waits of each class and the
    events processed. A process's stream is seeded from one seeded stream,
    so each process has its own."""
    env = simpy.Environment()
    lock = RWLock(env)
    seeds = random.Random(seed)
    read_waits, write_waits = [], []
    for _ in range(readers):
        rng = random.Random(seeds.getrandbits(64))
        env.process(task(env, lock, rng, read_waits, False, READER_THINK_US, READER_HOLD_US))
    for _ in range(writers):
        rng = random.Random(seeds.getrandbits(64))
        env.process(task(env, lock, rng, write_waits, True, WRITER_THINK_US, WRITER_HOLD_US))
    # SimPy stops before the events at `until`: events at t < T are processed.
    env.run(until=duration_us)
    # Events scheduled minus those still queued: the events processed
    # (SimPy keeps no counter of its own; `_eid` numbers every scheduled event).
    events = next(env._eid) - len(env._queue)
    return read_waits, write_waits, events


UNITS_US = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}


def duration_us(text):
    """A duration with a unit (`10s`, `500ms`), as `convoy bench` takes it,
    or a bare number of seconds."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*(ns|us|ms|s)?\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"--duration {text!r}: expected a number and a unit (ns, us, ms, s)")
    value = float(m.group(1)) * UNITS_US[m.group(2) or "s"]
    if value <= 0:
        raise argparse.ArgumentTypeError(f"--duration {text!r}: must be positive")
    return value


def row(name, waits):
    """A class's line: nearest-rank percentiles over all its acquisitions,
    zero waits included."""
    n = len(waits)
    if n == 0:
        return f"{name:<8} {0:>12} {'0.000':>10} {'0.000':>10} {'0.000':>10} {'0.000':>10} {'0.000':>10}"
    s = sorted(waits)

    def q(p):
        return s[max(math.ceil(p * n), 1) - 1]

    mean = sum(s) / n
    cells = [f"{x:.3f}" for x in (mean, q(0.5), q(0.99), q(0.999), s[-1])]
    return f"{name:<8} {n:>12} " + " ".join(f"{c:>10}" for c in cells)


def main(argv=None):
    p = argparse.ArgumentParser(description="bench-convoy (docs/bench-convoy.md) in SimPy")
    p.add_argument("--readers", type=int, default=64, help="R (default 64)")
    p.add_argument("--writers", type=int, default=4, help="W (default 4)")
    p.add_argument("--duration", default="10s", help="T, e.g. 10s or 500ms; a bare number is seconds (default 10s)")
    p.add_argument("--seed", type=int, default=1, help="the seed (default 1)")
    a = p.parse_args(argv)
    if a.readers < 0 or a.writers < 0:
        p.error("--readers and --writers must not be negative")
    try:
        t_us = duration_us(a.duration)
    except argparse.ArgumentTypeError as e:
        p.error(str(e))

    start = time.perf_counter()
    read_waits, write_waits, events = run(a.readers, a.writers, t_us, a.seed)
    wall = time.perf_counter() - start

    total = len(read_waits) + len(write_waits)
    w = max(wall, 1e-9)
    out = [
        f"bench-convoy: R={a.readers} W={a.writers} T={a.duration} seed={a.seed} policy=fifo",
        f"{'class':<8} {'acquisitions':>12} {'mean_us':>10} {'p50_us':>10} {'p99_us':>10} {'p999_us':>10} {'max_us':>10}",
        row("readers", read_waits),
        row("writers", write_waits),
        f"total_acquisitions={total}",
        f"wall_seconds={wall:.6f}",
        f"events={events}",
        f"events_per_sec={int(events / w)}",
        f"acquisitions_per_sec={int(total / w)}",
    ]
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
