//! Footprint benchmark (issue 16): bytes per stored value of the database and of its
//! snapshot, for 100,000 IPv4 /24 and 10,000 IPv6 /48 prefixes of 10 ASNs plus 1,000
//! addresses of 250 host names: fresh, and after 30 simulated daily runs with 1 %
//! churn each (1 % of each source's values stop being announced and expire after
//! `ttl_days` = 7, 1 % new ones come). Beside it, the same rows and changes in the
//! version-2 schema, built in the same run (the rows and changes as the program reads
//! them, written into the version-2 tables). Also the
//! same values as text, gzip -9 (when `gzip` is installed). Prints figures; asserts
//! nothing.
//!
//! `cargo bench --bench footprint`

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use ripe_cidr_collector::config::Paths;
use ripe_cidr_collector::db::{self, snapshot};
use ripe_cidr_collector::source::Kind;

const ASNS: usize = 10;
const V4_PER_ASN: usize = 10_000;
const V6_PER_ASN: usize = 1_000;
const HOSTS: usize = 250;
const PER_HOST: usize = 4;
const DAY: i64 = 86_400;
const T0: i64 = 1_790_000_000;

/// A small deterministic generator (xorshift).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// A new value of ASN `a`: IPv4 /24s spread over the ASN's own /8, IPv6 /48s in its /32.
fn asn_value(r: &mut Rng, a: usize, v6: bool) -> String {
    let x = r.next();
    if v6 {
        format!("2a0{}:{:x}:{:x}::/48", a % 10, 0x100 + a, x & 0xffff)
    } else {
        format!("{}.{}.{}.0/24", 20 + a, (x >> 8) & 255, x & 255)
    }
}

fn host_value(r: &mut Rng) -> String {
    let x = r.next();
    if x % 4 == 0 {
        format!("2606:4700::{:x}", x >> 48)
    } else {
        format!(
            "{}.{}.{}.{}",
            100 + (x & 63),
            (x >> 8) & 255,
            (x >> 16) & 255,
            (x >> 24) & 255
        )
    }
}

/// What each source answers, kept across days.
struct World {
    asns: Vec<Vec<String>>,
    hosts: Vec<Vec<String>>,
    rng: Rng,
}

impl World {
    fn new() -> World {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let mut asns = Vec::new();
        for a in 0..ASNS {
            let mut set = std::collections::BTreeSet::new();
            while set.len() < V4_PER_ASN {
                set.insert(asn_value(&mut rng, a, false));
            }
            while set.len() < V4_PER_ASN + V6_PER_ASN {
                set.insert(asn_value(&mut rng, a, true));
            }
            asns.push(set.into_iter().collect());
        }
        let hosts = (0..HOSTS)
            .map(|_| (0..PER_HOST).map(|_| host_value(&mut rng)).collect())
            .collect();
        World { asns, hosts, rng }
    }

    /// One day of churn: 1 % of every source replaced (at least one value of a host
    /// every 25 days).
    fn churn(&mut self, day: usize) {
        for (a, list) in self.asns.iter_mut().enumerate() {
            for _ in 0..list.len() / 100 {
                let i = (self.rng.next() as usize) % list.len();
                let v6 = list[i].contains(':');
                list[i] = asn_value(&mut self.rng, a, v6);
            }
        }
        for (h, list) in self.hosts.iter_mut().enumerate() {
            if (h + day) % 25 == 0 {
                list[0] = host_value(&mut self.rng);
            }
        }
    }

    fn run(&self, paths: &Paths, now: i64) {
        let mut d = db::open(paths).unwrap();
        let tx = d.write().unwrap();
        for (a, list) in self.asns.iter().enumerate() {
            tx.merge_source(Kind::Asn, &format!("{}", 64_500 + a), list, now, 7)
                .unwrap();
        }
        for (h, list) in self.hosts.iter().enumerate() {
            tx.merge_source(Kind::Fqdn, &format!("h{h}.example.com"), list, now, 7)
                .unwrap();
        }
        tx.commit().unwrap();
    }
}

/// The size of a database once its WAL is folded in.
fn size(db: &Path) -> u64 {
    let c = rusqlite::Connection::open(db).unwrap();
    c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    drop(c);
    std::fs::metadata(db).unwrap().len()
}

