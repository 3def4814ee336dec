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
