//! `convoy run --trace FILE`: one run as Chrome trace event JSON, which
//! Perfetto and chrome://tracing open.
//!
//! One track (thread) per task and kworker. Complete slices (`ph: "X"`)
//! for lock waits and holds, `cpu` and `sleep` steps, time runnable but
//! not on a CPU, named spans and work items; flow arrows (`s`/`f`) from the
//! task whose release or unlock woke a waiter to that waiter; a counter
//! (`C`) per lock of the tasks asleep in its wait queue. Times are in
//! microseconds with nanosecond decimals, as the format wants.
//!
//! Only events that end inside the window are kept, and at most
//! [`MAX_EVENTS`] of them (then the trace says it was cut short), so a
//! trace of a long run costs bounded memory.

use models::{CpuId, LockId, TaskId};
use serde::Serialize;
use sim::SimTime;
use typed_index_collections::{ti_vec, TiVec};

/// Most events one trace keeps unless `--trace-max-events` says
/// otherwise: about 100 MB of JSON at ~100 bytes an event, so that the
/// file opens in a browser. chrome://tracing refuses JSON over 256 MB,
/// and Perfetto's in-page trace processor gets about 2 GB of memory from
/// a browser and needs several times a trace's size for it (Perfetto's
/// documentation, "Visualising large traces"); 2 million events (200 MB)
/// were at that edge.
pub const MAX_EVENTS: usize = 1_000_000;

#[derive(Clone, Serialize)]
struct Event {
    name: String,
    cat: &'static str,
    ph: &'static str,
    ts: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    dur: Option<f64>,
    pid: u32,
    /// The track: a task's id (the format's thread id).
    tid: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bp: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    args: Option<serde_json::Value>,
}

fn us(t: SimTime) -> f64 {
    t.0 as f64 / 1e3
}

/// The events of one run, collected as it goes.
#[derive(Clone)]
pub struct Trace {
    from: SimTime,
    to: SimTime,
    events: Vec<Event>,
    /// The time of the first event left out for want of room.
    truncated_at: Option<SimTime>,
    /// Events of the window left out for want of room: with the kept
    /// ones, what the whole window holds (the size a user is told).
    left_out: u64,
    /// Most events kept ([`MAX_EVENTS`] unless set lower).
    max_events: usize,
    next_flow: u64,
    /// Sleeping waiters per lock (the queue-length counter).
    queued: TiVec<LockId, u32>,
    /// The tasks whose tracks are kept (`--trace-tasks`); all if `None`.
    tracked: Option<Vec<bool>>,
    /// The locks whose waits, holds, wake arrows and queue counters are
    /// kept (`--trace-locks`); all if `None`.
    locks_kept: Option<TiVec<LockId, bool>>,
    /// The span names whose slices are kept (`--trace-spans`); all if
    /// `None`.
    spans_kept: Option<Vec<String>>,
}

impl Trace {
    /// A trace of `[from, to)` of a run with `locks` locks.
    pub fn new(from: SimTime, to: SimTime, locks: usize) -> Trace {
        Trace {
            from,
            to,
            events: Vec::new(),
            truncated_at: None,
            left_out: 0,
            max_events: MAX_EVENTS,
            next_flow: 0,
            queued: ti_vec![0; locks],
            tracked: None,
            locks_kept: None,
            spans_kept: None,
        }
    }

    /// Keeps the lock events (waits, holds, wake arrows, queue counters)
    /// only of the locks `keep` says (indexed by lock).
    pub fn only_locks(&mut self, keep: TiVec<LockId, bool>) {
        self.locks_kept = Some(keep);
    }

    /// Whether `lock`'s events are kept.
    pub fn keeps_lock(&self, lock: LockId) -> bool {
        (self.locks_kept.as_ref()).is_none_or(|k| k.get(lock).copied().unwrap_or(false))
    }

