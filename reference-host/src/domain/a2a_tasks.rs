//! A2A tasks projected onto runs (A2A-4, A2A-6, A2A-7): the methods of the
//! JSON-RPC endpoint the agent card advertises at [`crate::domain::a2a::A2A_PATH`].
//!
//! - `SendMessage` projects the message onto a run of the caller's tenant. The run
//!   is the first `data` part when it is a `POST /runs` body (toolcert's extension:
//!   a conformance-effect run lets a scenario count the send's effects at its own
//!   receiver), else a `conformance-noop` run. The run id is derived from
//!   `(tenant, principal, messageId)`, so a repeated message finds its run and
//!   never starts a second one (A2A-7).
//! - `GetTask` reads one task; a task of another tenant gets exactly the
//!   TaskNotFoundError (-32001) of an id never minted (A2A-6).
//! - `ListTasks` lists the caller's tenant's tasks only, optionally of one
//!   `contextId`; `contextId`, `tenant` and `metadata`/`_meta` in a request
//!   never choose tenant or principal (A2A-6).
//!
//! - `GetExtendedAgentCard` answers the host's 1.0 card, or with the routing
//!   value of an agent of the caller's inventory as `tenant`, that agent's card
//!   (A2A-8, RFC 0202 §C.4).
//!
//! A `tenant` is resolved within the caller's inventory only
//! ([`crate::domain::agents::route`]; RFC 0202 §D.9). One that routes to
//! nothing the caller may address, whether never minted or another tenant's,
//! is answered alike everywhere (§D.7): `GetExtendedAgentCard` refuses it with
//! `ExtendedAgentCardNotConfiguredError` in a message that does not echo it,
//! and the task methods serve the host endpoint, as for a request naming no
//! tenant (A2A-6: `tenant` never selects a tenant or principal). A message sent
//! through an agent's value starts its run in the caller's tenant and records
//! the agent; `ListTasks` through it lists the tasks sent through it.
//!
//! A task's state follows its run; no run state maps to `TASK_STATE_AUTH_REQUIRED`
//! (A2A-4): authorization happens before the task exists, never inside it.

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::base::mutant::{Mutant, MutantInfo};
use crate::base::principals::Principal;
use crate::domain::Domain;
use crate::domain::a2a;
use crate::domain::agents::{self, InstalledAgent, Route};
use crate::domain::error::ApiError;
use crate::domain::workflows::{self, NOOP_WORKFLOW, Workflow};
use crate::store::storage::{RunRecord, RunStatus};

/// The prefix of every run an A2A message was projected onto.
pub const TASK_RUN_PREFIX: &str = "run_a2a_";

/// JSON-RPC: the method does not exist.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC: the params are not what the method takes.
pub const INVALID_PARAMS: i64 = -32602;
/// JSON-RPC: the host failed.
pub const INTERNAL_ERROR: i64 = -32603;
/// A2A `TaskNotFoundError`.
pub const TASK_NOT_FOUND: i64 = -32001;
/// A2A `ExtendedAgentCardNotConfiguredError`.
pub const EXTENDED_CARD_NOT_CONFIGURED: i64 = -32007;

/// Longest `messageId`, `contextId` or task id read.
const MAX_ID_LEN: usize = 200;

/// Most tasks one `ListTasks` answer holds.
const MAX_LISTED: usize = 100;

/// Why a method failed.
#[derive(Debug)]
pub enum TaskError {
    /// A JSON-RPC error object `{code, message}` (HTTP 200).
    Rpc {
        /// The JSON-RPC / A2A error code.
        code: i64,
        /// What went wrong and what to send instead.
        message: String,
    },
    /// An HTTP-level refusal in the host's error envelope.
    Http(ApiError),
}

impl TaskError {
    fn rpc(code: i64, message: impl Into<String>) -> Self {
        Self::Rpc {
            code,
            message: message.into(),
        }
    }

    fn internal(err: impl std::fmt::Display) -> Self {
        Self::rpc(INTERNAL_ERROR, format!("the host failed: {err}"))
    }
}

/// The not-found answer of `task_id`: the same for a task never minted and one
/// of another tenant, message included.
fn not_found(task_id: &str) -> TaskError {
    TaskError::rpc(
        TASK_NOT_FOUND,
        format!("task `{task_id}` not found; use a task id this host returned to you"),
    )
}

/// The run id a message of `caller` with `message_id` is projected onto.
pub fn run_id_of(caller: &Principal, message_id: &str) -> String {
    let mut hash = Sha256::new();
    for part in [caller.tenant.as_str(), caller.id.as_str(), message_id] {
        hash.update(part.len().to_be_bytes());
        hash.update(part.as_bytes());
    }
    let digest = hex::encode(hash.finalize());
    format!("{TASK_RUN_PREFIX}{}", &digest[..32])
}

