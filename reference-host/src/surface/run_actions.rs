//! Run actions: `POST /runs/{runId}:fork` (a `mode: "replay"` fork of a
//! turn run, TURN-D5, RPL-1..3, RPL-9) and `POST /runs/{runId}:cancel`.
//!
//! axum cannot match `{runId}:fork` inside one path segment, so the route is
//! `POST /runs/{runIdAction}` and the action is what follows the last `:`.
//!
//! A replay fork is a NEW run (own id, the source's principal and tenant)
//! that executes the source's plan: model rounds go live to the provider
//! (RPL-5), and every tool emission is served from the source's records of
//! its final attempt and never dispatched ([`crate::turn::replay::serve_replay`]).
//! A fork of an effect-seam fire run serves the fired effect's record and
//! sends nothing ([`crate::surface::seams::effect_fire`]); a fork of a packs-test run
//! serves each side-effecting node its recorded outcome and re-executes the
//! pure ones ([`crate::surface::seams::packs`], RPL-2, RPL-4, RPL-5); every replay
//! fork starts with its source's effect ledger rows carried over unchanged
//! (RPL-11).
//!
//! A `mode: "branch"` fork (EFF-10) is served for `tool-receiver`
//! effect-seam fire runs only: a new run that inherits the source's events
//! up to `fromSeq` and runs the rest live, performing the effect again in
//! its own claim scope when the effect lies after `fromSeq`
//! ([`effect_fire::start_branch`]). Its ledger inherits the source's rows
//! only when it inherits the effect.

use std::time::Duration;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::json;

use crate::base::clock::now_unix_ms;
use crate::base::mutant::{Mutant, MutantInfo};
use crate::domain::Domain;
use crate::domain::effects::ledger;
use crate::domain::error::{ApiError, ErrorCode, json_response};
use crate::domain::json_body::{Fields, body_rejection, parse_object};
use crate::domain::runs::{authorize_reader, find_visible_run};
use crate::store::storage::{RunRecord, RunStatus};
use crate::surface::seams::effect_fire::{self, BranchEffect, BranchSource, FireRequest, FireSeam};
use crate::surface::seams::packs::{self, PackRunRequest};
use crate::surface::workflow_fork;
use crate::turn::control::cancelled_by;
use crate::turn::driver;
use crate::turn::ownership::cancel_run;
use crate::turn::plan::TurnPlan;
use crate::turn::records::ReplaySource;
use crate::turn::records::{self, RunMode, StoredPlan};
use crate::turn::request::TurnRunRequest;
use crate::turn::state::LoopState;

/// The fork body's members (closed).
const FORK_FIELDS: &[&str] = &["mode", "fromSeq", "runOptionsOverlay"];

/// How long `:cancel` waits for the run's loop to write `run.cancelled`.
const CANCEL_WAIT: Duration = Duration::from_secs(2);

/// Handler for `POST /runs/{runId}:{action}`.
pub async fn post_run_action(
    State(state): State<LoopState>,
    Path(segment): Path<String>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let unknown = || {
        ApiError::not_found(format!(
            "no route for POST /runs/{segment}; this host serves POST /runs/{{runId}}:fork and POST /runs/{{runId}}:cancel"
        ))
    };
    let (run_id, action) = segment.rsplit_once(':').ok_or_else(unknown)?;
    match action {
        "fork" => fork(&state, run_id, &headers, body),
        "cancel" => cancel(&state, run_id, &headers).await,
        _ => Err(unknown()),
    }
}

/// A checked fork request.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ForkRequest {
    mode: String,
    from_seq: Option<i64>,
    overlay_empty: bool,
}

fn parse_fork(body: &[u8]) -> Result<ForkRequest, ApiError> {
    let mut fields = Fields::closed(parse_object(body)?, FORK_FIELDS)?;
    let mode = fields
        .required_enum("mode", &["replay", "branch"])?
        .to_owned();
    let from_seq = fields
        .optional_int_in("fromSeq", 0, i64::MAX.unsigned_abs())?
        .and_then(|n| i64::try_from(n).ok());
    let overlay_empty = fields
        .optional_object("runOptionsOverlay")?
        .is_none_or(|overlay| overlay.is_empty());
    Ok(ForkRequest {
        mode,
        from_seq,
        overlay_empty,
    })
}

