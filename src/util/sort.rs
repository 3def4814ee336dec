//! The program's one sort: an in-place heapsort, and a stable sort built on it.
//!
//! Why not `slice::sort*`: each call of std's sorts instantiates its whole
//! implementation for that element type and comparison (ipnsort or driftsort with their
//! small-sort networks, 4 to 9 KB each on mipsel). The OpenWrt SDK builds the package
//! against its stock std, where the program's 35 sorts cost 150 KB of the binary
//! (docs/size.md, "Sorting"). The router build of `cross/build.sh` rebuilds std with
//! `optimize_for_size`, whose unstable sort is this same algorithm, so on the router
//! nothing gets slower: O(n log n) in the worst case, no allocation, no recursion.
//!
//! `sort_stable_by` orders positions rather than the elements (one `usize` per element)
//! and then moves each element once, following the permutation's cycles.

use std::cmp::Ordering;

/// Sorts `v` ascending; equal elements may be reordered.
pub fn sort<T: Ord>(v: &mut [T]) {
    sort_by(v, |a, b| a < b);
}

/// Sorts `v` by `key`, ascending; elements of equal keys may be reordered.
pub fn sort_by_key<T, K: Ord>(v: &mut [T], mut key: impl FnMut(&T) -> K) {
    sort_by(v, |a, b| key(a) < key(b));
}

/// Sorts `v` so that no element is `less` than one before it; equal elements may be
/// reordered. `less` must be a strict weak order; if it is not, the elements are still
/// all kept, in an unspecified order (never a panic).
pub fn sort_by<T>(v: &mut [T], mut less: impl FnMut(&T, &T) -> bool) {
    let len = v.len();
    // One loop for both phases, so that each caller links one copy of the sift: the
    // first len / 2 rounds build a max-heap, then each round moves the root behind the
    // shrinking heap and sifts the new root down.
    for i in (0..len + len / 2).rev() {
        let (mut node, end) = if i >= len {
            (i - len, len)
        } else {
            v.swap(0, i);
            (0, i)
        };
        let heap = &mut v[..end];
        loop {
            let mut child = 2 * node + 1;
            if child >= heap.len() {
                break;
            }
            if child + 1 < heap.len() && less(&heap[child], &heap[child + 1]) {
                child += 1;
            }
            if !less(&heap[node], &heap[child]) {
                break;
            }
            heap.swap(node, child);
            node = child;
        }
    }
}

/// Sorts `v` by `cmp`; of equal elements the earlier stays first.
pub fn sort_stable_by<T>(v: &mut [T], mut cmp: impl FnMut(&T, &T) -> Ordering) {
    let mut order: Vec<usize> = (0..v.len()).collect();
    sort_by(&mut order, |&a, &b| {
        cmp(&v[a], &v[b]).then(a.cmp(&b)) == Ordering::Less
    });
    permute(v, &mut order);
}

/// Rearranges `v` so that its element `i` is the one that was at `order[i]`: each cycle
/// of the permutation is walked once, so every element moves once (n swaps at most).
/// `order` is used up (each visited entry is set to its own position).
fn permute<T>(v: &mut [T], order: &mut [usize]) {
    for start in 0..v.len() {
        let mut at = start;
        while order[at] != start && order[at] != at {
            let from = order[at];
            v.swap(at, from);
            order[at] = at;
            at = from;
        }
        order[at] = at;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator: the tests need many shapes, not randomness.
    fn numbers(n: usize, seed: u64, range: u64) -> Vec<u64> {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x % range
            })
            .collect()
    }

    #[test]
    fn sorts_like_std_for_every_length_and_shape() {
        for n in 0..70 {
            for (seed, range) in [(1, 1000), (7, 3), (9, 1), (11, u64::MAX)] {
                let mut got = numbers(n, seed, range);
                let mut want = got.clone();
                want.sort();
                sort(&mut got);
                assert_eq!(got, want, "n={n} seed={seed}");
            }
        }
        let mut asc: Vec<u32> = (0..1000).collect();
        let mut desc: Vec<u32> = (0..1000).rev().collect();
        sort(&mut asc);
        sort(&mut desc);
        assert_eq!(asc, desc);
        assert!(asc.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn by_key_and_by() {
        let mut v = vec![(3, 'a'), (1, 'b'), (2, 'c')];
        sort_by_key(&mut v, |e| e.0);
        assert_eq!(v, [(1, 'b'), (2, 'c'), (3, 'a')]);
        sort_by(&mut v, |a, b| a.1 > b.1);
        assert_eq!(v, [(2, 'c'), (1, 'b'), (3, 'a')]);
    }

    #[test]
    fn stable_keeps_the_order_of_equal_elements() {
        for n in 0..200 {
            let keys = numbers(n, 5, 4);
            let mut got: Vec<(u64, usize)> = keys.iter().copied().zip(0..).collect();
            let mut want = got.clone();
            want.sort_by_key(|a| a.0);
            sort_stable_by(&mut got, |a, b| a.0.cmp(&b.0));
            assert_eq!(got, want, "n={n}");
        }
        // Elements that own memory move without being cloned or lost.
        let mut words: Vec<String> = ["b", "a", "b", "c", "a"].map(String::from).to_vec();
        sort_stable_by(&mut words, |a, b| a.cmp(b));
        assert_eq!(words, ["a", "a", "b", "b", "c"]);
    }

    #[test]
    fn permute_moves_each_element_to_its_place() {
        let mut v = vec!['a', 'b', 'c', 'd', 'e'];
        permute(&mut v, &mut [3, 0, 4, 1, 2]);
        assert_eq!(v, ['d', 'a', 'e', 'b', 'c']);
    }

    #[test]
    fn an_inconsistent_order_loses_nothing() {
        let mut v = numbers(500, 3, 50);
        let mut flip = false;
        sort_by(&mut v, |_, _| {
            flip = !flip;
            flip
        });
        let mut a = v.clone();
        a.sort();
        let mut b = numbers(500, 3, 50);
        b.sort();
        assert_eq!(a, b);
    }
    /// Every sort of the program goes through this module: a call of std's sorts
    /// outside the tests links its own copy of the algorithm (docs/size.md, "Sorting").
    #[test]
    fn no_std_sort_outside_the_tests() {
        fn walk(dir: &std::path::Path, found: &mut Vec<String>) {
            for e in std::fs::read_dir(dir).unwrap() {
                let p = e.unwrap().path();
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                if p.is_dir() {
                    if name != "tests" {
                        walk(&p, found);
                    }
                    continue;
                }
                if !name.ends_with(".rs") || name == "tests.rs" || p.ends_with("util/sort.rs") {
                    continue;
                }
                let text = std::fs::read_to_string(&p).unwrap();
                let code = text.split("#[cfg(test)]").next().unwrap_or("");
                for (n, line) in code.lines().enumerate() {
                    let called = [".sort(", ".sort_unstable", ".sort_by"];
                    if called.iter().any(|c| line.contains(c)) {
                        found.push(format!("{}:{}: {}", p.display(), n + 1, line.trim()));
                    }
                }
            }
        }
        let mut found = Vec::new();
        walk(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
            &mut found,
        );
        assert!(
            found.is_empty(),
            "use crate::util::sort instead:\n{}",
            found.join("\n")
        );
    }
}
