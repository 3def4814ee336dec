//! Set elements: NEWSETELEM (add) and DELSETELEM (delete) messages, split over as
//! many messages as the `u16` attribute length requires (the batch keeps them in one
//! transaction).

use super::super::diff;
use super::{
    Batch, Step, MAX_ELEM, NFTA_DATA_VALUE, NFTA_LIST_ELEM, NFTA_SET_ELEM_EXPIRATION,
    NFTA_SET_ELEM_FLAGS, NFTA_SET_ELEM_KEY, NFTA_SET_ELEM_LIST_ELEMENTS, NFTA_SET_ELEM_LIST_SET,
    NFTA_SET_ELEM_LIST_TABLE, NFTA_SET_ELEM_TIMEOUT, NFT_MSG_DELSETELEM, NFT_MSG_NEWSETELEM,
    NFT_SET_ELEM_INTERVAL_END,
};

/// How elements are sent: added (the default) or deleted; added with a timeout
/// (milliseconds) and as fresh an expiry, which also refreshes the expiry of an
/// element that exists (kernel 6.12 and later).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Elems {
    pub delete: bool,
    pub timeout_ms: Option<u64>,
}

/// The highest key `key_len` bytes wide (4 or 16).
pub fn top(key_len: usize) -> u128 {
    u128::MAX >> (128 - 8 * key_len)
}

impl Batch {
    /// NEWSETELEM messages for the inclusive ranges `(first, last)` of keys
    /// `key_len` bytes wide (the low bytes of the `u128`s), sorted, not overlapping.
    #[cfg(any(test, fuzzing))]
    pub fn elements(
        &mut self,
        table: &str,
        set: &str,
        key_len: usize,
        n: usize,
        ranges: &mut dyn Iterator<Item = (u128, u128)>,
    ) -> usize {
        self.elements_as(table, set, (key_len, n), Elems::default(), ranges)
    }

    /// The elements of a set holding `ranges`, as nft writes them: an interval end
    /// at 0 when the first range starts later, then per range its start and, unless
    /// it reaches the top of the address space, an end element at `last + 1`.
    pub fn elements_as(
        &mut self,
        table: &str,
        set: &str,
        key: (usize, usize),
        op: Elems,
        ranges: &mut dyn Iterator<Item = (u128, u128)>,
    ) -> usize {
        let top = top(key.0);
        let mut all = diff::wanted(ranges).flat_map(|u| diff::elements(u, top));
        self.raw_elements(table, set, key, op, &mut all)
    }

    /// The elements `(key, end)` as they are, added or deleted as `op` says; only
    /// starts get a timeout (the kernel takes none on an interval's end). `key`: the
    /// keys' length and the set's number. Returns how many.
    pub fn raw_elements(
        &mut self,
        table: &str,
        set: &str,
        key: (usize, usize),
        op: Elems,
        elems: &mut dyn Iterator<Item = (u128, bool)>,
    ) -> usize {
        let mut open: Option<(usize, usize)> = None;
        let mut count = 0;
        for (k, end) in elems {
            self.element(&mut open, (table, set), key, op, k, end);
            count += 1;
        }
        if let Some((msg, nest)) = open {
            self.unnest(nest);
            self.close(msg);
        }
        count
    }

    /// One element, in the open message if it fits, else in a new one.
    fn element(
        &mut self,
        open: &mut Option<(usize, usize)>,
        names: (&str, &str),
        (key_len, n): (usize, usize),
        op: Elems,
        key: u128,
        end: bool,
    ) {
        if let Some((msg, nest)) = *open {
            if self.buf.len() - nest + MAX_ELEM > self.nest_limit {
                self.unnest(nest);
                self.close(msg);
                *open = None;
            }
        }
        if open.is_none() {
            let msg = match op.delete {
                true => self.message(NFT_MSG_DELSETELEM, false, Step::Delete(n)),
                false => self.message(NFT_MSG_NEWSETELEM, true, Step::Elements(n)),
            };
            self.string(NFTA_SET_ELEM_LIST_TABLE, names.0);
            self.string(NFTA_SET_ELEM_LIST_SET, names.1);
            *open = Some((msg, self.nest(NFTA_SET_ELEM_LIST_ELEMENTS)));
        }
        let elem = self.nest(NFTA_LIST_ELEM);
        if end {
            self.attr(
                NFTA_SET_ELEM_FLAGS,
                &NFT_SET_ELEM_INTERVAL_END.to_be_bytes(),
            );
        } else if let Some(ms) = op.timeout_ms.filter(|_| !op.delete) {
            self.attr(NFTA_SET_ELEM_TIMEOUT, &ms.to_be_bytes());
            self.attr(NFTA_SET_ELEM_EXPIRATION, &ms.to_be_bytes());
        }
        let k = self.nest(NFTA_SET_ELEM_KEY);
        self.attr(NFTA_DATA_VALUE, &key.to_be_bytes()[16 - key_len..]);
        self.unnest(k);
        self.unnest(elem);
    }
}
