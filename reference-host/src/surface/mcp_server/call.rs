//! `tools/call` on the MCP server mount (TURN-E4, MCP-9, TTC §C).
//!
//! - **First call** (no `requestState`): the caller's template of that name
//!   (else `-32602` "Unknown tool") starts a turn run with `input` =
//!   `arguments.input`, attributed to the caller, exactly as the turn seam
//!   would ([`crate::surface::seams::turn_run::start_run`]). The call then waits, at most
//!   [`CALL_WAIT`], until the run is terminal or waits on an interrupt, and
//!   answers with where it stands (`outcome`).
//! - **A clarification** the run's model asked (TURN-E1) is answered as an
//!   MRTR `input_required` result (TURN-E4): one `inputRequests` entry,
//!   keyed by the interrupt's node id, an `elicitation/create` form request
//!   whose message is the model's question; and a `requestState` bound to
//!   the run, that interrupt, the caller and its tenant, and the tool
//!   ([`super::request_state`]).
//! - **Retry** (`requestState` present, a new JSON-RPC id): the state must
//!   open, verify, belong to the caller (principal and tenant) and the
//!   tool, and name the interrupt that is STILL open; `inputResponses` must
//!   answer every key. Anything else is `-32602` naming the problem, and
//!   nothing changes (the run keeps waiting). Then the clarification is
//!   resolved exactly as `POST /runs/{runId}/interrupts/{nodeId}` with
//!   `{"answers": content}` by the bound principal would, and the call
//!   waits and answers again (another `input_required` round is possible;
//!   the run's `limits.clarificationRounds` bounds them).
//!
//! Nothing is cached: a spent state names an interrupt that is no longer
//! open, so using it again is `-32602`.
//!
//! **Tasks (MCP-14).** A call (first or retry) that declares the Tasks
//! extension waits at most [`TASK_WAIT`] instead: a run terminal by then is
//! answered as above; any other is answered `CreateTaskResult`
//! ([`super::results::create_task_result`], `taskId` = the run id), never
//! `input_required`: a clarification is then the task's `inputRequests`,
//! answered by `tasks/update`.
//!
//! **Ownership (MCP-14).** From the moment a call starts (or a retry
//! continues) a run until its whole answer is sent, the run belongs to the
//! request ([`crate::turn::ownership::RequestOwnedRun`]): a client that goes
//! away first cancels it with `run.cancelled.reason: "mcp-request-cancelled"`.

use std::time::Duration;

use serde_json::{Map, Value, json};

use super::mount::{McpServer, OwnedRun, Reply};
use super::protocol::{RpcError, declares_tasks, optional_member, required_member};
use super::request_state::{StateClaims, interrupt_id};
use super::results::{
    Settled, complete, create_task_result, input_requests, run_meta, terminal_outcome, tool_error,
};
use crate::base::events::{RUN_CANCELLED, RUN_COMPLETED};
use crate::base::mutant::{Mutant, MutantInfo};
use crate::base::principals::Principal;
use crate::domain::Domain;
use crate::domain::interrupts::{Action, InterruptKind, Resolution, ResolveError, Ticket, Via};
use crate::domain::json_body::kind;
use crate::domain::workflows::new_run_id;
use crate::store::storage::RunStatus;
use crate::surface::seams::turn_run::start_run_as;
use crate::turn::control::{MCP_REQUEST_CANCELLED, cancelled_by};
use crate::turn::ownership::RequestOwnedRun;
use crate::turn::state::LoopState;

/// How long one `tools/call` waits for its run to finish or ask.
pub const CALL_WAIT: Duration = Duration::from_secs(20);

/// How long a `tools/call` that declared the Tasks extension waits for its
/// run to finish or ask before answering `CreateTaskResult` (MCP-14).
pub const TASK_WAIT: Duration = Duration::from_millis(200);

/// The text of a clarification answered as a tool error (only the
/// `mcp-ask-as-tool-error` mutant).
pub const INPUT_NEEDED_TEXT: &str = "input needed";

/// The answers a `decline` elicitation result resolves the clarification
/// with.
pub fn declined_answers() -> Value {
    json!({"declined": true})
}

/// The answers a `cancel` elicitation result resolves the clarification
/// with.
pub fn cancelled_answers() -> Value {
    json!({"cancelled": true})
}

