//! The safe-fetch seam: `POST /conformance/seams/sample/http/safe-fetch-run`
//! (schemas/seams/safe-fetch-run.request.schema.json).
//!
//! One request is one run, attributed to the authenticated caller, that
//! performs one `ctx.http.safeFetch(url, init)`:
//!
//! 1. `run.started`;
//! 2. `agent.tool-called {agentId: "core.system", toolName:
//!    "http.safeFetch", transport: "http", principal, argsHash}`, the hash
//!    over the RFC 8785 form of `{url, method}` (HOOKS-EVT-4: a fetch is a
//!    non-agent tool call);
//! 3. the SSRF guard ([`crate::domain::http_client::Guard`]), then the fetch if
//!    it let the URL through (a blocked URL opens no connection);
//! 4. `agent.tool-returned`, caused by the call: `ok` with `durationMs`
//!    and a content-free `outcome {httpStatus, bytes}`; `error`
//!    `upstream_unavailable` when no answer came; or, for a blocked URL,
//!    `forbidden` with no `durationMs` and `details {service: "http",
//!    reason}` (HOOKS-AUTH-5);
//! 5. `run.completed {result: {outcome}}`.
//!
//! The host advertises `toolHooks.prePostEvents`, so both events are
//! written for every fetch, blocked or not (HOOKS-EVT-5). The answer is
//! `201 {runId, outcome}`: `fetched` when the guard let the fetch through
//! (whatever came of it: the return says), `blocked` when it did not.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use reqwest::Url;
use serde::Serialize;
use serde_json::{Value, json};

use crate::base::args_hash::args_hash;
use crate::base::events::{NewEvent, RunEventDoc, TOOL_CALLED, TOOL_RETURNED};
use crate::base::mutant::{Mutant, MutantInfo};
use crate::base::tool_events::{
    CallPayload, ReturnPayload, SYSTEM_AGENT_ID, ToolErrorCode, ToolReturn, ToolStatus, Transport,
};
use crate::domain::Domain;
use crate::domain::error::{ApiError, json_response};
use crate::domain::http_client::{self, Blocked, FetchInit, Fetched, Method};
use crate::domain::json_body::{Fields, parse_object};
use crate::domain::workflows::{begin_run, end_run, new_run_id};
use crate::surface::seams::extract::SeamRequest;

/// Every member the request may carry (closed).
const FIELDS: &[&str] = &["url", "init"];
/// Every member `init` may carry (closed).
const INIT_FIELDS: &[&str] = &["method", "headers", "body"];

/// Longest accepted `url`.
pub const MAX_URL_LEN: usize = 2_048;

/// How a seam fetch ended, as answered (`outcome`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The guard let the fetch through (it may still have got no answer).
    Fetched,
    /// The guard blocked it; no connection was attempted.
    Blocked,
}

impl Outcome {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Fetched => "fetched",
            Self::Blocked => "blocked",
        }
    }
}

/// A parsed, shape-checked seam request.
#[derive(Debug, Clone)]
pub struct SafeFetchRequest {
    /// The URL exactly as sent (hashed into `argsHash`).
    pub raw_url: String,
    /// The URL as parsed.
    pub url: Url,
    /// Method, headers and body.
    pub init: FetchInit,
}

impl SafeFetchRequest {
    /// Parses and checks the body; every problem is a 400 naming the field.
    pub fn parse(body: &[u8]) -> Result<Self, ApiError> {
        let mut fields = Fields::closed(parse_object(body)?, FIELDS)?;
        let raw_url = fields.required_string("url")?;
        // The URL is never echoed: its query or userinfo may be secret.
        if raw_url.chars().count() > MAX_URL_LEN {
            return Err(ApiError::validation(format!(
                "field `url` is longer than {MAX_URL_LEN} characters; send a shorter URL"
            )));
        }
        let url = Url::parse(&raw_url).map_err(|_| {
            ApiError::validation(
                "field `url` must be an absolute URL (e.g. http://127.0.0.1:8080/path)",
            )
        })?;
        let init = fields
            .optional_object("init")?
            .map(parse_init)
            .transpose()?
            .unwrap_or_default();
        Ok(Self { raw_url, url, init })
    }
}

