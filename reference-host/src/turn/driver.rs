//! The tool loop of one turn run: one agent node, sequential rounds.
//!
//! Each round sends the conversation to the provider and looks at how the
//! completion ended before anything else (TTC §B): a refusal ends the run
//! with no retry (TURN-B2); a truncation ends it with none of its calls
//! executed (TURN-B1). A clean completion either carries tool calls, which
//! are admitted in order and answered one result each (TTC §G) before the
//! next round, or is the final answer, validated when an output was
//! requested and never mined for tool calls (TURN-A2, TURN-A3).
//!
//! Content trust (TTC §C): the run starts trusted (the user's input), and
//! once a round's tool results are fed back every later round is untrusted
//! (the meet). Before each model request the loop writes
//! `prompt.composed {contentTrust, round}` (the TRUST-1 witness). Nothing
//! the model writes changes the trust.
//!
//! Every wait is bounded: at most `modelRounds` provider requests of at
//! most 10 s each, tool calls of at most 2 s each, a held call waits at
//! most the approval timeout (120 s by default) for its interrupt, and host
//! shutdown ends the loop at its next await.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::app::AppState;
use crate::catalog::FixtureTool;
use crate::events::{NewEvent, PROMPT_COMPOSED, RUN_COMPLETED, RUN_FAILED, RUN_STARTED};
use crate::mutants::Mutant;
use crate::storage::{RunStatus, StorageError};
use crate::tool_events::HOST_AGENT_ID;
use crate::turn::Outcome;
use crate::turn::admission::{self, AdmissionError, RepeatMemory, TurnScope};
use crate::turn::approval::{AGENT_NODE_ID, APPROVAL_EXPIRED, RoundContext};
use crate::turn::channels::{self, Channel, Classified, OutputPlan};
use crate::turn::feedback::ToolResult;
use crate::turn::provider::{
    Completion, ModelRequest, ModelResponse, ProviderError, ProviderSpec, Round, ToolEmission,
    Transcript,
};
use crate::turn::request::TurnLimits;
use crate::turn::trust::{self, ContentTrust};

/// The host-authored system message of every run.
pub const SYSTEM_PROMPT: &str = "You are the reference host's test agent.";

/// `run.failed` code: the provider answered non-2xx, failed, timed out or
/// cut its stream.
pub const PROVIDER_ERROR: &str = "provider_error";
/// `run.failed` code: the model refused (TURN-B2).
pub const MODEL_REFUSED: &str = "model_refused";
/// `run.failed` code: the model's output was truncated (TURN-B1).
pub const MODEL_OUTPUT_TRUNCATED: &str = "model_output_truncated";
/// `run.failed` code: one more model round was needed than allowed.
pub const MODEL_ROUNDS_EXCEEDED: &str = "model_rounds_exceeded";
/// `run.failed` code: the requested answer is not JSON matching its schema.
pub const OUTPUT_INVALID: &str = "output_invalid";
/// `run.failed` code: the host shut down mid-run.
pub const HOST_SHUTDOWN: &str = "host_shutdown";
/// `run.failed` code: the host's own store failed.
pub const INTERNAL_ERROR: &str = "internal_error";

/// Everything the loop needs; built by the seam from a checked request.
#[derive(Debug, Clone)]
pub struct TurnPlan {
    /// The run (already created, status `running`).
    pub run_id: String,
    /// The principal every call is attributed to.
    pub principal: String,
    /// The model provider.
    pub provider: ProviderSpec,
    /// The run's tools.
    pub tools: Vec<Arc<FixtureTool>>,
    /// The user's task text.
    pub input: String,
    /// How the requested answer is obtained, if one was requested.
    pub output: Option<OutputPlan>,
    /// Loop limits.
    pub limits: TurnLimits,
}

/// Why a run failed (`run.failed {error: {code, message}}`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct RunFailure {
    /// Machine-readable code.
    pub code: &'static str,
    /// What happened; never a copy of provider or model text.
    pub message: String,
}