/// Serves one `tools/call`; the reply owns the run the call started or
/// continued, if any.
pub async fn call(
    state: &LoopState,
    mcp_server: &McpServer,
    caller: &Principal,
    params: &Map<String, Value>,
) -> Reply {
    match checked(params) {
        Ok(Checked::First(name)) => {
            first_call(
                state,
                mcp_server,
                caller,
                name,
                params.get("arguments"),
                declares_tasks(params),
            )
            .await
        }
        Ok(Checked::Retry(name, request_state, responses)) => {
            retry(
                state,
                mcp_server,
                caller,
                name,
                request_state,
                responses,
                declares_tasks(params),
            )
            .await
        }
        Err(err) => Reply::plain(Err(err)),
    }
}

/// A `tools/call` whose members are well formed.
enum Checked<'p> {
    /// A first call of the tool.
    First(&'p str),
    /// An MRTR retry: the tool, `requestState`, `inputResponses`.
    Retry(&'p str, &'p str, Option<&'p Map<String, Value>>),
}

/// The members of a `tools/call`, checked.
fn checked(params: &Map<String, Value>) -> Result<Checked<'_>, RpcError> {
    let name = required_member(params, "name", "a string: the tool to call", Value::as_str)?;
    let request_state = optional_member(
        params,
        "requestState",
        "a string: echo the input_required result's requestState byte-exactly",
        Value::as_str,
    )?;
    let responses = optional_member(
        params,
        "inputResponses",
        "an object keyed by the inputRequests keys",
        Value::as_object,
    )?;
    match (request_state, responses) {
        (None, None) => Ok(Checked::First(name)),
        (Some(request_state), responses) => Ok(Checked::Retry(name, request_state, responses)),
        (None, Some(_)) => Err(RpcError::invalid_params(
            "`params.requestState` is required with `params.inputResponses`: echo the input_required result's requestState",
        )),
    }
}

/// The run id of a run the mount starts: [`new_run_id`] (128 random bits),
/// which is also its MCP `taskId` (MCP-14).
fn mint_run_id(state: &Domain) -> String {
    let run_id = new_run_id();
    if state.mutant_is(Mutant::McpTaskIdShort) {
        // Bug: 32 random bits (`run_` and 8 hex digits), guessable.
        return run_id.chars().take(12).collect();
    }
    run_id
}

/// The run now belongs to the request being served (MCP-14): dropped before
/// its answer is sent, the guard cancels the run as `cancelRun` would, with
/// `run.cancelled.reason: "mcp-request-cancelled"`.
pub fn own(state: &LoopState, caller: &Principal, run_id: &str) -> Option<RequestOwnedRun> {
    // Bug under `mcp-disconnect-ignored`: nothing owns the run; a client that
    // goes away leaves it running, doing work nobody holds a handle for.
    if state.mutant_is(Mutant::McpDisconnectIgnored) {
        return None;
    }
    // Bug under `mcp-cancel-wrong-reason`: the reason a caller's cancelRun
    // would write, not the one the rule names.
    let reason = if state.mutant_is(Mutant::McpCancelWrongReason) {
        cancelled_by(&caller.id)
    } else {
        MCP_REQUEST_CANCELLED.to_owned()
    };
    Some(RequestOwnedRun::new(state, run_id, &reason))
}

/// The reply of a request that owns `guard`'s run: a task answer's guard
/// stays bound past the answer only under
/// `mcp-disconnect-after-response-cancels`.
pub fn owning_reply(
    state: &Domain,
    result: Result<Value, RpcError>,
    guard: Option<RequestOwnedRun>,
) -> Reply {
    let is_task = result
        .as_ref()
        .is_ok_and(|value| value.get("resultType").and_then(Value::as_str) == Some("task"));
    // Bug under `mcp-disconnect-after-response-cancels`: the task's run stays
    // bound to the request after its CreateTaskResult was sent.
    let keep_bound = is_task && state.mutant_is(Mutant::McpDisconnectAfterResponseCancels);
    Reply {
        result,
        owned: guard.map(|guard| OwnedRun { guard, keep_bound }),
    }
}

