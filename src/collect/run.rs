//! One collection run: fetch every source (network work, outside any transaction),
//! a few at a time, and merge each answer as it arrives in a transaction of its own
//! (`store`: the configuration re-read, so that a source removed meanwhile is not
//! written back); then sweep unconfigured sources.

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread;

use crate::config::{self, Config, Paths};
use crate::db::trust::{Fetch, Gate};
use crate::db::{self, MergeStats, StoreError};
use crate::source::{self, Kind};
use crate::util;

use super::asn::AsnClient;
use super::dns::DnsClient;
use super::feed::FeedClient;
use super::ripe::RipeClient;
use super::{Fetched, SourceError, Transport};

/// How many sources are fetched at the same time: enough to hide network latency,
/// few enough to be polite to RIPEstat and light on a router.
pub const PARALLEL_FETCHES: usize = 4;

/// What a run is doing, so that a signal handler knows whether it may leave at once
/// (fetching) or must wait for a commit (writing).
pub const PHASE_IDLE: u8 = 0;
/// Fetching sources: nothing is written, stopping now loses nothing.
pub const PHASE_FETCHING: u8 = 1;
/// Inside the write transactions: wait for them.
pub const PHASE_WRITING: u8 = 2;
/// Asking second opinions on held answers, after the rest was stored: stopping now
/// loses only those.
pub const PHASE_CONFIRMING: u8 = 3;

/// What happened to one source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceReport {
    /// Its kind.
    pub kind: Kind,
    /// The normalised source.
    pub source: String,
    /// Values in the answer (after normalisation) and how many were invalid.
    pub fetched: usize,
    /// Invalid values left out.
    pub skipped: usize,
    /// The ASN upstream that answered (`ripestat`, `bgptools`, `ipverse`).
    pub upstream: Option<&'static str>,
    /// The fetch recorded for it (held, applied or confirmed, with the counts).
    pub fetch: Option<Fetch>,
    /// What the merge did, or why the source failed (its rows were left untouched).
    /// The error stays typed so that the daemon can tell transient failures (retried
    /// early) from permanent ones.
    pub outcome: Result<MergeStats, SourceError>,
}

impl SourceReport {
    /// `AS62041` or `example.com`.
    pub fn name(&self) -> String {
        source::display(self.kind, &self.source)
    }
    /// Whether its answer was held by the gate.
    pub fn held(&self) -> bool {
        self.fetch
            .as_ref()
            .is_some_and(|f| f.state == db::trust::HELD)
    }
}

/// The gate of a kind: host names' answers change too often to hold.
pub(super) fn gate(cfg: &Config, kind: Kind) -> Gate {
    match kind {
        Kind::Fqdn => Gate::OFF,
        _ => Gate {
            max_shrink_percent: cfg.trust.max_shrink_percent,
            max_growth_percent: cfg.trust.max_growth_percent,
            confirm_after: i64::from(cfg.trust.confirm_after_hours) * 3600,
            reference: i64::from(cfg.trust.reference_days) * 86_400,
        },
    }
}

/// The upstream recorded for an answer of `kind`.
pub(super) fn upstream_of(
    cfg: &Config,
    kind: Kind,
    answered: Option<&'static str>,
) -> &'static str {
    match kind {
        Kind::Asn => answered.unwrap_or("ripestat"),
        Kind::Country => "ripestat",
        Kind::Feed => "feed",
        Kind::Fqdn if cfg.dns.resolver == config::Resolver::Doh => "doh",
        Kind::Fqdn => "dns",
    }
}

/// A held ASN answer kept for a second opinion: its index in the report, the values
/// it had that the store lacks, and when it was merged (the stored values it had are
/// those seen then: `db::WriteTx::held_answer`).
pub(super) type Pending = (usize, db::Values, i64);

/// What a run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunReport {
    /// When it started.
    pub started: String,
    /// When it finished.
    pub finished: String,
    /// One entry per source, ASNs first.
    pub sources: Vec<SourceReport>,
    /// Rows of unconfigured sources deleted after expiry.
    pub swept: usize,
}

impl RunReport {
    /// The sources that failed.
    pub fn failures(&self) -> impl Iterator<Item = &SourceReport> {
        self.sources.iter().filter(|s| s.outcome.is_err())
    }
    /// Values stored for the first time by this run.
    pub fn added(&self) -> usize {
        self.sources
            .iter()
            .filter_map(|s| s.outcome.as_ref().ok())
            .map(|m| m.added)
            .sum()
    }
    /// Values deleted by this run: expired ones of its sources and swept ones.
    pub fn removed(&self) -> usize {
        self.swept
            + self
                .sources
                .iter()
                .filter_map(|s| s.outcome.as_ref().ok())
                .map(|m| m.removed)
                .sum::<usize>()
    }
    /// Whether the stored data changed (so outputs need rendering again).
    pub fn changed(&self) -> bool {
        self.swept > 0
            || self
                .sources
                .iter()
                .any(|s| matches!(&s.outcome, Ok(m) if m.added > 0 || m.removed > 0))
    }
}

