//! `group add --via` and `group remove` beyond the file: the kernel's side. A removed
//! group's sets, mark chains, rule and route leave the kernel at once (the daemon
//! would otherwise keep what it no longer knows about); a new route is made by the
//! next load (the daemon's, or `render --load-only`).

use super::CliError;
use crate::config::{self, Mark, Paths};
use crate::sources::{self, route::Via};

/// `group routes`: one line per routed group, `NAME MARK/MASK TABLE VIA [GATEWAY]`.
/// A route without a table gets one now (the first from 100 up no other group
/// uses), written into the file.
pub(super) fn lines(paths: &Paths) -> Result<String, CliError> {
    let mut cfg = config::load(&paths.config())?.config;
    let mut used: Vec<u32> = cfg
        .groups
        .iter()
        .filter_map(|g| g.route.as_ref()?.table)
        .collect();
    let mut out = String::new();
    for g in &mut cfg.groups {
        let (Some(m), Some(r)) = (g.mark, g.route.as_mut()) else {
            continue;
        };
        let table = match r.table {
            Some(t) => t,
            None => {
                let t = config::free_table(&used);
                config::set_route_table(&paths.config(), &g.name, t)?;
                used.push(t);
                t
            }
        };
        let gw = r.gateway.map_or_else(String::new, |a| format!(" {a}"));
        out.push_str(&format!(
            "{} {:#x}/{:#x} {table} {}{gw}\n",
            g.name, m.value, m.mask, r.via
        ));
    }
    Ok(out)
}

/// `group add NAME [--mark M[/MASK]] [--via IFACE]` and `group unroute NAME`: the
/// same change as the API's `POST /groups`.
pub(super) fn add(paths: &Paths, name: &str, mark: Option<Mark>, via: Via) -> Result<(), CliError> {
    sources::route::set(paths, name, mark, via)?;
    Ok(())
}

/// `group remove NAME [--force]`: the file first (refused while sources or services
/// name the group, unless `force`), then the kernel.
pub(super) fn remove(paths: &Paths, name: &str, force: bool) -> Result<(), CliError> {
    let done = sources::groups::remove_group(paths, name, force)?;
    #[cfg(all(feature = "collect", target_os = "linux"))]
    for (table, set) in &done.sets {
        match crate::nftnl::forget_group(table, set) {
            Ok(gone) if !gone.is_empty() => {
                log::info!("removed from the kernel: {}", gone.join(", "))
            }
            Ok(_) => {}
            Err(e) => log::warn!("group {name}'s sets and mark chains in inet {table}: {e}"),
        }
    }
    let _ = done;
    sources::route::routes_changed(paths, true);
    Ok(())
}
