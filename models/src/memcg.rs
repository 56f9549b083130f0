//! A memory cgroup's charge path (docs/kernel-rules.md R45-R48,
//! mm/memcontrol.c), as a state machine the world drives.
//!
//! A charge of `nr_pages` walks `try_charge_memcg` (R45): the per-CPU stock,
//! then the batch, then the exact amount; over `memory.max` the caller must
//! do one direct-reclaim attempt (the world spends its time and reports how
//! many pages it freed), after which the loop retries. Reclaim that makes
//! progress retries a small charge for free (an unbounded loop while any
//! page comes back). The first failure drains the stocks and reclaims
//! again; after that each failure spends one of 16 retries, so a charge
//! that frees nothing reclaims 18 times. When retries run out the caller takes the
//! global `oom_lock` and asks [`Memcg::mem_cgroup_oom`] (R46): no new kill
//! while a victim is pending, so chargers loop until the victim exits or is
//! reaped (R47). memory.high (R48) turns into a throttle penalty computed
//! with the kernel's formula.
//!
//! Time, CPUs, tasks and the OOM victim's exit belong to the world: this
//! module decides only what the kernel decides at each step.

use crate::ids::{CpuId, TaskId};

/// `MEMCG_CHARGE_BATCH` (R45; 32 before ~6.0).
pub const MEMCG_CHARGE_BATCH: u64 = 64;
/// `MAX_RECLAIM_RETRIES` (R45).
pub const MAX_RECLAIM_RETRIES: u32 = 16;
/// `PAGE_ALLOC_COSTLY_ORDER` (R46): larger orders never OOM-kill.
pub const PAGE_ALLOC_COSTLY_ORDER: u32 = 3;
/// `MEMCG_DELAY_PRECISION_SHIFT` and `MEMCG_DELAY_SCALING_SHIFT` (R48).
const DELAY_PRECISION_SHIFT: u32 = 20;
const DELAY_SCALING_SHIFT: u32 = 14;

/// GFP flags that change the charge loop (R45, R47).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Gfp {
    /// Cannot block (GFP_NOWAIT, GFP_ATOMIC): no direct reclaim; with no
    /// margin the charge fails at once (R45 step 3).
    pub nowait: bool,
    /// `__GFP_HIGH` (GFP_ATOMIC): a charge that fails is forced above the
    /// limit instead of -ENOMEM (R47).
    pub high: bool,
    /// `__GFP_NOFAIL`: force the charge above the limit instead of -ENOMEM.
    pub nofail: bool,
    /// `__GFP_NORETRY`: give up after the first reclaim.
    pub noretry: bool,
    /// `__GFP_RETRY_MAYFAIL`: -ENOMEM instead of OOM when retries run out.
    pub retry_mayfail: bool,
}

/// A memcg's limits.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct MemcgConfig {
    /// memory.max in pages.
    pub max: u64,
    /// memory.high in pages (`None`: max, no throttling).
    pub high: Option<u64>,
    pub cpus: u32,
}

/// What the charging task does next.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ChargeStep {
    /// Charged; if `throttle_jiffies > 0` the task must then sleep that long
    /// (memory.high handled inside the charge, R48).
    Charged { throttle_jiffies: u64 },
    /// One direct-reclaim attempt (`try_to_free_mem_cgroup_pages`): the
    /// caller spends it and calls [`Memcg::after_reclaim`].
    Reclaim,
    /// Retries are exhausted: take `oom_lock`, then call
    /// [`Memcg::mem_cgroup_oom`].
    Oom,
    /// -ENOMEM: the allocation fails.
    NoMem,
}

/// The OOM decision (R46).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum OomOutcome {
    /// The margin is fine now, or a victim is still pending: retry the
    /// charge with fresh retries (no new kill).
    Retry,
    /// Kill this task (the world makes it exit, or reaps it), then retry.
    Kill(TaskId),
    /// Nothing killable: -ENOMEM (or a forced charge with NOFAIL).
    NoMem,
}

/// One charge in progress (`try_charge_memcg`'s locals).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Charge {
    pub nr_pages: u64,
    pub cpu: CpuId,
    pub gfp: Gfp,
    retries: u32,
    drained: bool,
}

