//! Replay forks of the instant fixture workflow runs (`conformance-noop`,
//! `conformance-idempotent`, also `/v1/runs`' and the v2 upstream-only
//! mode's): `POST /runs/{runId}:fork {mode: "replay", fromSeq?}` (RPL-1,
//! RPL-6, RPL-9; runs.md §Fork, replay.md).
//!
//! The fork is a new run of the source's principal and tenant. The source's
//! events with `sequence < fromSeq` are its fixed history, copied in order
//! (same sequence, type and payload; new event id and timestamp); from
//! `fromSeq` on the workflow re-executes: `run.started` (annotated with
//! `fork {sourceRunId, mode}`) when the prefix lacks it, then
//! `run.completed`. These workflows perform no effect, so nothing is
//! suppressed. `fromSeq` defaults to 0 (runs.md §Fork). The fork's plan is
//! stored like any fork's ([`records::save_fork_plan`]), so a fork of the
//! fork is one too and the webhook fan-out never re-delivers the prefix
//! (RPL-8).

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};

use crate::base::events::{NewEvent, RUN_COMPLETED, RUN_STARTED};
use crate::base::mutant::{Mutant, MutantInfo};
use crate::domain::Domain;
use crate::domain::error::{ApiError, json_response};
use crate::domain::workflows::{IDEMPOTENT_WORKFLOW, NOOP_WORKFLOW};
use crate::store::storage::{RunRecord, RunStatus};
use crate::turn::records::{self, RunMode};

/// The plan member naming the fixture a fork re-executes.
const PLAN_KEY: &str = "fixtureWorkflow";

/// The instant fixture a run ran: from its stored fork plan, or from its
/// `run.started` when it was started by `POST /runs` (no plan). `None` for
/// any other run.
pub fn fixture_of(
    state: &Domain,
    run_id: &str,
    plan_request: Option<&str>,
) -> Result<Option<&'static str>, ApiError> {
    let named = match plan_request {
        Some(request) => serde_json::from_str::<Value>(request)
            .ok()
            .and_then(|plan| plan[PLAN_KEY].as_str().map(str::to_owned)),
        None => state
            .storage()
            .events_after(run_id, -1)?
            .into_iter()
            .find(|event| event.event_type == RUN_STARTED)
            .and_then(|event| event.payload["workflowId"].as_str().map(str::to_owned)),
    };
    Ok(match named.as_deref() {
        Some(NOOP_WORKFLOW) => Some(NOOP_WORKFLOW),
        Some(IDEMPOTENT_WORKFLOW) => Some(IDEMPOTENT_WORKFLOW),
        _ => None,
    })
}

/// Creates and completes the replay fork of the fixture run `source` at
/// `from_seq` (already checked against the source's log) as `run_id`, and
/// answers its 201.
pub fn fork_fixture_run(
    state: &Domain,
    source: &RunRecord,
    workflow: &str,
    run_id: &str,
    from_seq: i64,
) -> Result<Response, ApiError> {
    let storage = state.storage();
    storage.create_run_in(run_id, &source.principal, &source.tenant)?;
    records::save_fork_plan(
        storage,
        run_id,
        &json!({ PLAN_KEY: workflow }).to_string(),
        Some(&source.run_id),
        RunMode::Replay,
        Some(from_seq),
    )?;
    // Bug under `fork-prefix-rewritten`: the fixed history is not copied;
    // the fork starts afresh with a `run.started` of its own.
    let prefix = if state.mutant_is(Mutant::ForkPrefixRewritten) {
        Vec::new()
    } else {
        storage.copy_events(&source.run_id, run_id, from_seq - 1)?
    };
    if !prefix.iter().any(|event| event.event_type == RUN_STARTED) {
        storage.append_event(
            run_id,
            NewEvent::new(
                RUN_STARTED,
                json!({
                    "workflowId": workflow,
                    "fork": {"sourceRunId": source.run_id, "mode": "replay"},
                }),
            ),
        )?;
    }
    storage.finish_run(
        run_id,
        RunStatus::Completed,
        None,
        NewEvent::new(RUN_COMPLETED, json!({ "result": Value::Null })),
    )?;
    Ok(fork_created(
        run_id,
        &source.run_id,
        from_seq,
        RunMode::Replay,
        RunStatus::Completed,
    ))
}

/// The `201` of a fork (runs.md §Fork): `{runId, sourceRunId, fromSeq, mode,
/// status, eventsUrl}`, the link carrying the run id projected into one
/// segment (identity.md §5).
pub(crate) fn fork_created(
    run_id: &str,
    source_run_id: &str,
    from_seq: i64,
    mode: RunMode,
    status: RunStatus,
) -> Response {
    json_response(
        StatusCode::CREATED,
        &json!({
            "runId": run_id,
            "sourceRunId": source_run_id,
            "fromSeq": from_seq,
            "mode": mode.as_str(),
            "status": status.as_str(),
            "eventsUrl": format!("/runs/{}/events", crate::base::ids::project(run_id)),
        }),
    )
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[MutantInfo {
    mutant: Mutant::ForkPrefixRewritten,
    name: "fork-prefix-rewritten",
    breaks: "a replay fork of a fixture run re-executes its fixed prefix instead of copying it (RPL-6)",
}];
