//! `memdex`: index chat histories into a local memory store and search them.

mod cli;
mod cli_common;
mod cli_model;
mod cli_serve;
mod cli_store;
mod cmd;
mod output;

use clap::Parser;

fn main() {
    let cli = cli::Cli::parse();
    init_tracing(cli.verbose);
    if let Err(e) = cmd::run(cli) {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

fn init_tracing(verbose: u8) {
    use tracing_subscriber::EnvFilter;
    let default = match verbose {
        0 => "warn",
        1 => "info,memdex=info",
        _ => "debug",
    };
    let filter = EnvFilter::try_from_env("MEMDEX_LOG").unwrap_or_else(|_| EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // colours only on a terminal: logs piped to a file or CI stay plain text
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .init();
}
