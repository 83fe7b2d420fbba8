//! The upstream tool-hooks seam: `POST /v1/host/sample/toolhooks/invoke`.
//!
//! Exactly the upstream contract. The seam evaluates one tool call's hooks
//! outside any run: no run is created, no event is written, and there is no
//! tool (nothing is ever called; toolcert's `receiverUrl` is ignored with
//! its other extensions).
//!
//! Request: `principal` (default `core.system`), `toolName` (required),
//! `requiredScopes?`, `grantedScopes?` (string arrays), `args?` (an object,
//! default `{}`), `transport?` (`mcp|http|native`, default `native`),
//! `simulateToolError?`, `simulateRateLimitExhausted?` (booleans). Any other
//! member is ignored; a known member of the wrong type is a 400 naming it.
//!
//! Evaluation, in order:
//!
//! 1. `argsHash` = lowercase hex SHA-256 of the RFC 8785 form of `args`, its
//!    secret-shaped literals redacted first (SR-1, [`redact_secret_shaped`]);
//! 2. authorization against the grant the caller states
//!    ([`crate::domain::authz::decide_stated`]): required scopes with no
//!    `grantedScopes` cannot be evaluated and are denied (fail-closed), and
//!    so is a grant that lacks a required scope: 403 `forbidden`;
//! 3. the per-(principal, tool) token bucket (the host's limiter), or
//!    `simulateRateLimitExhausted`: 429 `rate_limited` with `Retry-After`;
//! 4. the "invocation": `ok` with a measured `durationMs`, or with
//!    `simulateToolError` the ran-and-threw `error`
//!    (`tool_execution_failed`), `durationMs` included.
//!
//! Every answer, 200, 403 or 429, has the body
//! `{toolCalled: {argsHash, principal, transport}, toolReturned: {status,
//! durationMs?, error?}}`.

use std::convert::Infallible;
use std::time::Instant;

use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

use crate::base::args_hash::args_hash;
use crate::base::event_codes;
use crate::base::mutant::Mutant;
use crate::base::redaction::redact_secret_shaped;
use crate::base::tool_events::{SYSTEM_AGENT_ID, ToolStatus, Transport};
use crate::domain::Domain;
use crate::domain::error::{ApiError, json_response};
use crate::domain::gates::{Bucket, Gate, Grant, Pipeline, Refusal};
use crate::domain::json_body::Fields;
use crate::surface::seams::extract::SeamRequest;
use crate::surface::upstream::common::known_members;

/// Every member the upstream request defines; others are ignored (v1) or
/// refused (v2, [`super::v2`]).
pub const FIELDS: &[&str] = &[
    "principal",
    "toolName",
    "requiredScopes",
    "grantedScopes",
    "args",
    "transport",
    "simulateToolError",
    "simulateRateLimitExhausted",
];

/// `principal` when the request names none.
pub const DEFAULT_PRINCIPAL: &str = SYSTEM_AGENT_ID;

/// The upstream code of a tool that ran and threw.
pub const TOOL_EXECUTION_FAILED: &str = "tool_execution_failed";

/// A parsed upstream seam request.
#[derive(Debug, Clone, PartialEq)]
pub struct UpstreamInvokeRequest {
    /// The principal the call is attributed to.
    pub principal: String,
    /// Tool name.
    pub tool_name: String,
    /// The tool's required scopes.
    pub required_scopes: Vec<String>,
    /// The principal's scopes as the caller states them; `None` when absent.
    pub granted_scopes: Option<Vec<String>>,
    /// Arguments (a JSON object).
    pub args: Value,
    /// Transport echoed in `toolCalled`.
    pub transport: Transport,
    /// Force the ran-and-threw arm.
    pub simulate_tool_error: bool,
    /// Force the rate-limited arm.
    pub simulate_rate_limit_exhausted: bool,
}

impl UpstreamInvokeRequest {
    /// Parses the body: unknown members are dropped, known ones are
    /// type-checked (a 400 naming the member).
    pub fn parse(body: &[u8]) -> Result<Self, ApiError> {
        let mut fields = Fields::closed(known_members(body, FIELDS)?, FIELDS)?;
        let principal = match fields.optional_string("principal")? {
            None => DEFAULT_PRINCIPAL.to_owned(),
            Some(principal) if principal.is_empty() => {
                return Err(ApiError::validation("field `principal` must not be empty"));
            }
            Some(principal) => principal,
        };
        let tool_name = fields.required_string("toolName")?;
        let required_scopes = fields
            .optional_string_array("requiredScopes")?
            .unwrap_or_default();
        let granted_scopes = fields.optional_string_array("grantedScopes")?;
        let args = Value::Object(fields.optional_object("args")?.unwrap_or_default());
        let transport = match fields.optional_string("transport")? {
            None => Transport::default(),
            Some(name) => Transport::parse(&name).ok_or_else(|| {
                ApiError::validation("field `transport` must be one of `mcp`, `http`, `native`")
            })?,
        };
        let simulate_tool_error = fields.optional_bool("simulateToolError")?.unwrap_or(false);
        let simulate_rate_limit_exhausted = fields
            .optional_bool("simulateRateLimitExhausted")?
            .unwrap_or(false);
        Ok(Self {
            principal,
            tool_name,
            required_scopes,
            granted_scopes,
            args,
            transport,
            simulate_tool_error,
            simulate_rate_limit_exhausted,
        })
    }
}

