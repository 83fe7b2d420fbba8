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
//! Content trust (TTC §C): the run starts trusted (the user's input), or
//! untrusted when it starts from inbound content (an A2A message, a voice
//! transcript: TRUST-6), and once a round's untrusted tool results are fed
//! back every later round is untrusted (the meet; only the knowledge
//! store's results carry a trust of their own, TRUST-2). Before each model
//! request the loop writes `prompt.composed {contentTrust, round}` (the
//! TRUST-1 witness). Nothing the model writes changes the trust.
//!
//! Recovery and replay (TTC §D): every model response and every tool
//! emission is recorded in the invocation log ([`crate::turn::records`])
//! before the next round; a run resumed after a restart serves its
//! recorded rounds and results and re-runs only the one call in doubt; a
//! replay fork serves the source's tool records and never dispatches; a
//! transient tool failure ends a node attempt while attempts remain, and a
//! new attempt never reads an earlier attempt's records. A replay fork's
//! live model rounds are compared with the source's (RPL-7,
//! [`crate::turn::divergence`]).
//!
//! Human input and tool support (TTC §E): a call of the run's
//! clarification tool raises a `clarification` interrupt and ends the turn
//! ([`crate::turn::clarification`]); a run with tools whose model has no
//! tool support fails before any provider request
//! ([`crate::turn::tool_support`]).
//!
//! Provider-executed tools (TTC §F): their output taints the turn like a
//! tool result, and a replay fork serves a round that ran one from the
//! source's record instead of asking the provider
//! ([`crate::turn::provider_tools`]).
//!
//! Every wait is bounded: at most `modelRounds` provider requests of at
//! most 10 s each, tool calls of at most 2 s each, a held call or an open
//! clarification waits at most the approval timeout (120 s by default) for
//! its interrupt, and host shutdown ends the loop at its next await.

use std::collections::HashSet;

use serde_json::{Value, json};
use tokio::sync::watch;

use crate::base::events::{
    NODE_FAILED, NODE_RETRYING, NODE_STARTED, NewEvent, PROMPT_COMPOSED, RUN_CANCELLED,
    RUN_COMPLETED, RUN_FAILED, RUN_STARTED, VOICE_TRANSCRIPT,
};
use crate::base::mutant::{Mutant, MutantInfo};
use crate::base::tool_events::{HOST_AGENT_ID, Transport};
use crate::domain::Domain;
use crate::store::storage::{RunStatus, StorageError, insert_event};
use crate::turn::Outcome;
use crate::turn::admission::{
    self, Admitted, Deferred, Journal, NodeHalt, RepeatMemory, TurnScope,
};
use crate::turn::allowlist;
use crate::turn::approval::{AGENT_NODE_ID, APPROVAL_EXPIRED, RoundContext};
use crate::turn::channels::{self, Channel, Classified, OutputPlan};
use crate::turn::clarification::{self, AskBudget, AskStep};
use crate::turn::divergence;
use crate::turn::feedback::{CallToolResult, ToolResult};
use crate::turn::mcp;
use crate::turn::plan::{
    HOST_SHUTDOWN, INTERNAL_ERROR, MODEL_OUTPUT_TRUNCATED, MODEL_REFUSED, MODEL_ROUNDS_EXCEEDED,
    OUTPUT_INVALID, RunFailure, TurnPlan,
};
use crate::turn::provider::{
    Completion, HostTool, ModelRequest, ModelResponse, ProviderTool, Round, ToolEmission,
    Transcript,
};
use crate::turn::provider_tools;
use crate::turn::records::{self, ToolRecord};
use crate::turn::recovery::serve;
use crate::turn::replay;
use crate::turn::request::Inbound;
use crate::turn::state::LoopState;
use crate::turn::tool_support::{self, ToolMode, ToolNeeds};
use crate::turn::trust::{self, ContentTrust};

/// The host-authored system message of every run.
pub const SYSTEM_PROMPT: &str = "You are the reference host's test agent.";

/// The final answer of a completed run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunAnswer {
    /// The answer (a JSON value for structured/prompted, a string for text).
    pub result: Value,
    /// Its channel.
    pub channel: Channel,
}

