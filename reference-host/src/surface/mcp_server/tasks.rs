//! The MCP Tasks extension on the mount (`io.modelcontextprotocol/tasks`,
//! revision 2026-07-28; MCP-14, RFC 0198, v2 interop §"MCP tasks and
//! cancellation").
//!
//! A task IS a run: its `taskId` is the run's id (`run_` and 128 random
//! bits; [`super::results::task_id_of`]). The id names a task; it never
//! grants one: every method reads the run exactly as `getRun` would for the
//! caller (its tenant, scope `runs:read`), and a run the caller could not
//! read is answered exactly as a task that does not exist.
//!
//! | method | v2 operation | answer |
//! |---|---|---|
//! | `tasks/get {taskId}` | `getRun` | `{resultType: "complete", …Task}`, with `inputRequests` (input_required) or `result` (completed); appends nothing to the run's log |
//! | `tasks/update {taskId, inputResponses}` | `resolveInterruptByRun` | `{resultType: "complete"}` once the outstanding clarification is resolved with the answer under its key (other keys are ignored) |
//! | `tasks/cancel {taskId}` | `cancelRun` | `{resultType: "complete"}` once the run is `cancelled`; a terminal task is `-32602` |
//!
//! Status: `running` ⇒ `working`; waiting on a clarification ⇒
//! `input_required` (its `inputRequests`); waiting on an approval or on an
//! MCP tool's own input ⇒ `working` (resolved at the host, never over MCP);
//! `completed` ⇒ `completed` with the `CallToolResult`; `failed` ⇒
//! `completed` with the `CallToolResult` `isError: true` (a run failure is a
//! tool execution error, not a JSON-RPC one); `cancelled` ⇒ `cancelled`.
//!
//! A request that did not declare the extension in its per-request client
//! capabilities gets `-32021` (MissingRequiredClientCapability) naming it.

use axum::http::StatusCode;
use serde_json::{Map, Value, json};

use super::call::{self, answer_clarification};
use super::mount::Reply;
use super::protocol::{
    MISSING_REQUIRED_CLIENT_CAPABILITY, RpcError, TASKS_EXTENSION, declares_tasks, required_member,
};
use super::results::{run_id_of, task};
use crate::base::events::NewEvent;
use crate::base::mutant::{Mutant, MutantInfo};
use crate::base::principals::Principal;
use crate::domain::Domain;
use crate::domain::auth::require_scope;
use crate::domain::interrupts::InterruptKind;
use crate::domain::runs::RUNS_READ_SCOPE;
use crate::store::storage::RunRecord;
use crate::surface::run_actions::cancel_and_wait;
use crate::turn::control::cancelled_by;
use crate::turn::state::LoopState;

/// The one answer for a task that does not exist or that the caller could
/// not read (same code, same message: no oracle).
pub const TASK_NOT_FOUND: &str = "Failed to retrieve task: Task not found";

/// The event `tasks/get` appends under `mcp-tasks-get-appends` only.
const READ_AUDIT_EVENT: &str = "run.read";

