//! `convoy validate`: the built-in experiments against the calibration
//! targets of docs/cases.md.

use super::flags::ValidateArgs;
use crate::runner::RunOptions;
use crate::validate::SPLITTING;

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
    // Only when asked: plain `validate` is the model against the cases'
    // targets (docs/contract.md).
    let splitting = p.experiments.iter().any(|e| e == SPLITTING);
    let cases: Vec<String> = (p.experiments.iter())
        .filter(|e| *e != SPLITTING)
        .cloned()
        .collect();
    let mut changed: Vec<String> = p.machine.iter().map(|m| format!("--machine {m}")).collect();
    changed.extend(p.user_sets.iter().map(|s| format!("--set {s}")));
    let mut met = true;
    let mut said = false;
    let mut say_changed = || {
        if !changed.is_empty() && !std::mem::replace(&mut said, true) {
            println!("with {}: not the shipped calibration", changed.join(" "));
        }
    };
    if p.experiments.is_empty() || !cases.is_empty() {
        let rows =
            crate::validate::validate(&cases, (&p.sets, &p.flags), p.machine.as_deref(), &p.opts)?;
        say_changed();
        print!("{}", crate::validate::format(&rows));
        met &= crate::validate::all_met(&rows);
    }
    if splitting {
        let a = split_check(p)?;
        say_changed();
        print!(
            "{}",
            crate::sweep::split_check::format(&a, SPLITTING_REPORT)
        );
        met &= a.met();
    }
    Ok(met)
}

/// `--experiment splitting`: the validation report run one by one and by
/// splitting, with `--seed`, `--set`, `--duration` and `--machine`
/// applied to it as to a case; whether the two agree.
fn split_check(p: &ValidatePlan) -> anyhow::Result<crate::sweep::split_check::Agreement> {
    use crate::sweep::split_check;
    let name = SPLITTING_REPORT;
    let mut text = split_check::REPORT.to_string();
    if let Some(seed) = p.opts.seed {
        text = split_check::with_seed(&text, seed);
    }
    let src = crate::scenario::Source::new(format!("builtin:{name}"), text);
    let mut spec = crate::sweep::parse(&src)?;
    spec.sets.extend(p.sets.iter().cloned());
    // A run's length, if `--duration` or `--set` changed it.
    let run = (p.sets.iter().rev())
        .find_map(|s| s.strip_prefix("scenario.duration="))
        .and_then(|d| sim::time::parse_duration(d).ok());
    if let (Some(c), Some(run)) = (spec.check.as_mut(), run) {
        c.run = run;
    }
    spec.machine = p.machine.clone();
    let o = crate::sweep::split::SplitOptions {
        replicas: split_check::REPLICAS,
        jobs: p.opts.jobs,
        ..Default::default()
    };
    split_check::agreement(&spec, &o)
}

/// The name the splitting check's report goes by.
const SPLITTING_REPORT: &str = "splitting-validation";