/// The `toolReturned` of one evaluation.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Returned {
    status: ToolStatus,
    duration_ms: Option<u64>,
    /// `(code, message)`.
    error: Option<(&'static str, String)>,
}

impl Returned {
    fn json(&self, mutant: Option<Mutant>) -> Value {
        let mut object = Map::new();
        object.insert(
            "status".to_owned(),
            serde_json::to_value(self.status).unwrap_or(Value::Null),
        );
        if let Some(duration_ms) = self.duration_ms {
            object.insert("durationMs".to_owned(), json!(duration_ms));
        }
        if let Some((code, message)) = &self.error {
            object.insert(
                "error".to_owned(),
                json!({"code": code, "message": message}),
            );
            if mutant == Some(Mutant::ErrorWithOutcome) {
                // Bug: `error` and `outcome` are mutually exclusive.
                object.insert("outcome".to_owned(), json!({}));
            }
        }
        Value::Object(object)
    }
}

/// How the evaluation ended: the `toolReturned`, and the gate that refused
/// the call (`None`: the "tool" returned, ok or error, HTTP 200; else 403
/// or 429).
struct Ended {
    returned: Returned,
    refusal: Option<Refusal<Infallible>>,
}

/// Handler for the seam.
pub async fn invoke(State(state): State<Domain>, seam: SeamRequest) -> Response {
    match handle(&state, &seam) {
        Ok(response) => response,
        Err(err) => err.into_response(),
    }
}

fn handle(state: &Domain, seam: &SeamRequest) -> Result<Response, ApiError> {
    // The caller was checked before the body was read ([`SeamRequest`]).
    let request = UpstreamInvokeRequest::parse(&seam.body)?;
    let mutant = state.mutant();
    // Step 1: RFC 8785 + SHA-256 of the args with secret-shaped literals redacted (SR-1;
    // there are no credential references upstream).
    let args_hash = args_hash(&redact_secret_shaped(&request.args), &request.args, mutant)
        .map_err(|_| ApiError::internal("the args could not be hashed; retry the request"))?;
    let tool_called = tool_called(&request, &args_hash, mutant);
    let ended = evaluate(state, &request);
    Ok(respond(tool_called, ended, mutant))
}

/// `toolCalled`: `{argsHash, principal, transport}`.
fn tool_called(request: &UpstreamInvokeRequest, args_hash: &str, mutant: Option<Mutant>) -> Value {
    let mut object = Map::new();
    object.insert("argsHash".to_owned(), json!(args_hash));
    if mutant != Some(Mutant::CallEventMissingPrincipal) {
        object.insert("principal".to_owned(), json!(request.principal));
    }
    object.insert(
        "transport".to_owned(),
        serde_json::to_value(request.transport).unwrap_or(Value::Null),
    );
    if mutant == Some(Mutant::CallEventCarriesInputs) {
        // Bug: the call record carries the inputs, not just their hash.
        object.insert("inputs".to_owned(), request.args.clone());
    }
    Value::Object(object)
}

/// Steps 2–4.
fn evaluate(state: &Domain, request: &UpstreamInvokeRequest) -> Ended {
    let mutant = state.mutant();
    // Step 2: fail-closed authorization against the stated grant. Step 3:
    // the per-(principal, tool) token bucket.
    let pipeline = Pipeline {
        gates: &[Gate::Authorize, Gate::RateLimit],
        principal: &request.principal,
        tool: &request.tool_name,
        required_scopes: &request.required_scopes,
        grant: Grant::Stated(request.granted_scopes.as_deref()),
        bucket: Bucket::Seam {
            simulate_exhausted: request.simulate_rate_limit_exhausted,
        },
    };
    if let Err(refusal) = pipeline.run(state, |never: Infallible| match never {}) {
        let returned = match &refusal {
            Refusal::Own(never) => match *never {},
            Refusal::Forbidden { message, .. } => Returned {
                status: ToolStatus::Forbidden,
                // The tool did not run, so there is no duration to report.
                duration_ms: (mutant == Some(Mutant::ForbiddenWithDuration)).then_some(0),
                error: Some((event_codes::FORBIDDEN, message.clone())),
            },
            Refusal::RateLimited { message, .. } => Returned {
                status: ToolStatus::RateLimited,
                duration_ms: None,
                error: Some((event_codes::RATE_LIMITED, message.clone())),
            },
        };
        let refusal = Some(refusal);
        return Ended { returned, refusal };
    }

    // Step 4: there is no tool; the call "runs" here, and is timed.
    let started = Instant::now();
    let duration_ms = Some(u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX));
    // Bug under `failure-bare-success`: the simulated failure is hidden
    // behind a bare success.
    let threw = request.simulate_tool_error && mutant != Some(Mutant::FailureBareSuccess);
    let message = "the tool raised an error (simulated by simulateToolError)";
    let error = threw.then(|| (TOOL_EXECUTION_FAILED, message.to_owned()));
    let status = if threw {
        ToolStatus::Error
    } else {
        ToolStatus::Ok
    };
    let returned = Returned {
        status,
        duration_ms,
        error,
    };
    let refusal = None;
    Ended { returned, refusal }
}

