//! Ending quietly when the reader of stdout goes away (`trajkit stats LIB | head -1`),
//! as ripgrep does, and never showing a user a backtrace.

use std::io::Write;

/// Prints a line to stdout like `println!`, but a closed pipe ends the process quietly
/// (`stdout_done`) instead of panicking; usable in any function, sinks included.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::pipe::stdout_done(writeln!(std::io::stdout().lock(), $($arg)*))
    };
}

/// `outln!` without the newline.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::pipe::stdout_done(write!(std::io::stdout().lock(), $($arg)*))
    };
}

pub(crate) use {out, outln};

/// Standard output for commands that print many lines: a block at a time, or a line at a
/// time to a terminal (where each line should show as soon as it is known). stdout itself is
/// line-buffered: a `write` system call per line. A failed write ends the process
/// (`stdout_done`); `finish` writes what is held.
pub struct Lines {
    out: std::io::BufWriter<std::io::StdoutLock<'static>>,
    to_terminal: bool,
}

impl Lines {
    pub fn stdout() -> Lines {
        let stdout = std::io::stdout();
        let to_terminal = std::io::IsTerminal::is_terminal(&stdout);
        Lines { out: std::io::BufWriter::new(stdout.lock()), to_terminal }
    }

    /// Writes `text` and a newline.
    pub fn line(&mut self, text: std::fmt::Arguments) {
        stdout_done(writeln!(self.out, "{text}"));
        if self.to_terminal {
            stdout_done(self.out.flush());
        }
    }

    /// Writes out the lines held.
    pub fn finish(&mut self) {
        stdout_done(self.out.flush());
    }
}

/// Checks a write to stdout: a closed pipe exits 0 at once, as ripgrep does (the reader
/// has all it wanted); any other failure is an error with exit status 2.
pub fn stdout_done(result: std::io::Result<()>) {
    match result {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
        Err(e) => {
            eprintln!("trajkit: error: writing to standard output: {e}");
            std::process::exit(2);
        }
    }
}

/// True when the error is, at any depth, a write to a closed pipe.
pub fn is_closed_pipe(e: &anyhow::Error) -> bool {
    e.chain().filter_map(|c| c.downcast_ref::<std::io::Error>()).any(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
}

/// A panic is a bug: one line naming it and where, never a backtrace. A panic on a
/// closed stdout (a `print!` left somewhere) ends the process quietly with status 0.
pub fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(0);
        }
        let place = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
        let _ = writeln!(std::io::stderr(), "trajkit: internal error (a bug, please report it): {message}{place}");
    }));
}
