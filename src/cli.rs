//! The command line: `args` parses it, each command has its own file, `error` maps
//! outcomes to exit codes. `main.rs` only calls [`parse`] and [`execute`].

mod args;
mod changes;
mod check;
#[cfg(feature = "completions")]
mod complete;
mod daemon;
mod error;
mod explain;
mod export;
mod flags;
mod group_route;
mod groups;
pub mod healthcheck;
mod help;
mod lookup;
mod output;
mod render;
mod run;
mod serve;
mod services;
mod snapshot;
mod sources;
mod status;
mod stderr_log;
#[cfg(unix)]
mod syslog;
mod verify;

use std::net::SocketAddr;
use std::path::PathBuf;

pub use args::{command_word, parse, UsageError, USAGE_HINT};
pub use error::{CliError, Outcome};
pub use help::usage_hint;
pub use help::Cmd;

use crate::config::Paths;
use crate::format::{RenderOptions, TypeFilter};
use crate::source::Kind;

/// How chatty the log is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verbosity {
    /// Warnings and errors.
    Quiet,
    /// Informational messages too (default).
    Normal,
    /// Debug messages too.
    Verbose,
}

/// Sets up logging for `cli`: to stderr (procd or a terminal adds the time), or with
/// `--syslog` to the system log, each record with its priority. Without a system log
/// to write to, stderr it is, and the first line says why.
pub fn init_logging(cli: &Cli) {
    let level = match cli.verbosity {
        Verbosity::Quiet => log::LevelFilter::Warn,
        Verbosity::Normal => log::LevelFilter::Info,
        Verbosity::Verbose => log::LevelFilter::Debug,
    };
    #[cfg(unix)]
    if cli.syslog {
        let path = std::path::Path::new(syslog::DEV_LOG);
        if let Some(logger) = syslog::Syslog::connect(path, level) {
            if log::set_boxed_logger(Box::new(logger)).is_ok() {
                log::set_max_level(level);
            }
            return;
        }
    }
    stderr_log::init(level);
    if cli.syslog {
        log::warn!("--syslog: no system log at /dev/log; logging to stderr");
    }
}

/// A parsed command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cli {
    /// Where the files are.
    pub paths: Paths,
    /// Log level.
    pub verbosity: Verbosity,
    /// Log to syslog instead of stderr.
    pub syslog: bool,
    /// What to do.
    pub command: Command,
    /// The command named, if any (its usage follows a usage error).
    pub cmd: Option<Cmd>,
}

/// What to do with a source list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceAction {
    /// Print the configured sources (of one group, or of all with their groups); with
    /// `json` the bytes of the API's `GET /asns` (or the kind's route).
    List {
        /// `--group`, if given.
        group: Option<String>,
        /// `--json`.
        json: bool,
    },
    /// Add some to a group (all or nothing).
    Add {
        /// The sources, normalised.
        sources: Vec<String>,
        /// The group (`default` unless `--group`).
        group: String,
    },
    /// Remove some from a group; with `purge`, delete their stored values now.
    Remove {
        /// The sources, normalised.
        sources: Vec<String>,
        /// The group (`default` unless `--group`).
        group: String,
        /// Delete its values now instead of letting them age out.
        purge: bool,
    },
    /// `asn search TEXT`: ASNs by their holder's name, from RIPEstat.
    Search {
        /// The text, checked (`source::check_search_text`).
        text: String,
        /// `--limit` (default 8).
        limit: usize,
        /// `--json`: the bytes of `GET /asn-search`.
        json: bool,
    },
}

/// A command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Print the help text: the overview, or one command's.
    Help(Option<Cmd>),
    /// Print the version.
    Version,
    /// Collect once.
    Run,
    /// Collect on schedule, optionally serving the API.
    Daemon {
        /// Serve the API on this address.
        listen: Option<SocketAddr>,
    },
    /// Serve the API.
    Serve {
        /// Listen here instead of `api.listen`.
        listen: Option<SocketAddr>,
    },
    /// Render the stored addresses.
    Export {
        /// What and how.
        options: RenderOptions,
        /// Write here atomically instead of to stdout.
        output: Option<PathBuf>,
        /// Each value with its sources and times (JSON only).
        details: bool,
    },
    /// Show the stored rows that contain an address or overlap a prefix.
    Lookup {
        /// The address or prefix as given (checked by the command).
        query: String,
        /// As JSON (the bytes of `GET /lookup`).
        json: bool,
    },
    /// Walk the chain from the stored value to the route for an address.
    Explain {
        /// The address as given (checked by the command).
        address: String,
        /// The group to follow (`None`: the first that lists it).
        group: Option<String>,
        /// As JSON (the bytes of `GET /explain`).
        json: bool,
    },
    /// Show the values added and removed since a time.
    Changes {
        /// Only the sources of this group (`*` or `None`: every source).
        group: Option<String>,
        /// `YYYY-MM-DDTHH:MM:SSZ` as given (checked by the command); 24 hours ago
        /// when `None`.
        since: Option<String>,
        /// Which sources.
        type_filter: TypeFilter,
        /// As JSON (the bytes of `GET /changes`).
        json: bool,
    },
    /// Manage a source list.
    Sources(Kind, SourceAction),
    /// Check `config.json` and print the configuration in effect.
    Check,
    /// Print a shell's completion script (`bash`, `zsh`, `fish`).
    Completions(String),
    /// Print the man page.
    Manpage,
    /// Manage the groups.
    Group(groups::GroupAction),
    /// Manage the exclusions.
    Exclude(groups::ExcludeAction),
    /// The service catalog and the services groups name.
    Service(services::ServiceAction),
    /// Show the daemon's status.
    Status {
        /// As JSON.
        json: bool,
    },
    /// Check the API or the daemon for a container health check.
    Healthcheck(healthcheck::Check),
    /// Write the snapshot file now.
    Snapshot,
    /// Write every configured output now.
    Render {
        /// Only the netlink loads: no files written, no commands run.
        load_only: bool,
    },
    /// Signal the running daemon to collect now.
    CollectNow,
    /// Apply the held answer of a source.
    Confirm(String),
}

