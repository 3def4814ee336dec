//! `status [--json]`: what the daemon and the last runs recorded, and what is stored.
//! Gathering the facts, the JSON form and the text form are separate steps.

use std::fmt::Write;

use super::output::print;
use super::{CliError, Outcome};
use crate::config::{self, Config, Paths};
use crate::source::Kind;
use crate::status::Status;
use crate::util::json::{self, Value};
use crate::{db, status, util};

/// Everything `status` shows, read once; each part is `None` when it could not be read,
/// and `problems` says why.
struct Report {
    cfg: Option<Config>,
    st: Option<Status>,
    counts: Option<(u64, u64)>,
    journal_mode: Option<String>,
    last_snapshot: Option<String>,
    /// Per group: name, configured sources, stored rows of those sources.
    groups: Vec<(String, usize, u64)>,
    /// The sources the gate holds, with their held answer.
    held: Vec<db::trust::FetchLog>,
    /// ASNs' holder names, shown beside the number.
    names: crate::util::map::SortedMap<String, String>,
    problems: Vec<String>,
}

/// Shows what is known even when the configuration or the database is broken (that
/// is when an administrator asks), then exits 1 if something was.
pub fn run(paths: &Paths, json: bool) -> Result<Outcome, CliError> {
    let report = gather(paths);
    let out = if json {
        json_text(&report, paths)
    } else {
        as_text(&report, paths)
    };
    print(out.as_bytes())?;
    match report.problems.len() {
        0 => Ok(Outcome::Success),
        n => Err(CliError::Other(format!("{n} problem(s), see above"))),
    }
}

fn gather(paths: &Paths) -> Report {
    let mut problems: Vec<String> = Vec::new();
    let cfg = config::load_logged(&paths.config())
        .map_err(|e| problems.push(format!("config: {e}")))
        .ok();
    let st = status::read(&paths.status())
        .map_err(|e| problems.push(format!("status: {e}")))
        .ok()
        .flatten();
    // Opened as any writer would (which also brings the journal mode to what the
    // file system allows), and read-only where it cannot write (a full disk, a user
    // without write access), as the other reading commands.
    let opened = db::open(paths)
        .or_else(|e| db::open_read(paths).map_err(|_| e))
        .and_then(|db| {
            let held = db.held()?;
            Ok((
                db.counts()?,
                db.journal_mode(),
                stored_per_source(&db)?,
                held,
                db.names().unwrap_or_default(),
            ))
        })
        .map_err(|e| problems.push(format!("database: {e}")))
        .ok();
    let groups = match (&cfg, &opened) {
        (Some(c), Some(o)) => per_group(c, &o.2),
        _ => Vec::new(),
    };
    let counts = opened.as_ref().map(|o| o.0);
    let held = opened.as_ref().map(|o| o.3.clone()).unwrap_or_default();
    let names = opened.as_ref().map(|o| o.4.clone()).unwrap_or_default();
    // What this open found, else what the last run recorded.
    let journal_mode = opened
        .as_ref()
        .map(|o| o.1.as_str().to_string())
        .or_else(|| st.as_ref().and_then(|s| s.journal_mode.clone()));
    // The snapshot file itself is the truth when it is known here.
    let last_snapshot = db::snapshot::last_written(paths)
        .map(util::iso)
        .or_else(|| st.as_ref().and_then(|s| s.last_snapshot.clone()));
    Report {
        cfg,
        st,
        counts,
        journal_mode,
        last_snapshot,
        groups,
        held,
        names,
        problems,
    }
}

/// A stored source and its number of rows.
type StoredRows = ((Kind, String), u64);

/// The number of stored rows of every stored source, sorted by source (a sorted list
/// searched by halves rather than a hash map: no hash table code on flash).
fn stored_per_source(db: &db::Db) -> Result<Vec<StoredRows>, db::StoreError> {
    let mut out = Vec::new();
    for kind in Kind::ALL {
        for s in db.sources(kind)? {
            out.push(((kind, s.source), s.count));
        }
    }
    crate::util::sort::sort(&mut out);
    Ok(out)
}