/// How a run's loop ended.
#[derive(Debug)]
enum Ended {
    /// With an answer or a failure.
    Done(Result<RunAnswer, RunFailure>),
    /// Cancelled; the `run.cancelled.reason` to write.
    Cancelled(String),
    /// The host is stopping with a durable store: the run stays `running`
    /// and is recovered at the next start.
    Suspended,
}

/// Writes `run.started` and the first `node.started` (one transaction) and
/// spawns the loop. Returns once the run is visibly started; the loop ends
/// the run with a terminal event.
pub fn start(state: LoopState, plan: TurnPlan) -> Result<(), StorageError> {
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
    if let Some(object) = payload.as_object_mut() {
        if let Some(output) = &plan.output {
            object.insert("output".into(), json!({"channel": output.channel.as_str()}));
        }
        if let Some(source) = &plan.replay {
            object.insert(
                "fork".into(),
                json!({"sourceRunId": source.run_id, "mode": "replay"}),
            );
        }
    }
    let run_id = plan.run_id.clone();
    let attempt = plan.attempt;
    let transcript = voice_transcript(plan.inbound.as_ref(), state.mutant());
    state.storage().append_event_with(
        &plan.run_id,
        NewEvent::new(RUN_STARTED, payload),
        |tx, _| {
            insert_event(tx, &run_id, node_started(attempt))?;
            // TRUST-6: announced once per run (a fork re-announces it, a
            // recovered run does not), before the first `prompt.composed`.
            if let Some(event) = transcript {
                insert_event(tx, &run_id, event)?;
            }
            Ok(())
        },
    )?;
    resume(state, plan);
    Ok(())
}

/// `voice.transcript {contentTrust, text}` for a run started from a voice
/// transcript (TRUST-6); `None` for any other run. `contentTrust` is the
/// trust the run starts with, `untrusted` on a correct host.
fn voice_transcript(inbound: Option<&Inbound>, mutant: Option<Mutant>) -> Option<NewEvent> {
    let Some(voice @ Inbound::Voice { transcript }) = inbound else {
        return None;
    };
    let trust = trust::at_start(Some(voice), mutant);
    Some(
        NewEvent::new(
            VOICE_TRANSCRIPT,
            json!({"contentTrust": trust.as_str(), "text": transcript}),
        )
        .at_node(AGENT_NODE_ID),
    )
}

/// Spawns the loop of a run that is already started (recovery).
pub fn resume(state: LoopState, plan: TurnPlan) {
    tokio::spawn(drive(state, plan));
}

/// `node.started {nodeId, attempt}` (TURN-D9: each attempt starts with one).
fn node_started(attempt: u32) -> NewEvent {
    NewEvent::new(
        NODE_STARTED,
        json!({"nodeId": AGENT_NODE_ID, "attempt": attempt}),
    )
    .at_node(AGENT_NODE_ID)
}

/// Runs the loop to its end and records how it ended.
pub async fn drive(state: LoopState, plan: TurnPlan) {
    let cancel = state.run_controls().register(&plan.run_id);
    let ended = tokio::select! {
        ended = run_loop(&state, &plan) => Ended::Done(ended),
        reason = cancelled(cancel) => Ended::Cancelled(reason),
        () = state.shutdown_requested() => {
            if state.durable() {
                Ended::Suspended
            } else {
                Ended::Done(Err(RunFailure::new(
                    HOST_SHUTDOWN,
                    "the host shut down before the run finished",
                )))
            }
        }
    };
    // If even the terminal write fails the store is gone; nobody is left
    // to tell, and the run simply stays `running`.
    let _ = settle(&state, &plan.run_id, ended);
    state.run_controls().remove(&plan.run_id);
}

/// Resolves with the `run.cancelled.reason` once the run is cancelled.
async fn cancelled(mut cancel: watch::Receiver<Option<String>>) -> String {
    loop {
        if let Some(by) = cancel.borrow_and_update().clone() {
            return by;
        }
        if cancel.changed().await.is_err() {
            // The registry dropped the sender: nobody can cancel any more.
            std::future::pending::<()>().await;
        }
    }
}

