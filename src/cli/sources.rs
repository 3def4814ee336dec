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
            let names = holder_names(paths, kind);
            let body = sources::listed::sources_json(&cfg, kind, group.as_deref(), &names)
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
        SourceAction::Search { text, limit, json } => return search(paths, text, *limit, *json),
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

/// The holder names of ASNs kept in the database (none for other kinds, and none
/// when the database cannot be read: a name is never a reason to fail).
fn holder_names(paths: &Paths, kind: Kind) -> crate::util::map::SortedMap<String, String> {
    match kind {
        Kind::Asn => db::open(paths).and_then(|d| d.names()).unwrap_or_default(),
        _ => Default::default(),
    }
}

/// One configured source per line: `source<TAB>stored values<TAB>newest last_seen`,
/// and for ASNs a fourth column, the holder's name (`-` while unknown): the columns
/// the documentation names and scripts split (which groups name a source: `--group
/// NAME`; which upstream answered: `status --json`).
fn list(paths: &Paths, kind: Kind, group: Option<&str>) -> Result<(), CliError> {
    let cfg = config::load_logged(&paths.config())?;
    let names = listed(&cfg, kind, group)?;
    // A storage problem must not hide the configured list, nor pass for "nothing
    // stored": the counts are `?` then, and the command fails naming the problem.
    let stored = db::open_read(paths).and_then(|db| db.sources(kind));
    let held = stored.as_deref().unwrap_or_default();
    let holders = holder_names(paths, kind);
    let mut out = String::new();
    for s in names {
        out.push_str(&match held.binary_search_by(|x| x.source.as_str().cmp(s)) {
            Ok(i) => format!("{s}\t{}\t{}", held[i].count, held[i].last_seen),
            Err(_) if stored.is_err() => format!("{s}\t?\t-"),
            Err(_) => format!("{s}\t0\t-"),
        });
        if kind == Kind::Asn {
            out.push('\t');
            out.push_str(&holders.get(s).map_or("-".into(), |h| one_line(h)));
        }
        out.push('\n');
    }
    print(out.as_bytes())?;
    stored.map(drop).map_err(CliError::Store)
}

/// `text` with its control characters (tabs, line breaks) as spaces: one column.
fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// `asn search TEXT`: exit 0 with results, 1 with none, 3 when RIPEstat failed.
#[cfg(feature = "collect")]
fn search(paths: &Paths, text: &str, limit: usize, json: bool) -> Result<Outcome, CliError> {
    use crate::collect::{ripe::names, ripe::RipeClient, Transport};
    let cfg = config::load_logged(&paths.config())?;
    let transport = Transport::new(&cfg.fetch, &[cfg.ripe.url.as_str()]);
    let found = RipeClient::new(&cfg.ripe, &transport)
        .search(text, limit)
        .map_err(|e| CliError::Upstream(format!("asn search: RIPEstat: {e}")))?;
    match json {
        true => print(&names::search_json(text, &found, &cfg))?,
        false => print(names::search_text(&found).as_bytes())?,
    }
    Ok(match found.is_empty() {
        true => Outcome::NotFound,
        false => Outcome::Success,
    })
}

/// A build without the network parts cannot search.
#[cfg(not(feature = "collect"))]
fn search(_: &Paths, _: &str, _: usize, _: bool) -> Result<Outcome, CliError> {
    Err(CliError::Usage(
        "`asn search` needs a build with the collect feature".into(),
    ))
}
