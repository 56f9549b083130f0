//! `convoy validate`: the built-in experiments against the calibration
//! targets of docs/cases.md.

use super::flags::ValidateArgs;
use crate::runner::RunOptions;

/// A validated `validate`: the experiments, the `--set`s (with the
/// duration as one), the run options.
pub(super) struct ValidatePlan {
    experiments: Vec<String>,
    /// `--set` as given, to say the calibration is not the shipped one.
    user_sets: Vec<String>,
    sets: Vec<String>,
    /// Which of `sets` `--duration` made.
    flags: Vec<(usize, String)>,
    /// `--machine`.
    machine: Option<String>,
    opts: RunOptions,
}

/// Checks the duration.
pub(super) fn plan(a: ValidateArgs) -> anyhow::Result<ValidatePlan> {
    let (sets, flags) = super::run::flag_sets(&a.sets, a.duration.as_deref(), None)?;
    let opts = RunOptions {
        seed: a.seed,
        jobs: a.jobs,
        ..RunOptions::default()
    };
    Ok(ValidatePlan {
        experiments: a.experiments,
        user_sets: a.sets,
        sets,
        flags,
        machine: a.machine,
        opts,
    })
}

/// Runs the experiments and prints each calibration target; `Ok(false)`
/// if one is not met.
pub(super) fn execute(p: &ValidatePlan) -> anyhow::Result<bool> {
    let rows = crate::validate::validate(
        &p.experiments,
        (&p.sets, &p.flags),
        p.machine.as_deref(),
        &p.opts,
    )?;
    let mut changed: Vec<String> = p.machine.iter().map(|m| format!("--machine {m}")).collect();
    changed.extend(p.user_sets.iter().map(|s| format!("--set {s}")));
    if !changed.is_empty() {
        println!("with {}: not the shipped calibration", changed.join(" "));
    }
    print!("{}", crate::validate::format(&rows));
    Ok(crate::validate::all_met(&rows))
}