fn parse_init(map: serde_json::Map<String, Value>) -> Result<FetchInit, ApiError> {
    let mut fields = Fields::closed_at("init", map, INIT_FIELDS)?;
    let method = fields
        .optional_enum("method", http_client::METHODS)?
        .and_then(Method::parse)
        .unwrap_or_default();
    let mut headers = reqwest::header::HeaderMap::new();
    for (name, value) in fields.optional_string_map("headers")?.unwrap_or_default() {
        let (name, value) = http_client::check_header(&name, &value).map_err(|problem| {
            ApiError::validation(format!(
                "field `{}` {problem}",
                fields.name(&format!("headers.{name}"))
            ))
        })?;
        headers.append(name, value);
    }
    let body = fields.optional_string("body")?;
    if body.is_some() && method != Method::Post {
        return Err(ApiError::validation(
            "field `init.body` is sent only with `init.method` `POST`; drop the body or send POST",
        ));
    }
    Ok(FetchInit {
        method,
        headers,
        body,
    })
}

/// Handler for the seam.
pub async fn run(State(state): State<Domain>, seam: SeamRequest) -> Result<Response, ApiError> {
    // Caller checks first, as for every seam: an unauthenticated or
    // unscoped caller learns nothing about its request body.
    let caller = &seam.caller;
    let body = seam.body;
    let request = SafeFetchRequest::parse(&body)?;

    let run_id = new_run_id();
    begin_run(
        &state,
        &run_id,
        &caller.id,
        &caller.tenant,
        json!({"agentId": SYSTEM_AGENT_ID, "principal": caller.id, "service": http_client::TOOL_NAME}),
    )?;
    let fetch = SeamFetch {
        state: &state,
        run_id: &run_id,
        principal: &caller.id,
    };
    let outcome = fetch.perform(&request).await?;
    end_run(&state, &run_id, Ok(json!({"outcome": outcome.as_str()})))?;
    Ok(json_response(
        StatusCode::CREATED,
        &json!({"runId": run_id, "outcome": outcome.as_str()}),
    ))
}

/// One fetch of one seam run.
struct SeamFetch<'a> {
    state: &'a Domain,
    run_id: &'a str,
    principal: &'a str,
}

