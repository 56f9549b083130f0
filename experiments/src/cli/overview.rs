//! `convoy` with no command: the default job.

use super::flags::RunArgs;
use super::run;
use crate::builtin::BUILTINS;
use crate::runner;
use output::terminal;
use std::path::PathBuf;

/// The default job: every built-in experiment with its default settings,
/// files and plots written, and a one-screen overview of the headline
/// figures.
pub(super) fn execute() -> anyhow::Result<()> {
    let mut done = Vec::new();
    for b in BUILTINS {
        eprintln!("convoy: running {} ...", b.name);
        let plan = run::plan(RunArgs {
            duration: b.overview.map(String::from),
            histograms: 0,
            ..RunArgs::defaults(b.name.into())
        })?;
        let out = runner::run(&plan.file, &plan.opts)?;
        let dir = PathBuf::from("out").join(&out.result.experiment);
        let table = terminal::compare_table(&out.result, &out.per_rep, 0, b.counters);
        runner::write_all_or_nothing(&dir, |tmp| {
            run::write_results(tmp, &out)?;
            output::files::write_atomic(tmp, "compare.txt", table.as_bytes())?;
            let plots = run::plots_note(tmp, &dir, &out.result)?;
            run::write_report(tmp, &out, &plan.opts.above, &plots, Some(&table), None)
        })?;
        done.push((b, out));
    }
    let blocks: Vec<_> = done.iter().map(|(b, o)| (&o.result, b.headline)).collect();
    let above = [runner::DEFAULT_ABOVE[0], runner::DEFAULT_ABOVE[2]];
    print!("{}", terminal::overview(&blocks, above));
    let short: Vec<String> = BUILTINS
        .iter()
        .filter_map(|b| b.overview.map(|d| format!("{} {d}", b.name)))
        .collect();
    println!(
        "\nx: ratio to the first variant; >1ms: waits longer than 1 ms, exact.\n\
         The rest: out/<experiment>/. `convoy compare EXP` runs one in full\n\
         (shortened here: {}).\n\
         Measured cases: `convoy validate`; predictions: docs/predictions.md",
        short.join(", ")
    );
    Ok(())
}
