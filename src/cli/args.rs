//! The command-line parser. Global options may stand before or after the command;
//! options that belong to one command are checked once it is known, against the scope
//! in their definition (`flags`).

use std::ffi::OsString;
use std::path::PathBuf;

use lexopt::prelude::*;

use super::flags::{text, Action, Flag, Parsed, FLAGS};
use super::help::Cmd;
use super::{Cli, Command, SourceAction, Verbosity};
use crate::config::{self, Paths};
use crate::source::Kind;
use crate::util::spell::did_you_mean;

/// What a usage error prints after its message.
pub const USAGE_HINT: &str = "\
Usage: ripe-cidr-collector [--data-dir DIR] [--db FILE] [--snapshot FILE] [-v | -q] COMMAND
Run `ripe-cidr-collector --help` for the commands, `ripe-cidr-collector COMMAND --help`
for one command and its options.";

/// A command line that cannot be understood (exit code 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

impl From<lexopt::Error> for UsageError {
    fn from(e: lexopt::Error) -> Self {
        UsageError(e.to_string())
    }
}

/// Parses the arguments (without the program name). Global options may stand before
/// or after the command. `env` looks up `RIPE_DATA_DIR`, `RIPE_DB` and `RIPE_SNAPSHOT`.
pub fn parse(
    args: impl IntoIterator<Item = OsString>,
    env: impl Fn(&str) -> Option<OsString>,
) -> Result<Cli, UsageError> {
    let mut a = read_flags(args)?;
    let paths = paths(&mut a, env)?;
    let verbosity = a.verbosity.unwrap_or(Verbosity::Normal);
    let syslog = a.syslog;
    let mut words = std::mem::take(&mut a.words).into_iter();
    let cmd = match words.next() {
        Some(w) => Some(Cmd::from_name(&w).ok_or_else(|| {
            let hint = did_you_mean(&w, "", Cmd::ALL.iter().map(|c| c.name()));
            UsageError(format!("unknown command {w:?}{hint}"))
        })?),
        None => None,
    };
    let done = |command| {
        Ok(Cli {
            paths: paths.clone(),
            verbosity,
            syslog,
            command,
            cmd,
        })
    };
    if a.help {
        return done(Command::Help(cmd));
    }
    if a.version {
        return done(Command::Version);
    }
    let Some(cmd) = cmd else {
        return Err(UsageError("no command given".into()));
    };
    if let Some(bad) = a.seen.iter().find(|f| !f.goes_with(cmd)) {
        return Err(UsageError(format!(
            "--{} does not go with `{}`",
            bad.long,
            cmd.name()
        )));
    }
    let rest: Vec<String> = words.collect();
    done(command(cmd, a, &rest, &paths)?)
}

/// The command a command line names, for the usage that its usage error prints: the
/// first word that is not an option or an option's value (read as [`parse`] reads
/// them, from the flag table).
pub fn command_word(args: &[OsString]) -> Option<Cmd> {
    let takes_value = |f: Option<&Flag>| f.is_some_and(|f| matches!(f.action, Action::Value(..)));
    let mut args = args.iter().map(|a| a.to_str().unwrap_or(""));
    while let Some(a) = args.next() {
        if a == "--" {
            return args.next().and_then(Cmd::from_name);
        }
        let value_follows = if let Some(long) = a.strip_prefix("--") {
            !long.contains('=') && takes_value(Flag::by_long(long))
        } else if let Some(short) = a.strip_prefix('-').filter(|s| !s.is_empty()) {
            short.len() == 1 && takes_value(short.chars().next().and_then(Flag::by_short))
        } else {
            return Cmd::from_name(a);
        };
        if value_follows {
            args.next();
        }
    }
    None
}

/// Runs lexopt over the arguments, each flag stored by its one definition.
fn read_flags(args: impl IntoIterator<Item = OsString>) -> Result<Parsed, UsageError> {
    let mut p = lexopt::Parser::from_args(args);
    let mut a = Parsed::default();
    while let Some(arg) = p.next()? {
        let flag = match arg {
            Value(v) => {
                a.words.push(text(v, "argument")?);
                continue;
            }
            Long(name) => Flag::by_long(name),
            Short(c) => Flag::by_short(c),
        };
        let Some(flag) = flag else {
            // A slip of a long option: name the one meant, from the flag table.
            let hint = match &arg {
                Long(name) => did_you_mean(name, "--", FLAGS.iter().map(|f| f.long)),
                _ => String::new(),
            };
            return Err(UsageError(format!("{}{hint}", arg.unexpected())));
        };
        match flag.action {
            Action::Switch(set) => set(&mut a),
            Action::Value(_, set) => set(&mut a, p.value()?)?,
        }
        a.seen.push(flag);
    }
    if let Some(why) = a.conflict {
        return Err(UsageError(why.into()));
    }
    Ok(a)
}