impl SeamFetch<'_> {
    /// Steps 2–4: the call event, the guard, the fetch, the return event.
    async fn perform(&self, request: &SafeFetchRequest) -> Result<Outcome, ApiError> {
        let mutant = self.state.mutant();
        let safe_fetch = self.state.safe_fetch();
        match safe_fetch.guard().check(&request.url) {
            Err(blocked) => {
                // Bug under `safe-fetch-blocked-unaudited`: the refusal
                // leaves no trace in the log (HOOKS-EVT-5 wants the pair).
                if mutant != Some(Mutant::SafeFetchBlockedUnaudited) {
                    let call = self.record_call(request)?;
                    self.record_return(&call, blocked_return(&blocked, mutant))?;
                }
                Ok(Outcome::Blocked)
            }
            Ok(()) => {
                // HOOKS-EVT-5: the call is on record before the fetch.
                let call = self.record_call(request)?;
                let ret = match safe_fetch.fetch_checked(&request.url, &request.init).await {
                    Fetched::Answered {
                        http_status,
                        bytes,
                        duration_ms,
                    } => {
                        // Content-free: the status and the size, never
                        // the body. A non-2xx answer is still an answer.
                        let mut ret = ToolReturn::ok(duration_ms);
                        ret.outcome = Some(json!({"httpStatus": http_status, "bytes": bytes}));
                        ret
                    }
                    Fetched::Failed {
                        message,
                        duration_ms,
                    } => ToolReturn::failed(
                        ToolStatus::Error,
                        ToolErrorCode::UpstreamUnavailable,
                        message,
                        Some(duration_ms),
                    )
                    .with_service(Some(http_client::SERVICE), None),
                };
                self.record_return(&call, ret)?;
                Ok(Outcome::Fetched)
            }
        }
    }

    /// Appends `agent.tool-called` (HOOKS-EVT-4: `core.system`, `http`).
    fn record_call(&self, request: &SafeFetchRequest) -> Result<Recorded, ApiError> {
        let hashed = json!({"url": request.raw_url, "method": request.init.method.as_str()});
        let args_hash = args_hash(&hashed, &hashed, self.state.mutant())
            .map_err(|_| ApiError::internal("the fetch could not be hashed; retry the request"))?;
        let call = CallPayload {
            agent_id: Some(SYSTEM_AGENT_ID.to_owned()),
            tool_name: http_client::TOOL_NAME.to_owned(),
            call_id: format!("call_{}", uuid::Uuid::new_v4().simple()),
            args_hash,
            principal: Some(self.principal.to_owned()),
            transport: Transport::Http,
            inputs: None,
        };
        let event = self.append(NewEvent::new(TOOL_CALLED, to_value(&call)?))?;
        Ok(Recorded {
            call_id: call.call_id,
            event,
        })
    }

    /// Appends `agent.tool-returned`, caused by the call event.
    fn record_return(&self, call: &Recorded, ret: ToolReturn) -> Result<(), ApiError> {
        let payload = ReturnPayload {
            agent_id: Some(SYSTEM_AGENT_ID.to_owned()),
            tool_name: http_client::TOOL_NAME.to_owned(),
            call_id: call.call_id.clone(),
            status: ret.status,
            duration_ms: ret.duration_ms,
            error: ret.error,
            outcome: ret.outcome,
            transport: Some(Transport::Http),
            principal: Some(self.principal.to_owned()),
        };
        let event = NewEvent::new(TOOL_RETURNED, to_value(&payload)?)
            .caused_by(Some(call.event.event_id.clone()));
        self.append(event)?;
        Ok(())
    }

    fn append(&self, event: NewEvent) -> Result<RunEventDoc, ApiError> {
        Ok(self.state.storage().append_event(self.run_id, event)?)
    }
}

/// A recorded call: its id and its event.
struct Recorded {
    call_id: String,
    event: RunEventDoc,
}

/// The return of a blocked fetch: `forbidden`, no `durationMs` (nothing
/// ran), `details {service: "http", reason}` (HOOKS-AUTH-5).
fn blocked_return(blocked: &Blocked, mutant: Option<Mutant>) -> ToolReturn {
    // Bug under `service-refusal-without-service`: the generic code loses
    // the service that refused.
    let service =
        (mutant != Some(Mutant::ServiceRefusalWithoutService)).then_some(http_client::SERVICE);
    let mut reason = blocked.reason.as_str().to_owned();
    if mutant == Some(Mutant::ServiceRefusalReasonSnake) {
        // Bug: HOOKS-AUTH-5 says lower-kebab.
        reason = reason.replace('-', "_");
    }
    ToolReturn::failed(
        ToolStatus::Forbidden,
        ToolErrorCode::Forbidden,
        blocked.message.clone(),
        None,
    )
    .with_service(service, Some(reason))
}

