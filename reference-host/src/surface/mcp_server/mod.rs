//! The host as an MCP server: `POST /mcp` (TURN-E4, MCP-9, MCP-10,
//! MCP-11, MCP-12).
//!
//! Stateless MCP revision [`PROTOCOL_VERSION`]: one JSON-RPC 2.0 request
//! per HTTP POST, one JSON answer, no `initialize`, no session. The tools
//! are the run templates registered through the turn seam with
//! `exposeAsMcpTool` ([`templates`]); a `tools/call` starts a turn run from
//! one and answers with its outcome ([`call`]). A clarification the run's
//! model asks is answered as an MRTR `input_required` result whose
//! `requestState` ([`request_state`]) the client echoes in its retry.
//!
//! The mount serves the MCP Tasks extension [`TASKS_EXTENSION`] (revision
//! 2026-07-28, MCP-14; [`tasks`]): advertised in `server/discover`
//! `capabilities.extensions` (and as `extensions` in the discovery record's
//! `mcp.features[]`), a `tools/call` declaring it in its per-request client
//! capabilities is answered `CreateTaskResult` whenever its run is not
//! terminal, the `taskId` being the run's id; `tasks/get`, `tasks/update` and
//! `tasks/cancel` read, answer and cancel that run. Until its whole answer is
//! sent, a request that starts or continues a run owns it
//! ([`crate::turn::ownership::RequestOwnedRun`]): a client that disconnects
//! first cancels the run with `run.cancelled.reason: "mcp-request-cancelled"`;
//! once the answer is handed over, no disconnect touches the run.
//!
//! Order of the checks on every POST:
//!
//! 1. authentication (MCP-12): no or an unknown bearer token is a 401 with
//!    the host's usual error envelope; there is no anonymous access;
//! 2. `Origin` (DNS rebinding): present and not a loopback origin is a 403
//!    `forbidden` envelope;
//! 3. JSON-RPC framing: not JSON is HTTP 400 `-32700`; not one JSON-RPC
//!    request object is HTTP 400 `-32600`; a notification (no `id`) is
//!    HTTP 202 with no body;
//! 4. version (MCP-10): the `MCP-Protocol-Version` header and
//!    `params._meta["io.modelcontextprotocol/protocolVersion"]` disagreeing
//!    (or an `Mcp-Method` / `Mcp-Name` header disagreeing with the body) is
//!    HTTP 400 `-32020`; both absent, or an unsupported revision, is HTTP 400
//!    `-32022` with `data {supported, requested}`;
//! 5. the method: unknown is HTTP 404 `-32601`.
//!
//! Errors found while serving a known method (`-32602` invalid params or
//! unknown tool, `-32603` internal or timeout) are JSON-RPC errors in an
//! HTTP 200. Every answer is `application/json` with
//! `Cache-Control: no-store`: nothing here is cacheable, least of all an
//! interim `input_required` result (MCP-9).

pub mod call;
pub mod mount;
pub mod protocol;
pub mod request_state;
pub mod results;
pub mod tasks;
pub mod templates;

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

use crate::base::mutant::{Mutant, MutantInfo};
use crate::base::principals::Principal;
use crate::domain::Domain;
use crate::domain::auth::authenticate;
use crate::domain::error::{ApiError, json_response};
use crate::turn::state::LoopState;

pub use mount::{McpServer, OwnedRun, Reply};
pub use protocol::{
    CLIENT_CAPABILITIES_META_KEY, HEADER_MISMATCH, INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST,
    MCP_PATH, METHOD_NOT_FOUND, MISSING_REQUIRED_CLIENT_CAPABILITY, PARSE_ERROR, PROTOCOL_VERSION,
    RUN_ID_META_KEY, RpcError, SERVER_NAME, SUPPORTED_VERSIONS, TASKS_EXTENSION,
    UNSUPPORTED_PROTOCOL_VERSION, VERSION_HEADER, VERSION_META_KEY, declares_tasks,
    optional_member, required_member,
};

