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
//! ([`serve_recorded`]) and the one call in doubt is resumed by its
//! `replayPolicy` ([`resume_in_doubt`]); the driver decides which applies.

use serde_json::Value;

use crate::base::mutant::{Mutant, MutantInfo};
use crate::base::tool_events::{ToolErrorCode, ToolReturn, ToolStatus};
use crate::domain::catalog::ReplayPolicy;
use crate::store::storage::{RunStatus, StorageError};
use crate::turn::Outcome;
use crate::turn::admission::{
    AdmissionError, Admitted, Journal, NodeHalt, On, RepeatMemory, Returned, TOOL_OUTCOME_UNKNOWN,
    TurnScope, check_gates, dispatch, find_tool, outcome_named, record_return, settle_stop,
};
use crate::turn::driver::{self, INTERNAL_ERROR, ReplaySource, RunFailure, TurnPlan};
use crate::turn::feedback::{self, CallToolResult, ToolResult};
use crate::turn::provider::{Completion, ToolEmission};
use crate::turn::records::{self, RunMode};
use crate::turn::request::TurnRunRequest;
use crate::turn::state::LoopState;
use crate::turn::trust::ContentTrust;

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

/// Serves a recorded emission during same-attempt recovery (TURN-D7): no
/// event, no dispatch; its recorded result is fed back.
pub fn serve_recorded(
    scope: &TurnScope<'_>,
    memory: &mut RepeatMemory,
    emission: &ToolEmission,
    record: records::Recorded,
) -> Admitted {
    let outcome = outcome_named(&record.outcome);
    if outcome == Outcome::Executed
        && let Ok(args) = serde_json::from_str::<Value>(&emission.arguments_text)
        && let Some(tool) = find_tool(scope.tools, &emission.name)
    {
        // A recovered executed call still suppresses identical repeats.
        memory.remember(&tool.tool_id, &args, &record.result);
    }
    Admitted {
        outcome,
        result: ToolResult {
            call_id: record.call_id,
            result: record.result,
        },
        transient: None,
        halt: None,
        deferred: None,
    }
}

/// Resumes the ONE call in doubt after a restart (TURN-D8): its
/// `agent.tool-called` and intent were written, its return was not. The
/// gates run again (a stopped call is settled as before); a cleared call is
/// re-run, with the same `Idempotency-Key`, when its `replayPolicy` is
/// `idempotent` or `deterministic`, and otherwise gets
/// `agent.tool-returned` `tool_outcome_unknown` and fails the node.
pub async fn resume_in_doubt(
    scope: &TurnScope<'_>,
    memory: &mut RepeatMemory,
    emission: &ToolEmission,
    completion: Completion,
    intent: records::Intent,
    journal: &Journal,
) -> Result<Admitted, AdmissionError> {
    let state = scope.state;
    let mutant = state.mutant();
    let key = records::tool_key_for(
        scope.identity_run_id(),
        journal.ordinal,
        scope.state.mutant(),
    );
    let mut mrtr = None;
    let (outcome, ret, result, halt) = match check_gates(scope, memory, emission, completion) {
        Err(stop) => {
            let (outcome, ret, result) = settle_stop(scope, emission, stop)?;
            (outcome, ret, result, None)
        }
        Ok((tool, args)) => {
            // Bug under `recovery-reruns-in-doubt`: the policy is ignored.
            let may_rerun = tool.replay_policy != ReplayPolicy::NonDeterministic
                || mutant == Some(Mutant::RecoveryRerunsInDoubt);
            if may_rerun {
                // The turn's trust is not known after a restart: assume the
                // stricter one.
                let on = On {
                    scope,
                    call_id: &intent.call_id,
                    call_event_id: &intent.called_event_id,
                    content_trust: ContentTrust::Untrusted,
                    key: &key,
                };
                let dispatched = dispatch(&on, tool, &args).await?;
                mrtr = dispatched.mrtr;
                memory.grant_meta_scopes(dispatched.meta_scopes);
                memory.remember(&tool.tool_id, &args, &dispatched.result);
                (Outcome::Executed, dispatched.ret, dispatched.result, None)
            } else {
                let message = format!(
                    "the host restarted while tool call `{}` was in flight; tool `{}` is non-deterministic, so it is not run again and its outcome is unknown (TURN-D8)",
                    intent.call_id, tool.tool_id
                );
                let ret = ToolReturn::failed(
                    ToolStatus::Error,
                    ToolErrorCode::ToolOutcomeUnknown,
                    message.clone(),
                    None,
                );
                let result =
                    CallToolResult::failure(feedback::failed_text(&tool.tool_id, &message), mutant);
                let halt = NodeHalt {
                    code: TOOL_OUTCOME_UNKNOWN,
                    message,
                };
                (Outcome::Executed, ret, result, Some(halt))
            }
        }
    };
    let ret = ret.with_admission(outcome.as_str());
    let returned = Returned {
        call_id: intent.call_id,
        call_event_id: intent.called_event_id,
        outcome,
        ret,
        result,
        mrtr,
    };
    let mut admitted = record_return(scope, journal, emission, returned)?;
    if halt.is_some() {
        admitted.halt = halt;
    }
    Ok(admitted)
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[
    MutantInfo {
        mutant: Mutant::RecoveryFromScratch,
        name: "recovery-from-scratch",
        breaks: "recovery ignores the records and restarts the loop from round 1, re-asking the provider and re-executing tools (TURN-D7)",
    },
    MutantInfo {
        mutant: Mutant::RecoveryRerunsInDoubt,
        name: "recovery-reruns-in-doubt",
        breaks: "after a restart the call in doubt is re-run even when its replayPolicy is non-deterministic (TURN-D8)",
    },
];
