//! `run`: collect every source once, store, render the outputs when anything changed,
//! and record the run in `status.json` (so that cron can replace the daemon).

#[cfg(not(feature = "collect"))]
/// Without the `collect` feature there is nothing to collect with.
pub fn run(_: &crate::config::Paths) -> Result<super::Outcome, super::CliError> {
    Err(super::missing("run", "collect"))
}

#[cfg(feature = "collect")]
pub use imp::run;

#[cfg(feature = "collect")]
mod imp {
    use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
    use std::sync::Arc;

    use crate::cli::{CliError, Outcome};
    use crate::config::{self, Config, Paths};
    use crate::db::snapshot::Saver;
    use crate::{collect, db, outputs, status, util};

    fn record(paths: &Paths, report: &collect::run::RunReport) {
        let result = status::update(&paths.status(), |st| {
            st.journal_mode = Some(db::journal_mode_for(&paths.db).as_str().into());
            st.last_run_started = Some(report.started.clone());
            st.last_run_finished = Some(report.finished.clone());
            st.last_run_added = Some(report.added() as u32);
            st.last_run_removed = Some(report.removed() as u32);
            for s in &report.sources {
                if let Some(up) = s.upstream {
                    st.upstreams.insert(s.name(), up.to_string());
                }
            }
            st.failures = report
                .failures()
                .filter_map(|s| Some((s.name(), s.outcome.as_ref().err()?.to_string())))
                .collect();
            if st.failures.is_empty() {
                st.last_success = Some(report.finished.clone());
            } else {
                st.last_error = Some(format!(
                    "{}: {} source(s) failed in `run`",
                    report.finished,
                    st.failures.len()
                ));
            }
        });
        if let Err(e) = result {
            log::warn!("{}: {e}", paths.status().display());
        }
    }

    /// Records a run that failed as a whole (storage: a full disk, a read-only file
    /// system) as the daemon does, so that `status`, `/health` and the page show it.
    fn record_failure(paths: &Paths, started: i64, e: &collect::run::RunError) {
        let now = util::iso(util::unix_now());
        let result = status::update(&paths.status(), |st| {
            st.last_run_started = Some(util::iso(started));
            st.last_run_finished = Some(now.clone());
            st.last_error = Some(format!("{now}: collection failed: {e}"));
        });
        if let Err(e) = result {
            log::warn!("{}: {e}", paths.status().display());
        }
    }

    /// Records the outputs' result as the daemon does: `output_failures` and, when one
    /// failed, `last_error`.
    fn record_outputs(paths: &Paths, failed: &[(String, String)], sets: Vec<outputs::Loaded>) {
        let result = status::update(&paths.status(), |st| {
            st.kernel_sets.extend(sets);
            st.output_failures.clear();
            let mut all = String::new();
            for (p, e) in failed {
                st.output_failures.insert(p.clone(), e.clone());
                all = format!("{all}; {p}: {e}");
            }
            if let Some(all) = all.get(2..) {
                let now = util::iso(util::unix_now());
                st.last_error = Some(format!("{now}: output failed: {all}"));
            }
        });
        if let Err(e) = result {
            log::warn!("{}: {e}", paths.status().display());
        }
    }

    /// Writes the snapshot when changes wait for it (this run's or an earlier run's,
    /// from `status.json`) and the last one is old enough.
    fn snapshot(paths: &Paths, cfg: &Config, changed: bool) -> Result<(), CliError> {
        if paths.snapshot.is_none() {
            return Ok(());
        }
        let pending = status::read(&paths.status())
            .ok()
            .flatten()
            .is_some_and(|s| s.snapshot_pending);
        let mut saver = Saver::new(pending);
        match saver.after_run(paths, cfg, changed, util::unix_now()) {
            Some(Ok(t)) => crate::cli::snapshot::record(paths, Some(t)),
            Some(Err(e)) => {
                crate::cli::snapshot::record(paths, None);
                return Err(CliError::Store(e));
            }
            None if saver.unsaved() && !pending => crate::cli::snapshot::record(paths, None),
            None => {}
        }
        Ok(())
    }

