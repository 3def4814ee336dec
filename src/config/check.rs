//! `check`: every problem of a configuration file, not only the first one that stops
//! a load. Each error names its key; the key (or, for a missing member, the element
//! that lacks it) is taken out of the document and the rest read again, until the rest
//! is valid (or a problem names nothing it could take out). The keys of later errors
//! are read back through what was taken out, so each names the index as written.

use std::path::Path;

use crate::util::json::Value;

use super::read::read_value;
use super::{from_value, read_text, Config, ConfigError};

/// At most this many problems are looked for (each is one more read of the file).
const MAX_PROBLEMS: usize = 100;

/// What [`check`] found.
#[derive(Debug)]
pub struct Checked {
    /// The configuration, when the file is valid (unknown keys and other warnings
    /// allowed: they are problems, but the file loads).
    pub config: Option<Config>,
    /// Every problem: errors, then the warnings of what was readable.
    pub problems: Vec<String>,
}

/// Checks the file at `path` (a missing or empty one is the empty configuration).
pub fn check(path: &Path) -> Checked {
    let fail = |e: ConfigError| Checked {
        config: None,
        problems: vec![e.to_string()],
    };
    let mut doc = match read_text(path) {
        Err(e) => return fail(e),
        Ok(Some(t)) if !t.trim().is_empty() => match read_value(&t, path) {
            Ok(v) => v,
            Err(e) => return fail(e),
        },
        Ok(_) => Value::Object(Default::default()),
    };
    let mut errors = Vec::new();
    // The elements taken out so far, as written: each error's key is read back
    // through them, so a problem names the index of the file, not of what is left.
    let mut taken = Taken::default();
    for _ in 0..MAX_PROBLEMS {
        match from_value(&doc, path) {
            Ok(loaded) => {
                let config = errors.is_empty().then_some(loaded.config);
                errors.extend(loaded.warnings.into_iter().map(|w| taken.rewrite(&w)));
                return Checked {
                    config,
                    problems: errors,
                };
            }
            Err(ConfigError::Invalid { path, key, message }) => {
                let written = taken.original(&key);
                errors.push(
                    ConfigError::Invalid {
                        path,
                        key: written,
                        message,
                    }
                    .to_string(),
                );
                if !taken.remove(&mut doc, &key) {
                    break;
                }
            }
            Err(e) => {
                errors.push(e.to_string());
                break;
            }
        }
    }
    Checked {
        config: None,
        problems: errors,
    }
}

/// One step of a key path: a member's name or an element's index.
type Step<'a> = Result<&'a str, usize>;

/// The steps of a key path (`groups.video.exclude[0]`, `outputs[1].group`); `None`
/// when an index is not a number.
fn steps(key: &str) -> Option<Vec<Step<'_>>> {
    let mut steps = Vec::new();
    for part in key.split('.') {
        let (name, mut rest) = part.split_once('[').map_or((part, ""), |(n, r)| (n, r));
        if !name.is_empty() {
            steps.push(Ok(name));
        }
        while let Some((i, r)) = rest.split_once(']') {
            steps.push(Err(i.parse().ok()?));
            rest = r.strip_prefix('[').unwrap_or(r);
        }
    }
    Some(steps)
}

/// The elements taken out of the document's arrays: (the array's key as written, the
/// element's index as written).
#[derive(Default)]
struct Taken(Vec<(String, usize)>);

impl Taken {
    /// `key` (indexes of what is left) as written in the file.
    fn original(&self, key: &str) -> String {
        let Some(steps) = steps(key) else {
            return key.to_string();
        };
        self.written(&steps)
    }

