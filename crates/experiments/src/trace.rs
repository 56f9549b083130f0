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

use serde::Serialize;
use sim::SimTime;

/// Most events one trace keeps.
pub const MAX_EVENTS: usize = 2_000_000;

#[derive(Serialize)]
struct Event {
    name: String,
    cat: &'static str,
    ph: &'static str,
    ts: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    dur: Option<f64>,
    pid: u32,
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
pub struct Trace {
    from: SimTime,
    to: SimTime,
    events: Vec<Event>,
    truncated: bool,
    /// Most events kept ([`MAX_EVENTS`] unless set lower).
    max_events: usize,
    next_flow: u64,
    /// Sleeping waiters per lock (the queue-length counter).
    queued: Vec<u32>,
}

impl Trace {
    /// A trace of `[from, to)` of a run with `locks` locks.
    pub fn new(from: SimTime, to: SimTime, locks: usize) -> Trace {
        Trace {
            from,
            to,
            events: Vec::new(),
            truncated: false,
            max_events: MAX_EVENTS,
            next_flow: 0,
            queued: vec![0; locks],
        }
    }

    /// Keeps at most `n` events (fewer than [`MAX_EVENTS`]).
    pub fn limit_events(&mut self, n: usize) {
        self.max_events = n.min(MAX_EVENTS);
    }

    fn keep(&mut self, at: SimTime) -> bool {
        if at < self.from || at >= self.to {
            return false;
        }
        if self.events.len() >= self.max_events {
            self.truncated = true;
            return false;
        }
        true
    }

    /// Names a task's track.
    pub fn thread(&mut self, tid: u32, name: &str) {
        self.events.push(Event {
            name: "thread_name".into(),
            cat: "__metadata",
            ph: "M",
            ts: 0.0,
            dur: None,
            pid: 1,
            tid,
            id: None,
            bp: None,
            args: Some(serde_json::json!({ "name": name })),
        });
    }

    /// A slice `[start, end)` on task `tid`'s track.
    pub fn slice(
        &mut self,
        tid: u32,
        cat: &'static str,
        name: String,
        start: SimTime,
        end: SimTime,
    ) {
        if !self.keep(end) {
            return;
        }
        self.events.push(Event {
            name,
            cat,
            ph: "X",
            ts: us(start),
            dur: Some((end.0 - start.0) as f64 / 1e3),
            pid: 1,
            tid,
            id: None,
            bp: None,
            args: None,
        });
    }

    /// An arrow from `from`'s track to `to`'s at `at`: `from` woke `to`.
    pub fn flow(&mut self, from: u32, to: u32, at: SimTime, lock: &str) {
        if !self.keep(at) || self.events.len() + 2 > self.max_events {
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
                tid,
                id: Some(self.next_flow),
                bp,
                args: None,
            });
        }
    }

    /// One more (`+1`) or one fewer (`-1`) task asleep in `lock`'s queue.
    pub fn queue(&mut self, lock: usize, name: &str, delta: i32, at: SimTime) {
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
                truncated: self.truncated,
            },
            trace_events: &self.events,
        };
        serde_json::to_vec(&doc).expect("trace events serialize")
    }
}
