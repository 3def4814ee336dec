//! Command-line parsing and the commands themselves. `main.rs` only calls [`parse`] and
//! [`execute`] and turns the outcome into an exit code.

use std::ffi::OsString;
use std::fmt;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

use lexopt::prelude::*;

use crate::config::{self, ConfigError, Kind, Paths};
use crate::db::{self, StoreError};
use crate::format::{Family, Format, RenderOptions, TypeFilter};
use crate::status;

/// The text of `--help`.
pub const USAGE: &str = "\
ripe-cidr-collector: keeps lists of IP prefixes announced by autonomous systems and
of addresses of host names, for policy routing and firewalls.

Usage: ripe-cidr-collector [--data-dir DIR] [--db FILE] [-v | -q] COMMAND

Commands:
  run                         collect every source once, then exit
                              (exit 3 when a source failed; the others are stored)
  daemon [--listen ADDR]      collect on schedule; with --listen also serve the API
  serve  [--listen ADDR]      serve the HTTP API only (default from config, 127.0.0.1:8080)
  export [--type all|cidr|fqdn] [--format text|json|nft|ipset|routeros]
         [--family 4|6] [--aggregate] [--table NAME] [--set NAME] [-o FILE]
                              print the stored addresses (or write FILE atomically)
  asn  list | add ASN | remove ASN [--purge]
                              manage ASN sources (62041, AS62041); --purge also
                              deletes the stored prefixes now instead of by TTL
  fqdn list | add FQDN | remove FQDN [--purge]
                              manage host-name sources
  status [--json]             daemon heartbeat, last run, last error, counts

Options:
  --data-dir DIR   data directory (config.json, status.json); default $RIPE_DATA_DIR,
                   else /var/lib/ripe-cidr-collector
  --db FILE        SQLite database; default $RIPE_DB, else DIR/ripe.db
  -v, --verbose    more log output (debug; release builds keep info and above)
  -q, --quiet      only warnings and errors
  -h, --help       this text
  -V, --version    the version

Exit codes: 0 success, 1 error (config, storage, I/O), 2 usage error,
3 `run` finished but at least one source failed.
";

/// What a usage error prints after its message.
pub const USAGE_HINT: &str =
    "Usage: ripe-cidr-collector [--data-dir DIR] [--db FILE] [-v | -q] COMMAND
Run `ripe-cidr-collector --help` for the commands and options.";

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

/// A parsed command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cli {
    /// Where the files are.
    pub paths: Paths,
    /// Log level.
    pub verbosity: Verbosity,
    /// What to do.
    pub command: Command,
}

/// What to do with a source list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceAction {
    /// Print the configured sources.
    List,
    /// Add one.
    Add(String),
    /// Remove one; with `purge`, delete its stored values now.
    Remove {
        /// The source as given.
        source: String,
        /// Delete its values now instead of letting them age out.
        purge: bool,
    },
}

/// A command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Print the help text.
    Help,
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
    },
    /// Manage a source list.
    Sources(Kind, SourceAction),
    /// Show the daemon's status.
    Status {
        /// As JSON.
        json: bool,
    },
}

/// A command line that cannot be understood (exit code 2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<lexopt::Error> for UsageError {
    fn from(e: lexopt::Error) -> Self {
        UsageError(e.to_string())
    }
}

fn text(v: OsString, what: &str) -> Result<String, UsageError> {
    v.into_string()
        .map_err(|v| UsageError(format!("{what}: {v:?} is not valid UTF-8")))
}

fn parsed<T: std::str::FromStr>(v: OsString, what: &str) -> Result<T, UsageError>
where
    T::Err: fmt::Display,
{
    let s = text(v, what)?;
    s.parse::<T>()
        .map_err(|e| UsageError(format!("{what}: {e}")))
}

