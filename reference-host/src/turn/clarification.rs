//! Human input through a tool (tool-turn contract §E: TURN-E1, TURN-E2,
//! TURN-E5).
//!
//! A run whose request names a `clarificationTool` offers the model one
//! more tool of that name: the host's own (no receiver), described by the
//! host and taking `{question}`. No name is reserved (TURN-E5): the name is
//! whatever the request chose.
//!
//! A call to it is admitted in the usual order (completion, name,
//! arguments, authorization; the ask consumes no rate-limit token and is
//! never a suppressed repeat, because `limits.clarificationRounds` bounds
//! it instead). Then:
//!
//! - while fewer than `clarificationRounds` asks were raised, the ask
//!   opens an `interrupt.requested {kind: "clarification"}` at the agent
//!   node and the run goes `waiting-input` (TURN-E1). The ask ENDS THE
//!   TURN (TURN-E2): earlier calls of the round have already finished
//!   (admission is sequential, so a held approval before it escalated
//!   first), and every later call of the round is settled `ended-turn`
//!   without running ([`ended_turn`]). The bound principal answers with
//!   `{"answers": {...}}`; the answers are fed back as the ask's
//!   structured result and the loop goes on. Nobody answering within the
//!   approval timeout fails the run with `refhost.clarification_expired`;
//! - one ask more is refused with `refhost.clarification_rounds_exceeded` and NO
//!   new interrupt (a typed error, never a silent drop), and the loop goes
//!   on.
//!
//! The ask is recorded like any other emission (TTC §D), so recovery and a
//! replay fork serve its recorded answer and never ask again.

use std::sync::Arc;
use std::time::Instant;

use serde_json::{Value, json};

use crate::base::args_schema::ArgsSchema;
use crate::base::mutant::{Mutant, MutantInfo};
use crate::base::tool_events::{ToolErrorCode, ToolReturn, ToolStatus, Transport};
use crate::domain::gates::{Bucket, Gate, Grant, Pipeline};
use crate::domain::interrupts::{HoldRequest, InterruptKind, Pending, WaitEnd};
use crate::turn::Outcome;
use crate::turn::admission::error::AdmissionError;
use crate::turn::admission::{self, Admitted, Check, Journal, Returned, Stop, TurnScope};
use crate::turn::approval::AGENT_NODE_ID;
use crate::turn::channels::minted_call_id;
use crate::turn::feedback::CallToolResult;
use crate::turn::provider::{Completion, HostTool, ToolEmission};
use crate::turn::trust::ContentTrust;

/// The host-authored description of the clarification tool.
pub const DESCRIPTION: &str = "Ask the user a question and wait for the answer";

/// `run.failed` code: a clarification ask was not answered in time.
/// Vendor-namespaced (HOOKS-FAIL-7).
pub const CLARIFICATION_EXPIRED: &str = "refhost.clarification_expired";

/// The clarification tool's input schema:
/// `{question: non-empty string}`, nothing else.
pub fn input_schema() -> Value {
    json!({
        "type": "object",
        "required": ["question"],
        "properties": {"question": {"type": "string", "minLength": 1}},
        "additionalProperties": false
    })
}

/// The run's clarification tool.
#[derive(Debug, Clone)]
pub struct ClarificationTool {
    /// How it is offered to the model.
    pub offered: HostTool,
    validator: Arc<ArgsSchema>,
}

impl ClarificationTool {
    /// The clarification tool called `name` (already checked by the request
    /// parser). `None` only if the fixed schema failed to compile, which it
    /// does not.
    pub fn new(name: &str) -> Option<Self> {
        let schema = input_schema();
        let validator = ArgsSchema::compile(&schema).ok()?;
        Some(Self {
            offered: HostTool {
                name: name.to_owned(),
                description: DESCRIPTION,
                input_schema: schema,
            },
            validator: Arc::new(validator),
        })
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.offered.name
    }

    /// Whether `emission` calls it.
    pub fn is_called_by(&self, emission: &ToolEmission) -> bool {
        emission.name == self.offered.name
    }

