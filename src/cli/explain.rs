//! `explain ADDR [--group NAME] [--json]`: why the address is, or is not, routed
//! (`crate::explain`); `--json` prints the bytes of `GET /explain?ip=...`. Exit 0
//! when routed as configured, 1 at a broken link, 2 for a bad address or group.

use super::output::print;
use super::{CliError, Outcome};
use crate::config::{self, Paths};
use crate::db;
use crate::explain::{self, Input};
use crate::inspect::lookup;

/// Runs `explain`.
pub fn run(
    paths: &Paths,
    address: &str,
    group: Option<&str>,
    json: bool,
) -> Result<Outcome, CliError> {
    if !crate::inspect::ENABLED {
        return Err(CliError::Other(crate::inspect::missing("`explain`")));
    }
    let usage = |e: crate::inspect::BadInput| CliError::Usage(format!("explain: {e}"));
    let q = explain::parse_address(address).map_err(usage)?;
    let cfg = config::load_logged(&paths.config())?;
    let found = lookup::find(&db::open_read(paths)?, &q)?;
    let status = crate::status::read(&paths.status()).ok().flatten();
    let input = Input {
        cfg: &cfg,
        status: status.as_ref(),
        group,
        openwrt: explain::on_openwrt(),
    };
    let e = explain::explain(&q, &found, &input, &*explain::system_kernel()).map_err(usage)?;
    if json {
        print(&explain::json(&e))?;
    } else {
        print(explain::text(&e).as_bytes())?;
    }
    Ok(if e.routed() {
        Outcome::Success
    } else {
        Outcome::NotRouted
    })
}
