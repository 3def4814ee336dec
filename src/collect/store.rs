//! The write side of a run: each answer is merged in a transaction of its own as soon
//! as it arrives, so that a run holds a few answers at a time (those being fetched and
//! the one being merged), never every answer of the run. Held all together until the
//! end, they made the peak grow by 1.8 MiB per 100,000 values collected (25 MiB at
//! 1,000,000; issue 38, item 15).

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::config::{self, Config, Paths};
use crate::db;
use crate::source::{self, Kind};
use crate::util;

use super::run::{gate, upstream_of, Pending, RunError, RunReport, SourceReport};
use super::run::{PHASE_FETCHING, PHASE_WRITING};
use super::{Fetched, SourceError};

/// How long a configuration read is trusted: a source removed meanwhile is not
/// written back, without a read of `config.json` per source.
const CONFIG_FRESH: Duration = Duration::from_secs(1);

/// Values that the answers being fetched, or waiting to be merged, may hold together
/// (one source's cap): a fetch starts only while the others hold less, so that four
/// big sources are not all in memory at once. Each is counted as the values stored
/// for it (its last answer) until its answer is there, then as the answer's.
const IN_FLIGHT_VALUES: u64 = 100_000;

/// Values of held answers a run keeps for second opinions after its last answer
/// (8 bytes each for IPv4, 0.8 MB): only what the store lacks of each answer is kept,
/// none when it only shrank, but a run of sources all answering new values (a
/// renumbering, or an upstream gone wrong) would otherwise keep the run's answers
/// (issue 38, item 15). A held answer past it stays held (nothing of it is lost: its
/// stored values were seen, and the next run asks again).
const HELD_VALUES: usize = 100_000;

/// The values in flight, shared by the fetching threads and the writer.
#[derive(Default)]
pub(super) struct Budget {
    used: Mutex<u64>,
    freed: Condvar,
}

impl Budget {
    fn used(&self) -> std::sync::MutexGuard<'_, u64> {
        self.used.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reserves `n` values, waiting while others hold too many (never when nothing
    /// is reserved: one source larger than the budget still goes).
    pub(super) fn take(&self, n: u64) {
        let mut used = self.used();
        while *used > 0 && *used + n > IN_FLIGHT_VALUES {
            used = self.freed.wait(used).unwrap_or_else(|p| p.into_inner());
        }
        *used += n;
    }

    /// Replaces a reservation of `was` values by `now` (the answer's real size).
    pub(super) fn resize(&self, was: u64, now: u64) {
        let mut used = self.used();
        *used = *used - was + now;
        if now < was {
            self.freed.notify_all();
        }
    }

    /// Gives back `n` values (the answer was merged, or dropped).
    pub(super) fn give(&self, n: u64) {
        *self.used() -= n;
        self.freed.notify_all();
    }
}

/// The store of one run, fed one answer at a time.
pub(super) struct Store<'a> {
    paths: &'a Paths,
    /// The configuration the run started with (the fallback of a broken one).
    cfg: &'a Config,
    db: db::Db,
    /// The configuration as it is now, and when it was read.
    now_cfg: (Config, Instant),
    warned: bool,
    /// The report's entries, by their index in the run's list of sources.
    entries: Vec<(usize, SourceReport)>,
    /// Held ASN answers kept for a second opinion, by the same index (what the
    /// store lacks of each, and when it was merged).
    held: Vec<Pending>,
    /// The values those hold together.
    held_values: usize,
    validators: Vec<(String, Option<super::Validators>)>,
    /// Answers merged so far.
    pub(super) stored: usize,
}

