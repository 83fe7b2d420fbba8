//! Tool sessions: one catalog tool, opened, called once and closed, in a
//! run of its own (RFC 0078 §D, CAT-13; the `tools/session-run` seam).
//!
//! The run's log is the bracket the rule asks for:
//!
//! 1. `run.started` (content-free);
//! 2. `tool.session-opened {sessionId, toolId}`;
//! 3. `agent.tool-called` and `agent.tool-returned` for one call of the
//!    tool with `{}` (content-free: an `argsHash`, never the arguments);
//! 4. `tool.session-closed {sessionId, toolId, outcome}`, `outcome`
//!    `completed` when the call succeeded and `failed` when it did not
//!    (the schema's enum, C-24: never the seam text's `aborted`/`expired`);
//! 5. `run.completed {result: {sessionId, toolId, outcome}}`.
//!
//! Session events carry no arguments, results or credentials: the tool's
//! answer is read (bounded) and dropped. The host advertises
//! `toolCatalog.sessionLifecycle: true`, so these events are allowed.

use std::sync::Arc;

use reqwest::Url;
use serde_json::{Value, json};

use crate::base::args_hash::args_hash;
use crate::base::events::{
    NewEvent, TOOL_CALLED, TOOL_RETURNED, TOOL_SESSION_CLOSED, TOOL_SESSION_OPENED,
};
use crate::base::mutant::{Mutant, MutantInfo};
use crate::base::principals::Principal;
use crate::base::tool_events::{
    CallPayload, ReturnPayload, SYSTEM_AGENT_ID, ToolErrorCode, ToolReturn, ToolStatus, Transport,
};
use crate::domain::Domain;
use crate::domain::catalog::{FixtureTool, ToolEndpoint, caller_scopes_of};
use crate::domain::error::ApiError;
use crate::domain::invoker::InvokeResult;
use crate::domain::workflows::{begin_run, end_run, new_run_id};

/// What a session run did, as the seam answers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRun {
    /// The run holding the bracket.
    pub run_id: String,
    /// The session's id (`ses_` + uuid).
    pub session_id: String,
    /// The tool the session was opened for.
    pub tool_id: String,
    /// `completed` or `failed`.
    pub outcome: &'static str,
}

/// The tool a session opens and the receiver that plays it: `tool_id`
/// when named (a tool the caller may invoke in its own tenant, else the
/// catalog's non-disclosing 404), or the caller's first catalog tool played
/// by a receiver.
fn session_tool(
    state: &Domain,
    caller: &Principal,
    tool_id: Option<&str>,
) -> Result<(Arc<FixtureTool>, Url), ApiError> {
    let scopes = caller_scopes_of(caller)?;
    let receiver_of = |tool: &FixtureTool| match &tool.endpoint {
        ToolEndpoint::Receiver(url) => Some(url.clone()),
        _ => None,
    };
    let catalog = state.catalog();
    let Some(id) = tool_id else {
        return catalog
            .visible(Some(&caller.tenant), Some(&scopes))
            .into_iter()
            .find_map(|tool| receiver_of(&tool).map(|url| (tool, url)))
            .ok_or_else(|| {
                ApiError::validation(
                    "this caller has no catalog tool played by a receiver to open a session for; register one with the turn seam first, or name `toolId`",
                )
            });
    };
    let tool = catalog
        .visible_tool(Some(&caller.tenant), id, &scopes)
        .ok_or_else(|| {
            ApiError::not_found(format!(
                "no tool `{id}` for this caller; list the tools you may invoke with GET /tools"
            ))
        })?;
    let url = receiver_of(&tool).ok_or_else(|| {
        ApiError::validation(format!(
            "tool `{id}` is not played by a receiver; a session runs receiver tools only (name another `toolId`)"
        ))
    })?;
    Ok((tool, url))
}

