//! The commands, defined once (name, synopsis, summary, longer help), and the help
//! texts built from them and from the flags: `--help` gives the overview,
//! `COMMAND --help` one command with its options.

use std::fmt::Write;

use super::flags::{Flag, Scope, FLAGS};

/// A command of the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmd {
    Run,
    Daemon,
    Serve,
    Export,
    Asn,
    Fqdn,
    Feed,
    Country,
    Status,
    Snapshot,
    CollectNow,
    Render,
    Healthcheck,
    Lookup,
    Explain,
    Changes,
    Confirm,
    Group,
    Exclude,
    Service,
    Check,
    Completions,
    Manpage,
}

/// How a command is shown in the help.
struct Text {
    cmd: Cmd,
    name: &'static str,
    /// The arguments after the name, as in the overview (may wrap).
    synopsis: &'static str,
    /// The overview's lines about it.
    summary: &'static str,
    /// What `COMMAND --help` says beyond the summary.
    about: &'static str,
}

impl Cmd {
    /// Every command, in the order of the overview.
    pub const ALL: [Cmd; 23] = [
        Cmd::Run,
        Cmd::Daemon,
        Cmd::Serve,
        Cmd::Export,
        Cmd::Asn,
        Cmd::Fqdn,
        Cmd::Feed,
        Cmd::Country,
        Cmd::Group,
        Cmd::Exclude,
        Cmd::Service,
        Cmd::Status,
        Cmd::Snapshot,
        Cmd::CollectNow,
        Cmd::Render,
        Cmd::Healthcheck,
        Cmd::Lookup,
        Cmd::Explain,
        Cmd::Changes,
        Cmd::Check,
        Cmd::Confirm,
        Cmd::Completions,
        Cmd::Manpage,
    ];

    /// The command a word names.
    pub fn from_name(word: &str) -> Option<Cmd> {
        Cmd::ALL.into_iter().find(|c| c.name() == word)
    }

    /// The word that names it.
    pub fn name(self) -> &'static str {
        self.text().name
    }

    /// Its arguments, as in the overview (may span lines).
    #[cfg(feature = "completions")]
    pub(super) fn synopsis(self) -> &'static str {
        self.text().synopsis
    }

    /// The overview's lines about it.
    #[cfg(feature = "completions")]
    pub(super) fn summary(self) -> &'static str {
        self.text().summary
    }

    /// What `COMMAND --help` says beyond the summary.
    #[cfg(feature = "completions")]
    pub(super) fn about(self) -> &'static str {
        self.text().about
    }

    fn text(self) -> &'static Text {
        TEXTS
            .iter()
            .find(|t| t.cmd == self)
            .expect("every command has its text")
    }
}

