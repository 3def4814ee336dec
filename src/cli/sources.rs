//! `asn list|add|remove` and `fqdn list|add|remove`. Changes go through the sources
//! service, the same code as the API's.

use super::output::print;
use super::{CliError, Outcome, SourceAction};
use crate::config::{self, Paths};
use crate::source::Kind;
use crate::{db, sources};

/// Runs `asn ...` or `fqdn ...`.
pub fn run(paths: &Paths, kind: Kind, action: &SourceAction) -> Result<Outcome, CliError> {
    match action {
        SourceAction::List => list(paths, kind)?,
        SourceAction::Add(s) => drop(sources::add(paths, kind, s)?),
        SourceAction::Remove { source, purge } => {
            drop(sources::remove(paths, kind, source, *purge)?)
        }
    }
    Ok(Outcome::Success)
}

/// One configured source per line: `source<TAB>stored values<TAB>newest last_seen`.
fn list(paths: &Paths, kind: Kind) -> Result<(), CliError> {
    let cfg = config::load_logged(&paths.config())?;
    // Counts are a bonus: a storage problem must not hide the configured list.
    let stored = db::open(paths)
        .and_then(|db| db.sources(kind))
        .unwrap_or_else(|e| {
            log::warn!("{e}");
            Vec::new()
        });
    let mut out = String::new();
    for s in cfg.sources(kind) {
        match stored.iter().find(|x| &x.source == s) {
            Some(x) => out.push_str(&format!("{s}\t{}\t{}\n", x.count, x.last_seen)),
            None => out.push_str(&format!("{s}\t0\t-\n")),
        }
    }
    print(out.as_bytes())
}
