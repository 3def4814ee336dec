//! A held answer kept for a second opinion as what the store lacks of it
//! (`WriteTx::merge_answer` leaves only that), made whole again by
//! `WriteTx::held_answer` (issue 38, item 15).
use super::*;
use crate::db::gate::Gate;

const GATE: Gate = Gate {
    max_shrink_percent: 30,
    max_growth_percent: 100,
    confirm_after: 6 * 3600,
    reference: 7 * DAY,
};

fn texts(range: std::ops::Range<u32>) -> Vec<String> {
    range
        .map(|i| format!("10.{}.{}.0/24", i >> 8, i & 255))
        .collect()
}

/// Merges `values` as the answer of AS1 at `now` through [`GATE`].
fn merge(db: &mut Db, values: &mut Values, now: i64, confirm: Option<&str>) -> trust::Merged {
    let tx = db.write().unwrap();
    let m = tx
        .merge_answer(
            Kind::Asn,
            "1",
            values,
            (now, 7),
            Some("ripestat"),
            &GATE,
            confirm,
        )
        .unwrap();
    tx.commit().unwrap();
    m
}

#[test]
fn a_held_answer_kept_as_what_the_store_lacks_confirms_as_the_whole_answer() {
    let (_a, pa) = setup();
    let (_b, pb) = setup();
    let (mut kept, mut whole) = (open(&pa).unwrap(), open(&pb).unwrap());
    // 100 stored, then an answer of 10 of them, 5 new and 2001:db8::/48: held.
    let answer: Vec<String> = [texts(0..10), texts(200..205), vals(&["2001:db8::/48"])].concat();
    for db in [&mut kept, &mut whole] {
        merge(db, &mut texts(0..100).iter().collect(), T0, None);
    }
    let t1 = T0 + DAY;
    let mut values: Values = answer.iter().collect();
    assert!(merge(&mut kept, &mut values, t1, None).held());
    let new: Vec<String> = [texts(200..205), vals(&["2001:db8::/48"])].concat();
    let mut new: Values = new.iter().collect();
    new.finish();
    assert_eq!(values, new, "only what the store lacks is kept");
    assert!(values.v4.capacity() <= 5, "{}", values.v4.capacity());
    assert!(merge(&mut whole, &mut answer.iter().collect(), t1, None).held());
    // Confirmed an hour later: the kept part and the stored values seen at t1.
    let t2 = t1 + 3600;
    let tx = kept.write().unwrap();
    tx.held_answer(Kind::Asn, "1", t1, &mut values).unwrap();
    tx.commit().unwrap();
    assert_eq!(values.len(), answer.len());
    let m = merge(&mut kept, &mut values, t2, Some("ipverse"));
    let w = merge(
        &mut whole,
        &mut answer.iter().collect(),
        t2,
        Some("ipverse"),
    );
    assert_eq!((m.stats, m.fetch.answer), (w.stats, w.fetch.answer));
    assert_eq!(m.stats.added, 6);
    assert_eq!(
        kept.rows(Kind::Asn, "1").unwrap(),
        whole.rows(Kind::Asn, "1").unwrap()
    );
}