/// What the help says about each command.
static TEXTS: &[Text] = &[
    Text {
        cmd: Cmd::Run,
        name: "run",
        synopsis: "",
        summary: "collect every source once, then exit\n\
                 (exit 3 when a source failed; the others are stored)",
        about: "Fetches the prefixes of every ASN and resolves every host name of\n\
                 config.json once, stores them and writes the configured outputs.\n\
                 Refused (exit 1) while the daemon of the same data directory runs:\n\
                 use `collect-now` then.",
    },
    Text {
        cmd: Cmd::Daemon,
        name: "daemon",
        synopsis: "[--listen ADDR]",
        summary: "collect on schedule; with --listen also serve the API",
        about: "Collects at start when the last run is older than\n\
                 schedule.interval_minutes, then on schedule; re-reads config.json when\n\
                 it changes, writes status.json and the outputs. SIGUSR1 collects now,\n\
                 SIGTERM stops it.",
    },
    Text {
        cmd: Cmd::Serve,
        name: "serve",
        synopsis: "[--listen ADDR]",
        summary: "serve the HTTP API only (default from config, 127.0.0.1:8080)",
        about: "Serves the HTTP API (see docs/api.md) without collecting.",
    },
    Text {
        cmd: Cmd::Export,
        name: "export",
        synopsis: "[--type TYPE] [--group NAME] [--format FORMAT] [--family 4|6]\n\
                 [--aggregate] [--table NAME] [--set NAME] [--via IFACE] [--comment WORD]\n\
                 [--community C] [--details] [-o FILE]",
        summary: "print the stored addresses (or write FILE atomically);\n\
                 --details (with --format json): sources and times\n\
                 of each value",
        about: "Lists the stored values, IPv4 first, then IPv6, each in numeric order,\n\
                 in the format a router consumes: an nft -f script, an ipset restore\n\
                 file, a RouterOS script, JSON or plain text, or the list of another\n\
                 routing stack: a sing-box rule set, a mihomo rule-provider, WireGuard\n\
                 AllowedIPs, BIRD, Keenetic or OpenVPN routes (docs/formats.md). With\n\
                 --group NAME (not default) the sets are called NAME_v4 and NAME_v6\n\
                 unless --set is given.",
    },
    Text {
        cmd: Cmd::Asn,
        name: "asn",
        synopsis: "list [--json] | add ASN... | remove ASN... [--purge] [--group NAME]\n\
                   | search TEXT [--limit N] [--json]",
        summary: "manage ASN sources (62041, AS62041); --purge also\n\
                 deletes the stored prefixes now instead of by TTL;\n\
                 search finds ASNs by their holder's name",
        about: "Edits the \"asns\" list of config.json (locked, atomic rewrite). A\n\
                 running daemon collects an added ASN within seconds. Several values\n\
                 are added or removed together, or none (exit 2 naming a bad one).\n\
                 `asn list` shows each ASN's holder (RIPEstat as-overview, fetched\n\
                 when first collected, refreshed weekly). `asn search TEXT` asks\n\
                 RIPEstat (searchcomplete, then as-overview per ASN) for the ASNs\n\
                 whose holder matches TEXT, announced ones first: one line each,\n\
                 AS<TAB>holder<TAB>announced|not announced. Exit 1 when none is\n\
                 found, 3 when RIPEstat failed.\n\
                 list: ASN, stored values, newest last_seen (or -), holder (or -).",
    },
    Text {
        cmd: Cmd::Fqdn,
        name: "fqdn",
        synopsis: "list [--json] | add FQDN... | remove FQDN... [--purge] [--group NAME]",
        summary: "manage host-name sources",
        about: "Edits the \"fqdns\" list of config.json (locked, atomic rewrite). Names\n\
                 are lower-cased; IP literals and invalid names are refused.\n\
                 list: name, stored values, newest last_seen (or -).",
    },
    Text {
        cmd: Cmd::Feed,
        name: "feed",
        synopsis: "list [--json] | add URL... | remove URL... [--purge] [--group NAME]",
        summary: "manage URL feeds (plain lists of addresses and\n\
                 prefixes, e.g. Spamhaus DROP)",
        about: "Edits the \"feeds\" list of config.json (locked, atomic rewrite). Only\n\
                 http:// and https:// URLs are taken. A feed is one value per line (the\n\
                 first token; '#' and ';' start comments); other lines are skipped and\n\
                 counted. A body over feed.max_bytes fails the feed.\n\
                 list: URL, stored values, newest last_seen (or -).",
    },
    Text {
        cmd: Cmd::Country,
        name: "country",
        synopsis: "list [--json] | add CC... | remove CC... [--purge] [--group NAME]",
        summary: "manage country sources (NL: the prefixes RIPEstat\n\
                 lists for the country)",
        about: "Edits the \"countries\" list of config.json (locked, atomic rewrite).\n\
                 Codes are two letters (ISO 3166 alpha-2), upper-cased.\n\
                 list: code, stored values, newest last_seen (or -).",
    },
    Text {
        cmd: Cmd::Completions,
        name: "completions",
        synopsis: "bash|zsh|fish",
        summary: "print the shell completion script",
        about: "bash: source it, or put it in /usr/share/bash-completion/completions/;\n\
                 zsh: save it as _ripe-cidr-collector in $fpath; fish: in\n\
                 ~/.config/fish/completions/ripe-cidr-collector.fish.",
    },
    Text {
        cmd: Cmd::Manpage,
        name: "manpage",
        synopsis: "",
        summary: "print the man page (troff)",
        about: "Every command and option, from the same table as --help:\n\
                 ripe-cidr-collector manpage > ripe-cidr-collector.1; man -l it.",
    },
    Text {
        cmd: Cmd::Check,
        name: "check",
        synopsis: "",
        summary: "check config.json and print the configuration in\n\
                 effect; writes nothing (exit 1 naming every problem)",
        about: "Prints the groups with their sources, exclusions, marks and set names,\n\
                 the outputs and the upstreams. Unknown keys are problems too, with the\n\
                 key meant when one is close (\"asn\": did you mean asns?).",
    },
    Text {
        cmd: Cmd::Group,
        name: "group",
        synopsis: "list [--json] | routes | add NAME [--mark M[/MASK]] [--via IFACE] |\n\
                   unroute NAME | remove NAME [--force]",
        summary: "manage groups: named lists with their own sources,\n\
                 exclusions, sets (NAME_v4, NAME_v6) and routing mark",
        about: "Edits \"groups\" of config.json (locked, atomic rewrite). `add` of an\n\
                 existing group sets its mark; with --via it is routed via that\n\
                 interface (a mark, a load output, an ip rule and a route in a table\n\
                 of its own); `unroute` takes the route away (the mark and sets stay).\n\
                 `remove` is refused while sources or services name the\n\
                 group (--force removes them too); its outputs, sets, mark chains,\n\
                 rule and route go with it. Sources go into a group with `asn add AS1`\n\
                 and the group option of the source commands.\n\
                 list: name, mark (or -), number of sources, number of exclusions.\n\
                 routes: NAME MARK/MASK TABLE VIA [GATEWAY] per routed group.",
    },
    Text {
        cmd: Cmd::Exclude,
        name: "exclude",
        synopsis: "list | add PREFIX... | remove PREFIX... [--group NAME]",
        summary: "manage exclusions: prefixes cut out of every list\n\
                 (with --group: out of that group's lists)",
        about: "Edits \"exclude\" of config.json (locked, atomic rewrite): without\n\
                 --group the top-level list, which applies to every group; with it the\n\
                 group's own. Prefixes without host bits, or addresses.",
    },
    Text {
        cmd: Cmd::Service,
        name: "service",
        synopsis: "list [--json] | show NAME [--json] | add NAME... | remove NAME\n\
                   [--purge] [--group NAME] | verify [NAME...] [--json]",
        summary: "route a service by its name: the catalog's ASNs,\n\
                 feeds and host names of telegram, youtube...",
        about: "Edits \"services\" of a group in config.json (locked, atomic rewrite):\n\
                 a service brings what the catalog says into the group as if named\n\
                 there; a source named twice is fetched once. `add` is all or nothing;\n\
                 `remove --purge` deletes the values of what it brought that nothing\n\
                 else names. The catalog is built in; DIR/services.json (or\n\
                 catalog.path) replaces it. `verify` checks the catalog against the\n\
                 world: each ASN's holder (RIPEstat as-overview) still starts with the\n\
                 catalog's and it is announced, each feed has a valid line; exit 1\n\
                 listing each that does not, 3 when an upstream failed.\n\
                 list: name, title, ASNs, feeds, host names, reviewed, groups (or -).",
    },
    Text {
        cmd: Cmd::Status,
        name: "status",
        synopsis: "[--json]",
        summary: "daemon heartbeat, last run, last error, counts,\n\
                 journal mode, last snapshot",
        about: "Reads status.json and the database; works whether or not the daemon\n\
                 runs.",
    },
    Text {
        cmd: Cmd::Snapshot,
        name: "snapshot",
        synopsis: "",
        summary: "write the snapshot file now (needs --snapshot)",
        about: "Writes a consistent copy of the database to the --snapshot file\n\
                 (temporary file, then rename).",
    },
    Text {
        cmd: Cmd::CollectNow,
        name: "collect-now",
        synopsis: "",
        summary: "make the running daemon collect every source now\n\
                 (SIGUSR1; what OpenWrt sends when the WAN comes up)",
        about: "Signals only the pid that holds the daemon's lock of this data\n\
                 directory; exit 1 when no daemon runs.",
    },
    Text {
        cmd: Cmd::Render,
        name: "render",
        synopsis: "[--load-only]",
        summary: "write every configured output now from the stored\n\
                 data (files, netlink loads, commands), e.g. after\n\
                 a firewall restart flushed the sets",
        about: "Writes each entry of \"outputs\" in config.json without collecting.\n\
                --load-only: only the netlink loads, no files, no commands.",
    },
    Text {
        cmd: Cmd::Healthcheck,
        name: "healthcheck",
        synopsis: "api [--listen ADDR] | daemon [--max-age SECONDS]",
        summary: "api: exit 0 when GET /health of the API answers 200\n\
                 and status ok within 3 s (default address: api.listen);\n\
                 daemon: exit 0 when status.json has the daemon's pid\n\
                 and a heartbeat at most SECONDS old (default 180)",
        about: "For container and procd health checks: exit 0 healthy, 1 not.",
    },
    Text {
        cmd: Cmd::Lookup,
        name: "lookup",
        synopsis: "ADDR|PREFIX [--json]",
        summary: "the stored values that contain the address or\n\
                 overlap the prefix, with source and times",
        about: "Answers \"why is this address in my list?\": each match with its\n\
                 kind, source, first_seen, last_seen and whether the source is still\n\
                 configured. Exit 1 when nothing is stored for it.",
    },
    Text {
        cmd: Cmd::Explain,
        name: "explain",
        synopsis: "ADDR [--group NAME] [--json]",
        summary: "why ADDR is, or is not, routed: stored, in the kernel's\n\
                 set, marked, ip rule, route; the first broken link\n\
                 and its fix (exit 0 routed, 1 a broken link)",
        about: "Walks the chain from the stored value to the route: the values that\n\
                 hold ADDR (as `lookup`), the group's sets in the kernel (dnsmasq's\n\
                 _dns sets too), its mark chains and their counters, the ip rule for\n\
                 the mark and the kernel's route with it, and whether the route's\n\
                 device is up. Stops at the first broken link with its fix and ends\n\
                 with one verdict line. Without --group: the first group that lists\n\
                 ADDR. The kernel steps need CAP_NET_ADMIN; without it they say so.",
    },
    Text {
        cmd: Cmd::Changes,
        name: "changes",
        synopsis: "[--since TS] [--type TYPE] [--group NAME] [--json]",
        summary: "values added and removed since TS\n\
                 (YYYY-MM-DDTHH:MM:SSZ, default 24 hours ago)",
        about: "Lists the values added, expired, swept or purged, oldest first (kept\n\
                 for history_days).",
    },
    Text {
        cmd: Cmd::Confirm,
        name: "confirm",
        synopsis: "SOURCE",
        summary: "apply the held answer of a source (AS62041, a feed URL, NL)",
        about: "An answer that would drop more than trust.max_shrink_percent of a\n\
                 source's values, or widen it by more than trust.max_growth_percent,\n\
                 is held until confirmed; this applies it now (a grown answer at the\n\
                 next run: it was never stored).",
    },
];

