//! Resolving approval interrupts over HTTP (TTC §C).
//!
//! - `POST /runs/{runId}/interrupts/{nodeId}` (authenticated): only the
//!   acting principal bound to the interrupt may resolve it. Anyone else,
//!   whatever scopes or tenant, gets 403 and the interrupt stays open.
//! - `POST /interrupts/{token}` (the signed link, authentication ignored):
//!   a link is delegated authority, and TTC §C forbids delegation when the
//!   turn consumed untrusted content (read-then-egress must reach the bound
//!   human), so on an untrusted turn it is a 403 and the interrupt stays
//!   open; on a trusted turn it resolves like the bound principal would.
//!
//! Unknown runs, unknown nodes and runs without an open interrupt are one
//! and the same 404. Bodies are `{"resumeValue": {"action": "accept" |
//! "reject"}}` for an approval, closed
//! (schemas/seams/interrupt-resolve.request.schema.json), and
//! `{"answers": {...}}` for a clarification (TURN-E1, closed too); the
//! other kind's body is a 400 naming the member the open interrupt needs.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::{Map, Value, json};

use crate::base::content_trust::ContentTrust;
use crate::base::mutant::{Mutant, MutantInfo};
use crate::domain::Domain;
use crate::domain::auth::authenticate;
use crate::domain::error::{ApiError, json_response};
use crate::domain::interrupts::{Action, InterruptKind, Resolution, ResolveError, Ticket, Via};
use crate::domain::json_body::{Fields, body_rejection, parse_object};

/// `details.reason` of a link token refused on an untrusted turn.
pub const UNTRUSTED_LINK_REASON: &str = "untrusted-turn-requires-bound-principal";

/// `details.reason` of a principal that is not the bound one.
pub const NOT_BOUND_REASON: &str = "bound-principal-only";

/// Parses `{"resumeValue": {"action": "accept" | "reject"}}` (closed).
pub fn parse_resume(body: &[u8]) -> Result<Action, ApiError> {
    let mut fields = Fields::closed(parse_object(body)?, &["resumeValue"])?;
    let resume = fields.required_object("resumeValue")?;
    let mut resume = Fields::closed_at("resumeValue", resume, &["action"])?;
    let action = resume
        .optional_enum("action", Action::NAMES)?
        .ok_or_else(|| {
            ApiError::validation("field `resumeValue.action` is required (one of accept, reject)")
        })?;
    // `optional_enum` only returns listed names, which all parse.
    Ok(Action::parse(action).unwrap_or(Action::Reject))
}

/// Parses a clarification answer, `{"answers": {...}}` (closed; any object).
pub fn parse_answers(body: &[u8]) -> Result<Value, ApiError> {
    let mut fields = Fields::closed(parse_object(body)?, &["answers"])?;
    Ok(Value::Object(fields.required_object("answers")?))
}

/// The body for the open interrupt's kind: an approval takes
/// `resumeValue`, a clarification or an MCP input request `answers` (a body
/// with `resumeValue` stays the approval path and is refused for those).
/// An `mcp-input` answer must carry every key the MCP tool asked for
/// (`input_keys`, EFF-12); a missing one is a 400 naming it, and the
/// interrupt stays open.
fn parse_for(
    kind: InterruptKind,
    input_keys: &[String],
    body: &[u8],
) -> Result<(Action, Option<Value>), ApiError> {
    let has_answers = serde_json::from_slice::<Value>(body)
        .ok()
        .is_some_and(|value| value.get("answers").is_some());
    match (kind, has_answers) {
        (InterruptKind::Clarification, true) => Ok((Action::Accept, Some(parse_answers(body)?))),
        (InterruptKind::McpInput, true) => {
            let answers = parse_answers(body)?;
            if let Some(missing) = input_keys.iter().find(|key| answers.get(key).is_none()) {
                return Err(ApiError::validation(format!(
                    "field `answers.{missing}` is required: the MCP tool asked for input `{missing}` (EFF-12); answer every key of the interrupt's inputRequests"
                )));
            }
            Ok((Action::Accept, Some(answers)))
        }
        (InterruptKind::Clarification | InterruptKind::McpInput, false) => {
            Err(ApiError::validation(format!(
                "field `answers` is required: the open interrupt is a {} (TURN-E1, EFF-12); send {{\"answers\": {{...}}}}",
                kind.as_str()
            )))
        }
        (InterruptKind::Approval, true) => Err(ApiError::validation(
            "field `answers` answers a clarification, but the open interrupt is an approval; send {\"resumeValue\": {\"action\": \"accept\" | \"reject\"}}",
        )),
        (InterruptKind::Approval, false) => Ok((parse_resume(body)?, None)),
    }
}

