//! Every command-line flag, defined once: its names, the commands it goes with, its
//! help line and what it stores. The parser (`args`), the scope check and the help
//! texts (`help`) all read this one table, so a new flag is one entry here and one
//! field in [`Parsed`] (the way ripgrep defines its flags on the same `lexopt`).

use std::ffi::OsString;
use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;

use super::help::Cmd;
use super::{UsageError, Verbosity};
use crate::config;
use crate::format::{Family, Format, RenderOptions, TypeFilter};

/// Everything the flags and words of a command line say, before the command is built.
#[derive(Debug, Default)]
pub(super) struct Parsed {
    pub data_dir: Option<PathBuf>,
    pub db: Option<PathBuf>,
    pub snapshot: Option<PathBuf>,
    pub verbosity: Option<Verbosity>,
    pub help: bool,
    pub version: bool,
    pub listen: Option<SocketAddr>,
    pub options: RenderOptions,
    pub output: Option<PathBuf>,
    pub purge: bool,
    /// `--force` of `group remove`.
    pub force: bool,
    pub json: bool,
    /// `--limit` of `asn search`.
    pub limit: Option<usize>,
    pub max_age: Option<u64>,
    pub details: bool,
    pub since: Option<String>,
    /// `--group`: checked for its form here, against the configuration by the command.
    pub group: Option<String>,
    /// Whether `--set` was given (else a group names its sets).
    pub set_given: bool,
    /// Two flags that cannot go together, found while reading them.
    pub conflict: Option<&'static str>,
    /// `--mark` of `group add`.
    pub mark: Option<crate::config::Mark>,
    pub load_only: bool,
    pub syslog: bool,
    /// The command and its arguments, in order.
    pub words: Vec<String>,
    /// The flags given, for the check that each goes with the command.
    pub seen: Vec<&'static Flag>,
}

impl Parsed {
    /// `-v` or `-q`; both given is a contradiction, refused once the flags are read.
    fn set_verbosity(&mut self, v: Verbosity) {
        if self.verbosity.is_some_and(|old| old != v) {
            self.conflict = Some("-v (--verbose) and -q (--quiet) contradict each other: give one");
        }
        self.verbosity = Some(v);
    }
}

/// Which commands a flag goes with.
#[derive(Debug)]
pub(super) enum Scope {
    /// Every command (stands before or after it).
    Global,
    /// Only these.
    Only(&'static [Cmd]),
}

/// What a flag does with the command line.
pub(super) enum Action {
    /// A flag without a value.
    Switch(fn(&mut Parsed)),
    /// A flag with a value, named in the help (`DIR`), stored (or refused) by the fn.
    Value(
        &'static str,
        fn(&mut Parsed, OsString) -> Result<(), UsageError>,
    ),
}

/// One flag.
pub(super) struct Flag {
    /// `--long` without the dashes.
    pub long: &'static str,
    /// `-s`, if any.
    pub short: Option<char>,
    /// Where it may stand.
    pub scope: Scope,
    /// What it stores.
    pub action: Action,
    /// The help text (may span lines; the help indents them).
    pub help: &'static str,
}

/// Where a flag's help lists the formats (see [`Flag::text`]).
const FORMATS_MARK: &str = "{formats}";

/// The longest line of a flag's help, as the hand-written ones are.
const HELP_WIDTH: usize = 52;

impl fmt::Debug for Flag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "--{}", self.long)
    }
}

impl Flag {
    /// The flag as the user may write it: `-o, --output FILE`.
    pub fn synopsis(&self) -> String {
        let mut s = match self.short {
            Some(c) => format!("-{c}, --{}", self.long),
            None => format!("--{}", self.long),
        };
        if let Action::Value(name, _) = self.action {
            s.push(' ');
            s.push_str(name);
        }
        s
    }

