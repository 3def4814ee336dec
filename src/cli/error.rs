//! How commands fail and end, and the one place that maps both to exit codes.

use std::fmt;

use crate::config::ConfigError;
use crate::db::StoreError;
use crate::sources::SourcesError;

/// A command that failed (exit code 1 unless it is a usage error).
#[derive(Debug)]
pub enum CliError {
    /// Wrong arguments found late (exit 2).
    Usage(String),
    /// Bad or unreadable configuration.
    Config(ConfigError),
    /// Storage failure.
    Store(StoreError),
    /// Standard output was closed by its reader (`export | head -1`): the command
    /// ends quietly with exit 0, as a filter in a pipe should.
    ClosedStdout,
    /// Anything else (I/O, a server that cannot start, a source that is not there).
    Other(String),
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Usage(m) | CliError::Other(m) => f.write_str(m),
            CliError::Config(e) => e.fmt(f),
            CliError::Store(e) => e.fmt(f),
            CliError::ClosedStdout => f.write_str("standard output closed"),
        }
    }
}

impl From<ConfigError> for CliError {
    fn from(e: ConfigError) -> Self {
        match e {
            // A group named on the command line that is not configured (exit 2).
            ConfigError::UnknownGroup(e) => CliError::Usage(format!("--group: {e}")),
            e => CliError::Config(e),
        }
    }
}

impl From<StoreError> for CliError {
    fn from(e: StoreError) -> Self {
        CliError::Store(e)
    }
}

impl From<SourcesError> for CliError {
    fn from(e: SourcesError) -> Self {
        match e {
            SourcesError::Config(e) => e.into(),
            SourcesError::Store(e) => CliError::Store(e),
            SourcesError::NotFound(m) => CliError::Other(m),
        }
    }
}

/// How a command that did not fail ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Everything worked (exit 0).
    Success,
    /// `run` stored what it could but some sources failed (exit 3).
    SourcesFailed,
}

/// The process exit code of a command's result, and whether the error (if any) is
/// worth logging: 0 success (and a closed standard output), 1 error, 2 usage error, 3
/// `run` with failed sources.
pub fn exit_code(result: &Result<Outcome, CliError>) -> (u8, bool) {
    match result {
        Ok(Outcome::Success) | Err(CliError::ClosedStdout) => (0, false),
        Ok(Outcome::SourcesFailed) => (3, false),
        Err(CliError::Usage(_)) => (2, true),
        Err(_) => (1, true),
    }
}

/// The exit code of a command line that could not be parsed.
pub const USAGE_EXIT: u8 = 2;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes() {
        assert_eq!(exit_code(&Ok(Outcome::Success)), (0, false));
        assert_eq!(exit_code(&Ok(Outcome::SourcesFailed)), (3, false));
        assert_eq!(exit_code(&Err(CliError::ClosedStdout)), (0, false));
        assert_eq!(exit_code(&Err(CliError::Usage("x".into()))), (2, true));
        assert_eq!(exit_code(&Err(CliError::Other("x".into()))), (1, true));
    }
}