/// The first call: start a run from the caller's template.
async fn first_call(
    state: &LoopState,
    mcp_server: &McpServer,
    caller: &Principal,
    name: &str,
    arguments: Option<&Value>,
    tasks: bool,
) -> Reply {
    // MCP-12: a principal sees only its own templates.
    let Some(template) = mcp_server.templates().get(&caller.tenant, &caller.id, name) else {
        return Reply::plain(Err(RpcError::invalid_params(format!(
            "Unknown tool: {name}"
        ))));
    };
    // Input validation failures are tool execution errors (MCP tools
    // spec): a result with isError, so a model can correct itself.
    let input = match call_input(arguments) {
        Ok(input) => input,
        Err(message) => return Reply::plain(Ok(tool_error(None, &message))),
    };
    let body = template.body_with_input(&input);
    let run_id = match start_run_as(state, caller, &body, mint_run_id(state)) {
        Ok(run_id) => run_id,
        Err(err) => return Reply::plain(Err(err.into())),
    };
    let guard = own(state, caller, &run_id);
    let result = answer(state, mcp_server, caller, name, &run_id, tasks).await;
    owning_reply(state, result, guard)
}

/// Waits for the run (at most [`CALL_WAIT`], or [`TASK_WAIT`] for a call
/// that declared the Tasks extension) and answers with where it stands.
async fn answer(
    state: &Domain,
    mcp_server: &McpServer,
    caller: &Principal,
    name: &str,
    run_id: &str,
    tasks: bool,
) -> Result<Value, RpcError> {
    if !tasks {
        let settled = settle(state, run_id).await?;
        return outcome(state, mcp_server, caller, name, run_id, settled);
    }
    match settle_within(state, run_id, TASK_WAIT).await? {
        terminal @ (Settled::Completed(_) | Settled::Failed { .. } | Settled::Cancelled(_)) => {
            outcome(state, mcp_server, caller, name, run_id, terminal)
        }
        // MCP-14: never InputRequiredResult to a call that declared tasks.
        // Bug under `mcp-task-input-required`: the clarification is answered
        // as MRTR input_required all the same.
        Settled::Waiting(ticket)
            if ticket.kind == InterruptKind::Clarification
                && state.mutant_is(Mutant::McpTaskInputRequired) =>
        {
            Ok(input_required(mcp_server, caller, name, &ticket))
        }
        Settled::Waiting(_) | Settled::StillRunning => create_task_result(state, run_id),
    }
}

/// `arguments.input`: a non-empty string, and nothing else in `arguments`.
fn call_input(arguments: Option<&Value>) -> Result<String, String> {
    let Some(arguments) = arguments else {
        return Err(
            "validation_error: `arguments.input` is required (a non-empty string)".to_owned(),
        );
    };
    let Value::Object(map) = arguments else {
        return Err(format!(
            "validation_error: `arguments` must be an object, got {}",
            kind(arguments)
        ));
    };
    if let Some(unknown) = map.keys().find(|key| key.as_str() != "input") {
        return Err(format!(
            "validation_error: unknown argument `arguments.{unknown}`; the tool takes only `input`"
        ));
    }
    match map.get("input") {
        Some(Value::String(input)) if !input.is_empty() => Ok(input.clone()),
        Some(Value::String(_)) => {
            Err("validation_error: `arguments.input` must not be empty".to_owned())
        }
        Some(other) => Err(format!(
            "validation_error: `arguments.input` must be a string, got {}",
            kind(other)
        )),
        None => {
            Err("validation_error: `arguments.input` is required (a non-empty string)".to_owned())
        }
    }
}

/// A retry: verify, then resolve the clarification with the answers.
async fn retry(
    state: &LoopState,
    mcp_server: &McpServer,
    caller: &Principal,
    name: &str,
    request_state: &str,
    responses: Option<&Map<String, Value>>,
    tasks: bool,
) -> Reply {
    let run_id = match resolve_retry(state, mcp_server, caller, name, request_state, responses) {
        Ok(run_id) => run_id,
        Err(err) => return Reply::plain(Err(err)),
    };
    // The retry continues the run: it is the request's until answered.
    let guard = own(state, caller, &run_id);
    let result = answer(state, mcp_server, caller, name, &run_id, tasks).await;
    owning_reply(state, result, guard)
}