/// One parsed JSON-RPC request.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcRequest {
    /// Its id (a string or a number).
    pub id: Value,
    /// Its method.
    pub method: String,
    /// Its params (`{}` when absent).
    pub params: Map<String, Value>,
}

/// What a body is.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A request: answered.
    Request(RpcRequest),
    /// A notification (no `id`): accepted with 202, nothing answered.
    Notification,
}

/// Parses a body as one JSON-RPC 2.0 message. On failure returns the error
/// and the id to answer it with (`null` when none could be read).
pub fn parse_message(bytes: &[u8]) -> Result<Incoming, (Value, RpcError)> {
    let value: Value = serde_json::from_slice(bytes).map_err(|err| {
        (
            Value::Null,
            RpcError::new(
                StatusCode::BAD_REQUEST,
                PARSE_ERROR,
                format!("the body is not JSON ({err}); send one JSON-RPC 2.0 request object"),
            ),
        )
    })?;
    let Value::Object(mut map) = value else {
        return Err((
            Value::Null,
            RpcError::invalid_request(
                "the body must be one JSON-RPC 2.0 request object (batches are not served)",
            ),
        ));
    };
    let id = match map.remove("id") {
        None => None,
        Some(id @ (Value::String(_) | Value::Number(_))) => Some(id),
        Some(_) => {
            return Err((
                Value::Null,
                RpcError::invalid_request("member `id` must be a string or a number"),
            ));
        }
    };
    let answer_id = id.clone().unwrap_or(Value::Null);
    let fail = |message: &str| (answer_id.clone(), RpcError::invalid_request(message));
    if map.get("jsonrpc") != Some(&Value::from("2.0")) {
        return Err(fail("member `jsonrpc` must be \"2.0\""));
    }
    let Some(Value::String(method)) = map.remove("method") else {
        return Err(fail("member `method` is required (a string)"));
    };
    let params = match map.remove("params") {
        None => Map::new(),
        Some(Value::Object(params)) => params,
        Some(_) => return Err(fail("member `params` must be an object")),
    };
    Ok(match id {
        None => Incoming::Notification,
        Some(id) => Incoming::Request(RpcRequest { id, method, params }),
    })
}

/// A header as text (`Some("")`-free: an unreadable value reads as its
/// lossy text, so it can never match a supported revision by accident).
fn header_text(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
}

/// MCP-10: the version the request speaks, from the header and
/// `params._meta`; they must agree, and the revision must be served.
pub fn check_version(headers: &HeaderMap, params: &Map<String, Value>) -> Result<(), RpcError> {
    let header = header_text(headers, VERSION_HEADER);
    let meta = params
        .get("_meta")
        .and_then(|meta| meta.get(VERSION_META_KEY))
        .cloned();
    let requested = match (&header, &meta) {
        (Some(header), Some(meta)) if meta.as_str() != Some(header.as_str()) => {
            return Err(RpcError::new(
                StatusCode::BAD_REQUEST,
                HEADER_MISMATCH,
                format!(
                    "header MCP-Protocol-Version says `{header}` but params._meta[\"{VERSION_META_KEY}\"] says {meta}; send the same revision in both"
                ),
            ));
        }
        (Some(header), _) => Value::from(header.as_str()),
        (None, Some(meta)) => meta.clone(),
        (None, None) => Value::Null,
    };
    let served = requested
        .as_str()
        .is_some_and(|version| SUPPORTED_VERSIONS.contains(&version));
    if served {
        return Ok(());
    }
    let message = if requested.is_null() {
        format!(
            "the request names no protocol revision; send MCP-Protocol-Version: {PROTOCOL_VERSION} and params._meta[\"{VERSION_META_KEY}\"]"
        )
    } else {
        format!(
            "protocol revision {requested} is not served; this server speaks {}",
            SUPPORTED_VERSIONS.join(", ")
        )
    };
    Err(RpcError::new(
        StatusCode::BAD_REQUEST,
        UNSUPPORTED_PROTOCOL_VERSION,
        message,
    )
    .with_data(json!({"supported": SUPPORTED_VERSIONS, "requested": requested})))
}

