//! Helpers for the scripted policy tests: a context where nobody is RT,
//! everybody is on a CPU and no CPU is wanted, and one-call acquire and
//! release that return what the lock did.

use crate::ids::TaskId;
use crate::locks::policy::{Acquire, AllOnCpu, LockCtx, LockPolicy, Mode, Wake};
use sim::SimTime;

pub const CTX: LockCtx<'static> = LockCtx {
    now: SimTime(0),
    hz: 250,
    tasks: &AllOnCpu,
};

/// `t` asks for `l` in mode `m`; the acquisition must wake nobody.
pub fn acq<L: LockPolicy>(l: &mut L, t: u32, m: Mode) -> Acquire {
    let t = TaskId(t);
    let mut w = Vec::new();
    let a = l.acquire(&CTX, t, m, &mut w);
    assert!(w.is_empty(), "an acquisition woke {w:?}");
    a
}

/// `t` releases `l` held in mode `m`; returns the wakes, in order.
pub fn rel<L: LockPolicy>(l: &mut L, t: u32, m: Mode) -> Vec<Wake> {
    let t = TaskId(t);
    let mut w = Vec::new();
    l.release(&CTX, t, m, &mut w);
    w
}
