//! What a `flush_workqueue` costs its caller on the CPU (R118).
//!
//! `__flush_workqueue` (kernel/workqueue.c) prepares every pwq of the
//! workqueue under `wq->mutex` in `flush_workqueue_prep_pwqs`: for each
//! pwq it takes and drops the pool's `raw_spinlock` and reads or writes
//! the pwq's colour counts (`nr_in_flight[]`, `flush_color`,
//! `work_color`). Every flusher that gets a colour makes one such pass
//! before it waits (or finds nothing in flight and returns), and the
//! first flusher makes one more for each step of its cascade (R110,
//! R111). On a per-CPU workqueue a pass touches one pool and one pwq per
//! CPU, so the flush's own cost grows with the machine: a flush that
//! waits for nothing costs a few hundred nanoseconds on 8 CPUs and
//! several microseconds on 64.
//!
//! A pass is charged two cache-line transfers per pwq: the pool's first
//! line (its lock, flags and worklist, written by the pool's CPU at every
//! queue and every item it runs) and the pwq's colour line, each from
//! the pool's CPU at the machine's cost for the distance
//! ([`LineCosts::at`]); the flusher's own CPU's pair is local. Not
//! modelled: that the colour line may instead sit with the previous
//! flusher (on a one-socket machine every distance but the CPU's own is
//! the same), the lock's own atomic once the line is here, and
//! `wq->mutex`, which serialises flushers' passes (busy about 3% of the
//! time at 4,000 flushes a second of 7 us passes).

use crate::machine::{LineCosts, Topology};
use crate::workqueue::WqKind;
use crate::CpuId;
use sim::Dur;

/// Cache lines a pass transfers per pwq: the pool's lock line and the
/// pwq's colour line.
pub const LINES_PER_PWQ: u64 = 2;

/// The cost of one `flush_workqueue_prep_pwqs` pass over a workqueue of
/// `kind`, made on CPU `me` of a machine of `topology` (`None`: unlimited
/// CPUs, where every other CPU is a socket away) with line costs `lines`.
///
/// A per-CPU workqueue has a pwq on each of its CPUs; an unbound or
/// ordered one has one pwq, whose pool's workers run anywhere: its lines
/// come from another core of the socket.
pub fn prep_pass_cost(
    kind: WqKind,
    topology: Option<Topology>,
    lines: &LineCosts<Dur>,
    me: CpuId,
) -> Dur {
    let per_line = match kind {
        WqKind::PerCpu { cpus } => pwq_distances(cpus, topology, me).cost(lines),
        WqKind::Unbound | WqKind::Ordered => lines.socket.ns(),
    };
    Dur(per_line * LINES_PER_PWQ)
}

/// How many of CPUs `0..n` are at each distance from `me`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Counts {
    same: u64,
    smt: u64,
    socket: u64,
    remote: u64,
}

impl Counts {
    /// One line from each CPU counted, in ns.
    fn cost(&self, l: &LineCosts<Dur>) -> u64 {
        self.same * l.local.ns()
            + self.smt * l.smt.ns()
            + self.socket * l.socket.ns()
            + self.remote * l.remote.ns()
    }
}

/// CPUs `0..n` by their distance from `me`, in closed form over the
/// topology's numbering ([`Topology::place`]: core `c mod cores`, socket
/// `core / cores_per_socket`), so that a pass on 4096 CPUs costs no loop.
fn pwq_distances(n: u32, topology: Option<Topology>, me: CpuId) -> Counts {
    let n = u64::from(n);
    let me_in = u64::from(me != CpuId::ANY && u64::from(me.0) < n);
    let Some(t) = topology else {
        return Counts {
            same: me_in,
            socket: n - me_in,
            ..Counts::default()
        };
    };
    let cores = u64::from(t.sockets * t.cores_per_socket).max(1);
    let per_socket = u64::from(t.cores_per_socket).max(1);
    if me == CpuId::ANY {
        return Counts {
            socket: n,
            ..Counts::default()
        };
    }
    let core = u64::from(me.0) % cores;
    let socket = core / per_socket;
    let same_core = count_mod_in(n, cores, core, core + 1);
    let same_socket = count_mod_in(n, cores, socket * per_socket, (socket + 1) * per_socket);
    Counts {
        same: me_in,
        smt: same_core - me_in,
        socket: same_socket - same_core,
        remote: n - same_socket,
    }
}

