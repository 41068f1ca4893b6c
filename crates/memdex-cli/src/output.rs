//! Terminal output helpers: progress bars and JSON printing.

use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

/// A progress bar on stderr, hidden when stderr is not a terminal.
pub fn bar(len: u64, what: &str) -> ProgressBar {
    let pb = if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        ProgressBar::new(len)
    } else {
        ProgressBar::hidden()
    };
    pb.set_style(
        ProgressStyle::with_template(&format!(
            "{{spinner}} {what} {{bar:30}} {{pos}}/{{len}} [{{elapsed_precise}}, {{per_sec}}] {{msg}}"
        ))
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    pb
}

/// A spinner counting up (unknown total).
pub fn spinner(what: &str) -> ProgressBar {
    let pb = bar(0, what);
    pb.set_style(
        ProgressStyle::with_template(&format!(
            "{{spinner}} {what} {{pos}} [{{elapsed_precise}}, {{per_sec}}] {{msg}}"
        ))
        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    pb
}

/// A bar over input bytes with rate and ETA (hidden when stderr is not a terminal).
pub fn progress_bytes(what: &str) -> ProgressBar {
    let pb = bar(0, what);
    pb.set_style(
        ProgressStyle::with_template(&format!(
            "{what} {{bar:30}} {{bytes}}/{{total_bytes}} [{{elapsed_precise}}, ETA {{eta}}, {{bytes_per_sec}}] {{msg}}"
        ))
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    pb
}

/// This process's anonymous resident memory in KiB (Linux `/proc/self/status`), if known.
pub fn rss_anon_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("RssAnon:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

pub fn print_json<T: Serialize>(value: &T) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}
