//! The MCP client seam: `POST /conformance/seams/sample/mcp/client` runs one
//! `ctx.mcp` host-service call (MCP-13, MCP-15).
//!
//! Request (closed): `{servers: {serverId: loopback http URL} (1..=8),
//! serverId, op, name?, arguments?, cursor?, traceContext?: {traceparent,
//! tracestate?}}`, `op` one of:
//!
//! - `callTool` (`name` required, `arguments` an object): one `tools/call`;
//!   the `CallToolResult` is handed back untouched, `isError: true` included
//!   (a result, not a rejection);
//! - `listTools` (`cursor` optional, passed on as `params.cursor`): one
//!   `tools/list`; the page is handed back untouched (`tools`, `nextCursor`,
//!   `ttlMs`, `cacheScope`);
//! - `serverHealth`: a fresh `server/discover` probe (never connection
//!   state): `reachable` when it answers with a revision this host speaks,
//!   `incompatible` when it answers without one, `unreachable` otherwise.
//!
//! The answer is `200 {result}`, or `200 {rejected: {code, message}}` when
//! the call rejects: the server answered with a JSON-RPC error or not at
//! all, or `serverId` is unknown (code `not_found`; never a 404, which would
//! read as "seam not served"). The caller's trace context travels in
//! the `traceparent` / `tracestate` headers and in `params._meta`; it is
//! only forwarded and selects nothing (the seam's caller is the principal).

use std::collections::BTreeMap;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use reqwest::Url;
use serde_json::{Map, Value, json};

use crate::base::mutant::{Mutant, MutantInfo};
use crate::domain::Domain;
use crate::domain::error::{ApiError, json_response};
use crate::domain::invoker::JsonExchange;
use crate::domain::json_body::{Fields, parse_object, require_loopback_http};
use crate::surface::seams::extract::SeamRequest;
use crate::turn::mcp;
use crate::turn::negotiation::{MINIMUM_REVISION, REVISIONS};

/// Every member the request may carry (closed).
const FIELDS: &[&str] = &[
    "servers",
    "serverId",
    "op",
    "name",
    "arguments",
    "cursor",
    "traceContext",
];

/// The members of `traceContext` (closed).
const TRACE_FIELDS: &[&str] = &["traceparent", "tracestate"];

/// The operations.
const OPS: &[&str] = &["callTool", "listTools", "serverHealth"];

/// Most servers one request may name.
const MAX_SERVERS: usize = 8;

/// Longest accepted trace header value (W3C: 55 for traceparent, 512 for
/// tracestate).
const MAX_TRACE_LEN: usize = 512;

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[
    MutantInfo {
        mutant: Mutant::McpCallResultAltered,
        name: "mcp-call-result-altered",
        breaks: "ctx.mcp.callTool drops the CallToolResult's _meta and structuredContent",
    },
    MutantInfo {
        mutant: Mutant::McpIsErrorRejected,
        name: "mcp-iserror-rejected",
        breaks: "ctx.mcp.callTool turns an isError: true result into a rejection",
    },
    MutantInfo {
        mutant: Mutant::McpUnknownServerAccepted,
        name: "mcp-unknown-server-accepted",
        breaks: "ctx.mcp with an unknown serverId calls the first configured server",
    },
    MutantInfo {
        mutant: Mutant::McpTraceDropped,
        name: "mcp-trace-dropped",
        breaks: "ctx.mcp sends no trace context (neither header nor params._meta)",
    },
    MutantInfo {
        mutant: Mutant::McpListPageAltered,
        name: "mcp-list-page-altered",
        breaks: "ctx.mcp.listTools drops the page's ttlMs and cacheScope",
    },
    MutantInfo {
        mutant: Mutant::McpCursorDropped,
        name: "mcp-cursor-dropped",
        breaks: "ctx.mcp.listTools does not pass the cursor on",
    },
    MutantInfo {
        mutant: Mutant::McpHealthFromConnection,
        name: "mcp-health-from-connection",
        breaks: "ctx.mcp.serverHealth is reachable whenever the server's port answered, whatever the probe said",
    },
];

/// The caller's W3C trace context.
#[derive(Debug, Default)]
struct TraceContext {
    traceparent: Option<String>,
    tracestate: Option<String>,
}

/// A parsed request.
#[derive(Debug)]
struct ClientRequest {
    servers: BTreeMap<String, Url>,
    server_id: String,
    op: &'static str,
    name: Option<String>,
    arguments: Value,
    cursor: Option<String>,
    trace: TraceContext,
}

