//! The rtnetlink writes of a group's route (`linux/rtnetlink.h`,
//! `linux/fib_rules.h`): the policy rule `fwmark MARK/MASK lookup TABLE` and the
//! default route via an interface in that table, added and deleted one message at a
//! time (rtnetlink has no batches), each acknowledged; and the dump of a family's
//! routes that the sync reads what it made from.

use super::{Batch, NLM_F_ACK, NLM_F_CREATE, NLM_F_REQUEST};
use crate::nftnl::msg::get::NLM_F_DUMP;

const RTM_NEWROUTE: u16 = 24;
const RTM_DELROUTE: u16 = 25;
const RTM_GETROUTE: u16 = 26;
const RTM_NEWRULE: u16 = 32;
const RTM_DELRULE: u16 = 33;
/// `NLM_F_EXCL`: an object that exists already is an error, never replaced (a
/// foreign default route in the table stays as it is).
const NLM_F_EXCL: u16 = 0x200;
pub const FRA_PRIORITY: u16 = 6;
pub const FRA_FWMARK: u16 = 10;
pub const FRA_TABLE: u16 = 15;
pub const FRA_FWMASK: u16 = 16;
pub const FR_ACT_TO_TBL: u8 = 1;
pub const RTA_OIF: u16 = 4;
pub const RTA_GATEWAY: u16 = 5;
pub const RTA_TABLE: u16 = 15;
const RT_SCOPE_UNIVERSE: u8 = 0;
const RT_SCOPE_LINK: u8 = 253;
const RTN_UNICAST: u8 = 1;
/// `RT_TABLE_COMPAT`: the 8-bit field of a table above 255 (the attribute holds it).
const RT_TABLE_COMPAT: u8 = 252;

/// The protocol number of the routes the program adds (`ip route ... proto 241`):
/// not in iproute2's `rt_protos`, so no routing daemon claims it; only routes of this
/// protocol are ever deleted.
pub const RTPROT_OURS: u8 = 241;

/// A policy rule: family (`AF_INET`, `AF_INET6`), priority, fwmark, mask, table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RuleSpec {
    pub family: u8,
    pub priority: u32,
    pub mark: u32,
    pub mask: u32,
    pub table: u32,
}

/// A default route of one family in `table` through link `oif`, with a gateway
/// (4 or 16 bytes) or none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteSpec {
    pub family: u8,
    pub table: u32,
    pub oif: u32,
    pub gateway: Option<Vec<u8>>,
}

fn table8(t: u32) -> u8 {
    u8::try_from(t).unwrap_or(RT_TABLE_COMPAT)
}

impl Batch {
    /// RTM_NEWRULE (`add`, created only if no equal rule exists) or RTM_DELRULE.
    pub fn rule(&mut self, add: bool, r: &RuleSpec) {
        let (kind, flags) = match add {
            true => (RTM_NEWRULE, NLM_F_CREATE | NLM_F_EXCL),
            false => (RTM_DELRULE, 0),
        };
        // fib_rule_hdr: family, dst_len, src_len, tos, table, res1, res2, action, flags.
        let hdr = [
            r.family,
            0,
            0,
            0,
            table8(r.table),
            0,
            0,
            FR_ACT_TO_TBL,
            0,
            0,
            0,
            0,
        ];
        let at = self.raw(kind, NLM_F_REQUEST | NLM_F_ACK | flags, &hdr);
        self.attr(FRA_PRIORITY, &r.priority.to_ne_bytes());
        self.attr(FRA_FWMARK, &r.mark.to_ne_bytes());
        self.attr(FRA_FWMASK, &r.mask.to_ne_bytes());
        self.attr(FRA_TABLE, &r.table.to_ne_bytes());
        self.close(at);
    }

