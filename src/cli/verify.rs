//! `service verify [NAME...] [--json]`: the catalog's ASNs and feeds checked against
//! RIPEstat and the vendors (`collect::verify`). Exit 0 when every check holds, 1
//! listing each that does not, 3 when an upstream failed (and nothing drifted).

use super::{CliError, Outcome};
use crate::config::Paths;

/// Runs the checks of `names` (every service when empty).
#[cfg(feature = "verify")]
pub fn run(paths: &Paths, names: &[String], json: bool) -> Result<Outcome, CliError> {
    use super::output::print;
    use crate::collect::verify::{self, Outcome as Checked};
    use crate::config;
    let cfg = config::load_logged(&paths.config())?;
    let mut chosen = Vec::new();
    for n in names {
        match cfg.catalog.get(n) {
            Some(s) => chosen.push(s),
            None => return Err(CliError::Usage(cfg.catalog.unknown(n))),
        }
    }
    if names.is_empty() {
        chosen = cfg.catalog.services.iter().collect();
    }
    let checks = verify::verify(&cfg, &chosen);
    if json {
        print(&crate::util::json::to_vec(&verify::Report(&checks)))?;
        print(b"\n")?;
    } else {
        let mut out = String::new();
        for c in &checks {
            let line = match &c.outcome {
                Checked::Holds => continue,
                Checked::Drift(why) => format!("{}\t{}\t{why}\n", c.service, c.what),
                Checked::Failed(why) => format!("{}\t{}\tfailed: {why}\n", c.service, c.what),
            };
            out.push_str(&line);
        }
        print(out.as_bytes())?;
    }
    let drift = checks
        .iter()
        .filter(|c| matches!(c.outcome, Checked::Drift(_)))
        .count();
    let failed = checks
        .iter()
        .filter(|c| matches!(c.outcome, Checked::Failed(_)))
        .count();
    match (drift, failed) {
        (0, 0) => {
            log::info!("service verify: all {} checks hold", checks.len());
            Ok(Outcome::Success)
        }
        (0, n) => Err(CliError::Upstream(format!(
            "service verify: {n} check(s) could not be made (an upstream failed)"
        ))),
        (n, _) => Err(CliError::Other(format!(
            "service verify: {n} check(s) do not hold"
        ))),
    }
}

/// A build without it (the router package) cannot verify.
#[cfg(not(feature = "verify"))]
pub fn run(_: &Paths, _: &[String], _: bool) -> Result<Outcome, CliError> {
    Err(CliError::Usage(
        "`service verify` needs a build with the verify feature (the router package leaves it out)"
            .into(),
    ))
}