/// The A2A task state of a run. Bug under `a2a-task-auth-required`: a
/// completed run is reported as waiting for authentication (A2A-4).
pub fn task_state(status: RunStatus, mutant: Option<Mutant>) -> &'static str {
    match status {
        RunStatus::Running => "TASK_STATE_WORKING",
        RunStatus::WaitingApproval | RunStatus::WaitingInput => "TASK_STATE_INPUT_REQUIRED",
        RunStatus::Completed if mutant == Some(Mutant::A2aTaskAuthRequired) => {
            "TASK_STATE_AUTH_REQUIRED"
        }
        RunStatus::Completed => "TASK_STATE_COMPLETED",
        RunStatus::Failed => "TASK_STATE_FAILED",
        RunStatus::Cancelled => "TASK_STATE_CANCELED",
    }
}

/// What a run's `run.started` recorded of the message it was projected from.
fn started_a2a(state: &Domain, run_id: &str) -> Result<Value, TaskError> {
    let events = state
        .storage()
        .events_after(run_id, -1)
        .map_err(TaskError::internal)?;
    Ok(events
        .first()
        .map(|event| event.payload["a2a"].clone())
        .unwrap_or(Value::Null))
}

/// The `contextId` a run's message was sent in (from its `run.started`).
fn context_of(state: &Domain, run_id: &str) -> Result<String, TaskError> {
    Ok(started_a2a(state, run_id)?["contextId"]
        .as_str()
        .unwrap_or(run_id)
        .to_owned())
}

/// The A2A `Task` of a projected run.
fn task_of(state: &Domain, run: &RunRecord) -> Result<Value, TaskError> {
    Ok(json!({
        "id": run.run_id,
        "contextId": context_of(state, &run.run_id)?,
        "status": {"state": task_state(run.status, state.mutant())},
        "metadata": {"runId": run.run_id},
    }))
}

/// `params` as an object (absent ⇒ empty).
fn object_params(params: &Value) -> Result<&Map<String, Value>, TaskError> {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    match params {
        Value::Null => Ok(EMPTY.get_or_init(Map::new)),
        Value::Object(object) => Ok(object),
        _ => Err(TaskError::rpc(INVALID_PARAMS, "`params` must be an object")),
    }
}

/// A bounded non-empty string member, or `None` when absent.
fn id_member<'v>(
    object: &'v Map<String, Value>,
    member: &str,
) -> Result<Option<&'v str>, TaskError> {
    match object.get(member) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if !s.is_empty() && s.len() <= MAX_ID_LEN => Ok(Some(s)),
        Some(_) => Err(TaskError::rpc(
            INVALID_PARAMS,
            format!("`{member}` must be a non-empty string of at most {MAX_ID_LEN} characters"),
        )),
    }
}

/// The workflow a message asks for: its first `data` part as a `POST /runs`
/// body, else the noop.
fn workflow_of(message: &Map<String, Value>) -> Result<Workflow, TaskError> {
    let data = message
        .get("parts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find_map(|part| part.get("data").filter(|d| d.is_object()));
    let body = match data {
        Some(data) => data.to_string(),
        None => json!({"workflowId": NOOP_WORKFLOW}).to_string(),
    };
    Workflow::parse(body.as_bytes()).map_err(|err| {
        TaskError::rpc(
            INVALID_PARAMS,
            format!("the message's data part is not a run this host can start: {err}"),
        )
    })
}

/// The request's `tenant` (absent, null or a string).
fn tenant_of(params: &Value) -> Result<Option<&str>, TaskError> {
    match object_params(params)?.get("tenant") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(tenant)) => Ok(Some(tenant)),
        Some(_) => Err(TaskError::rpc(
            INVALID_PARAMS,
            "`tenant` must be a string: an a2aTenant GET /agents listed for you",
        )),
    }
}

/// Where the request's `tenant` routes it, within the caller's inventory
/// (RFC 0202 §D.9), and the value as given.
pub fn route<'p>(
    caller: &Principal,
    params: &'p Value,
    mutant: Option<Mutant>,
) -> Result<(Route, Option<&'p str>), TaskError> {
    let tenant = tenant_of(params)?;
    let route = agents::route(caller, tenant, mutant);
    // Bug under `agent-card-foreign-distinct`: another tenant's value is
    // refused with its own error, which tells the caller it exists (§D.7).
    if route == (Route::Unrouted { foreign: true })
        && mutant == Some(Mutant::AgentCardForeignDistinct)
    {
        return Err(TaskError::rpc(
            TASK_NOT_FOUND,
            "the agent this tenant routes to is not in your inventory",
        ));
    }
    Ok((route, tenant))
}

