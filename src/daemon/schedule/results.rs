//! What the jobs report back to the schedule: a collection (per-source results, or a
//! failure of the run as a whole), rendered outputs, or a job that crashed; and the
//! early retries those results plan.

use super::{Action, Busy, Outputs, Schedule};
use crate::collect::run::{RunError, RunReport};
use crate::util;

impl Schedule {
    /// A collection ended: with its report, or why it failed as a whole.
    pub fn collected(&mut self, now: i64, result: Result<RunReport, RunError>) -> Vec<Action> {
        let Some(Busy::Collecting { full, forced }) = self.busy.take() else {
            return Vec::new();
        };
        let mut actions = Vec::new();
        let render = match result {
            Err(RunError::Stopped) => None,
            Ok(report) => {
                self.save = true;
                self.status.last_run_finished = Some(report.finished.clone());
                self.status.last_run_added = Some(report.added() as u32);
                self.status.last_run_removed = Some(report.removed() as u32);
                if full {
                    self.status.failures.clear();
                    self.run_backoff.reset();
                }
                for s in &report.sources {
                    if let Some(up) = s.upstream {
                        self.status.upstreams.insert(s.name(), up.to_string());
                    }
                    match &s.outcome {
                        Ok(_) => self.status.failures.remove(&s.name()),
                        Err(e) => self.status.failures.insert(s.name(), e.to_string()),
                    };
                }
                self.plan_retry(now, &report, full);
                let failed: Vec<String> = report
                    .sources
                    .iter()
                    .filter_map(|s| Some(format!("{}: {}", s.name(), s.outcome.as_ref().err()?)))
                    .collect();
                if failed.is_empty() {
                    if full {
                        self.status.last_success = Some(report.finished.clone());
                    }
                } else {
                    let msg = format!("{} source(s) failed: {}", failed.len(), failed.join("; "));
                    self.record_error(now, msg);
                }
                if report.changed() {
                    Some(Outputs::All)
                } else {
                    forced
                }
            }
            Err(e) => {
                self.status.last_run_finished = Some(util::iso(now));
                self.record_error(now, format!("collection failed: {e}"));
                // Part of the run may be stored: the next collection renders.
                self.render_next = true;
                let delay = self.run_backoff.next(self.retry_after(), self.interval());
                self.next_run = self.next_run.min(now + delay);
                // Never render after the run failed as a whole: the database may just
                // have been moved aside, and an empty fresh one must not flush the
                // live sets. What was to be rendered (`forced`) waits for the next
                // collection, which renders everything.
                None
            }
        };
        actions.push(self.write(now));
        if let Some(which) = render.filter(|_| !self.stopped) {
            self.render_now(which, &mut actions);
        }
        actions
    }

    /// Keeps the list of sources to try again early: a full run replaces it and
    /// restarts the backoff, other runs (new sources, retries) update it with their
    /// own results. Only transient failures are retried early: waiting cannot fix a
    /// host name that does not exist or a request RIPEstat rejects.
    fn plan_retry(&mut self, now: i64, report: &RunReport, full: bool) {
        if full {
            self.retry.clear();
            self.retry_at = None;
            self.retry_backoff.reset();
        }
        for s in &report.sources {
            let item = (s.kind, s.source.clone());
            let transient = match &s.outcome {
                Ok(_) => false,
                Err(e) if e.is_transient() => true,
                Err(e) => {
                    log::warn!(
                        "{}: {e}: waiting will not help; tried again with the next full run at {}",
                        s.name(),
                        util::iso(self.next_run)
                    );
                    false
                }
            };
            let known = self.retry.contains(&item);
            if transient && !known {
                self.retry.push(item);
            } else if !transient && known {
                self.retry.retain(|x| x != &item);
            }
        }
        if self.retry.is_empty() {
            self.retry_at = None;
            self.retry_backoff.reset();
            return;
        }
        if self.retry_at.is_some() {
            return; // already planned: keep that time
        }
        let at = now + self.retry_backoff.next(self.retry_after(), self.interval());
        if at < self.next_run {
            log::info!(
                "trying {} failed source(s) again at {}",
                self.retry.len(),
                util::iso(at)
            );
            self.retry_at = Some(at);
        }
    }

    /// What the `load` outputs put in the kernel, per group (written with the
    /// status that [`Self::rendered`] then writes).
    pub fn kernel_sets(&mut self, sets: Vec<crate::outputs::Loaded>) {
        self.status.kernel_sets.extend(sets);
    }

    /// The outputs were rendered; `failures` by path and why.
    pub fn rendered(&mut self, now: i64, failures: Vec<(String, String)>) -> Vec<Action> {
        let Some(Busy::Rendering(done)) = self.busy.take() else {
            return Vec::new();
        };
        self.plan_refresh(now, &done, &failures);
        // Outputs not rendered this time keep their earlier result.
        self.status.output_failures.retain(|p, _| !done.contains(p));
        let all: Vec<String> = failures.iter().map(|(p, e)| format!("{p}: {e}")).collect();
        self.status.output_failures.extend(failures);
        if all.is_empty() {
            self.render_backoff.reset();
        } else {
            self.record_error(now, format!("output failed: {}", all.join("; ")));
            // A firewall that was not ready (at boot, say) gets another chance soon,
            // whether or not the data changes meanwhile; only the failed outputs.
            let failed = self.status.output_failures.keys().cloned();
            let which = Outputs::Only(failed.collect());
            let delay = self
                .render_backoff
                .next(self.retry_after(), self.interval());
            self.render_at(now + delay, which);
        }
        vec![self.write(now)]
    }

    /// Kernel elements with a timeout expire unless a load sends them again, and a
    /// run that changes nothing loads nothing: the `"timeout": true` outputs just
    /// loaded are loaded again halfway to their expiry, whatever the runs do. Such a
    /// load sends every element (that refreshes it) and reads back nothing while the
    /// daemon's memory of the sets holds: one batch every `ttl_days / 2`.
    fn plan_refresh(&mut self, now: i64, done: &[String], failures: &[(String, String)]) {
        let Some(cfg) = &self.cfg else { return };
        let mut half = i64::MAX;
        let mut names = Vec::new();
        for o in &cfg.outputs {
            let (Some(t), name) = (o.kernel_timeout, o.name()) else {
                continue;
            };
            if done.contains(&name) && !failures.iter().any(|f| f.0 == name) {
                half = half.min(i64::from(t) / 2);
                names.push(name);
            }
        }
        if !names.is_empty() {
            self.render_at(now + half, Outputs::Only(names));
        }
    }

    /// The job ended without a word (it crashed).
    pub fn job_lost(&mut self, now: i64) -> Vec<Action> {
        if let Some(Busy::Collecting {
            forced: Some(which),
            ..
        }) = self.busy.take()
        {
            self.render_at(now + self.retry_after(), which);
        }
        self.record_error(now, "collection job crashed".into());
        vec![self.write(now)]
    }
}