fn fork(
    state: &LoopState,
    source_run_id: &str,
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let caller = authorize_reader(state, headers)?;
    let body = body.map_err(|rejection| body_rejection(&rejection))?;
    let request = parse_fork(&body)?;
    // RPL-9: an invisible source is exactly an unknown one.
    let source = find_visible_run(state, &caller.tenant, source_run_id)?;
    let branch = request.mode == "branch";
    // EFF-10: a branch inherits the source's events up to `fromSeq`, so it
    // must say where.
    if branch && request.from_seq.is_none() {
        return Err(ApiError::validation(
            "field `fromSeq` is required for `mode: \"branch\"`: the branch inherits the source's events up to it and runs the rest live",
        ));
    }
    // Bug under `fork-overlay-accepted`: the overlay is silently ignored
    // (on replay forks; a branch always checks it).
    if !request.overlay_empty && (branch || state.mutant() != Some(Mutant::ForkOverlayAccepted)) {
        return Err(ApiError::validation(format!(
            "field `runOptionsOverlay` must be empty (or absent) for `mode: \"{}\"`: a fork re-executes the source's plan unchanged (RPL-9)",
            request.mode
        )));
    }
    let last_seq = state
        .storage()
        .events_after(&source.run_id, -1)?
        .last()
        .map_or(-1, |event| event.sequence);
    let stored = records::plan(state.storage(), &source.run_id)?;
    let fixture = workflow_fork::fixture_of(
        state,
        &source.run_id,
        stored.as_ref().map(|plan| plan.request.as_str()),
    )?;
    // runs.md §Fork: `fromSeq` defaults to 0 for a replay. The turn, fire
    // and pack forks of this host re-state their source's whole log, so
    // theirs defaults to its last sequence.
    let from_seq = request
        .from_seq
        .unwrap_or(if fixture.is_some() { 0 } else { last_seq });
    if from_seq > last_seq {
        // runs.md §Fork: a `fromSeq` not in the source log is 422
        // `fork_point_invalid`.
        return Err(ApiError::new(
            ErrorCode::ForkPointInvalid,
            format!(
                "field `fromSeq` is {from_seq}, beyond the source run's last sequence {last_seq}; send a sequence the run has"
            ),
        )
        .with_details(serde_json::Map::from_iter([(
            "lastSequence".to_owned(),
            json!(last_seq),
        )])));
    }
    if let Some(workflow) = fixture {
        if branch {
            return Err(ApiError::new(
                ErrorCode::CapabilityNotProvided,
                effect_fire::BRANCH_SOURCE_UNSUPPORTED,
            ));
        }
        let run_id = state.new_run_id(&source.tenant);
        return workflow_fork::fork_fixture_run(state, &source, workflow, &run_id, from_seq);
    }
    let branch_unsupported = || {
        ApiError::new(
            ErrorCode::CapabilityNotProvided,
            effect_fire::BRANCH_SOURCE_UNSUPPORTED,
        )
    };
    let Some(source_plan) = stored else {
        if branch {
            return Err(branch_unsupported());
        }
        return Err(ApiError::new(
            ErrorCode::CapabilityNotProvided,
            format!(
                "run `{}` is not a turn run; only turn runs (the tool loop), effect-seam fire runs and packs-test runs can be replayed here",
                source.run_id
            ),
        ));
    };
    // RPL-11: an effect-seam fire run stores a fire plan, not a turn
    // request; its fork re-drives that plan without a model. A packs-test
    // run stores its pack (RPL-4).
    let fire = FireRequest::from_stored(&source_plan.request);
    let pack = PackRunRequest::from_stored(&source_plan.request);
    let plan = match (fire, pack) {
        (Some(fire), _) => StoredKind::Fire(fire),
        (None, _) if branch => return Err(branch_unsupported()),
        (None, Some(pack)) => StoredKind::Pack(pack),
        (None, None) => StoredKind::Turn(Box::new(
            TurnRunRequest::parse(source_plan.request.as_bytes()).map_err(|_| {
                ApiError::internal(
                    "the source run's stored plan no longer parses; it cannot be replayed",
                )
            })?,
        )),
    };
    if branch {
        let StoredKind::Fire(fire) = plan else {
            return Err(branch_unsupported());
        };
        if fire.seam != FireSeam::ToolReceiver {
            return Err(branch_unsupported());
        }
        return fork_branch(state, &source, source_plan, fire, from_seq);
    }

    let run_id = create_fork_run(state, &source, &source_plan, RunMode::Replay, from_seq)?;
    inherit_effects(state, &source.run_id, &run_id)?;
    let replay = ReplaySource {
        run_id: source.run_id.clone(),
        attempt: source_plan.attempt,
    };
    match plan {
        StoredKind::Fire(fire) => effect_fire::start_replay(
            state,
            &run_id,
            &source.principal,
            &source.tenant,
            fire,
            replay,
        )?,
        StoredKind::Pack(request) => packs::start_replay(
            state,
            &run_id,
            &source.principal,
            &source.tenant,
            request.pack,
            replay,
        )?,
        StoredKind::Turn(parsed) => {
            state.catalog().register(&source.tenant, &parsed.tools);
            let mut plan = TurnPlan::new(run_id.clone(), *parsed, state.mutant());
            plan.replay = Some(replay);
            driver::start(state.clone(), plan)?;
        }
    }
    Ok(workflow_fork::fork_created(
        &run_id,
        &source.run_id,
        from_seq,
        RunMode::Replay,
        RunStatus::Running,
    ))
}

