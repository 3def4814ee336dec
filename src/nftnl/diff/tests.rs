use super::*;

const TOP: u128 = 0xffff_ffff;

/// What our full load writes for `ranges`, as the kernel's dump gives it back
/// (highest key first).
fn held_of(ranges: &[(u128, u128)]) -> Held {
    let mut h = Held::default();
    let mut all: Vec<(u128, bool)> = wanted(ranges.iter().copied())
        .flat_map(|u| elements(u, TOP))
        .collect();
    all.reverse();
    for (k, end) in all {
        h.push(k, end);
    }
    h.order();
    h
}

#[test]
fn read_back_units_are_the_written_ones() {
    for ranges in [
        &[][..],
        &[(0, TOP)],
        &[(0, 9)],
        &[(10, 19), (20, 29), (40, TOP)],
        &[(5, 5), (7, 8)],
    ] {
        let h = held_of(ranges);
        let got: Vec<Unit> = h.units(TOP).collect();
        let want: Vec<Unit> = wanted(ranges.iter().copied()).collect();
        assert_eq!(got, want, "{ranges:?}");
        assert_eq!(
            count(diff(h.units(TOP), wanted(ranges.iter().copied())), TOP),
            Counts {
                keep: want.iter().map(|u| size(*u, TOP)).sum(),
                ..Counts::default()
            }
        );
    }
}

#[test]
fn only_changed_units_are_sent() {
    let before = [(10, 19), (30, 39), (50, 59)];
    let after = [(10, 19), (30, 44), (60, 69)];
    let h = held_of(&before);
    let sides: Vec<Side> = diff(h.units(TOP), wanted(after.iter().copied())).collect();
    assert_eq!(
        sides,
        vec![
            Side::Keep((0, 0, 0)),
            Side::Keep((10, 1, 19)),
            // A changed end: the whole range goes and comes back.
            Side::Delete((30, 1, 39)),
            Side::Add((30, 1, 44)),
            Side::Delete((50, 1, 59)),
            Side::Add((60, 1, 69)),
        ]
    );
    let c = count(sides.into_iter(), TOP);
    assert_eq!(
        c,
        Counts {
            delete: 4,
            add: 4,
            keep: 3
        }
    );
}

#[test]
fn the_lead_end_follows_the_first_range() {
    // From a first range at 0 to one later: the end at 0 comes (and back).
    let h = held_of(&[(0, 9)]);
    let sides: Vec<Side> = diff(h.units(TOP), wanted([(0, 9), (20, 29)].into_iter())).collect();
    assert_eq!(sides, vec![Side::Keep((0, 1, 9)), Side::Add((20, 1, 29))]);
    let sides: Vec<Side> = diff(h.units(TOP), wanted([(20, 29)].into_iter())).collect();
    assert_eq!(
        sides,
        vec![
            Side::Add((0, 0, 0)),
            Side::Delete((0, 1, 9)),
            Side::Add((20, 1, 29))
        ]
    );
    // Emptied: every element goes, the end at 0 too.
    let h = held_of(&[(20, 29)]);
    let c = count(diff(h.units(TOP), wanted(std::iter::empty())), TOP);
    assert_eq!(
        c,
        Counts {
            delete: 3,
            add: 0,
            keep: 0
        }
    );
}

#[test]
fn foreign_shapes_are_read_as_their_elements() {
    // Merged by someone else's auto-merge: one range where we write two adjacent.
    let mut h = Held::default();
    for (k, e) in [(40, true), (20, false), (0, true)] {
        h.push(k, e);
    }
    h.order();
    let sides: Vec<Side> = diff(h.units(TOP), wanted([(20, 29), (30, 39)].into_iter())).collect();
    assert_eq!(
        sides,
        vec![
            Side::Keep((0, 0, 0)),
            Side::Add((20, 1, 29)),
            Side::Delete((20, 1, 39)),
            Side::Add((30, 1, 39)),
        ]
    );
    // A start with no end before the next start, a lone end in the middle: each is
    // deleted as the one element it is.
    let mut h = Held::default();
    for (k, e) in [(5, false), (8, false), (12, true), (30, true)] {
        h.push(k, e);
    }
    h.order();
    let units: Vec<Unit> = h.units(TOP).collect();
    assert_eq!(units, vec![(5, 1, TOP), (8, 1, 11), (30, 0, 0)]);
    assert_eq!(units.iter().map(|u| size(*u, TOP)).sum::<usize>(), 4);
    let els: Vec<(u128, bool)> = units.iter().flat_map(|u| elements(*u, TOP)).collect();
    assert_eq!(els, vec![(5, false), (8, false), (12, true), (30, true)]);
}

#[test]
fn changes_are_kept_up_to_the_cap() {
    let h = held_of(&[(10, 19), (30, 39), (50, 59)]);
    let after = [(10, 19), (30, 44), (60, 69)];
    let sides = || diff(h.units(TOP), wanted(after.iter().copied()));
    let (c, kept) = count_changes(sides(), TOP, 4);
    assert_eq!(c, count(sides(), TOP));
    let want: Vec<Side> = sides().filter(|s| !matches!(s, Side::Keep(_))).collect();
    assert_eq!(kept.as_deref(), Some(&want[..]));
    assert_eq!(count_changes(sides(), TOP, 3).1, None);
    let same = || {
        diff(
            h.units(TOP),
            wanted([(10, 19), (30, 39), (50, 59)].into_iter()),
        )
    };
    assert_eq!(count_changes(same(), TOP, 0).1, Some(Vec::new()));
}
