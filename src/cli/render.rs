//! `render`: every configured output written (and loaded, and its command run) now,
//! from what is stored, without collecting. The OpenWrt firewall include runs it after
//! every firewall start: `fw4 flush` deletes our table, and this loads the sets again
//! over netlink instead of through `nft -f` and its memory.

use super::{CliError, Outcome};
use crate::config::Paths;

#[cfg(not(feature = "collect"))]
/// Without the `collect` feature there are no outputs.
pub fn run(_: &Paths) -> Result<Outcome, CliError> {
    Err(super::missing("render", "collect"))
}

/// Renders every entry of `outputs`; exit 1 when any failed (each is logged).
#[cfg(feature = "collect")]
pub fn run(paths: &Paths) -> Result<Outcome, CliError> {
    let cfg = crate::config::load_logged(&paths.config())?;
    if cfg.outputs.is_empty() {
        log::warn!("no outputs configured in {}", paths.config().display());
        return Ok(Outcome::Success);
    }
    match crate::outputs::render_all(paths, &cfg.outputs).len() {
        0 => Ok(Outcome::Success),
        n => Err(CliError::Other(format!("{n} output(s) failed"))),
    }
}
