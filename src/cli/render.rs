//! `render`: every configured output written (and loaded, and its command run) now,
//! from what is stored, without collecting. The OpenWrt firewall include runs
//! `render --load-only` after `fw4 flush` deleted our table: only the netlink loads,
//! because an output's command may wait for fw4's lock (`fw4 reload-sets`), which fw4
//! holds while its includes run.

use super::{CliError, Outcome};
use crate::config::Paths;

#[cfg(not(feature = "collect"))]
/// Without the `collect` feature there are no outputs.
pub fn run(_: &Paths, _: bool) -> Result<Outcome, CliError> {
    Err(super::missing("render", "collect"))
}

/// Renders every entry of `outputs` (with `load_only`, only their netlink loads);
/// exit 1 when any failed (each is logged).
#[cfg(feature = "collect")]
pub fn run(paths: &Paths, load_only: bool) -> Result<Outcome, CliError> {
    let cfg = crate::config::load_logged(&paths.config())?;
    let outputs = if load_only {
        crate::outputs::loads_only(&cfg.outputs)
    } else {
        cfg.outputs
    };
    if outputs.is_empty() {
        let what = if load_only { "netlink load" } else { "output" };
        log::warn!("no {what} configured in {}", paths.config().display());
        return Ok(Outcome::Success);
    }
    let failed = match load_only {
        true => crate::outputs::load_unless_current(paths, &outputs),
        false => crate::outputs::render_all(paths, &outputs),
    };
    match failed.len() {
        0 => Ok(Outcome::Success),
        n => Err(CliError::Other(format!("{n} output(s) failed"))),
    }
}

#[cfg(all(test, feature = "collect"))]
mod tests {
    use crate::outputs::loads_only;

    #[test]
    fn load_only_keeps_the_loads_without_their_files_and_commands() {
        let text = r#"{"outputs": [
            {"load": "nft", "path": "/tmp/a.nft", "format": "nft", "command": "fw4 -q reload-sets"},
            {"path": "/tmp/b.txt", "command": "fw4 -q reload-sets"}
        ]}"#;
        let cfg = crate::config::parse(text, std::path::Path::new("config.json"))
            .unwrap()
            .config;
        let loads = loads_only(&cfg.outputs);
        assert_eq!(loads.len(), 1);
        assert_eq!(loads[0].path, None);
        assert_eq!(loads[0].command, None);
        assert!(loads[0].load.is_some());
        assert_eq!(loads[0].render, cfg.outputs[0].render);
    }
}
