//! The nf_tables batch, encoded without a socket: netlink headers, attributes and
//! the interval elements, laid out as the kernel's UAPI headers
//! (`linux/netfilter/nfnetlink.h`, `linux/netfilter/nf_tables.h`) define them.
//!
//! All integers in netlink headers are in host order; nf_tables' `u32` attributes
//! and the keys are big-endian (network order).

mod chain;
mod elem;
mod get;
#[cfg(feature = "routes")]
pub(crate) mod route;

#[cfg(feature = "routes")]
pub use route::{RouteSpec, RuleSpec, RTPROT_OURS};

pub use elem::{top as elem_top, Elems};

pub use chain::{read_mark_rule, MarkRule, MarkSet, HOOK_OUTPUT, HOOK_PREROUTING};

/// `NETLINK_NETFILTER` message type of the batch delimiters.
const NFNL_MSG_BATCH_BEGIN: u16 = 0x10;
const NFNL_MSG_BATCH_END: u16 = 0x11;
const NFNL_BATCH_GENID: u16 = 1;
/// The nf_tables subsystem: the high byte of its message types.
const NFNL_SUBSYS_NFTABLES: u16 = 10;
const NFT_MSG_NEWTABLE: u16 = 0;
const NFT_MSG_NEWSET: u16 = 9;
const NFT_MSG_DELSET: u16 = 11;
const NFT_MSG_NEWSETELEM: u16 = 12;
const NFT_MSG_DELSETELEM: u16 = 14;

const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_ACK: u16 = 0x4;
const NLM_F_CREATE: u16 = 0x400;
const NLA_F_NESTED: u16 = 0x8000;

/// `NFPROTO_INET`: the `inet` family of tables.
const NFPROTO_INET: u8 = 1;

const NFTA_TABLE_NAME: u16 = 1;
const NFTA_SET_TABLE: u16 = 1;
const NFTA_SET_NAME: u16 = 2;
pub const NFTA_SET_FLAGS: u16 = 3;
pub const NFTA_SET_KEY_TYPE: u16 = 4;
pub const NFTA_SET_KEY_LEN: u16 = 5;
const NFTA_SET_ID: u16 = 10;
const NFTA_SET_TIMEOUT: u16 = 11;
const NFTA_SET_USERDATA: u16 = 13;
pub const NFT_SET_INTERVAL: u32 = 0x4;
pub const NFT_SET_TIMEOUT: u32 = 0x10;
const NFTA_SET_ELEM_LIST_TABLE: u16 = 1;
const NFTA_SET_ELEM_LIST_SET: u16 = 2;
pub const NFTA_SET_ELEM_LIST_ELEMENTS: u16 = 3;
pub const NFTA_LIST_ELEM: u16 = 1;
pub const NFTA_SET_ELEM_KEY: u16 = 1;
pub const NFTA_SET_ELEM_FLAGS: u16 = 3;
const NFTA_SET_ELEM_TIMEOUT: u16 = 4;
const NFTA_SET_ELEM_EXPIRATION: u16 = 5;
pub const NFTA_DATA_VALUE: u16 = 1;
pub const NFT_SET_ELEM_INTERVAL_END: u32 = 0x1;

/// nft's data types `ipv4_addr` and `ipv6_addr` (`TYPE_IPADDR`, `TYPE_IP6ADDR`): the
/// kernel compares them when a set exists already, so they must be nft's.
pub const TYPE_IPADDR: u32 = 7;
pub const TYPE_IP6ADDR: u32 = 8;

/// The largest elements attribute: attribute lengths are `u16`.
pub const MAX_NEST: usize = u16::MAX as usize;
/// Bytes of the largest element (an IPv6 interval start with a timeout).
const MAX_ELEM: usize = 48;

/// What one message of the batch does, to name it in an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The batch delimiters.
    Batch,
    /// Creating the table if missing.
    Table,
    /// Creating set number `n` (in the order given) if missing.
    Set(usize),
    /// Deleting set `n`, to create it again with or without timeouts.
    Recreate(usize),
    /// Flushing set `n`.
    Flush(usize),
    /// Adding elements to set `n`.
    Elements(usize),
    /// Deleting elements of set `n` (those that left).
    Delete(usize),
    /// Creating, emptying or filling mark chain `n`.
    Chain(usize),
}

