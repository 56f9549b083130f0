use clap::Parser;
use std::process::ExitCode;

/// Exit status: 0 done, 1 done but a check failed (`validate`), 2 error.
fn main() -> ExitCode {
    let cli = experiments::cli::Cli::parse();
    match experiments::cli::main_with(cli) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("convoy: error: {e:#}");
            ExitCode::from(2)
        }
    }
}