/// Serialises a payload (cannot fail for these types; mapped for safety).
fn to_value<P: Serialize>(payload: &P) -> Result<Value, ApiError> {
    serde_json::to_value(payload)
        .map_err(|_| ApiError::internal("an event payload could not be serialised; retry"))
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[
    MutantInfo {
        mutant: Mutant::SafeFetchBlockedUnaudited,
        name: "safe-fetch-blocked-unaudited",
        breaks: "a blocked safeFetch emits no call/return pair (HOOKS-EVT-5)",
    },
    MutantInfo {
        mutant: Mutant::ServiceRefusalWithoutService,
        name: "service-refusal-without-service",
        breaks: "a host-service refusal omits details.service (HOOKS-AUTH-5)",
    },
    MutantInfo {
        mutant: Mutant::ServiceRefusalReasonSnake,
        name: "service-refusal-reason-snake",
        breaks: "a host-service refusal's details.reason is snake_case (private_address) (HOOKS-AUTH-5)",
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::http_client::BlockReason;

    fn parse(value: Value) -> Result<SafeFetchRequest, ApiError> {
        SafeFetchRequest::parse(value.to_string().as_bytes())
    }

    #[test]
    fn minimal_and_full_requests_parse() {
        let minimal = parse(json!({"url": "http://127.0.0.1:9/x"})).expect("valid");
        assert_eq!(minimal.init.method, Method::Get);
        assert!(minimal.init.body.is_none());
        let full = parse(json!({"url": "http://127.0.0.1:9/x", "init": {
            "method": "POST", "headers": {"x-a": "1"}, "body": "{}"}}))
        .expect("valid");
        assert_eq!(full.init.method, Method::Post);
        assert_eq!(full.init.headers["x-a"], "1");
        assert_eq!(full.init.body.as_deref(), Some("{}"));
        assert_eq!(full.raw_url, "http://127.0.0.1:9/x");
    }

    #[test]
    fn problems_name_the_field() {
        let cases = [
            (json!({}), "`url`"),
            (json!({"url": 3}), "`url`"),
            (json!({"url": "not a url"}), "`url`"),
            (
                json!({"url": format!("http://127.0.0.1/{}", "a".repeat(2100))}),
                "`url`",
            ),
            (json!({"url": "http://127.0.0.1/", "extra": 1}), "`extra`"),
            (json!({"url": "http://127.0.0.1/", "init": []}), "`init`"),
            (
                json!({"url": "http://127.0.0.1/", "init": {"x": 1}}),
                "`init.x`",
            ),
            (
                json!({"url": "http://127.0.0.1/", "init": {"method": "PUT"}}),
                "`init.method`",
            ),
            (
                json!({"url": "http://127.0.0.1/", "init": {"headers": {"a": 1}}}),
                "`init.headers.a`",
            ),
            (
                json!({"url": "http://127.0.0.1/", "init": {"headers": {"host": "x"}}}),
                "`init.headers.host`",
            ),
            (
                json!({"url": "http://127.0.0.1/", "init": {"body": "x"}}),
                "`init.body`",
            ),
            (
                json!({"url": "http://127.0.0.1/", "init": {"method": "POST", "body": 1}}),
                "`init.body`",
            ),
        ];
        for (body, field) in cases {
            let err = parse(body.clone()).expect_err("rejected");
            assert_eq!(err.code, crate::domain::error::ErrorCode::ValidationError);
            assert!(err.message.contains(field), "{body}: {}", err.message);
        }
        // The URL itself is never echoed.
        let err = parse(json!({"url": "secret-token, not a URL"})).expect_err("rejected");
        assert!(!err.message.contains("secret-token"), "{}", err.message);
        // Any absolute URL parses: whether it is fetched is the guard's call.
        assert!(parse(json!({"url": "gopher://10.0.0.1/"})).is_ok());
    }

    #[test]
    fn blocked_returns_carry_service_and_kebab_reason_unless_mutated() {
        let blocked = Blocked {
            reason: BlockReason::PrivateAddress,
            message: "safeFetch refused address 10.0.0.1: it is a private address".into(),
        };
        let details = |mutant| {
            let ret = blocked_return(&blocked, mutant);
            assert_eq!(ret.status, ToolStatus::Forbidden);
            assert_eq!(ret.duration_ms, None);
            serde_json::to_value(ret.error).expect("ser")["details"].clone()
        };
        assert_eq!(
            details(None),
            json!({"service": "http", "reason": "private-address"})
        );
        assert_eq!(
            details(Some(Mutant::ServiceRefusalWithoutService)),
            json!({"reason": "private-address"})
        );
        assert_eq!(
            details(Some(Mutant::ServiceRefusalReasonSnake)),
            json!({"service": "http", "reason": "private_address"})
        );
    }
}
