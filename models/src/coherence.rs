//! A cache line as the machine serves it: who has it, who has copies, and
//! until when it is busy (docs/kernel-rules.md, "H. The machine",
//! R70-R74).
//!
//! A [`Line`] has an owner, the CPU that wrote it last (it keeps the line
//! Modified, or a copy once others read it), and a set of sharers, CPUs
//! holding a Shared copy from a read. Operations take effect in the order
//! they are asked for, each reserving the line for its time:
//! - a read-modify-write ([`Line::rmw`]: an atomic, a cmpxchg on a lock
//!   word) waits until every operation asked for before it is done (R70),
//!   then costs the transfer from the farthest CPU holding a copy, the
//!   owner or a sharer, as one broadcast (R72), or the local cost when no
//!   other CPU has a copy; its CPU becomes the owner and the sharers'
//!   copies are gone;
//! - a read ([`Line::read`]) of a line its CPU holds costs the local cost
//!   and waits for nothing; otherwise it waits for the read-modify-writes
//!   asked for before it, not for other reads, and costs a transfer from
//!   the owner; its CPU joins the sharers (R71).
//!
//! So many CPUs that want the line at once queue for it, each behind the
//! ones before it, and one operation's wait grows with the contenders.
//! Re-reads ([`Line::reread`]) by the CPUs that poll a word every write
//! invalidates (a ticket lock's waiters) queue as writes do, one after
//! another (R80).
//!
//! Costs come from a [`Fabric`]: a topology and the machine's
//! [`LineCosts`] by [`Distance`], or flat costs (a lock's own
//! `line_transfer`). Every operation is O(1) in the number of CPUs except
//! the invalidation of sharers by a read-modify-write, which clears the
//! sharer bitset: O(CPUs / 64) words.
//!
//! Not modelled: prefetch, false sharing (a line is one variable), the
//! directory or snoop filter and the home agent, memory latency (a line no
//! CPU holds comes at the `socket` cost), and store buffers (a write is
//! an atomic or nothing).

use crate::machine::{Distance, LineCosts, Topology};
use crate::CpuId;
use sim::{Dur, SimTime};

/// Where CPUs are and what moving a line between two of them costs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fabric {
    /// `None`: no topology; every other CPU is at [`Distance::Socket`]
    /// (flat costs, or unlimited CPUs where each task is a CPU of its own).
    pub topology: Option<Topology>,
    pub costs: LineCosts<Dur>,
}

impl Fabric {
    /// The machine's costs by distance over `topology`.
    pub fn new(topology: Option<Topology>, costs: LineCosts<Dur>) -> Fabric {
        Fabric { topology, costs }
    }

    /// Flat costs: `transfer` from any other CPU, `local` on the CPU that
    /// has the line.
    pub fn flat(transfer: Dur, local: Dur) -> Fabric {
        Fabric {
            topology: None,
            costs: LineCosts {
                local,
                smt: transfer,
                socket: transfer,
                remote: transfer,
            },
        }
    }

    /// How far apart `a` and `b` are.
    #[inline]
    pub fn distance(&self, a: CpuId, b: CpuId) -> Distance {
        match self.topology {
            _ if a == b => Distance::Same,
            Some(t) => t.distance(a, b),
            None => Distance::Socket,
        }
    }

    /// The socket of `c`, if there is a topology.
    #[inline]
    fn socket(&self, c: CpuId) -> Option<usize> {
        self.topology.map(|t| t.place(c).0 as usize)
    }
}

/// What a line's operations added up to over a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LineStats {
    /// Operations that took the line, or its ownership, from another CPU
    /// (or from memory): read-modify-writes by a CPU that was not the
    /// owner, reads by a CPU that held no copy.
    pub transfers: u64,
    /// Time operations waited for the line to be free before they began.
    pub wait: Dur,
    /// Shared copies (made by reads) that read-modify-writes invalidated.
    pub invalidations: u64,
}

