//! `GET /interfaces` and `POST /groups`: what the page needs to route a group (the
//! host's interfaces, and setting or clearing a group's `via` the way `group add
//! --via` and `group unroute` do, through the same function).

use std::ffi::CStr;

use super::{Context, Reply};
use crate::api::error::ApiError;
use crate::api::query::quoted;
use crate::sources::route::{self, Via};
use crate::util::json::{self, Value, Writer};

/// An interface of the host, as `getifaddrs(3)` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Iface {
    name: String,
    /// Administratively up and running (a carrier, or a tunnel that is up).
    up: bool,
    v4: bool,
    v6: bool,
}

/// The kernel's interfaces in the server's network namespace (`getifaddrs` asks over
/// netlink; /sys shows the namespace it was mounted in), by name. Bounded: the kernel
/// answers one entry per address, and a host with more than this many interfaces
/// gets the first ones.
fn interfaces_now() -> std::io::Result<Vec<Iface>> {
    const MAX: usize = 1024;
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `head` with a list freed below with freeifaddrs.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut out: Vec<Iface> = Vec::new();
    let mut p = head;
    while !p.is_null() {
        // SAFETY: a node of the list getifaddrs made, alive until freeifaddrs.
        let a = unsafe { &*p };
        p = a.ifa_next;
        if a.ifa_name.is_null() {
            continue;
        }
        // SAFETY: the kernel's NUL-terminated name, alive until freeifaddrs.
        let name = unsafe { CStr::from_ptr(a.ifa_name) }.to_string_lossy();
        let family = match a.ifa_addr.is_null() {
            true => -1,
            // SAFETY: a non-null sockaddr of the node.
            false => i32::from(unsafe { (*a.ifa_addr).sa_family }),
        };
        let i = match out.iter().position(|i| i.name == name) {
            Some(i) => i,
            None if out.len() < MAX => {
                out.push(Iface {
                    name: name.into_owned(),
                    up: false,
                    v4: false,
                    v6: false,
                });
                out.len() - 1
            }
            None => continue,
        };
        let running = (libc::IFF_UP | libc::IFF_RUNNING) as u32;
        let e = &mut out[i];
        e.up |= a.ifa_flags & running == running;
        e.v4 |= family == libc::AF_INET;
        e.v6 |= family == libc::AF_INET6;
    }
    // SAFETY: the list getifaddrs made, not used after this.
    unsafe { libc::freeifaddrs(head) };
    crate::util::sort::sort_by(&mut out, |a, b| a.name < b.name);
    Ok(out)
}

/// The body of `GET /interfaces`.
pub(super) fn interfaces_json(list: &[Iface]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut w = Writer::new(&mut out, false);
    w.begin_object();
    w.key("interfaces");
    w.begin_array();
    for i in list {
        w.begin_object();
        w.field("name", i.name.as_str());
        w.field("up", &i.up);
        let fams: Vec<&str> = [(i.v4, "ipv4"), (i.v6, "ipv6")]
            .into_iter()
            .filter_map(|(has, f)| has.then_some(f))
            .collect();
        w.field("families", &fams);
        w.end_object();
    }
    w.end_array();
    w.end_object();
    out.push(b'\n');
    out
}

/// `GET /interfaces`: the interfaces a group can be routed via. Should the kernel
/// not answer (out of memory), an empty list: the page then offers "none" only, and
/// a group's route can still be set by name with the CLI.
pub(super) fn interfaces() -> Reply {
    let list = interfaces_now().unwrap_or_else(|e| {
        log::warn!("api: reading the interfaces: {e}");
        Vec::new()
    });
    Reply::json(200, interfaces_json(&list))
}

/// The group and the route change of a `POST /groups` body: `{"group": "vpn", "via":
/// "wg0"}`, `"via": null` to clear, no `via` to create the group unrouted.
fn parse_body(body: &[u8]) -> Result<(String, Option<Option<String>>), ApiError> {
    let bad = |why: String| {
        ApiError::BadRequest(format!(
            "{why}; expected a JSON body such as {{\"group\": \"vpn\", \"via\": \"wg0\"}} (\"via\": null takes the route away)"
        ))
    };
    let members = match json::parse_with_depth(body, 2) {
        Ok(Value::Object(o)) => o.into_members(),
        Ok(_) => return Err(bad("the body is not a JSON object".into())),
        Err(e) => return Err(bad(format!("invalid JSON body: {e}"))),
    };
    let (mut group, mut via) = (None, None);
    for (k, v) in members {
        let v = match (k.as_str(), v) {
            ("group", Value::String(s)) => group.replace(s).map(|_| ()),
            ("via", Value::String(s)) => via.replace(Some(s)).map(|_| ()),
            ("via", Value::Null) => via.replace(None).map(|_| ()),
            ("group" | "via", v) => return Err(bad(format!("{k}: expected a string, got {v}"))),
            _ => return Err(bad(format!("unknown key {} in the body", quoted(&k)))),
        };
        if v.is_some() {
            return Err(bad(format!("key {k:?} given more than once in the body")));
        }
    }
    let group = group.ok_or_else(|| bad("missing key \"group\"".into()))?;
    if group == crate::format::DEFAULT_GROUP || group == crate::format::ALL_GROUPS {
        return Err(ApiError::BadRequest(format!(
            "group {}: the default group and * cannot be routed; add a group of its own",
            quoted(&group)
        )));
    }
    crate::format::check_group_name(&group)
        .map_err(|e| ApiError::BadRequest(format!("group: {}", e.0)))?;
    if let Some(Some(v)) = &via {
        crate::config::check_via(v).map_err(|e| ApiError::BadRequest(format!("via: {e}")))?;
    }
    Ok((group, via))
}

/// `POST /groups`: creates or updates a group as `group add NAME --via IFACE` does
/// (`"via": null`: as `group unroute NAME`). 201 when the group is new, else 200; the
/// answer is the group's entry of `GET /groups` with `created` and `changed`.
pub(super) fn set_route(body: &[u8], ctx: &Context) -> Result<Reply, ApiError> {
    let (group, via) = parse_body(body)?;
    let via = match &via {
        None => Via::Keep,
        Some(Some(v)) => Via::Set(v),
        Some(None) => Via::Clear,
    };
    let done = route::set(&ctx.paths, &group, None, via)?;
    let cfg = ctx.config()?;
    let g = cfg.group(&group);
    let mut out = Vec::new();
    let mut w = Writer::new(&mut out, false);
    w.begin_object();
    w.field("group", group.as_str());
    w.field("created", &done.created);
    w.field("changed", &done.changed);
    w.field(
        "mark",
        &g.and_then(|g| g.mark).map(crate::config::mark_text),
    );
    w.key("route");
    match g.and_then(|g| g.route.as_ref()) {
        None => w.null(),
        Some(r) => {
            w.begin_object();
            w.field("via", r.via.as_str());
            w.field("table", &r.table);
            w.field("up", &route::interface_exists(&r.via));
            w.end_object();
        }
    }
    w.end_object();
    out.push(b'\n');
    Ok(Reply::json(if done.created { 201 } else { 200 }, out))
}
