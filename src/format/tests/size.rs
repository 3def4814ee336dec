//! `size_bound` against real renders of every format (issue 39: the API reserved
//! 48 bytes a RouterOS row against 180 real, and let such a body pass its budget).

use super::*;

/// Values with the longest addresses of each family, none adjacent (nothing
/// aggregates): 2,000 IPv4 `/32`s of 15 characters and 2,000 IPv6 `/128`s of 39.
fn long_values() -> Vec<String> {
    let v4 = (0..2000u32).map(|i| format!("200.{}.{}.200/32", 100 + i / 64, 100 + (i % 64) * 2));
    let v6 =
        (0..2000u32).map(|i| format!("2001:db8:aaaa:bbbb:cccc:dddd:eeee:{:x}/128", 0x1000 + 2 * i));
    v4.chain(v6).collect()
}

#[test]
fn the_size_bound_is_a_close_upper_bound_in_every_format() {
    let values = long_values();
    for &format in FORMATS {
        for family in [None, Some(Family::V4), Some(Family::V6)] {
            let opts = RenderOptions {
                format,
                family,
                via: Some("wg0".into()),
                ..RenderOptions::default()
            };
            // BIRD's routes with and without a community.
            let with_community = RenderOptions {
                community: Some("65000:4200000000:100".parse().unwrap()),
                ..opts.clone()
            };
            for opts in [opts, with_community] {
                let p = prepare(&values, family, needs_aggregate(&opts));
                let real = render_prepared(&p, &opts).len();
                let bound = size_bound(&p, &opts);
                assert!(
                    real <= bound,
                    "{format} {family:?}: {real} bytes over the bound {bound}"
                );
                assert!(
                    bound <= real + real / 4 + 2048,
                    "{format} {family:?}: the bound {bound} is far above the real {real}"
                );
            }
        }
    }
}

#[test]
fn a_routeros_page_made_alone_is_the_page_of_the_whole_script() {
    let values = long_values();
    for family in [None, Some(Family::V4), Some(Family::V6)] {
        let opts = RenderOptions {
            format: Format::Routeros,
            family,
            ..RenderOptions::default()
        };
        let p = prepare(&values, family, needs_aggregate(&opts));
        let whole = render_prepared(&p, &opts);
        let sides = (family != Some(Family::V6), family != Some(Family::V4));
        let pages = routeros_page(&whole, 1).unwrap().pages;
        assert!(pages > 3, "{pages}");
        for page in 1..=pages + 1 {
            let alone = routeros_page_of(&p, &opts.set, sides, page);
            assert_eq!(alone, routeros_page(&whole, page), "{family:?} page {page}");
        }
    }
    // An empty script is one page too.
    let empty = prepare(&[], None, false);
    let whole = render_prepared(
        &empty,
        &RenderOptions {
            format: Format::Routeros,
            ..RenderOptions::default()
        },
    );
    assert_eq!(
        routeros_page_of(&empty, &RenderOptions::default().set, (true, true), 1),
        routeros_page(&whole, 1)
    );
}
