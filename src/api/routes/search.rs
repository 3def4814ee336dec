//! `GET /asn-search?q=TEXT[&limit=N]`: ASNs by their holder's name, asked of RIPEstat
//! on a client's behalf (`collect::ripe::names`, the same search and bytes as
//! `asn search --json`).
//!
//! The route makes requests to the outside for whoever reaches it, so: the token
//! when `api.token` is set; one search in flight at a time (a few more wait for it,
//! bounded, the others get 503); and answers kept [`KEEP_SECONDS`], so that a
//! repeated query (a user typing, a page reloaded) costs no upstream call. The cache
//! holds the ASNs found, not the body: the `groups` of each are read from the
//! configuration of the moment.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use super::{Context, Reply};
use crate::api::error::ApiError;
use crate::api::query::parse_query;
use crate::collect::ripe::names::{self, Found};
use crate::collect::ripe::RipeClient;
use crate::collect::Transport;

/// How long an answer is kept.
const KEEP_SECONDS: i64 = 24 * 3600;
/// Answers kept: at most 20 ASNs of a few hundred bytes each, so about 150 KiB.
const KEEP_ANSWERS: usize = 32;
/// Clients that may wait for the search in flight; more get 503 at once (each
/// waiting one holds a handler thread).
const MAX_WAITING: usize = 2;
/// Longest wait for the search in flight.
const MAX_WAIT: Duration = Duration::from_secs(15);

/// The searches' shared state: the kept answers and the one in flight.
#[derive(Debug, Default)]
pub struct Searches {
    state: Mutex<State>,
    done: Condvar,
}

#[derive(Debug, Default)]
struct State {
    /// `(text, limit, when, found)`, oldest first.
    kept: VecDeque<(String, usize, i64, Vec<Found>)>,
    busy: bool,
    waiting: usize,
}

impl State {
    fn kept(&self, q: &str, limit: usize, now: i64) -> Option<&Vec<Found>> {
        self.kept
            .iter()
            .find(|k| k.0 == q && k.1 == limit && now - k.2 < KEEP_SECONDS)
            .map(|k| &k.3)
    }
}

impl Searches {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The ASNs found for `(q, limit)`: kept, or searched by `search` once the
    /// search in flight (if any) is done.
    fn find(
        &self,
        q: &str,
        limit: usize,
        search: impl FnOnce() -> Result<Vec<Found>, ApiError>,
    ) -> Result<Vec<Found>, ApiError> {
        let now = crate::util::unix_now();
        let mut st = self.lock();
        if let Some(f) = st.kept(q, limit, now) {
            return Ok(f.clone());
        }
        if st.busy {
            if st.waiting >= MAX_WAITING {
                return Err(ApiError::SearchBusy);
            }
            st.waiting += 1;
            let until = Instant::now() + MAX_WAIT;
            while st.busy {
                let left = until.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                st = self
                    .done
                    .wait_timeout(st, left)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
            st.waiting -= 1;
            if st.busy {
                return Err(ApiError::SearchBusy);
            }
            // The search just done may have been this one.
            if let Some(f) = st.kept(q, limit, crate::util::unix_now()) {
                return Ok(f.clone());
            }
        }
        st.busy = true;
        drop(st);
        let result = search();
        let mut st = self.lock();
        st.busy = false;
        if let Ok(found) = &result {
            if st.kept.len() >= KEEP_ANSWERS {
                st.kept.pop_front();
            }
            let at = crate::util::unix_now();
            st.kept.push_back((q.to_string(), limit, at, found.clone()));
        }
        drop(st);
        self.done.notify_all();
        result
    }
}

/// The text and limit of the query: `q` (checked as `asn search` checks it) and
/// `limit` (1 to 20, default 8).
pub(super) fn search_query(query: Option<&str>) -> Result<(String, usize), ApiError> {
    let (mut q, mut limit) = (None, crate::source::DEFAULT_SEARCH_LIMIT);
    for (k, v) in parse_query(query, &["q", "limit"])? {
        match k.as_str() {
            "q" => q = Some(v),
            _ => limit = names::parse_limit(&v).map_err(ApiError::BadRequest)?,
        }
    }
    let q = q.ok_or_else(|| {
        ApiError::BadRequest("missing parameter q (the text to search for)".into())
    })?;
    names::check_text(&q).map_err(ApiError::BadRequest)?;
    Ok((q, limit))
}

/// `GET /asn-search`: 200 with the ASNs found (maybe none), 502 when RIPEstat
/// failed, 503 while other searches keep it busy.
pub(super) fn asn_search(q: &str, limit: usize, ctx: &Context) -> Result<Reply, ApiError> {
    let cfg = ctx.config()?;
    let found = ctx.searches.find(q, limit, || {
        let transport = Transport::new(&cfg.fetch, &[cfg.ripe.url.as_str()]);
        RipeClient::new(&cfg.ripe, &transport)
            .search(q, limit)
            .map_err(|e| ApiError::Upstream(format!("RIPEstat: {e}")))
    })?;
    Ok(Reply::json(200, names::search_json(q, &found, &cfg)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(asn: &str) -> Vec<Found> {
        vec![Found {
            asn: asn.into(),
            holder: "H".into(),
            announced: true,
        }]
    }

    #[test]
    fn kept_answers_cost_no_search_and_stay_bounded() {
        let s = Searches::default();
        let mut calls = 0;
        for _ in 0..3 {
            let f = s
                .find("telegram", 8, || {
                    calls += 1;
                    Ok(found("62041"))
                })
                .unwrap();
            assert_eq!(f, found("62041"));
        }
        assert_eq!(calls, 1);
        // Another limit is another question.
        s.find("telegram", 3, || Ok(found("1"))).unwrap();
        // A failure is not kept.
        let e = s.find("x", 8, || Err(ApiError::Upstream("no".into())));
        assert!(e.is_err());
        assert!(s.find("x", 8, || Ok(found("2"))).is_ok());
        for i in 0..100 {
            s.find(&format!("q{i}"), 8, || Ok(found("3"))).unwrap();
        }
        assert_eq!(s.lock().kept.len(), KEEP_ANSWERS);
        // An answer older than a day is asked again.
        s.lock().kept.iter_mut().for_each(|k| k.2 -= KEEP_SECONDS);
        let mut again = false;
        s.find("q99", 8, || {
            again = true;
            Ok(found("3"))
        })
        .unwrap();
        assert!(again);
    }

    #[test]
    fn a_busy_search_turns_extra_clients_away() {
        let s = Searches::default();
        {
            let mut st = s.lock();
            st.busy = true;
            st.waiting = MAX_WAITING;
        }
        let e = s.find("x", 8, || Ok(found("1"))).unwrap_err();
        assert!(matches!(e, ApiError::SearchBusy));
    }
}
