//! The RouterOS script: an address list updated in place, and its pages.
//!
//! RouterOS has no transaction for an address list, so a script that removed the
//! list and added it again left it empty (or half-filled) during every update. This
//! one never removes an entry that stays: our entries carry the comment `TAG`
//! (`ripe-cidr:<list>`); the script first re-tags them `TAG:old`, then adds each
//! listed address (an address already there, ours, gets `TAG` back instead: the
//! `on-error` branch of its failed `add`), and last removes what is still `TAG:old`,
//! the entries no longer listed. An entry with another comment (added by hand, or
//! by another tool) is never touched: its address is skipped.
//!
//! RouterOS's `/tool fetch` keeps at most 64 KiB of an answer, so the API serves the
//! script in pages of at most [`ROUTEROS_PAGE_MAX`] bytes (`page=N`), each a script
//! of its own (it starts with its menu), to be imported in order; the first says how
//! many there are. The re-tagging is on the first page, the removal on the last, so
//! an update stopped half-way (a page not fetched) removes nothing.

use super::values::{Entry, Net};

/// Largest page of the RouterOS script (60 KiB: under `/tool fetch`'s 64 KiB).
pub const ROUTEROS_PAGE_MAX: usize = 60 * 1024;

/// The comment that marks the entries of list `set` as ours.
fn tag(set: &str) -> String {
    format!("ripe-cidr:{set}")
}

/// One family of the script.
pub(super) fn family<N: Net>(out: &mut Vec<u8>, set: &str, entries: &[Entry<N>]) {
    let (menu, tag) = (N::ROUTEROS_MENU, tag(set));
    out.extend_from_slice(menu.as_bytes());
    out.extend_from_slice(b" firewall address-list\n");
    out.extend_from_slice(
        format!(
            ":foreach i in=[find list=\"{set}\" comment=\"{tag}\"] do={{set $i comment=\"{tag}:old\"}}\n"
        )
        .as_bytes(),
    );
    // The three fixed pieces of an entry's line, made once: the address goes
    // between them twice.
    let add = format!(":do {{add list=\"{set}\" comment=\"{tag}\" address=");
    let retag = format!("}} on-error={{set [find list=\"{set}\" comment=\"{tag}:old\" address=");
    let end = format!("] comment=\"{tag}\"}}\n");
    for e in entries {
        out.extend_from_slice(add.as_bytes());
        let at = out.len();
        address(e, out);
        let addr = at..out.len();
        out.extend_from_slice(retag.as_bytes());
        out.extend_from_within(addr);
        out.extend_from_slice(end.as_bytes());
    }
    out.extend_from_slice(
        format!("remove [find list=\"{set}\" comment=\"{tag}:old\"]\n").as_bytes(),
    );
}

/// An address as RouterOS shows it, so that `find address=` matches: an IPv4 host
/// route bare (RouterOS drops its `/32`), everything else as stored.
fn address<N: Net>(e: &Entry<N>, out: &mut Vec<u8>) {
    let host_v4 = N::DIGIT == "4" && e.net.prefix_len() == 32;
    N::write(
        &Entry {
            net: e.net,
            bare: e.bare || host_v4,
        },
        out,
    );
}

/// One page of a RouterOS script, and how many there are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouterosPage {
    /// The page's script.
    pub body: Vec<u8>,
    /// Number of pages of the whole script.
    pub pages: usize,
}

/// The page `page` (from 1) of `script`, a RouterOS script as [`family`] writes it,
/// cut at line ends into pages of at most [`ROUTEROS_PAGE_MAX`] bytes. A page that
/// starts inside a family repeats that family's menu line first; the first page
/// starts with `# pages: N`. `None` when there is no such page.
pub fn routeros_page(script: &[u8], page: usize) -> Option<RouterosPage> {
    let cuts = cuts(script);
    let pages = cuts.len();
    let (start, end, menu) = *cuts.get(page.checked_sub(1)?)?;
    let mut body = Vec::with_capacity(end - start + 80);
    if page == 1 {
        body.extend_from_slice(format!("# pages: {pages}\n").as_bytes());
    }
    if let Some(m) = menu {
        body.extend_from_slice(&script[m.0..m.1]);
    }
    body.extend_from_slice(&script[start..end]);
    Some(RouterosPage { body, pages })
}

/// Room kept on each page for its first line (`# pages: N`) and a repeated menu.
const PAGE_HEAD: usize = 64;

/// The pages of `script`: their byte ranges, and the menu line (its range) to repeat
/// before a page that starts inside a family.
#[allow(clippy::type_complexity)]
fn cuts(script: &[u8]) -> Vec<(usize, usize, Option<(usize, usize)>)> {
    let mut pages = Vec::new();
    let (mut start, mut at) = (0, 0);
    let (mut menu, mut page_menu) = (None, None);
    while at < script.len() {
        let end = script[at..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(script.len(), |i| at + i + 1);
        if end - start + PAGE_HEAD > ROUTEROS_PAGE_MAX && at > start {
            pages.push((start, at, page_menu));
            start = at;
            page_menu = if script[at] == b'/' { None } else { menu };
        }
        if script[at] == b'/' {
            menu = Some((at, end));
        }
        at = end;
    }
    if start < script.len() || pages.is_empty() {
        pages.push((start, script.len(), page_menu));
    }
    pages
}
