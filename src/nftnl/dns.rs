//! The sets dnsmasq fills (`nftset=`, see `format::dnsmasq`): `<set>_dns_v4` and
//! `<set>_dns_v6` in our table, sets of single addresses whose elements time out.
//!
//! They are created when missing and otherwise never touched: no flush, no delete,
//! no re-creation. dnsmasq adds an address each time it forwards an answer, and a set
//! deleted under it stays broken for dnsmasq until it restarts (openwrt/openwrt#18333);
//! the elements age out by the set's timeout instead. Our own `<set>_v4`/`_v6` keep
//! their flush + add, so each writer owns its sets and neither can undo the other.

use super::msg::{Batch, TYPE_IP6ADDR, TYPE_IPADDR};
use super::{transact, LoadError};
use crate::format::{dns_set_name, Family};

/// Adds to `batch` the NEWSET messages that create the dns sets of `set` (both
/// families, or the one of `family`) if missing, numbered from `first` for errors.
/// Returns their names in that order.
pub(super) fn add_dns_sets(
    batch: &mut Batch,
    table: &str,
    set: &str,
    family: Option<Family>,
    timeout_seconds: u32,
    first: usize,
) -> Vec<String> {
    let ms = u64::from(timeout_seconds) * 1000;
    let mut names = Vec::new();
    for (fam, key_type, key_len) in [(Family::V4, TYPE_IPADDR, 4), (Family::V6, TYPE_IP6ADDR, 16)] {
        if family.is_some_and(|f| f != fam) {
            continue;
        }
        let name = dns_set_name(set, fam);
        batch.timeout_set(table, &name, (key_type, key_len), first + names.len(), ms);
        names.push(name);
    }
    names
}

/// Creates table `inet <table>` and the dns sets of `set` where missing, in one
/// transaction; existing ones and their elements are left as they are. A set of
/// that name with another type, flags or timeout is refused
/// ([`LoadError::SetMismatch`]): its elements stay.
pub fn ensure_dns_sets(
    table: &str,
    set: &str,
    family: Option<Family>,
    timeout_seconds: u32,
) -> Result<(), LoadError> {
    let mut batch = Batch::new(0, 1);
    batch.table(table);
    let names = add_dns_sets(&mut batch, table, set, family, timeout_seconds, 0);
    let (bytes, acks) = batch.finish();
    transact(&super::open_socket()?, bytes, &acks, table, &names)
}