    /// Keeps the span slices only of the spans named in `names` (a span's
    /// subject is `NAME/group`).
    pub fn only_spans(&mut self, names: Vec<String>) {
        self.spans_kept = Some(names);
    }

    /// Whether the slices of span subject `subject` (`NAME/group`) are
    /// kept.
    pub fn keeps_span(&self, subject: &str) -> bool {
        let name = subject.split_once('/').map_or(subject, |(n, _)| n);
        (self.spans_kept.as_ref()).is_none_or(|k| k.iter().any(|s| s == name))
    }

    /// Keeps only the tracks of the tasks `keep` says (indexed by task),
    /// with the wakeup arrows between two of them.
    pub fn only_tasks(&mut self, keep: Vec<bool>) {
        self.events
            .retain(|e| keep.get(e.tid as usize).copied().unwrap_or(false));
        self.tracked = Some(keep);
    }

    /// Whether task `t`'s track is kept.
    fn tracks(&self, t: TaskId) -> bool {
        (self.tracked.as_ref()).is_none_or(|k| k.get(t.index()).copied().unwrap_or(false))
    }

    /// Keeps at most `n` events instead of [`MAX_EVENTS`].
    pub fn limit_events(&mut self, n: usize) {
        self.max_events = n;
    }

    /// Whether an event at `at` is kept: in the window, and `room` more
    /// events fit.
    fn keep_n(&mut self, at: SimTime, room: usize) -> bool {
        if at < self.from || at >= self.to {
            return false;
        }
        if self.events.len() + room > self.max_events {
            self.truncated_at.get_or_insert(at);
            self.left_out += room as u64;
            return false;
        }
        true
    }

    fn keep(&mut self, at: SimTime) -> bool {
        self.keep_n(at, 1)
    }

    /// Where the trace stops short of its window's end, if it does: the
    /// time of the first event it had no room for.
    pub fn truncated_at(&self) -> Option<SimTime> {
        self.truncated_at
    }

    /// Events the window held: those kept and those left out for want of
    /// room.
    pub fn window_events(&self) -> u64 {
        self.events.len() as u64 + self.left_out
    }

    /// Events kept so far.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether no event was kept.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// Names a task's track.
    pub fn thread(&mut self, t: TaskId, name: &str) {
        self.events.push(Event {
            name: "thread_name".into(),
            cat: "__metadata",
            ph: "M",
            ts: 0.0,
            dur: None,
            pid: 1,
            tid: t.0,
            id: None,
            bp: None,
            args: Some(serde_json::json!({ "name": name })),
        });
    }

    /// A slice `[start, end)` on task `t`'s track.
    pub fn slice(
        &mut self,
        t: TaskId,
        cat: &'static str,
        name: String,
        start: SimTime,
        end: SimTime,
    ) {
        if !self.tracks(t) || !self.keep(end) {
            return;
        }
        self.events.push(Event {
            name,
            cat,
            ph: "X",
            ts: us(start),
            dur: Some((end.0 - start.0) as f64 / 1e3),
            pid: 1,
            tid: t.0,
            id: None,
            bp: None,
            args: None,
        });
    }

    /// A slice of category `cpu` with the CPU it ran or waited on, when
    /// there is one, as an argument (`args.cpu`), so that a viewer can
    /// tell which tasks shared a CPU.
    pub fn slice_on_cpu(
        &mut self,
        t: TaskId,
        name: String,
        start: SimTime,
        end: SimTime,
        cpu: Option<CpuId>,
    ) {
        let n = self.events.len();
        self.slice(t, "cpu", name, start, end);
        if let (Some(e), Some(cpu)) = (self.events.get_mut(n), cpu) {
            e.args = Some(serde_json::json!({ "cpu": cpu.0 }));
        }
    }