    /// The help text as shown: `{formats}` is the format table's words
    /// ([`crate::format::FORMATS`]), wrapped as the help's lines are, so a new format
    /// appears in `--help`, the completions and the man page without an edit here.
    pub fn text(&self) -> std::borrow::Cow<'static, str> {
        if !self.help.contains(FORMATS_MARK) {
            return self.help.into();
        }
        let mut lines = vec![String::new()];
        for f in crate::format::FORMATS {
            let word = f.as_str();
            let last = lines.last_mut().expect("one line at least");
            if !last.is_empty() && last.len() + word.len() + 2 > HELP_WIDTH {
                last.push(',');
                lines.push(String::new());
            } else if !last.is_empty() {
                last.push_str(", ");
            }
            lines.last_mut().expect("one line at least").push_str(word);
        }
        self.help.replace(FORMATS_MARK, &lines.join("\n")).into()
    }

    /// Whether it may be given with `cmd`.
    pub fn goes_with(&self, cmd: Cmd) -> bool {
        match self.scope {
            Scope::Global => true,
            Scope::Only(cmds) => cmds.contains(&cmd),
        }
    }

    /// The flag that `--name` names.
    pub fn by_long(name: &str) -> Option<&'static Flag> {
        FLAGS.iter().find(|f| f.long == name)
    }

    /// The flag that `-c` names.
    pub fn by_short(c: char) -> Option<&'static Flag> {
        FLAGS.iter().find(|f| f.short == Some(c))
    }
}

