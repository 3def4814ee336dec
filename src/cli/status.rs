//! `status [--json]`: what the daemon and the last runs recorded, and what is stored.

use super::output::print;
use super::{CliError, Outcome};
use crate::config::{self, Paths};
use crate::{db, status, util};

/// Shows what is known even when the configuration or the database is broken (that
/// is when an administrator asks), then exits 1 if something was.
pub fn run(paths: &Paths, json: bool) -> Result<Outcome, CliError> {
    let mut problems: Vec<String> = Vec::new();
    let cfg = config::load_logged(&paths.config())
        .map_err(|e| problems.push(format!("config: {e}")))
        .ok();
    let st = status::read(&paths.status())
        .map_err(|e| problems.push(format!("status: {e}")))
        .ok()
        .flatten();
    let opened = db::open(paths)
        .and_then(|db| Ok((db.counts()?, db.journal_mode())))
        .map_err(|e| problems.push(format!("database: {e}")))
        .ok();
    let counts = opened.map(|o| o.0);
    // What this open found, else what the last run recorded.
    let journal_mode = opened
        .map(|o| o.1.as_str().to_string())
        .or_else(|| st.as_ref().and_then(|s| s.journal_mode.clone()));
    // The snapshot file itself is the truth when it is known here.
    let last_snapshot = db::snapshot::last_written(paths)
        .map(util::iso)
        .or_else(|| st.as_ref().and_then(|s| s.last_snapshot.clone()));
    let mut out = String::new();
    if json {
        let v = serde_json::json!({
            "status": st,
            "counts": counts.map(|c| serde_json::json!({"asn": c.0, "fqdn": c.1})),
            "asns": cfg.as_ref().map(|c| &c.asns),
            "fqdns": cfg.as_ref().map(|c| &c.fqdns),
            "journal_mode": journal_mode,
            "last_snapshot": last_snapshot,
            "errors": problems,
            // What `GET /status` answers (the LuCI app reads it from here).
            "overview": crate::overview::build(paths),
        });
        out = v.to_string();
        out.push('\n');
    } else {
        let st = st.unwrap_or_default();
        let or_never = |v: &Option<String>| v.clone().unwrap_or_else(|| "never".into());
        let age = st
            .heartbeat
            .as_deref()
            .and_then(util::parse_iso)
            .map(|t| util::unix_now() - t);
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
        if let (Some(a), Some(r)) = (st.last_run_added, st.last_run_removed) {
            out.push_str(&format!("last changes:  {a} added, {r} removed\n"));
        }
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
        if let Some(m) = &journal_mode {
            out.push_str(&format!("journal mode:  {m}\n"));
        }
        if let Some(f) = &paths.snapshot {
            out.push_str(&format!(
                "snapshot:      {} (last written {}{})\n",
                f.display(),
                or_never(&last_snapshot),
                if st.snapshot_pending {
                    "; newer changes not in it yet"
                } else {
                    ""
                }
            ));
        } else if let Some(t) = &last_snapshot {
            out.push_str(&format!("last snapshot: {t}\n"));
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
    print(out.as_bytes())?;
    match problems.len() {
        0 => Ok(Outcome::Success),
        n => Err(CliError::Other(format!("{n} problem(s), see above"))),
    }
}
