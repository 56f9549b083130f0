//! `convoy compare`: variants run with common random numbers, then the
//! 72-column before/after table.

use super::flags::{CompareArgs, RunArgs};
use super::run::{self, RunPlan};
use crate::builtin;
use crate::runner;
use crate::scenario::ScenarioFile;
use output::terminal;
use std::path::PathBuf;

/// A validated `compare`: the run of the base and the other variants, and
/// the counters to show.
pub(super) struct ComparePlan {
    run: RunPlan,
    experiment: String,
    /// `--counter` (default: the built-in experiment's own).
    counters: Vec<String>,
}

/// Reads the scenario for its variants and plans the run: the base first,
/// then the others.
pub(super) fn plan(a: CompareArgs) -> anyhow::Result<ComparePlan> {
    let src = builtin::source(&a.experiment, &[])?;
    let all = ScenarioFile::new(src)?.variants;
    let base = a.base.clone().unwrap_or_else(|| all[0].clone());
    let with: Vec<String> = if a.with.is_empty() {
        all.iter().filter(|v| **v != base).cloned().collect()
    } else {
        a.with.clone()
    };
    let variants: Vec<String> = std::iter::once(base).chain(with).collect();
    let (experiment, counters) = (a.experiment.clone(), a.counters);
    let run = run::plan(RunArgs {
        variants,
        seed: a.seed,
        duration: a.duration,
        sets: a.sets,
        machine: a.machine,
        reps: a.reps,
        out: a.out,
        jobs: a.jobs,
        histograms: 0,
        ..RunArgs::defaults(a.experiment)
    })?;
    Ok(ComparePlan {
        run,
        experiment,
        counters,
    })
}

/// Runs the plan, writes its files and `compare.txt`, and prints the
/// table.
pub(super) fn execute(p: ComparePlan) -> anyhow::Result<()> {
    let plan = &p.run;
    let out = runner::run(&plan.file, &plan.opts)?;
    let dir = plan
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("out").join(&out.result.experiment));
    let counters: Vec<&str> = if p.counters.is_empty() {
        builtin::find(&p.experiment)
            .map(|b| b.counters.to_vec())
            .unwrap_or_default()
    } else {
        p.counters.iter().map(String::as_str).collect()
    };
    for c in &counters {
        if out.result.variants[0].counter(c).is_none() {
            eprintln!(
                "convoy: warning: no counter `{}` in this run (summary.csv lists them)",
                output::terminal::escape_controls(c)
            );
        }
    }
    let table = terminal::compare_table(&out.result, &out.per_rep, 0, &counters);
    let plots = runner::write_all_or_nothing(&dir, |tmp| {
        run::write_results(tmp, &out)?;
        let plots = run::plots_note(tmp, &dir, &out.result)?;
        output::files::write_atomic(tmp, "compare.txt", table.as_bytes())?;
        run::write_report(tmp, &out, &plan.opts.above, &plots, Some(&table), None)?;
        Ok(plots)
    })?;
    print!("{table}");
    println!("{}", plots.note);
    println!(
        "{}: base `{}`, seed {}, {} replication(s); files in {}/",
        out.result.experiment,
        out.result.variants[0].variant,
        out.manifest.seed,
        plan.opts.reps,
        dir.display()
    );
    Ok(())
}