/// MCP-10: the `Mcp-Method` and `Mcp-Name` headers, when sent, must say
/// what the body says (`Mcp-Name`: `params.name`, or `params.taskId` for the
/// `tasks/*` methods, as the Tasks extension routes them).
pub fn check_routing_headers(headers: &HeaderMap, request: &RpcRequest) -> Result<(), RpcError> {
    let mismatch = |name: &str, header: &str, body: &str| {
        RpcError::new(
            StatusCode::BAD_REQUEST,
            HEADER_MISMATCH,
            format!(
                "header {name} says `{header}` but the body says `{body}`; send the same value in both"
            ),
        )
    };
    if let Some(method) = header_text(headers, "mcp-method")
        && method != request.method
    {
        return Err(mismatch("Mcp-Method", &method, &request.method));
    }
    if let Some(name) = header_text(headers, "mcp-name") {
        let member = if request.method.starts_with("tasks/") {
            "taskId"
        } else {
            "name"
        };
        let body_name = request
            .params
            .get(member)
            .and_then(Value::as_str)
            .unwrap_or_default();
        if name != body_name {
            return Err(mismatch("Mcp-Name", &name, body_name));
        }
    }
    Ok(())
}

/// DNS-rebinding guard: an `Origin` header, when present, must be a
/// loopback `http(s)` origin (this host serves loopback only).
fn check_origin(headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return Ok(());
    };
    let loopback = origin
        .to_str()
        .ok()
        .and_then(|text| reqwest::Url::parse(text).ok())
        .is_some_and(|url| {
            matches!(url.scheme(), "http" | "https")
                && match url.host_str() {
                    Some(host) if host.eq_ignore_ascii_case("localhost") => true,
                    // IPv6 literals stay in brackets in the parsed host.
                    Some(host) => host
                        .trim_start_matches('[')
                        .trim_end_matches(']')
                        .parse::<std::net::IpAddr>()
                        .is_ok_and(|ip| ip.is_loopback()),
                    None => false,
                }
        });
    if loopback {
        Ok(())
    } else {
        Err(ApiError::forbidden(
            "the Origin header names a non-loopback origin; the MCP mount accepts requests from loopback origins only (DNS-rebinding guard)",
        ))
    }
}

/// An `application/json`, `no-store` answer.
fn answer(status: StatusCode, body: &Value) -> Response {
    let mut response = json_response(status, body);
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

fn error_answer(id: &Value, err: &RpcError) -> Response {
    answer(
        err.status,
        &json!({"jsonrpc": "2.0", "id": id, "error": err.to_json()}),
    )
}

/// Handler for `POST /mcp` (see the module docs for the order of checks).
pub async fn handle(
    State(state): State<LoopState>,
    State(mcp_server): State<McpServer>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    // MCP-12: authentication before anything else; no anonymous access.
    let anonymous = Principal::new("anonymous", None, &[]);
    let caller = match authenticate(&headers, state.principals()) {
        Ok(caller) => caller,
        // Bug: an unauthenticated request is served as an anonymous principal (MCP-12).
        Err(_) if state.mutant_is(Mutant::McpAnonymousServed) => &anonymous,
        Err(err) => return err.into_response(),
    };
    if let Err(err) = check_origin(&headers) {
        return err.into_response();
    }
    let Ok(body) = body else {
        let err = RpcError::new(
            StatusCode::BAD_REQUEST,
            PARSE_ERROR,
            "the body could not be read; send one JSON-RPC request object of at most 2 MiB",
        );
        return error_answer(&Value::Null, &err);
    };
    let request = match parse_message(&body) {
        Ok(Incoming::Request(request)) => request,
        Ok(Incoming::Notification) => return StatusCode::ACCEPTED.into_response(),
        Err((id, err)) => return error_answer(&id, &err),
    };
    if request.method == "initialize" && state.mutant_is(Mutant::McpInitializeServed) {
        // Bug: a session handshake on a stateless mount (MCP-10).
        let mut response = answer(
            StatusCode::OK,
            &json!({"jsonrpc": "2.0", "id": request.id, "result": {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": SERVER_NAME, "version": env!("CARGO_PKG_VERSION")},
            }}),
        );
        response.headers_mut().insert(
            "mcp-session-id",
            HeaderValue::from_static("refhost-session-1"),
        );
        return response;
    }
    let Reply { result, owned } = dispatch(&state, &mcp_server, caller, &headers, &request).await;
    let response = match result {
        Ok(result) => answer(
            StatusCode::OK,
            &json!({"jsonrpc": "2.0", "id": request.id, "result": result}),
        ),
        Err(err) => error_answer(&request.id, &err),
    };
    match owned {
        Some(owned) => owning_answer(response, owned).await,
        None => response,
    }
}

/// `response` with its body handed over through [`OwnedBody`]: the owned
/// run is released when the connection takes the body's bytes, and
/// cancelled if the body is dropped first (the client went away).
async fn owning_answer(response: Response, owned: OwnedRun) -> Response {
    let (mut parts, body) = response.into_parts();
    // The whole answer is already in memory: a few KiB of JSON.
    let bytes = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(bytes) => bytes,
        // An in-memory body cannot fail to read; answer nothing rather than
        // something half built (the guard then cancels, as for a lost client).
        Err(_) => Bytes::new(),
    };
    parts
        .headers
        .insert(header::CONTENT_LENGTH, HeaderValue::from(bytes.len()));
    let body = OwnedBody {
        bytes: Some(bytes),
        owned: Some(owned),
    };
    Response::from_parts(parts, Body::from_stream(body))
}