/// Create a fork's run, owned by the source's principal and tenant, and store its plan with
/// its mode and `fromSeq` (RPL-8: the webhook fan-out reads `fromSeq` from the run, so it
/// never re-delivers the prefix the fork re-states).
fn create_fork_run(
    state: &Domain,
    source: &RunRecord,
    source_plan: &StoredPlan,
    mode: RunMode,
    from_seq: i64,
) -> Result<String, ApiError> {
    let run_id = state.new_run_id(&source.tenant);
    state
        .storage()
        .create_run_in(&run_id, &source.principal, &source.tenant)?;
    records::save_fork_plan(
        state.storage(),
        &run_id,
        &source_plan.request,
        Some(&source.run_id),
        mode,
        Some(from_seq),
    )?;
    Ok(run_id)
}

/// Creates and starts the `mode: "branch"` fork of the `tool-receiver` fire
/// run `source` at `from_seq` (EFF-10) and answers its 201.
fn fork_branch(
    state: &LoopState,
    source: &RunRecord,
    source_plan: StoredPlan,
    fire: FireRequest,
    from_seq: i64,
) -> Result<Response, ApiError> {
    // Checked before the run exists: a `fromSeq` inside the effect is a 400.
    let point = effect_fire::branch_point(state, &source.run_id, from_seq)?;
    let lineage_root = lineage_root(state, &source.run_id)?;
    let run_id = create_fork_run(state, source, &source_plan, RunMode::Branch, from_seq)?;
    // An inherited effect brings its ledger rows (as a replay fork's do); an
    // effect after `fromSeq` is not the branch's history, so it gets only
    // the row of its own delivery.
    if point.effect == BranchEffect::Inherited {
        inherit_effects(state, &source.run_id, &run_id)?;
    }
    let branch = BranchSource {
        run_id: source.run_id.clone(),
        attempt: source_plan.attempt,
        lineage_root,
    };
    let status = effect_fire::start_branch(
        state,
        &run_id,
        &source.principal,
        &source.tenant,
        fire,
        branch,
        point,
    )?;
    Ok(workflow_fork::fork_created(
        &run_id,
        &source.run_id,
        from_seq,
        RunMode::Branch,
        status,
    ))
}

/// The first run of `run_id`'s fork lineage: follows stored `source_run_id`
/// links (bounded; a fork's source always exists before it, so there is no
/// cycle to follow).
fn lineage_root(state: &Domain, run_id: &str) -> Result<String, ApiError> {
    const MAX_HOPS: usize = 10_000;
    let mut current = run_id.to_owned();
    for _ in 0..MAX_HOPS {
        match records::plan(state.storage(), &current)?.and_then(|plan| plan.source_run_id) {
            Some(source) => current = source,
            None => return Ok(current),
        }
    }
    Err(ApiError::internal(
        "the source run's fork lineage is too deep to follow; fork a run nearer its root",
    ))
}

/// What a source run's stored plan is.
enum StoredKind {
    /// An effect-seam fire (RPL-11).
    Fire(FireRequest),
    /// A packs-test run (RPL-4).
    Pack(PackRunRequest),
    /// A turn run's request (boxed: it is much larger than a fire plan).
    Turn(Box<TurnRunRequest>),
}

/// RPL-11: a fork inherits its source's effect ledger rows at creation,
/// unchanged (same nodeId, attempt and `at`): they are effects the source
/// delivered, not new deliveries. Bug under `fork-ledger-restamped`: the
/// copies are stamped with the fork's creation time.
fn inherit_effects(state: &Domain, source_run_id: &str, fork_run_id: &str) -> Result<(), ApiError> {
    // One millisecond past now: always later than the source's own `at`,
    // even when the fork follows the effect within the same millisecond.
    let restamp = state
        .mutant_is(Mutant::ForkLedgerRestamped)
        .then(|| now_unix_ms() + 1);
    ledger::inherit_rows(state.storage(), source_run_id, fork_run_id, restamp)?;
    Ok(())
}