/// How many `c` in `0..n` have `c mod m` in `lo..hi` (with `hi <= m`).
fn count_mod_in(n: u64, m: u64, lo: u64, hi: u64) -> u64 {
    let (full, rest) = (n / m, n % m);
    full * (hi - lo) + rest.clamp(lo, hi) - lo
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::Distance;

    fn costs() -> LineCosts<Dur> {
        LineCosts {
            local: Dur(1),
            smt: Dur(8),
            socket: Dur(51),
            remote: Dur(108),
        }
    }

    /// The closed form counts what a loop over the CPUs with
    /// `Topology::distance` counts, on shapes cut to sizes that do and do
    /// not fill them, from every CPU and from one outside the pools.
    #[test]
    fn r118_distance_counts_match_a_loop_over_the_cpus() {
        for t in [
            Topology::new(2, 32, 2),
            Topology::new(2, 4, 2),
            Topology::new(1, 64, 1),
            Topology::new(4, 3, 1),
        ] {
            for n in [1, 3, 8, 13, 64, 128, 200] {
                for me in (0..n + 2).map(CpuId) {
                    let mut want = Counts::default();
                    for c in (0..n).map(CpuId) {
                        match t.distance(me, c) {
                            Distance::Same => want.same += 1,
                            Distance::Smt => want.smt += 1,
                            Distance::Socket => want.socket += 1,
                            Distance::Remote => want.remote += 1,
                        }
                    }
                    assert_eq!(pwq_distances(n, Some(t), me), want, "{t:?} n={n} me={me:?}");
                }
            }
        }
    }

    /// R118: a pass on a 64-CPU one-socket guest transfers two lines from
    /// each of 63 other CPUs at the same-socket cost, and its own two at
    /// the local cost; on two sockets of 32 cores x 2, CPU 0 has one SMT
    /// sibling, 62 same-socket CPUs and 64 remote ones.
    #[test]
    fn r118_a_pass_costs_two_lines_from_each_pool_by_distance() {
        let l = costs();
        let guest = Topology::new(1, 64, 1);
        let cost = prep_pass_cost(WqKind::PerCpu { cpus: 64 }, Some(guest), &l, CpuId(5));
        assert_eq!(cost, Dur(2 * (63 * 51 + 1)));
        let server = Topology::new(2, 32, 2);
        let cost = prep_pass_cost(WqKind::PerCpu { cpus: 128 }, Some(server), &l, CpuId(0));
        assert_eq!(cost, Dur(2 * (1 + 8 + 62 * 51 + 64 * 108)));
        // Eight CPUs of the guest: a tenth of the cost.
        let small = prep_pass_cost(WqKind::PerCpu { cpus: 8 }, Some(guest), &l, CpuId(0));
        assert_eq!(small, Dur(2 * (7 * 51 + 1)));
        // Unbound: one pwq, from another core.
        assert_eq!(
            prep_pass_cost(WqKind::Unbound, Some(server), &l, CpuId(0)),
            Dur(102)
        );
        // Unlimited CPUs: every other CPU a socket away.
        let unlimited = prep_pass_cost(WqKind::PerCpu { cpus: 4 }, None, &l, CpuId(1));
        assert_eq!(unlimited, Dur(2 * (3 * 51 + 1)));
        // A machine whose lines cost nothing (the ideal one): no cost.
        let free = LineCosts {
            local: Dur::ZERO,
            smt: Dur::ZERO,
            socket: Dur::ZERO,
            remote: Dur::ZERO,
        };
        assert_eq!(
            prep_pass_cost(WqKind::PerCpu { cpus: 64 }, Some(guest), &free, CpuId(0)),
            Dur::ZERO
        );
    }
}