/// One transaction being encoded.
pub struct Batch {
    buf: Vec<u8>,
    seq: u32,
    /// Messages that ask for an acknowledgement: sequence number and step.
    acks: Vec<(u32, Step)>,
    /// Upper bound of an elements attribute; smaller in tests to show the splitting.
    pub nest_limit: usize,
}

impl Batch {
    /// A batch with room for `elements` interval ends; opens it with BATCH_BEGIN.
    pub fn new(elements: usize, first_seq: u32) -> Batch {
        // Untouched capacity is never resident, so a generous bound costs no memory
        // and the buffer is never reallocated (which would briefly double it).
        let messages = elements * MAX_ELEM / (MAX_NEST - 256) + 8;
        let mut b = Batch {
            buf: Vec::with_capacity(elements * MAX_ELEM + messages * 256 + 1024),
            seq: first_seq,
            acks: Vec::new(),
            nest_limit: MAX_NEST,
        };
        b.delimiter(NFNL_MSG_BATCH_BEGIN);
        b
    }

    /// Pins the batch to the ruleset's generation `genid`: the kernel refuses it
    /// (ERESTART) if anyone committed since. Right after [`Batch::new`].
    pub fn pin(&mut self, genid: u32) {
        self.attr(NFNL_BATCH_GENID, &genid.to_be_bytes());
        self.close(0);
    }

    /// The encoded bytes, closed with BATCH_END.
    pub fn finish(mut self) -> (Vec<u8>, Vec<(u32, Step)>) {
        self.delimiter(NFNL_MSG_BATCH_END);
        (self.buf, self.acks)
    }

    fn delimiter(&mut self, kind: u16) {
        let at = self.header(kind, NLM_F_REQUEST, 0);
        // The batch's resource id names the subsystem (big-endian, nfgenmsg.res_id).
        let l = self.buf.len();
        self.buf[l - 2..].copy_from_slice(&NFNL_SUBSYS_NFTABLES.to_be_bytes());
        self.close(at);
    }

    /// Starts a message: nlmsghdr (length filled in by `close`) and nfgenmsg.
    fn header(&mut self, kind: u16, flags: u16, family: u8) -> usize {
        self.raw(kind, flags, &[family, 0, 0, 0]) // version 0, res_id 0
    }

    /// Starts a message of any netlink family: nlmsghdr and its `fixed` header
    /// (nfgenmsg, rtmsg, ...).
    fn raw(&mut self, kind: u16, flags: u16, fixed: &[u8]) -> usize {
        let at = self.buf.len();
        self.buf.extend_from_slice(&0u32.to_ne_bytes());
        self.buf.extend_from_slice(&kind.to_ne_bytes());
        self.buf.extend_from_slice(&flags.to_ne_bytes());
        self.buf.extend_from_slice(&self.seq.to_ne_bytes());
        self.buf.extend_from_slice(&0u32.to_ne_bytes()); // port id: the kernel
        self.buf.extend_from_slice(fixed);
        self.seq = self.seq.wrapping_add(1);
        at
    }

    /// An nf_tables message that is acknowledged.
    fn message(&mut self, msg: u16, create: bool, step: Step) -> usize {
        let flags = NLM_F_REQUEST | NLM_F_ACK | if create { NLM_F_CREATE } else { 0 };
        self.acks.push((self.seq, step));
        self.header((NFNL_SUBSYS_NFTABLES << 8) | msg, flags, NFPROTO_INET)
    }

    fn close(&mut self, at: usize) {
        let len = (self.buf.len() - at) as u32;
        self.buf[at..at + 4].copy_from_slice(&len.to_ne_bytes());
    }

    /// An attribute, padded to 4 bytes (the padding is not in its length).
    fn attr(&mut self, kind: u16, data: &[u8]) {
        self.attr_nul(kind, data, false);
    }

    /// A NUL-terminated string attribute.
    fn string(&mut self, kind: u16, s: &str) {
        self.attr_nul(kind, s.as_bytes(), true);
    }

