//! The overview behind `GET /status` (the web page reads it) and the `groups` of
//! `status --json` (the LuCI app reads that): the daemon's record, what the database
//! says, and per group each configured source with its stored values, newest
//! `last_seen` and last failure. One implementation, so the two never disagree.
//!
//! It reports what it could read: a broken `config.json` or database is a line in
//! `errors` beside everything else, because that is when an administrator looks.

use crate::util::map::SortedMap;

use crate::config::{self, Config};
use crate::db::trust::{self, Fetch, FetchLog};
use crate::db::{self, SourceSummary};
use crate::source::{self, Kind};
use crate::status::{self, Status};
use crate::util::{
    self,
    json::{ToJson, Writer},
};

/// Stored values per kind (`{"asn": 12, "fqdn": 3}`); a map so that kinds added
/// later appear without a change here.
pub type Counts = SortedMap<&'static str, u64>;

/// One configured source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceLine {
    /// `asn`, `fqdn`, ...
    pub kind: &'static str,
    /// As stored: `62041`, `example.com`.
    pub source: String,
    /// Values stored for it.
    pub values: u64,
    /// The newest `last_seen` of its values; `null` when nothing is stored.
    pub last_seen: Option<String>,
    /// Why the last run failed to collect it; `null` when it did not fail.
    pub failure: Option<String>,
    /// The ASN upstream that last answered for it (`ripestat`, `bgptools`,
    /// `ipverse`); left out for other kinds and before any answer.
    pub upstream: Option<String>,
    /// Its last answer, when the gate holds it (both counts, since when). Boxed: a
    /// line per configured source (100,000 at the config's cap) each paid for its
    /// room otherwise.
    pub held: Option<Box<Fetch>>,
    /// Its last fetches, oldest first (at most 30; left out when there are none, and
    /// beyond [`MAX_HISTORY`] rows in one overview).
    pub history: Vec<Fetch>,
    /// An ASN's holder (RIPEstat `as-overview`); left out while unknown.
    pub holder: Option<String>,
    /// The catalog services that brought it (left out when none did).
    pub services: Box<[String]>,
}

/// Most fetch rows in one overview: a configuration of thousands of sources gets
/// the history of the first ones only, so that `/status` stays small.
pub const MAX_HISTORY: usize = 6_000;

/// A fetch as JSON: `{"time", "upstream", "values", "stored", "added", "removed",
/// "state"[, "confirmed_by"][, "change"][, "since"]}`; `change` (`grew` or
/// `shrank`) for a held answer.
struct FetchJson<'a>(&'a Fetch);

impl ToJson for FetchJson<'_> {
    fn write_json(&self, w: &mut Writer<'_>) {
        let f = self.0;
        w.begin_object();
        w.field("time", &util::iso(f.time));
        w.field("upstream", &f.upstream);
        w.field("values", &f.answer);
        w.field("stored", &f.stored);
        w.field("added", &f.added);
        w.field("removed", &f.removed);
        w.field("state", trust::state_word(f.state));
        match (&f.note, f.state) {
            (_, trust::HELD) => w.field("change", trust::held_word(f)),
            (Some(n), _) => w.field("confirmed_by", n),
            _ => {}
        }
        if let Some(t) = f.since {
            w.field("since", &util::iso(t));
        }
        w.end_object();
    }
}

/// One group: its sources and their stored values per kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupLine {
    /// The group's name (`default` for the top-level sources).
    pub name: String,
    /// Values stored for the group's sources, per kind (a value of two sources
    /// counts twice, as in `status`).
    pub counts: Counts,
    /// Its sources, by kind, in the order configured.
    pub sources: Vec<SourceLine>,
}

/// Everything the status page shows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overview {
    /// The daemon's `status.json` (heartbeat, last run, last success and error...).
    pub daemon: Status,
    /// The journal mode the database has now (else the last run's).
    pub journal_mode: Option<String>,
    /// When the snapshot was last written.
    pub last_snapshot: Option<String>,
    /// Stored values per kind, every source (configured or not).
    pub counts: Option<Counts>,
    /// The configured groups.
    pub groups: Vec<GroupLine>,
    /// Sources that are stored but no longer configured (their values age out).
    pub unconfigured: Vec<SourceLine>,
    /// Whether changing sources needs `api.token`.
    pub token_required: bool,
    /// What could not be read (`config: ...`, `database: ...`, `status: ...`).
    pub errors: Vec<String>,
}

/// A group's sources, per kind.
type GroupSources = Vec<(Kind, Vec<String>)>;

