//! `GET /health`: counts and the daemon's last times; `degraded` while
//! `config.json` is broken; 503 when storage fails.

use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};
use std::time::SystemTime;

use super::{Context, Reply};
use crate::api::body::{json_line, Counts, Health};
use crate::api::error::ApiError;
use crate::config::{self, Paths};
use crate::db::{Db, Pool, StoreError};
use crate::status;

use super::files::{file_key, stat, FileKey, Stat, QUIET};

pub(super) fn health(ctx: &Context) -> Result<Reply, ApiError> {
    // status.json is the daemon's (rewritten at least every minute); a broken one
    // must not make the API look down, nor flood the log of a frequent monitor.
    let st = status::read(&ctx.paths.status())
        .unwrap_or_else(|e| {
            log::debug!("api: health: {e}");
            None
        })
        .unwrap_or_default();
    let counts = cached_counts(&ctx.db).map(|(asn, fqdn, held)| Counts { asn, fqdn, held });
    // A broken config.json leaves the daemon on its last good configuration (or on
    // none, collecting nothing): the lists go stale while everything else looks fine,
    // which a monitor must see (contract, "HTTP API").
    let config_error = config_problem(&ctx.paths).map(|e| match ctx.has_good_config() {
        true => format!("{e}; the lists are those of the configuration read before"),
        false => format!("{e}; no listing until it is fixed"),
    });
    let mut h = Health {
        status: if config_error.is_some() {
            "degraded"
        } else {
            "ok"
        },
        counts: None,
        last_success: st.last_success,
        last_error: st.last_error,
        heartbeat: st.heartbeat,
        error: config_error,
    };
    match counts {
        Ok(counts) => {
            h.counts = Some(counts);
            Ok(Reply::json(200, json_line(&h)))
        }
        Err(error) => {
            h.status = "error";
            Err(ApiError::Unhealthy {
                error,
                health: Box::new(h),
            })
        }
    }
}

/// What `config.json` at the time of its file `Stat` gave: its problem, if any.
/// The catalog file's `Stat` beside it: a broken `services.json` breaks the
/// configuration too.
type ConfigSeen = (PathBuf, (Stat, Option<Stat>), Option<String>);

/// The last verdict on `config.json` kept.
static CONFIG_SEEN: Mutex<Option<ConfigSeen>> = Mutex::new(None);

/// What is wrong with `config.json`, if anything (a missing file is the empty
/// configuration, so fine). Kept while the file stays as it was, as the counts are:
/// a large configuration takes a while to check, and monitors ask often.
fn config_problem(paths: &Paths) -> Option<String> {
    let path = paths.config();
    let catalog = stat(&paths.data_dir.join("services.json"));
    let key = stat(&path).map(|k| (k, catalog));
    if let Some(key) = &key {
        let seen = CONFIG_SEEN.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((p, k, problem)) = seen.as_ref() {
            if *p == path && k == key {
                return problem.clone();
            }
        }
    }
    let problem = config::load(&path).err().map(|e| e.to_string());
    let settled = |s: &Stat| s.3.elapsed().is_ok_and(|d| d >= QUIET);
    let quiet = key.filter(|(k, c)| settled(k) && c.as_ref().is_none_or(settled));
    *CONFIG_SEEN.lock().unwrap_or_else(PoisonError::into_inner) =
        quiet.map(|k| (path, k, problem.clone()));
    problem
}

/// Counts taken from the database at `PathBuf` while its files had `FileKey`.
type Cached = (PathBuf, FileKey, (u64, u64, u64));

/// The last counts kept.
static CACHE: Mutex<Option<Cached>> = Mutex::new(None);

/// The stored values per kind. Counting opens the database and reads every row
/// (3.5 ms for 100k), so the counts are kept while the files stay as they were:
/// any commit changes the WAL's size or time, a checkpoint or a rollback-journal
/// write the main file's, a replaced or rewritten file its inode, size or time.
/// Then the next request reads the database as before (through the handlers' kept
/// connection), and so still notices a damaged one at once.
fn cached_counts(pool: &Pool) -> Result<(u64, u64, u64), StoreError> {
    let paths = pool.paths();
    let before = file_key(&paths.db);
    if let Some(key) = &before {
        let cache = CACHE.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((path, k, counts)) = cache.as_ref() {
            if *path == paths.db && k == key {
                return Ok(*counts);
            }
        }
    }
    let counts = pool.with(|db: &Db| -> Result<_, StoreError> {
        let (asn, fqdn) = db.counts()?;
        Ok((asn, fqdn, db.held()?.len() as u64))
    })?;
    let quiet = |t: SystemTime| t.elapsed().is_ok_and(|d| d >= QUIET);
    let keep = before.filter(|k| quiet(k.main.3) && k.wal.as_ref().is_none_or(|w| quiet(w.3)));
    *CACHE.lock().unwrap_or_else(PoisonError::into_inner) =
        keep.map(|k| (paths.db.clone(), k, counts));
    Ok(counts)
}
