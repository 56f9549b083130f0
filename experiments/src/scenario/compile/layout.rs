//! Pass 6, slot layout: what each task of a program keeps in slots (the
//! locks it holds and the spans it has open at once, in the slots the
//! checks laid out, and a counter per nested `repeat`), at most 255 of
//! each, so that an instruction names its slot in a byte; and, once all
//! programs are compiled, the event-queue slots the run needs.

use super::checks::Slots;
use super::names::{Kind, Resolved};
use crate::program::{Compiled, Origin};
use crate::scenario::error::ScenarioError;
use crate::scenario::source::Source;

/// The slots each task of a program keeps.
pub(super) struct Frame {
    pub hold_slots: u8,
    pub span_slots: u8,
    pub repeat_slots: u8,
}

/// The frame of a program (`nodes`, checked, whose holds and spans take
/// `slots`); `end` is where the program is written.
pub(super) fn frame(
    end: &Origin,
    slots: Slots,
    nodes: &[Resolved],
) -> Result<Frame, ScenarioError> {
    let repeats = repeat_depth(nodes);
    if slots.holds > 255 || slots.spans > 255 || repeats >= 255 {
        return Err(end.error("more than 255 nested locks, spans or repeats"));
    }
    Ok(Frame {
        hold_slots: slots.holds as u8,
        span_slots: slots.spans as u8,
        repeat_slots: repeats as u8,
    })
}

/// How deep `repeat` blocks nest in `nodes`.
fn repeat_depth(nodes: &[Resolved]) -> usize {
    nodes
        .iter()
        .map(|n| match &n.kind {
            Kind::Repeat { body, .. } => 1 + repeat_depth(body),
            Kind::Call { body, .. }
            | Kind::Loop { body }
            | Kind::WithProb { body, .. }
            | Kind::IfWorkBusy { body, .. }
            | Kind::IfPressure { body, .. }
            | Kind::ReadBlock { body, .. } => repeat_depth(body),
            _ => 0,
        })
        .max()
        .unwrap_or(0)
}

/// Checks that the run fits its event queue: every task, kworker, work
/// item (its timer) and memcg (its reaper and its release tick) takes one
/// slot.
pub(super) fn event_slots(src: &Source, c: &Compiled) -> Result<(), ScenarioError> {
    let (total, kworkers, items) = (c.tasks(), c.kworkers(), c.work_items());
    let max = sim::SlotQueue::<(), 20>::MAX_SLOTS as u64;
    if total > max {
        return Err(ScenarioError::new(
            src.name.clone(),
            "tasks",
            format!("{total} tasks in all; a run holds at most {max}"),
        ));
    }
    if total + kworkers + items + 2 * c.memcgs.len() as u64 > max {
        return Err(ScenarioError::new(
            src.name.clone(),
            "works",
            format!(
                "{total} tasks, {kworkers} kworkers and {items} work items in all; \
                 a run holds at most {max} of them"
            ),
        ));
    }
    Ok(())
}