impl Overview {
    /// As JSON, for `GET /status` and `status --json` alike (one serializer in the
    /// binary for both).
    pub fn to_json(&self) -> Vec<u8> {
        // About 80 bytes a source: reserved, so that the answer is not copied while
        // it doubles (an 8 MB answer took 24 at that moment).
        let lines: usize = self.groups.iter().map(|g| g.sources.len()).sum();
        let mut out = Vec::with_capacity(4096 + 96 * (lines + self.unconfigured.len()));
        util::json::write_to(&mut out, self);
        out
    }
}

/// The fields in the order of the structs, the order the contract shows.
impl ToJson for SourceLine {
    fn write_json(&self, w: &mut Writer<'_>) {
        w.begin_object();
        w.field("kind", self.kind);
        w.field("source", &self.source);
        w.field("values", &self.values);
        w.field("last_seen", &self.last_seen);
        w.field("failure", &self.failure);
        if let Some(u) = &self.upstream {
            w.field("upstream", u);
        }
        if let Some(h) = &self.holder {
            w.field("holder", h);
        }
        if !self.services.is_empty() {
            w.field("services", &self.services[..]);
        }
        if let Some(h) = &self.held {
            w.key("held");
            FetchJson(h).write_json(w);
        }
        if !self.history.is_empty() {
            w.key("history");
            w.begin_array();
            for f in &self.history {
                FetchJson(f).write_json(w);
            }
            w.end_array();
        }
        w.end_object();
    }
}

impl ToJson for GroupLine {
    fn write_json(&self, w: &mut Writer<'_>) {
        w.begin_object();
        w.field("name", &self.name);
        w.field("counts", &self.counts);
        w.field("sources", &self.sources);
        w.end_object();
    }
}

impl ToJson for Overview {
    fn write_json(&self, w: &mut Writer<'_>) {
        w.begin_object();
        w.field("daemon", &self.daemon);
        w.field("journal_mode", &self.journal_mode);
        w.field("last_snapshot", &self.last_snapshot);
        w.field("counts", &self.counts);
        w.field("groups", &self.groups);
        w.field("unconfigured", &self.unconfigured);
        w.field("token_required", &self.token_required);
        w.field("errors", &self.errors);
        w.end_object();
    }
}

/// The configured groups (`default` first), with their sources per kind.
fn configured_groups(cfg: &Config) -> Vec<(String, GroupSources)> {
    cfg.groups
        .iter()
        .map(|g| {
            let kinds = Kind::ALL
                .iter()
                .map(|&k| (k, g.sources(k).to_vec()))
                .collect();
            (g.name.clone(), kinds)
        })
        .collect()
}

/// Builds the overview from the files of the pool's paths, reading the database
/// through `pool` (the API's kept connections; `db::Pool::new(paths, 0)` opens one).
pub fn build(pool: &db::Pool) -> Overview {
    let paths = pool.paths();
    let mut errors = Vec::new();
    let cfg = config::load(&paths.config())
        .map(|l| l.config)
        .map_err(|e| errors.push(format!("config: {e}")))
        .ok();
    let st = status::read(&paths.status())
        .map_err(|e| errors.push(format!("status: {e}")))
        .ok()
        .flatten()
        .unwrap_or_default();
    let stored = read_db(pool).map_err(|e| errors.push(format!("database: {e}")));
    let (journal_mode, from_db) = match stored {
        Ok((mode, s)) => (Some(mode), Some(s)),
        Err(()) => (st.journal_mode.clone(), None),
    };
    let stored = from_db.as_ref().map(|d| &d.stored);
    // Filled by inserts: collecting into a map would sort, and a sort costs flash.
    let counts = stored.as_ref().map(|s| {
        let mut c = Counts::new();
        for (k, list) in s.iter() {
            c.insert(k.as_str(), list.iter().map(|x| x.count).sum());
        }
        c
    });
    let summaries: &[Stored] = stored.map(|s| &s[..]).unwrap_or_default();
    let mut groups = cfg
        .as_ref()
        .map(|c| group_lines(c, summaries, &st))
        .unwrap_or_default();
    let mut unconfigured = match &cfg {
        Some(c) => unconfigured(c, summaries),
        None => Vec::new(),
    };
    if let Some(d) = &from_db {
        for g in &mut groups {
            with_trust(&mut g.sources, d);
        }
        with_trust(&mut unconfigured, d);
    }
    Overview {
        journal_mode,
        last_snapshot: db::snapshot::last_written(paths)
            .map(util::iso)
            .or_else(|| st.last_snapshot.clone()),
        counts,
        groups,
        unconfigured,
        token_required: cfg.as_ref().is_some_and(|c| c.api.token.is_some()),
        errors,
        daemon: st,
    }
}

/// The fuzz target's way in: the overview of `st` and `cfg` with nothing stored, as
/// `GET /status` and `status --json` write it.
#[cfg(fuzzing)]
pub(crate) fn fuzz_render(st: Status, cfg: Option<&Config>) -> Vec<u8> {
    Overview {
        groups: cfg.map(|c| group_lines(c, &[], &st)).unwrap_or_default(),
        errors: vec![format!("status: {:?}", st.last_error)],
        daemon: st,
        ..Overview::default()
    }
    .to_json()
}

