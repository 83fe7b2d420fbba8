//! The results the MCP server mount answers with: a `CallToolResult`, the
//! `inputRequests` of a clarification, and the Tasks extension's `Task` and
//! `CreateTaskResult` (TURN-E4, MCP-9, MCP-14).
//!
//! A task IS a run: its `taskId` is the run's id ([`task_id_of`]), which is
//! one path segment of `[A-Za-z0-9_]` on this host (`run_` and 128 random
//! bits, [`crate::domain::workflows::new_run_id`]), so the identity.md §5
//! projection leaves it as it is.

use serde_json::{Map, Value, json};

use super::protocol::{RUN_ID_META_KEY, RpcError};
use crate::base::events::{RUN_CANCELLED, RUN_COMPLETED};
use crate::base::mutant::{Mutant, MutantInfo};
use crate::domain::Domain;
use crate::domain::interrupts::{InterruptKind, Ticket};
use crate::store::storage::{RunRecord, RunStatus};

/// Where a run stands after a bounded wait.
#[derive(Debug, Clone, PartialEq)]
pub enum Settled {
    /// `run.completed`: its `result`.
    Completed(Value),
    /// `run.failed`: its error code and message.
    Failed {
        /// `error.code`.
        code: String,
        /// `error.message`.
        message: String,
    },
    /// `run.cancelled`: its reason.
    Cancelled(String),
    /// Waiting on this open interrupt.
    Waiting(Ticket),
    /// Still running when the wait ended.
    StillRunning,
}

/// How a terminal run ended as its record and log say (`None` while it is not terminal),
/// given the payload of its last `run.completed` (completed) or `run.cancelled` (cancelled)
/// event: what a call answers and what a task reads, alike.
pub fn terminal_outcome(run: &RunRecord, terminal: Option<&Value>) -> Option<Settled> {
    match run.status {
        RunStatus::Completed => Some(Settled::Completed(
            terminal
                .and_then(|payload| payload.get("result"))
                .cloned()
                .unwrap_or(Value::Null),
        )),
        RunStatus::Failed => {
            let text = |name: &str| {
                run.error
                    .as_ref()
                    .and_then(|error| error.get(name))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            Some(Settled::Failed {
                code: text("code"),
                message: text("message"),
            })
        }
        RunStatus::Cancelled => Some(Settled::Cancelled(
            terminal
                .and_then(|payload| payload.get("reason"))
                .and_then(Value::as_str)
                .unwrap_or("the run was cancelled")
                .to_owned(),
        )),
        RunStatus::Running | RunStatus::WaitingInput | RunStatus::WaitingApproval => None,
    }
}

/// The elicitation message when the model's question is empty (it never is:
/// the clarification tool requires a non-empty `question`).
pub const FALLBACK_QUESTION: &str = "The agent needs more input to continue.";

/// `pollIntervalMs` of every task: a run's state changes at model speed.
pub const POLL_INTERVAL_MS: u64 = 500;

/// The prefix of a task id under `mcp-task-id-not-run` only.
const NOT_RUN_PREFIX: &str = "task-";

/// The `_meta` of every result about a run.
pub fn run_meta(run_id: &str) -> Value {
    json!({ RUN_ID_META_KEY: run_id })
}

/// A complete result with one text block.
pub fn complete(run_id: Option<&str>, text: &str, is_error: bool) -> Value {
    let mut result = json!({
        "resultType": "complete",
        "content": [{"type": "text", "text": text}],
        "isError": is_error,
    });
    if let (Some(run_id), Some(object)) = (run_id, result.as_object_mut()) {
        object.insert("_meta".to_owned(), run_meta(run_id));
    }
    result
}

/// A tool execution error (`isError: true`).
pub fn tool_error(run_id: Option<&str>, text: &str) -> Value {
    complete(run_id, text, true)
}

/// The `inputRequests` of an open clarification: one `elicitation/create`
/// form request keyed by its node id, whose message is the model's question
/// (the MRTR result's, and an `input_required` task's, MCP-14).
pub fn input_requests(ticket: &Ticket) -> Value {
    let message = ticket
        .question
        .clone()
        .filter(|question| !question.is_empty())
        .unwrap_or_else(|| FALLBACK_QUESTION.to_owned());
    let mut requests = Map::new();
    requests.insert(
        ticket.node_id.clone(),
        json!({
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": message,
                "requestedSchema": {"type": "object"},
            },
        }),
    );
    Value::Object(requests)
}

/// The `taskId` of `run_id`'s task: the run id itself.
pub fn task_id_of(state: &Domain, run_id: &str) -> String {
    // Bug under `mcp-task-id-not-run`: a task id of its own, not the run's.
    if state.mutant_is(Mutant::McpTaskIdNotRun) {
        return format!("{NOT_RUN_PREFIX}{run_id}");
    }
    run_id.to_owned()
}

/// The run a `taskId` names, if it can name one.
pub fn run_id_of(state: &Domain, task_id: &str) -> Option<String> {
    if state.mutant_is(Mutant::McpTaskIdNotRun) {
        return task_id.strip_prefix(NOT_RUN_PREFIX).map(str::to_owned);
    }
    Some(task_id.to_owned())
}

