//! The command line: `--help` text and the parser. Global options may stand before or
//! after the command; options that belong to one command are checked once it is known.

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;

use lexopt::prelude::*;

use super::{Cli, Command, SourceAction, Verbosity};
use crate::config::{self, Paths};
use crate::format::{Family, Format, RenderOptions, TypeFilter};
use crate::source::Kind;

/// The text of `--help`.
pub const USAGE: &str = "\
ripe-cidr-collector: keeps lists of IP prefixes announced by autonomous systems and
of addresses of host names, for policy routing and firewalls.

Usage: ripe-cidr-collector [--data-dir DIR] [--db FILE] [--snapshot FILE] [-v | -q] COMMAND

Commands:
  run                         collect every source once, then exit
                              (exit 3 when a source failed; the others are stored)
  daemon [--listen ADDR]      collect on schedule; with --listen also serve the API
  serve  [--listen ADDR]      serve the HTTP API only (default from config, 127.0.0.1:8080)
  export [--type all|cidr|fqdn] [--format text|json|nft|ipset|routeros]
         [--family 4|6] [--aggregate] [--table NAME] [--set NAME] [--details]
         [-o FILE]            print the stored addresses (or write FILE atomically);
                              --details (with --format json): sources and times
                              of each value
  asn  list | add ASN | remove ASN [--purge]
                              manage ASN sources (62041, AS62041); --purge also
                              deletes the stored prefixes now instead of by TTL
  fqdn list | add FQDN | remove FQDN [--purge]
                              manage host-name sources
  status [--json]             daemon heartbeat, last run, last error, counts,
                              journal mode, last snapshot
  snapshot                    write the snapshot file now (needs --snapshot)
  collect-now                 make the running daemon collect every source now
                              (SIGUSR1; what OpenWrt sends when the WAN comes up)
  render [--load-only]        write every configured output now from the stored
                              data (files, netlink loads, commands), e.g. after
                              a firewall restart flushed the sets; --load-only:
                              only the netlink loads (no files, no commands: what
                              the OpenWrt firewall include runs)
  healthcheck api [--listen ADDR]
                              exit 0 when GET /health of the API answers 200 and
                              status ok within 3 s (default address: api.listen)
  healthcheck daemon [--max-age SECONDS]
                              exit 0 when status.json has the daemon's pid and a
                              heartbeat at most SECONDS old (default 180)
  lookup ADDR|PREFIX [--json] the stored values that contain the address or
                              overlap the prefix, with source and times
  changes [--since TS] [--type all|cidr|fqdn] [--json]
                              values added and removed since TS
                              (YYYY-MM-DDTHH:MM:SSZ, default 24 hours ago)

Options:
  --data-dir DIR   data directory (config.json, status.json); default $RIPE_DATA_DIR,
                   else /var/lib/ripe-cidr-collector
  --db FILE        SQLite database; default $RIPE_DB, else DIR/ripe.db
  --snapshot FILE  copy of the database on persistent storage, for a --db in RAM:
                   restored when the database is missing, rewritten atomically after
                   changes (at most every storage.snapshot_interval_hours, default 24),
                   on daemon stop and by `snapshot`; default $RIPE_SNAPSHOT, else none
  -v, --verbose    more log output (debug; release builds keep info and above)
  -q, --quiet      only warnings and errors
  --syslog         log to the system log (/dev/log, facility daemon) with each
                   message's priority instead of to stderr (the OpenWrt package
                   turns it on: procd files all of stderr as errors)
  -h, --help       this text
  -V, --version    the version

Exit codes: 0 success, 1 error (config, storage, I/O; unhealthy for healthcheck),
2 usage error, 3 `run` finished but at least one source failed.
";

/// What a usage error prints after its message.
pub const USAGE_HINT: &str =
    "Usage: ripe-cidr-collector [--data-dir DIR] [--db FILE] [--snapshot FILE] [-v | -q] COMMAND