/// The stored sources of one kind.
type Stored = (Kind, Vec<SourceSummary>);

/// What the database says: the stored sources of every kind, the fetch logs and the
/// held sources.
struct FromDb {
    stored: Vec<Stored>,
    logs: Vec<FetchLog>,
    held: Vec<FetchLog>,
    names: crate::util::map::SortedMap<String, String>,
}

/// The stored sources of every kind, and the journal mode, with one connection.
fn read_db(pool: &db::Pool) -> Result<(String, FromDb), db::StoreError> {
    pool.with(|db| {
        let mut stored = Vec::new();
        for k in Kind::ALL {
            stored.push((k, db.sources(k)?));
        }
        let logs = db.fetch_logs(MAX_HISTORY)?;
        let held = db.held()?;
        let mode = db.journal_mode().as_str().to_string();
        // A name that cannot be read is unknown, never a failed overview.
        let names = db.names().unwrap_or_default();
        let d = FromDb {
            stored,
            logs,
            held,
            names,
        };
        Ok((mode, d))
    })
}

/// The fetch log (or held fetch) of a source in `logs` (sorted by kind, name).
fn log_of<'a>(logs: &'a [FetchLog], kind: Kind, source: &str) -> Option<&'a [Fetch]> {
    let i = logs
        .binary_search_by(|(k, s, _)| (k.as_str(), s.as_str()).cmp(&(kind.as_str(), source)))
        .ok()?;
    Some(&logs[i].2)
}

fn line(kind: Kind, source: &str, stored: Option<&SourceSummary>, st: &Status) -> SourceLine {
    SourceLine {
        kind: kind.as_str(),
        source: source.to_string(),
        values: stored.map_or(0, |s| s.count),
        last_seen: stored.map(|s| s.last_seen.clone()),
        failure: st.failures.get(&source::display(kind, source)).cloned(),
        upstream: st.upstreams.get(&source::display(kind, source)).cloned(),
        held: None,
        history: Vec::new(),
        holder: None,
        services: Box::default(),
    }
}

/// Fills in the fetch log and held answer of each line.
fn with_trust(lines: &mut [SourceLine], d: &FromDb) {
    for l in lines {
        let Some(kind) = Kind::from_word(l.kind) else {
            continue;
        };
        l.history = log_of(&d.logs, kind, &l.source)
            .unwrap_or_default()
            .to_vec();
        l.held = log_of(&d.held, kind, &l.source).and_then(|f| f.first().cloned().map(Box::new));
        if kind == Kind::Asn {
            l.holder = d.names.get(&l.source).cloned();
        }
    }
}

fn find<'a>(summaries: &'a [Stored], kind: Kind, source: &str) -> Option<&'a SourceSummary> {
    let list = &summaries.iter().find(|(k, _)| *k == kind)?.1;
    // `Db::sources` orders by source.
    list.binary_search_by(|s| s.source.as_str().cmp(source))
        .ok()
        .map(|i| &list[i])
}

fn group_lines(cfg: &Config, summaries: &[Stored], st: &Status) -> Vec<GroupLine> {
    let prov = cfg.provenance();
    configured_groups(cfg)
        .into_iter()
        .map(|(name, kinds)| {
            let mut counts = Counts::new();
            // Sized at once: grown by doubling, the lines of a config at its cap
            // (100,000 sources) took 32 MiB, and 48 while the old room was copied.
            let mut sources = Vec::with_capacity(kinds.iter().map(|(_, l)| l.len()).sum());
            for (kind, list) in kinds {
                let n = counts.get_or_insert_with(kind.as_str(), || 0);
                for s in list {
                    let mut l = line(kind, &s, find(summaries, kind, &s), st);
                    l.services = prov.of(kind, &s).map(String::from).collect();
                    *n += l.values;
                    sources.push(l);
                }
            }
            GroupLine {
                name,
                counts,
                sources,
            }
        })
        .collect()
}