pub(super) const HEADER: &str = "\
ripe-cidr-collector: keeps lists of IP prefixes announced by autonomous systems and
of addresses of host names, for policy routing and firewalls.
";

/// The synopsis of the whole program.
pub const USAGE_LINE: &str =
    "Usage: ripe-cidr-collector [--data-dir DIR] [--db FILE] [--snapshot FILE] [-v | -q] COMMAND";

pub(super) const EXIT_CODES: &str = "\
Exit codes: 0 success, 1 error (config, storage, I/O; unhealthy for healthcheck;
a broken link for explain; nothing stored for lookup; nothing found for asn
search), 2 usage error, 3 `run` finished but at least one source failed (or
RIPEstat failed `asn search`).
";

/// Column where descriptions start.
const COLUMN: usize = 30;

/// Writes `left` and then `right` in the description column, one indented line per
/// line of `right`; a `left` too wide for its column gets a line of its own.
fn columns(out: &mut String, indent: &str, left: &str, right: &str) {
    let mut lines = right.lines();
    let head = format!("{indent}{left}");
    if head.len() + 1 < COLUMN {
        let _ = writeln!(out, "{head:<COLUMN$}{}", lines.next().unwrap_or(""));
    } else {
        let _ = writeln!(out, "{head}");
    }
    for l in lines {
        let _ = writeln!(out, "{:COLUMN$}{l}", "");
    }
}