/// Opens a session for one tool of the caller, calls it once with `{}`
/// and closes the session, in a new run of the caller's tenant.
pub async fn run_session(
    state: &Domain,
    caller: &Principal,
    tool_id: Option<&str>,
) -> Result<SessionRun, ApiError> {
    let (tool, receiver) = session_tool(state, caller, tool_id)?;
    let mutant = state.mutant();
    let run_id = new_run_id();
    begin_run(
        state,
        &run_id,
        &caller.id,
        &caller.tenant,
        json!({"agentId": SYSTEM_AGENT_ID, "principal": caller.id, "service": "tool.session"}),
    )?;
    let session_id = format!("ses_{}", uuid::Uuid::new_v4().simple());
    let opened = json!({"sessionId": session_id, "toolId": tool.tool_id});
    let append = |event_type: &'static str, payload: Value| {
        state
            .storage()
            .append_event(&run_id, NewEvent::new(event_type, payload))
    };
    append(TOOL_SESSION_OPENED, opened)?;

    let args = json!({});
    let call_id = format!("call_{}", uuid::Uuid::new_v4().simple());
    let call = CallPayload {
        agent_id: Some(SYSTEM_AGENT_ID.to_owned()),
        tool_name: tool.tool_id.clone(),
        call_id: call_id.clone(),
        args_hash: args_hash(&args, &args, mutant)
            .map_err(|_| ApiError::internal("the call could not be hashed; retry the request"))?,
        principal: Some(caller.id.clone()),
        transport: Transport::Http,
        inputs: None,
    };
    // The close's payload, and the run's result.
    let closed_payload = |outcome: &str| json!({"sessionId": session_id, "toolId": tool.tool_id, "outcome": outcome});
    // Bug under `session-empty-bracket`: the session is closed before the
    // call, so the bracket encloses none.
    if mutant == Some(Mutant::SessionEmptyBracket) {
        append(TOOL_SESSION_CLOSED, closed_payload("completed"))?;
    }
    append(TOOL_CALLED, to_value(&call)?)?;
    let called = state
        .invoker()
        .invoke_for_data(Some(&receiver), &args, state.default_tool_timeout())
        .await;
    let duration_ms = called.invocation.duration_ms;
    let ret = match called.invocation.result {
        InvokeResult::Succeeded => ToolReturn::ok(duration_ms),
        InvokeResult::Failed { code, message } => ToolReturn::failed(
            ToolStatus::Error,
            ToolErrorCode::from_receiver(code, mutant),
            message,
            Some(duration_ms),
        ),
    };
    let outcome = if ret.status == ToolStatus::Ok {
        "completed"
    } else {
        "failed"
    };
    let returned = ReturnPayload {
        agent_id: Some(SYSTEM_AGENT_ID.to_owned()),
        tool_name: tool.tool_id.clone(),
        call_id,
        status: ret.status,
        duration_ms: ret.duration_ms,
        error: ret.error,
        outcome: None,
        transport: None,
        principal: None,
    };
    append(TOOL_RETURNED, to_value(&returned)?)?;

    if mutant != Some(Mutant::SessionEmptyBracket) {
        let mut closed = closed_payload(outcome);
        // Bug under `session-close-unmatched`: the close names a session
        // id no opened event carries.
        if mutant == Some(Mutant::SessionCloseUnmatched) {
            closed["sessionId"] = json!(format!("ses_{}", uuid::Uuid::new_v4().simple()));
        }
        // Bug under `session-carries-content`: the close carries the
        // tool's arguments and its answer (content in a content-free
        // event).
        if mutant == Some(Mutant::SessionCarriesContent) {
            closed["arguments"] = args.clone();
            closed["result"] = json!(String::from_utf8_lossy(&called.body));
        }
        // Bug under `session-outcome-off-enum`: the seam text's `aborted`
        // instead of the schema's `failed`/`completed` (C-24).
        if mutant == Some(Mutant::SessionOutcomeOffEnum) {
            closed["outcome"] = json!("aborted");
        }
        append(TOOL_SESSION_CLOSED, closed)?;
    }
    end_run(state, &run_id, Ok(closed_payload(outcome)))?;
    Ok(SessionRun {
        run_id,
        session_id,
        tool_id: tool.tool_id.clone(),
        outcome,
    })
}

fn to_value<T: serde::Serialize>(value: &T) -> Result<Value, ApiError> {
    serde_json::to_value(value)
        .map_err(|_| ApiError::internal("an event could not be written; retry the request"))
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[
    MutantInfo {
        mutant: Mutant::SessionEmptyBracket,
        name: "session-empty-bracket",
        breaks: "tools/session-run closes the session before its call, so the bracket encloses no call/return pair",
    },
    MutantInfo {
        mutant: Mutant::SessionCloseUnmatched,
        name: "session-close-unmatched",
        breaks: "tool.session-closed names a sessionId no tool.session-opened carries",
    },
    MutantInfo {
        mutant: Mutant::SessionCarriesContent,
        name: "session-carries-content",
        breaks: "tool.session-closed carries the call's arguments and the tool's answer",
    },
    MutantInfo {
        mutant: Mutant::SessionOutcomeOffEnum,
        name: "session-outcome-off-enum",
        breaks: "tool.session-closed outcome is `aborted` (seam text) instead of completed|failed|cancelled",
    },
];