/// Each group's configured sources and the stored rows of them.
fn per_group(cfg: &Config, stored: &[StoredRows]) -> Vec<(String, usize, u64)> {
    cfg.groups
        .iter()
        .map(|g| {
            let (mut n, mut rows) = (0, 0);
            for kind in Kind::ALL {
                for s in g.sources(kind) {
                    n += 1;
                    let at =
                        stored.binary_search_by(|((k, n), _)| (*k, n.as_str()).cmp(&(kind, s)));
                    rows += at.map_or(0, |i| stored[i].1);
                }
            }
            (g.name.clone(), n, rows)
        })
        .collect()
}

/// The JSON form's own keys, in name order (as the `json!` object of serde_json
/// had them; the LuCI app and scripts read this).
fn as_json(r: &Report) -> Value {
    let text = |s: &Option<String>| s.as_deref().map_or(Value::Null, Value::from);
    let list = |l: Option<&Vec<String>>| {
        l.map_or(Value::Null, |l| {
            Value::Array(l.iter().map(|s| Value::from(s.as_str())).collect())
        })
    };
    let object = |members: Vec<(&str, Value)>| {
        Value::Object(
            members
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
        )
    };
    // The record with its keys sorted too: a written `Status` read back as a document.
    let st = r.st.as_ref().map_or(Value::Null, |s| {
        json::parse(json::to_string(s)).unwrap_or_default()
    });
    let counts = r.counts.map_or(Value::Null, |(a, f)| {
        object(vec![("asn", a.into()), ("fqdn", f.into())])
    });
    let groups = r.groups.iter().map(|(name, sources, stored)| {
        let g = object(vec![
            ("sources", (*sources as u64).into()),
            ("stored", (*stored).into()),
        ]);
        (name.clone(), g)
    });
    let cfg = r.cfg.as_ref();
    let mut v = object(vec![
        ("status", st),
        ("counts", counts),
        ("asns", list(cfg.map(|c| &c.asns))),
        ("fqdns", list(cfg.map(|c| &c.fqdns))),
        ("feeds", list(cfg.map(|c| &c.feeds))),
        ("countries", list(cfg.map(|c| &c.countries))),
        ("journal_mode", text(&r.journal_mode)),
        ("last_snapshot", text(&r.last_snapshot)),
        ("groups", Value::Object(groups.collect())),
        ("errors", list(Some(&r.problems))),
    ]);
    v.sort_keys();
    v
}

/// The JSON form, and last what `GET /status` answers (the LuCI app reads it from
/// here) in the API's bytes: spliced in rather than turned into a `Value`, which
/// would compile a second serializer for every type in it.
fn json_text(r: &Report, paths: &Paths) -> String {
    let mut s = as_json(r).to_string();
    s.pop();
    s.push_str(",\"overview\":");
    s.push_str(&String::from_utf8_lossy(
        &crate::overview::build(&crate::db::Pool::new(paths.clone(), 0)).to_json(),
    ));
    s.push_str("}\n");
    s
}

fn or_never(v: &Option<String>) -> String {
    v.clone().unwrap_or_else(|| "never".into())
}

/// Whether the daemon looks alive, from its heartbeat.
fn daemon_line(st: &Status) -> String {
    let age = st
        .heartbeat
        .as_deref()
        .and_then(util::parse_iso)
        .map(|t| util::unix_now() - t);
    match (&st.heartbeat, st.pid, age) {
        (Some(hb), Some(pid), Some(a)) if a <= 180 => {
            format!("running (pid {pid}, heartbeat {hb}, {a} s ago)")
        }
        (Some(hb), Some(pid), _) => format!("not responding? last heartbeat {hb} (pid {pid})"),
        (Some(hb), None, _) => format!("stopped (last heartbeat {hb})"),
        _ => "no heartbeat recorded".into(),
    }
}