/// `GetExtendedAgentCard` (A2A-8): the host's 1.0 card without a `tenant`,
/// the agent's card through its routing value (`tenant`, as given), and one
/// refusal for every other value, whatever it is (RFC 0202 §D.7: the message
/// does not echo it).
pub fn get_extended_agent_card(
    route: Route,
    tenant: Option<&str>,
    base: &str,
    mutant: Option<Mutant>,
) -> Result<Value, TaskError> {
    match (route, tenant) {
        (Route::Agent(agent), Some(tenant)) => Ok(a2a::agent_card_of(agent, tenant, base, mutant)),
        (Route::Host, _) => Ok(a2a::agent_card(a2a::PREFERRED_VERSION, base, mutant)),
        _ => Err(TaskError::rpc(
            EXTENDED_CARD_NOT_CONFIGURED,
            "no extended agent card is configured for this tenant; send an a2aTenant GET /agents listed for you, or no tenant for the host's card",
        )),
    }
}

/// The agent a route addresses, if any.
fn agent_of(route: Route) -> Option<&'static InstalledAgent> {
    match route {
        Route::Agent(agent) => Some(agent),
        Route::Host | Route::Unrouted { .. } => None,
    }
}

/// `SendMessage`: the Task the message was projected onto (A2A-7), through
/// the agent `route` addresses when it addresses one (A2A-8).
pub async fn send_message(
    state: &Domain,
    caller: &Principal,
    params: &Value,
    route: Route,
) -> Result<Value, TaskError> {
    let params = object_params(params)?;
    let message = params
        .get("message")
        .and_then(Value::as_object)
        .ok_or_else(|| {
            TaskError::rpc(INVALID_PARAMS, "`params.message` must be a Message object")
        })?;
    let message_id = id_member(message, "messageId")?
        .ok_or_else(|| TaskError::rpc(INVALID_PARAMS, "`message.messageId` is required"))?;
    let workflow = workflow_of(message)?;
    // Bug under `a2a-send-not-idempotent`: every send gets a fresh run.
    let run_id = if state.mutant() == Some(Mutant::A2aSendNotIdempotent) {
        format!("{TASK_RUN_PREFIX}{}", uuid::Uuid::new_v4().simple())
    } else {
        run_id_of(caller, message_id)
    };
    // A2A-7: a repeated message answers with the run it started, in the same
    // `{task}` shape as the first answer.
    if let Some(run) = state.storage().run(&run_id).map_err(TaskError::internal)? {
        return Ok(json!({"task": task_of(state, &run)?}));
    }
    let context_id = id_member(message, "contextId")?
        .map(str::to_owned)
        .unwrap_or_else(|| format!("ctx_{run_id}"));
    let agent = agent_of(route);
    let mut a2a = json!({"messageId": message_id, "contextId": context_id});
    if let Some(agent) = agent {
        a2a["agentId"] = json!(agent.agent_id);
    }
    let mut started = Map::new();
    started.insert("a2a".to_owned(), a2a);
    // RFC 0202 §D.9: the run belongs to the caller's tenant of record. Bug
    // under `agent-card-run-in-install-tenant`: it goes to the tenant that
    // installed the agent first.
    let owner = match agent {
        Some(agent) if state.mutant() == Some(Mutant::AgentCardRunInInstallTenant) => {
            caller.clone().in_tenant(agent.install_tenant())
        }
        _ => caller.clone(),
    };
    let outcome = workflows::start_as(state, &owner, workflow, &run_id, started).await;
    // A concurrent send of the same message may have created the run first:
    // then this one fails to insert it and answers with that run.
    let run = state.storage().run(&run_id).map_err(TaskError::internal)?;
    match (outcome, run) {
        (_, Some(run)) => task_of(state, &run),
        (Err(err), None) => Err(TaskError::Http(err)),
        (Ok(_), None) => Err(TaskError::internal("the projected run vanished")),
    }
    .map(|task| json!({"task": task}))
}

/// `GetTask`: one task of the caller's tenant (A2A-6).
pub fn get_task(state: &Domain, caller: &Principal, params: &Value) -> Result<Value, TaskError> {
    let params = object_params(params)?;
    let task_id = id_member(params, "id")?
        .ok_or_else(|| TaskError::rpc(INVALID_PARAMS, "`params.id` (the task id) is required"))?;
    let run = task_id
        .starts_with(TASK_RUN_PREFIX)
        .then(|| state.storage().run(task_id))
        .transpose()
        .map_err(TaskError::internal)?
        .flatten();
    match run {
        Some(run) if run.tenant == caller.tenant => task_of(state, &run),
        // Bug under `a2a-foreign-task-403`: another tenant's task is refused
        // with 403, which tells the caller the id exists.
        Some(_) if state.mutant() == Some(Mutant::A2aForeignTask403) => Err(TaskError::Http(
            ApiError::forbidden(format!("task `{task_id}` belongs to another tenant")),
        )),
        _ => Err(not_found(task_id)),
    }
}