impl<'a> Store<'a> {
    pub(super) fn open(paths: &'a Paths, cfg: &'a Config) -> Result<Store<'a>, RunError> {
        let mut db = db::open(paths)?;
        db.set_history_days(cfg.history_days);
        Ok(Store {
            paths,
            cfg,
            db,
            now_cfg: (cfg.clone(), Instant::now() - CONFIG_FRESH),
            warned: false,
            entries: Vec::new(),
            held: Vec::new(),
            held_values: 0,
            validators: Vec::new(),
            stored: 0,
        })
    }

    /// The values stored for each of `wanted` (1 for none): what its answer is
    /// expected to hold.
    pub(super) fn expected(&self, wanted: &[(Kind, String)]) -> Result<Vec<u64>, RunError> {
        let mut stored = Vec::new();
        for kind in Kind::ALL {
            if wanted.iter().any(|w| w.0 == kind) {
                let mut s = self.db.sources(kind)?;
                crate::util::sort::sort_by(&mut s, |a, b| a.source < b.source);
                stored.push((kind, s));
            }
        }
        let count = |(k, name): &(Kind, String)| {
            let (_, s) = stored.iter().find(|s| s.0 == *k)?;
            let at = s.binary_search_by(|x| x.source.as_str().cmp(name)).ok()?;
            Some(s[at].count)
        };
        // The pages read for the counts are not kept beside the first answer.
        self.db.idle();
        Ok(wanted
            .iter()
            .map(|w| count(w).unwrap_or(0).max(1))
            .collect())
    }

    /// The configuration as it is now; one broken meanwhile falls back to the one the
    /// run started with (said once).
    fn config(&mut self) -> &Config {
        if self.now_cfg.1.elapsed() >= CONFIG_FRESH {
            let cfg = match config::load(&self.paths.config()) {
                Ok(l) => l.config,
                Err(e) => {
                    if !std::mem::replace(&mut self.warned, true) {
                        log::warn!("{e}; storing with the configuration the run started with");
                    }
                    self.cfg.clone()
                }
            };
            self.now_cfg = (cfg, Instant::now());
        }
        &self.now_cfg.0
    }

    /// Merges the answer of the `i`th source of the run (or records its failure).
    pub(super) fn source(
        &mut self,
        i: usize,
        (kind, source): (Kind, &str),
        result: Result<Fetched, SourceError>,
        phase: &AtomicU8,
    ) -> Result<(), RunError> {
        let name = source::display(kind, source);
        let cfg = self.config().clone();
        if !cfg.sources(kind).iter().any(|s| s == source) {
            log::info!("{name}: removed from the configuration during the run; not stored");
            return Ok(());
        }
        let mut f = match result {
            Ok(f) => f,
            Err(e) => {
                self.entries.push((i, failed(kind, source, e)));
                return Ok(());
            }
        };
        if kind == Kind::Feed {
            self.validators
                .push((source.to_string(), f.validators.clone()));
        }
        // The source goes into the store's compact form, its answer dropped first: a
        // big source is held once, never as text. A feed's 304 (bgp.tools between
        // downloads): the stored values, seen again now.
        // Its share of what answers may hold stays counted until it is stored: the
        // next large answer waits for the merge too (`collect::budget`).
        let (skipped, upstream) = (f.skipped, f.upstream);
        let lease = std::mem::take(&mut f.lease);
        let mut values = if f.not_modified {
            super::feed_state::stored_values(&self.db, kind, source)?
        } else {
            f.take_values(kind)
        };
        drop(f);
        let fetched = values.len();
        let up = upstream_of(&cfg, kind, upstream);
        let g = gate(&cfg, kind);
        phase.store(PHASE_WRITING, Ordering::SeqCst);
        let when = (util::unix_now(), cfg.ttl_days);
        let merged = (|| {
            let tx = self.db.write()?;
            let m = tx.merge_answer(kind, source, &mut values, when, Some(up), &g, None)?;
            tx.commit().map(|()| m)
        })();
        phase.store(PHASE_FETCHING, Ordering::SeqCst);
        // Its page cache (2 MiB) is not kept beside the next answer: a large one
        // and its compact copy are all a run holds at its peak.
        self.db.idle();
        drop(lease);
        let m = merged?;
        self.stored += 1;
        if m.held() && kind == Kind::Asn {
            self.hold(i, &name, values, when.0);
        }
        let report = SourceReport {
            kind,
            source: source.to_string(),
            fetched,
            skipped,
            upstream: upstream.or((kind == Kind::Asn).then_some(up)),
            fetch: Some(m.fetch),
            outcome: Ok(m.stats),
        };
        self.entries.push((i, report));
        Ok(())
    }

    /// Keeps a held answer (what the store lacks of it) for a second opinion after
    /// the run, while those kept hold at most [`HELD_VALUES`] values together.
    fn hold(&mut self, i: usize, name: &str, values: db::Values, at: i64) {
        if self.held_values + values.len() > HELD_VALUES {
            log::info!(
                "{name}: held; too many held values in this run to keep its answer for a \
                 second opinion now (at most {HELD_VALUES}): a later run asks"
            );
            return;
        }
        self.held_values += values.len();
        self.held.push((i, values, at));
    }

    /// After the last answer: sweeps unconfigured sources (a run of every source),
    /// saves the feeds' validators, and orders the report as the run's sources.
    pub(super) fn finish(
        mut self,
        full: bool,
        started: i64,
        phase: &AtomicU8,
    ) -> Result<(RunReport, Vec<Pending>), RunError> {
        let mut report = RunReport {
            started: util::iso(started),
            ..RunReport::default()
        };
        self.now_cfg.1 = Instant::now() - CONFIG_FRESH;
        let cfg = self.config().clone();
        if full {
            phase.store(PHASE_WRITING, Ordering::SeqCst);
            let tx = self.db.write()?;
            let now = util::unix_now();
            for kind in Kind::ALL {
                report.swept +=
                    tx.sweep_unconfigured(kind, cfg.sources(kind), now, cfg.ttl_days)?;
            }
            tx.commit()?;
        }
        super::feed_state::save(self.paths, self.validators, cfg.sources(Kind::Feed));
        crate::util::sort::sort_by_key(&mut self.entries, |e| e.0);
        let at = |i: usize| self.entries.iter().position(|e| e.0 == i);
        let pending = self
            .held
            .into_iter()
            .filter_map(|(i, v, t)| Some((at(i)?, v, t)))
            .collect();
        report.sources = self.entries.into_iter().map(|e| e.1).collect();
        report.finished = util::now_iso();
        Ok((report, pending))
    }
}

/// The report of a source whose fetch failed.
fn failed(kind: Kind, source: &str, e: SourceError) -> SourceReport {
    SourceReport {
        kind,
        source: source.to_string(),
        fetched: 0,
        skipped: 0,
        upstream: None,
        fetch: None,
        outcome: Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_lets_one_big_source_go_alone() {
        let b = Budget::default();
        b.take(300_000); // more than the budget, but nothing else is in flight
        b.resize(300_000, 10);
        b.take(60_000); // room now: the answer held 10 values
        assert_eq!(*b.used(), 60_010);
        b.give(60_010);
        assert_eq!(*b.used(), 0);
    }
}
