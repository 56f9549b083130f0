use clap::Parser;

fn main() {
    let cli = experiments::cli::Cli::parse();
    if let Err(e) = experiments::cli::main_with(cli) {
        eprintln!("convoy: error: {e:#}");
        std::process::exit(2);
    }
}
