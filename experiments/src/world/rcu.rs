//! The world and RCU (R90-R94): the grace-period model of
//! `models::rcu`, ticked at every tick while it has work, the callbacks
//! that queue work items (`call_rcu`, `queue_rcu_work`), and the tasks
//! in `synchronize_rcu`.

use super::*;
use models::rcu::{Rcu, RcuAction};

/// What a callback does when it runs: queue item `work` on `wq`, on the
/// workqueue CPU `cpu` (the callback's), either as an `rcu_work` that
/// has been pending since it was queued (`rcu_work_rcufn`) or as a plain
/// `queue_work` (a `call_rcu` callback such as percpu_ref's release
/// queueing `css_release`).
#[derive(Copy, Clone, Debug)]
pub(super) enum Callback {
    Work {
        wq: WqId,
        work: WorkId,
        cpu: CpuId,
        rcu_work: bool,
    },
    /// A percpu_rw_semaphore's `rcu_sync_func` (R82 on R92).
    RcuSync(LockId),
}

/// RCU in the world: the model, whether its tick event is set, and the
/// buffer of actions a tick returns.
#[derive(Clone)]
pub(super) struct RcuWorld {
    rcu: Rcu<Callback>,
    armed: bool,
    actions: Vec<RcuAction<Callback>>,
}

impl RcuWorld {
    /// RCU for `c` if a program uses it: on the run's CPUs (one with
    /// unlimited CPUs, where no CPU is ever busy: R90's forcing scans end
    /// every grace period).
    pub(super) fn new(c: &Compiled) -> Option<Box<RcuWorld>> {
        c.uses_rcu().then(|| {
            Box::new(RcuWorld {
                rcu: Rcu::new(c.cpus.unwrap_or(1), c.hz),
                armed: false,
                actions: Vec::new(),
            })
        })
    }

    /// The counters for the results: `rcu/...`.
    pub(super) fn counters(&self, out: &mut Vec<Counter>) {
        let n = &self.rcu.n;
        for (name, value) in [
            ("grace_periods", n.grace_periods),
            ("gp_ns_total", n.gp_ns_total),
            ("gp_ns_max", n.gp_ns_max),
            ("fqs_scans", n.fqs_scans),
            ("fqs_reports", n.fqs_reports),
            ("callbacks", n.callbacks),
            ("synchronize_waits", n.synchronize_waits),
        ] {
            out.push(Counter {
                subject: format!("rcu/{name}"),
                value,
            });
        }
    }
}

impl<'c> World<'c> {
    /// The CPU `t` runs on, for RCU: its callbacks' CPU.
    fn rcu_cpu(&self, t: TaskId) -> CpuId {
        match self.tasks[t].cpu {
            CpuId::ANY => CpuId(0),
            c => c,
        }
    }

    /// `queue_rcu_work` (`rcu_work`, R94) or `call_rcu` (R92) by `t` of
    /// item `key` of work type `work` on `wq`: a callback on `t`'s CPU
    /// after the next grace period.
    #[inline(never)]
    pub(super) fn rcu_queue(
        &mut self,
        t: TaskId,
        wq: WqId,
        work: WorkTypeId,
        key: crate::program::WorkKey,
        rcu_work: bool,
    ) {
        let (id, cpu) = (self.work_id(t, work, key), self.wq_cpu(t, wq));
        if rcu_work && !self.wq.queues[wq].queue_rcu_work_modelled(id, cpu) {
            return;
        }
        let on = self.rcu_cpu(t);
        let now = self.clock.now;
        let r = self.rcu.as_mut().expect("a program uses RCU");
        r.rcu.call_rcu(
            now,
            on,
            Callback::Work {
                wq,
                work: id,
                cpu,
                rcu_work,
            },
        );
        self.arm_rcu();
    }

    /// `call_rcu(rcu_sync_func)` for `lock` (R82), on the CPU of the task
    /// running now (the last writer's `rcu_sync_exit`).
    pub(super) fn rcu_sync_call(&mut self, lock: LockId) {
        let on = match self.clock.current {
            NONE => CpuId(0),
            t => self.rcu_cpu(t),
        };
        let now = self.clock.now;
        let r = self.rcu.as_mut().expect("a lock's rcu_sync uses RCU");
        r.rcu.call_rcu(now, on, Callback::RcuSync(lock));
        self.arm_rcu();
    }

    /// `t` waits in `synchronize_rcu` for the next grace period to end
    /// (R93), for its lock: [`World::rcu_tick`] ends the wait.
    pub(super) fn rcu_wait(&mut self, t: TaskId) {
        let now = self.clock.now;
        let r = self.rcu.as_mut().expect("a lock's rcu_sync uses RCU");
        r.rcu.synchronize_rcu(now, t);
        self.arm_rcu();
    }

    /// `synchronize_rcu` by `t`, which goes on at `pc` (R93): it sleeps
    /// until the next grace period to start has ended.
    #[inline(never)]
    pub(super) fn synchronize_rcu(&mut self, t: TaskId, pc: Pc) {
        let now = self.clock.now;
        let r = self.rcu.as_mut().expect("a program uses RCU");
        r.rcu.synchronize_rcu(now, t);
        self.arm_rcu();
        self.block_waiting(t, pc, Doing::GracePeriod);
    }

    /// Sets the RCU tick event at the next tick, if it is not set.
    fn arm_rcu(&mut self) {
        let r = self.rcu.as_mut().expect("a program uses RCU");
        if !r.armed {
            r.armed = true;
            let at = r.rcu.next_tick(self.clock.now);
            self.clock.queue.set(self.clock.slots.rcu(), at, Ev::Rcu);
        }
    }

    /// The tick (`Ev::Rcu`): RCU's work at this tick on every CPU, then
    /// what it asked for, then the next tick if it still has work.
    pub(super) fn rcu_tick(&mut self) {
        let now = self.clock.now;
        let mut r = self.rcu.take().expect("a program uses RCU");
        let running = &self.cpus.running_on;
        let idle = |c: CpuId| running.get(c).is_none_or(|&t| t == NONE);
        let mut actions = std::mem::take(&mut r.actions);
        r.rcu.tick(now, idle, &mut actions);
        r.armed = false;
        self.rcu = Some(r);
        for a in actions.drain(..) {
            match a {
                RcuAction::Invoke { cb, .. } => match cb {
                    Callback::Work {
                        wq,
                        work,
                        cpu,
                        rcu_work,
                    } => {
                        if rcu_work {
                            self.wq_call(wq, |q, now, out| q.rcu_work_rcufn(now, work, out));
                        } else {
                            self.wq_call(wq, |q, now, out| q.queue_work(now, work, cpu, out));
                        }
                    }
                    Callback::RcuSync(lock) => {
                        self.lock_op(lock, |l, ctx, wakes| l.rcu_callback(ctx, wakes));
                    }
                },
                // A task in `synchronize_rcu`: a step goes on; a lock's
                // `rcu_sync_enter` tries the lock again.
                RcuAction::Wake(t) => match self.tasks[t].resume.lock_wait() {
                    Some((lock, _, _)) => self.lock_grace_period_over(t, lock),
                    None => {
                        self.wakeup(t, false);
                    }
                },
            }
        }
        let r = self.rcu.as_mut().expect("a program uses RCU");
        r.actions = actions;
        if r.rcu.active() {
            self.arm_rcu();
        }
    }
}
