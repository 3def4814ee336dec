//! A key given twice in `config.json` (`"asns"` pasted in again, say): a generic JSON
//! value keeps only the last, and the next rewrite by `asn add` would drop the other
//! silently. This scan finds such keys at any depth so that reading fails naming the
//! key, its line and column. It is a plain byte scan of text already known to be
//! valid JSON (a second pass of the parser keeping positions would cost flash); keys are compared
//! as written, escapes and all. Each object's keys go into a hash set, so a file with
//! tens of thousands of keys is checked in linear time.

use std::collections::HashSet;

/// The first key repeated within one object of `text`, and the 1-based line and
/// column where its repetition starts. `text` must be valid JSON.
pub(super) fn repeated_key(text: &str) -> Option<(&str, usize, usize)> {
    let b = text.as_bytes();
    // One entry per open container: the keys seen so far, or None for an array.
    let mut stack: Vec<Option<HashSet<&str>>> = Vec::new();
    let mut expect_key = false;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'{' => {
                stack.push(Some(HashSet::new()));
                expect_key = true;
            }
            b'[' => stack.push(None),
            b'}' | b']' => {
                stack.pop();
            }
            b',' => expect_key = matches!(stack.last(), Some(Some(_))),
            b'"' => {
                let start = i + 1;
                i = start;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                if let (true, Some(Some(keys))) = (expect_key, stack.last_mut()) {
                    let key = text.get(start..i).unwrap_or("");
                    if !keys.insert(key) {
                        let before = &b[..start - 1];
                        let line = before.iter().filter(|&&c| c == b'\n').count() + 1;
                        let col = start
                            - before
                                .iter()
                                .rposition(|&c| c == b'\n')
                                .map_or(0, |p| p + 1);
                        return Some((key, line, col));
                    }
                }
                expect_key = false;
            }
            _ => {}
        }
        i += 1;
    }
    None
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
    }
}
