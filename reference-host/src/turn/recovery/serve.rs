//! Serving inside an attempt resumed after a restart (TTC §D): a recorded
//! emission is served from its record ([`serve_recorded`], TURN-D7) and the
//! one call in doubt is settled by its `replayPolicy` ([`resume_in_doubt`],
//! TURN-D8). The loop ([`crate::turn::driver`]) decides which applies.

use serde_json::Value;

use crate::base::mutant::{Mutant, MutantInfo};
use crate::base::tool_events::{ToolErrorCode, ToolReturn, ToolStatus};
use crate::domain::catalog::ReplayPolicy;
use crate::turn::Outcome;
use crate::turn::admission::error::AdmissionError;
use crate::turn::admission::{
    Admitted, Journal, NodeHalt, On, RepeatMemory, Returned, TOOL_OUTCOME_UNKNOWN, TurnScope,
    check_gates, dispatch, find_tool, outcome_named, record_return, settle_stop,
};
use crate::turn::feedback::{self, CallToolResult, ToolResult};
use crate::turn::provider::{Completion, ToolEmission};
use crate::turn::records::{self};
use crate::turn::trust::ContentTrust;

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
pub const MUTANTS: &[MutantInfo] = &[MutantInfo {
    mutant: Mutant::RecoveryRerunsInDoubt,
    name: "recovery-reruns-in-doubt",
    breaks: "after a restart the call in doubt is re-run even when its replayPolicy is non-deterministic (TURN-D8)",
}];