    /// The admission gates of an ask, in the contract's order, through the
    /// one gate pipeline: completion, (name: known), arguments,
    /// authorization (no scope is required, but an unknown principal or a
    /// failing resolver still denies: fail closed). An ask takes no token.
    /// Returns the question.
    fn check(
        &self,
        scope: &TurnScope<'_>,
        emission: &ToolEmission,
        completion: Completion,
    ) -> Result<String, Stop> {
        let pipeline = Pipeline {
            gates: &[
                Gate::Own(Check::Completion),
                Gate::Own(Check::Arguments),
                Gate::Authorize,
            ],
            principal: scope.principal,
            tool: self.name(),
            required_scopes: &[],
            grant: Grant::Resolved,
            bucket: Bucket::Take,
        };
        let mut question = String::new();
        pipeline
            .run(scope.state, |check| match check {
                Check::Completion => admission::completion_gate(completion),
                Check::Arguments => {
                    let parsed: Value = serde_json::from_str(&emission.arguments_text)
                        .map_err(|_| Stop::Unparseable)?;
                    if let Some(violation) = self.validator.first_violation(&parsed) {
                        return Err(Stop::InvalidArgs(violation));
                    }
                    question = parsed["question"].as_str().unwrap_or_default().to_owned();
                    Ok(())
                }
                // Not in this pipeline: the name is known, and an ask is no
                // repeatable effect.
                Check::Name | Check::Repeat => Ok(()),
            })
            .map_err(Stop::from)?;
        Ok(question)
    }
}

/// Where the run stands with its asks.
#[derive(Debug, Clone, Copy)]
pub struct AskBudget {
    /// Asks raised so far in this node attempt.
    pub used: u32,
    /// `limits.clarificationRounds`.
    pub limit: u32,
}

/// How an ask's admission went.
#[derive(Debug)]
pub enum AskStep {
    /// Settled without an interrupt (a gate stopped it, or the rounds are
    /// used up): feed its result back and go on with the round.
    Settled(Admitted),
    /// Raised: the interrupt is open and the run is `waiting-input`. The
    /// caller settles the round's later calls, then [`Raised::answer`]s.
    Raised(Raised),
}

/// An open clarification ask.
#[derive(Debug)]
pub struct Raised {
    pending: Pending,
    call_id: String,
    call_event_id: String,
    journal: Journal,
    emission: ToolEmission,
    asked_at: Instant,
}

/// Admits one call of the clarification tool (see the module docs).
pub fn ask(
    tool: &ClarificationTool,
    scope: &TurnScope<'_>,
    emission: &ToolEmission,
    completion: Completion,
    content_trust: ContentTrust,
    budget: AskBudget,
    journal: &Journal,
) -> Result<AskStep, AdmissionError> {
    let state = scope.state;
    let call_id = if emission.id.is_empty() {
        minted_call_id()
    } else {
        emission.id.clone()
    };
    let call_event_id =
        admission::record_call_via(scope, journal, emission, &call_id, Transport::Native)?;
    let settled = |outcome: Outcome, ret: ToolReturn, result: CallToolResult| {
        let returned = Returned {
            call_id: call_id.clone(),
            call_event_id: call_event_id.clone(),
            outcome,
            ret: ret.with_admission(outcome.as_str()),
            result,
            mrtr: None,
        };
        admission::record_return(scope, journal, emission, returned).map(AskStep::Settled)
    };
    let question = match tool.check(scope, emission, completion) {
        Ok(question) => question,
        Err(stop) => {
            let (outcome, ret, result) = admission::settle_stop(scope, emission, stop)?;
            return settled(outcome, ret, result);
        }
    };
    // TURN-E1: bounded by clarificationRounds; one more ask is a typed
    // refusal, not a new interrupt. Bug under `clarification-unbounded`:
    // it raises another interrupt anyway.
    if budget.used >= budget.limit && !state.mutant_is(Mutant::ClarificationUnbounded) {
        let message = format!(
            "the run already raised its {} clarification round(s) (limits.clarificationRounds); this ask was not raised (TURN-E1)",
            budget.limit
        );
        let ret = ToolReturn::failed(
            ToolStatus::Error,
            ToolErrorCode::ClarificationRoundsExceeded,
            message,
            None,
        );
        let result = CallToolResult::failure(
            format!(
                "No more questions can be asked in this run (limit {}). Continue with what you know.",
                budget.limit
            ),
            state.mutant(),
        );
        return settled(Outcome::Refused, ret, result);
    }
    let pending = state.interrupts().open(
        state.storage(),
        HoldRequest {
            kind: InterruptKind::Clarification,
            question: Some(&question),
            run_id: scope.run_id,
            node_id: AGENT_NODE_ID,
            call_id: &call_id,
            tool_name: tool.name(),
            bound_principal: scope.principal,
            content_trust,
            causation: &call_event_id,
            inputs: &[],
        },
    )?;
    Ok(AskStep::Raised(Raised {
        pending,
        call_id,
        call_event_id,
        journal: *journal,
        emission: emission.clone(),
        asked_at: Instant::now(),
    }))
}