/// Verifies a retry and resolves the clarification it answers; returns the
/// run it continues. On any refusal nothing changes.
fn resolve_retry(
    state: &Domain,
    mcp_server: &McpServer,
    caller: &Principal,
    name: &str,
    request_state: &str,
    responses: Option<&Map<String, Value>>,
) -> Result<String, RpcError> {
    let opened = mcp_server
        .state_key()
        .open(request_state)
        .ok_or_else(|| {
            RpcError::invalid_params(
                "`params.requestState` is not a requestState this server issued (malformed); echo the input_required result's requestState byte-exactly; nothing was changed",
            )
        })?;
    let claims = opened.claims;
    // MCP-9, TTC §C: the state is authentic (issued here, unaltered) and
    // bound to the principal it was issued to. Bug under
    // `mcp-request-state-unbound`: neither is checked, so any well-formed
    // state naming an open interrupt is accepted from any principal of the
    // tenant.
    if !state.mutant_is(Mutant::McpRequestStateUnbound) {
        if !opened.authentic {
            return Err(RpcError::invalid_params(
                "`params.requestState` failed authentication: it was altered or not issued by this server; nothing was changed",
            ));
        }
        if claims.principal != caller.id {
            return Err(RpcError::invalid_params(format!(
                "`params.requestState` was issued to another principal, not `{}`; only the principal who made the call may answer it; nothing was changed",
                caller.id
            )));
        }
    }
    if claims.tenant != caller.tenant {
        return Err(RpcError::invalid_params(
            "`params.requestState` was issued in another tenant; nothing was changed",
        ));
    }
    if claims.tool != name {
        return Err(RpcError::invalid_params(format!(
            "`params.requestState` belongs to a call of tool `{}`, not `{name}`; retry with the same name; nothing was changed",
            claims.tool
        )));
    }
    let not_open = || {
        RpcError::invalid_params(
            "the interrupt `params.requestState` answers is no longer open (already answered, expired, or its run ended); nothing was changed",
        )
    };
    let ticket = state
        .interrupts()
        .ticket(&claims.run_id)
        .filter(|ticket| {
            ticket.kind == InterruptKind::Clarification
                && interrupt_id(ticket) == claims.interrupt
                && claims.keys == [ticket.node_id.as_str()]
        })
        .ok_or_else(not_open)?;
    // The run belongs to the caller's tenant (the state says so; the store
    // must agree).
    let run = state.storage().run(&claims.run_id)?;
    if run.is_none_or(|run| run.tenant != caller.tenant) {
        return Err(not_open());
    }
    // MCP-9: every key of inputRequests is answered (one clarification,
    // one key: its node id).
    let Some(response) = responses.and_then(|responses| responses.get(&ticket.node_id)) else {
        return Err(RpcError::invalid_params(format!(
            "`params.inputResponses` is missing key `{}`: answer every key of the input_required result's inputRequests; nothing was changed",
            ticket.node_id
        )));
    };
    // Someone resolved it (or it expired) since it was looked up.
    if !answer_clarification(state, &ticket, caller, response)? {
        return Err(not_open());
    }
    Ok(claims.run_id)
}

/// Answers `ticket`'s clarification with `response` (an elicitation result) as `caller`,
/// exactly as `POST /runs/{runId}/interrupts/{nodeId}` with `{"answers": content}` would (an
/// MRTR retry and `tasks/update` both come here): `Ok(false)` when it is no longer open
/// (answered, or expired, since it was looked up).
pub fn answer_clarification(
    state: &Domain,
    ticket: &Ticket,
    caller: &Principal,
    response: &Value,
) -> Result<bool, RpcError> {
    let answers = answers_of(state, &ticket.node_id, response)?;
    let resolution = Resolution {
        action: Action::Accept,
        answers: Some(answers),
        by: caller.id.clone(),
        via: Via::Principal,
    };
    match state
        .interrupts()
        .resolve(state.storage(), ticket, resolution)
    {
        Ok(_) => Ok(true),
        Err(ResolveError::NotOpen) => Ok(false),
        Err(ResolveError::Storage(err)) => Err(err.into()),
    }
}

/// The clarification's answers from one elicitation result
/// `{action, content?}`: `accept` ⇒ `content` (an object, `{}` when
/// absent); `decline` ⇒ [`declined_answers`]; `cancel` ⇒
/// [`cancelled_answers`]. `tasks/update` reads its `inputResponses` through
/// here too.
pub fn answers_of(state: &Domain, key: &str, response: &Value) -> Result<Value, RpcError> {
    let path = format!("params.inputResponses.{key}");
    let Value::Object(result) = response else {
        return Err(RpcError::invalid_params(format!(
            "`{path}` must be an elicitation result {{action, content?}}, got {}; nothing was changed",
            kind(response)
        )));
    };
    match result.get("action").and_then(Value::as_str) {
        Some("accept") => {
            let content = match result.get("content") {
                None => Map::new(),
                Some(Value::Object(content)) => content.clone(),
                Some(other) => {
                    return Err(RpcError::invalid_params(format!(
                        "`{path}.content` must be an object, got {}; nothing was changed",
                        kind(other)
                    )));
                }
            };
            // MCP-9: the clarification is answered with what the user
            // entered. Bug under `mcp-input-responses-dropped`: the
            // content is dropped and the answers are `{}`.
            if state.mutant_is(Mutant::McpInputResponsesDropped) {
                Ok(json!({}))
            } else {
                Ok(Value::Object(content))
            }
        }
        Some("decline") => Ok(declined_answers()),
        Some("cancel") => Ok(cancelled_answers()),
        _ => Err(RpcError::invalid_params(format!(
            "`{path}.action` must be one of accept, decline, cancel; nothing was changed"
        ))),
    }
}