/// One operation's time on the line: it began at `start` (after its wait)
/// and is done at `done`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    pub start: SimTime,
    pub done: SimTime,
}

/// The CPUs holding a Shared copy: a bitset of u64 words, grown to the
/// largest CPU seen, with their count in all and per socket.
#[derive(Clone, Debug, Default)]
struct Sharers {
    words: Vec<u64>,
    count: u32,
    per_socket: Vec<u32>,
}

impl Sharers {
    #[inline]
    fn contains(&self, c: CpuId) -> bool {
        let (w, bit) = (c.index() / 64, 1u64 << (c.index() % 64));
        self.words.get(w).is_some_and(|x| x & bit != 0)
    }

    fn insert(&mut self, c: CpuId, socket: Option<usize>) {
        let (w, bit) = (c.index() / 64, 1u64 << (c.index() % 64));
        if self.words.len() <= w {
            self.words.resize(w + 1, 0);
        }
        if self.words[w] & bit != 0 {
            return;
        }
        self.words[w] |= bit;
        self.count += 1;
        if let Some(s) = socket {
            if self.per_socket.len() <= s {
                self.per_socket.resize(s + 1, 0);
            }
            self.per_socket[s] += 1;
        }
    }

    /// Drops every copy: O(words).
    fn clear(&mut self) {
        if self.count > 0 {
            self.words.iter_mut().for_each(|w| *w = 0);
            self.per_socket.iter_mut().for_each(|n| *n = 0);
            self.count = 0;
        }
    }

    /// The distance from `c` to the farthest sharer other than `c`, if
    /// any: from the counts per socket and `c`'s SMT siblings, without a
    /// walk over the set.
    fn farthest(&self, f: &Fabric, c: CpuId) -> Option<Distance> {
        let own = u32::from(self.contains(c));
        if self.count == own {
            return None;
        }
        let Some(t) = f.topology else {
            return Some(Distance::Socket);
        };
        let (socket, core) = t.place(c);
        let on_socket = self.per_socket.get(socket as usize).copied().unwrap_or(0);
        if self.count > on_socket {
            return Some(Distance::Remote);
        }
        let cores = t.sockets * t.cores_per_socket;
        let siblings = (0..t.threads_per_core)
            .map(|k| CpuId(core + k * cores))
            .filter(|&s| s != c && self.contains(s))
            .count() as u32;
        if on_socket > own + siblings {
            Some(Distance::Socket)
        } else {
            Some(Distance::Smt)
        }
    }
}

/// One cache line (R70-R72).
#[derive(Clone, Debug, Default)]
pub struct Line {
    /// The CPU that wrote the line last; `None` before any write.
    owner: Option<CpuId>,
    /// CPUs other than the owner with a Shared copy.
    sharers: Sharers,
    /// When the last read-modify-write asked for is done: reads wait for
    /// it.
    rmw_until: SimTime,
    /// When every operation asked for so far is done: read-modify-writes
    /// wait for it.
    busy_until: SimTime,
    pub stats: LineStats,
}

impl Line {
    /// The CPU that wrote the line last.
    pub fn owner(&self) -> Option<CpuId> {
        self.owner
    }

    /// `c` holds the line or a copy of it: a read by `c` hits.
    #[inline]
    pub fn holds(&self, c: CpuId) -> bool {
        self.owner == Some(c) || self.sharers.contains(c)
    }

    /// When the last read-modify-write asked for is done.
    pub fn rmw_until(&self) -> SimTime {
        self.rmw_until
    }

    /// When every operation asked for so far is done.
    pub fn busy_until(&self) -> SimTime {
        self.busy_until
    }