/// `ListTasks`: the caller's tenant's tasks, optionally of one `contextId`
/// (A2A-6: a subset of the runs the caller may list); through an agent's
/// routing value, only those sent through it (A2A-8).
pub fn list_tasks(
    state: &Domain,
    caller: &Principal,
    params: &Value,
    route: Route,
) -> Result<Value, TaskError> {
    let params = object_params(params)?;
    let context = id_member(params, "contextId")?;
    let agent = agent_of(route);
    let mutant = state.mutant();
    let runs = state
        .storage()
        .runs_with_prefix(TASK_RUN_PREFIX)
        .map_err(TaskError::internal)?;
    let mut tasks = Vec::new();
    for run in runs {
        // Bug under `a2a-list-tasks-cross-tenant`: no tenant filter. Bug under
        // `a2a-context-selects-tenant`: a contextId filter replaces it.
        let visible = run.tenant == caller.tenant
            || mutant == Some(Mutant::A2aListTasksCrossTenant)
            || (context.is_some() && mutant == Some(Mutant::A2aContextSelectsTenant));
        if !visible {
            continue;
        }
        let task = task_of(state, &run)?;
        if context.is_some_and(|c| task["contextId"] != c) {
            continue;
        }
        if let Some(agent) = agent
            && started_a2a(state, &run.run_id)?["agentId"] != agent.agent_id
        {
            continue;
        }
        tasks.push(task);
        if tasks.len() == MAX_LISTED {
            break;
        }
    }
    let listed = tasks.len();
    Ok(json!({
        "tasks": tasks,
        "nextPageToken": "",
        "pageSize": listed,
        "totalSize": listed,
    }))
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[
    MutantInfo {
        mutant: Mutant::A2aTaskAuthRequired,
        name: "a2a-task-auth-required",
        breaks: "a completed projected task is reported in state TASK_STATE_AUTH_REQUIRED (A2A-4)",
    },
    MutantInfo {
        mutant: Mutant::A2aForeignTask403,
        name: "a2a-foreign-task-403",
        breaks: "GetTask of another tenant's task answers 403, unlike an unknown id's TaskNotFoundError (A2A-6)",
    },
    MutantInfo {
        mutant: Mutant::A2aListTasksCrossTenant,
        name: "a2a-list-tasks-cross-tenant",
        breaks: "ListTasks lists every tenant's tasks (A2A-6)",
    },
    MutantInfo {
        mutant: Mutant::A2aContextSelectsTenant,
        name: "a2a-context-selects-tenant",
        breaks: "a ListTasks contextId filter replaces the caller's tenant, listing another tenant's tasks of that context (A2A-6)",
    },
    MutantInfo {
        mutant: Mutant::A2aSendNotIdempotent,
        name: "a2a-send-not-idempotent",
        breaks: "a repeated SendMessage with the same messageId starts a second run (A2A-7)",
    },
    MutantInfo {
        mutant: Mutant::AgentCardForeignDistinct,
        name: "agent-card-foreign-distinct",
        breaks: "an A2A request with another tenant's routing value gets TaskNotFoundError, unlike a never-minted value (A2A-8, RFC 0202 §D.7)",
    },
    MutantInfo {
        mutant: Mutant::AgentCardRunInInstallTenant,
        name: "agent-card-run-in-install-tenant",
        breaks: "SendMessage through an agent's routing value starts the run in the tenant that installed the agent first, not the caller's (A2A-8, RFC 0202 §D.9)",
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_run_state_is_auth_required() {
        for status in [
            RunStatus::Running,
            RunStatus::WaitingApproval,
            RunStatus::WaitingInput,
            RunStatus::Completed,
            RunStatus::Failed,
            RunStatus::Cancelled,
        ] {
            assert_ne!(task_state(status, None), "TASK_STATE_AUTH_REQUIRED");
        }
    }

    #[test]
    fn the_run_id_depends_on_tenant_principal_and_message() {
        let a = Principal::new("alice", Some("t"), &[]);
        let b = Principal::new("bob", Some("u"), &[]);
        assert_eq!(run_id_of(&a, "m1"), run_id_of(&a, "m1"));
        assert_ne!(run_id_of(&a, "m1"), run_id_of(&a, "m2"));
        assert_ne!(run_id_of(&a, "m1"), run_id_of(&b, "m1"));
    }
}
