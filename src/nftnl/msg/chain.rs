//! The chains that set a group's routing mark: a base chain at prerouting (filter,
//! mangle priority) for forwarded traffic and one at output (route, mangle priority,
//! so that the kernel routes locally sent packets again with their new mark), each
//! with one rule per family:
//!
//! ```text
//! meta nfproto ipv4 ip daddr @<set>_v4 counter meta mark set meta mark & ~mask ^ value
//! ```
//!
//! The counter is what `explain` shows: how many packets the chain marked.
//!
//! Rules are replaced in the same transaction as the sets (the chain's rules are
//! deleted, then added), so a reload never leaves a chain half filled or doubled.

use super::{
    Batch, Step, NFNL_SUBSYS_NFTABLES, NFPROTO_INET, NFTA_DATA_VALUE, NFTA_LIST_ELEM, NLM_F_ACK,
    NLM_F_CREATE, NLM_F_REQUEST,
};

const NFT_MSG_NEWCHAIN: u16 = 3;
const NFT_MSG_GETCHAIN: u16 = 4;
const NFT_MSG_DELCHAIN: u16 = 5;
const NFT_MSG_NEWRULE: u16 = 6;
const NFT_MSG_GETRULE: u16 = 7;
const NFT_MSG_DELRULE: u16 = 8;
const NLM_F_APPEND: u16 = 0x800;

const NFTA_CHAIN_TABLE: u16 = 1;
const NFTA_CHAIN_NAME: u16 = 3;
const NFTA_CHAIN_HOOK: u16 = 4;
const NFTA_CHAIN_POLICY: u16 = 5;
const NFTA_CHAIN_TYPE: u16 = 7;
const NFTA_HOOK_HOOKNUM: u16 = 1;
const NFTA_HOOK_PRIORITY: u16 = 2;
const NFTA_RULE_TABLE: u16 = 1;
const NFTA_RULE_CHAIN: u16 = 2;
const NFTA_RULE_EXPRESSIONS: u16 = 4;
const NFTA_EXPR_NAME: u16 = 1;
const NFTA_EXPR_DATA: u16 = 2;

const NFTA_META_DREG: u16 = 1;
const NFTA_META_KEY: u16 = 2;
const NFTA_META_SREG: u16 = 3;
const NFT_META_MARK: u32 = 3;
const NFT_META_NFPROTO: u32 = 15;
const NFTA_CMP_SREG: u16 = 1;
const NFTA_CMP_OP: u16 = 2;
const NFTA_CMP_DATA: u16 = 3;
const NFT_CMP_EQ: u32 = 0;
const NFTA_PAYLOAD_DREG: u16 = 1;
const NFTA_PAYLOAD_BASE: u16 = 2;
const NFTA_PAYLOAD_OFFSET: u16 = 3;
const NFTA_PAYLOAD_LEN: u16 = 4;
const NFT_PAYLOAD_NETWORK_HEADER: u32 = 1;
const NFTA_LOOKUP_SET: u16 = 1;
const NFTA_LOOKUP_SREG: u16 = 2;
const NFTA_LOOKUP_SET_ID: u16 = 4;
const NFTA_BITWISE_SREG: u16 = 1;
const NFTA_BITWISE_DREG: u16 = 2;
const NFTA_BITWISE_LEN: u16 = 3;
const NFTA_BITWISE_MASK: u16 = 4;
const NFTA_BITWISE_XOR: u16 = 5;
const NFTA_IMMEDIATE_DREG: u16 = 1;
const NFTA_IMMEDIATE_DATA: u16 = 2;
const NFTA_COUNTER_PACKETS: u16 = 2;

/// The first 16-byte register (`NFT_REG_1`): holds an IPv6 address whole.
const REG: u32 = 1;
/// `NF_ACCEPT`: the chains only mark, every packet goes on.
const NF_ACCEPT: u32 = 1;
/// `NF_IP_PRI_MANGLE`.
pub const PRIORITY_MANGLE: i32 = -150;
/// `NF_INET_PRE_ROUTING`, `NF_INET_LOCAL_OUT`.
pub const HOOK_PREROUTING: u32 = 0;
pub const HOOK_OUTPUT: u32 = 3;
/// `NFPROTO_IPV4`, `NFPROTO_IPV6` (`meta nfproto`).
const NFPROTO_IPV4: u8 = 2;
const NFPROTO_IPV6: u8 = 10;

