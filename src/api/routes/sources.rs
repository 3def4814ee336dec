//! `GET|POST /asns`, `/fqdns`, `/feeds`, `/countries`, and `DELETE` of one of them
//! (`/asns/{asn}`, `/fqdns/{fqdn}`, `/feeds/{percent-encoded URL}`, `/countries/{CC}`).

use crate::util::json::{self, Value};

use super::{Context, Reply};
use crate::api::body::{json_line, Added, Named, Removed};
use crate::api::error::ApiError;
use crate::api::query::quoted;
use crate::source::Kind;
use crate::sources;

/// `POST /confirm` `{"source": "AS62041"}`: applies the source's held answer; 404
/// when it is not held.
pub(super) fn confirm(body: &[u8], ctx: &Context) -> Result<Reply, ApiError> {
    let bad = |why: &str| {
        ApiError::BadRequest(format!(
            "{why}; expected a JSON body such as {{\"source\": \"AS62041\"}}"
        ))
    };
    let v = json::parse_with_depth(body, 2).map_err(|_| bad("invalid JSON body"))?;
    let text = v
        .get("source")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("no \"source\""))?;
    let (kind, source) =
        sources::parse_any(text).map_err(|e| ApiError::BadRequest(format!("source: {e}")))?;
    let m = sources::confirm(&ctx.paths, kind, &source)?;
    let mut out = Vec::new();
    let mut w = json::Writer::new(&mut out, false);
    w.begin_object();
    w.field("confirmed", &crate::source::display(kind, &source));
    w.field("answer", &m.fetch.answer);
    w.field("removed", &(m.stats.removed as u64));
    w.end_object();
    out.push(b'\n');
    Ok(Reply::json(200, out))
}

pub(super) fn list(kind: Kind, group: Option<&str>, ctx: &Context) -> Result<Reply, ApiError> {
    let cfg = ctx.config()?;
    // A name that cannot be read is unknown, never a failed listing.
    let names = match kind {
        Kind::Asn => ctx.db.with(|db| db.names()).unwrap_or_default(),
        _ => Default::default(),
    };
    let body =
        sources::listed::sources_json(&cfg, kind, group, &names).map_err(ApiError::BadRequest)?;
    Ok(Reply::json(200, body))
}

/// `GET /groups`: every group with its sources, exclusions and mark.
pub(super) fn groups(ctx: &Context) -> Result<Reply, ApiError> {
    let cfg = ctx.config()?;
    Ok(Reply::json(200, sources::listed::groups_json(&cfg)))
}

/// The source in a `POST` body: `{"asn": "AS62041"}` (or a number), `{"fqdn": "..."}`,
/// and the group if the body names one (`"group": "video"`).
fn source_from_body(kind: Kind, body: &[u8]) -> Result<(String, Option<String>), ApiError> {
    let key = kind.as_str();
    let example = match kind {
        Kind::Asn => r#"{"asn": "AS62041"}"#,
        Kind::Fqdn => r#"{"fqdn": "example.com"}"#,
        Kind::Feed => r#"{"feed": "https://example.org/list.txt"}"#,
        Kind::Country => r#"{"country": "NL"}"#,
    };
    let bad = |why: String| {
        ApiError::BadRequest(format!("{why}; expected a JSON body such as {example}"))
    };
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(bad("empty request body".into()));
    }
    if nested_deeper_than(body, 4) {
        return Err(bad("the JSON body is nested too deeply".into()));
    }
    // The members in the order written, repeated keys included.
    let members = match json::parse_with_depth(body, 4) {
        Ok(Value::Object(o)) => o.into_members(),
        Ok(_) => return Err(bad("the body is not a JSON object".into())),
        // Another kind of value, even if broken after its start (`[1,`): the answer
        // serde_json gave, which read no further than the first byte.
        Err(_)
            if matches!(
                body.trim_ascii_start().first(),
                Some(b'[' | b'"' | b'-' | b'0'..=b'9' | b't' | b'f' | b'n')
            ) =>
        {
            return Err(bad("the body is not a JSON object".into()))
        }
        Err(e) => return Err(bad(format!("invalid JSON body: {e}"))),
    };
    if let Some((other, _)) = members
        .iter()
        .find(|(k, _)| k.as_str() != key && k != "group")
    {
        return Err(bad(format!("unknown key {} in the body", quoted(other))));
    }
    let (groups, members): (Vec<_>, Vec<_>) = members.into_iter().partition(|(k, _)| k == "group");
    let group = match &groups[..] {
        [] => None,
        [(_, Value::String(g))] => Some(g.clone()),
        [(_, other)] => return Err(bad(format!("group: expected a string, got {other}"))),
        _ => return Err(bad("key \"group\" given more than once in the body".into())),
    };
    let v = match &members[..] {
        [] => return Err(bad(format!("missing key {key:?}"))),
        [(_, v)] => v,
        _ => return Err(bad(format!("key {key:?} given more than once in the body"))),
    };
    let norm = kind
        .normalize_json(v)
        .map_err(|m| ApiError::BadRequest(format!("{key}: {m}")))?;
    Ok((norm, group))
}

/// The group a source route changes: from the body or `?group=` (not both, unless
/// equal), `default` when neither names one; `*` is refused (a change needs one group).
pub(super) fn one_group(
    from_body: Option<String>,
    from_query: Option<&str>,
) -> Result<String, ApiError> {
    let g = match (from_body, from_query) {
        (Some(b), Some(q)) if b != q => {
            return Err(ApiError::BadRequest(format!(
                "group {} in the body and {} in the query differ",
                quoted(&b),
                quoted(q)
            )))
        }
        (Some(b), _) => b,
        (None, Some(q)) => q.to_string(),
        (None, None) => crate::format::DEFAULT_GROUP.to_string(),
    };
    if g == crate::format::ALL_GROUPS {
        return Err(ApiError::BadRequest(
            "group: a change goes to one group, not *".into(),
        ));
    }
    crate::format::check_group_name(&g).map_err(|e| ApiError::BadRequest(format!("group: {e}")))?;
    Ok(g)
}

/// Whether arrays and objects in `json` nest deeper than `max` (outside strings). The
/// bodies we take are one level deep; refusing deep ones before they are parsed keeps
/// the parser's recursion off the small connection-thread stacks, and a deep body
/// that is also broken is reported as deep.
pub(super) fn nested_deeper_than(json: &[u8], max: usize) -> bool {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &b in json {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

pub(super) fn add(
    kind: Kind,
    body: &[u8],
    group: Option<&str>,
    ctx: &Context,
) -> Result<Reply, ApiError> {
    let (source, from_body) = source_from_body(kind, body)?;
    let group = one_group(from_body, group)?;
    let done = sources::add(&ctx.paths, kind, &group, &source)?;
    let answer = Added {
        source: Named::new(kind, &done.source),
        added: done.added,
    };
    Ok(Reply::json(
        if done.added { 201 } else { 200 },
        json_line(&answer),
    ))
}

pub(super) fn remove(
    kind: Kind,
    raw: &str,
    purge: bool,
    group: Option<&str>,
    ctx: &Context,
) -> Result<Reply, ApiError> {
    let source = kind
        .normalize(raw)
        .map_err(|m| ApiError::BadRequest(format!("{}: {m}", kind.as_str())))?;
    let group = one_group(None, group)?;
    let done = sources::remove(&ctx.paths, kind, &group, &source, purge)?;
    let answer = Removed {
        source: Named::new(kind, &done.source),
        removed: done.removed,
        purged: done.purged,
    };
    Ok(Reply::json(200, json_line(&answer)))
}