impl Charge {
    pub fn new(nr_pages: u64, cpu: CpuId, gfp: Gfp) -> Self {
        Charge {
            nr_pages,
            cpu,
            gfp,
            retries: MAX_RECLAIM_RETRIES,
            drained: false,
        }
    }
    pub fn retries_left(&self) -> u32 {
        self.retries
    }
}

#[derive(Debug, Default, Clone, Copy)]
struct Counters {
    charges: u64,
    max_events: u64,
    reclaims: u64,
    free_retries: u64,
    drains: u64,
    oom_calls: u64,
    oom_kills: u64,
    oom_aborts: u64,
    nomem: u64,
    forced: u64,
    high_throttles: u64,
}

/// One memory cgroup.
#[derive(Debug, Clone)]
pub struct Memcg {
    cfg: MemcgConfig,
    /// Pages charged, per-CPU stocks included.
    usage: u64,
    /// Pre-charged pages cached per CPU (R45 step 1).
    stock: Vec<u64>,
    /// The victim killed by the last OOM that has not exited or been reaped
    /// (`MMF_OOM_SKIP` not yet set, R46).
    pending_victim: Option<TaskId>,
    n: Counters,
}

/// `calculate_overage` (R48): (usage - high) << 20 / high, 0 if not over.
pub fn calculate_overage(usage: u64, high: u64) -> u64 {
    if usage <= high {
        return 0;
    }
    let high = high.max(1);
    ((u128::from(usage - high) << DELAY_PRECISION_SHIFT) / u128::from(high))
        .min(u128::from(u64::MAX)) as u64
}

/// `calculate_high_delay` (R48): overage^2 * HZ >> 34, scaled by the
/// task's own over-high pages against `MEMCG_CHARGE_BATCH`, in jiffies.
pub fn calculate_high_delay(overage: u64, nr_pages: u64, hz: u32) -> u64 {
    if overage == 0 {
        return 0;
    }
    let p = u128::from(overage) * u128::from(overage) * u128::from(hz);
    let p = p >> (DELAY_PRECISION_SHIFT + DELAY_SCALING_SHIFT);
    (p * u128::from(nr_pages) / u128::from(MEMCG_CHARGE_BATCH)).min(u128::from(u64::MAX)) as u64
}

/// The throttle of `mem_cgroup_handle_over_high` (R48): clamped to
/// `MEMCG_MAX_HIGH_DELAY_JIFFIES` = 2 HZ, and 0 when at most HZ/100.
pub fn high_penalty_jiffies(usage: u64, high: u64, nr_over_high: u64, hz: u32) -> u64 {
    let p = calculate_high_delay(calculate_overage(usage, high), nr_over_high, hz)
        .min(2 * u64::from(hz));
    if p <= u64::from(hz / 100) {
        0
    } else {
        p
    }
}

impl Memcg {
    pub fn new(cfg: MemcgConfig) -> Self {
        Memcg {
            stock: vec![0; cfg.cpus.max(1) as usize],
            cfg,
            usage: 0,
            pending_victim: None,
            n: Counters::default(),
        }
    }

    pub fn usage(&self) -> u64 {
        self.usage
    }

    pub fn config(&self) -> &MemcgConfig {
        &self.cfg
    }

    fn margin_ok(&self, nr: u64) -> bool {
        // Saturating: page counts from a scenario may be near u64's top.
        self.usage.saturating_add(nr) <= self.cfg.max
    }

    /// Steps 1-2 of `try_charge_memcg`: the stock, the batch, the exact amount.
    fn try_fast(&mut self, c: &Charge) -> bool {
        let cpu = c.cpu.index() % self.stock.len();
        if self.stock[cpu] >= c.nr_pages {
            self.stock[cpu] -= c.nr_pages;
            return true;
        }
        let batch = c.nr_pages.max(MEMCG_CHARGE_BATCH);
        if self.margin_ok(batch) {
            self.usage = self.usage.saturating_add(batch);
            self.stock[cpu] = self.stock[cpu].saturating_add(batch - c.nr_pages);
            return true;
        }
        if self.margin_ok(c.nr_pages) {
            self.usage = self.usage.saturating_add(c.nr_pages);
            return true;
        }
        false
    }