/// The one 404 for "nothing to resolve here".
fn not_open(run_id: &str, node_id: &str) -> ApiError {
    ApiError::not_found(format!(
        "run `{run_id}` has no open interrupt at node `{node_id}`; resolve an interrupt announced by an `interrupt.requested` event that is still open"
    ))
}

/// A 403 with `details.reason`.
fn forbidden(message: String, reason: &str) -> ApiError {
    let mut details = Map::new();
    details.insert("reason".to_owned(), Value::from(reason));
    ApiError::forbidden(message).with_details(details)
}

/// Handler for `POST /runs/{runId}/interrupts/{nodeId}`.
pub async fn resolve_at_node(
    State(state): State<Domain>,
    Path((run_id, node_id)): Path<(String, String)>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let caller = authenticate(&headers, state.principals())?;
    let ticket = state
        .interrupts()
        .ticket(&run_id)
        .filter(|ticket| ticket.node_id == node_id)
        .ok_or_else(|| not_open(&run_id, &node_id))?;
    // TTC §C: the gate resolves only by the acting authenticated principal
    // bound to the interrupt. Scopes do not make anyone else an approver,
    // and neither does being an approver in another tenant.
    // Bug under `approval-by-any-principal`: anyone logged in may resolve.
    let bound = caller.id == ticket.bound_principal;
    if !bound && !state.mutant_is(Mutant::ApprovalByAnyPrincipal) {
        return Err(forbidden(
            format!(
                "principal `{}` may not resolve this interrupt: only the run's acting principal it is bound to may (TTC §C); the interrupt stays open",
                caller.id
            ),
            NOT_BOUND_REASON,
        ));
    }
    let body = body.map_err(|rejection| body_rejection(&rejection))?;
    let (action, answers) = parse_for(ticket.kind, &ticket.input_keys, &body)?;
    let resolution = Resolution {
        action,
        answers,
        by: caller.id.clone(),
        via: Via::Principal,
    };
    resolve(&state, &ticket, resolution)
}

/// Handler for `POST /interrupts/{token}`: the signed link. Any
/// `Authorization` header is ignored: the token is the only credential.
pub async fn resolve_by_link(
    State(state): State<Domain>,
    Path(token): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let ticket = state.interrupts().ticket_by_token(&token).ok_or_else(|| {
        ApiError::not_found(
            "the link names no open interrupt (unknown, forged, already resolved or expired)",
        )
    })?;
    // TTC §C: an untrusted turn's interrupt resolves only by the bound
    // principal, never through an emailed or delegated link.
    // Bug under `approval-via-link-untrusted`: the link works regardless.
    if ticket.content_trust == ContentTrust::Untrusted
        && !state.mutant_is(Mutant::ApprovalViaLinkUntrusted)
    {
        return Err(forbidden(
            format!(
                "the turn that emitted this call consumed untrusted content, so a link cannot resolve it; principal `{}` must resolve it at POST /runs/{}/interrupts/{} (TTC §C); the interrupt stays open",
                ticket.bound_principal, ticket.run_id, ticket.node_id
            ),
            UNTRUSTED_LINK_REASON,
        ));
    }
    let body = body.map_err(|rejection| body_rejection(&rejection))?;
    // Following the link is the accept; a body may still say reject.
    let action = if body.iter().all(u8::is_ascii_whitespace) {
        Action::Accept
    } else {
        parse_resume(&body)?
    };
    let resolution = Resolution {
        action,
        answers: None,
        by: ticket.bound_principal.clone(),
        via: Via::LinkToken,
    };
    resolve(&state, &ticket, resolution)
}

