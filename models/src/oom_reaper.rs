//! The OOM reaper (docs/kernel-rules.md R102-R103, mm/oom_kill.c): what
//! happens to an OOM victim that does not exit.
//!
//! A kill queues the victim for the reaper on a timer, `OOM_REAPER_DELAY`
//! = 2 HZ later (R102); if the victim exited by then, nothing is left to
//! do. Otherwise the reaper thread tries to take the victim's mmap_lock
//! for read without waiting; each failure sleeps HZ/10 and tries again,
//! 10 attempts in all (R103). A successful attempt unmaps the victim's
//! anonymous memory (its pages come back). Either way the reaper then
//! sets `MMF_OOM_SKIP` on the mm: the OOM killer stops waiting for this
//! victim and may choose another, even though a victim the reaper gave up
//! on still holds its memory until it exits.
//!
//! The world owns time and the lock; this module decides each step.

/// `OOM_REAPER_DELAY`, in units of HZ (R102).
pub const OOM_REAPER_DELAY_HZ: u64 = 2;
/// `MAX_OOM_REAP_RETRIES` (R103).
pub const MAX_OOM_REAP_RETRIES: u32 = 10;

/// The jiffies of the reaper's sleep between two attempts: HZ/10
/// (`schedule_timeout_idle`).
pub fn retry_sleep_jiffies(hz: u32) -> u64 {
    u64::from(hz / 10)
}

/// What the reaper does after one attempt.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ReapStep {
    /// The trylock succeeded: the victim's memory is unmapped and freed,
    /// then `MMF_OOM_SKIP`.
    Reaped,
    /// The trylock failed: sleep [`retry_sleep_jiffies`], then attempt
    /// again (`Reaper::attempt`), or give up (`Reaper::after_sleep`).
    Sleep,
}

/// One victim's reaping (`oom_reap_task`'s loop).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Reaper {
    attempts: u32,
}

impl Reaper {
    /// `oom_reap_task_mm`'s outcome, given whether `mmap_read_trylock`
    /// succeeds now (R103).
    pub fn attempt(&mut self, trylock_ok: bool) -> ReapStep {
        self.attempts += 1;
        if trylock_ok {
            ReapStep::Reaped
        } else {
            ReapStep::Sleep
        }
    }

    /// After a sleep: whether another attempt follows (`true`), or the
    /// reaper gives up (`false`: MMF_OOM_SKIP without freeing). The loop
    /// sleeps after every failed attempt, the tenth too, and only then
    /// finds its attempts spent.
    pub fn after_sleep(&self) -> bool {
        self.attempts < MAX_OOM_REAP_RETRIES
    }

    pub fn attempts(&self) -> u32 {
        self.attempts
    }
}

#[cfg(test)]
mod tests {
    //! R103's loop, attempt by attempt.
    use super::*;

    #[test]
    fn r103_ten_failed_trylocks_each_followed_by_a_sleep_then_give_up() {
        let mut r = Reaper::default();
        let mut sleeps = 0;
        loop {
            assert_eq!(r.attempt(false), ReapStep::Sleep);
            sleeps += 1;
            if !r.after_sleep() {
                break;
            }
        }
        assert_eq!((r.attempts(), sleeps), (10, 10));
        // HZ/10: 25 jiffies at HZ 250, 100 at HZ 1000.
        assert_eq!(retry_sleep_jiffies(250), 25);
        assert_eq!(retry_sleep_jiffies(1000), 100);
    }

    #[test]
    fn r103_a_trylock_that_succeeds_reaps_at_once() {
        let mut r = Reaper::default();
        assert_eq!(r.attempt(false), ReapStep::Sleep);
        assert!(r.after_sleep());
        assert_eq!(r.attempt(true), ReapStep::Reaped);
        assert_eq!(r.attempts(), 2);
    }
}
