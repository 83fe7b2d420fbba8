//! Serving a `mode: "replay"` fork's tool emissions from the source run's
//! record (TTC §D, TURN-D5, TURN-D6; RPL-6, RPL-10).
//!
//! Nothing is dispatched and no gate runs: the fork writes the call and the
//! recorded return byte for byte, feeds the recorded result back, and keeps
//! its own record. A miss fails the node with `replay_source_missing`.
//! Recovery of a live run (same attempt) is [`crate::turn::recovery`].

use serde_json::{Value, json};

use crate::base::events::{NewEvent, TOOL_RETURNED};
use crate::base::mutant::{Mutant, MutantInfo};
use crate::base::tool_events::{
    HOST_AGENT_ID, ReturnPayload, ToolErrorCode, ToolReturn, ToolStatus,
};
use crate::turn::Outcome;
use crate::turn::admission::error::AdmissionError;
use crate::turn::admission::{
    Admitted, Journal, NodeHalt, REPLAY_SOURCE_MISSING, TurnScope, append_return, outcome_named,
    record_call, returned_fields,
};
use crate::turn::channels::minted_call_id;
use crate::turn::feedback::{self, CallToolResult, ToolResult};
use crate::turn::provider::ToolEmission;
use crate::turn::records;

/// Serves one emission of a `mode: "replay"` fork from the source run's
/// record (TURN-D5): `agent.tool-called`, then `agent.tool-returned` with the
/// recorded `status`, `durationMs` and `error` byte for byte
/// (HOOKS-AUDIT-4, HOOKS-FAIL-6), and the recorded result fed back. Nothing
/// is dispatched and no gate runs. A miss (no record, an intent only, or a
/// digest) returns `replay_source_missing` and fails the node (TURN-D6).
pub fn serve_replay(
    scope: &TurnScope<'_>,
    emission: &ToolEmission,
    source: Option<records::ToolRecord>,
    journal: &Journal,
) -> Result<Admitted, AdmissionError> {
    let mutant = scope.state.mutant();
    let call_id = if emission.id.is_empty() {
        minted_call_id()
    } else {
        emission.id.clone()
    };
    let call_event_id = record_call(scope, journal, emission, &call_id)?;
    let mut mrtr = None;
    let served = match source {
        Some(records::ToolRecord::Recorded(record)) => {
            // RPL-10: an MCP call's recorded answers are part of the
            // record; the fork keeps them and never asks again.
            mrtr = record.mrtr;
            Some((
                record.returned,
                record.result,
                outcome_named(&record.outcome),
            ))
        }
        // Bug under `oversized-served-on-replay`: the digest stands in for
        // the result (TURN-D10 says it is a miss).
        Some(records::ToolRecord::Digest(digest))
            if mutant == Some(Mutant::OversizedServedOnReplay) =>
        {
            Some((
                json!({"status": "ok"}),
                CallToolResult::success(&digest),
                Outcome::Executed,
            ))
        }
        _ => None,
    };
    let from_record = served.is_some();
    let (mut returned, result, outcome, halt) = match served {
        Some((returned, result, outcome)) => (returned, result, outcome, None),
        // Bug under `replay-miss-empty-success`: a success is synthesized.
        None if mutant == Some(Mutant::ReplayMissEmptySuccess) => (
            json!({"status": "ok"}),
            CallToolResult::success(&Value::Null),
            Outcome::Executed,
            None,
        ),
        None => {
            let message = format!(
                "the source run has no usable record of tool emission {} (`{}`), so the replay cannot serve it and does not execute it (TURN-D6)",
                journal.ordinal, emission.name
            );
            let ret = ToolReturn::failed(
                ToolStatus::Error,
                ToolErrorCode::ReplaySourceMissing,
                message.clone(),
                None,
            );
            let payload = serde_json::to_value(ReturnPayload {
                agent_id: None,
                tool_name: String::new(),
                call_id: String::new(),
                status: ret.status,
                duration_ms: None,
                error: ret.error,
                outcome: None,
                transport: None,
                principal: None,
            })?;
            let result =
                CallToolResult::failure(feedback::failed_text(&emission.name, &message), mutant);
            let halt = NodeHalt {
                code: REPLAY_SOURCE_MISSING,
                message,
            };
            (
                returned_fields(&payload),
                result,
                Outcome::Invalid,
                Some(halt),
            )
        }
    };
    if halt.is_none() {
        if mutant == Some(Mutant::ReplayDurationRecomputed)
            && let Some(fields) = returned.as_object_mut()
            && fields.contains_key("durationMs")
        {
            // Bug: the serve is timed afresh (0 ms) instead of copying the
            // recorded duration.
            fields.insert("durationMs".to_owned(), json!(0));
        }
        if mutant == Some(Mutant::ReplayErrorReworded)
            && let Some(message) = returned.pointer_mut("/error/message")
            && let Some(text) = message.as_str()
        {
            // Bug: the recorded message is re-rendered.
            *message = Value::String(format!("replayed: {text}"));
        }
    }
    let mut payload = json!({
        "agentId": HOST_AGENT_ID,
        "toolName": emission.name,
        "callId": call_id,
    });
    if let (Some(object), Some(fields)) = (payload.as_object_mut(), returned.as_object()) {
        for (name, value) in fields {
            object.insert(name.clone(), value.clone());
        }
        // Bug under `fork-events-annotated`: a served return is marked as
        // replayed, so it is no longer byte-equivalent to the source's
        // (RPL-6). Only the event is annotated, never the fork's record.
        if from_record && mutant == Some(Mutant::ForkEventsAnnotated) {
            object.insert("replayed".to_owned(), Value::Bool(true));
        }
    }
    // The fork keeps its own record too, so a fork of the fork (or its own
    // recovery) can be served.
    let record = records::Recorded {
        tool_name: emission.name.clone(),
        call_id: call_id.clone(),
        called_event_id: call_event_id.clone(),
        outcome: outcome.as_str().to_owned(),
        returned,
        result: result.clone(),
        mrtr,
    };
    let row = records::RecordRow::of(&record, journal.record_limit)?;
    let write = journal.enabled && halt.is_none();
    let event = NewEvent::new(TOOL_RETURNED, payload).caused_by(Some(call_event_id));
    append_return(scope, journal, event, &row, write)?;
    Ok(Admitted {
        outcome,
        result: ToolResult { call_id, result },
        transient: None,
        halt,
        deferred: None,
    })
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[
    MutantInfo {
        mutant: Mutant::OversizedServedOnReplay,
        name: "oversized-served-on-replay",
        breaks: "a digest (oversized) record is served on replay or recovery, its digest object fed back as the result (TURN-D10)",
    },
    MutantInfo {
        mutant: Mutant::ReplayMissEmptySuccess,
        name: "replay-miss-empty-success",
        breaks: "a replay miss is served as status ok with a null result and the fork completes (TURN-D6, RPL-3)",
    },
    MutantInfo {
        mutant: Mutant::ReplayDurationRecomputed,
        name: "replay-duration-recomputed",
        breaks: "a replayed return carries a freshly measured durationMs instead of the recorded one (HOOKS-AUDIT-4, RPL-6)",
    },
    MutantInfo {
        mutant: Mutant::ReplayErrorReworded,
        name: "replay-error-reworded",
        breaks: "a replayed return's recorded error message is re-rendered with a `replayed: ` prefix (HOOKS-FAIL-6, RPL-6)",
    },
    MutantInfo {
        mutant: Mutant::ForkEventsAnnotated,
        name: "fork-events-annotated",
        breaks: "a replay fork's served tool returns carry an extra replayed: true field (RPL-6)",
    },
];