fn options(out: &mut String, flags: impl Iterator<Item = &'static Flag>) {
    for f in flags {
        columns(out, "  ", &f.synopsis(), &f.text());
    }
}

/// The text of `--help`.
pub fn overview() -> String {
    let mut out = format!("{HEADER}\n{USAGE_LINE}\n\nCommands:\n");
    for cmd in Cmd::ALL {
        let t = cmd.text();
        let mut synopsis = t.synopsis.lines();
        let first = match synopsis.next() {
            Some(s) => format!("{} {s}", t.name),
            None => t.name.to_string(),
        };
        // A synopsis that wraps has its summary below it, in the column.
        let rest: Vec<&str> = synopsis.collect();
        if rest.is_empty() {
            columns(&mut out, "  ", &first, t.summary);
        } else {
            let _ = writeln!(out, "  {first}");
            for (i, l) in rest.iter().enumerate() {
                let summary = if i + 1 == rest.len() { t.summary } else { "" };
                columns(&mut out, "         ", l, summary);
            }
        }
    }
    out.push_str("\nOptions:\n");
    options(
        &mut out,
        FLAGS.iter().filter(|f| matches!(f.scope, Scope::Global)),
    );
    out.push_str(&format!(
        "\nRun `ripe-cidr-collector COMMAND --help` for one command and its options.\n\n{EXIT_CODES}"
    ));
    out
}

