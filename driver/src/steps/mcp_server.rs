//! `mcpServer`: register an endpoint of toolcert's MCP server double with scripted answers.
//!
//! The observation (`/mcpServers/<name>`) is refreshed after the last step: `url`, `count`
//! (how many `tools/call` requests arrived), `calls` (each one's JSON-RPC id, tool name,
//! arguments, `inputResponses`, `requestState`, `Idempotency-Key` and protocol version),
//! `distinctRpcIds`, `distinctIdempotencyKeys`, `requests` (any method), `protocolVersions`
//! (every request's `MCP-Protocol-Version`, any method), `lists` (each `tools/list`: its
//! cursor and the result sent) and `problems`. Each call also has its trace context
//! (`traceparent`, `tracestate` headers, `meta` = `params._meta`) and `sent`, the result the
//! double answered with, exactly.

use serde_json::Value;

use super::ctx::ScenarioCtx;
use crate::witness::{McpRequest, McpServer};
use toolcert_core::observation::{
    McpCall, McpList, McpServerObservation, NotObserved, Observation,
};
use toolcert_core::suite::McpServerSpec;

/// Register the endpoint and record its first observation at `/mcpServers/NAME`; scenario
/// data that does not render is an `error` no check sees (nothing is recorded, as before).
pub(super) fn run(
    ctx: &mut ScenarioCtx<'_>,
    spec: &McpServerSpec,
) -> Observation<McpServerObservation> {
    // Answers are templated (`{{scopes.granted}}` in a `_meta` a peer should not be trusted on).
    let answers = serde_json::to_value(&spec.answers)
        .map_err(|e| e.to_string())
        .and_then(|v| ctx.render(&v).map_err(|e| e.to_string()))
        .and_then(|v| serde_json::from_value(v).map_err(|e| e.to_string()));
    let answers = match answers {
        Ok(a) => a,
        Err(e) => {
            return NotObserved::error(format!("scenario data: mcpServer {}: {e}", spec.name))
                .into();
        }
    };
    let tools = match ctx.render(&Value::Array(spec.tools.clone())) {
        Ok(Value::Array(tools)) => tools,
        Ok(_) => Vec::new(),
        Err(e) => {
            return NotObserved::error(format!("scenario data: mcpServer {}: {e}", spec.name))
                .into();
        }
    };
    let id = format!("{}-{}", ctx.nonce, spec.name);
    let url = ctx.mcp.register(&id, answers, tools);
    ctx.mcp_servers.push((spec.name.clone(), id));
    let obs = Observation::Made(McpServerObservation {
        url: Value::String(url),
        count: 0,
        calls: Vec::new(),
        distinct_rpc_ids: None,
        distinct_idempotency_keys: None,
        requests: None,
        protocol_versions: None,
        lists: None,
        problems: Vec::new(),
    });
    ctx.doc["mcpServers"][&spec.name] = obs.to_value();
    obs
}

/// The trace context of a request: each member from `params._meta`, else from its header.
fn trace_context(r: &McpRequest) -> Value {
    let pick = |key: &str, header: &Value| {
        r.params
            .pointer(&format!("/_meta/{key}"))
            .cloned()
            .unwrap_or_else(|| header.clone())
    };
    serde_json::json!({
        "traceparent": pick("traceparent", &r.traceparent),
        "tracestate": pick("tracestate", &r.tracestate),
    })
}

/// What an endpoint has seen, as an observation.
pub(super) fn observe(mcp: &McpServer, id: &str, url: Value) -> McpServerObservation {
    let (requests, problems) = mcp.seen(id);
    let calls: Vec<&McpRequest> = requests
        .iter()
        .filter(|r| r.method == "tools/call")
        .collect();
    let param = |r: &McpRequest, key: &str| r.params.get(key).cloned().unwrap_or(Value::Null);
    McpServerObservation {
        url,
        count: calls.len(),
        calls: calls
            .iter()
            .map(|r| McpCall {
                rpc_id: r.id.clone(),
                name: param(r, "name"),
                arguments: param(r, "arguments"),
                input_responses: param(r, "inputResponses"),
                request_state: param(r, "requestState"),
                idempotency_key: r.idempotency_key.clone(),
                protocol_version: r.protocol_version.clone(),
                traceparent: r.traceparent.clone(),
                tracestate: r.tracestate.clone(),
                meta: param(r, "_meta"),
                trace_context: trace_context(r),
                sent: r.reply.get("result").cloned().unwrap_or(Value::Null),
                at_ms: r.at_ms,
            })
            .collect(),
        distinct_rpc_ids: Some(super::ctx::distinct_non_null(calls.iter().map(|r| &r.id))),
        distinct_idempotency_keys: Some(super::ctx::distinct_non_null(
            calls.iter().map(|r| &r.idempotency_key),
        )),
        requests: Some(requests.len()),
        protocol_versions: Some(
            requests
                .iter()
                .map(|r| r.protocol_version.clone())
                .collect(),
        ),
        lists: Some(
            requests
                .iter()
                .filter(|r| r.method == "tools/list")
                .map(|r| McpList {
                    cursor: param(r, "cursor"),
                    sent: r.reply.get("result").cloned().unwrap_or(Value::Null),
                })
                .collect(),
        ),
        problems,
    }
}
