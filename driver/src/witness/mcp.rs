//! toolcert's MCP server double: a stateless (`2026-07-28`) Streamable-HTTP endpoint per
//! scenario and name that plays an MCP server's tools.
//!
//! Each `tools/call` consumes the endpoint's next scripted answer: a complete result, an MRTR
//! `input_required` result, or a JSON-RPC error. Every request is recorded (JSON-RPC id,
//! params, `Idempotency-Key` and `MCP-Protocol-Version` headers) before it is answered, so a
//! host's retries, re-issued calls and replays are counted here and never taken from the
//! host's own report (EFF-12, RPL-10, MCP-9). It listens on 127.0.0.1 only.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use loopback_http::{HeaderMap, Request, Response, Router, Server, StatusCode, response};
use serde::Serialize;
use serde_json::{Value, json};

use toolcert_core::suite::McpAnswer;

/// The MCP revision the double speaks.
pub const MCP_REVISION: &str = "2026-07-28";

// `McpAnswer` is scenario data (`mcpServer` steps script it), declared with the suite (in the
// core crate); what it answers on the wire is the double's business, so it is a function here.
/// The JSON-RPC `result` or `error` member for an answer.
fn member(answer: &McpAnswer) -> (&'static str, Value) {
    if let Some(error) = &answer.rpc_error {
        return ("error", error.clone());
    }
    if let Some(required) = &answer.input_required {
        let mut result = json!({"resultType": "input_required"});
        if let Value::Object(fields) = required {
            for (k, v) in fields {
                result[k] = v.clone();
            }
        }
        return ("result", result);
    }
    let mut result = json!({
        "resultType": "complete",
        "content": [{"type": "text", "text": answer.text.clone().unwrap_or_default()}],
    });
    if let Some(s) = &answer.structured_content {
        result["structuredContent"] = s.clone();
    }
    if let Some(e) = answer.is_error {
        result["isError"] = json!(e);
    }
    if let Some(m) = &answer.meta {
        result["_meta"] = m.clone();
    }
    ("result", result)
}

/// One recorded JSON-RPC request.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct McpRequest {
    /// The JSON-RPC method (`null` when the body was not a request).
    pub method: Value,
    /// The JSON-RPC id.
    pub id: Value,
    /// The params.
    pub params: Value,
    /// The `Idempotency-Key` header, if sent.
    pub idempotency_key: Value,
    /// The `MCP-Protocol-Version` header, if sent.
    pub protocol_version: Value,
    /// The W3C `traceparent` header, if sent (MCP-15).
    pub traceparent: Value,
    /// The W3C `tracestate` header, if sent (MCP-15).
    pub tracestate: Value,
    /// The JSON-RPC reply the double sent, exactly (so a host's account of
    /// a result can be compared with it, MCP-13).
    pub reply: Value,
    /// Milliseconds since the double started.
    pub at_ms: u64,
}

#[derive(Debug, Default)]
struct Endpoint {
    answers: Vec<McpAnswer>,
    tools: Vec<Value>,
    requests: Vec<McpRequest>,
    problems: Vec<String>,
}

struct Shared {
    endpoints: Mutex<HashMap<String, Endpoint>>,
    started: Instant,
}

/// A running MCP server double.
pub struct McpServer {
    base_url: String,
    shared: Arc<Shared>,
    /// Serves until the double is dropped.
    _server: Server,
}

impl McpServer {
    /// Start on 127.0.0.1 with an ephemeral port.
    pub async fn start() -> std::io::Result<McpServer> {
        let shared = Arc::new(Shared {
            endpoints: Mutex::new(HashMap::new()),
            started: Instant::now(),
        });
        let router = Router::new(shared.clone()).post("/mcp/{id}", request);
        let server = Server::bind(SocketAddr::from(([127, 0, 0, 1], 0)), router).await?;
        Ok(McpServer {
            base_url: format!("http://{}", server.local_addr()),
            shared,
            _server: server,
        })
    }

    /// Register an endpoint under a unique id with its scripted answers and the tool list
    /// `tools/list` serves; returns its URL.
    pub fn register(&self, id: &str, answers: Vec<McpAnswer>, tools: Vec<Value>) -> String {
        self.lock().insert(
            id.to_string(),
            Endpoint {
                answers,
                tools,
                ..Endpoint::default()
            },
        );
        format!("{}/mcp/{}", self.base_url, id)
    }

    /// The requests an endpoint has seen, and the problems it noticed.
    pub fn seen(&self, id: &str) -> (Vec<McpRequest>, Vec<String>) {
        self.lock()
            .get(id)
            .map(|e| (e.requests.clone(), e.problems.clone()))
            .unwrap_or_default()
    }