/// Appends the terminal event and settles the status in one transaction.
fn settle(state: &Domain, run_id: &str, ended: Ended) -> Result<(), StorageError> {
    match ended {
        Ended::Suspended => {}
        Ended::Cancelled(reason) => {
            state.storage().finish_run(
                run_id,
                RunStatus::Cancelled,
                None,
                NewEvent::new(RUN_CANCELLED, json!({ "reason": reason })),
            )?;
        }
        Ended::Done(Ok(answer)) => {
            let payload = json!({"result": answer.result, "channel": answer.channel.as_str()});
            state.storage().finish_run(
                run_id,
                RunStatus::Completed,
                None,
                NewEvent::new(RUN_COMPLETED, payload),
            )?;
        }
        Ended::Done(Err(failure)) => fail_run(state, run_id, &failure)?,
    }
    Ok(())
}

/// Fails the run: `node.failed` first when the node failed, then
/// `run.failed` with the same code (and the status) in one transaction.
pub fn fail_run(state: &Domain, run_id: &str, failure: &RunFailure) -> Result<(), StorageError> {
    let error = failure.error();
    if failure.node_failed {
        state.storage().append_event(
            run_id,
            NewEvent::new(
                NODE_FAILED,
                json!({"nodeId": AGENT_NODE_ID, "error": error}),
            )
            .at_node(AGENT_NODE_ID),
        )?;
    }
    state.storage().finish_run(
        run_id,
        RunStatus::Failed,
        Some(&error),
        NewEvent::new(RUN_FAILED, json!({ "error": error })),
    )?;
    Ok(())
}

/// Writes the TRUST-1 witness of the request about to be sent.
fn record_prompt(
    state: &Domain,
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

/// The node attempts: a transient tool failure ends an attempt while
/// attempts remain; the next one starts from round 1 with fresh state
/// (TURN-D9).
async fn run_loop(state: &LoopState, plan: &TurnPlan) -> Result<RunAnswer, RunFailure> {
    // HOOKS-AUTH-7: unresolvable allowlist entries are refused at load,
    // before any provider request; the run goes on with the rest.
    allowlist::refuse_unresolved(state, plan)?;
    // TURN-E3: a typed failure before any provider request, never a guess.
    let needs = ToolNeeds::of(plan);
    if tool_support::mode(needs, state.mutant()) == ToolMode::Unsupported {
        return Err(tool_support::unsupported(needs.tool_count));
    }
    let mut attempt = plan.attempt;
    let mut resume = plan.resume;
    loop {
        match Attempt::new(state, plan, attempt, resume)?.run().await? {
            AttemptEnd::Answer(answer) => return Ok(answer),
            AttemptEnd::Transient(halt) => {
                let next = attempt.saturating_add(1);
                let run_id = plan.run_id.as_str();
                let retrying = NewEvent::new(
                    NODE_RETRYING,
                    json!({
                        "nodeId": AGENT_NODE_ID,
                        "attempt": attempt,
                        "error": {"code": halt.code, "message": halt.message},
                    }),
                )
                .at_node(AGENT_NODE_ID);
                // The attempt bump, the retry and the next start commit
                // together: a restart resumes exactly the new attempt.
                state
                    .storage()
                    .append_event_with(run_id, retrying, |tx, _| {
                        records::set_attempt(tx, run_id, next)?;
                        insert_event(tx, run_id, node_started(next)).map(|_| ())
                    })?;
                attempt = next;
                resume = false;
            }
        }
    }
}

/// How one node attempt ended.
enum AttemptEnd {
    /// The run's answer.
    Answer(RunAnswer),
    /// A transient tool failure with attempts left.
    Transient(NodeHalt),
}

/// One node attempt: fresh conversation state, its own records.
struct Attempt<'a> {
    state: &'a LoopState,
    plan: &'a TurnPlan,
    scope: TurnScope<'a>,
    attempt: u32,
    memory: RepeatMemory,
    /// The per-node emission ordinal of the last admitted emission.
    ordinal: u32,
    /// Still inside the recorded part of a resumed attempt.
    recovering: bool,
    /// Rounds whose `prompt.composed` was written before a restart.
    composed: HashSet<u32>,
    /// Records the `record-after-next-round` mutant has not written yet.
    deferred: Vec<Deferred>,
    /// Clarification interrupts raised in this attempt (TURN-E1).
    asks_used: u32,
}