fn trace_value(fields: &mut Fields, name: &str) -> Result<Option<String>, ApiError> {
    let value = fields.optional_string(name)?;
    if let Some(v) = &value
        && (v.len() > MAX_TRACE_LEN || !v.bytes().all(|b| (0x20..0x7f).contains(&b)))
    {
        return Err(ApiError::validation(format!(
            "field `{}` must be printable ASCII of at most {MAX_TRACE_LEN} bytes",
            fields.name(name)
        )));
    }
    Ok(value)
}

impl ClientRequest {
    /// Parses and checks the body; every problem is a 400 naming the field.
    fn parse(body: &[u8]) -> Result<Self, ApiError> {
        let mut fields = Fields::closed(parse_object(body)?, FIELDS)?;
        let raw = fields.required_object("servers")?;
        if raw.is_empty() || raw.len() > MAX_SERVERS {
            return Err(ApiError::validation(format!(
                "field `servers` must name 1 to {MAX_SERVERS} servers"
            )));
        }
        let mut servers = BTreeMap::new();
        for (id, url) in raw {
            let field = format!("servers.{id}");
            let Value::String(url) = url else {
                return Err(ApiError::validation(format!(
                    "field `{field}` must be a loopback http URL string"
                )));
            };
            servers.insert(id, require_loopback_http(&field, &url)?);
        }
        let server_id = fields.required_string("serverId")?;
        let op = fields.required_enum("op", OPS)?;
        let name = fields.optional_string("name")?;
        if op == "callTool" && name.is_none() {
            return Err(ApiError::validation(
                "field `name` is required for op `callTool` (the server's tool name)",
            ));
        }
        let arguments = Value::Object(fields.optional_object("arguments")?.unwrap_or_default());
        let cursor = fields.optional_string("cursor")?;
        let trace = match fields.optional_object("traceContext")? {
            None => TraceContext::default(),
            Some(map) => {
                let mut trace = Fields::closed_at("traceContext", map, TRACE_FIELDS)?;
                TraceContext {
                    traceparent: trace_value(&mut trace, "traceparent")?,
                    tracestate: trace_value(&mut trace, "tracestate")?,
                }
            }
        };
        Ok(Self {
            servers,
            server_id,
            op,
            name,
            arguments,
            cursor,
            trace,
        })
    }
}

/// The JSON result of an exchange, or why there is none.
fn result_of(exchange: &JsonExchange) -> Result<Value, Value> {
    let JsonExchange::Answered {
        status: 200,
        body,
        complete: true,
    } = exchange
    else {
        return Err(
            json!({"code": "unreachable", "message": "the MCP server did not answer 200 with a complete body"}),
        );
    };
    let message: Value = serde_json::from_slice(body).map_err(
        |_| json!({"code": "malformed", "message": "the MCP server's answer is not JSON"}),
    )?;
    if let Some(error) = message.get("error") {
        return Err(
            json!({"code": "rpc_error", "message": "the MCP server answered with a JSON-RPC error", "rpcError": error}),
        );
    }
    message.get("result").cloned().ok_or_else(
        || json!({"code": "malformed", "message": "the MCP server's answer has no result"}),
    )
}

