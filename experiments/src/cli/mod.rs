//! The `convoy` command line, in three layers (after ripgrep): raw flags
//! ([`flags`]: clap, no side effects) -> a validated plan (each command's
//! `plan`: files read, every flag checked, nothing written) -> running the
//! plan (its `execute`). One module per command; the default job (no
//! command) is [`overview`]. Errors are returned, printed once by `main`,
//! and exit with status 2.

mod band;
mod bench;
mod check;
mod compare;
pub mod flags;
mod list;
mod machines;
mod merge;
mod overview;
mod run;
mod sweep;
mod validate;

pub use flags::{Cli, Command};

/// Runs a command; `Ok(false)` means it ran and found a failure to report
/// through the exit status (a target `validate` did not meet).
pub fn main_with(cli: Cli) -> anyhow::Result<bool> {
    let done = match cli.command {
        None => overview::execute(),
        Some(Command::List) => {
            list::execute();
            Ok(())
        }
        Some(Command::Run(a)) => run::execute(run::plan(*a)?).map(drop),
        Some(Command::Compare(a)) => compare::execute(compare::plan(a)?),
        Some(Command::Bench(f)) => bench::execute(bench::plan(f)?),
        Some(Command::Validate(a)) => return validate::execute(&validate::plan(a)?),
        Some(Command::Sweep(a)) => sweep::execute(sweep::plan(a)?),
        Some(Command::Check(a)) => check::execute(check::plan(a)?),
        Some(Command::Merge(a)) => merge::execute(a),
        Some(Command::Machines(a)) => machines::execute(machines::plan(a)?),
        Some(Command::Band(a)) => band::execute(band::plan(a)?),
    };
    done.map(|()| true)
}