/// The body of an answer whose request owns a run (MCP-14): one chunk.
/// Handing that chunk to the connection is sending the whole answer, so the
/// run is released then; a body dropped before (the server dropped the
/// connection: the client disconnected) drops the guard armed, which
/// cancels the run.
struct OwnedBody {
    bytes: Option<Bytes>,
    owned: Option<OwnedRun>,
}

impl futures_util::Stream for OwnedBody {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        let Some(bytes) = this.bytes.take() else {
            return Poll::Ready(None);
        };
        if let Some(owned) = this.owned.take() {
            if owned.keep_bound {
                // Bug: the run stays bound to the exchange; the guard goes
                // when the body does, after the answer was sent.
                this.owned = Some(owned);
            } else {
                owned.guard.release();
            }
        }
        Poll::Ready(Some(Ok(bytes)))
    }
}

/// Checks the version and routing headers, then serves the method.
async fn dispatch(
    state: &LoopState,
    mcp_server: &McpServer,
    caller: &Principal,
    headers: &HeaderMap,
    request: &RpcRequest,
) -> Reply {
    if let Err(err) = check_version(headers, &request.params) {
        return Reply::plain(Err(err));
    }
    if !state.mutant_is(Mutant::McpHeaderMismatchIgnored)
        && let Err(err) = check_routing_headers(headers, request)
    {
        return Reply::plain(Err(err));
    }
    match request.method.as_str() {
        "server/discover" => Reply::plain(Ok(discover())),
        "tools/list" => Reply::plain(list_tools(state, mcp_server, caller, &request.params)),
        "tools/call" => call::call(state, mcp_server, caller, &request.params).await,
        "tasks/get" => Reply::plain(tasks::get(state, caller, &request.params)),
        "tasks/update" => tasks::update(state, caller, &request.params).await,
        "tasks/cancel" => Reply::plain(tasks::cancel(state, caller, &request.params).await),
        other => Reply::plain(Err(RpcError::new(
            StatusCode::NOT_FOUND,
            METHOD_NOT_FOUND,
            format!(
                "method `{other}` is not served; this stateless {PROTOCOL_VERSION} server serves server/discover, tools/list, tools/call, tasks/get, tasks/update and tasks/cancel"
            ),
        ))),
    }
}

