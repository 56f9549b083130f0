//! `convoy list`: what ships in the binary.

use crate::builtin::{self, BUILTINS};

/// Prints the built-in experiments, sweeps and fleet reports.
pub(super) fn execute() {
    let names = BUILTINS.iter().map(|b| b.name);
    let files = builtin::SWEEPS.iter().chain(builtin::REPORTS);
    let w = names
        .chain(files.clone().map(|s| s.0))
        .map(str::len)
        .max()
        .unwrap_or(0);
    for b in BUILTINS {
        println!("{:<w$}  {}", b.name, b.summary);
    }
    for (title, list) in [
        (
            "sweeps (convoy sweep NAME --out DIR; docs/sweeps.md)",
            builtin::SWEEPS,
        ),
        (
            "fleet reports (convoy check NAME; docs/sweeps.md)",
            builtin::REPORTS,
        ),
    ] {
        println!("\n{title}:");
        for (name, text) in list {
            let about = crate::sweep::parse(&crate::scenario::Source::new(*name, *text))
                .map(|s| s.description)
                .unwrap_or_default();
            println!("{name:<w$}  {about}");
        }
    }
}
