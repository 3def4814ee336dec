//! The routes of the groups, kept beside the sets by every `load` output: the rule
//! and default route of each group with a `"route"` (see `nftnl::routes`). A table
//! not yet chosen is picked here, once, and written into `config.json`.

use crate::config::{self, free_table, OutputConfig, Paths};
use crate::nftnl::routes::{self, GroupRoute};

/// Picks the table of a route given without one: the first from 100 up that no
/// other group and no kernel route uses; written into the file so it never moves.
fn pick(paths: &Paths, group: &str, used: &mut Vec<u32>) -> Result<u32, String> {
    let kernel =
        routes::tables_in_use().map_err(|e| format!("reading the kernel's routes: {e}"))?;
    used.extend(kernel);
    let t = free_table(used);
    config::set_route_table(&paths.config(), group, t).map_err(|e| e.to_string())?;
    used.push(t);
    log::info!("group {group} is routed in table {t} (written into config.json)");
    Ok(t)
}

/// Syncs every group's route; the failures of `out`'s group (and those of no group:
/// a route of a removed group that could not be deleted) fail the output, after its
/// sets were loaded, which they never undo.
pub fn keep(paths: &Paths, out: &OutputConfig) -> Result<(), String> {
    let mut used: Vec<u32> = out.routes.iter().filter_map(|r| r.2.table).collect();
    let mut wanted = Vec::new();
    for (group, mark, route) in &out.routes {
        let table = match route.table {
            Some(t) => t,
            None => pick(paths, group, &mut used)?,
        };
        let (group, mark, route) = (group.clone(), *mark, route.clone());
        wanted.push(GroupRoute {
            group,
            mark,
            route,
            table,
        });
    }
    let s = routes::sync(&wanted);
    let mine = |g: &String| g == &out.render.group || g.is_empty();
    for (_, w) in s.warnings.iter().filter(|(g, _)| mine(g)) {
        log::warn!("group {}: {w}", out.render.group);
    }
    let failed: Vec<&str> = s
        .failed
        .iter()
        .filter(|(g, _)| mine(g))
        .map(|(_, e)| e.as_str())
        .collect();
    match failed.is_empty() {
        true => Ok(()),
        false => Err(format!("route: {}", failed.join("; "))),
    }
}
