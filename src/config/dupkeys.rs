//! A key given twice in `config.json` (`"asns"` pasted in again, say): a generic JSON
//! value keeps only the last, and the next rewrite by `asn add` would drop the other
//! silently. This scan finds such keys at any depth so that reading fails naming the
//! key, its line and column. It is a plain byte scan of text already known to be
//! valid JSON (a second pass of the parser keeping positions would cost flash); keys are compared
//! as the parser reads them, escapes decoded (`"a\u0062"` repeats `"ab"`: the rewrite
//! would keep one of them). Each object's keys are collected with their positions
//! and sorted when the object closes (no hash set: no hash table code on flash), so a
//! file with tens of thousands of keys is checked in O(n log n).

use std::borrow::Cow;

/// A key as the parser reads it, and where it starts in the text.
type Key<'a> = (Cow<'a, str>, usize);

/// The first key repeated within one object of `text`, and the 1-based line and
/// column where its repetition starts. `text` must be valid JSON. "First" is in
/// document order: the repetition that starts earliest.
pub(super) fn repeated_key(text: &str) -> Option<(Cow<'_, str>, usize, usize)> {
    let b = text.as_bytes();
    // One entry per open container: its keys and where each starts, or None for an
    // array.
    let mut stack: Vec<Option<Vec<Key<'_>>>> = Vec::new();
    let mut first: Option<Key<'_>> = None;
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
                    keys.push((decoded(text.get(start..i).unwrap_or("")), start));
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

/// A key's text as the parser reads it: escapes decoded (only keys that have one are
/// decoded, so the usual key costs no copy).
fn decoded(raw: &str) -> Cow<'_, str> {
    if !raw.contains('\\') {
        return Cow::Borrowed(raw);
    }
    match crate::util::json::parse(format!("\"{raw}\"")) {
        Ok(crate::util::json::Value::String(s)) => Cow::Owned(s),
        _ => Cow::Borrowed(raw),
    }
}

/// The earliest repetition among one object's keys (a key's second occurrence).
fn first_repeat(mut keys: Vec<Key<'_>>) -> Option<Key<'_>> {
    keys.sort_unstable();
    let mut best: Option<usize> = None;
    for (i, w) in keys.windows(2).enumerate() {
        if w[0].0 == w[1].0 && best.is_none_or(|b| w[1].1 < keys[b].1) {
            best = Some(i + 1);
        }
    }
    best.map(|b| keys.swap_remove(b))
}

/// Whichever of two repetitions starts first.
fn earlier<'a>(a: Option<Key<'a>>, b: Option<Key<'a>>) -> Option<Key<'a>> {
    match (a, b) {
        (Some(x), Some(y)) => Some(if y.1 < x.1 { y } else { x }),
        (x, y) => x.or(y),
    }
}

#[cfg(test)]
mod tests {
    use super::repeated_key;

    fn rk(text: &str) -> Option<(String, usize, usize)> {
        repeated_key(text).map(|(k, l, c)| (k.into_owned(), l, c))
    }

    fn some(key: &str, line: usize, col: usize) -> Option<(String, usize, usize)> {
        Some((key.to_string(), line, col))
    }

    #[test]
    fn finds_repeated_keys_at_any_depth() {
        assert_eq!(rk(r#"{"a":1,"b":2}"#), None);
        assert_eq!(rk(r#"{"a":1,"a":2}"#), some("a", 1, 8));
        assert_eq!(rk("{\"a\":{\"x\":\"a\",\n \"x\":[1]}}"), some("x", 2, 2));
        // Values equal to keys, equal keys in sibling objects, escaped quotes.
        assert_eq!(rk(r#"{"a":"a","l":[{"a":1},{"a":2}],"q\"":"a"}"#), None);
        assert_eq!(rk(r#"[{"k":1},{"k":2,"k":3}]"#), some("k", 1, 17));
        // The repetition that starts first wins, whichever object closes first.
        assert_eq!(rk(r#"{"a":{"x":1,"x":2},"a":3}"#), some("x", 1, 13));
        assert_eq!(
            rk(r#"{"a":1,"b":{"x":1},"a":2,"c":{"y":1,"y":2}}"#),
            some("a", 1, 20)
        );
        assert_eq!(
            rk(r#"{"a":1,"b":{"x":1,"x":2,"x":3},"a":2}"#),
            some("x", 1, 19)
        );
        // Keys are compared as the parser reads them: an escape spells the same key.
        assert_eq!(rk(r#"{"ab":1,"a\u0062":2}"#), some("ab", 1, 9));
        assert_eq!(rk(r#"{"x":{"a\"":1,"a\u0022":2}}"#), some("a\"", 1, 15));
        assert_eq!(rk(r#"{"a\\":1,"a\u005c":2}"#), some("a\\", 1, 10));
        assert_eq!(rk(r#"{"a\n":1,"a\u000a":2}"#), some("a\n", 1, 10));
        assert_eq!(rk(r#"{"a\u0062":1,"a\u0063":2}"#), None);
    }
}