    fn written(&self, steps: &[Step<'_>]) -> String {
        let mut out = String::new();
        for step in steps {
            match step {
                Ok(name) if out.is_empty() => out.push_str(name),
                Ok(name) => {
                    out.push('.');
                    out.push_str(name);
                }
                Err(i) => {
                    let gone: Vec<usize> = self
                        .0
                        .iter()
                        .filter(|(a, _)| *a == out)
                        .map(|(_, g)| *g)
                        .collect();
                    // The i-th index (from 0) not taken out.
                    let n = (0..).filter(|j| !gone.contains(j)).nth(*i).unwrap_or(*i);
                    out.push_str(&format!("[{n}]"));
                }
            }
        }
        out
    }

    /// A warning's text with the keys it names (`asns[3]:`, `unknown key
    /// outputs[2].x`) as written.
    fn rewrite(&self, warning: &str) -> String {
        let words = warning.split(' ').map(|w| {
            let (key, colon) = w.strip_suffix(':').map_or((w, ""), |k| (k, ":"));
            match key.contains('[') {
                true => format!("{}{colon}", self.original(key)),
                false => w.to_string(),
            }
        });
        words.collect::<Vec<_>>().join(" ")
    }

    /// Takes what `key` names out of `doc`, or, where it names nothing there (a
    /// missing member), the nearest element that holds it; false when nothing could
    /// be taken out.
    fn remove(&mut self, doc: &mut Value, key: &str) -> bool {
        let Some(steps) = steps(key) else {
            return false;
        };
        for end in (1..=steps.len()).rev() {
            let part = &steps[..end];
            if let Some(Err(i)) = part.last() {
                let array = self.written(&part[..end - 1]);
                let index = self.written(part);
                let n = index
                    .rsplit_once('[')
                    .and_then(|(_, r)| r.trim_end_matches(']').parse().ok())
                    .unwrap_or(*i);
                if remove_steps(doc, part) {
                    self.0.push((array, n));
                    return true;
                }
            } else if end == steps.len() && remove_steps(doc, part) {
                return true;
            }
        }
        false
    }
}

/// Takes the member or element the steps name out of `doc`; false when they name
/// nothing there.
fn remove_steps(doc: &mut Value, steps: &[Step<'_>]) -> bool {
    let Some((last, path)) = steps.split_last() else {
        return false;
    };
    let mut at = doc;
    for step in path {
        let next = match step {
            Ok(name) => at.get_mut(name),
            Err(i) => at.as_array_mut().and_then(|a| a.get_mut(*i)),
        };
        match next {
            Some(v) => at = v,
            None => return false,
        }
    }
    match (last, at) {
        (Ok(name), Value::Object(o)) => o.remove(name).is_some(),
        (Err(i), Value::Array(a)) if *i < a.len() => {
            a.remove(*i);
            true
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_problem_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.json");
        std::fs::write(
            &path,
            r#"{"asn": ["1"], "asns": ["ASX", "2"], "ttl_days": -1,
               "groups": {"video": {"exclude": ["10.1.2.3/8"], "mark": "0x1", "mark_mask": "0x100"}},
               "shedule": {}}"#,
        )
        .unwrap();
        let c = check(&path);
        assert!(c.config.is_none());
        let all = c.problems.join("\n");
        for needle in [
            "asns[0]",
            "ttl_days",
            "groups.video.exclude[0]",
            "groups.video.mark",
            "did you mean asns?",
            "did you mean schedule?",
        ] {
            assert!(all.contains(needle), "{needle}: {all}");
        }
        std::fs::write(&path, r#"{"asns": ["1"]}"#).unwrap();
        let c = check(&path);
        assert!(
            c.problems.is_empty() && c.config.is_some(),
            "{:?}",
            c.problems
        );
    }

    #[test]
    fn paths_are_removed() {
        let mut v = crate::util::json::parse(r#"{"a": {"b": [1, {"c": 2}]}}"#).unwrap();
        let mut taken = Taken::default();
        assert!(taken.remove(&mut v, "a.b[1].c"));
        assert!(taken.remove(&mut v, "a.b[0]"));
        assert_eq!(taken.original("a.b[0]"), "a.b[1]");
        // A missing member takes its element out.
        assert!(taken.remove(&mut v, "a.b[0].x"));
        assert_eq!(crate::util::json::to_string(&v), r#"{"a":{"b":[]}}"#);
        assert!(!taken.remove(&mut v, "a.x"));
    }

    #[test]
    fn every_bad_element_is_named_with_its_index_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.json");
        std::fs::write(
            &path,
            r#"{"asns": ["ASX", "2", "ASY", "ASZ"],
               "outputs": [{"path": "/tmp/a"}, {"format": "nft"}, {"path": "/tmp/c"},
                           {"path": "/tmp/d", "format": "bogus"}]}"#,
        )
        .unwrap();
        let c = check(&path);
        assert!(c.config.is_none());
        let keys: Vec<&str> = c
            .problems
            .iter()
            .map(|p| p.split(": ").nth(1).unwrap_or_default())
            .collect();
        assert_eq!(
            keys,
            [
                "asns[0]",
                "asns[2]",
                "asns[3]",
                "outputs[1].path",
                "outputs[3].format"
            ],
            "{:#?}",
            c.problems
        );
        // Warnings of what was read after elements were taken out too.
        std::fs::write(
            &path,
            r#"{"asns": ["ASX", "1", "1"], "outputs": [{}, {"path": "/a", "x": 1}]}"#,
        )
        .unwrap();
        let all = check(&path).problems.join("\n");
        for needle in ["asns[2]: 1 is listed twice", "unknown key outputs[1].x"] {
            assert!(all.contains(needle), "{needle}: {all}");
        }
    }
}
