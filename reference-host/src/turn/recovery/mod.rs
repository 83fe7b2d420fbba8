//! Start-up recovery on a durable store (TTC §D, TURN-D7, TURN-D8).
//!
//! Every turn run still `running` is resumed in its current node attempt:
//! its recorded model rounds and tool results are served, the one call in
//! doubt is settled by its `replayPolicy`, and what follows runs live (see
//! [`crate::turn::driver`]). A turn run `waiting-approval` or
//! `waiting-input` is failed with `internal_error`: its interrupt lived in
//! memory and cannot be resolved any more. Any other run found in flight (a workflow run) is failed with
//! `internal_error` saying the host restarted.
//!
//! Inside a resumed attempt, a recorded emission is served from its record
//! and the one call in doubt is resumed by its `replayPolicy` ([`serve`]);
//! the driver decides which applies. Start-up (here) sits above the loop,
//! which it starts; serving ([`serve`]) sits below it, which calls it.

pub mod serve;

use crate::base::mutant::{Mutant, MutantInfo};
use crate::store::storage::{RunStatus, StorageError};
use crate::turn::driver;
use crate::turn::plan::{INTERNAL_ERROR, RunFailure, TurnPlan};
use crate::turn::records::{self, ReplaySource, RunMode};
use crate::turn::request::TurnRunRequest;
use crate::turn::state::LoopState;

/// What start-up recovery did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recovered {
    /// Turn runs resumed.
    pub resumed: Vec<String>,
    /// Runs failed with `internal_error`.
    pub failed: Vec<String>,
}

/// Resumes or fails every run found in flight. Must run inside the async
/// runtime (resumed loops are spawned).
pub fn recover(state: &LoopState) -> Result<Recovered, StorageError> {
    let mut recovered = Recovered::default();
    for run in state.storage().runs_in_flight()? {
        let run_id = run.run_id.clone();
        let stored = records::plan(state.storage(), &run_id)?;
        let plan = match (stored, run.status) {
            (None, _) => Err(
                "the host restarted while the run was in flight; only turn runs are recovered",
            ),
            (Some(_), RunStatus::WaitingApproval) => Err(
                "the host restarted while a tool call was held for approval; the interrupt is lost, so the run cannot go on",
            ),
            (Some(_), RunStatus::WaitingInput) => Err(
                "the host restarted while a clarification waited for input; the interrupt is lost, so the run cannot go on",
            ),
            (Some(stored), _) => resumable(state, &run_id, &run.tenant, stored)?.ok_or(
                "the host restarted and the run's stored plan could not be read back, so it cannot be resumed",
            ),
        };
        match plan {
            Ok(plan) => {
                driver::resume(state.clone(), plan);
                recovered.resumed.push(run_id);
            }
            Err(message) => {
                driver::fail_run(state, &run_id, &RunFailure::new(INTERNAL_ERROR, message))?;
                recovered.failed.push(run_id);
            }
        }
    }
    Ok(recovered)
}

/// The plan that resumes `run_id` in its current attempt, or `None` when
/// its stored request no longer parses.
fn resumable(
    state: &LoopState,
    run_id: &str,
    tenant: &str,
    stored: records::StoredPlan,
) -> Result<Option<TurnPlan>, StorageError> {
    let Ok(request) = TurnRunRequest::parse(stored.request.as_bytes()) else {
        return Ok(None);
    };
    state.catalog().register(tenant, &request.tools);
    let mut plan = TurnPlan::new(run_id.to_owned(), request, state.mutant());
    plan.attempt = stored.attempt;
    // TURN-D7: serve the records. Bug under `recovery-from-scratch`: they
    // are ignored and the attempt restarts from round 1.
    plan.resume = !state.mutant_is(Mutant::RecoveryFromScratch);
    if stored.mode == RunMode::Replay {
        let Some(source_run_id) = stored.source_run_id else {
            return Ok(None);
        };
        let attempt =
            records::plan(state.storage(), &source_run_id)?.map_or(1, |source| source.attempt);
        plan.replay = Some(ReplaySource {
            run_id: source_run_id,
            attempt,
        });
    }
    Ok(Some(plan))
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[MutantInfo {
    mutant: Mutant::RecoveryFromScratch,
    name: "recovery-from-scratch",
    breaks: "recovery ignores the records and restarts the loop from round 1, re-asking the provider and re-executing tools (TURN-D7)",
}];