/// `-32021`: the request did not declare the Tasks extension.
fn require_declared(params: &Map<String, Value>) -> Result<(), RpcError> {
    if declares_tasks(params) {
        return Ok(());
    }
    Err(RpcError::new(
        StatusCode::OK,
        MISSING_REQUIRED_CLIENT_CAPABILITY,
        format!(
            "Missing required client capability: declare the {TASKS_EXTENSION} extension in params._meta[\"io.modelcontextprotocol/clientCapabilities\"].extensions to use the tasks/* methods"
        ),
    )
    .with_data(json!({"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}})))
}

/// The run `params.taskId` names, when the caller may read it as `getRun`
/// would; anything else is [`TASK_NOT_FOUND`].
fn readable_run(
    state: &Domain,
    caller: &Principal,
    params: &Map<String, Value>,
) -> Result<RunRecord, RpcError> {
    let task_id = required_member(
        params,
        "taskId",
        "a string: the taskId of a CreateTaskResult",
        Value::as_str,
    )?;
    let not_found = || RpcError::invalid_params(TASK_NOT_FOUND);
    let run_id = run_id_of(state, task_id).ok_or_else(not_found)?;
    let run = state.storage().run(&run_id)?.ok_or_else(not_found)?;
    // MCP-14: a taskId is never a credential. Bug under
    // `mcp-task-id-credential`: whoever knows the id reads (and answers,
    // and cancels) the task, whatever its tenant.
    let readable = run.tenant == caller.tenant && require_scope(caller, RUNS_READ_SCOPE).is_ok();
    if !readable && !state.mutant_is(Mutant::McpTaskIdCredential) {
        return Err(not_found());
    }
    Ok(run)
}

/// `tasks/get`: the Task as it stands; nothing is written (MCP-14).
pub fn get(
    state: &Domain,
    caller: &Principal,
    params: &Map<String, Value>,
) -> Result<Value, RpcError> {
    require_declared(params)?;
    let run = readable_run(state, caller, params)?;
    // MCP-14: answering tasks/get never appends to the run's log. Bug under
    // `mcp-tasks-get-appends`: every read is audited on the run's own log.
    if state.mutant_is(Mutant::McpTasksGetAppends) {
        state.storage().append_event(
            &run.run_id,
            NewEvent::new(
                READ_AUDIT_EVENT,
                json!({"by": caller.id, "via": "tasks/get"}),
            ),
        )?;
    }
    let mut out = Map::new();
    out.insert("resultType".into(), json!("complete"));
    out.extend(task(state, &run, true)?);
    Ok(Value::Object(out))
}

/// The empty acknowledgement of `tasks/update` and `tasks/cancel`.
fn acknowledged() -> Value {
    json!({"resultType": "complete"})
}

/// `tasks/update`: resolves the outstanding clarification with the answer
/// under its key. The request continues the run, so it owns it until the
/// acknowledgement is sent (MCP-14).
pub async fn update(state: &LoopState, caller: &Principal, params: &Map<String, Value>) -> Reply {
    match resolve_update(state, caller, params) {
        Ok(Some(run_id)) => {
            let guard = call::own(state, caller, &run_id);
            call::owning_reply(state, Ok(acknowledged()), guard)
        }
        Ok(None) => Reply::plain(Ok(acknowledged())),
        Err(err) => Reply::plain(Err(err)),
    }
}

/// The run `tasks/update` continued, or `None` when nothing outstanding was
/// answered (keys not outstanding are ignored, as the extension says).
fn resolve_update(
    state: &Domain,
    caller: &Principal,
    params: &Map<String, Value>,
) -> Result<Option<String>, RpcError> {
    require_declared(params)?;
    let run = readable_run(state, caller, params)?;
    let responses = required_member(
        params,
        "inputResponses",
        "an object keyed by the task's inputRequests keys; nothing was changed",
        Value::as_object,
    )?;
    let Some(ticket) = state
        .interrupts()
        .ticket(&run.run_id)
        .filter(|ticket| ticket.kind == InterruptKind::Clarification)
    else {
        return Ok(None);
    };
    // Only the principal the run is attributed to answers its questions
    // (TTC §C), as the MRTR retry's requestState binding says.
    if ticket.bound_principal != caller.id {
        return Err(RpcError::invalid_params(format!(
            "only the principal the run is attributed to answers its input requests, not `{}`; nothing was changed",
            caller.id
        )));
    }
    let Some(response) = responses.get(&ticket.node_id) else {
        return Ok(None);
    };
    // Answered (or expired) since it was looked up: nothing outstanding.
    let answered = answer_clarification(state, &ticket, caller, response)?;
    Ok(answered.then_some(run.run_id))
}

/// `tasks/cancel`: cancels the run as `cancelRun` by the caller would, and
/// acknowledges once it is `cancelled`.
pub async fn cancel(
    state: &LoopState,
    caller: &Principal,
    params: &Map<String, Value>,
) -> Result<Value, RpcError> {
    require_declared(params)?;
    let run = readable_run(state, caller, params)?;
    if run.status.is_terminal() {
        return Err(RpcError::invalid_params(format!(
            "Failed to cancel task: it is already terminal ({})",
            run.status.as_str()
        )));
    }
    // Bug under `mcp-tasks-cancel-ignored`: acknowledged, never cancelled.
    if !state.mutant_is(Mutant::McpTasksCancelIgnored) {
        cancel_and_wait(state, &run.tenant, &run.run_id, &cancelled_by(&caller.id)).await?;
    }
    Ok(acknowledged())
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[
    MutantInfo {
        mutant: Mutant::McpTasksGetAppends,
        name: "mcp-tasks-get-appends",
        breaks: "tasks/get appends a run.read audit event to the run's log (MCP-14)",
    },
    MutantInfo {
        mutant: Mutant::McpTaskIdCredential,
        name: "mcp-task-id-credential",
        breaks: "tasks/get, tasks/update and tasks/cancel serve any caller who knows the taskId, whatever its tenant (MCP-14)",
    },
    MutantInfo {
        mutant: Mutant::McpTasksCancelIgnored,
        name: "mcp-tasks-cancel-ignored",
        breaks: "tasks/cancel acknowledges and leaves the run running (MCP-14)",
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_declared_extension_reaches_the_tasks_methods() {
        let mut params = Map::new();
        let refused = require_declared(&params).expect_err("undeclared");
        assert_eq!(refused.code, MISSING_REQUIRED_CLIENT_CAPABILITY);
        assert_eq!(
            refused.data,
            Some(json!({"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}))
        );
        params.insert(
            "_meta".into(),
            json!({"io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS_EXTENSION: true}}}),
        );
        assert!(
            require_declared(&params).is_err(),
            "the declaration is an object"
        );
        params.insert(
            "_meta".into(),
            json!({"io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}),
        );
        assert!(require_declared(&params).is_ok());
    }
}