    /// An arrow from `from`'s track to `to`'s at `at`: `from` woke `to`.
    pub fn flow(&mut self, from: TaskId, to: TaskId, at: SimTime, lock: &str) {
        if !self.tracks(from) || !self.tracks(to) || !self.keep_n(at, 2) {
            return;
        }
        self.next_flow += 1;
        for (ph, tid, bp) in [("s", from, None), ("f", to, Some("e"))] {
            self.events.push(Event {
                name: format!("wake ({lock})"),
                cat: "wake",
                ph,
                ts: us(at),
                dur: None,
                pid: 1,
                tid: tid.0,
                id: Some(self.next_flow),
                bp,
                args: None,
            });
        }
    }

    /// One more (`+1`) or one fewer (`-1`) task asleep in `lock`'s queue.
    pub fn queue(&mut self, lock: LockId, name: &str, delta: i32, at: SimTime) {
        let q = &mut self.queued[lock];
        *q = q.saturating_add_signed(delta);
        let n = *q;
        if !self.keep(at) {
            return;
        }
        self.events.push(Event {
            name: format!("queue {name}"),
            cat: "lock",
            ph: "C",
            ts: us(at),
            dur: None,
            pid: 1,
            tid: 0,
            id: None,
            bp: None,
            args: Some(serde_json::json!({ "waiters": n })),
        });
    }

    /// The JSON document: events in time order (metadata first), stable
    /// for equal times, so the same run gives the same bytes.
    pub fn into_json(mut self, title: &str) -> Vec<u8> {
        self.events.sort_by(|a, b| {
            (a.ph != "M")
                .cmp(&(b.ph != "M"))
                .then(a.ts.total_cmp(&b.ts))
        });
        // Serialized straight from the events (a `serde_json::Value` of two
        // million events would take gigabytes).
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Doc<'a> {
            display_time_unit: &'static str,
            other_data: Other<'a>,
            trace_events: &'a [Event],
        }
        #[derive(Serialize)]
        struct Other<'a> {
            title: &'a str,
            window_us: [f64; 2],
            truncated: bool,
        }
        let doc = Doc {
            display_time_unit: "ns",
            other_data: Other {
                title,
                window_us: [us(self.from), us(self.to)],
                truncated: self.truncated_at.is_some(),
            },
            trace_events: &self.events,
        };
        serde_json::to_vec(&doc).expect("trace events serialize")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu(t: &mut Trace, end_ns: u64) {
        let t0 = TaskId(0);
        t.slice(
            t0,
            "cpu",
            "cpu".into(),
            SimTime(end_ns - 5),
            SimTime(end_ns),
        );
    }

    #[test]
    fn a_full_trace_says_where_it_stops() {
        let mut t = Trace::new(SimTime(100), SimTime(1000), 1);
        t.limit_events(3);
        // Outside the window: neither kept nor a reason to stop.
        cpu(&mut t, 2000);
        for end in [110, 120, 130] {
            cpu(&mut t, end);
        }
        assert_eq!((t.len(), t.truncated_at()), (3, None));
        // The fourth has no room: the trace stops at 140 ns, and later
        // events (a flow needs two) do not move that.
        cpu(&mut t, 140);
        cpu(&mut t, 150);
        t.flow(TaskId(0), TaskId(1), SimTime(160), "m");
        assert_eq!((t.len(), t.truncated_at()), (3, Some(SimTime(140))));
        // What the window held: the 3 kept, 2 slices and a flow's 2 left out.
        assert_eq!(t.window_events(), 7);
        let v: serde_json::Value = serde_json::from_slice(&t.into_json("x")).unwrap();
        assert_eq!(v["otherData"]["truncated"], true);
    }

    #[test]
    fn a_flow_that_does_not_fit_whole_stops_the_trace() {
        let mut t = Trace::new(SimTime(0), SimTime(1000), 1);
        t.limit_events(3);
        cpu(&mut t, 10);
        cpu(&mut t, 20);
        t.flow(TaskId(0), TaskId(1), SimTime(30), "m");
        assert_eq!((t.len(), t.truncated_at()), (2, Some(SimTime(30))));
    }
}
