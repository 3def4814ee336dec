//! `group add --via` and `group remove` beyond the file: the kernel's side. A removed
//! group's sets, mark chains, rule and route leave the kernel at once (the daemon
//! would otherwise keep what it no longer knows about); a new route is made by the
//! next load (the daemon's, or `render --load-only`).

use super::CliError;
use crate::config::{self, Mark, Paths};
use crate::sources;

/// Whether interface `name` exists now (a VPN's may come up later); asked of the
/// kernel, not of /sys, which shows the namespace it was mounted in.
fn interface_exists(name: &str) -> bool {
    let Ok(c) = std::ffi::CString::new(name) else {
        return false;
    };
    // SAFETY: a NUL-terminated string that outlives the call.
    unsafe { libc::if_nametoindex(c.as_ptr()) != 0 }
}

/// Where the OpenWrt package keeps the netifd sections of the routed groups
/// (`routes`: `config rule`/`config route` in /etc/config/network), which a build
/// without the `routes` feature asks to follow each change.
#[cfg(not(feature = "routes"))]
const INIT: &str = "/etc/init.d/ripe-cidr-collector";

/// After a change of a group's route: a build with `routes` leaves it to the next
/// load; one without (the router package) has the init script rewrite netifd's
/// sections, where it is installed.
fn routes_changed() {
    #[cfg(not(feature = "routes"))]
    if std::path::Path::new(INIT).exists() {
        match std::process::Command::new(INIT).arg("routes").status() {
            Ok(s) if s.success() => {}
            Ok(s) => log::warn!("`{INIT} routes` failed ({s}): netifd's sections not rewritten"),
            Err(e) => log::warn!("`{INIT} routes` could not start: {e}"),
        }
    }
}

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

/// `group add NAME [--mark M[/MASK]] [--via IFACE]`.
pub(super) fn add(
    paths: &Paths,
    name: &str,
    mark: Option<Mark>,
    via: Option<&str>,
) -> Result<(), CliError> {
    #[cfg(feature = "routes")]
    let kernel_tables = match via {
        Some(_) => crate::nftnl::routes::tables_in_use().unwrap_or_else(|e| {
            log::warn!("could not read the kernel's routes ({e}): the table is picked from the configuration alone");
            Vec::new()
        }),
        None => Vec::new(),
    };
    #[cfg(not(feature = "routes"))]
    let kernel_tables = Vec::new();
    let new = config::NewGroup {
        mark,
        via,
        kernel_tables: &kernel_tables,
    };
    sources::groups::add_group(paths, name, &new)?;
    if via.is_some() {
        routes_changed();
    }
    if let Some(via) = via.filter(|v| !interface_exists(v)) {
        log::warn!(
            "interface {via} does not exist (yet): group {name}'s route is made when it does \
             (until then its traffic takes the main table; `explain` names it as down)"
        );
    }
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
    #[cfg(feature = "routes")]
    {
        let cfg = config::load(&paths.config())?.config;
        let s = crate::nftnl::routes::sync(&crate::nftnl::routes::wanted(&cfg));
        for (g, e) in s.failed {
            log::warn!("route of group {g}: {e}");
        }
    }
    let _ = done;
    routes_changed();
    Ok(())
}
