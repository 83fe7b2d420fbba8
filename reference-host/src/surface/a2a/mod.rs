//! The A2A routes: the agent card at `GET /.well-known/agent-card.json`,
//! negotiated by the `A2A-Version` header ([`crate::domain::a2a`]).
//!
//! The card is public (A2A discovery needs no credential); it names no
//! tenant, principal, task or routing value (RFC 0202 §D.8). The JSON-RPC
//! endpoint the card advertises ([`post_rpc`]) is authenticated like every
//! other route, before any `tenant` in the request is looked at (RFC 0202
//! §D.6: a real routing value and a never-minted one are refused alike).

use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use serde_json::{Value, json};

use crate::base::mutant::{Mutant, MutantInfo};
use crate::domain::Domain;
use crate::domain::a2a::{self, Negotiated};
use crate::domain::a2a_tasks::{self, TaskError};
use crate::domain::agents;
use crate::domain::auth::{authenticate, require_scope};
use crate::domain::error::{ApiError, ErrorCode, json_response};
use crate::domain::runs::RUNS_READ_SCOPE;
use crate::domain::workflows::RUNS_WRITE_SCOPE;
use crate::turn::state::LoopState;

/// JSON-RPC: the body is not JSON.
const PARSE_ERROR: i64 = -32700;
/// JSON-RPC: the body is not a request object.
const INVALID_REQUEST: i64 = -32600;

/// Longest `A2A-Version` header read.
const MAX_VERSION_LEN: usize = 32;

/// Handler for `GET /.well-known/agent-card.json`.
pub async fn get_agent_card(
    State(state): State<Domain>,
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
    let card = a2a::public_card(version, &origin_of(&headers), mutant);
    let mut response = json_response(StatusCode::OK, &card);
    response
        .headers_mut()
        .insert("a2a-version", HeaderValue::from_static(version));
    Ok(response)
}

/// The origin the caller reached: where the cards' interfaces live.
fn origin_of(headers: &HeaderMap) -> String {
    let host = headers
        .get("host")
        .and_then(|h| h.to_str().ok())
        .filter(|h| h.bytes().all(|b| b.is_ascii_graphic()))
        .unwrap_or("127.0.0.1");
    format!("http://{host}")
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
/// (`SendMessage`, `GetTask`, `ListTasks`, `GetExtendedAgentCard`;
/// [`crate::domain::a2a_tasks`]).
///
/// The caller is authenticated like every other route (401 before any
/// method or `tenant` is read); `SendMessage` needs `runs:write`, the reads
/// `runs:read` (`GetExtendedAgentCard` too: the scope of `GET /agents`,
/// RFC 0202 §D.6).
pub async fn post_rpc(
    State(state): State<LoopState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let domain = state.domain();
    let mutant = state.mutant();
    let parsed = body
        .ok()
        .filter(|body| body.len() <= MAX_RPC_BODY)
        .and_then(|body| serde_json::from_slice::<Value>(&body).ok());
    // Bug under `agent-card-resolve-before-auth`: a routing value is looked
    // up before the caller is known, so a never-minted one gets 404 where a
    // real one gets 401 (RFC 0202 §D.6).
    if let Some(tenant) = parsed
        .as_ref()
        .and_then(|request| request["params"]["tenant"].as_str())
        && mutant == Some(Mutant::AgentCardResolveBeforeAuth)
        && !agents::minted_anywhere(tenant)
    {
        return Err(ApiError::not_found(
            "no agent is routed by this tenant value",
        ));
    }
    let caller = authenticate(&headers, domain.principals())?;
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
        "GetTask" | "ListTasks" | "GetExtendedAgentCard" => RUNS_READ_SCOPE,
        _ => {
            return Ok(rpc_answer(
                &id,
                Err((
                    a2a_tasks::METHOD_NOT_FOUND,
                    format!(
                        "method `{method}` is not served here; this endpoint serves SendMessage, GetTask, ListTasks and GetExtendedAgentCard"
                    ),
                )),
            ));
        }
    };
    require_scope(caller, scope)?;
    let outcome = match a2a_tasks::route(caller, &params, mutant) {
        Err(err) => Err(err),
        Ok((route, tenant)) => match method {
            "SendMessage" => a2a_tasks::send_message(domain, caller, &params, route).await,
            "GetTask" => a2a_tasks::get_task(domain, caller, &params),
            "GetExtendedAgentCard" => {
                a2a_tasks::get_extended_agent_card(route, tenant, &origin_of(&headers), mutant)
            }
            _ => a2a_tasks::list_tasks(domain, caller, &params, route),
        },
    };
    match outcome {
        Ok(result) => Ok(rpc_answer(&id, Ok(result))),
        Err(TaskError::Rpc { code, message }) => Ok(rpc_answer(&id, Err((code, message)))),
        Err(TaskError::Http(err)) => Err(err),
    }
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[MutantInfo {
    mutant: Mutant::AgentCardResolveBeforeAuth,
    name: "agent-card-resolve-before-auth",
    breaks: "POST /a2a looks a tenant routing value up before authenticating, so an unauthenticated never-minted value gets 404 and a real one 401 (A2A-8, RFC 0202 §D.6)",
}];
