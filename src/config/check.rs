//! `check`: every problem of a configuration file, not only the first one that stops
//! a load. Each error names its key; the key is taken out of the document and the rest
//! read again, until the rest is valid (or a problem names no key it could take out).

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
    for _ in 0..MAX_PROBLEMS {
        match from_value(&doc, path) {
            Ok(loaded) => {
                let config = errors.is_empty().then_some(loaded.config);
                errors.extend(loaded.warnings);
                return Checked {
                    config,
                    problems: errors,
                };
            }
            Err(e) => {
                let next = match &e {
                    ConfigError::Invalid { key, .. } => remove_path(&mut doc, key),
                    _ => false,
                };
                errors.push(e.to_string());
                if !next {
                    break;
                }
            }
        }
    }
    Checked {
        config: None,
        problems: errors,
    }
}

/// Takes the member or element a key path names (`groups.video.exclude[0]`,
/// `outputs[1].group`) out of `doc`; false when the path names nothing there.
fn remove_path(doc: &mut Value, key: &str) -> bool {
    // The steps: names, and `[i]` indexes after them.
    let mut steps: Vec<Result<&str, usize>> = Vec::new();
    for part in key.split('.') {
        let (name, mut rest) = part.split_once('[').map_or((part, ""), |(n, r)| (n, r));
        if !name.is_empty() {
            steps.push(Ok(name));
        }
        while let Some((i, r)) = rest.split_once(']') {
            match i.parse() {
                Ok(i) => steps.push(Err(i)),
                Err(_) => return false,
            }
            rest = r.strip_prefix('[').unwrap_or(r);
        }
    }
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
        assert!(remove_path(&mut v, "a.b[1].c"));
        assert!(remove_path(&mut v, "a.b[0]"));
        assert!(!remove_path(&mut v, "a.x"));
        assert_eq!(crate::util::json::to_string(&v), r#"{"a":{"b":[{}]}}"#);
    }
}
