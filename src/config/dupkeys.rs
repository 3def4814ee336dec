//! A key given twice in `config.json` (`"asns"` pasted in again, say): a generic JSON
//! value keeps only the last, and the next rewrite by `asn add` would drop the other
//! silently. This scan finds such keys at any depth so that reading fails naming the
//! key, its line and column. It is a plain byte scan of text already known to be
//! valid JSON (a second pass of the parser keeping positions would cost flash); keys are compared
//! as written, escapes and all. Each object's keys are collected with their positions
//! and sorted when the object closes (no hash set: no hash table code on flash), so a
//! file with tens of thousands of keys is checked in O(n log n).

/// The first key repeated within one object of `text`, and the 1-based line and
/// column where its repetition starts. `text` must be valid JSON. "First" is in
/// document order: the repetition that starts earliest.
pub(super) fn repeated_key(text: &str) -> Option<(&str, usize, usize)> {
    let b = text.as_bytes();
    // One entry per open container: its keys and where each starts, or None for an
    // array.
    let mut stack: Vec<Option<Vec<(&str, usize)>>> = Vec::new();
    let mut first: Option<(&str, usize)> = None;
    let mut expect_key = false;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'{' => {
                stack.push(Some(Vec::new()));
                expect_key = true;
            }
            b'[' => stack.push(None),
            b'}' | b']' => {
                if let Some(Some(keys)) = stack.pop() {
                    first = earlier(first, first_repeat(keys));
                }
            }
            b',' => expect_key = matches!(stack.last(), Some(Some(_))),
            b'"' => {
                let start = i + 1;
                i = start;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                if let (true, Some(Some(keys))) = (expect_key, stack.last_mut()) {
                    keys.push((text.get(start..i).unwrap_or(""), start));
                }
                expect_key = false;
            }
            _ => {}
        }
        i += 1;
    }
    let (key, start) = first?;
    let before = &b[..start - 1];
    let line = before.iter().filter(|&&c| c == b'\n').count() + 1;
    let col = start
        - before
            .iter()
            .rposition(|&c| c == b'\n')
            .map_or(0, |p| p + 1);
    Some((key, line, col))
}

/// The earliest repetition among one object's keys (a key's second occurrence).
fn first_repeat(mut keys: Vec<(&str, usize)>) -> Option<(&str, usize)> {
    keys.sort_unstable();
    keys.windows(2)
        .filter(|w| w[0].0 == w[1].0)
        .map(|w| w[1])
        .min_by_key(|&(_, start)| start)
}

/// Whichever of two repetitions starts first.
fn earlier<'a>(
    a: Option<(&'a str, usize)>,
    b: Option<(&'a str, usize)>,
) -> Option<(&'a str, usize)> {
    match (a, b) {
        (Some(x), Some(y)) => Some(if y.1 < x.1 { y } else { x }),
        (x, y) => x.or(y),
    }
}

#[cfg(test)]
mod tests {
    use super::repeated_key;

    #[test]
    fn finds_repeated_keys_at_any_depth() {
        assert_eq!(repeated_key(r#"{"a":1,"b":2}"#), None);
        assert_eq!(repeated_key(r#"{"a":1,"a":2}"#), Some(("a", 1, 8)));
        assert_eq!(
            repeated_key("{\"a\":{\"x\":\"a\",\n \"x\":[1]}}"),
            Some(("x", 2, 2))
        );
        // Values equal to keys, equal keys in sibling objects, escaped quotes.
        assert_eq!(
            repeated_key(r#"{"a":"a","l":[{"a":1},{"a":2}],"q\"":"a"}"#),
            None
        );
        assert_eq!(
            repeated_key(r#"[{"k":1},{"k":2,"k":3}]"#),
            Some(("k", 1, 17))
        );
        // The repetition that starts first wins, whichever object closes first.
        assert_eq!(
            repeated_key(r#"{"a":{"x":1,"x":2},"a":3}"#),
            Some(("x", 1, 13))
        );
        assert_eq!(
            repeated_key(r#"{"a":1,"b":{"x":1},"a":2,"c":{"y":1,"y":2}}"#),
            Some(("a", 1, 20))
        );
        assert_eq!(
            repeated_key(r#"{"a":1,"b":{"x":1,"x":2,"x":3},"a":2}"#),
            Some(("x", 1, 19))
        );
    }
}
