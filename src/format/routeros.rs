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
    let lines = Lines::new(set);
    lines.head::<N>(out);
    lines.entries(out, entries);
    lines.tail(out);
}

/// The fixed pieces of a family's lines, made once.
struct Lines {
    set: String,
    tag: String,
    /// An entry's line: the address goes between these, twice.
    add: String,
    retag: String,
    end: String,
}

impl Lines {
    fn new(set: &str) -> Lines {
        let tag = tag(set);
        Lines {
            add: format!(":do {{add list=\"{set}\" comment=\"{tag}\" address="),
            retag: format!("}} on-error={{set [find list=\"{set}\" comment=\"{tag}:old\" address="),
            end: format!("] comment=\"{tag}\"}}\n"),
            set: set.to_string(),
            tag,
        }
    }

    /// The menu and the re-tagging of our entries.
    fn head<N: Net>(&self, out: &mut Vec<u8>) {
        let (set, tag) = (&self.set, &self.tag);
        out.extend_from_slice(N::ROUTEROS_MENU.as_bytes());
        out.extend_from_slice(b" firewall address-list\n");
        out.extend_from_slice(
            format!(
                ":foreach i in=[find list=\"{set}\" comment=\"{tag}\"] do={{set $i comment=\"{tag}:old\"}}\n"
            )
            .as_bytes(),
        );
    }

    fn entries<N: Net>(&self, out: &mut Vec<u8>, entries: &[Entry<N>]) {
        for e in entries {
            out.extend_from_slice(self.add.as_bytes());
            let at = out.len();
            address(e, out);
            let addr = at..out.len();
            out.extend_from_slice(self.retag.as_bytes());
            out.extend_from_within(addr);
            out.extend_from_slice(self.end.as_bytes());
        }
    }

    /// The removal of the entries no longer listed.
    fn tail(&self, out: &mut Vec<u8>) {
        let (set, tag) = (&self.set, &self.tag);
        out.extend_from_slice(
            format!("remove [find list=\"{set}\" comment=\"{tag}:old\"]\n").as_bytes(),
        );
    }
}

/// The page `page` (from 1) of the script of `p` ([`routeros_page`] of the whole),
/// made without the whole: the script is written a few hundred lines at a time and
/// only the page's lines are kept, so that a script of any size costs one page (and
/// the values). `None` when there is no such page.
pub fn routeros_page_of(
    p: &super::Prepared,
    set: &str,
    (v4, v6): (bool, bool),
    page: usize,
) -> Option<RouterosPage> {
    let lines = Lines::new(set);
    let mut pager = Pager {
        want: page,
        page: 1,
        len: 0,
        menu: Vec::new(),
        out: Vec::new(),
    };
    let mut buf = Vec::new();
    let mut feed = |buf: &mut Vec<u8>| {
        buf.split_inclusive(|&b| b == b'\n')
            .for_each(|l| pager.line(l));
        buf.clear();
    };
    if v4 {
        lines.head::<ipnet::Ipv4Net>(&mut buf);
        feed(&mut buf);
        for chunk in p.v4.chunks(256) {
            lines.entries(&mut buf, chunk);
            feed(&mut buf);
        }
        lines.tail(&mut buf);
        feed(&mut buf);
    }
    if v6 {
        lines.head::<ipnet::Ipv6Net>(&mut buf);
        feed(&mut buf);
        for chunk in p.v6.chunks(256) {
            lines.entries(&mut buf, chunk);
            feed(&mut buf);
        }
        lines.tail(&mut buf);
        feed(&mut buf);
    }
    pager.finish()
}

/// The cutting of [`cuts`], a line at a time, keeping one page.
struct Pager {
    want: usize,
    /// The page being cut (from 1), and its bytes so far.
    page: usize,
    len: usize,
    /// The last menu line.
    menu: Vec<u8>,
    /// The page wanted.
    out: Vec<u8>,
}

impl Pager {
    fn line(&mut self, l: &[u8]) {
        if self.len + l.len() + PAGE_HEAD > ROUTEROS_PAGE_MAX && self.len > 0 {
            self.page += 1;
            self.len = 0;
            if self.page == self.want && l.first() != Some(&b'/') {
                self.out.extend_from_slice(&self.menu);
            }
        }
        if l.first() == Some(&b'/') {
            self.menu = l.to_vec();
        }
        if self.page == self.want {
            self.out.extend_from_slice(l);
        }
        self.len += l.len();
    }

    fn finish(self) -> Option<RouterosPage> {
        let pages = self.page;
        if self.want == 0 || self.want > pages {
            return None;
        }
        let mut body = match self.want {
            1 => format!("# pages: {pages}\n").into_bytes(),
            _ => Vec::new(),
        };
        body.extend_from_slice(&self.out);
        Some(RouterosPage { body, pages })
    }
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
