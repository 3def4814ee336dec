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
    use std::sync::atomic::{AtomicBool, AtomicU8};

    use crate::cli::{CliError, Outcome};
    use crate::config::{self, Paths};
    use crate::{collect, outputs, status};

    fn record(paths: &Paths, report: &collect::run::RunReport) {
        let result = status::update(&paths.status(), |st| {
            st.last_run_started = Some(report.started.clone());
            st.last_run_finished = Some(report.finished.clone());
            st.last_run_added = Some(report.added() as u32);
            st.last_run_removed = Some(report.removed() as u32);
            st.failures = report
                .failures()
                .map(|s| (s.name(), s.outcome.clone().err().unwrap_or_default()))
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

    /// The `run` command: collect every source once, store, render the outputs when
    /// anything changed. `Outcome::SourcesFailed` (exit 3) when a source failed.
    pub fn run(paths: &Paths) -> Result<Outcome, CliError> {
        let cfg = config::load_logged(&paths.config())?;
        if cfg.asns.is_empty() && cfg.fqdns.is_empty() {
            log::warn!(
                "no sources configured in {}: add some with `asn add ASN` or `fqdn add NAME`",
                paths.config().display()
            );
        }
        let report = collect::run::collect(
            paths,
            &cfg,
            None,
            &AtomicBool::new(false),
            &AtomicU8::new(0),
        )
        .map_err(|e| match e {
            collect::run::RunError::Store(s) => CliError::Store(s),
            other => CliError::Other(other.to_string()),
        })?;
        collect::run::log_report(&report);
        record(paths, &report);
        if report.changed() {
            let failed = outputs::render_all(paths, &cfg.outputs);
            if !failed.is_empty() {
                return Err(CliError::Other(format!(
                    "{} output(s) failed",
                    failed.len()
                )));
            }
        }
        Ok(if report.failures().next().is_some() {
            Outcome::SourcesFailed
        } else {
            Outcome::Success
        })
    }
}