    /// RTM_NEWROUTE (`add`, never replacing one there) or RTM_DELROUTE of the default
    /// route `r`, with the program's protocol number.
    pub fn route(&mut self, add: bool, r: &RouteSpec) {
        let (kind, flags) = match add {
            true => (RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL),
            false => (RTM_DELROUTE, 0),
        };
        // A route without a gateway reaches everything on the link (`dev wg0`).
        let scope = if r.gateway.is_some() {
            RT_SCOPE_UNIVERSE
        } else {
            RT_SCOPE_LINK
        };
        // rtmsg: family, dst_len, src_len, tos, table, protocol, scope, type, flags.
        let hdr = [
            r.family,
            0,
            0,
            0,
            table8(r.table),
            RTPROT_OURS,
            scope,
            RTN_UNICAST,
            0,
            0,
            0,
            0,
        ];
        let at = self.raw(kind, NLM_F_REQUEST | NLM_F_ACK | flags, &hdr);
        self.attr(RTA_TABLE, &r.table.to_ne_bytes());
        self.attr(RTA_OIF, &r.oif.to_ne_bytes());
        if let Some(g) = &r.gateway {
            self.attr(RTA_GATEWAY, g);
        }
        self.close(at);
    }

    /// RTM_GETROUTE dump of one family's routes, every table.
    pub fn dump_routes(&mut self, family: u8) {
        let at = self.raw(
            RTM_GETROUTE,
            NLM_F_REQUEST | NLM_F_DUMP,
            &[family, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        );
        self.close(at);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr(kind: u16, v: &[u8]) -> Vec<u8> {
        let mut a = ((4 + v.len()) as u16).to_ne_bytes().to_vec();
        a.extend_from_slice(&kind.to_ne_bytes());
        a.extend_from_slice(v);
        a
    }

    fn header(len: u32, kind: u16, flags: u16, seq: u32) -> Vec<u8> {
        [
            &len.to_ne_bytes()[..],
            &kind.to_ne_bytes(),
            &flags.to_ne_bytes(),
            &seq.to_ne_bytes(),
            &0u32.to_ne_bytes(),
        ]
        .concat()
    }

    #[test]
    fn newrule_bytes() {
        let mut b = Batch::request_from(7);
        let r = RuleSpec {
            family: 10,
            priority: 27100,
            mark: 0x100,
            mask: 0xff00,
            table: 100,
        };
        b.rule(true, &r);
        let got = b.into_bytes();
        let body = [
            vec![10, 0, 0, 0, 100, 0, 0, 1, 0, 0, 0, 0],
            attr(6, &27100u32.to_ne_bytes()),
            attr(10, &0x100u32.to_ne_bytes()),
            attr(16, &0xff00u32.to_ne_bytes()),
            attr(15, &100u32.to_ne_bytes()),
        ]
        .concat();
        // NEWRULE, REQUEST|ACK|EXCL|CREATE.
        let want = [header(16 + body.len() as u32, 32, 0x605, 7), body].concat();
        assert_eq!(got, want);
        let mut b = Batch::request_from(8);
        b.rule(false, &RuleSpec { table: 1000, ..r });
        let got = b.into_bytes();
        assert_eq!(u16::from_ne_bytes([got[4], got[5]]), 33);
        assert_eq!(u16::from_ne_bytes([got[6], got[7]]), 5, "REQUEST|ACK");
        // A table above 255: RT_TABLE_COMPAT in the header, the attribute holds it.
        assert_eq!(got[16 + 4], 252);
        assert!(got.ends_with(&attr(15, &1000u32.to_ne_bytes())));
    }

    #[test]
    fn newroute_bytes_with_and_without_gateway() {
        let mut b = Batch::request_from(1);
        let r = RouteSpec {
            family: 2,
            table: 100,
            oif: 5,
            gateway: None,
        };
        b.route(true, &r);
        let body = [
            vec![2, 0, 0, 0, 100, 241, 253, 1, 0, 0, 0, 0],
            attr(15, &100u32.to_ne_bytes()),
            attr(4, &5u32.to_ne_bytes()),
        ]
        .concat();
        let want = [header(16 + body.len() as u32, 24, 0x605, 1), body].concat();
        assert_eq!(b.into_bytes(), want);
        let mut b = Batch::request_from(2);
        b.route(
            false,
            &RouteSpec {
                gateway: Some(vec![192, 0, 2, 254]),
                ..r
            },
        );
        let got = b.into_bytes();
        assert_eq!(u16::from_ne_bytes([got[4], got[5]]), 25);
        assert_eq!(u16::from_ne_bytes([got[6], got[7]]), 5);
        assert_eq!(
            got[16 + 6],
            0,
            "a route through a gateway is universe scope"
        );
        assert!(got.ends_with(&attr(5, &[192, 0, 2, 254])));
    }
}