/// The payload of the run's last event of type `event_type`, and the time
/// of its last event.
fn log_view(
    state: &Domain,
    run_id: &str,
    event_type: &str,
) -> Result<(Option<Value>, Option<String>), RpcError> {
    let events = state.storage().events_after(run_id, -1)?;
    let last_at = events.last().map(|event| event.timestamp.clone());
    let payload = events
        .into_iter()
        .rev()
        .find(|event| event.event_type == event_type)
        .map(|event| event.payload);
    Ok((payload, last_at))
}

/// The Task of `run`: `taskId`, `status`, `statusMessage?`, `createdAt`,
/// `lastUpdatedAt`, `ttlMs` (`null`: runs are kept), `pollIntervalMs`; with
/// `detailed`, also `inputRequests` (input_required) or `result`
/// (completed), as `tasks/get` answers it.
pub fn task(
    state: &Domain,
    run: &RunRecord,
    detailed: bool,
) -> Result<Map<String, Value>, RpcError> {
    let run_id = run.run_id.as_str();
    let terminal_event = match run.status {
        RunStatus::Cancelled => RUN_CANCELLED,
        _ => RUN_COMPLETED,
    };
    let (terminal, last_at) = log_view(state, run_id, terminal_event)?;
    let mut out = Map::new();
    out.insert("taskId".into(), json!(task_id_of(state, run_id)));
    let mut detail: Option<(&str, Value)> = None;
    let (status, message) = match terminal_outcome(run, terminal.as_ref()) {
        Some(Settled::Completed(result)) => {
            let text = match result {
                Value::String(text) => text,
                other => other.to_string(),
            };
            detail = Some(("result", complete(Some(run_id), &text, false)));
            ("completed", None)
        }
        Some(Settled::Failed { code, message }) => {
            let message = format!("{code}: {message}");
            detail = Some(("result", tool_error(Some(run_id), &message)));
            ("completed", Some(message))
        }
        Some(Settled::Cancelled(reason)) => ("cancelled", Some(reason)),
        // Not terminal ([`terminal_outcome`] gives nothing else): running, or waiting on an
        // interrupt.
        _ if run.status == RunStatus::Running => ("working", None),
        _ => match state.interrupts().ticket(run_id) {
            // The interrupt was resolved a moment ago; the run goes on.
            None => ("working", None),
            // Bug under `mcp-task-status-working`: the question is not surfaced; the
            // task reads as working and the client never learns what to answer.
            Some(ticket)
                if ticket.kind == InterruptKind::Clarification
                    && !state.mutant_is(Mutant::McpTaskStatusWorking) =>
            {
                detail = Some(("inputRequests", input_requests(&ticket)));
                ("input_required", ticket.question.clone())
            }
            Some(ticket) => (
                "working",
                Some(format!(
                    "held at the host: the run's principal resolves it at POST /runs/{run_id}/interrupts/{}; never over MCP",
                    ticket.node_id
                )),
            ),
        },
    };
    out.insert("status".into(), json!(status));
    if let Some(message) = message {
        out.insert("statusMessage".into(), json!(message));
    }
    out.insert("createdAt".into(), json!(run.created_at));
    out.insert(
        "lastUpdatedAt".into(),
        json!(last_at.unwrap_or_else(|| run.created_at.clone())),
    );
    out.insert("ttlMs".into(), Value::Null);
    out.insert("pollIntervalMs".into(), json!(POLL_INTERVAL_MS));
    if detailed && let Some((name, value)) = detail {
        out.insert(name.into(), value);
    }
    Ok(out)
}

/// The `CreateTaskResult` of a call whose run `run_id` is not terminal
/// (MCP-14): `resultType: "task"` and the Task, with the run in `_meta`.
pub fn create_task_result(state: &Domain, run_id: &str) -> Result<Value, RpcError> {
    let run = state
        .storage()
        .run(run_id)?
        .ok_or_else(|| RpcError::internal(format!("run `{run_id}` is gone")))?;
    let mut out = Map::new();
    out.insert("resultType".into(), json!("task"));
    out.extend(task(state, &run, false)?);
    out.insert("_meta".into(), run_meta(run_id));
    Ok(Value::Object(out))
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[
    MutantInfo {
        mutant: Mutant::McpTaskIdNotRun,
        name: "mcp-task-id-not-run",
        breaks: "the MCP mount's taskId is `task-` + the run id, not the run's id (MCP-14)",
    },
    MutantInfo {
        mutant: Mutant::McpTaskStatusWorking,
        name: "mcp-task-status-working",
        breaks: "a task whose run waits for a clarification reads as working, without its inputRequests (MCP-14)",
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn complete_results_carry_the_run() {
        assert_eq!(
            complete(Some("run_1"), "Done.", false),
            json!({"resultType": "complete", "content": [{"type": "text", "text": "Done."}],
                   "isError": false, "_meta": {"org.openwop/runId": "run_1"}})
        );
        assert!(tool_error(None, "x").get("_meta").is_none());
    }
}
