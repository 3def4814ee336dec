//! Request targets: paths and query strings, percent-decoding, and how a client's
//! words are quoted back in error messages. Pure functions, unit-tested here.

use super::error::ApiError;

/// Longest parameter name or value quoted back in an error message.
const MAX_QUOTED: usize = 64;

/// `s` quoted for an error message (`"..."`, escaped), cut to [`MAX_QUOTED`] characters.
pub fn quoted(s: &str) -> String {
    match s.char_indices().nth(MAX_QUOTED) {
        Some((i, _)) => format!("{:?}...", &s[..i]),
        None => format!("{s:?}"),
    }
}

/// Splits a request target into its path and its query (without the `?`).
pub fn split_target(target: &str) -> (&str, Option<&str>) {
    // The absolute form (`http://host/path?query`), which servers must accept
    // (RFC 9112, 3.2.2): only the path and query count.
    let target = ["http://", "https://"]
        .iter()
        .find_map(|scheme| {
            let rest = target
                .get(..scheme.len())?
                .eq_ignore_ascii_case(scheme)
                .then(|| &target[scheme.len()..])?;
            Some(rest.find('/').map_or("/", |i| &rest[i..]))
        })
        .unwrap_or(target);
    match target.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (target, None),
    }
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Percent-decodes `s` (and `+` as a space when `plus_is_space`, as in query strings).
/// A `%` not followed by two hex digits, or bytes that are not UTF-8 once decoded, are
/// errors naming `what`.
pub fn percent_decode(s: &str, plus_is_space: bool, what: &str) -> Result<String, ApiError> {
    if !s.contains(['%', '+']) {
        return Ok(s.to_string());
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let pair = bytes
                    .get(i + 1)
                    .copied()
                    .and_then(hex)
                    .zip(bytes.get(i + 2).copied().and_then(hex));
                let Some((hi, lo)) = pair else {
                    return Err(ApiError::BadRequest(format!(
                        "invalid percent-encoding in {what} {}: '%' must be followed by two hex digits",
                        quoted(s)
                    )));
                };
                out.push((hi << 4) | lo);
                i += 3;
            }
            b'+' if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).map_err(|_| {
        ApiError::BadRequest(format!(
            "{what} {} is not UTF-8 once percent-decoded",
            quoted(s)
        ))
    })
}

/// The decoded segments of an absolute path: `/asns/AS1` → `["asns", "AS1"]`, `/` → `[]`.
/// Segments are decoded one by one, so an encoded `/` (`%2F`) stays inside its
/// segment instead of making a new one.
pub fn path_segments(path: &str) -> Result<Vec<String>, ApiError> {
    let Some(rest) = path.strip_prefix('/') else {
        return Err(ApiError::NotFound(format!("no such path {}", quoted(path))));
    };
    if rest.is_empty() {
        return Ok(Vec::new());
    }
    rest.split('/')
        .map(|seg| percent_decode(seg, false, "path segment"))
        .collect()
}

/// The decoded parameters of a query string, checked against `allowed`: an unknown or
/// repeated parameter is an error naming it, so that a typo such as `formt=nft` never
/// silently gives the default. Empty pieces (`a=1&&b=2`, a trailing `&`) are skipped; a
/// parameter without `=` has the empty value.
pub fn parse_query(
    query: Option<&str>,
    allowed: &[&str],
) -> Result<Vec<(String, String)>, ApiError> {
    let mut out: Vec<(String, String)> = Vec::new();
    let Some(query) = query else {
        return Ok(out);
    };
    for piece in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = piece.split_once('=').unwrap_or((piece, ""));
        let key = percent_decode(k, true, "query parameter")?;
        if !allowed.contains(&key.as_str()) {
            let expected = if allowed.is_empty() {
                "this path takes no parameters".to_string()
            } else {
                format!("expected {}", allowed.join(", "))
            };
            return Err(ApiError::BadRequest(format!(
                "unknown query parameter {}; {expected}",
                quoted(&key)
            )));
        }
        if out.iter().any(|(seen, _)| *seen == key) {
            return Err(ApiError::BadRequest(format!(
                "query parameter {key} given more than once"
            )));
        }
        let value = percent_decode(v, true, &format!("query parameter {key}"))?;
        out.push((key, value));
    }
    Ok(out)
}