/// Handler for the seam.
pub async fn client(State(state): State<Domain>, seam: SeamRequest) -> Result<Response, ApiError> {
    let request = ClientRequest::parse(&seam.body)?;
    let mutant = state.mutant();
    let server_url = match request.servers.get(&request.server_id) {
        Some(url) => url.clone(),
        // Bug under `mcp-unknown-server-accepted`: the first server is used.
        None if mutant == Some(Mutant::McpUnknownServerAccepted) => request
            .servers
            .values()
            .next()
            .cloned()
            .ok_or_else(|| ApiError::not_found("no MCP server"))?,
        // The call rejects (the seam itself was served, so its answer is a 200).
        None => {
            return Ok(json_response(
                StatusCode::OK,
                &json!({"rejected": {"code": "not_found", "message": "serverId names no server of this request's `servers`; name one of its keys"}}),
            ));
        }
    };

    let (method, mut params) = match request.op {
        "callTool" => (
            "tools/call",
            json!({"name": request.name, "arguments": request.arguments}),
        ),
        "listTools" => {
            let mut params = json!({});
            // Bug under `mcp-cursor-dropped`: the cursor is not passed on.
            if let Some(cursor) = &request.cursor
                && mutant != Some(Mutant::McpCursorDropped)
            {
                params["cursor"] = json!(cursor);
            }
            ("tools/list", params)
        }
        _ => ("server/discover", json!({})),
    };
    let mut sent: Vec<(&str, &str)> = vec![
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", MINIMUM_REVISION),
    ];
    // Trace context is forwarded, both ways the spec allows; it selects nothing.
    // Bug under `mcp-trace-dropped`: it is not sent at all.
    if mutant != Some(Mutant::McpTraceDropped) {
        let mut meta = Map::new();
        if let Some(tp) = &request.trace.traceparent {
            sent.push(("traceparent", tp));
            meta.insert("traceparent".into(), json!(tp));
        }
        if let Some(ts) = &request.trace.tracestate {
            sent.push(("tracestate", ts));
            meta.insert("tracestate".into(), json!(ts));
        }
        if !meta.is_empty() {
            params["_meta"] = Value::Object(meta);
        }
    }
    let body = json!({"jsonrpc": "2.0", "id": mcp::fresh_id(), "method": method, "params": params});
    let exchange = state
        .invoker()
        .post_json_with(&server_url, &body, &sent, state.default_tool_timeout())
        .await;
    let outcome = result_of(&exchange);

    let answer = match request.op {
        "serverHealth" => {
            let status = match &outcome {
                Ok(result) => {
                    let speaks = result
                        .get("supportedVersions")
                        .and_then(Value::as_array)
                        .is_some_and(|v| {
                            v.iter()
                                .any(|r| REVISIONS.contains(&r.as_str().unwrap_or("")))
                        });
                    if speaks { "reachable" } else { "incompatible" }
                }
                // Bug under `mcp-health-from-connection`: any HTTP answer
                // (a 404 included) counts as reachable.
                Err(_)
                    if mutant == Some(Mutant::McpHealthFromConnection)
                        && matches!(exchange, JsonExchange::Answered { .. }) =>
                {
                    "reachable"
                }
                Err(e) if e["code"] == "unreachable" => "unreachable",
                Err(_) => "incompatible",
            };
            json!({"result": {"status": status}})
        }
        "callTool" => match outcome {
            // Bug under `mcp-iserror-rejected`: an error result is a rejection.
            Ok(result)
                if mutant == Some(Mutant::McpIsErrorRejected)
                    && result.get("isError") == Some(&json!(true)) =>
            {
                json!({"rejected": {"code": "tool_error", "message": "the tool reported an error"}})
            }
            Ok(mut result) => {
                // Bug under `mcp-call-result-altered`: the host re-shapes it.
                if mutant == Some(Mutant::McpCallResultAltered)
                    && let Some(fields) = result.as_object_mut()
                {
                    fields.remove("_meta");
                    fields.remove("structuredContent");
                }
                json!({"result": result})
            }
            Err(rejected) => json!({"rejected": rejected}),
        },
        _ => match outcome {
            Ok(mut result) => {
                // Bug under `mcp-list-page-altered`: the page is re-shaped.
                if mutant == Some(Mutant::McpListPageAltered)
                    && let Some(fields) = result.as_object_mut()
                {
                    fields.remove("ttlMs");
                    fields.remove("cacheScope");
                }
                json!({"result": result})
            }
            Err(rejected) => json!({"rejected": rejected}),
        },
    };
    Ok(json_response(StatusCode::OK, &answer))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_checked() {
        let ok = br#"{"servers": {"a": "http://127.0.0.1:1/mcp"}, "serverId": "a", "op": "callTool", "name": "t",
                     "traceContext": {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}"#;
        let parsed = ClientRequest::parse(ok).expect("parses");
        assert_eq!(parsed.op, "callTool");
        assert!(parsed.trace.traceparent.is_some());
        for bad in [
            &br#"{"servers": {}, "serverId": "a", "op": "listTools"}"#[..],
            br#"{"servers": {"a": "http://example.com/"}, "serverId": "a", "op": "listTools"}"#,
            br#"{"servers": {"a": "http://127.0.0.1:1/"}, "serverId": "a", "op": "callTool"}"#,
            br#"{"servers": {"a": "http://127.0.0.1:1/"}, "serverId": "a", "op": "other"}"#,
            br#"{"servers": {"a": "http://127.0.0.1:1/"}, "serverId": "a", "op": "listTools", "traceContext": {"x": "y"}}"#,
        ] {
            assert!(ClientRequest::parse(bad).is_err());
        }
    }

    #[test]
    fn only_a_complete_200_result_is_a_result() {
        let answered = |body: Value| JsonExchange::Answered {
            status: 200,
            body: serde_json::to_vec(&body).expect("json"),
            complete: true,
        };
        assert_eq!(
            result_of(&answered(json!({"result": {"isError": true}}))),
            Ok(json!({"isError": true}))
        );
        assert!(result_of(&answered(json!({"error": {"code": 1}}))).is_err());
        assert_eq!(
            result_of(&JsonExchange::Unreachable).unwrap_err()["code"],
            "unreachable"
        );
    }
}
