//! `snapshot`: write the snapshot file (`--snapshot`) now, e.g. before a planned
//! reboot or from cron when only `run` is used.

use super::{CliError, Outcome};
use crate::config::Paths;
use crate::db::snapshot;
use crate::{status, util};

/// Writes the snapshot and records it in `status.json`.
pub fn run(paths: &Paths) -> Result<Outcome, CliError> {
    let time = snapshot::write(paths)?;
    record(paths, Some(time));
    Ok(Outcome::Success)
}

/// Records in `status.json` a snapshot written at `time` (`last_snapshot`), or, with
/// `None`, that changes wait for the next one (`snapshot_pending`).
pub(super) fn record(paths: &Paths, time: Option<i64>) {
    let r = status::update(&paths.status(), |st| match time {
        Some(t) => {
            st.last_snapshot = Some(util::iso(t));
            st.snapshot_pending = false;
        }
        None => st.snapshot_pending = true,
    });
    if let Err(e) = r {
        log::warn!("{}: {e}", paths.status().display());
    }
}
