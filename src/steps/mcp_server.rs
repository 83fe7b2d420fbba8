//! `mcpServer`: register an endpoint of toolcert's MCP server double with scripted answers.
//!
//! The observation (`/mcpServers/<name>`) is refreshed after the last step: `url`, `count`
//! (how many `tools/call` requests arrived), `calls` (each one's JSON-RPC id, tool name,
//! arguments, `inputResponses`, `requestState`, `Idempotency-Key` and protocol version),
//! `distinctRpcIds`, `distinctIdempotencyKeys` and `problems`.

use serde_json::{Value, json};

use super::{ScenarioCtx, error};
use crate::suite::McpServerSpec;
use crate::witness::{McpRequest, McpServer};

pub(super) fn run(ctx: &mut ScenarioCtx<'_>, spec: &McpServerSpec) -> Value {
    // Answers are templated (`{{scopes.granted}}` in a `_meta` a peer should not be trusted on).
    let answers = serde_json::to_value(&spec.answers)
        .map_err(|e| e.to_string())
        .and_then(|v| ctx.render(&v).map_err(|e| e.to_string()))
        .and_then(|v| serde_json::from_value(v).map_err(|e| e.to_string()));
    let answers = match answers {
        Ok(a) => a,
        Err(e) => return error(format!("scenario data: mcpServer {}: {e}", spec.name)),
    };
    let id = format!("{}-{}", ctx.nonce, spec.name);
    let url = ctx.mcp.register(&id, answers);
    ctx.mcp_servers.push((spec.name.clone(), id));
    let obs = json!({"url": url, "count": 0, "calls": [], "problems": []});
    ctx.doc["mcpServers"][&spec.name] = obs.clone();
    obs
}

/// What an endpoint has seen, as an observation.
pub(super) fn observe(mcp: &McpServer, id: &str, url: &Value) -> Value {
    let (requests, problems) = mcp.seen(id);
    let calls: Vec<&McpRequest> = requests
        .iter()
        .filter(|r| r.method == "tools/call")
        .collect();
    json!({
        "url": url,
        "count": calls.len(),
        "calls": calls.iter().map(|r| json!({
            "rpcId": r.id,
            "name": r.params.get("name"),
            "arguments": r.params.get("arguments"),
            "inputResponses": r.params.get("inputResponses"),
            "requestState": r.params.get("requestState"),
            "idempotencyKey": r.idempotency_key,
            "protocolVersion": r.protocol_version,
            "atMs": r.at_ms,
        })).collect::<Vec<_>>(),
        "distinctRpcIds": super::distinct_non_null(calls.iter().map(|r| &r.id)),
        "distinctIdempotencyKeys": super::distinct_non_null(calls.iter().map(|r| &r.idempotency_key)),
        "requests": requests.len(),
        "problems": problems,
    })
}