/// Why a run as a whole failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Storage failed; nothing of this run was stored.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The run was asked to stop before it wrote anything.
    #[error("stopped before storing anything")]
    Stopped,
    /// The run was asked to stop after it had stored some sources (each in its own
    /// transaction); the others were not fetched or not stored.
    #[error("stopped after storing {0} sources; the others were not stored")]
    StoppedAfter(usize),
}

/// Fetches one source.
fn fetch_one(c: &Clients, kind: Kind, source: &str) -> Result<Fetched, SourceError> {
    match kind {
        Kind::Asn => c.asn.fetch(source),
        Kind::Fqdn => c.dns.resolve(source),
        Kind::Feed => c.feed.fetch(source),
        Kind::Country => c.asn.ripe.fetch_country(source),
    }
}

/// The clients of one run, one per upstream, all over the one transport.
struct Clients {
    asn: AsnClient,
    dns: DnsClient,
    feed: FeedClient,
}

/// Whether a run's fetching is to stop (asked to, or its store failed).
type Stopped<'a> = dyn Fn() -> bool + Sync + 'a;

/// Runs `f` over `items` (with each one's index) on up to [`PARALLEL_FETCHES`]
/// threads. Items not started when `stop` is set are left out.
fn parallel<T: Sync>(items: &[T], stop: &Stopped<'_>, f: impl Fn(usize, &T) + Sync) {
    let next = AtomicUsize::new(0);
    let workers = PARALLEL_FETCHES.min(items.len());
    thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= items.len() || stop() {
                    break;
                }
                f(i, &items[i]);
            });
        }
    });
}

/// Fetches every wanted source, a few at a time, each watched for slowness, and
/// hands each answer to `done` with its index as soon as it is there. `go` says
/// whether a fetch may start (it may wait for room first).
fn fetch_all(
    wanted: &[(Kind, String)],
    stop: &Stopped<'_>,
    cfg: &Config,
    clients: &Clients,
    watch: &super::slow::Watch,
    go: impl Fn(usize) -> bool + Sync,
    done: impl Fn(usize, Result<Fetched, SourceError>) + Sync,
) {
    parallel(wanted, stop, |i, (kind, source)| {
        if !go(i) {
            return;
        }
        let name = source::display(*kind, source);
        let mut r = watch.fetch(name, || fetch_one(clients, *kind, source));
        // Feeds are lists the user chose; what an upstream or a (possibly poisoned)
        // DNS answer says is checked.
        if let (Ok(f), Kind::Asn | Kind::Country | Kind::Fqdn) = (&mut r, kind) {
            if !cfg.allows_special(*kind, source) {
                super::trust::drop_special(f, &source::display(*kind, source));
            }
        }
        match &r {
            Ok(f) => log::debug!(
                "{}: fetched {} {}",
                source::display(*kind, source),
                f.values.len(),
                crate::util::values(f.values.len())
            ),
            Err(e) => log::debug!("{}: {e}", source::display(*kind, source)),
        }
        done(i, r);
    });
}

/// The upstream URLs that collecting `wanted` reaches (for the transport: the CA
/// bundle is read only when one of them needs https).
fn urls_of<'a>(cfg: &'a Config, wanted: &'a [(Kind, String)]) -> Vec<&'a str> {
    let mut urls = Vec::new();
    if wanted.iter().any(|(k, _)| *k == Kind::Asn) {
        urls.extend(AsnClient::urls(cfg));
        // Holder names come from RIPEstat whatever the ASN upstreams.
        urls.push(cfg.ripe.url.as_str());
    }
    if wanted.iter().any(|(k, _)| *k == Kind::Country) {
        urls.push(cfg.ripe.url.as_str());
    }
    urls.extend(
        wanted
            .iter()
            .filter(|(k, _)| *k == Kind::Feed)
            .map(|(_, s)| s.as_str()),
    );
    if cfg.dns.resolver == config::Resolver::Doh && wanted.iter().any(|(k, _)| *k == Kind::Fqdn) {
        urls.push(cfg.dns.doh_url.as_str());
    }
    urls
}

