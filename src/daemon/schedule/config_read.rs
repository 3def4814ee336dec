//! The configuration file as the schedule reads it: a new good configuration queues
//! its new sources and renders its changed outputs, a broken or missing one keeps the
//! last good one, a change of how sources are fetched makes the failed ones due.

use super::*;

impl Schedule {
    /// The catalog file changed: the configuration is parsed again at the next read,
    /// whatever its text (a service's sources may have changed).
    pub fn catalog_changed(&mut self) {
        if let Some(ConfigRead::Text(t)) = &mut self.seen {
            // No file's text: the next read differs from it.
            t.push('\0');
        }
    }

    /// The file's content at `now`. New sources are queued for a run of their own,
    /// changed outputs rendered; a broken, missing or unreadable file keeps the last
    /// good configuration (at start a missing file is the empty configuration, a
    /// broken one stops everything until it is fixed). `stored` tells the sources
    /// that hold values; it is asked once, when the first good configuration arrives.
    pub fn config_read(
        &mut self,
        now: i64,
        read: ConfigRead,
        stored: &mut dyn FnMut() -> Result<Vec<Source>, String>,
    ) -> Vec<Action> {
        self.config_check_at = now + CONFIG_CHECK;
        // A missing file is the empty configuration at start, and stays so while
        // that is the configuration in force (only a file that goes away after it
        // held something is an error).
        let empty = ConfigRead::Text(String::new());
        let read = match read {
            ConfigRead::Missing(_) if self.cfg.is_none() || self.seen.as_ref() == Some(&empty) => {
                empty
            }
            other => other,
        };
        if self.seen.as_ref() == Some(&read) {
            return Vec::new();
        }
        let first = self.seen.is_none();
        self.seen = Some(read.clone());
        let parsed = match read {
            ConfigRead::Text(text) => config::parse(&text, &self.config_path)
                .map(|l| {
                    for w in &l.warnings {
                        log::warn!("{}: {w}", self.config_path.display());
                    }
                    l.config
                })
                .map_err(|e| e.to_string()),
            ConfigRead::Missing(e) | ConfigRead::Failed(e) => Err(e),
        };
        let new = match parsed {
            Ok(new) => new,
            Err(e) => {
                let what = if self.cfg.is_some() {
                    "keeping the last good configuration"
                } else {
                    "nothing is collected or swept until it is fixed"
                };
                self.record_error(now, format!("{e}; {what}"));
                return vec![self.write(now)];
            }
        };
        match self.cfg.take() {
            None => {
                if !first {
                    log::info!("{} is valid now", self.config_path.display());
                }
                self.first_schedule(now, &new, stored);
            }
            Some(old) => {
                log::info!("{} changed; reloaded", self.config_path.display());
                self.config_changed(now, &old, &new);
            }
        }
        self.cfg = Some(new);
        // The status shows the new schedule at once.
        vec![self.write(now)]
    }

    /// The first schedule: collect now when the last successful run is older than
    /// the interval, or when the database is empty while sources are configured (a
    /// database kept in RAM after a reboot, or one moved aside), so that the lists
    /// come back as soon as possible. Else the sources never collected (no stored
    /// values, no failure recorded: added while the daemon was stopped) are collected
    /// now on their own.
    fn first_schedule(
        &mut self,
        now: i64,
        cfg: &Config,
        stored: &mut dyn FnMut() -> Result<Vec<Source>, String>,
    ) {
        let interval = cfg.schedule.interval_secs() as i64;
        let last_ok = self
            .status
            .last_success
            .as_deref()
            .and_then(util::parse_iso);
        let has_sources = !cfg.has_no_sources();
        let (mut stored, failed) = match stored() {
            Ok(s) => (s, false),
            Err(e) => {
                self.record_error(now, format!("database: {e}"));
                (Vec::new(), true)
            }
        };
        let empty = has_sources && stored.is_empty();
        // Only from a store that holds something: an empty one (a fresh database, one
        // just moved aside) would flush live sets, so its outputs wait for the run.
        self.render_first = !stored.is_empty();
        crate::util::sort::sort(&mut stored);
        if !failed {
            let never = |(k, s): &Source| {
                stored
                    .binary_search_by(|x| (x.0, x.1.as_str()).cmp(&(*k, s)))
                    .is_err()
                    && !self.status.failures.contains_key(&source::display(*k, s))
            };
            for kind in Kind::ALL {
                let new = cfg.sources(kind).iter().map(|s| (kind, s.clone()));
                self.pending.extend(new.filter(never));
            }
        }
        self.next_run = match last_ok {
            // (A last success "in the future", after the clock was set back, is due.)
            Some(t) if t <= now && now - t < interval && !empty => t + interval,
            _ => now,
        };
        log::info!(
            "collecting every {}, next run {}",
            util::duration(interval.unsigned_abs()),
            util::iso(self.next_run)
        );
        if self.next_run > now && !self.pending.is_empty() {
            log::info!("never collected, collecting now: {}", names(&self.pending));
        }
    }

    fn config_changed(&mut self, now: i64, old: &Config, new: &Config) {
        for kind in Kind::ALL {
            for s in new.sources(kind) {
                let item = (kind, s.clone());
                if !old.sources(kind).contains(s) && !self.pending.contains(&item) {
                    self.pending.push(item);
                }
            }
        }
        if upstream_changed(old, new) {
            // A fixed `ripe.url` or resolver must not leave a failure (an NXDOMAIN
            // waits for the next full run) until then: the failed sources are due now.
            let failed: Vec<Source> = Kind::ALL
                .into_iter()
                .flat_map(|k| new.sources(k).iter().map(move |s| (k, s.clone())))
                .filter(|(k, s)| self.status.failures.contains_key(&source::display(*k, s)))
                .filter(|item| !self.pending.contains(item))
                .collect();
            if !failed.is_empty() {
                log::info!(
                    "upstream settings changed; trying again: {}",
                    names(&failed)
                );
                self.pending.extend(failed);
            }
        }
        let configured = |(k, s): &Source| new.sources(*k).contains(s);
        self.pending.retain(configured);
        self.retry.retain(configured);
        if self.retry.is_empty() {
            self.retry_at = None;
        }
        if new.schedule.interval_secs() != old.schedule.interval_secs() {
            // Keep the rhythm: one new interval after the last full run.
            let last = self.last_full_start.or_else(|| {
                let t = self.status.last_success.as_deref()?;
                util::parse_iso(t)
            });
            self.next_run = last.map_or(now, |t| t + new.schedule.interval_secs() as i64);
        }
        if new.outputs != old.outputs {
            self.render_backoff.reset();
            self.render = Some((now, Outputs::All));
        }
    }
}

/// Whether a setting of how sources are fetched changed (RIPEstat, DNS, the fetch
/// command or client, the ASN upstreams): what failed may answer now.
fn upstream_changed(old: &Config, new: &Config) -> bool {
    old.ripe != new.ripe
        || old.dns != new.dns
        || old.fetch != new.fetch
        || old.upstreams != new.upstreams
}
