//! Progress bar on standard error, shown only on a terminal.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

/// A bar counting files; hidden when stderr is not a terminal.
pub fn files(total: usize) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total as u64);
    if let Ok(style) = ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} files  {msg}") {
        bar.set_style(style);
    }
    bar
}