/// The HTTP answer: the seam response with the status of how it ended.
fn respond(tool_called: Value, ended: Ended, mutant: Option<Mutant>) -> Response {
    let Ended { returned, refusal } = ended;
    let body = json!({"toolCalled": tool_called, "toolReturned": returned.json(mutant)});
    let retry_after_secs = match refusal {
        None => return json_response(StatusCode::OK, &body),
        Some(Refusal::Forbidden { .. }) => return json_response(StatusCode::FORBIDDEN, &body),
        Some(Refusal::Own(never)) => match never {},
        Some(Refusal::RateLimited {
            retry_after_secs, ..
        }) => retry_after_secs,
    };
    let mut answer = body;
    if mutant == Some(Mutant::RateLimitBareBody) {
        // Bug: not the seam response.
        answer = json!({"status": "rate_limited"});
    }
    if mutant == Some(Mutant::RateLimitNoRetryAfter) {
        // Bug: the hint moves from the header into the body.
        answer["retryAfterSeconds"] = json!(retry_after_secs);
        return json_response(StatusCode::TOO_MANY_REQUESTS, &answer);
    }
    let mut response = json_response(StatusCode::TOO_MANY_REQUESTS, &answer);
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(retry_after_secs));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(value: Value) -> Result<UpstreamInvokeRequest, ApiError> {
        UpstreamInvokeRequest::parse(value.to_string().as_bytes())
    }

    #[test]
    fn minimal_request_gets_the_upstream_defaults() {
        let request = parse(json!({"toolName": "t"})).expect("valid");
        assert_eq!(request.principal, "core.system");
        assert_eq!(request.args, json!({}));
        assert_eq!(request.transport, Transport::Native);
        assert!(request.required_scopes.is_empty());
        assert_eq!(request.granted_scopes, None);
        assert!(!request.simulate_tool_error && !request.simulate_rate_limit_exhausted);
    }

    #[test]
    fn extensions_are_ignored_whatever_their_type() {
        let request = parse(json!({
            "toolName": "t", "grantedScopes": ["a"],
            "receiverUrl": "http://10.0.0.1/", "inputSchema": 5, "timeoutMs": "slow",
            "credentials": {"c": 1}, "anything": null
        }))
        .expect("valid");
        assert_eq!(request.granted_scopes, Some(vec!["a".to_owned()]));
    }

    #[test]
    fn known_members_of_the_wrong_type_name_the_member() {
        for (body, field) in [
            (json!({}), "toolName"),
            (json!({"toolName": 3}), "toolName"),
            (json!({"toolName": "t", "principal": 1}), "principal"),
            (json!({"toolName": "t", "principal": ""}), "principal"),
            (
                json!({"toolName": "t", "requiredScopes": "x"}),
                "requiredScopes",
            ),
            (
                json!({"toolName": "t", "grantedScopes": [1]}),
                "grantedScopes",
            ),
            (json!({"toolName": "t", "args": []}), "args"),
            (json!({"toolName": "t", "transport": "grpc"}), "transport"),
            (
                json!({"toolName": "t", "simulateToolError": "yes"}),
                "simulateToolError",
            ),
            (
                json!({"toolName": "t", "simulateRateLimitExhausted": 1}),
                "simulateRateLimitExhausted",
            ),
        ] {
            let err = parse(body.clone()).unwrap_err();
            assert!(err.message.contains(field), "{body}: {}", err.message);
        }
        assert!(UpstreamInvokeRequest::parse(b"not json").is_err());
    }

    #[test]
    fn returned_json_shapes() {
        let ok = Returned {
            status: ToolStatus::Ok,
            duration_ms: Some(0),
            error: None,
        };
        assert_eq!(ok.json(None), json!({"status": "ok", "durationMs": 0}));
        let forbidden = Returned {
            status: ToolStatus::Forbidden,
            duration_ms: None,
            error: Some(("forbidden", "no".to_owned())),
        };
        assert_eq!(
            forbidden.json(None),
            json!({"status": "forbidden", "error": {"code": "forbidden", "message": "no"}})
        );
        assert_eq!(
            forbidden.json(Some(Mutant::ErrorWithOutcome))["outcome"],
            json!({})
        );
        assert!(
            ok.json(Some(Mutant::ErrorWithOutcome))
                .get("outcome")
                .is_none()
        );
    }
}