    /// `try_charge_memcg` (R45), from the top. `over_high` is the charging
    /// task's pages over memory.high so far (`memcg_nr_pages_over_high`);
    /// the world keeps it per task and adds the batch when told to.
    pub fn try_charge_memcg(&mut self, c: &mut Charge) -> ChargeStep {
        self.n.charges += 1;
        if self.try_fast(c) {
            return ChargeStep::Charged {
                throttle_jiffies: 0,
            };
        }
        // Step 3: an allocation that cannot block does not reclaim.
        if c.gfp.nowait {
            return self.nomem(c);
        }
        // Step 4: MEMCG_MAX event, then direct reclaim.
        self.n.max_events += 1;
        self.n.reclaims += 1;
        ChargeStep::Reclaim
    }

    /// After one reclaim attempt that freed `freed` pages from this memcg
    /// (the caller decides how many; they leave `usage`). R45 step 5.
    /// `taken` of them were charged again by other tasks of the memcg
    /// (a workload on other CPUs, outside the scenario) before this charge
    /// retried: reclaim made progress, but the margin is gone, so a small
    /// charge loops for free.
    pub fn after_reclaim(&mut self, c: &mut Charge, freed: u64, taken: u64) -> ChargeStep {
        self.usage = self.usage.saturating_sub(freed) + taken.min(freed);
        self.retry_after_reclaim(c, freed)
    }

    /// R45 step 5 after an attempt whose `freed` pages already left
    /// `usage` while it ran (the world uncharged them, and the memcg's
    /// other tasks may have charged them since): retry the charge, with
    /// `freed > 0` as the attempt's progress.
    pub fn retry_after_reclaim(&mut self, c: &mut Charge, freed: u64) -> ChargeStep {
        if self.margin_ok(c.nr_pages) && self.try_fast(c) {
            return ChargeStep::Charged {
                throttle_jiffies: 0,
            };
        }
        // Once: drain_all_stock returns every CPU's cached pages.
        if !c.drained {
            c.drained = true;
            self.n.drains += 1;
            let cached: u64 = self.stock.iter().sum();
            self.stock.iter_mut().for_each(|s| *s = 0);
            self.usage = self.usage.saturating_sub(cached);
            if self.try_fast(c) {
                return ChargeStep::Charged {
                    throttle_jiffies: 0,
                };
            }
            // `goto retry`: the charge fails again and reclaims again,
            // before any retry is spent or NORETRY gives up.
            self.n.reclaims += 1;
            return ChargeStep::Reclaim;
        }
        if c.gfp.noretry {
            return self.nomem(c);
        }
        // Progress on a small charge: retry free of charge (unbounded).
        if freed > 0 && c.nr_pages <= 8 {
            self.n.free_retries += 1;
            self.n.reclaims += 1;
            return ChargeStep::Reclaim;
        }
        // `if (nr_retries--) goto retry`: 16 retries, the 17th failure
        // after the drain goes on.
        if c.retries > 0 {
            c.retries -= 1;
            self.n.reclaims += 1;
            return ChargeStep::Reclaim;
        }
        if c.gfp.retry_mayfail {
            return self.nomem(c);
        }
        // A charger that went through an OOM and is dying gives up (R46);
        // here a killed charger exits at its next step and never comes
        // back to this loop. Any other goes to the OOM killer again, which
        // may choose a new victim once the last one has exited or the
        // reaper has set MMF_OOM_SKIP on it (R103).
        ChargeStep::Oom
    }

    /// `mem_cgroup_oom` under `oom_lock` (R46): `candidates` are the tasks
    /// that may be killed, largest first (the world orders them); `order`
    /// is the allocation order.
    pub fn mem_cgroup_oom(
        &mut self,
        c: &mut Charge,
        order: u32,
        candidates: &[TaskId],
    ) -> OomOutcome {
        self.n.oom_calls += 1;
        if order > PAGE_ALLOC_COSTLY_ORDER {
            return OomOutcome::NoMem;
        }
        // Margin fine now, or a victim still pending: no new kill.
        if self.margin_ok(c.nr_pages) || self.pending_victim.is_some() {
            if self.pending_victim.is_some() {
                self.n.oom_aborts += 1;
            }
            c.retries = MAX_RECLAIM_RETRIES;
            return OomOutcome::Retry;
        }
        match candidates.first() {
            Some(&v) => {
                self.pending_victim = Some(v);
                self.n.oom_kills += 1;
                c.retries = MAX_RECLAIM_RETRIES;
                OomOutcome::Kill(v)
            }
            None => OomOutcome::NoMem,
        }
    }