/// Parses the arguments (without the program name). Global options may stand before
/// or after the command. `env` looks up `RIPE_DATA_DIR` and `RIPE_DB`.
pub fn parse(
    args: impl IntoIterator<Item = OsString>,
    env: impl Fn(&str) -> Option<OsString>,
) -> Result<Cli, UsageError> {
    let mut p = lexopt::Parser::from_args(args);
    let mut data_dir: Option<PathBuf> = None;
    let mut db_path: Option<PathBuf> = None;
    let mut verbosity = Verbosity::Normal;
    let mut words: Vec<String> = Vec::new();
    let mut listen = None;
    let mut options = RenderOptions::default();
    let mut output = None;
    let mut purge = false;
    let mut json = false;
    let mut help = false;
    let mut version = false;
    // Options that belong to one command, checked once the command is known.
    let mut seen: Vec<&'static str> = Vec::new();
    while let Some(arg) = p.next()? {
        match arg {
            Long("data-dir") => data_dir = Some(p.value()?.into()),
            Long("db") => db_path = Some(p.value()?.into()),
            Short('v') | Long("verbose") => verbosity = Verbosity::Verbose,
            Short('q') | Long("quiet") => verbosity = Verbosity::Quiet,
            Short('h') | Long("help") => help = true,
            Short('V') | Long("version") => version = true,
            Long("listen") => {
                listen = Some(
                    parsed::<String>(p.value()?, "--listen")
                        .and_then(|s| config::parse_listen(&s).map_err(UsageError))?,
                );
                seen.push("--listen");
            }
            Long("type") => {
                options.type_filter = parsed::<TypeFilter>(p.value()?, "--type")?;
                seen.push("--type");
            }
            Long("format") => {
                options.format = parsed::<Format>(p.value()?, "--format")?;
                seen.push("--format");
            }
            Long("family") => {
                options.family = Some(parsed::<Family>(p.value()?, "--family")?);
                seen.push("--family");
            }
            Long("aggregate") => {
                options.aggregate = true;
                seen.push("--aggregate");
            }
            Long("table") => {
                options.table = text(p.value()?, "--table")?;
                seen.push("--table");
            }
            Long("set") => {
                options.set = text(p.value()?, "--set")?;
                seen.push("--set");
            }
            Short('o') | Long("output") => {
                output = Some(PathBuf::from(p.value()?));
                seen.push("-o");
            }
            Long("purge") => {
                purge = true;
                seen.push("--purge");
            }
            Long("json") => {
                json = true;
                seen.push("--json");
            }
            Value(v) => words.push(text(v, "argument")?),
            other => return Err(other.unexpected().into()),
        }
    }
    if data_dir.as_ref().is_some_and(|d| d.as_os_str().is_empty()) {
        return Err(UsageError("--data-dir must not be empty".into()));
    }
    if db_path.as_ref().is_some_and(|d| d.as_os_str().is_empty()) {
        return Err(UsageError("--db must not be empty".into()));
    }
    let data_dir = data_dir
        .or_else(|| {
            env("RIPE_DATA_DIR")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        })
        .unwrap_or_else(|| PathBuf::from(config::DEFAULT_DATA_DIR));
    let db_path = db_path.or_else(|| env("RIPE_DB").filter(|v| !v.is_empty()).map(PathBuf::from));
    let paths = Paths::new(data_dir, db_path);
    let done = |command| {
        Ok(Cli {
            paths: paths.clone(),
            verbosity,
            command,
        })
    };
    if help {
        return done(Command::Help);
    }
    if version {
        return done(Command::Version);
    }
    let mut words = words.into_iter();
    let Some(cmd) = words.next() else {
        return Err(UsageError("no command given".into()));
    };
    let rest: Vec<String> = words.collect();
    let allowed: &[&str] = match cmd.as_str() {
        "daemon" | "serve" => &["--listen"],
        "export" => &[
            "--type",
            "--format",
            "--family",
            "--aggregate",
            "--table",
            "--set",
            "-o",
        ],
        "asn" | "fqdn" => &["--purge"],
        "status" => &["--json"],
        _ => &[],
    };
    if let Some(bad) = seen.iter().find(|o| !allowed.contains(o)) {
        return Err(UsageError(format!("{bad} does not go with `{cmd}`")));
    }
    let no_more = |rest: &[String]| match rest.first() {
        Some(extra) => Err(UsageError(format!(
            "unexpected argument {extra:?} after `{cmd}`"
        ))),
        None => Ok(()),
    };
    let command = match cmd.as_str() {
        "run" => {
            no_more(&rest)?;
            Command::Run
        }
        "daemon" => {
            no_more(&rest)?;
            Command::Daemon { listen }
        }
        "serve" => {
            no_more(&rest)?;
            Command::Serve { listen }
        }
        "export" => {
            no_more(&rest)?;
            options.check().map_err(|e| UsageError(e.0))?;
            Command::Export { options, output }
        }
        "status" => {
            no_more(&rest)?;
            Command::Status { json }
        }
        "asn" | "fqdn" => {
            let kind = if cmd == "asn" { Kind::Asn } else { Kind::Fqdn };
            let what = kind.as_str().to_ascii_uppercase();
            let action = match rest.as_slice() {
                [a] if a == "list" => SourceAction::List,
                [a, s] if a == "add" => SourceAction::Add(kind.normalize(s).map_err(UsageError)?),
                [a, s] if a == "remove" => SourceAction::Remove {
                    source: kind.normalize(s).map_err(UsageError)?,
                    purge,
                },
                [a] if a == "add" || a == "remove" => {
                    return Err(UsageError(format!("`{cmd} {a}` needs the {what} to {a}")))
                }
                [] => {
                    return Err(UsageError(format!(
                        "`{cmd}` needs list, add {what} or remove {what}"
                    )))
                }
                [a, ..] if !["list", "add", "remove"].contains(&a.as_str()) => {
                    return Err(UsageError(format!(
                        "unknown `{cmd}` action {a:?}: expected list, add or remove"
                    )))
                }
                [_, ..] => return Err(UsageError(format!("too many arguments for `{cmd}`"))),
            };
            if purge && !matches!(action, SourceAction::Remove { .. }) {
                return Err(UsageError("--purge goes with `remove`".into()));
            }
            Command::Sources(kind, action)
        }
        other => return Err(UsageError(format!("unknown command {other:?}"))),
    };
    done(command)
}