Run `ripe-cidr-collector --help` for the commands and options.";

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
/// or after the command. `env` looks up `RIPE_DATA_DIR`, `RIPE_DB` and `RIPE_SNAPSHOT`.
pub fn parse(
    args: impl IntoIterator<Item = OsString>,
    env: impl Fn(&str) -> Option<OsString>,
) -> Result<Cli, UsageError> {
    let mut p = lexopt::Parser::from_args(args);
    let mut data_dir: Option<PathBuf> = None;
    let mut db_path: Option<PathBuf> = None;
    let mut snapshot: Option<PathBuf> = None;
    let mut verbosity = Verbosity::Normal;
    let mut words: Vec<String> = Vec::new();
    let mut listen = None;
    let mut options = RenderOptions::default();
    let mut output = None;
    let mut purge = false;
    let mut json = false;
    let mut max_age = None;
    let mut details = false;
    let mut since: Option<String> = None;
    let mut load_only = false;
    let mut syslog = false;
    let mut help = false;
    let mut version = false;
    // Options that belong to one command, checked once the command is known.
    let mut seen: Vec<&'static str> = Vec::new();
    while let Some(arg) = p.next()? {
        match arg {
            Long("data-dir") => data_dir = Some(p.value()?.into()),
            Long("db") => db_path = Some(p.value()?.into()),
            Long("snapshot") => snapshot = Some(p.value()?.into()),
            Short('v') | Long("verbose") => verbosity = Verbosity::Verbose,
            Short('q') | Long("quiet") => verbosity = Verbosity::Quiet,
            Long("syslog") => syslog = true,
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
            Long("max-age") => {
                let s = text(p.value()?, "--max-age")?;
                max_age = Some(s.parse::<u64>().map_err(|_| {
                    UsageError(format!("--max-age: invalid number of seconds {s:?}"))
                })?);
                seen.push("--max-age");
            }
            Long("details") => {
                details = true;
                seen.push("--details");
            }
            Long("since") => {
                // Checked by the command (a usage error there too).
                since = Some(text(p.value()?, "--since")?);
                seen.push("--since");
            }
            Long("load-only") => {
                load_only = true;
                seen.push("--load-only");
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
    if snapshot.as_ref().is_some_and(|d| d.as_os_str().is_empty()) {
        return Err(UsageError("--snapshot must not be empty".into()));
    }
    let data_dir = data_dir
        .or_else(|| {
            env("RIPE_DATA_DIR")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        })
        .unwrap_or_else(|| PathBuf::from(config::DEFAULT_DATA_DIR));
    let db_path = db_path.or_else(|| env("RIPE_DB").filter(|v| !v.is_empty()).map(PathBuf::from));
    let snapshot = snapshot.or_else(|| {
        env("RIPE_SNAPSHOT")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    });
    let paths = Paths::new(data_dir, db_path).with_snapshot(snapshot);
    if paths.snapshot.as_ref() == Some(&paths.db) {
        return Err(UsageError(
            "--snapshot must not be the database itself (--db)".into(),
        ));
    }
    let done = |command| {
        Ok(Cli {
            paths: paths.clone(),
            verbosity,
            syslog,
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
            "--details",
            "-o",
        ],
        "asn" | "fqdn" => &["--purge"],
        "healthcheck" => &["--listen", "--max-age"],
        "status" | "lookup" => &["--json"],
        "changes" => &["--since", "--type", "--json"],
        "render" => &["--load-only"],
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
            if details {
                crate::inspect::details::check(&options, "--details")
                    .map_err(|e| UsageError(e.0))?;
            }
            Command::Export {
                options,
                output,
                details,
            }
        }
        "lookup" => match rest.as_slice() {
            [q] => Command::Lookup {
                query: q.clone(),
                json,
            },
            [] => return Err(UsageError("`lookup` needs an address or prefix".into())),
            [_, extra, ..] => {
                return Err(UsageError(format!(
                    "unexpected argument {extra:?} after `lookup`: one address or prefix"
                )))
            }
        },
        "changes" => {
            no_more(&rest)?;
            Command::Changes {
                since,
                type_filter: options.type_filter,
                json,
            }
        }
        "status" => {
            no_more(&rest)?;
            Command::Status { json }
        }
        "healthcheck" => Command::Healthcheck(super::healthcheck::parse(&rest, listen, max_age)?),
        "render" => {
            no_more(&rest)?;
            Command::Render { load_only }
        }
        "collect-now" => {
            no_more(&rest)?;
            Command::CollectNow
        }
        "snapshot" => {
            no_more(&rest)?;
            if paths.snapshot.is_none() {
                return Err(UsageError(
                    "`snapshot` needs --snapshot FILE (or $RIPE_SNAPSHOT): where to write it"
                        .into(),
                ));
            }
            Command::Snapshot
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
            Command::Export {
                options, output, ..
            } => {
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
        assert_eq!(c.paths.snapshot, None);
        let c = parse(["snapshot"].map(OsString::from), |k| {
            (k == "RIPE_SNAPSHOT").then(|| OsString::from("/flash/s.db"))
        })
        .unwrap();
        assert_eq!(c.command, Command::Snapshot);
        assert_eq!(c.paths.snapshot, Some(PathBuf::from("/flash/s.db")));
        let c = p(&["run", "--snapshot", "/f/s.db"]).unwrap();
        assert_eq!(c.paths.snapshot, Some(PathBuf::from("/f/s.db")));
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
            &["lookup"],
            &["lookup", "1.2.3.4", "5.6.7.8"],
            &["changes", "extra"],
            &["export", "--details"],
            &["export", "--format", "json", "--details", "--aggregate"],
            &["status", "--since", "2026-11-30T00:00:00Z"],
            &["serve", "--listen", "nowhere"],
            &["--bogus", "run"],
            &["--data-dir"],
            &["snapshot"],
            &["--snapshot", "", "run"],
            &["--db", "/x.db", "--snapshot", "/x.db", "run"],
            &["snapshot", "now"],
        ] {
            assert!(p(args).is_err(), "{args:?}");
        }
        assert!(p(&["export", "--format", "yaml"])
            .unwrap_err()
            .0
            .contains("\"yaml\""));
    }
}