/// Resolves and answers `200 {runId, nodeId, callId, action, by}`.
fn resolve(state: &Domain, ticket: &Ticket, resolution: Resolution) -> Result<Response, ApiError> {
    let action = resolution.action;
    let by = resolution.by.clone();
    match state
        .interrupts()
        .resolve(state.storage(), ticket, resolution)
    {
        Ok(_) => Ok(json_response(
            StatusCode::OK,
            &match ticket.kind {
                InterruptKind::Approval => json!({
                    "runId": ticket.run_id,
                    "nodeId": ticket.node_id,
                    "callId": ticket.call_id,
                    "action": action.as_str(),
                    "by": by,
                }),
                InterruptKind::Clarification | InterruptKind::McpInput => json!({
                    "runId": ticket.run_id,
                    "nodeId": ticket.node_id,
                    "callId": ticket.call_id,
                    "kind": ticket.kind.as_str(),
                    "by": by,
                }),
            },
        )),
        // Someone else resolved it (or it expired) since it was looked up.
        Err(ResolveError::NotOpen) => Err(not_open(&ticket.run_id, &ticket.node_id)),
        Err(ResolveError::Storage(err)) => Err(err.into()),
    }
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[
    MutantInfo {
        mutant: Mutant::ApprovalByAnyPrincipal,
        name: "approval-by-any-principal",
        breaks: "any authenticated principal may resolve an approval interrupt, not only the bound one",
    },
    MutantInfo {
        mutant: Mutant::ApprovalViaLinkUntrusted,
        name: "approval-via-link-untrusted",
        breaks: "the signed link token resolves interrupts of untrusted turns too",
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::error::ErrorCode;

    #[test]
    fn resume_bodies_are_closed_and_name_the_field() {
        assert_eq!(
            parse_resume(br#"{"resumeValue": {"action": "accept"}}"#).expect("ok"),
            Action::Accept
        );
        assert_eq!(
            parse_resume(br#"{"resumeValue": {"action": "reject"}}"#).expect("ok"),
            Action::Reject
        );
        for (body, field) in [
            (&br#"{}"#[..], "resumeValue"),
            (br#"{"resumeValue": 1}"#, "resumeValue"),
            (br#"{"resumeValue": {}, "x": 1}"#, "x"),
            (br#"{"resumeValue": {}}"#, "resumeValue.action"),
            (
                br#"{"resumeValue": {"action": "approve"}}"#,
                "resumeValue.action",
            ),
            (
                br#"{"resumeValue": {"action": null}}"#,
                "resumeValue.action",
            ),
            (
                br#"{"resumeValue": {"action": "accept", "approved": true}}"#,
                "resumeValue.approved",
            ),
        ] {
            let err = parse_resume(body).unwrap_err();
            assert_eq!(err.code, ErrorCode::ValidationError);
            assert!(
                err.message.contains(&format!("`{field}`")),
                "{field}: {}",
                err.message
            );
        }
        assert_eq!(
            parse_resume(b"").unwrap_err().code,
            ErrorCode::ValidationError
        );
    }

    #[test]
    fn mcp_input_answers_must_carry_every_requested_key() {
        let keys = ["city".to_owned(), "units".to_owned()];
        let ok = parse_for(
            InterruptKind::McpInput,
            &keys,
            br#"{"answers": {"city": "Oslo", "units": "metric", "extra": 1}}"#,
        )
        .expect("every key");
        assert_eq!(ok.0, Action::Accept);
        let err = parse_for(
            InterruptKind::McpInput,
            &keys,
            br#"{"answers": {"city": "Oslo"}}"#,
        )
        .unwrap_err();
        assert_eq!(err.code, ErrorCode::ValidationError);
        assert!(err.message.contains("`answers.units`"), "{}", err.message);
        let err = parse_for(
            InterruptKind::McpInput,
            &keys,
            br#"{"resumeValue": {"action": "accept"}}"#,
        )
        .unwrap_err();
        assert!(err.message.contains("`answers`"), "{}", err.message);
    }

    #[test]
    fn bodies_must_fit_the_open_interrupts_kind() {
        let answered = parse_for(
            InterruptKind::Clarification,
            &[],
            br#"{"answers": {"a": 1}}"#,
        )
        .expect("answers");
        assert_eq!(answered.1, Some(serde_json::json!({"a": 1})));
        for (kind, body, field) in [
            (
                InterruptKind::Clarification,
                &br#"{"resumeValue": {"action": "accept"}}"#[..],
                "answers",
            ),
            (
                InterruptKind::Clarification,
                br#"{"answers": 1}"#,
                "answers",
            ),
            (
                InterruptKind::Clarification,
                br#"{"answers": {}, "x": 1}"#,
                "x",
            ),
            (InterruptKind::Approval, br#"{"answers": {}}"#, "answers"),
        ] {
            let err = parse_for(kind, &[], body).unwrap_err();
            assert_eq!(err.code, ErrorCode::ValidationError);
            assert!(
                err.message.contains(&format!("`{field}`")),
                "{}",
                err.message
            );
        }
    }
}
