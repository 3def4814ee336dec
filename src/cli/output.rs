//! Writing to standard output without panicking: `print!` panics when stdout is
//! closed, and with `panic = "abort"` that would kill the process. A reader that went
//! away (`export | head -1`) ends the command quietly instead.

use std::io::{self, Write};

use super::CliError;

/// Writes `bytes` to standard output and flushes. A closed pipe becomes
/// [`CliError::ClosedStdout`] (exit 0, nothing logged); other errors are reported.
pub fn print(bytes: &[u8]) -> Result<(), CliError> {
    let mut out = io::stdout().lock();
    out.write_all(bytes)
        .and_then(|()| out.flush())
        .map_err(|e| match e.kind() {
            io::ErrorKind::BrokenPipe => CliError::ClosedStdout,
            _ => CliError::Io {
                what: "writing output".into(),
                source: e,
            },
        })
}

/// Writes notes for a person (nothing found, a list cut short) to standard error, one
/// per line: standard output holds only the lines scripts parse. Like the output, a
/// closed stderr is no reason to fail.
pub fn notes(notes: &[String]) {
    let mut err = io::stderr().lock();
    for n in notes {
        let _ = writeln!(err, "{n}");
    }
}