/// Collects the sources of `cfg` (all of them, or only those in `only`) and stores
/// the results. `stop` ends the fetching early (nothing is stored then); `phase`
/// tells observers whether a commit is under way.
pub fn collect(
    paths: &Paths,
    cfg: &Config,
    only: Option<&[(Kind, String)]>,
    stop: &AtomicBool,
    phase: &AtomicU8,
) -> Result<RunReport, RunError> {
    let started = util::unix_now();
    super::budget::one_heap();
    let wanted: Vec<(Kind, String)> = match only {
        Some(list) => list.to_vec(),
        None => Kind::ALL
            .iter()
            .flat_map(|k| cfg.sources(*k).iter().map(move |s| (*k, s.clone())))
            .collect(),
    };
    // Open (and, on a first start, migrate) the database before the network work, so
    // that a storage problem is reported without fetching anything.
    let stamp = bgptools_stamp(paths, cfg, &db::open(paths)?)?;
    phase.store(PHASE_FETCHING, Ordering::SeqCst);
    // The CA bundle is read only when a source that is collected needs https.
    let urls = urls_of(cfg, &wanted);
    let transport = Transport::new(&cfg.fetch, &urls);
    let mut ripe = RipeClient::new(&cfg.ripe, &transport);
    ripe.min_prefix = cfg.min_prefix;
    ripe.max_age_hours = cfg.trust.max_age_hours;
    let feeds: Vec<&str> = wanted
        .iter()
        .filter(|(k, _)| *k == Kind::Feed)
        .map(|(_, s)| s.as_str())
        .collect();
    let mut feed = FeedClient::new(cfg, &transport);
    feed.since = super::feed_state::load(paths, &feeds)?;
    let clients = Clients {
        asn: AsnClient::with_stamp(cfg, &transport, ripe, stamp),
        dns: DnsClient::new(&cfg.dns, &transport),
        feed,
    };
    let watch = super::slow::Watch::default();
    let (done, halt) = (AtomicBool::new(false), AtomicBool::new(false));
    let stopped = || stop.load(Ordering::Relaxed) || halt.load(Ordering::Relaxed);
    let mut store = super::store::Store::open(paths, cfg)?;
    let expected = store.expected(&wanted)?;
    let budget = super::store::Budget::default();
    let mut failure = None;
    // A rendezvous: a fetch that is done waits until the answer before it is merged;
    // a fetch starts when the answers in flight leave room in the budget.
    let (send, answers) = mpsc::sync_channel(0);
    thread::scope(|s| {
        s.spawn(|| watch.report(&done));
        let (wanted, clients, watch, done, stopped) = (&wanted, &clients, &watch, &done, &stopped);
        let (budget, expected) = (&budget, &expected);
        s.spawn(move || {
            let go = |i: usize| {
                budget.take(expected[i]);
                let go = !stopped();
                if !go {
                    budget.give(expected[i]);
                }
                go
            };
            fetch_all(wanted, stopped, cfg, clients, watch, go, |i, r| {
                let n = r.as_ref().map_or(0, |f| f.values.len() as u64);
                budget.resize(expected[i], n);
                let _ = send.send((i, r, n));
            });
            done.store(true, Ordering::Relaxed);
        });
        for (i, r, n) in answers.iter() {
            if failure.is_none() && !stop.load(Ordering::SeqCst) {
                let (kind, source) = &wanted[i];
                if let Err(e) = store.source(i, (*kind, source), r, phase) {
                    halt.store(true, Ordering::SeqCst);
                    failure = Some(e);
                }
            }
            budget.give(n);
        }
    });
    let stored = match failure {
        Some(e) => Err(e),
        None if stop.load(Ordering::SeqCst) => Err(match store.stored {
            0 => RunError::Stopped,
            n => RunError::StoppedAfter(n),
        }),
        None => store.finish(only.is_none(), started, phase),
    };
    let stored = match stored {
        Ok((report, pending)) if !pending.is_empty() => {
            confirm_held(paths, cfg, &clients.asn, report, pending, stop, phase)
        }
        other => other.map(|(report, _)| report),
    };
    if stored.is_ok() && !stop.load(Ordering::SeqCst) {
        refresh_names(paths, cfg, &transport, &wanted);
    }
    phase.store(PHASE_IDLE, Ordering::SeqCst);
    stored
}

/// Fetches the holder names of the collected ASNs that have none or an old one
/// (after the run's values are stored: a name never holds up or fails a source).
fn refresh_names(paths: &Paths, cfg: &Config, transport: &Transport, wanted: &[(Kind, String)]) {
    let asns: Vec<String> = wanted
        .iter()
        .filter(|(k, _)| *k == Kind::Asn)
        .map(|(_, s)| s.clone())
        .collect();
    super::ripe::names::refresh(paths, cfg, transport, &asns);
}