/// How a raised ask ended.
#[derive(Debug)]
pub struct Answered {
    /// The ask's admission (its return is written and recorded).
    pub admitted: Admitted,
    /// Nobody answered in time: the run fails with
    /// [`CLARIFICATION_EXPIRED`].
    pub expired: bool,
}

impl Raised {
    /// Waits (bounded by the host's approval timeout) for the bound
    /// principal's answers, then writes the ask's return: `ok` with the
    /// time waited as `durationMs` and the answers fed back as its
    /// structured result, or `clarification_expired`.
    pub async fn answer(self, scope: &TurnScope<'_>) -> Result<Answered, AdmissionError> {
        let state = scope.state;
        let Self {
            pending,
            call_id,
            call_event_id,
            journal,
            emission,
            asked_at,
        } = self;
        let (outcome, ret, result, expired) = match pending.wait(state.approval_timeout()).await {
            WaitEnd::Resolved(resolution) => {
                let answers = resolution.answers.unwrap_or_else(|| json!({}));
                let waited = u64::try_from(asked_at.elapsed().as_millis()).unwrap_or(u64::MAX);
                (
                    Outcome::Executed,
                    ToolReturn::ok(waited),
                    CallToolResult::success(&answers),
                    false,
                )
            }
            WaitEnd::Expired => {
                let message = format!(
                    "the clarification was not answered within {} s",
                    state.approval_timeout().as_secs_f64()
                );
                (
                    Outcome::Held,
                    ToolReturn::failed(
                        ToolStatus::Error,
                        ToolErrorCode::ClarificationExpired,
                        message.clone(),
                        None,
                    ),
                    CallToolResult::failure(message, state.mutant()),
                    true,
                )
            }
            WaitEnd::Lost => return Err(AdmissionError::ApprovalLost),
        };
        let returned = Returned {
            call_id,
            call_event_id,
            outcome,
            ret: ret.with_admission(outcome.as_str()),
            result,
            mrtr: None,
        };
        let admitted = admission::record_return(scope, &journal, &emission, returned)?;
        Ok(Answered { admitted, expired })
    }
}

/// Settles a call that came after a raised ask in the same round: not
/// executed, outcome `ended-turn` (TURN-E2): `agent.tool-called`, then
/// `agent.tool-returned {status: "error", error: {code: "refhost.ended_turn"}}` with
/// no `durationMs`, and an error result fed back.
pub fn ended_turn(
    scope: &TurnScope<'_>,
    emission: &ToolEmission,
    journal: &Journal,
    transport: Transport,
) -> Result<Admitted, AdmissionError> {
    let call_id = if emission.id.is_empty() {
        minted_call_id()
    } else {
        emission.id.clone()
    };
    let call_event_id = admission::record_call_via(scope, journal, emission, &call_id, transport)?;
    let outcome = Outcome::EndedTurn;
    let ret = ToolReturn::failed(
        ToolStatus::Error,
        ToolErrorCode::EndedTurn,
        "an earlier call of the same round asked the user a question, which ends the turn; this call was not executed (TURN-E2)",
        None,
    )
    .with_admission(outcome.as_str());
    let result = CallToolResult::failure(
        format!(
            "Tool {} was not run: the turn ended when you asked the user a question. Call it again after the answer if it is still needed.",
            emission.name
        ),
        scope.state.mutant(),
    );
    let returned = Returned {
        call_id,
        call_event_id,
        outcome,
        ret,
        result,
        mrtr: None,
    };
    admission::record_return(scope, journal, emission, returned)
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[MutantInfo {
    mutant: Mutant::ClarificationUnbounded,
    name: "clarification-unbounded",
    breaks: "a clarification ask past limits.clarificationRounds raises another interrupt instead of the typed refusal (TURN-E1)",
}];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tool_takes_one_non_empty_question() {
        let tool = ClarificationTool::new("ask_user").expect("compiles");
        assert_eq!(tool.name(), "ask_user");
        assert_eq!(tool.offered.description, DESCRIPTION);
        for (args, ok) in [
            (json!({"question": "Which file?"}), true),
            (json!({"question": ""}), false),
            (json!({}), false),
            (json!({"question": "a", "extra": 1}), false),
            (json!({"question": 3}), false),
        ] {
            assert_eq!(
                tool.validator.first_violation(&args).is_none(),
                ok,
                "{args}"
            );
        }
    }
}
