//! The keys of `load` outputs about the kernel: `"timeout": true` (elements time out
//! after `ttl_days`, refreshed by each load) and `max_kernel_mib` (the most kernel
//! memory the output's sets may take). Read after the outputs, with `ttl_days` known.

use crate::util::json::{Map, Value};

use super::{short, Reader};
use crate::config::{Config, ConfigError};

/// The largest `max_kernel_mib`: 1 TiB.
const MAX_MIB: u64 = 1 << 20;

/// Fills `kernel_timeout` and `max_kernel_mib` of each output from its entry.
pub(super) fn kernel_keys(r: &Reader, root: &Map, c: &mut Config) -> Result<(), ConfigError> {
    let Some(Value::Array(list)) = root.get("outputs") else {
        return Ok(());
    };
    for (i, v) in list.iter().enumerate() {
        let (Some(o), Some(out)) = (v.as_object(), c.outputs.get_mut(i)) else {
            continue;
        };
        let prefix = format!("outputs[{i}].");
        let loads = out.load.is_some();
        let only_load = |key: &str| {
            r.err(
                &format!("{prefix}{key}"),
                "only a \"load\": \"nft\" output loads kernel sets",
            )
        };
        match o.get("timeout") {
            None | Some(Value::Null) | Some(Value::Bool(false)) => {}
            Some(Value::Bool(true)) if !loads => return Err(only_load("timeout")),
            Some(Value::Bool(true)) if c.ttl_days == 0 => {
                return Err(r.err(
                    &format!("{prefix}timeout"),
                    "ttl_days is 0 (never expire): there is no timeout to give the elements",
                ))
            }
            Some(Value::Bool(true)) => out.kernel_timeout = Some(c.ttl_days * 86_400),
            Some(v) => {
                return Err(r.err(
                    &format!("{prefix}timeout"),
                    format!("expected true or false, got {}", short(v)),
                ))
            }
        }
        if let Some(mib) = r.uint(o, &prefix, "max_kernel_mib", 1, MAX_MIB)? {
            if !loads {
                return Err(only_load("max_kernel_mib"));
            }
            out.max_kernel_mib = Some(mib);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::config::read::parse;
    use std::path::Path;

    fn config(json: &str) -> Result<crate::config::Config, String> {
        parse(json, Path::new("config.json"))
            .map(|l| l.config)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn growth_and_reference() {
        let c = config(r#"{"trust": {"max_growth_percent": 250, "reference_days": 0}}"#).unwrap();
        assert_eq!(
            (c.trust.max_growth_percent, c.trust.reference_days),
            (250, 0)
        );
        let d = config("{}").unwrap().trust;
        assert_eq!((d.max_growth_percent, d.reference_days), (100, 7));
        for (json, want) in [
            (
                r#"{"trust": {"max_growth_percent": 0}}"#,
                "trust.max_growth_percent: expected a whole number from 1 to 1000000, got 0",
            ),
            (
                r#"{"trust": {"reference_days": 400}}"#,
                "trust.reference_days: expected a whole number from 0 to 365, got 400",
            ),
            (
                r#"{"trust": {"reference_days": "7"}}"#,
                "trust.reference_days: expected a whole number from 0 to 365, got \"7\"",
            ),
        ] {
            let e = config(json).unwrap_err();
            assert!(e.contains(want), "{json}: {e}");
        }
    }

    #[test]
    fn timeout_and_max_kernel_mib() {
        let c = config(
            r#"{"ttl_days": 3, "outputs": [{"load": "nft", "timeout": true, "max_kernel_mib": 64},
                {"load": "nft", "set": "b", "timeout": false}]}"#,
        )
        .unwrap();
        assert_eq!(c.outputs[0].kernel_timeout, Some(3 * 86_400));
        assert_eq!(c.outputs[0].max_kernel_mib, Some(64));
        assert_eq!(
            (c.outputs[1].kernel_timeout, c.outputs[1].max_kernel_mib),
            (None, None)
        );
        for (json, want) in [
            (
                r#"{"outputs": [{"path": "/x", "timeout": true}]}"#,
                "outputs[0].timeout: only a \"load\": \"nft\" output loads kernel sets",
            ),
            (
                r#"{"outputs": [{"path": "/x", "max_kernel_mib": 8}]}"#,
                "outputs[0].max_kernel_mib: only a \"load\"",
            ),
            (
                r#"{"ttl_days": 0, "outputs": [{"load": "nft", "timeout": true}]}"#,
                "outputs[0].timeout: ttl_days is 0 (never expire)",
            ),
            (
                r#"{"outputs": [{"load": "nft", "timeout": "yes"}]}"#,
                "outputs[0].timeout: expected true or false, got \"yes\"",
            ),
            (
                r#"{"outputs": [{"load": "nft", "max_kernel_mib": 0}]}"#,
                "outputs[0].max_kernel_mib: expected a whole number from 1 to 1048576, got 0",
            ),
        ] {
            let e = config(json).unwrap_err();
            assert!(e.contains(want), "{json}: {e}");
        }
    }
}