impl RunFailure {
    fn new(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

impl From<ProviderError> for RunFailure {
    fn from(err: ProviderError) -> Self {
        // Never retried: the run fails on the first provider failure.
        Self::new(PROVIDER_ERROR, err.to_string())
    }
}

impl From<AdmissionError> for RunFailure {
    fn from(_: AdmissionError) -> Self {
        Self::new(
            INTERNAL_ERROR,
            "the host could not record a tool call, so the run stopped",
        )
    }
}

/// The final answer of a completed run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunAnswer {
    /// The answer (a JSON value for structured/prompted, a string for text).
    pub result: Value,
    /// Its channel.
    pub channel: Channel,
}

/// Writes `run.started` and spawns the loop. Returns once the run is
/// visibly started; the loop ends the run with a terminal event.
pub fn start(state: AppState, plan: TurnPlan) -> Result<(), StorageError> {
    let tool_ids: Vec<&str> = plan.tools.iter().map(|t| t.tool_id.as_str()).collect();
    let mut payload = json!({
        "agentId": HOST_AGENT_ID,
        "principal": plan.principal,
        "provider": {
            "wire": plan.provider.wire.as_str(),
            "model": plan.provider.model,
            "stream": plan.provider.stream,
        },
        "tools": tool_ids,
        "limits": {"modelRounds": plan.limits.model_rounds},
    });
    if let (Some(output), Some(object)) = (&plan.output, payload.as_object_mut()) {
        object.insert("output".into(), json!({"channel": output.channel.as_str()}));
    }
    state
        .storage()
        .append_event(&plan.run_id, NewEvent::new(RUN_STARTED, payload))?;
    tokio::spawn(drive(state, plan));
    Ok(())
}

/// Runs the loop to its end and records how it ended.
pub async fn drive(state: AppState, plan: TurnPlan) {
    let ended = tokio::select! {
        ended = run_loop(&state, &plan) => ended,
        () = state.shutdown_requested() => Err(RunFailure::new(
            HOST_SHUTDOWN,
            "the host shut down before the run finished",
        )),
    };
    // If even the terminal write fails the store is gone; nobody is left
    // to tell, and the run simply stays `running`.
    let _ = settle(&state, &plan.run_id, ended);
}

/// Appends the terminal event and settles the status in one transaction.
fn settle(
    state: &AppState,
    run_id: &str,
    ended: Result<RunAnswer, RunFailure>,
) -> Result<(), StorageError> {
    match ended {
        Ok(answer) => {
            let payload = json!({"result": answer.result, "channel": answer.channel.as_str()});
            state.storage().finish_run(
                run_id,
                RunStatus::Completed,
                None,
                NewEvent::new(RUN_COMPLETED, payload),
            )?;
        }
        Err(failure) => {
            let error = json!({"code": failure.code, "message": failure.message});
            state.storage().finish_run(
                run_id,
                RunStatus::Failed,
                Some(&error),
                NewEvent::new(RUN_FAILED, json!({ "error": error })),
            )?;
        }
    }
    Ok(())
}

/// Writes the TRUST-1 witness of the request about to be sent.
fn record_prompt(
    state: &AppState,
    run_id: &str,
    trust: ContentTrust,
    round: u32,
) -> Result<(), RunFailure> {
    let event = NewEvent::new(
        PROMPT_COMPOSED,
        json!({"contentTrust": trust.as_str(), "round": round}),
    )
    .at_node(AGENT_NODE_ID);
    state
        .storage()
        .append_event(run_id, event)
        .map(|_| ())
        .map_err(|_| {
            RunFailure::new(
                INTERNAL_ERROR,
                "the host could not record the next prompt, so the run stopped",
            )
        })
}

/// The rounds.
async fn run_loop(state: &AppState, plan: &TurnPlan) -> Result<RunAnswer, RunFailure> {
    let scope = TurnScope {
        state,
        run_id: &plan.run_id,
        principal: &plan.principal,
        tools: &plan.tools,
        repeated_call: plan.limits.repeated_call,
    };
    let mut memory = RepeatMemory::default();
    let mut transcript = Transcript {
        system: SYSTEM_PROMPT.to_owned(),
        user: channels::user_message(&plan.input, plan.output.as_ref()),
        rounds: Vec::new(),
    };
    // TTC §C: the user's input is trusted; tool results taint later rounds.
    let mut content_trust = ContentTrust::USER_INPUT;
    for round in 1..=plan.limits.model_rounds {
        record_prompt(state, &plan.run_id, content_trust, round)?;
        let response = ask_model(state, plan, &transcript).await?;
        // Model output never changes the trust (TTC §C).
        let round_trust = trust::after_model_output(content_trust, &response, state.mutant());
        let context = RoundContext {
            content_trust: round_trust,
            earlier_rounds: &transcript.rounds,
            this_round: &[],
        };
        match response.completion {
            Completion::Refused => {
                // TURN-B2: each call of the message is recorded as refused;
                // no further provider request is made.
                admit_all(
                    &scope,
                    &mut memory,
                    &response.tool_calls,
                    Completion::Refused,
                    context,
                )
                .await?;
                return Err(RunFailure::new(
                    MODEL_REFUSED,
                    "the model refused; a refusal is not retried (TURN-B2)",
                ));
            }
            Completion::Truncated => {
                // TURN-B1: no call of a truncated message is executed.
                admit_all(
                    &scope,
                    &mut memory,
                    &response.tool_calls,
                    Completion::Truncated,
                    context,
                )
                .await?;
                return Err(RunFailure::new(
                    MODEL_OUTPUT_TRUNCATED,
                    "the model's output was truncated (finish_reason length / stop_reason max_tokens); none of its tool calls was executed (TURN-B1)",
                ));
            }
            Completion::Clean => {}
        }
        match channels::classify(&response, plan.output.as_ref()) {
            Classified::ToolCalls(calls) => {
                let results =
                    admit_all(&scope, &mut memory, calls, Completion::Clean, context).await?;
                // The meet: once tool results are fed back, every later
                // round consumed untrusted content.
                content_trust = trust::after_tool_results(round_trust, &results, state.mutant());
                transcript.rounds.push(Round { response, results });
            }
            Classified::Answer { channel, text } => {
                // Empty on the correct host (TURN-A2, TURN-A3); only the
                // text mutants derive calls here.
                let derived = channels::text_emissions(
                    text,
                    plan.output.as_ref(),
                    &plan.tools,
                    state.mutant(),
                );
                admit_all(&scope, &mut memory, &derived, Completion::Clean, context).await?;
                return channels::final_answer(text, plan.output.as_ref())
                    .map(|result| RunAnswer { result, channel })
                    .map_err(|message| RunFailure::new(OUTPUT_INVALID, message));
            }
        }
    }
    Err(RunFailure::new(
        MODEL_ROUNDS_EXCEEDED,
        format!(
            "the run needed more than its {} model round(s)",
            plan.limits.model_rounds
        ),
    ))
}

/// One provider request for the next round.
async fn ask_model(
    state: &AppState,
    plan: &TurnPlan,
    transcript: &Transcript,
) -> Result<ModelResponse, RunFailure> {
    let request = ModelRequest {
        spec: &plan.provider,
        tools: &plan.tools,
        transcript,
        response_schema: plan.output.as_ref().and_then(OutputPlan::enforced_schema),
    };
    let response = state.provider().complete(&request).await?;
    if response.completion == Completion::Refused && state.mutant_is(Mutant::RefusalRetried) {
        // Bug: TURN-B2 says a refusal is final; this asks again.
        return Ok(state.provider().complete(&request).await?);
    }
    Ok(response)
}

/// Admits `emissions` in order; one result per emission. A call still
/// `held` when admission returns had its interrupt expire: the run fails.
async fn admit_all(
    scope: &TurnScope<'_>,
    memory: &mut RepeatMemory,
    emissions: &[ToolEmission],
    completion: Completion,
    context: RoundContext<'_>,
) -> Result<Vec<ToolResult>, RunFailure> {
    let mut results = Vec::with_capacity(emissions.len());
    for emission in emissions {
        let round = RoundContext {
            this_round: &results,
            ..context
        };
        let admitted =
            admission::admit_in_round(scope, memory, emission, completion, &round).await?;
        if admitted.outcome == Outcome::Held {
            return Err(RunFailure::new(
                APPROVAL_EXPIRED,
                format!(
                    "tool call `{}` was held for approval and its interrupt was not resolved within {} s",
                    admitted.result.call_id,
                    scope.state.approval_timeout().as_secs_f64()
                ),
            ));
        }
        results.push(admitted.result);
    }
    Ok(results)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_failures_keep_the_reason_only() {
        let failure = RunFailure::from(ProviderError::Status(502));
        assert_eq!(failure.code, PROVIDER_ERROR);
        assert_eq!(failure.message, "provider answered HTTP 502");
    }
}
