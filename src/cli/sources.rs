//! `asn list|add|remove` (and the other kinds), with `--group`; `list --json` prints
//! the API's JSON. Changes go
//! through the sources service, the same code as the API's.

use super::output::print;
use super::{CliError, Outcome, SourceAction};
use crate::config::{self, Config, Paths};
use crate::format::{ALL_GROUPS, DEFAULT_GROUP};
use crate::source::Kind;
use crate::{db, sources};

/// Runs `asn ...` or `fqdn ...`.
pub fn run(paths: &Paths, kind: Kind, action: &SourceAction) -> Result<Outcome, CliError> {
    match action {
        SourceAction::List { group, json: true } => {
            let cfg = config::load_logged(&paths.config())?;
            let body = sources::listed::sources_json(&cfg, kind, group.as_deref())
                .map_err(CliError::Usage)?;
            print(&body)?;
        }
        SourceAction::List { group, .. } => list(paths, kind, group.as_deref())?,
        SourceAction::Add { sources, group } => {
            drop(sources::add_many(paths, kind, group, sources)?)
        }
        SourceAction::Remove {
            sources,
            group,
            purge,
        } => drop(sources::remove_many(paths, kind, group, sources, *purge)?),
    }
    Ok(Outcome::Success)
}

/// The sources listed: those of one group (`default` unless named), or of every
/// group (`*`), as `export` lists.
fn listed<'c>(cfg: &'c Config, kind: Kind, group: Option<&str>) -> Result<&'c [String], CliError> {
    match group.unwrap_or(DEFAULT_GROUP) {
        ALL_GROUPS => Ok(cfg.sources(kind)),
        g => match cfg.group(g) {
            Some(g) => Ok(g.sources(kind)),
            None => Err(CliError::Usage(
                cfg.check_group(g)
                    .err()
                    .map_or_else(String::new, |e| format!("--group: {e}")),
            )),
        },
    }
}

/// One configured source per line: `source<TAB>stored values<TAB>newest last_seen`,
/// the columns the documentation names and scripts split (which groups name a
/// source: `--group NAME`; which upstream answered: `status --json`).
fn list(paths: &Paths, kind: Kind, group: Option<&str>) -> Result<(), CliError> {
    let cfg = config::load_logged(&paths.config())?;
    let names = listed(&cfg, kind, group)?;
    // A storage problem must not hide the configured list, nor pass for "nothing
    // stored": the counts are `?` then, and the command fails naming the problem.
    let stored = db::open_read(paths).and_then(|db| db.sources(kind));
    let held = stored.as_deref().unwrap_or_default();
    let mut out = String::new();
    for s in names {
        out.push_str(&match held.binary_search_by(|x| x.source.as_str().cmp(s)) {
            Ok(i) => format!("{s}\t{}\t{}\n", held[i].count, held[i].last_seen),
            Err(_) if stored.is_err() => format!("{s}\t?\t-\n"),
            Err(_) => format!("{s}\t0\t-\n"),
        });
    }
    print(out.as_bytes())?;
    stored.map(drop).map_err(CliError::Store)
}