    /// The OOM victim exited or was reaped: its `pages` leave `usage`
    /// (`MMF_OOM_SKIP`: a later OOM may pick a new victim).
    pub fn victim_gone(&mut self, victim: TaskId, pages: u64) {
        if self.pending_victim == Some(victim) {
            self.pending_victim = None;
        }
        self.usage = self.usage.saturating_sub(pages);
    }

    /// The OOM reaper gave up on victim `victim` (R103): `MMF_OOM_SKIP`
    /// without its memory, so a later OOM may choose another victim while
    /// this one's pages stay charged until it exits.
    pub fn victim_skipped(&mut self, victim: TaskId) {
        if self.pending_victim == Some(victim) {
            self.pending_victim = None;
        }
    }

    pub fn pending_victim(&self) -> Option<TaskId> {
        self.pending_victim
    }

    /// -ENOMEM, or a forced charge above the limit with NOFAIL or HIGH
    /// (R47).
    fn nomem(&mut self, c: &Charge) -> ChargeStep {
        if c.gfp.nofail || c.gfp.high {
            self.n.forced += 1;
            self.usage = self.usage.saturating_add(c.nr_pages);
            ChargeStep::Charged {
                throttle_jiffies: 0,
            }
        } else {
            self.n.nomem += 1;
            ChargeStep::NoMem
        }
    }

    /// An OOM that found nothing to kill: -ENOMEM or forced (R46, R47).
    pub fn oom_failed(&mut self, c: &Charge) -> ChargeStep {
        self.nomem(c)
    }

    /// Usage at the start of a run (pages charged before it).
    pub fn charge_initial(&mut self, pages: u64) {
        self.usage = self.usage.saturating_add(pages);
    }

    /// Pages uncharged (freed by their owner).
    pub fn uncharge(&mut self, pages: u64) {
        self.usage = self.usage.saturating_sub(pages);
    }

    /// memory.high after a successful charge (R48): whether usage is above
    /// high, and the penalty the charging task owes if it handles its
    /// over-high debt (`nr_over_high` pages) inside the charge, which the
    /// kernel does only above `MEMCG_CHARGE_BATCH` pages of debt with a
    /// blocking gfp. Returns (over high, throttle jiffies).
    pub fn over_high(&mut self, nr_over_high: u64, hz: u32) -> (bool, u64) {
        let Some(high) = self.cfg.high else {
            return (false, 0);
        };
        if self.usage <= high {
            return (false, 0);
        }
        if nr_over_high <= MEMCG_CHARGE_BATCH {
            return (true, 0);
        }
        let p = high_penalty_jiffies(self.usage, high, nr_over_high, hz);
        if p > 0 {
            self.n.high_throttles += 1;
        }
        (true, p)
    }

    pub fn counters(&self) -> Vec<(&'static str, u64)> {
        let n = &self.n;
        vec![
            ("charges", n.charges),
            ("max_events", n.max_events),
            ("reclaims", n.reclaims),
            ("free_retries", n.free_retries),
            ("stock_drains", n.drains),
            ("oom_calls", n.oom_calls),
            ("oom_kills", n.oom_kills),
            ("oom_aborts", n.oom_aborts),
            ("nomem", n.nomem),
            ("forced_charges", n.forced),
            ("high_throttles", n.high_throttles),
        ]
    }
}

#[cfg(test)]
mod tests {
    //! Scripted charge sequences, one rule each (R45-R48).
    use super::*;

    fn memcg(max: u64) -> Memcg {
        Memcg::new(MemcgConfig {
            max,
            high: None,
            cpus: 2,
        })
    }

