//! Merge benchmark: 100,000 values of one source into an empty database, then again
//! when all are present, beside a baseline measured in the same run: the same upserts
//! in one transaction through Python's `sqlite3` module with `executemany` (how the
//! earlier version wrote). Prints figures; asserts nothing.
//!
//! `cargo bench --bench merge`

use std::process::Command;
use std::time::{Duration, Instant};

use ripe_cidr_collector::config::Paths;
use ripe_cidr_collector::db;
use ripe_cidr_collector::db::trust::Gate;
use ripe_cidr_collector::source::Kind;

const N: usize = 100_000;
const ROUNDS: usize = 5;

const PYTHON: &str = r#"
import sqlite3, sys, time, os
path, values_file = sys.argv[1], sys.argv[2]
values = open(values_file).read().split()
con = sqlite3.connect(path, isolation_level=None)
for p in ("journal_mode=WAL", "synchronous=NORMAL", "temp_store=MEMORY"):
    con.execute("PRAGMA " + p)
con.executescript("""
CREATE TABLE addresses (kind TEXT NOT NULL CHECK (kind IN ('asn','fqdn')), source TEXT NOT NULL,
  value TEXT NOT NULL, first_seen TEXT NOT NULL, last_seen TEXT NOT NULL, PRIMARY KEY (kind, source, value));
CREATE INDEX addresses_value ON addresses (value);
""")
sql = ("INSERT INTO addresses (kind, source, value, first_seen, last_seen) VALUES (?, ?, ?, ?, ?) "
       "ON CONFLICT(kind, source, value) DO UPDATE SET last_seen = excluded.last_seen")
out = []
for now in ("2026-11-30T00:00:00Z", "2026-11-30T06:00:00Z"):
    t = time.perf_counter()
    con.execute("BEGIN")
    con.executemany(sql, (("asn", "62041", v, now, now) for v in values))
    con.execute("COMMIT")
    out.append(time.perf_counter() - t)
print(" ".join("%.6f" % x for x in out))
"#;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    // Prefixes in the order an upstream might list them: not sorted by string.
    let values: Vec<String> = (0..N)
        .map(|i| {
            let x = (i as u32).wrapping_mul(2_654_435_761) >> 8;
            format!(
                "{}.{}.{}.0/24",
                1 + (x >> 16) % 223,
                (x >> 8) & 255,
                x & 255
            )
        })
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect::<Vec<_>>();
    let mut shuffled = values.clone();
    // Deterministic shuffle.
    let mut s: u64 = 0x9e37_79b9_7f4a_7c15;
    for i in (1..shuffled.len()).rev() {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        shuffled.swap(i, (s % (i as u64 + 1)) as usize);
    }
    let n = shuffled.len();
    let (mut ours_empty, mut ours_full) = (Vec::new(), Vec::new());
    let (mut py_empty, mut py_full) = (Vec::new(), Vec::new());
    let (mut gated_empty, mut gated_full) = (Vec::new(), Vec::new());
    let dir = tempfile::tempdir().unwrap();
    let values_file = dir.path().join("values.txt");
    std::fs::write(&values_file, shuffled.join("\n")).unwrap();
    for round in 0..ROUNDS {
        let paths = Paths::new(dir.path().join(format!("ours{round}")), None);
        let mut d = db::open(&paths).unwrap();
        let t = Instant::now();
        d.merge_source(Kind::Asn, "62041", &shuffled, 1_800_000_000, 7)
            .unwrap();
        ours_empty.push(t.elapsed());
        let t = Instant::now();
        d.merge_source(Kind::Asn, "62041", &shuffled, 1_800_021_600, 7)
            .unwrap();
        ours_full.push(t.elapsed());
        // The same two merges through the trust gate, recording each fetch, as a run
        // merges (issue 28: under 5 % more).
        let paths = Paths::new(dir.path().join(format!("gated{round}")), None);
        let mut d = db::open(&paths).unwrap();
        let gate = Gate {
            max_shrink_percent: 30,
            max_growth_percent: 100,
            confirm_after: 6 * 3600,
            reference: 7 * 86_400,
        };
        for (now, times) in [
            (1_800_000_000, &mut gated_empty),
            (1_800_021_600, &mut gated_full),
        ] {
            let t = Instant::now();
            // Timed from the texts, as `merge_source` above is.
            let mut values: db::Values = shuffled.iter().collect();
            let tx = d.write().unwrap();
            let m = tx
                .merge_answer(
                    Kind::Asn,
                    "62041",
                    &mut values,
                    (now, 7),
                    Some("ripestat"),
                    &gate,
                    None,
                )
                .unwrap();
            tx.commit().unwrap();
            times.push(t.elapsed());
            assert!(!m.held());
        }

        let py_db = dir.path().join(format!("py{round}.db"));
        let out = Command::new("python3")
            .args(["-c", PYTHON])
            .arg(&py_db)
            .arg(&values_file)
            .output();
        match out {
            Ok(o) if o.status.success() => {
                let text = String::from_utf8_lossy(&o.stdout);
                let secs: Vec<f64> = text
                    .split_whitespace()
                    .filter_map(|x| x.parse().ok())
                    .collect();
                if secs.len() == 2 {
                    py_empty.push(Duration::from_secs_f64(secs[0]));
                    py_full.push(Duration::from_secs_f64(secs[1]));
                }
            }
            Ok(o) => eprintln!(
                "python baseline failed: {}",
                String::from_utf8_lossy(&o.stderr)
            ),
            Err(e) => eprintln!("python3 not available, no baseline: {e}"),
        }
    }
    println!("merge of {n} values of one source, median of {ROUNDS} rounds");
    let row = |name: &str, ours: &[Duration], py: &[Duration]| {
        let o = median(ours.to_vec());
        if py.is_empty() {
            println!("{name:<22} ours {:>8.1} ms", o.as_secs_f64() * 1e3);
        } else {
            let p = median(py.to_vec());
            println!(
                "{name:<22} ours {:>8.1} ms   python executemany {:>8.1} ms   ratio {:.2}",
                o.as_secs_f64() * 1e3,
                p.as_secs_f64() * 1e3,
                o.as_secs_f64() / p.as_secs_f64()
            );
        }
    };
    row("into empty database", &ours_empty, &py_empty);
    row("all values present", &ours_full, &py_full);
    let gated = |name: &str, plain: &[Duration], gated: &[Duration]| {
        let (p, g) = (median(plain.to_vec()), median(gated.to_vec()));
        println!(
            "{name:<22} gated {:>7.1} ms   ungated {:>8.1} ms   gate and fetch log {:+.1} %",
            g.as_secs_f64() * 1e3,
            p.as_secs_f64() * 1e3,
            (g.as_secs_f64() / p.as_secs_f64() - 1.0) * 100.0
        );
    };
    gated("into empty database", &ours_empty, &gated_empty);
    gated("all values present", &ours_full, &gated_full);
}
