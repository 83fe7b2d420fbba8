//! `catalog`: the host's tool catalog as one role sees it (CAT, DESC).
//!
//! A host advertising `toolCatalog` already serves its catalog, so the rows about it are
//! witnessed on that catalog, read as the profile's roles read it, with no tool of toolcert's
//! registered first. The list's shape differs by major and view (v2 tool-catalog.md §The
//! catalog: the standard list is a bare `ToolDescriptor[]`; the compact view, and v1, wrap it
//! as `{tools: [...]}`), so the step records the shape it found and the items whichever shape
//! held them; checks judge the shape per major and read the items in one place.
//!
//! With `probeHiddenFrom`, the step also lists the catalog as that second role and fetches,
//! as that role, the first tool this role lists and that role does not: the catalog must
//! answer it exactly as an unknown id (CAT-3), and the host chose which tools that is.
//!
//! Observation: `status`, `shape` (`array`, `object` for `{tools: [...]}`, `other`), `tools`,
//! `body`, and with `probeHiddenFrom` `hidden` (`listStatus`, and when a tool was found
//! `toolId`, `status`, `body`).

use serde_json::Value;

use super::ctx::{Flow, ScenarioCtx, require_role, transport_failure};
use crate::host::{HostRequest, HostResponse};
use toolcert_core::observation::{CatalogObservation, HiddenToolProbe, Observation};
use toolcert_core::suite::CatalogSpec;

pub(super) async fn run(
    ctx: &mut ScenarioCtx<'_>,
    spec: &CatalogSpec,
) -> (Observation<CatalogObservation>, Flow) {
    for role in std::iter::once(&spec.role).chain(spec.probe_hidden_from.as_ref()) {
        if let Some(obs) = require_role(ctx, role) {
            return (obs.into(), Flow::Continue);
        }
    }
    let query = match &spec.query {
        Some(q) => match toolcert_core::template::render_text(q, &ctx.doc) {
            Ok(q) => format!("?{q}"),
            Err(e) => return (ctx.template_failure(&e).into(), Flow::Continue),
        },
        None => String::new(),
    };
    let listed = match list(ctx, spec, &spec.role, &query).await {
        Ok(resp) => resp,
        Err(failed) => return failed,
    };
    let (shape, tools) = items_of(&listed.body);
    let mut seen = CatalogObservation {
        status: listed.status,
        shape: shape.to_owned(),
        tools,
        body: listed.body,
        hidden: None,
    };
    if let Some(other) = &spec.probe_hidden_from {
        seen.hidden = match probe_hidden(ctx, spec, other, &seen.tools).await {
            Ok(probe) => Some(probe),
            Err(failed) => return failed,
        };
    }
    (Observation::Made(seen), Flow::Continue)
}

/// `GET /tools{query}` as `role`.
async fn list(
    ctx: &mut ScenarioCtx<'_>,
    spec: &CatalogSpec,
    role: &str,
    query: &str,
) -> Result<HostResponse, (Observation<CatalogObservation>, Flow)> {
    let path = ctx.client.wire().api_path(&format!("/tools{query}"));
    let req = HostRequest::get(path).role(role.to_owned());
    ctx.send(&spec.name, &req).await.map_err(|e| {
        let (obs, flow) = transport_failure(&e);
        (obs.into(), flow)
    })
}

/// The list's shape and its items: a bare array (`array`), `{tools: [...]}` (`object`), or
/// anything else (`other`, no items).
fn items_of(body: &Value) -> (&'static str, Vec<Value>) {
    match body {
        Value::Array(items) => ("array", items.clone()),
        Value::Object(map) => match map.get("tools") {
            Some(Value::Array(items)) => ("object", items.clone()),
            _ => ("other", Vec::new()),
        },
        _ => ("other", Vec::new()),
    }
}

/// List the standard catalog as `other`, and fetch as `other` the first of `tools` it does
/// not list.
async fn probe_hidden(
    ctx: &mut ScenarioCtx<'_>,
    spec: &CatalogSpec,
    other: &str,
    tools: &[Value],
) -> Result<HiddenToolProbe, (Observation<CatalogObservation>, Flow)> {
    let theirs = list(ctx, spec, other, "").await?;
    let mut probe = HiddenToolProbe {
        list_status: theirs.status,
        tool_id: None,
        status: None,
        body: None,
    };
    if theirs.status != 200 {
        return Ok(probe);
    }
    let (_, visible) = items_of(&theirs.body);
    let listed_to_them = |id: &str| visible.iter().any(|t| t["toolId"].as_str() == Some(id));
    let Some(hidden) = tools
        .iter()
        .filter_map(|t| t["toolId"].as_str())
        .find(|id| !listed_to_them(id))
    else {
        return Ok(probe);
    };
    let wire = ctx.client.wire();
    let path = wire.api_path(&format!("/tools/{}", wire.id_segment(hidden)));
    let req = HostRequest::get(path).role(other.to_owned());
    let answer = ctx.send(&spec.name, &req).await.map_err(|e| {
        let (obs, flow) = transport_failure(&e);
        (obs.into(), flow)
    })?;
    probe.tool_id = Some(hidden.to_owned());
    probe.status = Some(answer.status);
    probe.body = Some(answer.body);
    Ok(probe)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_list_is_read_whichever_shape_holds_it() {
        let tool = json!({"toolId": "t", "source": "host-extension", "safetyTier": "read"});
        assert_eq!(items_of(&json!([tool])), ("array", vec![tool.clone()]));
        assert_eq!(
            items_of(&json!({"tools": [tool]})),
            ("object", vec![tool.clone()])
        );
        assert_eq!(items_of(&json!({"tools": {"t": tool}})), ("other", vec![]));
        assert_eq!(items_of(&json!({"error": "not_found"})), ("other", vec![]));
        assert_eq!(items_of(&json!(null)), ("other", vec![]));
    }
}