impl<'a> Attempt<'a> {
    fn new(
        state: &'a LoopState,
        plan: &'a TurnPlan,
        attempt: u32,
        resume: bool,
    ) -> Result<Self, RunFailure> {
        let composed = if resume {
            composed_rounds(state, &plan.run_id, attempt)?
        } else {
            HashSet::new()
        };
        Ok(Self {
            state,
            plan,
            scope: TurnScope {
                state,
                run_id: &plan.run_id,
                principal: &plan.principal,
                tools: &plan.tools,
                repeated_call: plan.limits.repeated_call,
                key_run_id: None,
            },
            attempt,
            memory: RepeatMemory::default(),
            ordinal: 0,
            recovering: resume,
            composed,
            deferred: Vec::new(),
            asks_used: 0,
        })
    }

    /// The rounds.
    async fn run(mut self) -> Result<AttemptEnd, RunFailure> {
        let state = self.state;
        let plan = self.plan;
        let mut transcript = Transcript {
            system: SYSTEM_PROMPT.to_owned(),
            user: channels::user_message(&plan.input, plan.output.as_ref()),
            rounds: Vec::new(),
        };
        // TTC §C: the user's input is trusted, inbound content is not
        // (TRUST-6); tool results taint later rounds.
        let mut content_trust = trust::at_start(plan.inbound.as_ref(), state.mutant());
        for round in 1..=plan.limits.model_rounds {
            let response = self.model_round(round, content_trust, &transcript).await?;
            // Model output never changes the trust (TTC §C).
            let round_trust = trust::after_model_output(content_trust, &response, state.mutant());
            // TURN-F3: a provider-executed tool's result is untrusted input
            // to the calls the model makes after it, and to later rounds.
            let round_trust = trust::after_provider_tools(round_trust, &response, state.mutant());
            let context = RoundContext {
                content_trust: round_trust,
                earlier_rounds: &transcript.rounds,
                this_round: &[],
            };
            match response.completion {
                Completion::Refused => {
                    // TURN-B2: each call of the message is recorded as refused;
                    // no further provider request is made.
                    if let Err(halt) = self
                        .admit_all(&response.tool_calls, Completion::Refused, context)
                        .await?
                    {
                        return Ok(AttemptEnd::Transient(halt));
                    }
                    return Err(RunFailure::new(
                        MODEL_REFUSED,
                        "the model refused; a refusal is not retried (TURN-B2)",
                    ));
                }
                Completion::Truncated => {
                    // TURN-B1: no call of a truncated message is executed.
                    if let Err(halt) = self
                        .admit_all(&response.tool_calls, Completion::Truncated, context)
                        .await?
                    {
                        return Ok(AttemptEnd::Transient(halt));
                    }
                    return Err(RunFailure::new(
                        MODEL_OUTPUT_TRUNCATED,
                        "the model's output was truncated (finish_reason length / stop_reason max_tokens); none of its tool calls was executed (TURN-B1)",
                    ));
                }
                Completion::Clean => {}
            }
            match channels::classify(&response, plan.output.as_ref()) {
                Classified::ToolCalls(calls) => {
                    let results = match self.admit_all(calls, Completion::Clean, context).await? {
                        Ok(results) => results,
                        Err(halt) => return Ok(AttemptEnd::Transient(halt)),
                    };
                    // The meet: once tool results are fed back, every later
                    // round consumed untrusted content.
                    content_trust =
                        trust::after_tool_results(round_trust, &results, state.mutant());
                    transcript.rounds.push(Round { response, results });
                }
                Classified::Answer { channel, text } => {
                    // Empty on the correct host (TURN-A2, TURN-A3); only the
                    // text mutants derive calls here.
                    let mut derived = channels::text_emissions(
                        text,
                        plan.output.as_ref(),
                        &plan.tools,
                        state.mutant(),
                    );
                    if tool_support::mode(ToolNeeds::of(plan), state.mutant()) == ToolMode::Guessed
                    {
                        derived.extend(tool_support::guessed_calls(text, &plan.tools));
                    }
                    if let Err(halt) = self.admit_all(&derived, Completion::Clean, context).await? {
                        return Ok(AttemptEnd::Transient(halt));
                    }
                    return channels::final_answer(text, plan.output.as_ref())
                        .map(|result| AttemptEnd::Answer(RunAnswer { result, channel }))
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

    /// The model response of `round`: served from the log while recovering
    /// (no provider request and no new `prompt.composed`, TURN-D7), else
    /// asked live and recorded before any of its calls is admitted.
    async fn model_round(
        &mut self,
        round: u32,
        content_trust: ContentTrust,
        transcript: &Transcript,
    ) -> Result<ModelResponse, RunFailure> {
        let storage = self.state.storage();
        let run_id = self.plan.run_id.as_str();
        if self.recovering {
            if let Some(response) = records::model(storage, run_id, self.attempt, round)? {
                return Ok(response);
            }
            // The records end here: the rest of the attempt is live.
            self.recovering = false;
        }
        // TURN-F2: suppression at the provider dispatch point. A replay
        // fork serves a round in which the provider executed a tool from
        // the source's record, so the provider never runs it again.
        if let Some(source) = &self.plan.replay
            && provider_tools::suppressed_on_replay(Some(source), self.state.mutant())
            && let Some(response) =
                provider_tools::recorded_round(storage, source, round, self.state.mutant())?
        {
            records::put_model(storage, run_id, self.attempt, round, &response)?;
            return Ok(response);
        }
        if !self.composed.contains(&round) {
            record_prompt(self.state, run_id, content_trust, round)?;
        }
        let response = ask_model(self.state, self.plan, transcript).await?;
        records::put_model(storage, run_id, self.attempt, round, &response)?;
        // RPL-7: a replay fork's live round is compared with the source's
        // round of the same number before anything of it is acted on; a
        // divergence at a refusal ends the run here, with no further
        // provider request.
        if let Some(source) = &self.plan.replay {
            divergence::check(self.state, run_id, source, round, &response)?;
        }
        // Only under `record-after-next-round`: the previous round's tool
        // records are written now, after the next response has arrived.
        for deferred in self.deferred.drain(..) {
            records::put_tool_late(
                storage,
                run_id,
                deferred.attempt,
                deferred.ordinal,
                &deferred.row,
            )?;
        }
        Ok(response)
    }

    /// Admits `emissions` in order; one result per emission. A call still
    /// `held` when admission returns had its interrupt expire: the run
    /// fails. A transient failure with attempts left ends the attempt
    /// (`Ok(Err(..))`).
    ///
    /// A raised clarification ask ends the turn (TURN-E2): every later call
    /// of the round is settled `ended-turn` without running, and only then
    /// does the loop wait for the answers.
    async fn admit_all(
        &mut self,
        emissions: &[ToolEmission],
        completion: Completion,
        context: RoundContext<'_>,
    ) -> Result<Result<Vec<ToolResult>, NodeHalt>, RunFailure> {
        let mut results = Vec::with_capacity(emissions.len());
        let mut raised: Option<(usize, clarification::Raised)> = None;
        for emission in emissions {
            self.ordinal = self.ordinal.saturating_add(1);
            // Bug under `ask-does-not-end-turn`: later calls run as usual.
            let turn_ended = raised.is_some()
                && self.plan.replay.is_none()
                && !self.state.mutant_is(Mutant::AskDoesNotEndTurn);
            let admitted = if turn_ended {
                // A second ask is the host's own tool too.
                let transport = if self
                    .plan
                    .clarification
                    .as_ref()
                    .is_some_and(|tool| tool.is_called_by(emission))
                {
                    Transport::Native
                } else {
                    Transport::Http
                };
                clarification::ended_turn(&self.scope, emission, &self.journal(), transport)?
            } else if let Some(step) = self.ask_if_called(emission, completion, context)? {
                match step {
                    AskStep::Settled(admitted) => admitted,
                    AskStep::Raised(open) => {
                        // Its result is filled in once it is answered.
                        results.push(ToolResult {
                            call_id: emission.id.clone(),
                            result: CallToolResult::failure("awaiting the answer", None),
                        });
                        raised = Some((results.len() - 1, open));
                        continue;
                    }
                }
            } else {
                let round = RoundContext {
                    this_round: &results,
                    ..context
                };
                self.admit_one(emission, completion, &round).await?
            };
            match self.take(admitted)? {
                Ok(result) => results.push(result),
                Err(transient) => return Ok(Err(transient)),
            }
        }
        if let Some((index, open)) = raised {
            let answered = open.answer(&self.scope).await?;
            if answered.expired {
                return Err(RunFailure::new(
                    clarification::CLARIFICATION_EXPIRED,
                    format!(
                        "clarification `{}` was not answered within {} s",
                        answered.admitted.result.call_id,
                        self.state.approval_timeout().as_secs_f64()
                    ),
                ));
            }
            match self.take(answered.admitted)? {
                Ok(result) => {
                    if let Some(slot) = results.get_mut(index) {
                        *slot = result;
                    }
                }
                Err(transient) => return Ok(Err(transient)),
            }
        }
        Ok(Ok(results))
    }

    /// Accounts for one admitted emission: its deferred record, a node
    /// halt, an expired approval (the run fails), a transient failure
    /// (`Ok(Err(..))`), or its result to feed back.
    fn take(&mut self, admitted: Admitted) -> Result<Result<ToolResult, NodeHalt>, RunFailure> {
        if let Some(deferred) = admitted.deferred.clone() {
            self.deferred.push(deferred);
        }
        if let Some(halt) = admitted.halt {
            return Err(RunFailure::node(halt));
        }
        if admitted.outcome == Outcome::Held {
            return Err(RunFailure::new(
                APPROVAL_EXPIRED,
                format!(
                    "tool call `{}` was held for approval and its interrupt was not resolved within {} s",
                    admitted.result.call_id,
                    self.state.approval_timeout().as_secs_f64()
                ),
            ));
        }
        if let Some(transient) = admitted.transient {
            return Ok(Err(transient));
        }
        Ok(Ok(admitted.result))
    }

    /// Where the current emission's records go.
    fn journal(&self) -> Journal {
        Journal {
            enabled: true,
            attempt: self.attempt,
            ordinal: self.ordinal,
            record_limit: self.state.record_limit_bytes(),
            record_fails: self.plan.faults.record_failure_at_ordinal == Some(self.ordinal),
            retry_on_transient: self.plan.replay.is_none()
                && self.attempt < self.plan.limits.node_attempts,
        }
    }

    /// A call of the run's clarification tool, outside a replay fork (a
    /// fork serves the recorded ask like any emission and never asks):
    /// served from this attempt's record while recovering, else asked
    /// (TURN-E1). `None` for any other call.
    fn ask_if_called(
        &mut self,
        emission: &ToolEmission,
        completion: Completion,
        context: RoundContext<'_>,
    ) -> Result<Option<AskStep>, RunFailure> {
        let plan = self.plan;
        let Some(tool) = plan.clarification.as_ref() else {
            return Ok(None);
        };
        if !tool.is_called_by(emission) || plan.replay.is_some() {
            return Ok(None);
        }
        if self.recovering {
            let storage = self.state.storage();
            match records::tool(storage, &plan.run_id, self.attempt, self.ordinal)? {
                Some(ToolRecord::Recorded(record)) => {
                    if record.outcome == Outcome::Executed.as_str() {
                        self.asks_used = self.asks_used.saturating_add(1);
                    }
                    let served =
                        serve::serve_recorded(&self.scope, &mut self.memory, emission, record);
                    return Ok(Some(AskStep::Settled(served)));
                }
                // An ask without a whole record is asked again.
                _ => self.recovering = false,
            }
        }
        let budget = AskBudget {
            used: self.asks_used,
            limit: plan.limits.clarification_rounds,
        };
        let step = clarification::ask(
            tool,
            &self.scope,
            emission,
            completion,
            context.content_trust,
            budget,
            &self.journal(),
        )?;
        if matches!(step, AskStep::Raised(_)) {
            self.asks_used = self.asks_used.saturating_add(1);
        }
        Ok(Some(step))
    }

    /// One emission: served from this attempt's record while recovering,
    /// served from the source's record in a replay fork, else admitted live.
    async fn admit_one(
        &mut self,
        emission: &ToolEmission,
        completion: Completion,
        round: &RoundContext<'_>,
    ) -> Result<Admitted, RunFailure> {
        let state = self.state;
        let mutant = state.mutant();
        let storage = state.storage();
        let run_id = self.plan.run_id.as_str();
        let journal = self.journal();
        if self.recovering {
            match records::tool(storage, run_id, self.attempt, self.ordinal)? {
                Some(ToolRecord::Recorded(record)) => {
                    return Ok(serve::serve_recorded(
                        &self.scope,
                        &mut self.memory,
                        emission,
                        record,
                    ));
                }
                Some(ToolRecord::Digest(digest)) => {
                    return Ok(self.recovered_digest(emission, digest));
                }
                Some(ToolRecord::Intent(intent)) if self.plan.replay.is_none() => {
                    // TURN-D8: the first emission called but not recorded
                    // is the one call in doubt; after it, all is live.
                    self.recovering = false;
                    return Ok(serve::resume_in_doubt(
                        &self.scope,
                        &mut self.memory,
                        emission,
                        completion,
                        intent,
                        &journal,
                    )
                    .await?);
                }
                _ => self.recovering = false,
            }
        }
        // Bug under `retry-served-records`: a new attempt is handed the
        // previous attempt's records (TURN-D9 says never).
        if mutant == Some(Mutant::RetryServedRecords)
            && self.attempt > 1
            && let Some(ToolRecord::Recorded(record)) =
                records::tool(storage, run_id, self.attempt - 1, self.ordinal)?
        {
            return Ok(serve::serve_recorded(
                &self.scope,
                &mut self.memory,
                emission,
                record,
            ));
        }
        // Bug under `replay-executes-tool`: the fork runs tools live.
        if let Some(source) = &self.plan.replay
            && mutant != Some(Mutant::ReplayExecutesTool)
        {
            let record = records::tool(storage, &source.run_id, source.attempt, self.ordinal)?;
            // RPL-10: an MCP call is served from its record like any other;
            // nothing is sent and nobody is asked again. Bug under
            // `replay-reissues-mrtr`: the recorded final MRTR retry is sent
            // to the server again (and the record served anyway).
            if mutant == Some(Mutant::ReplayReissuesMrtr)
                && let Some(ToolRecord::Recorded(recorded)) = &record
                && let Some(continuation) = &recorded.mrtr
                && let Some(tool) = self.plan.tools.iter().find(|t| t.tool_id == emission.name)
                && let Ok(args) = serde_json::from_str::<Value>(&emission.arguments_text)
            {
                let key = records::tool_key_for(run_id, self.ordinal, mutant);
                mcp::reissue_recorded_retry(state, tool, &args, &key, continuation).await;
            }
            return Ok(replay::serve_replay(
                &self.scope,
                emission,
                record,
                &journal,
            )?);
        }
        Ok(admission::admit_journaled(
            &self.scope,
            &mut self.memory,
            emission,
            completion,
            round,
            &journal,
        )
        .await?)
    }

    /// A digest met while recovering: a miss (TURN-D10), unless the
    /// `oversized-served-on-replay` mutant serves the digest itself.
    fn recovered_digest(&mut self, emission: &ToolEmission, digest: Value) -> Admitted {
        if self.state.mutant_is(Mutant::OversizedServedOnReplay) {
            return serve::serve_recorded(
                &self.scope,
                &mut self.memory,
                emission,
                records::Recorded {
                    tool_name: emission.name.clone(),
                    call_id: emission.id.clone(),
                    called_event_id: String::new(),
                    outcome: Outcome::Executed.as_str().to_owned(),
                    returned: json!({"status": "ok"}),
                    result: crate::turn::feedback::CallToolResult::success(&digest),
                    mrtr: None,
                },
            );
        }
        Admitted {
            outcome: Outcome::Invalid,
            result: ToolResult {
                call_id: emission.id.clone(),
                result: crate::turn::feedback::CallToolResult::failure(
                    "the recorded result is a digest",
                    None,
                ),
            },
            transient: None,
            halt: Some(NodeHalt {
                code: admission::REPLAY_SOURCE_MISSING,
                message: format!(
                    "tool emission {} (`{}`) was recorded only as a digest (over the record size limit), so recovery cannot serve it (TURN-D10)",
                    self.ordinal, emission.name
                ),
            }),
            deferred: None,
        }
    }
}

/// The rounds of `attempt` whose `prompt.composed` is already in the log,
/// so a resumed attempt does not write them twice.
fn composed_rounds(
    state: &Domain,
    run_id: &str,
    attempt: u32,
) -> Result<HashSet<u32>, StorageError> {
    let mut current = 0u64;
    let mut rounds = HashSet::new();
    for event in state.storage().events_after(run_id, -1)? {
        if event.event_type == NODE_STARTED {
            current = event.payload["attempt"].as_u64().unwrap_or(0);
        } else if event.event_type == PROMPT_COMPOSED
            && current == u64::from(attempt)
            && let Some(round) = event.payload["round"]
                .as_u64()
                .and_then(|r| u32::try_from(r).ok())
        {
            rounds.insert(round);
        }
    }
    Ok(rounds)
}

/// One provider request for the next round.
async fn ask_model(
    state: &LoopState,
    plan: &TurnPlan,
    transcript: &Transcript,
) -> Result<ModelResponse, RunFailure> {
    let host_tools: Vec<HostTool> = plan
        .clarification
        .iter()
        .map(|tool| tool.offered.clone())
        .collect();
    // TURN-F2: no request of a replay fork declares a server tool.
    let server_tools: &[ProviderTool] =
        if provider_tools::suppressed_on_replay(plan.replay.as_ref(), state.mutant()) {
            &[]
        } else {
            &plan.provider_tools
        };
    let guessed;
    let mut request = ModelRequest {
        spec: &plan.provider,
        tools: &plan.tools,
        host_tools: &host_tools,
        server_tools,
        transcript,
        response_schema: plan.output.as_ref().and_then(OutputPlan::enforced_schema),
        // TURN-F4: MCP tools are never delegated to the provider; the host
        // calls their servers itself. Bug under `mcp-delegated-to-provider`:
        // they are declared as Anthropic `mcp_servers` connectors too.
        delegate_mcp: state.mutant_is(Mutant::McpDelegatedToProvider),
    };
    if tool_support::mode(ToolNeeds::of(plan), state.mutant()) == ToolMode::Guessed {
        // Only under `tool-support-guessed`: the tools go into the prompt.
        guessed = Transcript {
            system: tool_support::guessed_system(&transcript.system, &plan.tools),
            ..transcript.clone()
        };
        request.tools = &[];
        request.host_tools = &[];
        request.server_tools = &[];
        request.transcript = &guessed;
    }
    let response = state.provider().complete(&request).await?;
    if response.completion == Completion::Refused && state.mutant_is(Mutant::RefusalRetried) {
        // Bug: TURN-B2 says a refusal is final; this asks again.
        return Ok(state.provider().complete(&request).await?);
    }
    Ok(response)
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[
    MutantInfo {
        mutant: Mutant::RefusalRetried,
        name: "refusal-retried",
        breaks: "a refused completion is retried once with the same request",
    },
    MutantInfo {
        mutant: Mutant::ReplayExecutesTool,
        name: "replay-executes-tool",
        breaks: "a replay fork dispatches each tool to its receiver and feeds back the live result (TURN-D5, RPL-2)",
    },
    MutantInfo {
        mutant: Mutant::RetryServedRecords,
        name: "retry-served-records",
        breaks: "a new node attempt is served the earlier attempt's tool records, so a retry is handed the recorded transient failure (TURN-D9)",
    },
    MutantInfo {
        mutant: Mutant::AskDoesNotEndTurn,
        name: "ask-does-not-end-turn",
        breaks: "calls after a clarification ask in the same round are executed instead of ended-turn (TURN-E2)",
    },
    MutantInfo {
        mutant: Mutant::ReplayReissuesMrtr,
        name: "replay-reissues-mrtr",
        breaks: "a replay fork re-sends the recorded MRTR retry to the MCP server (RPL-10)",
    },
    MutantInfo {
        mutant: Mutant::McpDelegatedToProvider,
        name: "mcp-delegated-to-provider",
        breaks: "MCP tools are passed to the provider as an Anthropic mcp_servers connector (TURN-F4)",
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::event_codes;
    use crate::turn::plan::PROVIDER_ERROR;

    #[test]
    fn run_failure_codes_are_registered_or_vendor_namespaced() {
        // HOOKS-FAIL-7.
        for code in [
            PROVIDER_ERROR,
            MODEL_REFUSED,
            MODEL_OUTPUT_TRUNCATED,
            MODEL_ROUNDS_EXCEEDED,
            OUTPUT_INVALID,
            HOST_SHUTDOWN,
            INTERNAL_ERROR,
            APPROVAL_EXPIRED,
            clarification::CLARIFICATION_EXPIRED,
            divergence::REPLAY_DIVERGED_AT_REFUSAL,
            admission::RECORD_FAILED,
            admission::REPLAY_SOURCE_MISSING,
            admission::TOOL_OUTCOME_UNKNOWN,
            admission::TOOL_TRANSIENT_FAILURE,
            tool_support::unsupported(1).code,
        ] {
            assert!(event_codes::is_conformant(code), "{code}");
        }
    }
}
