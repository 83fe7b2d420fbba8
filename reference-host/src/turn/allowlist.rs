//! Forbidden-at-load (HOOKS-AUTH-7, RFC 0064 §C clarification).
//!
//! A turn request may narrow its tools with `toolAllowlist`. An entry equal
//! to a `tools[].toolId` resolves to that tool, and only resolved tools are
//! offered ([`crate::turn::request::TurnRunRequest::tools`]). An entry that
//! resolves to nothing "maps to no approved pack": at loop start, before
//! the first provider request, the host refuses it with ONE
//! `agent.tool-returned` and NO `agent.tool-called`. No call exists, so the
//! return's `callId` is synthesized (`forbidden:` + hex SHA-256 of the ref),
//! it has no `causationId` and no `durationMs`, and it carries the
//! `transport` and `principal` a call event would have carried. The refusal
//! is a host-service refusal (HOOKS-AUTH-5): the generic `forbidden` with
//! `details {service: "tools", reason: "unresolved-ref"}`.
//!
//! The refusals are written once per run: a resumed or retried loop finds
//! them in the log and does not write them again.

use std::collections::HashSet;

use serde_json::{Value, json};

use crate::base::args_hash::{args_hash, sha256_hex};
use crate::base::events::{NewEvent, TOOL_CALLED, TOOL_RETURNED};
use crate::base::mutant::{Mutant, MutantInfo};
use crate::base::tool_events::{
    CallPayload, HOST_AGENT_ID, ReturnPayload, ToolErrorCode, ToolReturn, ToolStatus, Transport,
};
use crate::domain::Domain;
use crate::turn::plan::{INTERNAL_ERROR, RunFailure, TurnPlan};

/// `details.service` of a forbidden-at-load refusal.
pub const SERVICE: &str = "tools";

/// `details.reason` of a forbidden-at-load refusal (lower-kebab).
pub const REASON: &str = "unresolved-ref";

/// The prefix of a synthesized call id.
pub const CALL_ID_PREFIX: &str = "forbidden:";

/// The transport of the refusal: the one the turn path's tool calls use.
pub const TRANSPORT: Transport = Transport::Http;

/// The synthesized `callId` of the refusal of `entry`: `forbidden:` +
/// lowercase hex SHA-256 of its UTF-8 bytes (HOOKS-AUTH-7 recommends it).
pub fn synthesized_call_id(entry: &str) -> String {
    format!("{CALL_ID_PREFIX}{}", sha256_hex(entry.as_bytes()))
}

/// The `agent.tool-returned` payload refusing `entry` for `principal`.
pub fn refusal_payload(entry: &str, principal: &str) -> ReturnPayload {
    let ret = ToolReturn::failed(
        ToolStatus::Forbidden,
        ToolErrorCode::Forbidden,
        format!("allowlist entry {entry} resolves to no approved pack"),
        // Nothing ran: no durationMs.
        None,
    )
    .with_service(Some(SERVICE), Some(REASON.to_owned()));
    ReturnPayload {
        agent_id: Some(HOST_AGENT_ID.to_owned()),
        tool_name: entry.to_owned(),
        call_id: synthesized_call_id(entry),
        status: ret.status,
        duration_ms: ret.duration_ms,
        error: ret.error,
        outcome: None,
        // No call event carries them, so the return does.
        transport: Some(TRANSPORT),
        principal: Some(principal.to_owned()),
    }
}

/// Writes the refusal of every unresolvable entry of `plan` not refused
/// yet in this run, in allowlist order.
pub fn refuse_unresolved(state: &Domain, plan: &TurnPlan) -> Result<(), RunFailure> {
    if plan.unresolved_refs.is_empty() {
        return Ok(());
    }
    let lost = |_| {
        RunFailure::new(
            INTERNAL_ERROR,
            "the host could not record an allowlist refusal, so the run stopped",
        )
    };
    let storage = state.storage();
    let written: HashSet<String> = storage
        .events_after(&plan.run_id, -1)
        .map_err(lost)?
        .into_iter()
        .filter(|event| event.event_type == TOOL_RETURNED)
        .filter_map(|event| event.payload["callId"].as_str().map(str::to_owned))
        .filter(|call_id| call_id.starts_with(CALL_ID_PREFIX))
        .collect();
    for entry in &plan.unresolved_refs {
        let payload = refusal_payload(entry, &plan.principal);
        if written.contains(&payload.call_id) {
            continue;
        }
        if state.mutant_is(Mutant::ForbiddenAtLoadPlaceholderCall) {
            // Bug: a call event no provider response gave rise to
            // (HOOKS-AUTH-7 says never invent one).
            let call = placeholder_call(entry, &plan.principal, state.mutant())?;
            storage
                .append_event(&plan.run_id, NewEvent::new(TOOL_CALLED, call))
                .map_err(lost)?;
        }
        let payload = serde_json::to_value(&payload).map_err(|_| {
            RunFailure::new(
                INTERNAL_ERROR,
                "an allowlist refusal could not be serialized",
            )
        })?;
        // No causationId: there is no call event to point at.
        storage
            .append_event(&plan.run_id, NewEvent::new(TOOL_RETURNED, payload))
            .map_err(lost)?;
    }
    Ok(())
}

