//! The `bird` outputs: BIRD 2 includes that a route server announces over BGP. A
//! route withdrawn from one is withdrawn from every router behind it, so an include
//! is only rewritten from a listing that says something, and BIRD is reconfigured
//! only when one changed (`birdc configure` re-reads every protocol).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::config::OutputConfig;
use crate::db;

/// Includes written whose command has not succeeded since: it is run again on the
/// next render even when the include is unchanged (a BIRD that was down, a retry).
static OWED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// What became of an include.
#[derive(Debug, PartialEq, Eq)]
pub enum Written {
    /// Rewritten, or unchanged with a command still owed: the command runs.
    Changed,
    /// The same bytes as before: nothing to tell BIRD.
    Unchanged,
}

/// Writes the include of `out` at `path` unless it holds these bytes already. An
/// empty listing of a group that names sources, while the group has no stored value
/// in either family (a new or emptied database), is refused: the include is left as
/// it was and nothing is withdrawn.
pub fn write(db: &db::Db, out: &OutputConfig, path: &Path) -> Result<Written, String> {
    let bytes = crate::listing::render_selection(db, &out.selection, &out.render)
        .map_err(|e| e.to_string())?;
    if bytes.is_empty() && out.has_sources && nothing_stored(db, out)? {
        return Err(format!(
            "group {:?} names sources but none of them has a stored value yet (a new or \
             emptied database): {} is left as it was, so that no route is withdrawn",
            out.render.group,
            path.display()
        ));
    }
    let is_owed = |p: &Path| owed().iter().any(|o| o == p);
    if std::fs::read(path).is_ok_and(|old| old == bytes) {
        return Ok(match is_owed(path) {
            true => Written::Changed,
            false => Written::Unchanged,
        });
    }
    crate::util::write_atomic(path, &bytes).map_err(|e| format!("writing: {e}"))?;
    if !is_owed(path) {
        owed().push(path.to_path_buf());
    }
    Ok(Written::Changed)
}

/// The command of the include at `path` ran: nothing owed.
pub fn paid(path: &Path) {
    owed().retain(|p| p != path);
}

fn owed() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    OWED.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether the group of `out` has no stored value in either family (the include of
/// one family is rightly empty when its sources hold only the other).
fn nothing_stored(db: &db::Db, out: &OutputConfig) -> Result<bool, String> {
    let both = crate::format::RenderOptions {
        family: None,
        format: crate::format::Format::Text,
        via: None,
        community: None,
        ..out.render.clone()
    };
    let p = crate::listing::prepare(db, &out.selection, &both).map_err(|e| e.to_string())?;
    Ok(p.v4.is_empty() && p.v6.is_empty())
}