/// A command that failed (exit code 1 unless it is a usage error).
#[derive(Debug)]
pub enum CliError {
    /// Wrong arguments found late (exit 2).
    Usage(String),
    /// Bad or unreadable configuration.
    Config(ConfigError),
    /// Storage failure.
    Store(StoreError),
    /// Anything else (I/O, a server that cannot start).
    Other(String),
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Usage(m) | CliError::Other(m) => f.write_str(m),
            CliError::Config(e) => e.fmt(f),
            CliError::Store(e) => e.fmt(f),
        }
    }
}

impl From<ConfigError> for CliError {
    fn from(e: ConfigError) -> Self {
        CliError::Config(e)
    }
}

impl From<StoreError> for CliError {
    fn from(e: StoreError) -> Self {
        CliError::Store(e)
    }
}

impl CliError {
    /// The process exit code for this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_) => 2,
            _ => 1,
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

fn out_err(e: std::io::Error) -> CliError {
    CliError::Other(format!("writing output: {e}"))
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
    for (what, dir) in [
        ("data directory", paths.data_dir.as_path()),
        ("database directory", db_dir),
    ] {
        if !dir.is_dir() {
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
        Command::Export { .. } | Command::Status { .. } | Command::Sources(_, SourceAction::List)
    ) {
        require_existing(paths)?;
    }
    match &cli.command {
        Command::Help => {
            print!("{USAGE}");
            Ok(Outcome::Success)
        }
        Command::Version => {
            println!("ripe-cidr-collector {}", env!("CARGO_PKG_VERSION"));
            Ok(Outcome::Success)
        }
        Command::Export { options, output } => {
            let db = db::open(paths)?;
            let bytes = crate::listing(&db, options)?;
            match output {
                Some(path) => crate::util::write_atomic(path, &bytes)
                    .map_err(|e| CliError::Other(format!("{}: {e}", path.display())))?,
                None => std::io::stdout()
                    .lock()
                    .write_all(&bytes)
                    .map_err(out_err)?,
            }
            Ok(Outcome::Success)
        }
        Command::Sources(kind, action) => sources(paths, *kind, action),
        Command::Status { json } => show_status(paths, *json),
        Command::Run => network::run(paths),
        Command::Daemon { listen } => network::daemon(paths, *listen),
        Command::Serve { listen } => network::serve(paths, *listen),
    }
}

/// How a source is shown to people: `AS62041` or the host name.
pub fn display_source(kind: Kind, source: &str) -> String {
    match kind {
        Kind::Asn => format!("AS{source}"),
        Kind::Fqdn => source.to_string(),
    }
}

fn sources(paths: &Paths, kind: Kind, action: &SourceAction) -> Result<Outcome, CliError> {
    let cfg_path = paths.config();
    match action {
        SourceAction::List => {
            let cfg = config::load_logged(&cfg_path)?;
            // Counts are a bonus: a storage problem must not hide the configured list.
            let stored = db::open(paths)
                .and_then(|db| db.sources(kind))
                .unwrap_or_else(|e| {
                    log::warn!("{e}");
                    Vec::new()
                });
            let mut out = String::new();
            for s in cfg.sources(kind) {
                match stored.iter().find(|x| &x.source == s) {
                    Some(x) => out.push_str(&format!("{s}\t{}\t{}\n", x.count, x.last_seen)),
                    None => out.push_str(&format!("{s}\t0\t-\n")),
                }
            }
            std::io::stdout()
                .lock()
                .write_all(out.as_bytes())
                .map_err(out_err)?;
            Ok(Outcome::Success)
        }
        SourceAction::Add(s) => {
            let (norm, added) = config::add_source(&cfg_path, kind, s)?;
            let shown = display_source(kind, &norm);
            if added {
                log::info!("added {shown}; a running daemon collects it within seconds");
            } else {
                log::info!("{shown} is already configured");
            }
            Ok(Outcome::Success)
        }
        SourceAction::Remove { source, purge } => {
            let (norm, removed) = config::remove_source(&cfg_path, kind, source)?;
            let shown = display_source(kind, &norm);
            let purged = if *purge {
                Some(db::open(paths)?.purge_source(kind, &norm)?)
            } else {
                None
            };
            match (removed, purged) {
                (false, None) => {
                    return Err(CliError::Other(format!("{shown} is not configured")));
                }
                (false, Some(n)) => {
                    log::info!("{shown} was not configured; deleted its {n} stored values")
                }
                (true, Some(n)) => log::info!("removed {shown} and deleted its {n} stored values"),
                (true, None) => log::info!("removed {shown}; its values expire after ttl_days"),
            }
            Ok(Outcome::Success)
        }
    }
}

/// Shows what is known even when the configuration or the database is broken (that
/// is when an administrator asks), then exits 1 if something was.
fn show_status(paths: &Paths, json: bool) -> Result<Outcome, CliError> {
    let mut problems: Vec<String> = Vec::new();
    let cfg = config::load_logged(&paths.config())
        .map_err(|e| problems.push(format!("config: {e}")))
        .ok();
    let st = status::read(&paths.status())
        .map_err(|e| problems.push(format!("status: {e}")))
        .ok()
        .flatten();
    let counts = db::open(paths)
        .and_then(|db| db.counts())
        .map_err(|e| problems.push(format!("database: {e}")))
        .ok();
    let mut out = String::new();
    if json {
        let v = serde_json::json!({
            "status": st,
            "counts": counts.map(|c| serde_json::json!({"asn": c.0, "fqdn": c.1})),
            "asns": cfg.as_ref().map(|c| &c.asns),
            "fqdns": cfg.as_ref().map(|c| &c.fqdns),
            "errors": problems,
        });
        out = v.to_string();
        out.push('\n');
    } else {
        let st = st.unwrap_or_default();
        let or_never = |v: &Option<String>| v.clone().unwrap_or_else(|| "never".into());
        let age = st
            .heartbeat
            .as_deref()
            .and_then(crate::util::parse_iso)
            .map(|t| crate::util::unix_now() - t);
        let daemon = match (&st.heartbeat, st.pid, age) {
            (Some(hb), Some(pid), Some(a)) if a <= 180 => {
                format!("running (pid {pid}, heartbeat {hb}, {a} s ago)")
            }
            (Some(hb), Some(pid), _) => {
                format!("not responding? last heartbeat {hb} (pid {pid})")
            }
            (Some(hb), None, _) => format!("stopped (last heartbeat {hb})"),
            _ => "no heartbeat recorded".into(),
        };
        out.push_str(&format!("daemon:        {daemon}\n"));
        out.push_str(&format!(
            "last run:      {} .. {}\n",
            or_never(&st.last_run_started),
            or_never(&st.last_run_finished)
        ));
        out.push_str(&format!("last success:  {}\n", or_never(&st.last_success)));
        out.push_str(&format!(
            "last error:    {}\n",
            st.last_error.clone().unwrap_or_else(|| "none".into())
        ));
        out.push_str(&format!(
            "next run:      {}\n",
            st.next_run.clone().unwrap_or_else(|| "-".into())
        ));
        if let Some(cfg) = &cfg {
            out.push_str(&format!(
                "sources:       {} ASNs, {} FQDNs\n",
                cfg.asns.len(),
                cfg.fqdns.len()
            ));
        }
        if let Some((a, f)) = counts {
            out.push_str(&format!("stored:        {a} ASN values, {f} FQDN values\n"));
        }
        for (source, why) in &st.failures {
            out.push_str(&format!("failed:        {source}: {why}\n"));
        }
        for (path, why) in &st.output_failures {
            out.push_str(&format!("output failed: {path}: {why}\n"));
        }
        for p in &problems {
            out.push_str(&format!("problem:       {p}\n"));
        }
    }
    std::io::stdout()
        .lock()
        .write_all(out.as_bytes())
        .map_err(out_err)?;
    match problems.len() {
        0 => Ok(Outcome::Success),
        n => Err(CliError::Other(format!("{n} problem(s), see above"))),
    }
}

/// The commands that need the network features; without them they say so.
mod network {
    use super::*;

    #[cfg(feature = "collect")]
    pub fn run(paths: &Paths) -> Result<Outcome, CliError> {
        crate::collect::run_command(paths)
    }

    /// The API (with `--listen`) runs beside the daemon and stops with it.
    #[cfg(feature = "collect")]
    pub fn daemon(paths: &Paths, listen: Option<SocketAddr>) -> Result<Outcome, CliError> {
        // The API first: when its address is taken, fail before claiming status.json.
        #[cfg(feature = "api")]
        let _api = match listen {
            Some(addr) => {
                let server = crate::api::spawn(paths, addr).map_err(CliError::Other)?;
                log::info!("API listening on {}", server.addr());
                Some(server)
            }
            None => None,
        };
        #[cfg(not(feature = "api"))]
        if listen.is_some() {
            return Err(CliError::Other(
                "--listen is not available: this binary was built without the `api` feature".into(),
            ));
        }
        crate::daemon::run(paths).map_err(|e| CliError::Other(e.to_string()))?;
        Ok(Outcome::Success)
    }

    #[cfg(feature = "api")]
    pub fn serve(paths: &Paths, listen: Option<SocketAddr>) -> Result<Outcome, CliError> {
        crate::api::serve_command(paths, listen)
    }

    #[cfg(not(feature = "collect"))]
    pub fn run(_: &Paths) -> Result<Outcome, CliError> {
        Err(missing("run", "collect"))
    }

    #[cfg(not(feature = "collect"))]
    pub fn daemon(_: &Paths, _: Option<SocketAddr>) -> Result<Outcome, CliError> {
        Err(missing("daemon", "collect"))
    }

    #[cfg(not(feature = "api"))]
    pub fn serve(_: &Paths, _: Option<SocketAddr>) -> Result<Outcome, CliError> {
        Err(missing("serve", "api"))
    }

    #[allow(dead_code)]
    fn missing(cmd: &str, feature: &str) -> CliError {
        CliError::Other(format!(
            "`{cmd}` is not available: this binary was built without the `{feature}` feature"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Result<Cli, UsageError> {
        parse(args.iter().map(OsString::from), |_| None)
    }

    #[test]
    fn parses_commands() {
        let c = p(&["--data-dir", "/d", "asn", "add", "AS1"]).unwrap();
        assert_eq!(c.paths.db, PathBuf::from("/d/ripe.db"));
        assert_eq!(
            c.command,
            Command::Sources(Kind::Asn, SourceAction::Add("1".into()))
        );
        let c = p(&["fqdn", "remove", "x.org", "--purge", "-q"]).unwrap();
        assert_eq!(c.verbosity, Verbosity::Quiet);
        assert!(matches!(
            c.command,
            Command::Sources(Kind::Fqdn, SourceAction::Remove { purge: true, .. })
        ));
        let c = p(&[
            "export",
            "--format=nft",
            "--family",
            "6",
            "--set",
            "tg",
            "-o",
            "/tmp/x",
        ])
        .unwrap();
        match c.command {
            Command::Export { options, output } => {
                assert_eq!(options.format, Format::Nft);
                assert_eq!(options.family, Some(Family::V6));
                assert_eq!(options.set, "tg");
                assert_eq!(output, Some(PathBuf::from("/tmp/x")));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(p(&["--help"]).unwrap().command, Command::Help);
        assert_eq!(p(&["-V"]).unwrap().command, Command::Version);
        let c = parse(["status"].map(OsString::from), |k| {
            (k == "RIPE_DB").then(|| OsString::from("/ram/r.db"))
        })
        .unwrap();
        assert_eq!(c.paths.db, PathBuf::from("/ram/r.db"));
        assert_eq!(c.paths.data_dir, PathBuf::from(config::DEFAULT_DATA_DIR));
    }

    #[test]
    fn usage_errors() {
        for args in [
            &[][..],
            &["frobnicate"],
            &["run", "extra"],
            &["asn"],
            &["asn", "add"],
            &["asn", "delete", "1"],
            &["asn", "list", "--purge"],
            &["asn", "add", "ASX"],
            &["fqdn", "add", "1.2.3.4"],
            &["fqdn", "remove", "bad name"],
            &["--db", "", "status"],
            &["export", "--format", "yaml"],
            &["export", "--family", "5"],
            &["export", "--set", "bad name"],
            &["run", "--json"],
            &["serve", "--listen", "nowhere"],
            &["--bogus", "run"],
            &["--data-dir"],
        ] {
            assert!(p(args).is_err(), "{args:?}");
        }
        assert!(p(&["export", "--format", "yaml"])
            .unwrap_err()
            .0
            .contains("\"yaml\""));
    }
}
