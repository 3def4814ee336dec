//! The `dnsmasq` output: makes sure the dns sets its lines name exist, writes the
//! file (atomically) when its content changed, and only then runs the command (e.g.
//! `/etc/init.d/dnsmasq restart`): an unchanged list never restarts dnsmasq.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::config::{DnsmasqOutput, OutputConfig};
use crate::format::{dns_set_name, render_dnsmasq, DnsmasqLineTooLong, DnsmasqOptions, Family};

/// Why a dnsmasq output failed; the file and the sets stay as they were.
#[derive(Debug, thiserror::Error)]
pub enum DnsmasqOutputError {
    /// A line would be too long for dnsmasq.
    #[error(transparent)]
    Line(#[from] DnsmasqLineTooLong),
    /// The nftables dns sets could not be created.
    #[cfg(all(feature = "collect", target_os = "linux"))]
    #[error("creating the dns sets of inet {table} {set}: {source}")]
    Sets {
        /// The table.
        table: String,
        /// The base set name.
        set: String,
        /// What the kernel said (boxed: a load error can carry a store error).
        #[source]
        source: Box<crate::nftnl::LoadError>,
    },
    /// nftables sets need Linux.
    #[error("the dns sets are nftables sets, which need Linux")]
    NotLinux,
    /// `ipset create` failed or could not run.
    #[error("ipset -exist create {set} failed: {message}")]
    Ipset {
        /// The set.
        set: String,
        /// Its stderr, or why it could not start.
        message: String,
    },
    /// The file could not be written.
    #[error("writing {}: {}", path.display(), crate::util::io_reason(source))]
    Write {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: io::Error,
    },
    /// The command failed (its own message).
    #[error("{0}")]
    Command(String),
}

/// What a render did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    /// The file had other content (or none): written, command run.
    Changed,
    /// The file already had this content: nothing written, no command.
    Unchanged,
}

/// Renders the dnsmasq output `out` (whose `dnsmasq` is `d`).
pub fn render(out: &OutputConfig, d: &DnsmasqOutput) -> Result<Written, DnsmasqOutputError> {
    let opts = DnsmasqOptions {
        family: out.render.family,
        ipset: d.ipset,
    };
    let text = render_dnsmasq(&d.targets, opts)?;
    // The sets first: a file that names missing sets makes dnsmasq log an error
    // for every answer.
    for (target, _) in &d.targets {
        if d.ipset {
            ipset_sets(&target.set, out.render.family, d.set_timeout_seconds)?;
        } else {
            nft_sets(
                &target.table,
                &target.set,
                out.render.family,
                d.set_timeout_seconds,
            )?;
        }
    }
    if unchanged(&d.path, text.as_bytes()) {
        log::debug!("dnsmasq file {} unchanged", d.path.display());
        return Ok(Written::Unchanged);
    }
    crate::util::write_atomic(&d.path, text.as_bytes()).map_err(|source| {
        DnsmasqOutputError::Write {
            path: d.path.clone(),
            source,
        }
    })?;
    if let Some(cmd) = &out.command {
        if let Err(e) = super::run_shell(cmd, Duration::from_secs(out.timeout_seconds)) {
            // The command did not take the new file (dnsmasq not restarted, or the
            // drop-in refused): without the file, the retry of this output sees a
            // change and runs the command again, instead of an unchanged file.
            let _ = fs::remove_file(&d.path);
            return Err(DnsmasqOutputError::Command(e));
        }
    }
    Ok(Written::Changed)
}

/// Whether `path` holds exactly `new` (read only when the sizes agree).
fn unchanged(path: &Path, new: &[u8]) -> bool {
    match fs::metadata(path) {
        Ok(m) if m.is_file() && m.len() == new.len() as u64 => {
            fs::read(path).is_ok_and(|old| old == new)
        }
        _ => false,
    }
}

#[cfg(all(feature = "collect", target_os = "linux"))]
fn nft_sets(
    table: &str,
    set: &str,
    family: Option<Family>,
    timeout: u32,
) -> Result<(), DnsmasqOutputError> {
    crate::nftnl::ensure_dns_sets(table, set, family, timeout).map_err(|source| {
        DnsmasqOutputError::Sets {
            table: table.into(),
            set: set.into(),
            source: Box::new(source),
        }
    })
}

#[cfg(not(all(feature = "collect", target_os = "linux")))]
fn nft_sets(_: &str, _: &str, _: Option<Family>, _: u32) -> Result<(), DnsmasqOutputError> {
    Err(DnsmasqOutputError::NotLinux)
}

/// Creates the `hash:ip` sets dnsmasq's `ipset=` lines name, where missing (`ipset
/// -exist create` leaves an existing set of the same kind and its elements alone).
fn ipset_sets(set: &str, family: Option<Family>, timeout: u32) -> Result<(), DnsmasqOutputError> {
    for (fam, name) in [(Family::V4, "inet"), (Family::V6, "inet6")] {
        if family.is_some_and(|f| f != fam) {
            continue;
        }
        let set = dns_set_name(set, fam);
        let timeout = timeout.to_string();
        let args = [
            "-exist", "create", &set, "hash:ip", "family", name, "timeout", &timeout,
        ];
        let fail = |message: String| DnsmasqOutputError::Ipset {
            set: set.clone(),
            message,
        };
        let o = Command::new("ipset")
            .args(args)
            .output()
            .map_err(|e| fail(e.to_string()))?;
        if !o.status.success() {
            return Err(fail(String::from_utf8_lossy(&o.stderr).trim().to_string()));
        }
    }
    Ok(())
}