/// Asks for a second opinion on each held ASN (network work, outside any
/// transaction) and applies the answers it confirms: another upstream giving about
/// as many prefixes as the held answer.
fn confirm_held(
    paths: &Paths,
    cfg: &Config,
    asn: &AsnClient,
    mut report: RunReport,
    pending: Vec<Pending>,
    stop: &AtomicBool,
    phase: &AtomicU8,
) -> Result<RunReport, RunError> {
    phase.store(PHASE_CONFIRMING, Ordering::SeqCst);
    let gate = gate(cfg, Kind::Asn);
    // One after the other: held sources are few, and no second copy of `parallel`.
    let ask = |i: usize| {
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        let s = &report.sources[i];
        let words = super::trust::opinions(cfg, s.upstream);
        let held = s.fetch.as_ref().map_or(0, |f| f.answer);
        let (word, n) = super::trust::second_opinion(
            asn,
            &words,
            &s.source,
            cfg.allows_special(Kind::Asn, &s.source),
        )?;
        let agrees = gate.agree(n, held);
        log::info!(
            "{}: {word} gives {n} prefixes for the held answer of {held}: {}",
            s.name(),
            if agrees { "confirmed" } else { "still held" }
        );
        agrees.then_some(word)
    };
    let asked: Vec<Option<&str>> = pending.iter().map(|(i, ..)| ask(*i)).collect();
    phase.store(PHASE_WRITING, Ordering::SeqCst);
    if stop.load(Ordering::SeqCst) || asked.iter().all(Option::is_none) {
        return Ok(report);
    }
    let mut db = db::open(paths)?;
    db.set_history_days(cfg.history_days);
    let tx = db.write()?;
    let now = util::unix_now();
    for ((i, mut values, at), word) in pending.into_iter().zip(asked) {
        let Some(word) = word else { continue };
        let s = &mut report.sources[i];
        tx.held_answer(Kind::Asn, &s.source, at, &mut values)?;
        let m = tx.merge_answer(
            Kind::Asn,
            &s.source,
            &mut values,
            (now, cfg.ttl_days),
            s.upstream,
            &gate,
            Some(word),
        )?;
        s.outcome = Ok(m.stats);
        s.fetch = Some(m.fetch);
    }
    tx.commit()?;
    Ok(report)
}

/// Where bgp.tools downloads are recorded, with the ASNs whose values are stored
/// (what may be seen again between downloads); `None` without bgp.tools.
fn bgptools_stamp(
    paths: &Paths,
    cfg: &Config,
    db: &db::Db,
) -> Result<Option<super::bgptools::Stamp>, StoreError> {
    if !cfg
        .upstreams
        .asn
        .contains(&config::upstreams::AsnUpstream::Bgptools)
    {
        return Ok(None);
    }
    let mut held: Vec<u32> = db
        .sources(Kind::Asn)?
        .iter()
        .filter_map(|s| s.source.parse().ok())
        .collect();
    crate::util::sort::sort(&mut held);
    Ok(Some(super::bgptools::Stamp {
        path: paths.data_dir.join("bgptools.stamp"),
        held,
    }))
}

/// Logs one line per source and a summary line.
pub fn log_report(report: &RunReport) {
    for s in &report.sources {
        let name = s.name();
        let held = s.fetch.as_ref().filter(|f| f.state == db::trust::HELD);
        match (&s.outcome, held) {
            (Ok(_), Some(f)) => {
                log::warn!(
                    "{name}: {}; held until confirmed (since {}; `confirm {}` applies it)",
                    db::trust::held_text(f),
                    util::iso(f.since.unwrap_or(f.time)),
                    s.source
                );
            }
            (Ok(m), None) => {
                let skipped = if s.skipped > 0 {
                    format!(", {} invalid skipped", s.skipped)
                } else {
                    String::new()
                };
                log::info!(
                    "{name}: {} {} ({} new, {} expired{skipped})",
                    s.fetched,
                    crate::util::values(s.fetched),
                    m.added,
                    m.removed
                );
            }
            (Err(e), _) => log::warn!("{name}: failed, stored values kept: {e}"),
        }
    }
    let failed = report.failures().count();
    let swept = if report.swept > 0 {
        format!(
            ", {} expired values of removed sources deleted",
            report.swept
        )
    } else {
        String::new()
    };
    let done = report.sources.len() - failed;
    let noun = if done == 1 { "source" } else { "sources" };
    log::info!("run finished: {done} {noun} collected, {failed} failed{swept}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_errors_keep_their_cause() {
        let e = RunError::from(StoreError::Other("disk full".into()));
        assert_eq!(
            e.to_string(),
            StoreError::Other("disk full".into()).to_string()
        );
        assert!(matches!(e, RunError::Store(_)));
        assert_eq!(
            RunError::Stopped.to_string(),
            "stopped before storing anything"
        );
    }
}