/// A yes/no query parameter: `1`, `true`, `0` or `false`.
pub fn parse_bool(name: &str, value: &str) -> Result<bool, ApiError> {
    match value {
        "1" | "true" => Ok(true),
        "0" | "false" => Ok(false),
        other => Err(ApiError::BadRequest(format!(
            "invalid {name} {}: expected 1, 0, true or false",
            quoted(other)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_form_targets() {
        assert_eq!(
            split_target("http://127.0.0.1:8080/health"),
            ("/health", None)
        );
        assert_eq!(
            split_target("HTTP://h/addresses?format=nft"),
            ("/addresses", Some("format=nft"))
        );
        assert_eq!(split_target("http://h"), ("/", None));
        assert_eq!(split_target("/asns?x=1"), ("/asns", Some("x=1")));
        assert_eq!(split_target("httpx://h/a"), ("httpx://h/a", None));
    }

    fn msg(e: ApiError) -> String {
        match e {
            ApiError::BadRequest(m) | ApiError::NotFound(m) => m,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn decoding() {
        assert_eq!(percent_decode("a%20b+c", true, "x").unwrap(), "a b c");
        assert_eq!(percent_decode("a%20b+c", false, "x").unwrap(), "a b+c");
        assert_eq!(percent_decode("%41%c3%a9", false, "x").unwrap(), "Aé");
        assert_eq!(percent_decode("%00", false, "x").unwrap(), "\0");
        for bad in ["%", "%4", "%zz", "a%g1", "%c3", "%ff%fe", "%%"] {
            let m = msg(percent_decode(bad, true, "query parameter").unwrap_err());
            assert!(m.contains("query parameter"), "{bad}: {m}");
        }
    }

    #[test]
    fn segments() {
        assert_eq!(path_segments("/").unwrap(), Vec::<String>::new());
        assert_eq!(path_segments("/asns/AS1").unwrap(), ["asns", "AS1"]);
        assert_eq!(path_segments("/asns/a%2Fb").unwrap(), ["asns", "a/b"]);
        assert_eq!(path_segments("/asns/").unwrap(), ["asns", ""]);
        assert_eq!(path_segments("/%2e%2e/etc").unwrap(), ["..", "etc"]);
        assert!(path_segments("http://x/health").is_err());
        assert!(path_segments("").is_err());
        assert!(path_segments("/a%zz").is_err());
    }

    #[test]
    fn queries() {
        let allowed = ["type", "format"];
        assert_eq!(parse_query(None, &allowed).unwrap(), vec![]);
        assert_eq!(
            parse_query(Some("type=cidr&&format=nft&"), &allowed).unwrap(),
            vec![
                ("type".to_string(), "cidr".to_string()),
                ("format".to_string(), "nft".to_string())
            ]
        );
        assert_eq!(parse_query(Some("type"), &allowed).unwrap()[0].1, "");
        assert_eq!(
            parse_query(Some("t%79pe=a+b"), &allowed).unwrap()[0],
            ("type".into(), "a b".into())
        );
        let m = msg(parse_query(Some("formt=nft"), &allowed).unwrap_err());
        assert!(m.contains("\"formt\"") && m.contains("type, format"), "{m}");
        let m = msg(parse_query(Some("type=all&type=cidr"), &allowed).unwrap_err());
        assert!(m.contains("type") && m.contains("more than once"), "{m}");
        let m =
            msg(parse_query(Some(&format!("{}=1", "x".repeat(100_000))), &allowed).unwrap_err());
        assert!(m.len() < 200, "{m}");
        let m = msg(parse_query(Some("x=1"), &[]).unwrap_err());
        assert!(m.contains("no parameters"), "{m}");
    }

    #[test]
    fn bools() {
        assert!(parse_bool("aggregate", "1").unwrap());
        assert!(parse_bool("aggregate", "true").unwrap());
        assert!(!parse_bool("aggregate", "0").unwrap());
        assert!(!parse_bool("aggregate", "false").unwrap());
        for bad in ["", "yes", "TRUE", "2"] {
            assert!(msg(parse_bool("aggregate", bad).unwrap_err()).contains("aggregate"));
        }
    }
}