/// The same rows and changes in the version-2 schema (the contract's tables), copied
/// as the program reads them into a new file.
fn as_v2(paths: &Paths, out: &Path) -> u64 {
    let _ = std::fs::remove_file(out);
    let d = db::open(paths).unwrap();
    let mut c = rusqlite::Connection::open(out).unwrap();
    c.execute_batch(
        "CREATE TABLE addresses (kind TEXT NOT NULL CHECK (kind IN ('asn', 'fqdn')),
             source TEXT NOT NULL, value TEXT NOT NULL, first_seen TEXT NOT NULL,
             last_seen TEXT NOT NULL, PRIMARY KEY (kind, source, value));
         CREATE INDEX addresses_value ON addresses (value);
         CREATE TABLE changes (time TEXT NOT NULL, kind TEXT NOT NULL, source TEXT NOT NULL,
             value TEXT NOT NULL, change TEXT NOT NULL);
         CREATE INDEX changes_time ON changes (time);",
    )
    .unwrap();
    let tx = c.transaction().unwrap();
    {
        let mut ins = tx
            .prepare("INSERT INTO addresses VALUES (?1, ?2, ?3, ?4, ?5)")
            .unwrap();
        for r in d.all_rows().unwrap() {
            ins.execute([
                r.kind.as_str(),
                &r.source,
                &r.value,
                &r.first_seen,
                &r.last_seen,
            ])
            .unwrap();
        }
        let mut ins = tx
            .prepare("INSERT INTO changes VALUES (?1, ?2, ?3, ?4, ?5)")
            .unwrap();
        for ch in d.all_changes().unwrap() {
            ins.execute([
                &ch.time,
                ch.kind.as_str(),
                &ch.source,
                &ch.value,
                ch.change.as_str(),
            ])
            .unwrap();
        }
    }
    tx.commit().unwrap();
    drop(c);
    std::fs::metadata(out).unwrap().len()
}

/// The values as text, one per line, gzip -9: how firewall tools keep such lists.
fn gzipped_text(paths: &Paths) -> Option<u64> {
    let d = db::open(paths).unwrap();
    let values = d
        .get_values(ripe_cidr_collector::format::TypeFilter::All)
        .unwrap();
    let text = values.join("\n") + "\n";
    let mut child = Command::new("gzip")
        .arg("-9")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .ok()?;
    let mut stdin = child.stdin.take()?;
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        let _ = stdin.write_all(text.as_bytes());
    });
    let out = child.wait_with_output().ok()?;
    let _ = writer.join();
    Some(out.stdout.len() as u64)
}

fn report(label: &str, paths: &Paths, dir: &Path) {
    let d = db::open(paths).unwrap();
    let (asn, fqdn) = d.counts().unwrap();
    let values = (asn + fqdn) as f64;
    let changes = d.all_changes().unwrap().len();
    drop(d);
    let v3 = size(&paths.db);
    let v2 = as_v2(paths, &dir.join("v2.db"));
    let started = Instant::now();
    snapshot::write(paths).unwrap();
    let took = started.elapsed();
    let snap = std::fs::metadata(paths.snapshot.as_ref().unwrap())
        .unwrap()
        .len();
    println!("{label}: {values} values, {changes} changes");
    println!(
        "  database v3: {v3} B, {:.1} B/value   (v2 schema: {v2} B, {:.1} B/value)",
        v3 as f64 / values,
        v2 as f64 / values
    );
    println!(
        "  snapshot:    {snap} B, {:.2} B/value (written in {} ms)",
        snap as f64 / values,
        took.as_millis()
    );
    if let Some(gz) = gzipped_text(paths) {
        println!(
            "  values as text, gzip -9: {gz} B, {:.2} B/value; snapshot / gzip: {:.2}x",
            gz as f64 / values,
            snap as f64 / gz as f64
        );
    }
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let paths = Paths::new(dir.path(), None).with_snapshot(Some(dir.path().join("ripe.snapshot")));
    let mut world = World::new();
    world.run(&paths, T0);
    report("fresh (one run)", &paths, dir.path());
    for day in 1..=30 {
        world.churn(day);
        world.run(&paths, T0 + day as i64 * DAY);
    }
    report("after 30 daily runs, 1 % churn", &paths, dir.path());
}