    fn attr_nul(&mut self, kind: u16, data: &[u8], nul: bool) {
        let len = 4 + data.len() + usize::from(nul);
        self.buf.extend_from_slice(&(len as u16).to_ne_bytes());
        self.buf.extend_from_slice(&kind.to_ne_bytes());
        self.buf.extend_from_slice(data);
        if nul {
            self.buf.push(0);
        }
        self.buf.extend_from_slice(&[0; 3][..(4 - len % 4) % 4]);
    }

    fn nest(&mut self, kind: u16) -> usize {
        let at = self.buf.len();
        self.attr(kind | NLA_F_NESTED, &[]);
        at
    }

    /// Closes a nested attribute: its length covers its (padded) children.
    fn unnest(&mut self, at: usize) {
        let len = (self.buf.len() - at) as u16;
        self.buf[at..at + 2].copy_from_slice(&len.to_ne_bytes());
    }

    /// NEWTABLE `inet <table>`, created if missing. Flags are left out, so that an
    /// existing table keeps its own (e.g. dormant).
    pub fn table(&mut self, table: &str) {
        let at = self.message(NFT_MSG_NEWTABLE, true, Step::Table);
        self.string(NFTA_TABLE_NAME, table);
        self.close(at);
    }

    /// NEWSET of an interval set with keys of `key_len` bytes of nft type `key_type`,
    /// created if missing (an existing one of the same type and flags is kept); with
    /// `timeout`, one whose elements may time out (`flags interval, timeout`).
    pub fn set(&mut self, table: &str, set: &str, key: (u32, u32), n: usize, timeout: bool) {
        let flags = NFT_SET_INTERVAL | if timeout { NFT_SET_TIMEOUT } else { 0 };
        self.new_set(table, set, key, n, flags, None);
    }

    /// NEWSET of a set of single addresses whose elements time out after
    /// `timeout_ms` (nft's `flags timeout; timeout ...`), created if missing: what
    /// dnsmasq's `nftset=` adds resolved addresses to.
    pub fn timeout_set(&mut self, table: &str, set: &str, key: (u32, u32), n: usize, ms: u64) {
        self.new_set(table, set, key, n, NFT_SET_TIMEOUT, Some(ms));
    }

    /// `key`: nft's key type and the key's length in bytes.
    fn new_set(
        &mut self,
        table: &str,
        set: &str,
        key: (u32, u32),
        n: usize,
        flags: u32,
        timeout_ms: Option<u64>,
    ) {
        let at = self.message(NFT_MSG_NEWSET, true, Step::Set(n));
        self.string(NFTA_SET_TABLE, table);
        self.string(NFTA_SET_NAME, set);
        self.attr(NFTA_SET_FLAGS, &flags.to_be_bytes());
        self.attr(NFTA_SET_KEY_TYPE, &key.0.to_be_bytes());
        self.attr(NFTA_SET_KEY_LEN, &key.1.to_be_bytes());
        // Required by the kernel: names the set within the transaction.
        self.attr(NFTA_SET_ID, &(n as u32 + 1).to_be_bytes());
        if let Some(ms) = timeout_ms {
            self.attr(NFTA_SET_TIMEOUT, &ms.to_be_bytes());
        }
        // What nft stores for such a set: the key's byte order is big-endian
        // (libnftnl's SET_KEYBYTEORDER, host-order value 2), so nft lists both alike.
        let mut udata = [0u8, 4, 0, 0, 0, 0];
        udata[2..].copy_from_slice(&2u32.to_ne_bytes());
        self.attr(NFTA_SET_USERDATA, &udata);
        self.close(at);
    }

    /// DELSET: deletes set `n` in this transaction, so that it can be created again
    /// with other flags (the kernel refuses while a rule outside it uses the set).
    pub fn del_set(&mut self, table: &str, set: &str, n: usize) {
        let at = self.message(NFT_MSG_DELSET, false, Step::Recreate(n));
        self.string(NFTA_SET_TABLE, table);
        self.string(NFTA_SET_NAME, set);
        self.close(at);
    }

    /// DELSETELEM without elements: empties the set (in this transaction).
    pub fn flush(&mut self, table: &str, set: &str, n: usize) {
        let at = self.message(NFT_MSG_DELSETELEM, false, Step::Flush(n));
        self.string(NFTA_SET_ELEM_LIST_TABLE, table);
        self.string(NFTA_SET_ELEM_LIST_SET, set);
        self.close(at);
    }
}
