//! Single requests that read (no batch around them): the gets of `explain` for a
//! set and an element (nf_tables), and the rtnetlink requests for the policy rules,
//! a route and a link (`linux/rtnetlink.h`, `linux/fib_rules.h`,
//! `linux/if_link.h`). Each is one message; its answer is read by `probe`.

use super::{
    Batch, MAX_NEST, NFNL_SUBSYS_NFTABLES, NFPROTO_INET, NFTA_DATA_VALUE, NFTA_LIST_ELEM,
    NFTA_SET_ELEM_KEY, NFTA_SET_ELEM_LIST_ELEMENTS, NFTA_SET_ELEM_LIST_SET,
    NFTA_SET_ELEM_LIST_TABLE, NFTA_SET_NAME, NFTA_SET_TABLE, NLM_F_REQUEST,
};

const NFT_MSG_GETSET: u16 = 10;
const NFT_MSG_GETSETELEM: u16 = 13;
const NFT_MSG_GETGEN: u16 = 16;
/// `NLM_F_DUMP` (`NLM_F_ROOT | NLM_F_MATCH`): every object, in parts.
pub const NLM_F_DUMP: u16 = 0x300;

const RTM_GETLINK: u16 = 18;
const RTM_GETROUTE: u16 = 26;
const RTM_GETRULE: u16 = 34;
const RTA_DST: u16 = 1;
const RTA_MARK: u16 = 16;
/// `RTM_F_LOOKUP_TABLE`: the answer names the table the route came from (else
/// `main`, whatever the rules chose).
const RTM_F_LOOKUP_TABLE: u32 = 0x1000;

impl Batch {
    /// An empty request (no BATCH_BEGIN), for one get or dump.
    pub fn request() -> Batch {
        Batch::request_from(1)
    }

    /// An empty request whose message is numbered `seq`.
    pub fn request_from(seq: u32) -> Batch {
        Batch {
            buf: Vec::with_capacity(128),
            seq,
            acks: Vec::new(),
            nest_limit: MAX_NEST,
        }
    }

    /// The encoded request.
    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }

    /// An nf_tables request of the `inet` family.
    pub(super) fn nft_get(&mut self, msg: u16, flags: u16) -> usize {
        self.header(
            (NFNL_SUBSYS_NFTABLES << 8) | msg,
            NLM_F_REQUEST | flags,
            NFPROTO_INET,
        )
    }

    /// GETSET `inet <table> <set>`: answered when the set exists, else ENOENT.
    pub fn get_set(&mut self, table: &str, set: &str) {
        let at = self.nft_get(NFT_MSG_GETSET, 0);
        self.string(NFTA_SET_TABLE, table);
        self.string(NFTA_SET_NAME, set);
        self.close(at);
    }

    /// GETGEN: the ruleset's generation (NEWGEN's `NFTA_GEN_ID`).
    pub fn get_gen(&mut self) {
        let at = self.nft_get(NFT_MSG_GETGEN, 0);
        self.close(at);
    }

    /// GETSETELEM dump of every element of `inet <table> <set>`, in parts.
    pub fn dump_elements(&mut self, table: &str, set: &str) {
        let at = self.nft_get(NFT_MSG_GETSETELEM, NLM_F_DUMP);
        self.string(NFTA_SET_ELEM_LIST_TABLE, table);
        self.string(NFTA_SET_ELEM_LIST_SET, set);
        self.close(at);
    }

    /// GETSETELEM of the element `key`: answered when the set holds it (in an
    /// interval set: when an interval holds it), else ENOENT.
    pub fn get_element(&mut self, table: &str, set: &str, key: &[u8]) {
        let at = self.nft_get(NFT_MSG_GETSETELEM, 0);
        self.string(NFTA_SET_ELEM_LIST_TABLE, table);
        self.string(NFTA_SET_ELEM_LIST_SET, set);
        let list = self.nest(NFTA_SET_ELEM_LIST_ELEMENTS);
        let elem = self.nest(NFTA_LIST_ELEM);
        let k = self.nest(NFTA_SET_ELEM_KEY);
        self.attr(NFTA_DATA_VALUE, key);
        self.unnest(k);
        self.unnest(elem);
        self.unnest(list);
        self.close(at);
    }

    /// RTM_GETRULE dump of one family's policy routing rules (`ip rule`).
    pub fn dump_rules(&mut self, family: u8) {
        // fib_rule_hdr: family, dst_len, src_len, tos, table, res1, res2, action, flags.
        let at = self.raw(
            RTM_GETRULE,
            NLM_F_REQUEST | NLM_F_DUMP,
            &[family, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        );
        self.close(at);
    }

    /// RTM_GETROUTE of `addr` (4 or 16 bytes) for a packet with firewall mark `mark`
    /// (`ip route get ADDR mark M`).
    pub fn get_route(&mut self, family: u8, addr: &[u8], mark: u32) {
        // rtmsg: family, dst_len, src_len, tos, table, protocol, scope, type, flags.
        let mut fixed = [family, 8 * addr.len() as u8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        fixed[8..].copy_from_slice(&RTM_F_LOOKUP_TABLE.to_ne_bytes());
        let at = self.raw(RTM_GETROUTE, NLM_F_REQUEST, &fixed);
        self.attr(RTA_DST, addr);
        self.attr(RTA_MARK, &mark.to_ne_bytes());
        self.close(at);
    }

    /// RTM_GETLINK of the link with index `index`.
    pub fn get_link(&mut self, index: u32) {
        // ifinfomsg: family, pad, type (u16), index (i32), flags, change.
        let mut fixed = [0u8; 16];
        fixed[4..8].copy_from_slice(&index.to_ne_bytes());
        let at = self.raw(RTM_GETLINK, NLM_F_REQUEST, &fixed);
        self.close(at);
    }
}
