//! A group's `"route"`: the interface its marked traffic leaves through, an optional
//! gateway and table; and the checks across groups (marks and tables that collide).

use crate::util::json::{Map, Value};

use super::{short, Reader};
use crate::config::group::table_allowed;
use crate::config::{ConfigError, Group, Mark, Route};

const ROUTE_KEYS: &[&str] = &["via", "gateway", "table"];

/// Checks an interface name as the kernel takes it (`IFNAMSIZ`: at most 15 bytes,
/// no `/`, `:` or white space). An address is refused: it names no interface, and
/// the rule's family would be a guess.
pub fn check_via(via: &str) -> Result<(), String> {
    if via.parse::<std::net::IpAddr>().is_ok() {
        return Err(format!(
            "via {via:?} is an address, not an interface: give the interface (\"via\": \"wg0\") \
             and the address as \"gateway\""
        ));
    }
    let ok = (1..=15).contains(&via.len())
        && via
            .bytes()
            .all(|b| b.is_ascii_graphic() && !matches!(b, b'/' | b':' | b'"' | b'\''));
    if ok && via != "." && via != ".." {
        Ok(())
    } else {
        Err(format!(
            "via {via:?} is not an interface name (1 to 15 characters, no '/', ':' or spaces)"
        ))
    }
}

/// Whether the rule of `a` matches the mark `b` sets, or the other way round: the
/// traffic of one group would take the other's route.
pub(crate) fn marks_collide(a: Mark, b: Mark) -> bool {
    b.value & a.mask == a.value || a.value & b.mask == b.value
}

impl Reader<'_> {
    /// `route` of a group object (`prefix`: `groups.NAME.`).
    pub(super) fn route(&mut self, o: &Map, prefix: &str) -> Result<Option<Route>, ConfigError> {
        let key = format!("{prefix}route");
        let r = match o.get("route") {
            None | Some(Value::Null) => return Ok(None),
            Some(v) => self.object(v, &key)?,
        };
        self.unknown(r, &format!("{key}."), ROUTE_KEYS);
        let via =
            match r.get("via") {
                Some(Value::String(s)) => s.clone(),
                Some(v) => {
                    return Err(self.err(
                        &format!("{key}.via"),
                        format!(
                            "expected an interface name such as \"wg0\", got {}",
                            short(v)
                        ),
                    ))
                }
                None => return Err(self.err(
                    &format!("{key}.via"),
                    "missing: the interface the group's traffic leaves through, such as \"wg0\"",
                )),
            };
        check_via(&via).map_err(|m| self.err(&format!("{key}.via"), m))?;
        let gateway = match r.get("gateway") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.parse().map_err(|_| {
                self.err(
                    &format!("{key}.gateway"),
                    format!("expected an IPv4 or IPv6 address, got {s:?}"),
                )
            })?),
            Some(v) => {
                return Err(self.err(
                    &format!("{key}.gateway"),
                    format!("expected an address, got {}", short(v)),
                ))
            }
        };
        let table = match r.get("table") {
            None | Some(Value::Null) => None,
            Some(v) => match v.as_u64().and_then(|n| u32::try_from(n).ok()) {
                Some(t) if table_allowed(t) => Some(t),
                _ => {
                    return Err(self.err(
                        &format!("{key}.table"),
                        format!("table {} is not allowed: any table but 0 and 253-255 (default, main, local)", short(v)),
                    ))
                }
            },
        };
        Ok(Some(Route {
            via,
            gateway,
            table,
        }))
    }

    /// A route needs its group's mark; no two marks collide, no two routes share a
    /// table.
    pub(super) fn routes_agree(&self, groups: &[Group]) -> Result<(), ConfigError> {
        for (i, g) in groups.iter().enumerate() {
            let prefix = format!("groups.{}.", g.name);
            if g.route.is_some() && g.mark.is_none() {
                return Err(self.err(
                    &format!("{prefix}route"),
                    "needs the group's \"mark\" (`group add NAME --via IFACE` picks one)",
                ));
            }
            for other in &groups[..i] {
                if let (Some(a), Some(b)) = (g.mark, other.mark) {
                    if marks_collide(a, b) {
                        return Err(self.err(
                            &format!("{prefix}mark"),
                            format!(
                                "mark {:#x} collides with group {:?}'s mark {:#x}: their traffic could not be told apart",
                                a.value, other.name, b.value
                            ),
                        ));
                    }
                }
                let table = |g: &Group| g.route.as_ref().and_then(|r| r.table);
                if let (Some(t), Some(u)) = (table(g), table(other)) {
                    if t == u {
                        return Err(self.err(
                            &format!("{prefix}route.table"),
                            format!("table {t} is already group {:?}'s", other.name),
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(value: u32, mask: u32) -> Mark {
        Mark { value, mask }
    }

    #[test]
    fn collisions_are_marks_one_rule_would_match() {
        assert!(marks_collide(m(0x100, u32::MAX), m(0x100, 0xff00)));
        assert!(!marks_collide(m(0x100, 0xff00), m(0x200, 0xff00)));
        assert!(!marks_collide(m(0x100, 0xff00), m(0x1, 0xff)));
    }

    #[test]
    fn interfaces_not_addresses() {
        assert!(check_via("wg0").is_ok());
        assert!(check_via("pppoe-wan").is_ok());
        assert!(check_via("10.0.0.1").unwrap_err().contains("is an address"));
        assert!(check_via("a/b").is_err());
        assert!(check_via("sixteen-chars-xx").is_err());
        assert!(check_via("").is_err());
    }
}
