use clap::Parser;
use std::process::ExitCode;

/// Exit status: 0 done, 1 done but a check failed (`validate`), 2 error.
fn main() -> ExitCode {
    // `convoy ... | head`: a closed pipe ends the process quietly, as it
    // does a C tool, instead of a panic in `print!`.
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of one signal at start-up,
    // before any other thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = experiments::cli::Cli::parse();
    match experiments::cli::main_with(cli) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            // Text from files and names: no escape sequence reaches the
            // terminal.
            let msg = format!("{e:#}");
            eprintln!("convoy: error: {}", output::terminal::escape_controls(&msg));
            ExitCode::from(2)
        }
    }
}