/// Which family a mark rule matches, and the set it looks the destination up in.
pub struct MarkRule<'a> {
    /// The set (`<set>_v4` or `<set>_v6`).
    pub set: &'a str,
    /// Its id in this batch (what `Batch::set` gave it: its number + 1).
    pub set_id: u32,
    /// IPv6 (else IPv4).
    pub v6: bool,
}

impl Batch {
    /// An nf_tables message with explicit flags, acknowledged.
    fn message_flags(&mut self, msg: u16, flags: u16, step: Step) -> usize {
        self.acks.push((self.seq, step));
        self.header(
            (NFNL_SUBSYS_NFTABLES << 8) | msg,
            NLM_F_REQUEST | NLM_F_ACK | flags,
            NFPROTO_INET,
        )
    }

    fn u32_attr(&mut self, kind: u16, v: u32) {
        self.attr(kind, &v.to_be_bytes());
    }

    /// A nested `NFTA_DATA_VALUE` holding `bytes`.
    fn data(&mut self, kind: u16, bytes: &[u8]) {
        let at = self.nest(kind);
        self.attr(NFTA_DATA_VALUE, bytes);
        self.unnest(at);
    }

    /// NEWCHAIN of a base chain (`chain_type` `filter` or `route`) at `hook`, priority
    /// mangle, policy accept; created if missing, kept if it exists alike.
    pub fn base_chain(&mut self, table: &str, chain: &str, hook: u32, chain_type: &str, n: usize) {
        let at = self.message_flags(NFT_MSG_NEWCHAIN, NLM_F_CREATE, Step::Chain(n));
        self.string(NFTA_CHAIN_TABLE, table);
        self.string(NFTA_CHAIN_NAME, chain);
        let hook_at = self.nest(NFTA_CHAIN_HOOK);
        self.u32_attr(NFTA_HOOK_HOOKNUM, hook);
        self.u32_attr(NFTA_HOOK_PRIORITY, PRIORITY_MANGLE as u32);
        self.unnest(hook_at);
        self.u32_attr(NFTA_CHAIN_POLICY, NF_ACCEPT);
        self.string(NFTA_CHAIN_TYPE, chain_type);
        self.close(at);
    }

    /// DELCHAIN: deletes the chain with its rules (a removed group's mark chain).
    pub fn del_chain(&mut self, table: &str, chain: &str, n: usize) {
        let at = self.message_flags(NFT_MSG_DELCHAIN, 0, Step::Chain(n));
        self.string(NFTA_CHAIN_TABLE, table);
        self.string(NFTA_CHAIN_NAME, chain);
        self.close(at);
    }

    /// DELRULE without a handle: deletes every rule of the chain (in this transaction).
    pub fn flush_chain(&mut self, table: &str, chain: &str, n: usize) {
        let at = self.message_flags(NFT_MSG_DELRULE, 0, Step::Chain(n));
        self.string(NFTA_RULE_TABLE, table);
        self.string(NFTA_RULE_CHAIN, chain);
        self.close(at);
    }

    /// One expression of a rule: its name and attributes.
    fn expr(&mut self, name: &str, body: impl FnOnce(&mut Batch)) {
        let elem = self.nest(NFTA_LIST_ELEM);
        self.string(NFTA_EXPR_NAME, name);
        let data = self.nest(NFTA_EXPR_DATA);
        body(self);
        self.unnest(data);
        self.unnest(elem);
    }

