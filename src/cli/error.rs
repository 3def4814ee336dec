//! How commands fail and end, and the one place that maps both to exit codes.

use crate::config::ConfigError;
use crate::db::StoreError;
use crate::sources::SourcesError;

/// A command that failed (exit code 1 unless it is a usage error).
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Wrong arguments found late (exit 2).
    #[error("{0}")]
    Usage(String),
    /// Bad or unreadable configuration.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Storage failure.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The daemon could not run, or be found or signalled.
    #[cfg(feature = "collect")]
    #[error(transparent)]
    Daemon(#[from] crate::daemon::DaemonError),
    /// The store is empty because a damaged database was just moved aside: no list is
    /// handed out until a run has filled it again.
    #[error(transparent)]
    Emptied(#[from] crate::listing::EmptiedByDamage),
    /// Standard output was closed by its reader (`export | head -1`): the command
    /// ends quietly with exit 0, as a filter in a pipe should.
    #[error("standard output closed")]
    ClosedStdout,
    /// An I/O error, with what was being done.
    #[error("{what}: {}", crate::util::io_reason(.source))]
    Io {
        /// What failed (`writing output`, a file name).
        what: String,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// A collection that failed as a whole.
    #[cfg(feature = "collect")]
    #[error(transparent)]
    Run(#[from] crate::collect::run::RunError),
    /// An upstream failed a request made for the user (`asn search`): exit 3.
    #[error("{0}")]
    Upstream(String),
    /// Anything else (a server that cannot start, a source that is not there).
    #[error("{0}")]
    Other(String),
}

impl From<SourcesError> for CliError {
    fn from(e: SourcesError) -> Self {
        match e {
            SourcesError::Config(e) => CliError::Config(e),
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
    /// `lookup` found nothing stored for the address (exit 1, so that scripts can test
    /// membership; its note on stderr says so, nothing more is logged).
    NotFound,
    /// `explain` found a broken link, said so on stdout (exit 1).
    NotRouted,
}

/// The process exit code of a command's result, and whether the error (if any) is
/// worth logging: 0 success (and a closed standard output), 1 error (and `lookup`
/// finding nothing), 2 usage error, 3 `run` with failed sources.
pub fn exit_code(result: &Result<Outcome, CliError>) -> (u8, bool) {
    match result {
        Ok(Outcome::Success) | Err(CliError::ClosedStdout) => (0, false),
        Ok(Outcome::SourcesFailed) => (3, false),
        Err(CliError::Upstream(_)) => (3, true),
        Ok(Outcome::NotFound | Outcome::NotRouted) => (1, false),
        Err(CliError::Usage(_)) => (2, true),
        // A group named on the command line or in a request that is not configured.
        Err(CliError::Config(ConfigError::UnknownGroup(_) | ConfigError::Refused(_))) => (2, true),
        Err(_) => (1, true),
    }
}

/// The exit code of a command line that could not be parsed.
pub const USAGE_EXIT: u8 = 2;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causes_are_kept() {
        use std::error::Error;
        let e = CliError::Io {
            what: "writing output".into(),
            source: std::io::Error::other("disk full"),
        };
        assert_eq!(e.to_string(), "writing output: disk full");
        assert_eq!(e.source().unwrap().to_string(), "disk full");
        // Wrapped errors are the same error: their own cause comes through.
        let store = StoreError::Other("locked".into());
        let wrapped = CliError::from(store);
        assert_eq!(
            wrapped.to_string(),
            StoreError::Other("locked".into()).to_string()
        );
    }

    #[test]
    fn codes() {
        assert_eq!(exit_code(&Ok(Outcome::Success)), (0, false));
        assert_eq!(exit_code(&Ok(Outcome::SourcesFailed)), (3, false));
        assert_eq!(exit_code(&Ok(Outcome::NotFound)), (1, false));
        assert_eq!(exit_code(&Ok(Outcome::NotRouted)), (1, false));
        assert_eq!(exit_code(&Err(CliError::ClosedStdout)), (0, false));
        assert_eq!(exit_code(&Err(CliError::Usage("x".into()))), (2, true));
        assert_eq!(exit_code(&Err(CliError::Other("x".into()))), (1, true));
    }
}