    #[test]
    fn r45_stock_then_batch_then_exact_amount() {
        let mut m = memcg(100);
        let mut c = Charge::new(1, CpuId(0), Gfp::default());
        // A batch of 64 is charged; 63 stay in CPU 0's stock.
        assert_eq!(
            m.try_charge_memcg(&mut c),
            ChargeStep::Charged {
                throttle_jiffies: 0
            }
        );
        assert_eq!(m.usage(), 64);
        // The next 63 one-page charges on CPU 0 come from the stock.
        for _ in 0..63 {
            assert_eq!(
                m.try_charge_memcg(&mut Charge::new(1, CpuId(0), Gfp::default())),
                ChargeStep::Charged {
                    throttle_jiffies: 0
                }
            );
        }
        assert_eq!(m.usage(), 64);
        // CPU 1 has no stock and a batch would pass max: the exact amount.
        assert_eq!(
            m.try_charge_memcg(&mut Charge::new(30, CpuId(1), Gfp::default())),
            ChargeStep::Charged {
                throttle_jiffies: 0
            }
        );
        assert_eq!(m.usage(), 94);
        // Over max: direct reclaim.
        assert_eq!(
            m.try_charge_memcg(&mut Charge::new(10, CpuId(1), Gfp::default())),
            ChargeStep::Reclaim
        );
    }

    #[test]
    fn r45_progress_retries_a_small_charge_for_free_forever() {
        let mut m = memcg(64);
        m.try_charge_memcg(&mut Charge::new(64, CpuId(0), Gfp::default()));
        let mut c = Charge::new(8, CpuId(0), Gfp::default());
        assert_eq!(m.try_charge_memcg(&mut c), ChargeStep::Reclaim);
        // Each reclaim frees a page, not enough for 8, and another charger
        // takes it back: the charge (8 pages <= 8) retries for free, forever,
        // without spending retries.
        for _ in 0..100 {
            assert_eq!(m.after_reclaim(&mut c, 1, 1), ChargeStep::Reclaim);
        }
        assert_eq!(m.usage(), 64);
        assert_eq!(c.retries_left(), MAX_RECLAIM_RETRIES);
        // A 9-page charge with the same progress spends a retry each time
        // after its first failure, which drains the stocks and reclaims
        // again without spending one.
        let mut c = Charge::new(9, CpuId(0), Gfp::default());
        assert_eq!(m.try_charge_memcg(&mut c), ChargeStep::Reclaim);
        assert_eq!(m.after_reclaim(&mut c, 1, 0), ChargeStep::Reclaim);
        m.usage += 1;
        assert_eq!(c.retries_left(), MAX_RECLAIM_RETRIES);
        assert_eq!(m.after_reclaim(&mut c, 1, 0), ChargeStep::Reclaim);
        m.usage += 1;
        assert_eq!(c.retries_left(), MAX_RECLAIM_RETRIES - 1);
    }

    #[test]
    fn r45_freed_pages_taken_by_other_chargers_keep_a_one_page_charge_looping() {
        let mut m = memcg(64);
        m.try_charge_memcg(&mut Charge::new(64, CpuId(0), Gfp::default()));
        let mut c = Charge::new(1, CpuId(1), Gfp::default());
        assert_eq!(m.try_charge_memcg(&mut c), ChargeStep::Reclaim);
        // Every attempt frees 32 pages, and the workload on the other CPUs
        // charges them before this charge retries: progress, no margin.
        for _ in 0..100 {
            assert_eq!(m.after_reclaim(&mut c, 32, 32), ChargeStep::Reclaim);
        }
        assert_eq!(c.retries_left(), MAX_RECLAIM_RETRIES);
        // The first attempt whose pages are left for it ends the loop.
        assert_eq!(
            m.after_reclaim(&mut c, 32, 31),
            ChargeStep::Charged {
                throttle_jiffies: 0
            }
        );
    }