/// `:cancel` of `run_id` (also the upstream-only mode's
/// `POST /v1/runs/{runId}/cancel`, [`crate::surface::upstream`]).
pub async fn cancel(
    state: &LoopState,
    run_id: &str,
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
    let caller = authorize_reader(state, headers)?;
    cancel_and_wait(state, &caller.tenant, run_id, &cancelled_by(&caller.id)).await?;
    Ok(json_response(
        StatusCode::OK,
        &json!({"runId": run_id, "status": "cancelled"}),
    ))
}

/// `cancelRun` of `run_id` for a caller of `tenant`, writing `reason` as
/// `run.cancelled.reason`; waits (at most `CANCEL_WAIT`) until the run is
/// `cancelled`. An invisible run is exactly an unknown one (404); a terminal
/// one is the 409 `already_terminal`. The MCP mount's `tasks/cancel`
/// cancels through here too (MCP-14).
pub async fn cancel_and_wait(
    state: &LoopState,
    tenant: &str,
    run_id: &str,
    reason: &str,
) -> Result<(), ApiError> {
    let run = find_visible_run(state, tenant, run_id)?;
    if run.status.is_terminal() {
        return Err(already_terminal(run_id, run.status));
    }
    // Subscribe before signalling, so the loop's terminal write wakes us.
    let mut changes = state
        .storage()
        .subscribe_run(run_id)
        .unwrap_or_else(|| state.storage().subscribe());
    // A run with no loop here (a workflow run) is settled at once.
    cancel_run(state, run_id, reason)?;
    // The loop stops at its next await and writes `run.cancelled`; the wait
    // is bounded.
    let deadline = tokio::time::Instant::now() + CANCEL_WAIT;
    loop {
        changes.borrow_and_update();
        let now = find_visible_run(state, tenant, run_id)?;
        match now.status {
            RunStatus::Cancelled => return Ok(()),
            status if status.is_terminal() => return Err(already_terminal(run_id, status)),
            _ => {}
        }
        match tokio::time::timeout_at(deadline, changes.changed()).await {
            Ok(Ok(())) => {}
            Ok(Err(_)) | Err(_) => {
                return Err(ApiError::internal(format!(
                    "run `{run_id}` did not stop within {} s; read GET /runs/{run_id} for its status",
                    CANCEL_WAIT.as_secs()
                )));
            }
        }
    }
}

/// 409 `refhost.run_already_terminal` for a run that already finished.
/// A vendor code (ERR-1: `^(?!openwop\.)[a-z][a-z0-9]*(-[a-z0-9]+)*\.[a-z][a-z0-9_]*$`),
/// because no registered v2 code says "the run is already terminal" and a
/// borrowed idempotency code would send callers looking for a key problem.
fn already_terminal(run_id: &str, status: RunStatus) -> ApiError {
    ApiError::new(
        ErrorCode::RunAlreadyTerminal,
        format!(
            "run `{run_id}` is already {} and cannot be cancelled; nothing was changed",
            status.as_str()
        ),
    )
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[
    MutantInfo {
        mutant: Mutant::ForkOverlayAccepted,
        name: "fork-overlay-accepted",
        breaks: "a replay fork with a non-empty runOptionsOverlay is accepted (RPL-9)",
    },
    MutantInfo {
        mutant: Mutant::ForkLedgerRestamped,
        name: "fork-ledger-restamped",
        breaks: "a fork's inherited effect rows get a fresh `at` (RPL-11)",
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fork_bodies_are_closed_and_checked() {
        let ok = parse_fork(br#"{"mode": "replay", "fromSeq": 3}"#).expect("valid");
        assert_eq!(ok.mode, "replay");
        assert_eq!(ok.from_seq, Some(3));
        assert!(ok.overlay_empty);
        let overlay =
            parse_fork(br#"{"mode": "replay", "runOptionsOverlay": {"a": 1}}"#).expect("parses");
        assert!(!overlay.overlay_empty);
        for bad in [
            &br#"{}"#[..],
            br#"{"mode": "rewind"}"#,
            br#"{"mode": "replay", "fromSeq": -1}"#,
            br#"{"mode": "replay", "extra": true}"#,
            br#"{"mode": "replay", "runOptionsOverlay": []}"#,
        ] {
            let err = parse_fork(bad).expect_err("rejected");
            assert_eq!(err.code, ErrorCode::ValidationError);
        }
    }
}