fn unconfigured(cfg: &Config, summaries: &[Stored]) -> Vec<SourceLine> {
    let groups = configured_groups(cfg);
    let configured = |kind: Kind, s: &str| {
        groups.iter().any(|(_, kinds)| {
            kinds
                .iter()
                .any(|(k, list)| *k == kind && list.iter().any(|x| x == s))
        })
    };
    let none = Status::default();
    summaries
        .iter()
        .flat_map(|(k, list)| list.iter().map(move |s| (*k, s)))
        .filter(|(k, s)| !configured(*k, &s.source))
        .map(|(k, s)| line(k, &s.source, Some(s), &none))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Paths;

    #[test]
    fn sources_counts_failures_and_unconfigured() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::new(dir.path(), None);
        std::fs::write(
            paths.config(),
            r#"{"asns": ["62041", "64500"], "fqdns": ["a.example"], "api": {"token": "s"}}"#,
        )
        .unwrap();
        let mut d = db::open(&paths).unwrap();
        let v = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        d.merge_source(
            Kind::Asn,
            "62041",
            &v(&["192.0.2.0/24", "2001:db8::/32"]),
            100,
            7,
        )
        .unwrap();
        d.merge_source(Kind::Fqdn, "a.example", &v(&["192.0.2.1"]), 200, 7)
            .unwrap();
        d.merge_source(Kind::Fqdn, "old.example", &v(&["192.0.2.9"]), 200, 7)
            .unwrap();
        drop(d);
        status::update(&paths.status(), |s| {
            s.failures.insert("AS64500".into(), "HTTP 500".into());
            s.upstreams.insert("AS62041".into(), "bgptools".into());
            s.heartbeat = Some("2026-01-01T00:00:00Z".into());
        })
        .unwrap();

        let o = build(&db::Pool::new(paths.clone(), 0));
        assert_eq!(o.errors, Vec::<String>::new());
        assert!(o.token_required);
        assert_eq!(o.daemon.heartbeat.as_deref(), Some("2026-01-01T00:00:00Z"));
        assert_eq!(o.counts.as_ref().unwrap()["asn"], 2);
        assert_eq!(o.counts.as_ref().unwrap()["fqdn"], 2);
        let g = &o.groups[0];
        assert_eq!(g.name, "default");
        assert_eq!(g.counts["asn"], 2);
        assert_eq!(g.counts["fqdn"], 1);
        let names: Vec<_> = g
            .sources
            .iter()
            .map(|s| (s.kind, s.source.as_str()))
            .collect();
        assert_eq!(
            names,
            [("asn", "62041"), ("asn", "64500"), ("fqdn", "a.example")]
        );
        assert_eq!(g.sources[0].values, 2);
        assert_eq!(
            g.sources[0].last_seen.as_deref(),
            Some(util::iso(100).as_str())
        );
        assert_eq!(g.sources[1].values, 0);
        assert_eq!(g.sources[1].last_seen, None);
        assert_eq!(g.sources[1].failure.as_deref(), Some("HTTP 500"));
        assert_eq!(g.sources[0].upstream.as_deref(), Some("bgptools"));
        assert_eq!(g.sources[1].upstream, None);
        assert_eq!(o.unconfigured.len(), 1);
        assert_eq!(o.unconfigured[0].source, "old.example");
        assert!(o.journal_mode.is_some());
    }

    #[test]
    fn each_group_with_its_own_sources() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::new(dir.path(), None);
        std::fs::write(
            paths.config(),
            r#"{"asns": ["62041"], "fqdns": [], "groups": {"video": {"asns": ["2906", "62041"]}}}"#,
        )
        .unwrap();
        let mut d = db::open(&paths).unwrap();
        let v = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        d.merge_source(Kind::Asn, "62041", &v(&["192.0.2.0/24"]), 100, 7)
            .unwrap();
        d.merge_source(
            Kind::Asn,
            "2906",
            &v(&["198.51.100.0/24", "203.0.113.0/24"]),
            100,
            7,
        )
        .unwrap();
        drop(d);
        let o = build(&db::Pool::new(paths.clone(), 0));
        let names: Vec<_> = o.groups.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, ["default", "video"]);
        let sources = |i: usize| -> Vec<&str> {
            o.groups[i]
                .sources
                .iter()
                .map(|s| s.source.as_str())
                .collect()
        };
        assert_eq!(sources(0), ["62041"]);
        assert_eq!(sources(1), ["2906", "62041"]);
        assert_eq!(o.groups[0].counts["asn"], 1);
        assert_eq!(o.groups[1].counts["asn"], 3);
        // Stored once, whatever the number of groups naming it.
        assert_eq!(o.counts.unwrap()["asn"], 3);
        assert!(o.unconfigured.is_empty());
    }

    #[test]
    fn broken_files_are_errors_beside_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::new(dir.path(), None);
        std::fs::write(paths.config(), "{").unwrap();
        std::fs::write(paths.status(), "[").unwrap();
        let o = build(&db::Pool::new(paths.clone(), 0));
        assert_eq!(o.errors.len(), 2, "{:?}", o.errors);
        assert!(o.errors[0].starts_with("config: "), "{:?}", o.errors);
        assert!(o.errors[1].starts_with("status: "), "{:?}", o.errors);
        assert!(o.groups.is_empty());
        assert_eq!(o.counts.unwrap()["asn"], 0);
    }
}