/// A value as UTF-8 text, or a usage error naming the flag.
pub(super) fn text(v: OsString, what: &str) -> Result<String, UsageError> {
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

/// A path value; an empty one is refused (it would silently mean the current directory).
fn path(v: OsString, what: &str) -> Result<PathBuf, UsageError> {
    if v.is_empty() {
        return Err(UsageError(format!("{what} must not be empty")));
    }
    Ok(v.into())
}

use Action::{Switch, Value};
use Cmd::*;

/// Every flag of the program.
pub(super) static FLAGS: &[Flag] = &[
    Flag {
        long: "data-dir",
        short: None,
        scope: Scope::Global,
        action: Value("DIR", |a, v| {
            a.data_dir = Some(path(v, "--data-dir")?);
            Ok(())
        }),
        help: "data directory (config.json, status.json); default\n\
               $RIPE_DATA_DIR, else /var/lib/ripe-cidr-collector",
    },
    Flag {
        long: "db",
        short: None,
        scope: Scope::Global,
        action: Value("FILE", |a, v| {
            a.db = Some(path(v, "--db")?);
            Ok(())
        }),
        help: "SQLite database; default $RIPE_DB, else\n\
               DIR/ripe.db",
    },
    Flag {
        long: "snapshot",
        short: None,
        scope: Scope::Global,
        action: Value("FILE", |a, v| {
            a.snapshot = Some(path(v, "--snapshot")?);
            Ok(())
        }),
        help: "copy of the database on persistent storage, for a\n\
               --db in RAM: restored when the database is\n\
               missing, rewritten atomically after changes (at\n\
               most every storage.snapshot_interval_hours,\n\
               default 24), on daemon stop and by `snapshot`;\n\
               default $RIPE_SNAPSHOT, else none",
    },
    Flag {
        long: "verbose",
        short: Some('v'),
        scope: Scope::Global,
        action: Switch(|a| a.set_verbosity(Verbosity::Verbose)),
        help: "more log output (debug; release builds keep info\n\
               and above)",
    },
    Flag {
        long: "quiet",
        short: Some('q'),
        scope: Scope::Global,
        action: Switch(|a| a.set_verbosity(Verbosity::Quiet)),
        help: "only warnings and errors",
    },
    Flag {
        long: "syslog",
        short: None,
        scope: Scope::Global,
        action: Switch(|a| a.syslog = true),
        help: "log to the system log (/dev/log, facility daemon),\n\
               each message with its priority, instead of to\n\
               stderr (the OpenWrt package turns it on: procd\n\
               files all of stderr as errors)",
    },
    Flag {
        long: "load-only",
        short: None,
        scope: Scope::Only(&[Render]),
        action: Switch(|a| a.load_only = true),
        help: "only the netlink loads: no files written, no\n\
               commands run (what the OpenWrt firewall include\n\
               runs while fw4 holds its lock)",
    },
    Flag {
        long: "help",
        short: Some('h'),
        scope: Scope::Global,
        action: Switch(|a| a.help = true),
        help: "this text; after a command, that command's help",
    },
    Flag {
        long: "version",
        short: Some('V'),
        scope: Scope::Global,
        action: Switch(|a| a.version = true),
        help: "the version",
    },
    Flag {
        long: "listen",
        short: None,
        scope: Scope::Only(&[Daemon, Serve, Healthcheck]),
        action: Value("ADDR", |a, v| {
            let s = text(v, "--listen")?;
            a.listen = Some(config::parse_listen(&s).map_err(UsageError)?);
            Ok(())
        }),
        help: "address of the HTTP API, IP:PORT (serve, healthcheck:\n\
               default api.listen of config.json, 127.0.0.1:8080;\n\
               daemon: no API without it)",
    },
    Flag {
        long: "type",
        short: None,
        scope: Scope::Only(&[Export, Changes]),
        action: Value("TYPE", |a, v| {
            a.options.type_filter = parsed::<TypeFilter>(v, "--type")?;
            Ok(())
        }),
        help: "which kinds of source: all (default), cidr (every\n\
               prefix source: asn, feed, country), fqdn (resolved\n\
               addresses), or one kind: asn, feed, country",
    },
    Flag {
        long: "format",
        short: None,
        scope: Scope::Only(&[Export]),
        action: Value("FORMAT", |a, v| {
            a.options.format = parsed::<Format>(v, "--format")?;
            Ok(())
        }),
        help: "output format (default text: one value per line):\n{formats}",
    },
    Flag {
        long: "via",
        short: None,
        scope: Scope::Only(&[Export, Group]),
        action: Value("IFACE|GATEWAY", |a, v| {
            a.options.via = Some(text(v, "--via")?);
            Ok(())
        }),
        help: "where bird and keenetic routes go: an interface or\n\
               a gateway address (bird: also blackhole); with\n\
               group add: the interface the group is routed via",
    },
    Flag {
        long: "community",
        short: None,
        scope: Scope::Only(&[Export]),
        action: Value("C", |a, v| {
            a.options.community = Some(parsed(v, "--community")?);
            Ok(())
        }),
        help: "the BGP community each bird route carries, 65000:100\n\
               or large 65000:1:100 (default: the group's\n\
               bgp_community)",
    },
    Flag {
        long: "comment",
        short: None,
        scope: Scope::Only(&[Export]),
        action: Value("WORD", |a, v| {
            a.options.comment = Some(text(v, "--comment")?);
            Ok(())
        }),
        help: "the comment of keenetic routes (default: the set\n\
               name)",
    },
    Flag {
        long: "family",
        short: None,
        scope: Scope::Only(&[Export]),
        action: Value("4|6", |a, v| {
            a.options.family = Some(parsed::<Family>(v, "--family")?);
            Ok(())
        }),
        help: "one address family only (default both, IPv4 first)",
    },
    Flag {
        long: "aggregate",
        short: None,
        scope: Scope::Only(&[Export]),
        action: Switch(|a| a.options.aggregate = true),
        help: "merge overlapping and adjacent prefixes (always\n\
               done for nft)",
    },
    Flag {
        long: "table",
        short: None,
        scope: Scope::Only(&[Export]),
        action: Value("NAME", |a, v| {
            a.options.table = text(v, "--table")?;
            Ok(())
        }),
        help: "nftables table name (default ripe_cidr)",
    },
    Flag {
        long: "set",
        short: None,
        scope: Scope::Only(&[Export]),
        action: Value("NAME", |a, v| {
            a.options.set = text(v, "--set")?;
            a.set_given = true;
            Ok(())
        }),
        help: "set or address-list base name: sets NAME_v4 and\n\
               NAME_v6 (default ripe)",
    },
    Flag {
        long: "group",
        short: None,
        scope: Scope::Only(&[
            Export, Changes, Explain, Asn, Fqdn, Feed, Country, Exclude, Service,
        ]),
        action: Value("NAME", |a, v| {
            let g = text(v, "--group")?;
            if g != crate::format::ALL_GROUPS {
                crate::format::check_group_name(&g)
                    .map_err(|e| UsageError(format!("--group: {e}")))?;
            }
            a.group = Some(g);
            Ok(())
        }),
        help: "the group listed or changed (default: default;\n\
               '*' lists every group); for explain, the group\n\
               followed (default: the first group listing ADDR)",
    },
    Flag {
        long: "details",
        short: None,
        scope: Scope::Only(&[Export]),
        action: Switch(|a| a.details = true),
        help: "with --format json: the sources, first_seen and\n\
               last_seen of each value",
    },
    Flag {
        long: "output",
        short: Some('o'),
        scope: Scope::Only(&[Export]),
        action: Value("FILE", |a, v| {
            a.output = Some(path(v, "--output")?);
            Ok(())
        }),
        help: "write FILE atomically (temporary file, then\n\
               rename) instead of stdout",
    },
    Flag {
        long: "purge",
        short: None,
        scope: Scope::Only(&[Asn, Fqdn, Feed, Country, Service]),
        action: Switch(|a| a.purge = true),
        help: "with remove: delete the stored values now instead\n\
               of letting them age out by ttl_days",
    },
    Flag {
        long: "force",
        short: None,
        scope: Scope::Only(&[Group]),
        action: Switch(|a| a.force = true),
        help: "with group remove: remove the group's sources and\n\
               services too (listed)",
    },
    Flag {
        long: "json",
        short: None,
        scope: Scope::Only(&[
            Status, Lookup, Explain, Changes, Asn, Fqdn, Feed, Country, Group, Service,
        ]),
        action: Switch(|a| a.json = true),
        help: "print JSON (the same bytes as the matching API\n\
               route)",
    },
    Flag {
        long: "limit",
        short: None,
        scope: Scope::Only(&[Asn]),
        action: Value("N", |a, v| {
            let s = text(v, "--limit")?;
            let n = crate::source::parse_search_limit(&s)
                .map_err(|e| UsageError(format!("--limit: {e}")))?;
            a.limit = Some(n);
            Ok(())
        }),
        help: "with asn search: the most ASNs asked for (default 8,\n\
               at most 20)",
    },
    Flag {
        long: "mark",
        short: None,
        scope: Scope::Only(&[Group]),
        action: Value("M[/MASK]", |a, v| {
            let s = text(v, "--mark")?;
            a.mark = Some(config::parse_mark(&s).map_err(|e| UsageError(format!("--mark: {e}")))?);
            Ok(())
        }),
        help: "with group add: the routing mark its load output\n\
               sets on traffic to the group's sets (0x200, or\n\
               0x200/0xff00 to change only the mask's bits)",
    },
    Flag {
        long: "max-age",
        short: None,
        scope: Scope::Only(&[Healthcheck]),
        action: Value("SECONDS", |a, v| {
            let s = text(v, "--max-age")?;
            let n = s
                .parse::<u64>()
                .map_err(|_| UsageError(format!("--max-age: invalid number of seconds {s:?}")))?;
            {
                a.max_age = Some(n);
                Ok(())
            }
        }),
        help: "healthcheck daemon: the oldest heartbeat that\n\
               counts as alive (default 180)",
    },
    Flag {
        long: "since",
        short: None,
        scope: Scope::Only(&[Changes]),
        // Checked by the command (a usage error there too).
        action: Value("TS", |a, v| {
            a.since = Some(text(v, "--since")?);
            Ok(())
        }),
        help: "changes from this time on, YYYY-MM-DDTHH:MM:SSZ\n\
               (UTC; default 24 hours ago)",
    },
];
