//! The lists of routing stacks other than firewalls: sing-box and mihomo rule sets,
//! WireGuard's `AllowedIPs`, and BIRD, Keenetic and OpenVPN routes.
//!
//! Each writes full prefixes (a stored bare address as its `/32` or `/128`): not
//! every one of these readers takes a bare address, and a route is always a prefix.
//! Order and aggregation are the shared ones (`values`): these writers only print.

use std::io::Write as _;

use ipnet::{Ipv4Net, Ipv6Net};

use super::values::{push_ipv4, Entry, Net, Prepared};
use super::{Format, RenderOptions};

/// Writes `p` in one of this module's formats (`opts.format`).
pub(super) fn render(out: &mut Vec<u8>, p: &Prepared, opts: &RenderOptions, v4: bool, v6: bool) {
    let (p4, p6) = (
        if v4 { &p.v4[..] } else { &[] },
        if v6 { &p.v6[..] } else { &[] },
    );
    let via = opts.via.as_deref().unwrap_or_default();
    match opts.format {
        Format::Singbox => singbox(out, p4, p6, &p.names),
        Format::Mihomo => {
            each(out, p4, b"", b"\n");
            each(out, p6, b"", b"\n");
        }
        Format::MihomoYaml => {
            out.extend_from_slice(b"payload:\n");
            each(out, p4, b"  - '", b"'\n");
            each(out, p6, b"  - '", b"'\n");
        }
        Format::Wireguard => wireguard(out, p4, p6),
        Format::Bird => {
            // A gateway address is written as is, an interface quoted, `blackhole`
            // as BIRD's route type of that name.
            let mut target = if via == "blackhole" {
                " blackhole".to_string()
            } else if via.parse::<std::net::IpAddr>().is_ok() {
                format!(" via {via}")
            } else {
                format!(" via \"{via}\"")
            };
            // The community as the route's attribute block, which BIRD applies
            // before the route reaches any protocol's export filter.
            if let Some(c) = &opts.community {
                target = format!("{target} {{ {} }}", c.bird_add());
            }
            target.push_str(";\n");
            each(out, p4, b"route ", target.as_bytes());
            each(out, p6, b"route ", target.as_bytes());
        }
        Format::Keenetic => {
            let comment = opts.comment.as_deref().unwrap_or(&opts.set);
            let tail = format!(" {via} auto !{comment}\n");
            let masks = masks();
            for e in p4 {
                out.extend_from_slice(b"ip route ");
                net_and_mask(out, &e.net, &masks);
                out.extend_from_slice(tail.as_bytes());
            }
        }
        Format::Openvpn => {
            let masks = masks();
            for e in p4 {
                out.extend_from_slice(b"push \"route ");
                net_and_mask(out, &e.net, &masks);
                out.extend_from_slice(b"\"\n");
            }
            each(out, p6, b"push \"route-ipv6 ", b"\"\n");
        }
        // The firewall formats are `write`'s.
        _ => {}
    }
}

/// Appends `before`, the entry as a prefix and `after`, for every entry.
fn each<N: Net>(out: &mut Vec<u8>, entries: &[Entry<N>], before: &[u8], after: &[u8]) {
    for e in entries {
        out.extend_from_slice(before);
        full(e, out);
        out.extend_from_slice(after);
    }
}

/// The entry in prefix notation, even when stored bare.
fn full<N: Net>(e: &Entry<N>, out: &mut Vec<u8>) {
    N::write(
        &Entry {
            net: e.net,
            bare: false,
        },
        out,
    );
}

/// The 33 IPv4 netmasks as text (` 255.255.252.0`), written once per listing rather
/// than once per route.
fn masks() -> Vec<Vec<u8>> {
    (0..=32u8)
        .map(|len| {
            let mut m = vec![b' '];
            let bits = u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0);
            push_ipv4(&mut m, bits.into());
            m
        })
        .collect()
}

/// `NET MASK`, as `route` takes them: `91.108.4.0 255.255.252.0`.
fn net_and_mask(out: &mut Vec<u8>, net: &Ipv4Net, masks: &[Vec<u8>]) {
    push_ipv4(out, net.network());
    out.extend_from_slice(&masks[usize::from(net.prefix_len())]);
}

/// `{"version":2,"rules":[{"ip_cidr":[...]},{"domain_suffix":[...]}]}`: a sing-box
/// rule-set source (version 2). A rule with an empty list is left out (sing-box
/// refuses a headless rule without a condition), so an empty listing has no rules.
fn singbox(out: &mut Vec<u8>, p4: &[Entry<Ipv4Net>], p6: &[Entry<Ipv6Net>], names: &[String]) {
    out.extend_from_slice(b"{\"version\":2,\"rules\":[");
    if !p4.is_empty() || !p6.is_empty() {
        out.extend_from_slice(b"{\"ip_cidr\":[");
        // IP syntax needs no JSON escaping.
        each(out, p4, b"\"", b"\",");
        each(out, p6, b"\"", b"\",");
        out.pop(); // the last comma
        out.extend_from_slice(b"]}");
        if !names.is_empty() {
            out.push(b',');
        }
    }
    if !names.is_empty() {
        out.extend_from_slice(b"{\"domain_suffix\":[");
        for n in names {
            // Host names are letters, digits, '-' and '.': no JSON escaping needed.
            let _ = write!(out, "\"{n}\",");
        }
        out.pop();
        out.extend_from_slice(b"]}");
    }
    out.extend_from_slice(b"]}\n");
}

/// `AllowedIPs = a, b, c`: one line (a peer's list, aggregated by the caller). Empty
/// list: nothing at all, since `wg` refuses an `AllowedIPs` without a value.
fn wireguard(out: &mut Vec<u8>, p4: &[Entry<Ipv4Net>], p6: &[Entry<Ipv6Net>]) {
    if p4.is_empty() && p6.is_empty() {
        return;
    }
    out.extend_from_slice(b"AllowedIPs = ");
    each(out, p4, b"", b", ");
    each(out, p6, b"", b", ");
    out.truncate(out.len() - 2);
    out.push(b'\n');
}
