//! "Did you mean": the known word closest to a misspelt one, by edit distance
//! (insertions, deletions, substitutions and swaps of neighbours count one each).

/// The edit distance of `a` and `b` (optimal string alignment), in bytes.
fn distance(a: &[u8], b: &[u8]) -> usize {
    // Three rows: two back for a swap of neighbours, one back, this one.
    let mut rows = [
        vec![0; b.len() + 1],
        vec![0; b.len() + 1],
        (0..=b.len()).collect(),
    ];
    for i in 1..=a.len() {
        rows.rotate_left(1);
        rows[2][0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (rows[1][j] + 1)
                .min(rows[2][j - 1] + 1)
                .min(rows[1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(rows[0][j - 2] + 1);
            }
            rows[2][j] = d;
        }
    }
    rows[2][b.len()]
}

/// The candidate closest to `word` when it is close enough to be a slip (at most one
/// edit in three characters, at least one); the first of equally close ones.
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (word.len() / 3).max(1);
    candidates
        .into_iter()
        .filter(|c| *c != word)
        .map(|c| (distance(word.as_bytes(), c.as_bytes()), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// `"; did you mean PREFIXbest?"`, or nothing.
pub fn did_you_mean<'a>(
    word: &str,
    prefix: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> String {
    closest(word, candidates).map_or_else(String::new, |c| format!("; did you mean {prefix}{c}?"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slips_find_their_word() {
        assert_eq!(closest("asn", ["asns", "fqdns", "feeds"]), Some("asns"));
        assert_eq!(
            closest("shedule", ["schedule", "storage"]),
            Some("schedule")
        );
        assert_eq!(
            closest("fromat", ["format", "family", "from"]),
            Some("format")
        );
        assert_eq!(closest("expotr", ["export", "exclude"]), Some("export"));
        assert_eq!(closest("zzz", ["asns", "ttl_days"]), None);
        assert_eq!(closest("asns", ["asns"]), None);
        assert_eq!(distance(b"ab", b"ba"), 1);
        assert_eq!(distance(b"", b"abc"), 3);
    }
}