/// The `server/discover` result: the one revision, the tools, and the Tasks
/// extension (MCP-14).
pub fn discover() -> Value {
    json!({
        "resultType": "complete",
        "supportedVersions": SUPPORTED_VERSIONS,
        "capabilities": {"tools": {}, "extensions": {TASKS_EXTENSION: {}}},
        "serverInfo": {"name": SERVER_NAME, "version": env!("CARGO_PKG_VERSION")},
    })
}

/// The fixed input schema of every tool: `{input: string}`.
pub fn tool_input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"input": {"type": "string"}},
        "required": ["input"],
        "additionalProperties": false
    })
}

/// The host-authored description of every tool.
pub const TOOL_DESCRIPTION: &str = "Runs the reference host's agent (one tool-turn run) on `input` and answers with its final text; a question the agent asks comes back as input_required (TURN-E4).";

/// `tools/list`: the caller's own templates, sorted by name, uncacheable
/// across principals (MCP-11: `cacheScope: "private"`, `ttlMs: 0`).
fn list_tools(
    state: &Domain,
    mcp_server: &McpServer,
    caller: &Principal,
    params: &Map<String, Value>,
) -> Result<Value, RpcError> {
    if params.contains_key("cursor") {
        return Err(RpcError::invalid_params(
            "`params.cursor` names no page: this server answers the whole list in one page and issues no cursors",
        ));
    }
    let tools: Vec<Value> = mcp_server
        .templates()
        .list(&caller.tenant, &caller.id)
        .iter()
        .map(|template| {
            json!({
                "name": template.name,
                "description": TOOL_DESCRIPTION,
                "inputSchema": tool_input_schema(),
            })
        })
        .collect();
    Ok(json!({
        "resultType": "complete",
        "tools": tools,
        "ttlMs": 0,
        // Bug under the mutant: a per-principal list marked shareable (MCP-11).
        "cacheScope": if state.mutant_is(Mutant::McpListPublic) { "public" } else { "private" },
    }))
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[
    MutantInfo {
        mutant: Mutant::McpInitializeServed,
        name: "mcp-initialize-served",
        breaks: "the MCP mount answers `initialize` with a result and an Mcp-Session-Id",
    },
    MutantInfo {
        mutant: Mutant::McpHeaderMismatchIgnored,
        name: "mcp-header-mismatch-ignored",
        breaks: "the MCP mount ignores Mcp-Method / Mcp-Name headers that disagree with the body",
    },
    MutantInfo {
        mutant: Mutant::McpListPublic,
        name: "mcp-list-public",
        breaks: "the MCP mount's per-principal tools/list says `cacheScope: public`",
    },
    MutantInfo {
        mutant: Mutant::McpAnonymousServed,
        name: "mcp-anonymous-served",
        breaks: "the MCP mount serves a request without a bearer token as an anonymous principal",
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.insert(*name, HeaderValue::from_static(value));
        }
        headers
    }

    fn meta(version: Value) -> Map<String, Value> {
        let mut params = Map::new();
        params.insert("_meta".into(), json!({VERSION_META_KEY: version}));
        params
    }

    #[test]
    fn messages_are_one_json_rpc_request() {
        let ok = parse_message(br#"{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}"#);
        assert_eq!(
            ok,
            Ok(Incoming::Request(RpcRequest {
                id: json!(1),
                method: "tools/list".into(),
                params: Map::new(),
            }))
        );
        assert_eq!(
            parse_message(br#"{"jsonrpc": "2.0", "method": "notifications/x"}"#),
            Ok(Incoming::Notification)
        );
        for (body, code, id) in [
            (&b"nope"[..], PARSE_ERROR, Value::Null),
            (b"[]", INVALID_REQUEST, Value::Null),
            (
                br#"{"jsonrpc": "2.0", "id": null, "method": "x"}"#,
                INVALID_REQUEST,
                Value::Null,
            ),
            (
                br#"{"jsonrpc": "1.0", "id": "a", "method": "x"}"#,
                INVALID_REQUEST,
                json!("a"),
            ),
            (
                br#"{"jsonrpc": "2.0", "id": "a"}"#,
                INVALID_REQUEST,
                json!("a"),
            ),
            (
                br#"{"jsonrpc": "2.0", "id": 2, "method": "x", "params": []}"#,
                INVALID_REQUEST,
                json!(2),
            ),
        ] {
            let (answer_id, err) = parse_message(body).expect_err("refused");
            assert_eq!(err.code, code, "{}", String::from_utf8_lossy(body));
            assert_eq!(err.status, StatusCode::BAD_REQUEST);
            assert_eq!(answer_id, id);
        }
    }

    #[test]
    fn versions_must_be_named_served_and_agree() {
        let served = headers(&[("mcp-protocol-version", "2026-07-28")]);
        assert!(check_version(&served, &Map::new()).is_ok());
        assert!(check_version(&HeaderMap::new(), &meta(json!("2026-07-28"))).is_ok());
        assert!(check_version(&served, &meta(json!("2026-07-28"))).is_ok());

        let missing = check_version(&HeaderMap::new(), &Map::new()).expect_err("none");
        assert_eq!(missing.code, UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(missing.status, StatusCode::BAD_REQUEST);
        assert_eq!(
            missing.data,
            Some(json!({"supported": ["2026-07-28"], "requested": null}))
        );
        let old = headers(&[("mcp-protocol-version", "2025-11-25")]);
        let unsupported = check_version(&old, &Map::new()).expect_err("old");
        assert_eq!(unsupported.code, UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(
            unsupported.data,
            Some(json!({"supported": ["2026-07-28"], "requested": "2025-11-25"}))
        );
        let both_old = check_version(&old, &meta(json!("2025-11-25"))).expect_err("old");
        assert_eq!(both_old.code, UNSUPPORTED_PROTOCOL_VERSION);

        let mismatch = check_version(&served, &meta(json!("2025-11-25"))).expect_err("differ");
        assert_eq!(mismatch.code, HEADER_MISMATCH);
        assert_eq!(mismatch.status, StatusCode::BAD_REQUEST);
        let not_text = check_version(&served, &meta(json!(20260728))).expect_err("differ");
        assert_eq!(not_text.code, HEADER_MISMATCH);
    }

    #[test]
    fn routing_headers_must_match_the_body() {
        let mut params = Map::new();
        params.insert("name".into(), json!("helper"));
        let request = RpcRequest {
            id: json!(1),
            method: "tools/call".into(),
            params,
        };
        let good = headers(&[("mcp-method", "tools/call"), ("mcp-name", "helper")]);
        assert!(check_routing_headers(&good, &request).is_ok());
        for bad in [
            headers(&[("mcp-method", "tools/list")]),
            headers(&[("mcp-name", "other")]),
        ] {
            assert_eq!(
                check_routing_headers(&bad, &request).map_err(|e| e.code),
                Err(HEADER_MISMATCH)
            );
        }
    }

    #[test]
    fn only_loopback_origins_pass() {
        for ok in [
            "http://127.0.0.1:8080",
            "http://localhost",
            "https://[::1]:3000",
        ] {
            let mut headers = HeaderMap::new();
            headers.insert(header::ORIGIN, HeaderValue::from_static(ok));
            assert!(check_origin(&headers).is_ok(), "{ok}");
        }
        assert!(check_origin(&HeaderMap::new()).is_ok());
        for bad in [
            "http://evil.example",
            "null",
            "http://10.0.0.1",
            "file:///x",
        ] {
            let mut headers = HeaderMap::new();
            headers.insert(header::ORIGIN, HeaderValue::from_static(bad));
            assert!(check_origin(&headers).is_err(), "{bad}");
        }
    }

    #[test]
    fn discover_names_the_one_revision() {
        assert_eq!(
            discover(),
            json!({"resultType": "complete", "supportedVersions": ["2026-07-28"],
                   "capabilities": {"tools": {},
                                    "extensions": {"io.modelcontextprotocol/tasks": {}}},
                   "serverInfo": {"name": "toolcert-reference-host",
                                  "version": env!("CARGO_PKG_VERSION")}})
        );
    }
}