    #[test]
    fn r45_retry_after_pages_left_during_the_attempt_sees_usage_as_it_is() {
        let mut m = memcg(64);
        m.try_charge_memcg(&mut Charge::new(64, CpuId(0), Gfp::default()));
        let mut c = Charge::new(1, CpuId(1), Gfp::default());
        assert_eq!(m.try_charge_memcg(&mut c), ChargeStep::Reclaim);
        // The attempt's 32 pages left while it ran, and another task
        // charged them all: progress, no margin, a free retry.
        m.uncharge(32);
        m.usage += 32;
        assert_eq!(m.retry_after_reclaim(&mut c, 32), ChargeStep::Reclaim);
        assert_eq!((m.usage(), c.retries_left()), (64, MAX_RECLAIM_RETRIES));
        // Next time one page is left: the charge takes it, and the usage
        // is not touched again for the 32 freed.
        m.uncharge(32);
        m.usage += 31;
        assert_eq!(
            m.retry_after_reclaim(&mut c, 32),
            ChargeStep::Charged {
                throttle_jiffies: 0
            }
        );
        assert_eq!(m.usage(), 64);
        // An attempt that freed nothing spends a retry (after the first,
        // which drains and reclaims again).
        let mut c = Charge::new(1, CpuId(1), Gfp::default());
        assert_eq!(m.try_charge_memcg(&mut c), ChargeStep::Reclaim);
        assert_eq!(m.retry_after_reclaim(&mut c, 0), ChargeStep::Reclaim);
        assert_eq!(c.retries_left(), MAX_RECLAIM_RETRIES);
        assert_eq!(m.retry_after_reclaim(&mut c, 0), ChargeStep::Reclaim);
        assert_eq!(c.retries_left(), MAX_RECLAIM_RETRIES - 1);
    }

    #[test]
    fn r45_r47_a_charge_that_cannot_block_fails_or_is_forced_without_reclaim() {
        let mut m = memcg(64);
        m.try_charge_memcg(&mut Charge::new(64, CpuId(0), Gfp::default()));
        // GFP_NOWAIT: no margin, no reclaim, -ENOMEM at once (R45 step 3).
        let nowait = Gfp {
            nowait: true,
            ..Gfp::default()
        };
        let mut c = Charge::new(1, CpuId(1), nowait);
        assert_eq!(m.try_charge_memcg(&mut c), ChargeStep::NoMem);
        // GFP_ATOMIC (__GFP_HIGH): forced above the limit instead (R47).
        let atomic = Gfp {
            high: true,
            ..nowait
        };
        let mut c = Charge::new(1, CpuId(1), atomic);
        assert_eq!(
            m.try_charge_memcg(&mut c),
            ChargeStep::Charged {
                throttle_jiffies: 0
            }
        );
        assert_eq!(m.usage(), 65);
        // With margin, a non-blocking charge goes through as any other.
        m.uncharge(3);
        let mut c = Charge::new(2, CpuId(1), nowait);
        assert_eq!(
            m.try_charge_memcg(&mut c),
            ChargeStep::Charged {
                throttle_jiffies: 0
            }
        );
        assert_eq!(m.usage(), 64);
        let n: Vec<_> = m
            .counters()
            .into_iter()
            .filter(|(k, _)| *k == "reclaims" || *k == "nomem" || *k == "forced_charges")
            .collect();
        assert_eq!(
            n,
            vec![("reclaims", 0), ("nomem", 1), ("forced_charges", 1)]
        );
    }

    #[test]
    fn r45_r46_no_progress_spends_16_retries_then_ooms() {
        let mut m = memcg(64);
        m.try_charge_memcg(&mut Charge::new(64, CpuId(0), Gfp::default()));
        let mut c = Charge::new(1, CpuId(0), Gfp::default());
        assert_eq!(m.try_charge_memcg(&mut c), ChargeStep::Reclaim);
        let mut reclaims = 1;
        loop {
            match m.after_reclaim(&mut c, 0, 0) {
                ChargeStep::Reclaim => reclaims += 1,
                ChargeStep::Oom => break,
                other => panic!("{other:?}"),
            }
        }
        // The first attempt; after its failure the drain's `goto retry`,
        // a second; then `if (nr_retries--) goto retry` gives 16 more. The
        // 18th failure goes to OOM.
        assert_eq!(reclaims, 18);
        assert_eq!(m.counters()[4], ("stock_drains", 1));
        // OOM kills the largest candidate and resets the retries.
        assert_eq!(
            m.mem_cgroup_oom(&mut c, 0, &[TaskId(7), TaskId(3)]),
            OomOutcome::Kill(TaskId(7))
        );
        assert_eq!(c.retries_left(), MAX_RECLAIM_RETRIES);
    }

