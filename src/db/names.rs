//! Holder names of ASNs (RIPEstat `as-overview`), kept so that lists show
//! "62041 TELEGRAM" rather than a bare number. A cache, not data: a name is fetched
//! when its ASN is first collected and refreshed at most weekly; a failed lookup
//! leaves no row (shown as unknown). Writes to it do not count as changes of the
//! stored values (`meta.generation`), and the snapshot leaves it out: after a reboot
//! the names are fetched again rather than costing flash writes.
//!
//! Size (`cargo test --lib db::names -- --nocapture` prints it): 51 bytes of
//! database per stored name of 30 bytes, pages included (the ASN as rowid, the
//! record header, the fetch time, the cell pointer): about 21 bytes besides the name.
//! RIPEstat's holders are 10 to 60 bytes, so 100 ASNs cost about 5 KB of RAM.

use rusqlite::{params, OptionalExtension};

use super::{Db, StoreError};
use crate::util::map::SortedMap;

/// The schema step that adds the table (`user_version` 6; the lead renumbers it at
/// merge). Also part of a new database (`schema::create_empty`).
pub(super) const SCHEMA_NAMES: &str = "
CREATE TABLE names (
    asn     INTEGER PRIMARY KEY,
    holder  TEXT,
    fetched INTEGER NOT NULL
);
";

/// A name older than this is fetched again.
pub const REFRESH_SECONDS: i64 = 7 * 86_400;

impl Db {
    /// Every known holder name, by ASN (`"62041"`). An ASN nobody holds (RIPEstat
    /// said `null`) and one never fetched are left out.
    pub fn names(&self) -> Result<SortedMap<String, String>, StoreError> {
        let mut st = self
            .conn
            .prepare("SELECT asn, holder FROM names WHERE holder IS NOT NULL")?;
        let rows = st.query_map([], |r| Ok((r.get::<_, i64>(0)?.to_string(), r.get(1)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Those of `asns` whose name was never fetched or is older than
    /// [`REFRESH_SECONDS`] at `now`.
    pub fn names_due(&self, asns: &[String], now: i64) -> Result<Vec<String>, StoreError> {
        let mut st = self
            .conn
            .prepare("SELECT fetched FROM names WHERE asn = ?1")?;
        let mut due = Vec::new();
        for a in asns {
            let Ok(n) = a.parse::<i64>() else { continue };
            let fetched: Option<i64> = st.query_row([n], |r| r.get(0)).optional()?;
            if fetched.is_none_or(|t| now - t >= REFRESH_SECONDS || t > now) {
                due.push(a.clone());
            }
        }
        Ok(due)
    }

    /// Keeps the holder of `asn` fetched at `now` (`None`: nobody holds it).
    pub fn set_name(
        &mut self,
        asn: &str,
        holder: Option<&str>,
        now: i64,
    ) -> Result<(), StoreError> {
        let Ok(n) = asn.parse::<i64>() else {
            return Ok(());
        };
        self.conn.execute(
            "INSERT OR REPLACE INTO names (asn, holder, fetched) VALUES (?1, ?2, ?3)",
            params![n, holder, now],
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Paths;

    #[test]
    fn kept_refreshed_weekly_and_bytes_per_name() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::new(dir.path(), None);
        let mut db = crate::db::open(&paths).unwrap();
        let asns: Vec<String> = ["62041", "211157", "1"].map(String::from).to_vec();
        assert_eq!(db.names_due(&asns, 1000).unwrap(), asns);
        db.set_name("62041", Some("TELEGRAM - Telegram Messenger Inc"), 1000)
            .unwrap();
        db.set_name("1", None, 1000).unwrap();
        assert_eq!(db.names_due(&asns, 2000).unwrap(), ["211157"]);
        let week = super::REFRESH_SECONDS;
        assert_eq!(db.names_due(&asns, 1000 + week).unwrap(), asns);
        let names = db.names().unwrap();
        assert_eq!(names.len(), 1);
        assert_eq!(names["62041"], "TELEGRAM - Telegram Messenger Inc");

        // The cost of a stored name: 10,000 names of 30 bytes.
        let pages = |db: &crate::db::Db| -> i64 {
            let n = |p: &str| db.pragma(p).unwrap().parse::<i64>().unwrap();
            n("page_count") * n("page_size")
        };
        let before = pages(&db);
        for i in 0..10_000 {
            let asn = (200_000 + i).to_string();
            db.set_name(&asn, Some("EXAMPLE-AS - Example Networks I"), 1_765_000_000)
                .unwrap();
        }
        let per = (pages(&db) - before) / 10_000;
        println!("bytes per stored name of 30 bytes: {per}");
        assert!(per < 60, "{per}");
    }
}
