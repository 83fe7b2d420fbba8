//! The tool-session seam: `POST /conformance/seams/sample/tools/session-run
//! {toolId?}` → `201 {runId, sessionId, toolId}` (RFC 0078 §D, CAT-13).
//!
//! The session itself is [`crate::domain::tool_session`]: one run that
//! opens a session for the tool, calls it once and closes it. A named tool
//! the caller may not invoke in its tenant is the catalog's 404.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::json;

use crate::domain::Domain;
use crate::domain::error::{ApiError, json_response};
use crate::domain::json_body::{Fields, parse_object};
use crate::domain::tool_session::run_session;
use crate::surface::seams::extract::SeamRequest;

/// Every member the request may carry (closed).
const FIELDS: &[&str] = &["toolId"];

/// Handler for the seam.
pub async fn run(State(state): State<Domain>, seam: SeamRequest) -> Result<Response, ApiError> {
    let caller = &seam.caller;
    let body = seam.body;
    // An empty body names no tool, like `{}`.
    let tool_id = if body.iter().all(u8::is_ascii_whitespace) {
        None
    } else {
        Fields::closed(parse_object(&body)?, FIELDS)?.optional_string("toolId")?
    };
    let session = run_session(&state, caller, tool_id.as_deref()).await?;
    Ok(json_response(
        StatusCode::CREATED,
        &json!({
            "runId": session.run_id,
            "sessionId": session.session_id,
            "toolId": session.tool_id,
            "outcome": session.outcome,
        }),
    ))
}
