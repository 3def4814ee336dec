//! Setting and clearing a group's route: the one implementation behind `group add
//! --via`, `group unroute` and the API's `POST /groups`, so that the CLI, the page and
//! LuCI make the same change (the file, then the kernel or netifd's sections).

use super::SourcesError;
use crate::config::{self, GroupAdded, Mark, Paths};

/// What a route change asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via<'a> {
    /// Leave the route as it is (`group add NAME [--mark M]`).
    Keep,
    /// Route the group via this interface.
    Set(&'a str),
    /// Take the route away (`group unroute`, `"via": null`).
    Clear,
}

/// What [`set`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Routed {
    /// The group is new.
    pub created: bool,
    /// The file changed.
    pub changed: bool,
}

/// Whether interface `name` exists now (a VPN's may come up later); asked of the
/// kernel, not of /sys, which shows the namespace it was mounted in.
#[cfg(unix)]
pub fn interface_exists(name: &str) -> bool {
    let Ok(c) = std::ffi::CString::new(name) else {
        return false;
    };
    // SAFETY: a NUL-terminated string that outlives the call.
    unsafe { libc::if_nametoindex(c.as_ptr()) != 0 }
}

/// Without network interfaces to ask about (the offline core on WASI): none exists
/// now, which only turns a route's "exists" into "may come up later".
#[cfg(not(unix))]
pub fn interface_exists(_name: &str) -> bool {
    false
}

/// Where the OpenWrt package keeps the netifd sections of the routed groups
/// (`routes`: `config rule`/`config route` in /etc/config/network), which a build
/// without the `routes` feature asks to follow each change.
#[cfg(not(feature = "routes"))]
const INIT: &str = "/etc/init.d/ripe-cidr-collector";

/// After a change of a group's route: a build with `routes` leaves a new route to the
/// next load and, when `gone`, takes what no longer belongs out of the kernel now;
/// one without (the router package) has the init script rewrite netifd's sections,
/// where it is installed.
pub fn routes_changed(paths: &Paths, gone: bool) {
    #[cfg(feature = "routes")]
    if gone {
        match config::load(&paths.config()) {
            Ok(l) => {
                let s = crate::nftnl::routes::sync(&crate::nftnl::routes::wanted(&l.config));
                for (g, e) in s.failed {
                    log::warn!("route of group {g}: {e}");
                }
            }
            Err(e) => log::warn!("routes not synced: {e}"),
        }
    }
    #[cfg(not(feature = "routes"))]
    {
        let _ = (paths, gone);
        if std::path::Path::new(INIT).exists() {
            match std::process::Command::new(INIT).arg("routes").status() {
                Ok(s) if s.success() => {}
                Ok(s) => {
                    log::warn!("`{INIT} routes` failed ({s}): netifd's sections not rewritten")
                }
                Err(e) => log::warn!("`{INIT} routes` could not start: {e}"),
            }
        }
    }
}

/// The tables the kernel's routes use now, which a new route's table avoids.
fn kernel_tables(via: Via) -> Vec<u32> {
    #[cfg(feature = "routes")]
    if let Via::Set(_) = via {
        return crate::nftnl::routes::tables_in_use().unwrap_or_else(|e| {
            log::warn!(
                "could not read the kernel's routes ({e}): the table is picked from the configuration alone"
            );
            Vec::new()
        });
    }
    let _ = via;
    Vec::new()
}

/// Adds or updates group `name` with `mark` and `via` (as `group add` does), or takes
/// its route away, then has the kernel or netifd follow.
pub fn set(
    paths: &Paths,
    name: &str,
    mark: Option<Mark>,
    via: Via,
) -> Result<Routed, SourcesError> {
    let done = match via {
        Via::Clear => {
            if mark.is_some() {
                super::groups::add_group(
                    paths,
                    name,
                    &config::NewGroup {
                        mark,
                        ..Default::default()
                    },
                )?;
            }
            let had = config::clear_route(&paths.config(), name)?;
            if had {
                log::info!("group {name} is no longer routed (its traffic takes the main table)");
            }
            Routed {
                created: false,
                changed: had,
            }
        }
        Via::Keep | Via::Set(_) => {
            let tables = kernel_tables(via);
            let new = config::NewGroup {
                mark,
                via: match via {
                    Via::Set(v) => Some(v),
                    _ => None,
                },
                kernel_tables: &tables,
            };
            let GroupAdded {
                created, changed, ..
            } = super::groups::add_group(paths, name, &new)?;
            Routed { created, changed }
        }
    };
    if via != Via::Keep {
        routes_changed(paths, via == Via::Clear);
    }
    if let Via::Set(v) = via {
        if !interface_exists(v) {
            log::warn!(
                "interface {v} does not exist (yet): group {name}'s route is made when it does \
                 (until then its traffic takes the main table; `explain` names it as down)"
            );
        }
    }
    Ok(done)
}