/// Waits (at most [`CALL_WAIT`], woken by the run's own change signal,
/// never a busy loop) until the run is terminal or waits on an open
/// interrupt.
pub async fn settle(state: &Domain, run_id: &str) -> Result<Settled, RpcError> {
    settle_within(state, run_id, CALL_WAIT).await
}

/// [`settle`], waiting at most `wait`.
pub async fn settle_within(
    state: &Domain,
    run_id: &str,
    wait: Duration,
) -> Result<Settled, RpcError> {
    let storage = state.storage();
    let deadline = tokio::time::Instant::now() + wait;
    // Subscribe before the first read, so a write between the read and the
    // wait still wakes it.
    let mut changes = storage
        .subscribe_run(run_id)
        .unwrap_or_else(|| storage.subscribe());
    loop {
        changes.borrow_and_update();
        let run = storage
            .run(run_id)?
            .ok_or_else(|| RpcError::internal(format!("run `{run_id}` is gone")))?;
        let payload = match run.status {
            RunStatus::Completed => last_payload(state, run_id, RUN_COMPLETED)?,
            RunStatus::Cancelled => last_payload(state, run_id, RUN_CANCELLED)?,
            _ => None,
        };
        if let Some(outcome) = terminal_outcome(&run, payload.as_ref()) {
            return Ok(outcome);
        }
        match run.status {
            // The status and `interrupt.requested` commit under the
            // registry lock, so a waiting run's interrupt is visible here.
            RunStatus::WaitingInput | RunStatus::WaitingApproval => {
                if let Some(ticket) = state.interrupts().ticket(run_id) {
                    return Ok(Settled::Waiting(ticket));
                }
            }
            _ => {}
        }
        if tokio::time::Instant::now() >= deadline {
            return Ok(Settled::StillRunning);
        }
        match tokio::time::timeout_at(deadline, changes.changed()).await {
            Ok(Ok(())) | Err(_) => {}
            // A closed signal cannot wake us: wait out the deadline.
            Ok(Err(_)) => tokio::time::sleep_until(deadline).await,
        }
    }
}

/// The payload of the run's last event of type `event_type`.
fn last_payload(state: &Domain, run_id: &str, event_type: &str) -> Result<Option<Value>, RpcError> {
    Ok(state
        .storage()
        .events_after(run_id, -1)?
        .into_iter()
        .rev()
        .find(|event| event.event_type == event_type)
        .map(|event| event.payload))
}

/// The answer for where the run stands (see the module docs).
fn outcome(
    state: &Domain,
    mcp_server: &McpServer,
    caller: &Principal,
    name: &str,
    run_id: &str,
    settled: Settled,
) -> Result<Value, RpcError> {
    Ok(match settled {
        Settled::Completed(result) => {
            let text = match result {
                Value::String(text) => text,
                other => other.to_string(),
            };
            complete(Some(run_id), &text, false)
        }
        Settled::Failed { code, message } => {
            tool_error(Some(run_id), &format!("{code}: {message}"))
        }
        Settled::Cancelled(reason) => tool_error(Some(run_id), &format!("cancelled: {reason}")),
        Settled::Waiting(ticket) => match ticket.kind {
            InterruptKind::Clarification => {
                // TURN-E4: the clarification interrupt is MCP
                // input_required. Bug under `mcp-ask-as-tool-error`: it is
                // a complete tool error instead.
                if state.mutant_is(Mutant::McpAskAsToolError) {
                    tool_error(Some(run_id), INPUT_NEEDED_TEXT)
                } else {
                    input_required(mcp_server, caller, name, &ticket)
                }
            }
            // Approvals are never resolved over MCP: the call is held at
            // the host (TTC §C: only the bound principal resolves it there).
            InterruptKind::Approval => tool_error(
                Some(run_id),
                &format!(
                    "the call is held for approval at the host: the run's principal resolves it at POST /runs/{run_id}/interrupts/{}; approvals are never resolved over MCP",
                    ticket.node_id
                ),
            ),
            InterruptKind::McpInput => tool_error(
                Some(run_id),
                &format!(
                    "the run waits at the host for input an MCP tool of its own asked for: the run's principal answers it at POST /runs/{run_id}/interrupts/{}",
                    ticket.node_id
                ),
            ),
        },
        Settled::StillRunning => {
            return Err(RpcError::internal(format!(
                "the run `{run_id}` neither finished nor asked for input within the {} s wait of a tools/call; it runs on (its events: /runs/{run_id}/events)",
                CALL_WAIT.as_secs()
            ))
            .with_data(run_meta(run_id)));
        }
    })
}