    /// NEWRULE appended to `chain`: traffic to an address of `rule.set` gets
    /// `(mark & !mask) ^ value`, the other bits of its mark kept.
    pub fn mark_rule(
        &mut self,
        table: &str,
        chain: &str,
        rule: &MarkRule<'_>,
        value: u32,
        mask: u32,
        n: usize,
    ) {
        let at = self.message_flags(NFT_MSG_NEWRULE, NLM_F_CREATE | NLM_F_APPEND, Step::Chain(n));
        self.string(NFTA_RULE_TABLE, table);
        self.string(NFTA_RULE_CHAIN, chain);
        let list = self.nest(NFTA_RULE_EXPRESSIONS);
        let (proto, offset, len) = if rule.v6 {
            (NFPROTO_IPV6, 24, 16)
        } else {
            (NFPROTO_IPV4, 16, 4)
        };
        self.expr("meta", |b| {
            b.u32_attr(NFTA_META_KEY, NFT_META_NFPROTO);
            b.u32_attr(NFTA_META_DREG, REG);
        });
        self.expr("cmp", |b| {
            b.u32_attr(NFTA_CMP_SREG, REG);
            b.u32_attr(NFTA_CMP_OP, NFT_CMP_EQ);
            b.data(NFTA_CMP_DATA, &[proto]);
        });
        self.expr("payload", |b| {
            b.u32_attr(NFTA_PAYLOAD_DREG, REG);
            b.u32_attr(NFTA_PAYLOAD_BASE, NFT_PAYLOAD_NETWORK_HEADER);
            b.u32_attr(NFTA_PAYLOAD_OFFSET, offset);
            b.u32_attr(NFTA_PAYLOAD_LEN, len);
        });
        self.expr("lookup", |b| {
            b.string(NFTA_LOOKUP_SET, rule.set);
            b.u32_attr(NFTA_LOOKUP_SREG, REG);
            b.u32_attr(NFTA_LOOKUP_SET_ID, rule.set_id);
        });
        self.expr("counter", |_| {});
        if mask == u32::MAX {
            self.expr("immediate", |b| {
                b.u32_attr(NFTA_IMMEDIATE_DREG, REG);
                // The mark is a host-order u32 in the register.
                b.data(NFTA_IMMEDIATE_DATA, &value.to_ne_bytes());
            });
        } else {
            self.expr("meta", |b| {
                b.u32_attr(NFTA_META_KEY, NFT_META_MARK);
                b.u32_attr(NFTA_META_DREG, REG);
            });
            self.expr("bitwise", |b| {
                b.u32_attr(NFTA_BITWISE_SREG, REG);
                b.u32_attr(NFTA_BITWISE_DREG, REG);
                b.u32_attr(NFTA_BITWISE_LEN, 4);
                b.data(NFTA_BITWISE_MASK, &(!mask).to_ne_bytes());
                b.data(NFTA_BITWISE_XOR, &value.to_ne_bytes());
            });
        }
        self.expr("meta", |b| {
            b.u32_attr(NFTA_META_KEY, NFT_META_MARK);
            b.u32_attr(NFTA_META_SREG, REG);
        });
        self.unnest(list);
        self.close(at);
    }
}

impl Batch {
    /// GETCHAIN `inet <table> <chain>`: answered when the chain exists, else ENOENT.
    pub fn get_chain(&mut self, table: &str, chain: &str) {
        let at = self.nft_get(NFT_MSG_GETCHAIN, 0);
        self.string(NFTA_CHAIN_TABLE, table);
        self.string(NFTA_CHAIN_NAME, chain);
        self.close(at);
    }

    /// GETRULE dump of the rules of one chain.
    pub fn dump_chain_rules(&mut self, table: &str, chain: &str) {
        let at = self.nft_get(NFT_MSG_GETRULE, super::get::NLM_F_DUMP);
        self.string(NFTA_RULE_TABLE, table);
        self.string(NFTA_RULE_CHAIN, chain);
        self.close(at);
    }
}

/// What a mark rule of ours does, read back from the kernel's dump of it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MarkSet {
    /// The mark it sets, and the bits it changes (all for an `immediate`).
    pub value: u32,
    /// The bits changed.
    pub mask: u32,
    /// The packets its counter counted (none: a rule without a counter).
    pub packets: Option<u64>,
}

/// Reads the expressions of one rule (the attributes after its nfgenmsg): the mark
/// it sets and its counter. `None` when it sets no mark.
pub fn read_mark_rule(rule: &[u8]) -> Option<MarkSet> {
    use crate::nftnl::read::{attr, attr_u32, attrs, be_u64};
    let list = attr(rule, NFTA_RULE_EXPRESSIONS)?;
    let mut out = MarkSet::default();
    let mut sets = false;
    let value = |b: &[u8]| attr_u32(b, NFTA_DATA_VALUE);
    for (_, e) in attrs(list) {
        let name = attr(e, NFTA_EXPR_NAME).unwrap_or(&[]);
        let data = attr(e, NFTA_EXPR_DATA).unwrap_or(&[]);
        let get = |k: u16| attr(data, k);
        match name {
            b"counter\0" => out.packets = get(NFTA_COUNTER_PACKETS).and_then(be_u64),
            b"immediate\0" => {
                out.value = get(NFTA_IMMEDIATE_DATA).and_then(value)?;
                out.mask = u32::MAX;
                sets = true;
            }
            b"bitwise\0" => {
                out.mask = !get(NFTA_BITWISE_MASK).and_then(value)?;
                out.value = get(NFTA_BITWISE_XOR).and_then(value)?;
                sets = true;
            }
            _ => {}
        }
    }
    sets.then_some(out)
}
