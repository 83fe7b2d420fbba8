//! The A2A routes: the agent card at `GET /.well-known/agent-card.json`,
//! negotiated by the `A2A-Version` header ([`crate::domain::a2a`]).
//!
//! The card is public (A2A discovery needs no credential); it names no
//! tenant, principal or task. The JSON-RPC endpoint the card advertises
//! ([`post_rpc`]) is authenticated like every other route.

use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use serde_json::{Value, json};

use crate::domain::a2a::{self, Negotiated};
use crate::domain::a2a_tasks::{self, TaskError};
use crate::domain::auth::{authenticate, require_scope};
use crate::domain::error::{ApiError, ErrorCode, json_response};
use crate::domain::runs::RUNS_READ_SCOPE;
use crate::domain::workflows::RUNS_WRITE_SCOPE;
use crate::surface::app::AppState;

/// JSON-RPC: the body is not JSON.
const PARSE_ERROR: i64 = -32700;
/// JSON-RPC: the body is not a request object.
const INVALID_REQUEST: i64 = -32600;

/// Longest `A2A-Version` header read.
const MAX_VERSION_LEN: usize = 32;

/// Handler for `GET /.well-known/agent-card.json`.
pub async fn get_agent_card(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let mutant = state.mutant();
    let requested = match headers.get("a2a-version") {
        None => None,
        Some(value) => Some(
            value
                .to_str()
                .ok()
                .filter(|v| v.len() <= MAX_VERSION_LEN)
                .ok_or_else(|| {
                    ApiError::validation(
                        "header `A2A-Version` must be a major.minor version such as 1.0",
                    )
                })?,
        ),
    };
    let version = match a2a::negotiate(requested, mutant) {
        Negotiated::Serve(version) => version,
        Negotiated::Malformed => {
            return Err(ApiError::validation(
                "header `A2A-Version` must be a major.minor version such as 1.0",
            ));
        }
        Negotiated::BelowFloor => {
            let requested = requested.unwrap_or_default();
            return Err(ApiError::new(
                ErrorCode::InteropVersionUnsupported,
                format!(
                    "A2A version {requested} is below this host's minimumVersion {}; ask for one of {:?}",
                    a2a::MINIMUM_VERSION,
                    a2a::VERSIONS
                ),
            )
            .with_details(a2a::refusal_details(requested)));
        }
    };
    // The interfaces live on this host: the origin the caller reached.
    let host = headers
        .get("host")
        .and_then(|h| h.to_str().ok())
        .filter(|h| h.bytes().all(|b| b.is_ascii_graphic()))
        .unwrap_or("127.0.0.1");
    let card = a2a::agent_card(version, &format!("http://{host}"), mutant);
    let mut response = json_response(StatusCode::OK, &card);
    response
        .headers_mut()
        .insert("a2a-version", HeaderValue::from_static(version));
    Ok(response)
}

/// Largest JSON-RPC request body read.
const MAX_RPC_BODY: usize = 256 * 1024;

/// A JSON-RPC 2.0 answer (always HTTP 200, as A2A's JSON-RPC binding has it).
fn rpc_answer(id: &Value, outcome: Result<Value, (i64, String)>) -> Response {
    let body = match outcome {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err((code, message)) => {
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
        }
    };
    json_response(StatusCode::OK, &body)
}

/// Handler for `POST /a2a`: the A2A JSON-RPC endpoint the card advertises
/// (`SendMessage`, `GetTask`, `ListTasks`; [`crate::domain::a2a_tasks`]).
///
/// The caller is authenticated like every other route (401 before any
/// method is read); `SendMessage` needs `runs:write`, the reads `runs:read`.
pub async fn post_rpc(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let domain = state.domain();
    let caller = authenticate(&headers, domain.principals())?;
    let parsed = body
        .ok()
        .filter(|body| body.len() <= MAX_RPC_BODY)
        .and_then(|body| serde_json::from_slice::<Value>(&body).ok());
    let Some(request) = parsed else {
        return Ok(rpc_answer(
            &Value::Null,
            Err((
                PARSE_ERROR,
                format!("the body is not one JSON value of at most {MAX_RPC_BODY} bytes"),
            )),
        ));
    };
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let method = request.get("method").and_then(Value::as_str);
    let (Some(method), Some("2.0")) = (method, request.get("jsonrpc").and_then(Value::as_str))
    else {
        return Ok(rpc_answer(
            &id,
            Err((
                INVALID_REQUEST,
                "send a JSON-RPC 2.0 request object: {jsonrpc: \"2.0\", id, method, params}"
                    .to_owned(),
            )),
        ));
    };
    let params = request.get("params").cloned().unwrap_or(Value::Null);
    let scope = match method {
        "SendMessage" => RUNS_WRITE_SCOPE,
        "GetTask" | "ListTasks" => RUNS_READ_SCOPE,
        _ => {
            return Ok(rpc_answer(
                &id,
                Err((
                    a2a_tasks::METHOD_NOT_FOUND,
                    format!(
                        "method `{method}` is not served here; this endpoint serves SendMessage, GetTask and ListTasks"
                    ),
                )),
            ));
        }
    };
    require_scope(caller, scope)?;
    let outcome = match method {
        "SendMessage" => a2a_tasks::send_message(domain, caller, &params).await,
        "GetTask" => a2a_tasks::get_task(domain, caller, &params),
        _ => a2a_tasks::list_tasks(domain, caller, &params),
    };
    match outcome {
        Ok(result) => Ok(rpc_answer(&id, Ok(result))),
        Err(TaskError::Rpc { code, message }) => Ok(rpc_answer(&id, Err((code, message)))),
        Err(TaskError::Http(err)) => Err(err),
    }
}
