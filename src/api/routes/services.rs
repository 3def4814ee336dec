//! `GET|POST /services` and `DELETE /services/{name}`: the catalog, and the services
//! a group names (the same rules as the source routes: token, Origin, Host).

use crate::util::json::{self, Value, Writer};

use super::{Context, Reply};
use crate::api::error::ApiError;
use crate::api::query::quoted;
use crate::sources::services::{self, Listed};

/// `GET /services`: the catalog with the groups that name each service.
pub(super) fn list(ctx: &Context) -> Result<Reply, ApiError> {
    let cfg = ctx.config()?;
    let mut out = json::to_vec(&Listed {
        config: &cfg,
        only: None,
    });
    out.push(b'\n');
    Ok(Reply::json(200, out))
}

/// The answer of a change: `{"service":"telegram","group":"vpn","added":true}`.
fn answer(name: &str, group: &str, fields: impl FnOnce(&mut Writer<'_>)) -> Vec<u8> {
    let mut out = Vec::new();
    let mut w = Writer::new(&mut out, false);
    w.begin_object();
    w.field("service", name);
    w.field("group", group);
    fields(&mut w);
    w.end_object();
    out.push(b'\n');
    out
}

/// `POST /services` `{"service": "telegram", "group": "vpn"}` (the group may be given
/// as `?group=` instead; default `default`): 201 when added, 200 when it was there.
pub(super) fn add(body: &[u8], group: Option<&str>, ctx: &Context) -> Result<Reply, ApiError> {
    let bad = |why: String| {
        ApiError::BadRequest(format!(
            "{why}; expected a JSON body such as {{\"service\": \"telegram\", \"group\": \"vpn\"}}"
        ))
    };
    let members = match json::parse_with_depth(body, 2) {
        Ok(Value::Object(o)) => o.into_members(),
        Ok(_) => return Err(bad("the body is not a JSON object".into())),
        Err(e) => return Err(bad(format!("invalid JSON body: {e}"))),
    };
    let (mut name, mut from_body) = (None, None);
    for (k, v) in members {
        let slot = match k.as_str() {
            "service" => &mut name,
            "group" => &mut from_body,
            _ => return Err(bad(format!("unknown key {} in the body", quoted(&k)))),
        };
        let Value::String(s) = v else {
            return Err(bad(format!("{k}: expected a string, got {v}")));
        };
        if slot.replace(s).is_some() {
            return Err(bad(format!("key {k:?} given more than once in the body")));
        }
    }
    let name = name.ok_or_else(|| bad("missing key \"service\"".into()))?;
    crate::catalog::check_name(&name).map_err(|m| ApiError::BadRequest(format!("service: {m}")))?;
    let group = super::sources::one_group(from_body, group)?;
    let done = services::add(&ctx.paths, &group, std::slice::from_ref(&name))?;
    let added = done.first().is_some_and(|(_, new)| *new);
    let body = answer(&name, &group, |w| w.field("added", &added));
    Ok(Reply::json(if added { 201 } else { 200 }, body))
}

/// `DELETE /services/{name}[?group=G][&purge=true]`: 200, or 404 when the group does
/// not name it.
pub(super) fn remove(
    name: &str,
    purge: bool,
    group: Option<&str>,
    ctx: &Context,
) -> Result<Reply, ApiError> {
    crate::catalog::check_name(name).map_err(|m| ApiError::BadRequest(format!("service: {m}")))?;
    let group = super::sources::one_group(None, group)?;
    let done = services::remove(&ctx.paths, &group, name, purge)?;
    let body = answer(name, &group, |w| {
        w.field("removed", &true);
        if purge {
            w.field("purged", &done.values);
        }
    });
    Ok(Reply::json(200, body))
}