/// The MRTR `input_required` result of an open clarification (TURN-E4).
fn input_required(
    mcp_server: &McpServer,
    caller: &Principal,
    name: &str,
    ticket: &Ticket,
) -> Value {
    let claims = StateClaims {
        run_id: ticket.run_id.clone(),
        keys: vec![ticket.node_id.clone()],
        interrupt: interrupt_id(ticket),
        principal: caller.id.clone(),
        tenant: caller.tenant.clone(),
        tool: name.to_owned(),
    };
    let request_state = mcp_server.state_key().mint(&claims);
    json!({
        "resultType": "input_required",
        "inputRequests": input_requests(ticket),
        "requestState": request_state,
        "_meta": run_meta(&ticket.run_id),
    })
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[
    MutantInfo {
        mutant: Mutant::McpAskAsToolError,
        name: "mcp-ask-as-tool-error",
        breaks: "the MCP server answers a clarification as a complete isError result \"input needed\" instead of input_required (TURN-E4)",
    },
    MutantInfo {
        mutant: Mutant::McpRequestStateUnbound,
        name: "mcp-request-state-unbound",
        breaks: "the MCP server accepts any well-formed requestState naming an open interrupt, unauthenticated, from any principal of the tenant (MCP-9)",
    },
    MutantInfo {
        mutant: Mutant::McpInputResponsesDropped,
        name: "mcp-input-responses-dropped",
        breaks: "the MCP server's MRTR retry resolves the clarification with {} instead of the inputResponses content (MCP-9)",
    },
    MutantInfo {
        mutant: Mutant::McpTaskInputRequired,
        name: "mcp-task-input-required",
        breaks: "a tools/call that declared the Tasks extension, on a run waiting for a clarification, is answered InputRequiredResult instead of CreateTaskResult (MCP-14)",
    },
    MutantInfo {
        mutant: Mutant::McpTaskIdShort,
        name: "mcp-task-id-short",
        breaks: "the runs the MCP mount starts (so their taskIds) get ids with 32 random bits (MCP-14)",
    },
    MutantInfo {
        mutant: Mutant::McpDisconnectIgnored,
        name: "mcp-disconnect-ignored",
        breaks: "a client disconnect before the MCP answer is sent leaves the run it started or continued running (MCP-14)",
    },
    MutantInfo {
        mutant: Mutant::McpCancelWrongReason,
        name: "mcp-cancel-wrong-reason",
        breaks: "a client disconnect before the MCP answer cancels the run with reason `cancelled by <principal>` instead of mcp-request-cancelled (MCP-14)",
    },
    MutantInfo {
        mutant: Mutant::McpDisconnectAfterResponseCancels,
        name: "mcp-disconnect-after-response-cancels",
        breaks: "a task's run stays bound to its tools/call after the CreateTaskResult was sent: the end of the exchange cancels it (MCP-14)",
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_input_is_one_non_empty_string() {
        assert_eq!(call_input(Some(&json!({"input": "go"}))), Ok("go".into()));
        for (arguments, says) in [
            (None, "`arguments.input` is required"),
            (Some(json!({})), "`arguments.input` is required"),
            (Some(json!([])), "`arguments` must be an object"),
            (Some(json!({"input": ""})), "must not be empty"),
            (Some(json!({"input": 3})), "must be a string"),
            (Some(json!({"input": "a", "x": 1})), "`arguments.x`"),
        ] {
            let err = call_input(arguments.as_ref()).expect_err("refused");
            assert!(err.contains(says), "{arguments:?}: {err}");
            assert!(err.starts_with("validation_error: "), "{err}");
        }
    }
}