/// The `agent.tool-called` the `forbidden-at-load-placeholder-call` mutant
/// invents: the synthesized call id, empty args.
fn placeholder_call(
    entry: &str,
    principal: &str,
    mutant: Option<Mutant>,
) -> Result<Value, RunFailure> {
    let empty = json!({});
    let failed = || RunFailure::new(INTERNAL_ERROR, "a placeholder call could not be hashed");
    let call = CallPayload {
        agent_id: Some(HOST_AGENT_ID.to_owned()),
        tool_name: entry.to_owned(),
        call_id: synthesized_call_id(entry),
        args_hash: args_hash(&empty, &empty, mutant).map_err(|_| failed())?,
        principal: Some(principal.to_owned()),
        transport: TRANSPORT,
        inputs: None,
    };
    serde_json::to_value(&call).map_err(|_| failed())
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[MutantInfo {
    mutant: Mutant::ForbiddenAtLoadPlaceholderCall,
    name: "forbidden-at-load-placeholder-call",
    breaks: "forbidden-at-load mints a placeholder call event (HOOKS-AUTH-7)",
}];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::config::HostConfig;
    use crate::surface::app::AppState;
    use crate::turn::request::TurnRunRequest;

    fn plan(state: &AppState, allowlist: Value) -> TurnPlan {
        let body = json!({
            "principal": "alice",
            "provider": {"wire": "openai-chat", "baseUrl": "http://127.0.0.1:9", "model": "m"},
            "input": "x",
            "toolAllowlist": allowlist,
        });
        let request = TurnRunRequest::parse(body.to_string().as_bytes()).expect("valid");
        state.storage().create_run("run_t", "alice").expect("run");
        TurnPlan::new("run_t".into(), request, state.mutant())
    }

    #[test]
    fn refusals_are_written_once_in_allowlist_order_without_call_events() {
        let state = AppState::new(&HostConfig::default()).expect("state");
        let plan = plan(&state, json!(["b", "a"]));
        refuse_unresolved(&state, &plan).expect("written");
        // A resumed loop finds them and writes nothing more.
        refuse_unresolved(&state, &plan).expect("idempotent");
        let events = state.storage().events_after("run_t", -1).expect("events");
        let names: Vec<(&str, &str)> = events
            .iter()
            .map(|e| {
                (
                    e.event_type.as_str(),
                    e.payload["toolName"].as_str().unwrap_or_default(),
                )
            })
            .collect();
        assert_eq!(names, [(TOOL_RETURNED, "b"), (TOOL_RETURNED, "a")]);
        assert!(events.iter().all(|e| e.causation_id.is_none()));
    }

    #[test]
    fn the_placeholder_mutant_writes_a_call_first() {
        let state = AppState::new(&HostConfig {
            mutant: Some(Mutant::ForbiddenAtLoadPlaceholderCall),
            ..HostConfig::default()
        })
        .expect("state");
        let plan = plan(&state, json!(["gone"]));
        refuse_unresolved(&state, &plan).expect("written");
        let events = state.storage().events_after("run_t", -1).expect("events");
        let types: Vec<&str> = events.iter().map(|e| e.event_type.as_str()).collect();
        assert_eq!(types, [TOOL_CALLED, TOOL_RETURNED]);
        assert_eq!(events[0].payload["callId"], events[1].payload["callId"]);
        assert_eq!(
            events[0].payload["argsHash"],
            crate::base::args_hash::jcs_sha256(&json!({})).expect("hash")
        );
    }

    #[test]
    fn the_refusal_has_a_synthesized_call_id_and_no_duration() {
        let payload = serde_json::to_value(refusal_payload("pack/missing", "alice")).expect("ser");
        assert_eq!(
            payload,
            json!({
                "agentId": "refhost.agent",
                "toolName": "pack/missing",
                "callId": format!("forbidden:{}", sha256_hex(b"pack/missing")),
                "status": "forbidden",
                "transport": "http",
                "principal": "alice",
                "error": {
                    "code": "forbidden",
                    "message": "allowlist entry pack/missing resolves to no approved pack",
                    "details": {"service": "tools", "reason": "unresolved-ref"}
                }
            })
        );
        let call_id = synthesized_call_id("x");
        assert_eq!(call_id.len(), "forbidden:".len() + 64);
        assert!(
            call_id["forbidden:".len()..]
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        );
    }
}