    /// A read-modify-write by `c` asked for at `now` (R70, R72): it waits
    /// for every operation before it, then takes the line from the
    /// farthest CPU that has a copy, invalidating every other copy in the
    /// same broadcast.
    pub fn rmw(&mut self, f: &Fabric, c: CpuId, now: SimTime) -> Access {
        let start = now.max(self.busy_until);
        let from_owner = match self.owner {
            Some(o) if o == c => None,
            Some(o) => Some(f.distance(o, c)),
            // Never written: memory has it, unless `c` read it already.
            None if self.sharers.contains(c) => None,
            None => Some(Distance::Socket),
        };
        let cost = match from_owner.max(self.sharers.farthest(f, c)) {
            None => f.costs.local,
            Some(d) => f.costs.at(d),
        };
        if self.owner != Some(c) {
            self.stats.transfers += 1;
        }
        let own = u32::from(self.sharers.contains(c));
        self.stats.invalidations += u64::from(self.sharers.count - own);
        self.sharers.clear();
        self.owner = Some(c);
        let done = start + cost;
        self.rmw_until = done;
        self.busy_until = done;
        self.stats.wait += start.since(now);
        Access { start, done }
    }

    /// A read by `c` asked for at `now` (R71): a hit costs the local cost
    /// and changes nothing; a miss waits for the read-modify-writes asked
    /// for before it (not for other reads), takes a copy from the owner
    /// (which keeps its own) and makes the line busy for the
    /// read-modify-writes after it until the copy has arrived.
    pub fn read(&mut self, f: &Fabric, c: CpuId, now: SimTime) -> Access {
        if self.holds(c) {
            return Access {
                start: now,
                done: now + f.costs.local,
            };
        }
        let start = now.max(self.rmw_until);
        let d = match self.owner {
            Some(o) => f.distance(o, c),
            None => Distance::Socket,
        };
        let done = start + f.costs.at(d);
        self.busy_until = self.busy_until.max(done);
        self.sharers.insert(c, f.socket(c));
        self.stats.transfers += 1;
        self.stats.wait += start.since(now);
        Access { start, done }
    }