/// What a usage error of `cmd` (or of the command line, for `None`) prints after its
/// message: the usage of that command, and where its help is.
pub fn usage_hint(cmd: Option<Cmd>) -> String {
    let Some(cmd) = cmd else {
        return super::USAGE_HINT.to_string();
    };
    let text = command(cmd);
    let usage = text.split("\n\n").next().unwrap_or("");
    format!(
        "{usage}\nRun `ripe-cidr-collector {} --help` for its options.",
        cmd.name()
    )
}

/// The text of `COMMAND --help`: its synopsis, what it does and its own options.
pub fn command(cmd: Cmd) -> String {
    let t = cmd.text();
    let head = format!("Usage: ripe-cidr-collector {} ", t.name);
    let synopsis = t
        .synopsis
        .replace('\n', &format!("\n{:width$}", "", width = head.len()));
    let usage = format!("{head}{synopsis}");
    let mut out = format!("{}\n\n{}\n\n{}\n", usage.trim_end(), t.summary, t.about);
    let own: Vec<&'static Flag> = FLAGS
        .iter()
        .filter(|f| matches!(f.scope, Scope::Only(_)) && f.goes_with(cmd))
        .collect();
    if !own.is_empty() {
        out.push_str("\nOptions:\n");
        options(&mut out, own.into_iter());
    }
    out.push_str(
        "\nGlobal options (--data-dir, --db, --snapshot, -v, -q): see\n\
         `ripe-cidr-collector --help`.\n",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_has_help_naming_its_options() {
        let all = overview();
        for cmd in Cmd::ALL {
            assert_eq!(Cmd::from_name(cmd.name()), Some(cmd));
            assert!(all.contains(&format!("\n  {}", cmd.name())), "{cmd:?}");
            let text = command(cmd);
            assert!(text.contains(cmd.name()), "{text}");
            for f in FLAGS.iter().filter(|f| matches!(f.scope, Scope::Only(_))) {
                assert_eq!(
                    text.contains(&format!("--{} ", f.long))
                        || text.contains(&format!("--{}\n", f.long)),
                    f.goes_with(cmd),
                    "{cmd:?} {f:?}\n{text}"
                );
            }
        }
        assert!(all.contains("export [--type"));
        assert!(all.contains("--data-dir DIR"));
    }

    /// `--format`'s help is the format table's, in its order, and names no format by
    /// hand: a new format touches the table only.
    #[test]
    fn the_format_help_comes_from_the_format_table() {
        let flag = super::super::flags::Flag::by_long("format").unwrap();
        assert!(flag.help.contains("{formats}"), "{}", flag.help);
        for f in crate::format::FORMATS
            .iter()
            .filter(|f| f.as_str() != "text")
        {
            assert!(
                !flag.help.contains(f.as_str()),
                "{f} by hand: {}",
                flag.help
            );
        }
        let shown = flag.text().replace('\n', " ");
        let words: Vec<&str> = crate::format::FORMATS.iter().map(|f| f.as_str()).collect();
        assert!(shown.ends_with(&words.join(", ")), "{shown}");
        assert!(
            flag.text().lines().all(|l| l.len() <= 52),
            "{}",
            flag.text()
        );
        assert!(command(Cmd::Export).contains("mihomo-yaml, wireguard"));
    }
}