    /// SIGINT (ctrl-C) and SIGTERM: while fetching, nothing is written yet, so the
    /// run ends at once saying that nothing of it was stored; while storing, it says
    /// so and stops once the values are stored (a second ctrl-C leaves at once: each
    /// source's write is a transaction, SQLite rolls an unfinished one back).
    fn interruptible() -> Result<(Arc<AtomicBool>, Arc<AtomicU8>), CliError> {
        use signal_hook::consts::{SIGINT, SIGTERM};
        let (stop, phase) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicU8::new(0)));
        for sig in [SIGINT, SIGTERM] {
            signal_hook::flag::register_conditional_shutdown(sig, 130, stop.clone())
                .and_then(|_| signal_hook::flag::register(sig, stop.clone()))
                .map_err(|source| CliError::Io {
                    what: format!("cannot handle signal {sig}"),
                    source,
                })?;
        }
        let (s, p) = (stop.clone(), phase.clone());
        std::thread::spawn(move || {
            while !s.load(Ordering::SeqCst) {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            match p.load(Ordering::SeqCst) {
                collect::run::PHASE_FETCHING => log::error!(
                    "interrupted while fetching: nothing of this run was stored; the stored \
                     values stay as they were"
                ),
                collect::run::PHASE_CONFIRMING => log::error!(
                    "interrupted: this run's values are stored, but the held answers were not \
                     confirmed, and the outputs were not rendered"
                ),
                _ => {
                    log::warn!("interrupted: stopping once what is being stored is stored");
                    return;
                }
            }
            std::process::exit(130);
        });
        Ok((stop, phase))
    }

    /// The `run` command: collect every source once, store, render the outputs when
    /// anything changed. `Outcome::SourcesFailed` (exit 3) when a source failed.
    pub fn run(paths: &Paths) -> Result<Outcome, CliError> {
        crate::daemon::refuse_if_running(paths)?;
        let cfg = config::load_logged(&paths.config())?;
        if cfg.has_no_sources() {
            log::warn!(
                "no sources configured in {}: add some with `asn add ASN`, `fqdn add NAME`, \
                 `feed add URL` or `country add CC`",
                paths.config().display()
            );
        }
        let started = util::unix_now();
        let (stop, phase) = interruptible()?;
        let report = collect::run::collect(paths, &cfg, None, &stop, &phase).map_err(|e| {
            record_failure(paths, started, &e);
            match e {
                collect::run::RunError::Store(s) => CliError::Store(s),
                other => CliError::Run(other),
            }
        })?;
        collect::run::log_report(&report);
        record(paths, &report);
        if stop.load(Ordering::SeqCst) {
            return Err(CliError::Other(
                "interrupted after storing this run's values: the outputs were not rendered \
                 and no snapshot was written (the next `run` or the daemon does both)"
                    .into(),
            ));
        }
        // Outputs that failed at an earlier `run` (the firewall was not ready, say) are
        // rendered again even when nothing changed: cron has no retry of its own.
        let retry = status::read(&paths.status())
            .ok()
            .flatten()
            .is_some_and(|s| !s.output_failures.is_empty());
        let mut failed = Vec::new();
        if report.changed() || retry {
            let sets;
            (failed, sets) = outputs::render_all_sets(paths, &cfg.outputs, None);
            record_outputs(paths, &failed, sets);
        }
        snapshot(paths, &cfg, report.changed())?;
        if !failed.is_empty() {
            return Err(CliError::Other(format!(
                "{} output(s) failed",
                failed.len()
            )));
        }
        Ok(if report.failures().next().is_some() {
            Outcome::SourcesFailed
        } else {
            Outcome::Success
        })
    }
}