/// The files, from the flags, else the environment, else the defaults.
fn paths(a: &mut Parsed, env: impl Fn(&str) -> Option<OsString>) -> Result<Paths, UsageError> {
    let from_env = |k| env(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    let data_dir = a
        .data_dir
        .take()
        .or_else(|| from_env("RIPE_DATA_DIR"))
        .unwrap_or_else(|| PathBuf::from(config::DEFAULT_DATA_DIR));
    let db = a.db.take().or_else(|| from_env("RIPE_DB"));
    let snapshot = a.snapshot.take().or_else(|| from_env("RIPE_SNAPSHOT"));
    let paths = Paths::new(data_dir, db).with_snapshot(snapshot);
    if paths.snapshot.as_ref() == Some(&paths.db) {
        return Err(UsageError(
            "--snapshot must not be the database itself (--db)".into(),
        ));
    }
    Ok(paths)
}

/// Refuses words after a command that takes none.
fn no_more(cmd: Cmd, rest: &[String]) -> Result<(), UsageError> {
    match rest.first() {
        Some(extra) => Err(UsageError(format!(
            "unexpected argument {extra:?} after `{}`",
            cmd.name()
        ))),
        None => Ok(()),
    }
}

/// Builds the command from its words and the flags.
fn command(cmd: Cmd, a: Parsed, rest: &[String], paths: &Paths) -> Result<Command, UsageError> {
    if !matches!(
        cmd,
        Cmd::Lookup
            | Cmd::Explain
            | Cmd::Healthcheck
            | Cmd::Asn
            | Cmd::Fqdn
            | Cmd::Feed
            | Cmd::Country
            | Cmd::Confirm
            | Cmd::Group
            | Cmd::Exclude
            | Cmd::Service
            | Cmd::Completions
    ) {
        no_more(cmd, rest)?;
    }
    Ok(match cmd {
        Cmd::Run => Command::Run,
        Cmd::Check => Command::Check,
        Cmd::Manpage => Command::Manpage,
        Cmd::Completions => match rest {
            [s] if ["bash", "zsh", "fish"].contains(&s.as_str()) => Command::Completions(s.clone()),
            _ => {
                return Err(UsageError(
                    "`completions` needs one shell: bash, zsh or fish".into(),
                ))
            }
        },
        Cmd::Daemon => Command::Daemon { listen: a.listen },
        Cmd::Serve => Command::Serve { listen: a.listen },
        Cmd::Export => export(a)?,
        Cmd::Lookup => lookup(rest, a.json)?,
        Cmd::Explain => match rest {
            [addr] => Command::Explain {
                address: addr.clone(),
                group: a.group,
                json: a.json,
            },
            _ => return Err(UsageError("`explain` needs one address".into())),
        },
        Cmd::Changes => Command::Changes {
            group: a.group,
            since: a.since,
            type_filter: a.options.type_filter,
            json: a.json,
        },
        Cmd::Status => Command::Status { json: a.json },
        Cmd::Healthcheck => {
            Command::Healthcheck(super::healthcheck::parse(rest, a.listen, a.max_age)?)
        }
        Cmd::Render => Command::Render {
            load_only: a.load_only,
        },
        Cmd::CollectNow => Command::CollectNow,
        Cmd::Confirm => match rest {
            [s] => Command::Confirm(s.clone()),
            _ => {
                return Err(UsageError(
                    "`confirm` needs one source, such as AS62041".into(),
                ))
            }
        },
        Cmd::Snapshot => {
            if paths.snapshot.is_none() {
                return Err(UsageError(
                    "`snapshot` needs --snapshot FILE (or $RIPE_SNAPSHOT): where to write it"
                        .into(),
                ));
            }
            Command::Snapshot
        }
        Cmd::Asn => Command::Sources(Kind::Asn, source_action(cmd, Kind::Asn, rest, a)?),
        Cmd::Fqdn => Command::Sources(Kind::Fqdn, source_action(cmd, Kind::Fqdn, rest, a)?),
        Cmd::Feed => Command::Sources(Kind::Feed, source_action(cmd, Kind::Feed, rest, a)?),
        Cmd::Country => {
            Command::Sources(Kind::Country, source_action(cmd, Kind::Country, rest, a)?)
        }
        Cmd::Group => Command::Group(super::groups::parse_group(rest, &a)?),
        Cmd::Exclude => Command::Exclude(super::groups::parse_exclude(rest, &a)?),
        Cmd::Service => Command::Service(super::services::parse(rest, &a)?),
    })
}

fn export(mut a: Parsed) -> Result<Command, UsageError> {
    if let Some(g) = &a.group {
        a.options.select_group(g, a.set_given);
    }
    a.options.check().map_err(|e| UsageError(e.0))?;
    if a.details {
        crate::inspect::details::check(&a.options, "--details").map_err(|e| UsageError(e.0))?;
    }
    Ok(Command::Export {
        options: a.options,
        output: a.output,
        details: a.details,
    })
}

fn lookup(rest: &[String], json: bool) -> Result<Command, UsageError> {
    match rest {
        [q] => Ok(Command::Lookup {
            query: q.clone(),
            json,
        }),
        [] => Err(UsageError("`lookup` needs an address or prefix".into())),
        [_, extra, ..] => Err(UsageError(format!(
            "unexpected argument {extra:?} after `lookup`: one address or prefix"
        ))),
    }
}

/// `list`, `add SOURCE...` or `remove SOURCE...` of a kind of source. Every value is
/// checked here, so that one bad value changes nothing (exit 2, naming it).
fn source_action(
    cmd: Cmd,
    kind: Kind,
    rest: &[String],
    a: Parsed,
) -> Result<SourceAction, UsageError> {
    let cmd = cmd.name();
    let what = match kind {
        Kind::Feed => "URL".to_string(),
        Kind::Country => "CC".to_string(),
        _ => kind.as_str().to_ascii_uppercase(),
    };
    let purge = a.purge;
    let a_json = a.json;
    let group = a.group.clone();
    let one = |verb: &str| match a.group.as_deref() {
        Some(crate::format::ALL_GROUPS) => Err(UsageError(format!(
            "`{cmd} {verb}` changes one group: --group '*' goes with `list` only"
        ))),
        g => Ok(g.unwrap_or(crate::format::DEFAULT_GROUP).to_string()),
    };
    let all = |values: &[String]| -> Result<Vec<String>, UsageError> {
        values
            .iter()
            .map(|s| kind.normalize(s).map_err(UsageError))
            .collect()
    };
    let limit = a.limit;
    let action = match rest {
        [a, text] if a == "search" && kind == Kind::Asn => {
            crate::source::check_search_text(text).map_err(UsageError)?;
            SourceAction::Search {
                text: text.clone(),
                limit: limit.unwrap_or(crate::source::DEFAULT_SEARCH_LIMIT),
                json: a_json,
            }
        }
        [a, _, _, ..] if a == "search" && kind == Kind::Asn => {
            return Err(UsageError(format!(
                "`{cmd} search` takes one TEXT: quote a text with spaces"
            )))
        }
        [a] if a == "search" && kind == Kind::Asn => {
            return Err(UsageError(format!(
                "`{cmd} search` needs the TEXT to search for"
            )))
        }
        [a] if a == "list" => SourceAction::List {
            group,
            json: a_json,
        },
        [a, values @ ..] if a == "add" && !values.is_empty() => SourceAction::Add {
            sources: all(values)?,
            group: one("add")?,
        },
        [a, values @ ..] if a == "remove" && !values.is_empty() => SourceAction::Remove {
            sources: all(values)?,
            group: one("remove")?,
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
            let hint = did_you_mean(a, "", ["list", "add", "remove"]);
            return Err(UsageError(format!(
                "unknown `{cmd}` action {a:?}: expected list, add or remove{hint}"
            )));
        }
        [_, ..] => return Err(UsageError(format!("too many arguments for `{cmd}`"))),
    };
    if purge && !matches!(action, SourceAction::Remove { .. }) {
        return Err(UsageError("--purge goes with `remove`".into()));
    }
    if a_json
        && !matches!(
            action,
            SourceAction::List { .. } | SourceAction::Search { .. }
        )
    {
        return Err(UsageError("--json goes with `list` and `search`".into()));
    }
    if limit.is_some() && !matches!(action, SourceAction::Search { .. }) {
        return Err(UsageError("--limit goes with `search`".into()));
    }
    Ok(action)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{Family, Format};

    fn p(args: &[&str]) -> Result<Cli, UsageError> {
        parse(args.iter().map(OsString::from), |_| None)
    }

    #[test]
    fn parses_commands() {
        let c = p(&["--data-dir", "/d", "asn", "add", "AS1"]).unwrap();
        assert_eq!(c.paths.db, PathBuf::from("/d/ripe.db"));
        assert_eq!(
            c.command,
            Command::Sources(
                Kind::Asn,
                SourceAction::Add {
                    sources: vec!["1".into()],
                    group: "default".into()
                }
            )
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
        assert_eq!(p(&["--help"]).unwrap().command, Command::Help(None));
        assert_eq!(
            p(&["export", "--help"]).unwrap().command,
            Command::Help(Some(Cmd::Export))
        );
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
            &["explain"],
            &["explain", "1.2.3.4", "5.6.7.8"],
            &["explain", "1.2.3.4", "--since", "x"],
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