    /// Forget endpoints whose id starts with `prefix` (a finished scenario's).
    pub fn forget(&self, prefix: &str) {
        self.lock().retain(|id, _| !id.starts_with(prefix));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Endpoint>> {
        // A poisoned lock only means another request panicked mid-insert; the data is usable.
        self.shared
            .endpoints
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }
}

fn header(headers: &HeaderMap, name: &str) -> Value {
    headers.get(name).map_or(Value::Null, |v| {
        json!(String::from_utf8_lossy(v.as_bytes()))
    })
}

async fn request(shared: Arc<Shared>, request: Request) -> Response {
    let id = request.param("id").unwrap_or_default().to_string();
    let headers = request.headers;
    let body = match request.body.read_or_reject().await {
        Ok(body) => body,
        Err(rejected) => return rejected,
    };
    let parsed: Option<Value> = serde_json::from_slice(&body).ok();
    let message = parsed.clone().unwrap_or(Value::Null);
    let recorded = McpRequest {
        method: message.get("method").cloned().unwrap_or(Value::Null),
        id: message.get("id").cloned().unwrap_or(Value::Null),
        params: message.get("params").cloned().unwrap_or(Value::Null),
        idempotency_key: header(&headers, "idempotency-key"),
        protocol_version: header(&headers, "mcp-protocol-version"),
        traceparent: header(&headers, "traceparent"),
        tracestate: header(&headers, "tracestate"),
        reply: Value::Null,
        at_ms: shared.started.elapsed().as_millis() as u64,
    };
    let rpc_id = recorded.id.clone();
    let method = recorded.method.as_str().unwrap_or("").to_string();
    let mut endpoints = shared.endpoints.lock().unwrap_or_else(|p| p.into_inner());
    let Some(endpoint) = endpoints.get_mut(&id) else {
        return response::text(StatusCode::NOT_FOUND, "unknown MCP endpoint");
    };
    let calls_before = endpoint
        .requests
        .iter()
        .filter(|r| r.method == "tools/call")
        .count();
    let (member, value) = {
        if parsed.is_none() {
            endpoint
                .problems
                .push("a request body that is not JSON".to_string());
            (
                "error",
                json!({"code": -32700, "message": "parse error: the body is not JSON"}),
            )
        } else {
            match method.as_str() {
                "tools/call" => match endpoint.answers.get(calls_before) {
                    Some(answer) => member(answer),
                    None => {
                        let why = format!(
                            "tools/call number {} arrived after the script's {} answers",
                            calls_before + 1,
                            endpoint.answers.len()
                        );
                        endpoint.problems.push(why.clone());
                        ("error", json!({"code": -32603, "message": why}))
                    }
                },
                "tools/list" => (
                    "result",
                    json!({"tools": endpoint.tools.clone(), "ttlMs": 0, "cacheScope": "private"}),
                ),
                "server/discover" => (
                    "result",
                    json!({"supportedVersions": [MCP_REVISION], "capabilities": {"tools": {}},
                           "serverInfo": {"name": "toolcert-mcp-double", "version": env!("CARGO_PKG_VERSION")}}),
                ),
                other => (
                    "error",
                    json!({"code": -32601, "message": format!("method not found: {other}")}),
                ),
            }
        }
    };
    let mut reply = json!({"jsonrpc": "2.0", "id": rpc_id});
    reply[member] = value;
    // Recorded before it is answered, with the reply it gets.
    let mut recorded = recorded;
    recorded.reply = reply.clone();
    endpoint.requests.push(recorded);
    drop(endpoints);
    response::json(StatusCode::OK, &reply)
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn call(url: &str, id: u64, params: Value) -> Value {
        reqwest::Client::builder()
            .no_proxy()
            .build()
            .unwrap()
            .post(url)
            .header("Idempotency-Key", "k1")
            .header("MCP-Protocol-Version", MCP_REVISION)
            .json(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn answers_in_script_order_and_records_every_request() {
        let server = McpServer::start().await.unwrap();
        let answers: Vec<McpAnswer> = serde_json::from_value(json!([
            {"inputRequired": {"inputRequests": {"ok": {"method": "elicitation/create"}}, "requestState": "s1"}},
            {"text": "done", "meta": {"scopes": ["admin"]}}
        ]))
        .unwrap();
        let url = server.register("s1-crm", answers, vec![json!({"name": "t"})]);
        let first = call(&url, 1, json!({"name": "t", "arguments": {}})).await;
        assert_eq!(first["result"]["resultType"], "input_required");
        assert_eq!(first["result"]["requestState"], "s1");
        let second = call(
            &url,
            2,
            json!({"name": "t", "inputResponses": {"ok": true}}),
        )
        .await;
        assert_eq!(second["id"], 2);
        assert_eq!(second["result"]["content"][0]["text"], "done");
        assert_eq!(second["result"]["_meta"]["scopes"][0], "admin");
        let third = call(&url, 3, json!({"name": "t"})).await;
        assert_eq!(third["error"]["code"], -32603);
        let (requests, problems) = server.seen("s1-crm");
        assert_eq!(requests.len(), 3);
        assert_eq!(requests[1].params["inputResponses"]["ok"], true);
        assert_eq!(requests[0].idempotency_key, "k1");
        assert_eq!(requests[0].protocol_version, MCP_REVISION);
        assert_eq!(requests[1].reply["result"]["content"][0]["text"], "done");
        assert_eq!(requests[0].traceparent, Value::Null);
        assert_eq!(problems.len(), 1);
        server.forget("s1-");
        assert!(server.seen("s1-crm").0.is_empty());
    }

    #[test]
    fn an_answer_names_exactly_what_it_scripts() {
        let error: McpAnswer =
            serde_json::from_value(json!({"rpcError": {"code": -32602, "message": "bad"}}))
                .unwrap();
        assert_eq!(member(&error).0, "error");
        assert!(serde_json::from_value::<McpAnswer>(json!({"txt": "x"})).is_err());
    }
}