    /// A re-read by `c`, asked at `now`, of a line that many CPUs poll and
    /// every write invalidates (R80: a ticket lock's word): it waits for
    /// every operation asked before it, reads included, so the re-reads
    /// after a write are served one after another. A hit costs the local
    /// cost and waits for nothing, as in [`Line::read`].
    pub fn reread(&mut self, f: &Fabric, c: CpuId, now: SimTime) -> Access {
        if self.holds(c) {
            return Access {
                start: now,
                done: now + f.costs.local,
            };
        }
        let start = now.max(self.busy_until);
        let d = match self.owner {
            Some(o) => f.distance(o, c),
            None => Distance::Socket,
        };
        let done = start + f.costs.at(d);
        self.busy_until = done;
        self.sharers.insert(c, f.socket(c));
        self.stats.transfers += 1;
        self.stats.wait += start.since(now);
        Access { start, done }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NS: fn(u64) -> SimTime = SimTime;

    /// Costs far apart so that a sum shows which distance was paid.
    fn costs() -> LineCosts<Dur> {
        LineCosts {
            local: Dur(1),
            smt: Dur(10),
            socket: Dur(100),
            remote: Dur(1000),
        }
    }

    /// 2 sockets x 2 cores x 2 threads: CPUs 0, 1 socket 0; 2, 3 socket
    /// 1; 4-7 their SMT siblings (4 is 0's).
    fn fabric() -> Fabric {
        Fabric::new(Some(Topology::new(2, 2, 2)), costs())
    }

    fn acc(start: u64, done: u64) -> Access {
        Access {
            start: NS(start),
            done: NS(done),
        }
    }

    #[test]
    fn r70_two_cpus_alternating_rmws_each_pay_a_transfer() {
        let f = fabric();
        let mut l = Line::default();
        // The first write fetches the line (from memory, at socket cost).
        assert_eq!(l.rmw(&f, CpuId(0), NS(0)), acc(0, 100));
        // Again on CPU 0: local.
        assert_eq!(l.rmw(&f, CpuId(0), NS(200)), acc(200, 201));
        // CPU 1 (same socket) and back: a transfer each way.
        assert_eq!(l.rmw(&f, CpuId(1), NS(300)), acc(300, 400));
        assert_eq!(l.rmw(&f, CpuId(0), NS(400)), acc(400, 500));
        assert_eq!(l.rmw(&f, CpuId(1), NS(500)), acc(500, 600));
        assert_eq!(l.stats.transfers, 4);
        assert_eq!(l.stats.wait, Dur::ZERO);
        assert_eq!(l.owner(), Some(CpuId(1)));
    }

    #[test]
    fn r70_four_cpus_at_one_instant_queue_each_behind_the_one_before() {
        let f = fabric();
        let mut l = Line::default();
        l.rmw(&f, CpuId(0), NS(0));
        // CPUs 1, 5, 2, 0 ask at 1000: served in that order, each paying
        // the transfer from the one before: 1 from 0 (same socket), 5 from
        // 1 (its SMT sibling), 2 from 5 and 0 from 2 (other socket).
        let t = NS(1000);
        assert_eq!(l.rmw(&f, CpuId(1), t), acc(1000, 1100));
        assert_eq!(l.rmw(&f, CpuId(5), t), acc(1100, 1110));
        assert_eq!(l.rmw(&f, CpuId(2), t), acc(1110, 2110));
        assert_eq!(l.rmw(&f, CpuId(0), t), acc(2110, 3110));
        // Waits: 0 + 100 + 110 + 1110.
        assert_eq!(l.stats.wait, Dur(1320));
    }

    #[test]
    fn r71_r72_reads_share_the_line_and_a_write_invalidates_them() {
        let f = fabric();
        let mut l = Line::default();
        // CPU 0 owns the line from 100; two reads at 200 run side by side,
        // each a transfer from 0.
        l.rmw(&f, CpuId(0), NS(0));
        assert_eq!(l.read(&f, CpuId(1), NS(200)), acc(200, 300));
        assert_eq!(l.read(&f, CpuId(2), NS(200)), acc(200, 1200));
        // A read hit costs the local cost and waits for nothing.
        assert_eq!(l.read(&f, CpuId(1), NS(250)), acc(250, 251));
        assert_eq!(l.read(&f, CpuId(0), NS(250)), acc(250, 251));
        assert!(l.holds(CpuId(0)) && l.holds(CpuId(1)) && l.holds(CpuId(2)));
        // CPU 0 writes at 300: it waits for the reads in flight (until
        // 1200), then invalidates 1 and 2 in one broadcast, costing the
        // farthest (2, on the other socket).
        assert_eq!(l.rmw(&f, CpuId(0), NS(300)), acc(1200, 2200));
        assert_eq!(l.stats.invalidations, 2);
        assert!(!l.holds(CpuId(1)) && !l.holds(CpuId(2)));
        // A read after the write waits for it and pays the transfer again.
        assert_eq!(l.read(&f, CpuId(1), NS(1500)), acc(2200, 2300));
        // A sharer that writes pays the invalidation of the owner's copy.
        assert_eq!(l.rmw(&f, CpuId(1), NS(2300)), acc(2300, 2400));
        assert_eq!(l.stats.invalidations, 2, "1's own copy is not counted");
        assert_eq!(
            l.stats.transfers, 5,
            "0's first write, 3 read misses, 1's write"
        );
    }

    #[test]
    fn r80_rereads_after_a_write_are_served_one_after_another() {
        let f = fabric();
        let mut l = Line::default();
        // CPU 0 writes at 0 (from memory: socket cost, done at 100).
        assert_eq!(l.rmw(&f, CpuId(0), NS(0)), acc(0, 100));
        // CPUs 1 (same socket), 2 (other socket) and 4 (0's sibling)
        // re-read, all asked at 100: each waits for the one before.
        assert_eq!(l.reread(&f, CpuId(1), NS(100)), acc(100, 200));
        assert_eq!(l.reread(&f, CpuId(2), NS(100)), acc(200, 1200));
        assert_eq!(l.reread(&f, CpuId(4), NS(100)), acc(1200, 1210));
        // A hit waits for nothing.
        assert_eq!(l.reread(&f, CpuId(1), NS(300)), acc(300, 301));
        // A plain read (R71) would have waited for the write only.
        let mut m = Line::default();
        m.rmw(&f, CpuId(0), NS(0));
        assert_eq!(m.read(&f, CpuId(1), NS(100)), acc(100, 200));
        assert_eq!(m.read(&f, CpuId(2), NS(100)), acc(100, 1100));
        // The next write waits for every re-read, and invalidates them.
        assert_eq!(l.rmw(&f, CpuId(0), NS(500)), acc(1210, 2210));
        assert_eq!(l.stats.invalidations, 3);
    }

    #[test]
    fn r72_a_write_costs_the_farthest_copy_only() {
        let f = fabric();
        let mut l = Line::default();
        l.rmw(&f, CpuId(0), NS(0));
        l.read(&f, CpuId(4), NS(100)); // 0's sibling
        assert_eq!(l.rmw(&f, CpuId(0), NS(1000)), acc(1000, 1010));
        l.read(&f, CpuId(4), NS(2000));
        l.read(&f, CpuId(1), NS(2000));
        assert_eq!(l.rmw(&f, CpuId(0), NS(3000)), acc(3000, 3100));
    }

    #[test]
    fn r70_cost_by_distance_on_server_2s() {
        let m = crate::machine::Machine::from_profile(
            crate::machine::profiles::by_name("server-2s").unwrap(),
            None,
        );
        let f = Fabric::new(Some(m.topology), m.lines);
        let cost = |from: u32, to: u32| {
            let mut l = Line::default();
            l.rmw(&f, CpuId(from), NS(0));
            let a = l.rmw(&f, CpuId(to), NS(1000));
            a.done.since(a.start)
        };
        assert_eq!(cost(0, 0), Dur(1), "local: L1");
        assert_eq!(cost(0, 64), Dur(8), "SMT sibling");
        assert_eq!(cost(0, 31), Dur(51), "same socket");
        assert_eq!(cost(0, 32), Dur(108), "other socket");
        assert_eq!(cost(96, 32), Dur(8), "siblings on socket 1");
    }

    #[test]
    fn flat_costs_are_the_same_from_every_other_cpu() {
        let f = Fabric::flat(Dur(100), Dur(5));
        let mut l = Line::default();
        assert_eq!(l.rmw(&f, CpuId(7), NS(0)), acc(0, 100));
        assert_eq!(l.rmw(&f, CpuId(7), NS(100)), acc(100, 105));
        assert_eq!(l.rmw(&f, CpuId(900), NS(100)), acc(105, 205));
        assert_eq!(l.stats.transfers, 2);
    }

    #[test]
    fn the_farthest_sharer_comes_from_counts_not_a_walk() {
        let f = fabric();
        let mut s = Sharers::default();
        assert_eq!(s.farthest(&f, CpuId(0)), None);
        s.insert(CpuId(0), f.socket(CpuId(0)));
        assert_eq!(s.farthest(&f, CpuId(0)), None, "only itself");
        s.insert(CpuId(4), f.socket(CpuId(4)));
        assert_eq!(s.farthest(&f, CpuId(0)), Some(Distance::Smt));
        s.insert(CpuId(1), f.socket(CpuId(1)));
        assert_eq!(s.farthest(&f, CpuId(0)), Some(Distance::Socket));
        assert_eq!(s.farthest(&f, CpuId(5)), Some(Distance::Socket));
        s.insert(CpuId(7), f.socket(CpuId(7)));
        assert_eq!(s.farthest(&f, CpuId(0)), Some(Distance::Remote));
        assert_eq!(s.farthest(&f, CpuId(3)), Some(Distance::Remote));
        s.clear();
        assert_eq!((s.count, s.farthest(&f, CpuId(1))), (0, None));
    }
}