    #[test]
    fn r46_r47_a_pending_victim_means_no_new_kill_and_chargers_loop() {
        let mut m = memcg(64);
        m.try_charge_memcg(&mut Charge::new(64, CpuId(0), Gfp::default()));
        let mut a = Charge::new(1, CpuId(0), Gfp::default());
        let mut b = Charge::new(1, CpuId(1), Gfp::default());
        assert_eq!(
            m.mem_cgroup_oom(&mut a, 0, &[TaskId(7)]),
            OomOutcome::Kill(TaskId(7))
        );
        // While 7 has not exited (it may be blocked on a lock), every OOM
        // call aborts without a kill: the chargers go round again.
        for _ in 0..5 {
            assert_eq!(
                m.mem_cgroup_oom(&mut b, 0, &[TaskId(7), TaskId(8)]),
                OomOutcome::Retry
            );
        }
        assert_eq!(m.counters()[7], ("oom_aborts", 5));
        // The victim exits and frees its 40 pages: the charge goes through.
        m.victim_gone(TaskId(7), 40);
        assert_eq!(
            m.after_reclaim(&mut b, 0, 0),
            ChargeStep::Charged {
                throttle_jiffies: 0
            }
        );
    }

    #[test]
    fn r46_costly_orders_never_kill_and_r47_nofail_forces_the_charge() {
        let mut m = memcg(64);
        m.try_charge_memcg(&mut Charge::new(64, CpuId(0), Gfp::default()));
        let mut c = Charge::new(16, CpuId(0), Gfp::default());
        assert_eq!(m.mem_cgroup_oom(&mut c, 4, &[TaskId(7)]), OomOutcome::NoMem);
        let forced = Charge::new(
            1,
            CpuId(0),
            Gfp {
                nofail: true,
                ..Gfp::default()
            },
        );
        assert_eq!(
            m.oom_failed(&forced),
            ChargeStep::Charged {
                throttle_jiffies: 0
            }
        );
        assert_eq!(m.usage(), 65);
        let mut c2 = Charge::new(
            1,
            CpuId(0),
            Gfp {
                noretry: true,
                ..Gfp::default()
            },
        );
        // NORETRY gives up after the drain's second attempt (R45's order).
        assert_eq!(m.try_charge_memcg(&mut c2), ChargeStep::Reclaim);
        assert_eq!(m.after_reclaim(&mut c2, 0, 0), ChargeStep::Reclaim);
        assert_eq!(m.after_reclaim(&mut c2, 0, 0), ChargeStep::NoMem);
    }

    #[test]
    fn r48_high_penalty_formula() {
        // 1% over high with 64 pages of debt: about 6 ms (1.6 jiffies at
        // HZ 250, truncated to 1; 6 at HZ 1000), at most HZ/100 (2 jiffies
        // at HZ 250, 10 at HZ 1000), so not worth a sleep: 1% over never
        // throttles.
        let high = 100_000u64;
        assert_eq!(calculate_overage(101_000, high), 10_485);
        assert_eq!(calculate_high_delay(10_485, 64, 250), 1);
        assert_eq!(calculate_high_delay(10_485, 64, 1000), 6);
        assert_eq!(high_penalty_jiffies(101_000, high, 64, 250), 0);
        assert_eq!(high_penalty_jiffies(101_000, high, 64, 1000), 0);
        // 10% over: ~100x the penalty (the kernel's integer arithmetic
        // truncates the overage to 104857, giving 159, not 160), and far
        // over is clamped to 2 HZ.
        assert_eq!(calculate_overage(110_000, high), 104_857);
        assert_eq!(high_penalty_jiffies(110_000, high, 64, 250), 159);
        assert_eq!(high_penalty_jiffies(200_000, high, 64, 250), 500);
        // Not over: nothing.
        assert_eq!(high_penalty_jiffies(90_000, high, 64, 250), 0);
    }

    #[test]
    fn r48_debt_is_handled_in_the_charge_only_above_a_batch() {
        let mut m = Memcg::new(MemcgConfig {
            max: 1_000_000,
            high: Some(100_000),
            cpus: 1,
        });
        m.usage = 110_000;
        assert_eq!(
            m.over_high(64, 250),
            (true, 0),
            "<= 64 pages: on return to user"
        );
        // 10% over: 159 jiffies per batch of debt, twice that for 128 pages.
        assert_eq!(m.over_high(128, 250), (true, 318));
    }
}