fn as_text(r: &Report, paths: &Paths) -> String {
    let st = r.st.clone().unwrap_or_default();
    let mut out = String::new();
    let _ = writeln!(out, "daemon:        {}", daemon_line(&st));
    let _ = writeln!(
        out,
        "last run:      {} .. {}",
        or_never(&st.last_run_started),
        or_never(&st.last_run_finished)
    );
    if let (Some(a), Some(r)) = (st.last_run_added, st.last_run_removed) {
        let _ = writeln!(out, "last changes:  {a} added, {r} removed");
    }
    let _ = writeln!(out, "last success:  {}", or_never(&st.last_success));
    let last_error = st.last_error.as_deref().unwrap_or("none");
    let _ = writeln!(out, "last error:    {last_error}");
    let _ = writeln!(
        out,
        "next run:      {}",
        st.next_run.as_deref().unwrap_or("-")
    );
    if let Some(cfg) = &r.cfg {
        let (a, f) = (cfg.asns.len(), cfg.fqdns.len());
        let (u, c) = (cfg.feeds.len(), cfg.countries.len());
        let _ = writeln!(
            out,
            "sources:       {a} ASNs, {f} FQDNs, {u} feeds, {c} countries"
        );
        let services: Vec<String> = (cfg.groups.iter())
            .flat_map(|g| g.services.iter().map(move |s| format!("{s} ({})", g.name)))
            .collect();
        if !services.is_empty() {
            let _ = writeln!(out, "services:      {}", services.join(", "));
        }
    }
    if let Some((a, f)) = r.counts {
        let _ = writeln!(out, "stored:        {a} prefix values, {f} FQDN values");
    }
    // Per group when there are groups besides `default`.
    if r.groups.len() > 1 {
        for (name, n, rows) in &r.groups {
            let _ = writeln!(out, "group {name}: {n} sources, {rows} stored values");
        }
    }
    if let Some(m) = &r.journal_mode {
        let _ = writeln!(out, "journal mode:  {m}");
    }
    snapshot_lines(&mut out, r, &st, paths);
    for (kind, source, f) in &r.held {
        let Some(f) = f.first() else { continue };
        let _ = writeln!(
            out,
            "held:          {}: {}, since {}; held until confirmed (`confirm {source}`)",
            named(&crate::source::display(*kind, source), &r.names),
            db::trust::held_text(f),
            util::iso(f.since.unwrap_or(f.time))
        );
    }
    for (source, why) in &st.failures {
        let _ = writeln!(out, "failed:        {}: {why}", named(source, &r.names));
    }
    for (path, why) in &st.output_failures {
        let _ = writeln!(out, "output failed: {path}: {why}");
    }
    for (group, k) in &st.kernel_sets {
        let kib = k.estimate_bytes.div_ceil(1024);
        let _ = writeln!(
            out,
            "kernel sets:   group {group}: {} elements, about {kib} KiB of kernel memory",
            k.elements
        );
    }
    for p in &r.problems {
        let _ = writeln!(out, "problem:       {p}");
    }
    out
}

fn snapshot_lines(out: &mut String, r: &Report, st: &Status, paths: &Paths) {
    if let Some(f) = &paths.snapshot {
        let pending = if st.snapshot_pending {
            "; newer changes not in it yet"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "snapshot:      {} (last written {}{pending})",
            f.display(),
            or_never(&r.last_snapshot)
        );
    } else if let Some(t) = &r.last_snapshot {
        let _ = writeln!(out, "last snapshot: {t}");
    }
}

/// `AS62041` as shown beside its holder, `AS62041 (TELEGRAM)`, when the name is known.
fn named(shown: &str, names: &crate::util::map::SortedMap<String, String>) -> String {
    let holder = shown.strip_prefix("AS").and_then(|n| names.get(n));
    match holder {
        Some(h) => {
            let h: String = h
                .chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .collect();
            format!("{shown} ({h})")
        }
        None => shown.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::named;

    #[test]
    fn a_failed_asn_is_shown_beside_its_holder() {
        let names = [("62041".to_string(), "TELEGRAM\tInc".to_string())]
            .into_iter()
            .collect();
        assert_eq!(named("AS62041", &names), "AS62041 (TELEGRAM Inc)");
        assert_eq!(named("AS1", &names), "AS1");
        assert_eq!(named("example.com", &names), "example.com");
    }
}
