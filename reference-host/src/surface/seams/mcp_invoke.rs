//! The MCP negotiation seam: `POST /conformance/seams/sample/mcp/invoke
//! {serverUrl, requestVersion?}` (MCP-5, MCP-6, MCP-7).
//!
//! One request is one run, attributed to the authenticated caller, in
//! which the host's MCP client negotiates a revision with the server at
//! `serverUrl` ([`crate::turn::negotiation`]):
//!
//! 1. `run.started` (content-free: no URL);
//! 2. `negotiation.decided {protocol: "mcp", peer, requested?, negotiated,
//!    outcome, reason}`, `peer` the SHA-256 of the server's origin;
//! 3. when served, one `server/discover` request to the server with
//!    `MCP-Protocol-Version: <negotiated>`; when refused, nothing is sent;
//! 4. `run.completed {result: {outcome, negotiatedVersion}}`, or
//!    `run.failed {error: {code: "interop_version_unsupported"}}`.
//!
//! The answer is `201 {runId, negotiatedVersion, outcome}`, or for a
//! refusal `400 interop_version_unsupported` with `details {protocol:
//! "mcp", requested, supported[], runId}` (the run id so the refusal's log
//! entry can be read).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use reqwest::Url;
use serde_json::json;

use crate::base::events::NewEvent;
use crate::domain::Domain;
use crate::domain::error::{ApiError, ErrorCode, json_response};
use crate::domain::json_body::{Fields, parse_object};
use crate::domain::workflows::{RunFailure, begin_run, end_run, new_run_id};
use crate::surface::seams::extract::SeamRequest;
use crate::turn::mcp;
use crate::turn::negotiation::{self, NEGOTIATION_DECIDED, decide, decided_payload, is_revision};

/// Every member the request may carry (closed).
const FIELDS: &[&str] = &["serverUrl", "requestVersion"];

/// Longest accepted `serverUrl`.
const MAX_URL_LEN: usize = 2_048;

/// A parsed seam request.
#[derive(Debug)]
struct InvokeRequest {
    server_url: Url,
    request_version: Option<String>,
}

impl InvokeRequest {
    /// Parses and checks the body; every problem is a 400 naming the field.
    fn parse(body: &[u8]) -> Result<Self, ApiError> {
        let mut fields = Fields::closed(parse_object(body)?, FIELDS)?;
        let raw = fields.required_string("serverUrl")?;
        if raw.chars().count() > MAX_URL_LEN {
            return Err(ApiError::validation(format!(
                "field `serverUrl` is longer than {MAX_URL_LEN} characters; send a shorter URL"
            )));
        }
        let server_url = Url::parse(&raw)
            .ok()
            .filter(|url| matches!(url.scheme(), "http" | "https") && url.host().is_some())
            .ok_or_else(|| {
                ApiError::validation(
                    "field `serverUrl` must be an absolute http(s) URL (e.g. http://127.0.0.1:8080/mcp)",
                )
            })?;
        let request_version = fields.optional_string("requestVersion")?;
        if let Some(version) = &request_version
            && !is_revision(version)
        {
            return Err(ApiError::validation(
                "field `requestVersion` must be an MCP revision date YYYY-MM-DD (e.g. 2026-07-28)",
            ));
        }
        Ok(Self {
            server_url,
            request_version,
        })
    }
}

/// Handler for the seam.
pub async fn invoke(State(state): State<Domain>, seam: SeamRequest) -> Result<Response, ApiError> {
    let caller = &seam.caller;
    let request = InvokeRequest::parse(&seam.body)?;
    let mutant = state.mutant();
    let decision = decide(request.request_version.as_deref(), mutant);

    let run_id = new_run_id();
    begin_run(
        &state,
        &run_id,
        &caller.id,
        &caller.tenant,
        json!({"principal": caller.id, "service": "mcp.negotiate"}),
    )?;
    let origin = request.server_url.origin().ascii_serialization();
    if let Some(payload) = decided_payload(&decision, &origin, mutant) {
        state
            .storage()
            .append_event(&run_id, NewEvent::new(NEGOTIATION_DECIDED, payload))?;
    }

    let Some(negotiated) = decision.negotiated.clone() else {
        let requested = decision.requested.clone().unwrap_or_default();
        end_run(
            &state,
            &run_id,
            Err(RunFailure {
                code: ErrorCode::InteropVersionUnsupported.as_str(),
                message: "the MCP revision asked for is below mcp.minimumRevision".to_owned(),
            }),
        )?;
        let mut details = negotiation::refusal_details(&requested);
        details.insert("runId".to_owned(), json!(run_id));
        return Err(ApiError::new(
            ErrorCode::InteropVersionUnsupported,
            format!(
                "MCP revision {requested} is below this host's minimumRevision {}; ask for one of {:?}",
                negotiation::MINIMUM_REVISION,
                negotiation::REVISIONS
            ),
        )
        .with_details(details));
    };

    // The exchange itself: one server/discover at the negotiated revision.
    let id = mcp::fresh_id();
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "server/discover", "params": {}});
    let mut sent: Vec<(&str, &str)> = vec![("Accept", "application/json, text/event-stream")];
    if decision.header {
        sent.push(("MCP-Protocol-Version", negotiated.as_str()));
    }
    let exchange = state
        .invoker()
        .post_json_with(
            &request.server_url,
            &body,
            &sent,
            state.default_tool_timeout(),
        )
        .await;
    let reached = matches!(
        exchange,
        crate::domain::invoker::JsonExchange::Answered { .. }
    );
    let outcome = decision.outcome;
    end_run(
        &state,
        &run_id,
        Ok(
            json!({"outcome": outcome.as_str(), "negotiatedVersion": negotiated, "reached": reached}),
        ),
    )?;
    Ok(json_response(
        StatusCode::CREATED,
        &json!({
            "runId": run_id,
            "negotiatedVersion": negotiated,
            "outcome": outcome.as_str(),
            "reached": reached,
        }),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_checked() {
        assert!(InvokeRequest::parse(br#"{"serverUrl": "http://127.0.0.1:1/mcp"}"#).is_ok());
        assert!(InvokeRequest::parse(br#"{"serverUrl": "ftp://x/"}"#).is_err());
        assert!(
            InvokeRequest::parse(
                br#"{"serverUrl": "http://127.0.0.1:1/", "requestVersion": "v1"}"#
            )
            .is_err()
        );
        assert!(InvokeRequest::parse(br#"{"serverUrl": "http://127.0.0.1:1/", "x": 1}"#).is_err());
    }
}