/// Commands that only read refuse a data directory (or database directory) that does
/// not exist instead of creating it: a typo in `--data-dir` must not export an empty
/// list that a firewall would then load.
fn require_existing(paths: &Paths) -> Result<(), CliError> {
    let db_dir = paths
        .db
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    // After a reboot the RAM directory of the database is gone: the snapshot restores it.
    let restorable = paths.snapshot.as_ref().is_some_and(|s| s.is_file());
    for (what, dir, restores) in [
        ("data directory", paths.data_dir.as_path(), false),
        ("database directory", db_dir, restorable),
    ] {
        if !dir.is_dir() && !restores {
            return Err(CliError::Other(format!(
                "{what} {} does not exist (check --data-dir/--db; `asn add` or `run` create it)",
                dir.display()
            )));
        }
    }
    Ok(())
}

/// Runs a parsed command.
pub fn execute(cli: &Cli) -> Result<Outcome, CliError> {
    let paths = &cli.paths;
    if matches!(
        cli.command,
        Command::Export { .. }
            | Command::Status { .. }
            | Command::Sources(_, SourceAction::List { .. })
            | Command::Snapshot
            | Command::Render { .. }
            | Command::CollectNow
            | Command::Lookup { .. }
            | Command::Explain { .. }
            | Command::Changes { .. }
            | Command::Confirm(_)
    ) {
        require_existing(paths)?;
    }
    match &cli.command {
        Command::Help(cmd) => {
            let text = cmd.map_or_else(help::overview, help::command);
            output::print(text.as_bytes()).map(|()| Outcome::Success)
        }
        Command::Version => {
            let v = format!("ripe-cidr-collector {}\n", env!("CARGO_PKG_VERSION"));
            output::print(v.as_bytes()).map(|()| Outcome::Success)
        }
        Command::Export {
            options,
            output,
            details,
        } => export::run(paths, options, output.as_deref(), *details),
        Command::Lookup { query, json } => lookup::run(paths, query, *json),
        Command::Explain {
            address,
            group,
            json,
        } => explain::run(paths, address, group.as_deref(), *json),
        Command::Changes {
            group,
            since,
            type_filter,
            json,
        } => changes::run(
            paths,
            group.as_deref(),
            since.as_deref(),
            *type_filter,
            *json,
        ),
        Command::Sources(kind, action) => sources::run(paths, *kind, action),
        Command::Check => check::run(paths),
        #[cfg(feature = "completions")]
        Command::Completions(shell) => {
            let text = match shell.as_str() {
                "bash" => complete::bash(),
                "zsh" => complete::zsh(),
                _ => complete::fish(),
            };
            output::print(text.as_bytes()).map(|()| Outcome::Success)
        }
        #[cfg(feature = "completions")]
        Command::Manpage => {
            output::print(complete::manpage().as_bytes()).map(|()| Outcome::Success)
        }
        #[cfg(not(feature = "completions"))]
        Command::Completions(_) | Command::Manpage => Err(missing(
            if cli.command == Command::Manpage {
                "manpage"
            } else {
                "completions"
            },
            "completions",
        )),
        Command::Group(action) => groups::group(paths, action),
        Command::Exclude(action) => groups::exclude(paths, action),
        Command::Service(action) => services::run(paths, action),
        Command::Status { json } => status::run(paths, *json),
        Command::Run => run::run(paths),
        Command::Daemon { listen } => daemon::run(paths, *listen),
        Command::Serve { listen } => serve::run(paths, *listen),
        Command::Healthcheck(check) => healthcheck::run(paths, check),
        Command::Snapshot => snapshot::run(paths),
        Command::Render { load_only } => render::run(paths, *load_only),
        Command::CollectNow => daemon::collect_now(paths),
        Command::Confirm(text) => {
            let (kind, source) = crate::sources::parse_any(text).map_err(CliError::Usage)?;
            crate::sources::confirm(paths, kind, &source)?;
            Ok(Outcome::Success)
        }
    }
}

/// The exit code of a command's result (see [`error::exit_code`]), printing the error
/// when it is worth telling: one line naming the program, not the Rust module a log
/// line would name, and for a usage error where to find the right usage.
pub fn finish(cli: &Cli, result: Result<Outcome, CliError>) -> u8 {
    let (code, tell) = error::exit_code(&result);
    match (&result, tell) {
        (Err(e @ CliError::Usage(_)), true) => {
            eprintln!("ripe-cidr-collector: {e}\n{}", usage_hint(cli.cmd))
        }
        (Err(e), true) => eprintln!("ripe-cidr-collector: {e}"),
        _ => {}
    }
    code
}

/// The exit code of a command line that could not be parsed.
pub use error::USAGE_EXIT;

/// A command that needs a cargo feature this binary was built without.
#[allow(dead_code)]
fn missing(cmd: &str, feature: &str) -> CliError {
    CliError::Other(format!(
        "`{cmd}` is not available: this binary was built without the `{feature}` feature"
    ))
}
