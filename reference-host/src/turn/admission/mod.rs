//! Admission of one tool emission (TTC §B, RFC 0064 §B–§D).
//!
//! The gates run in the order the contract fixes, and the first gate that
//! stops an emission decides its one outcome:
//!
//! 1. completion: a call from a truncated completion is `invalid`
//!    (TURN-B1), one from a refused completion `refused` (TURN-B2);
//! 2. name: a tool the run does not have is `invalid` (never dispatched);
//! 3. arguments: parsed and validated against `inputSchema` BEFORE any gate
//!    that consults policy, so a malformed call never consumes a token or
//!    triggers an authorization record;
//! 4. trust: the round's `contentTrust` is computed by the loop (TTC §C,
//!    [`crate::turn::trust`]); it stops nothing by itself, it decides
//!    whether the approval step below holds the call;
//! 5. authorization: fail-closed on the attributed principal (RFC 0064 §C);
//! 6. limits: the per-(principal, tool) token bucket (RFC 0064 §D), then
//!    the repeated-call check; then ("6½") approval, after authorization
//!    and limits so a call policy would refuse never reaches a human, and
//!    before dispatch: a call that needs approval is HELD
//!    ([`crate::turn::approval`]) until the bound principal accepts (it
//!    runs once) or rejects (it never runs);
//! 7. redaction: nothing to redact yet (fixture tools take no credentials);
//! 8. dispatch and record: the receiver (or MCP server tool, or the host's
//!    knowledge store) is called and the result kept.
//!
//! Every emission writes `agent.tool-called` first and exactly one
//! `agent.tool-returned` (caused by it) last, both content-free. A held
//! call's return is written once its interrupt is resolved or expires.

pub mod error;

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::base::args_hash::args_hash;
use crate::base::args_schema::Violation;
use crate::base::event_codes;
use crate::base::events::{NewEvent, TOOL_CALLED, TOOL_RETURNED};
use crate::base::mutant::{Mutant, MutantInfo};
use crate::base::tool_events::{
    CallPayload, HOST_AGENT_ID, ReturnPayload, ToolErrorCode, ToolReturn, ToolStatus, Transport,
};
use crate::domain::Domain;
use crate::domain::authz::DenyReason;
use crate::domain::catalog::{FixtureTool, SafetyTier, ToolEndpoint};
use crate::domain::gates::{self, Bucket, Gate, Grant, Pipeline, Refusal};
use crate::domain::interrupts::{Action, HoldRequest, InterruptKind, WaitEnd};
use crate::domain::invoker::{InvokeResult, MAX_RECEIVER_BODY};
use crate::turn::Outcome;
use crate::turn::admission::error::AdmissionError;
use crate::turn::approval::{self, AGENT_NODE_ID, RoundContext, Verdict};
use crate::turn::channels::minted_call_id;
use crate::turn::feedback::{self, CallToolResult, ToolResult};
use crate::turn::mcp;
use crate::turn::memory;
use crate::turn::provider::{Completion, ToolEmission};
use crate::turn::records;
use crate::turn::request::RepeatedCall;
use crate::turn::trust::ContentTrust;

/// A gate only admission checks; the policy gates are [`Gate`]'s own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// How the completion ended.
    Completion,
    /// Whether the tool exists in the run.
    Name,
    /// Whether the arguments parse and satisfy `inputSchema`.
    Arguments,
    /// Whether an identical call was already executed (after the bucket).
    Repeat,
}

/// The gate order: TTC §B, unless a mutant swaps two gates.
pub fn gate_order(mutant: Option<Mutant>) -> [Gate<Check>; 6] {
    use Check::{Arguments, Completion, Name, Repeat};
    use Gate::{Authorize, Own, RateLimit};
    let mut order = [
        Own(Completion),
        Own(Name),
        Own(Arguments),
        Authorize,
        RateLimit,
        Own(Repeat),
    ];
    if mutant == Some(Mutant::AuthzBeforeArgs) {
        // Bug: policy is consulted for a call whose arguments are invalid.
        order.swap(2, 3);
    } else if mutant == Some(Mutant::LimitsBeforeAuthz) {
        // Bug: a token is consumed by a call authorization then denies (the
        // limits, bucket then repeat check, move ahead of authorization).
        order[3..].rotate_left(1);
    }
    order
}

/// Why a gate stopped an emission.
#[derive(Debug, Clone, PartialEq)]
pub enum Stop {
    /// The completion was truncated.
    Truncated,
    /// The completion was refused.
    RefusedCompletion,
    /// The tool is not one of the run's.
    UnknownTool,
    /// The arguments are not JSON.
    Unparseable,
    /// The arguments fail the input schema.
    InvalidArgs(Violation),
    /// Authorization denied.
    Forbidden {
        /// Why.
        reason: DenyReason,
        /// The decision's message.
        message: String,
    },
    /// The token bucket is empty.
    RateLimited {
        /// Whole seconds until the next token.
        retry_after_secs: u64,
        /// What the return says.
        message: String,
    },
    /// An identical call was already executed; its result is reused.
    Repeat(CallToolResult),
}

impl Stop {
    /// The outcome this stop gives the emission.
    pub fn outcome(&self) -> Outcome {
        match self {
            Self::Truncated | Self::UnknownTool | Self::Unparseable | Self::InvalidArgs(_) => {
                Outcome::Invalid
            }
            Self::RefusedCompletion | Self::Forbidden { .. } | Self::RateLimited { .. } => {
                Outcome::Refused
            }
            Self::Repeat(_) => Outcome::SuppressedRepeat,
        }
    }
}

/// What admission needs to know about the run.
#[derive(Debug, Clone, Copy)]
pub struct TurnScope<'a> {
    /// Host state.
    pub state: &'a Domain,
    /// The run.
    pub run_id: &'a str,
    /// The principal every call is attributed to.
    pub principal: &'a str,
    /// The run's tools.
    pub tools: &'a [Arc<FixtureTool>],
    /// Repeated-call policy.
    pub repeated_call: RepeatedCall,
    /// The run whose tool identity (TURN-D2) the calls carry as
    /// `Idempotency-Key`, when it is not `run_id`: a branch fork of an
    /// effect-seam fire re-sends its lineage's key (EFF-10). `None` ⇒ `run_id`.
    pub key_run_id: Option<&'a str>,
}

impl TurnScope<'_> {
    /// The run id the tool identity is derived from.
    pub(crate) fn identity_run_id(&self) -> &str {
        self.key_run_id.unwrap_or(self.run_id)
    }
}

/// Results of the run's executed calls, by (tool, canonical arguments).
#[derive(Debug, Default)]
pub struct RepeatMemory {
    executed: HashMap<String, CallToolResult>,
    /// Scopes MCP results' `_meta` claimed: always empty on a correct host
    /// (TRUST-5: a peer's `_meta` is never authority); only the
    /// `mcp-meta-grants-scopes` mutant fills it.
    meta_scopes: Vec<String>,
}

impl RepeatMemory {
    /// The identity of a call: the tool and its RFC 8785 canonical args, so
    /// key order and number spelling do not make two calls "different".
    fn key(tool: &str, args: &Value) -> Option<String> {
        let canonical = serde_json_canonicalizer::to_string(args).ok()?;
        Some(format!("{tool}\n{canonical}"))
    }

    fn earlier(&self, tool: &str, args: &Value) -> Option<&CallToolResult> {
        Self::key(tool, args).and_then(|key| self.executed.get(&key))
    }

    pub(crate) fn grant_meta_scopes(&mut self, scopes: Vec<String>) {
        for scope in scopes {
            if !self.meta_scopes.contains(&scope) {
                self.meta_scopes.push(scope);
            }
        }
    }

    pub(crate) fn remember(&mut self, tool: &str, args: &Value, result: &CallToolResult) {
        if let Some(key) = Self::key(tool, args) {
            self.executed.entry(key).or_insert_with(|| result.clone());
        }
    }
}

/// How one emission ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Admitted {
    /// Its one outcome.
    pub outcome: Outcome,
    /// The result to feed back.
    pub result: ToolResult,
    /// An executed call failed transiently and attempts remain: the loop
    /// ends this node attempt (TURN-D9).
    pub transient: Option<NodeHalt>,
    /// The node fails (a lost record, a replay miss, an outcome unknown).
    pub halt: Option<NodeHalt>,
    /// A record the `record-after-next-round` mutant has not written yet.
    pub deferred: Option<Deferred>,
}

/// Runs the gates ([`gate_order`]) through the one pipeline
/// ([`Pipeline`]); the first stop wins. On success, the tool and the parsed
/// arguments to dispatch.
///
/// Synchronous and free of I/O except the in-memory token bucket, so the
/// order is testable without a network.
pub fn check_gates<'t>(
    scope: &TurnScope<'t>,
    memory: &RepeatMemory,
    emission: &ToolEmission,
    completion: Completion,
) -> Result<(&'t FixtureTool, Value), Stop> {
    let mutant = scope.state.mutant();
    let found = find_tool(scope.tools, &emission.name);
    if completion == Completion::Truncated && mutant == Some(Mutant::TruncatedArgsExecuted) {
        // Bug under `truncated-args-executed`: the cut call is "repaired"
        // to `{}` and dispatched as it is (the completion gate is first in
        // every order, so no other gate runs).
        return found.map(|tool| (tool, json!({}))).ok_or(Stop::UnknownTool);
    }
    // RFC 0064 §C: the host resolves the principal's scopes and denies
    // whatever it cannot evaluate. TRUST-5: nothing an MCP result said
    // changes them, so `meta_scopes` is empty; only the
    // `mcp-meta-grants-scopes` mutant ([`crate::turn::mcp`]) fills it, and
    // then those scopes count as held. (An unknown tool stops at the name
    // gate, before any policy gate, so its empty requirement is never used.)
    let required: Vec<String> = found.map_or_else(Vec::new, |tool| {
        let held = |scope: &&String| !memory.meta_scopes.contains(scope);
        tool.required_scopes.iter().filter(held).cloned().collect()
    });
    let pipeline = Pipeline {
        gates: &gate_order(mutant),
        principal: scope.principal,
        // The name gate matched `tool_id` to this name exactly.
        tool: &emission.name,
        required_scopes: &required,
        grant: Grant::Resolved,
        bucket: Bucket::Take,
    };
    let mut args: Option<Value> = None;
    pipeline
        .run(scope.state, |check| match check {
            Check::Completion => completion_gate(completion),
            Check::Name => found.map(|_| ()).ok_or(Stop::UnknownTool),
            Check::Arguments => {
                let tool = found.ok_or(Stop::UnknownTool)?;
                let parsed: Value = serde_json::from_str(&emission.arguments_text)
                    .map_err(|_| Stop::Unparseable)?;
                if let Some(violation) = tool.input_validator.first_violation(&parsed) {
                    return Err(Stop::InvalidArgs(violation));
                }
                args = Some(parsed);
                Ok(())
            }
            Check::Repeat => {
                // Bug under `repeat-not-suppressed`: the check is skipped.
                let suppress = scope.repeated_call == RepeatedCall::Suppress
                    && mutant != Some(Mutant::RepeatNotSuppressed);
                let earlier = args
                    .as_ref()
                    .filter(|_| suppress)
                    .and_then(|args| memory.earlier(&emission.name, args));
                earlier.map_or(Ok(()), |earlier| Err(Stop::Repeat(earlier.clone())))
            }
        })
        .map_err(Stop::from)?;
    match (found, args) {
        (Some(tool), Some(args)) => Ok((tool, args)),
        // Every order runs Name and Arguments; this keeps the match total.
        _ => Err(Stop::UnknownTool),
    }
}

/// The completion gate (TTC §B), shared by every call a completion emits.
pub(crate) fn completion_gate(completion: Completion) -> Result<(), Stop> {
    match completion {
        Completion::Clean => Ok(()),
        // TURN-B1: cut arguments are never executed.
        Completion::Truncated => Err(Stop::Truncated),
        // TURN-B2: nothing from a refused completion runs.
        Completion::Refused => Err(Stop::RefusedCompletion),
    }
}

/// A refusal of the gate pipeline is the stop of the call it refused.
impl From<Refusal<Stop>> for Stop {
    fn from(refusal: Refusal<Stop>) -> Self {
        match refusal {
            Refusal::Own(stop) => stop,
            Refusal::Forbidden { reason, message } => Stop::Forbidden { reason, message },
            Refusal::RateLimited {
                retry_after_secs,
                message,
            } => Stop::RateLimited {
                retry_after_secs,
                message,
            },
        }
    }
}

/// The run tool called `name`, if any.
pub(crate) fn find_tool<'t>(tools: &'t [Arc<FixtureTool>], name: &str) -> Option<&'t FixtureTool> {
    tools
        .iter()
        .find(|tool| tool.tool_id == name)
        .map(Arc::as_ref)
}

/// Admits one emission of a turn that consumed only the user's input
/// (see [`admit_in_round`]).
pub async fn admit(
    scope: &TurnScope<'_>,
    memory: &mut RepeatMemory,
    emission: &ToolEmission,
    completion: Completion,
) -> Result<Admitted, AdmissionError> {
    admit_in_round(
        scope,
        memory,
        emission,
        completion,
        &RoundContext::trusted(),
    )
    .await
}

/// Appends a call's `agent.tool-returned` event and, when `write`, its record in the same
/// transaction, so a record never stands without its return (TURN-D3). Admission and replay
/// both end a call this way.
pub fn append_return(
    scope: &TurnScope<'_>,
    journal: &Journal,
    event: NewEvent,
    row: &records::RecordRow,
    write: bool,
) -> Result<(), AdmissionError> {
    let mut event = event;
    if event.payload.pointer("/error/code").is_some()
        && scope.state.mutant() == Some(Mutant::EventErrorEmptyCode)
    {
        // Bug: the return's error object loses its code (ERR-4).
        event.payload["error"]["code"] = serde_json::json!("");
    }
    scope
        .state
        .storage()
        .append_event_with(scope.run_id, event, |tx, _| {
            if write {
                records::put_tool(tx, scope.run_id, journal.attempt, journal.ordinal, row)?;
            }
            Ok(())
        })?;
    Ok(())
}

/// Where one emission's records go in the invocation log (TTC §D), and
/// what the node does about a transient failure.
#[derive(Debug, Clone, Copy)]
pub struct Journal {
    /// Whether to write records at all (the seam-less unit tests do not).
    pub enabled: bool,
    /// The node attempt the records are keyed by (TURN-D9).
    pub attempt: u32,
    /// The per-node emission ordinal (1, 2, 3 … across rounds); with the
    /// run id it is the tool identity (TURN-D2).
    pub ordinal: u32,
    /// Largest whole record body (TURN-D10).
    pub record_limit: usize,
    /// Writing this emission's record fails (the `faults` seam, TURN-D4).
    pub record_fails: bool,
    /// A transient failure of an executed call ends the attempt, because
    /// attempts remain (TURN-D9).
    pub retry_on_transient: bool,
}

impl Journal {
    /// No records (unit tests of the gates).
    pub fn unrecorded() -> Self {
        Self {
            enabled: false,
            attempt: 1,
            ordinal: 1,
            record_limit: usize::MAX,
            record_fails: false,
            retry_on_transient: false,
        }
    }
}

/// `node.failed` code: a tool record could not be written (TURN-D4).
/// Vendor-namespaced: no registered v2 code says this (HOOKS-FAIL-7).
pub const RECORD_FAILED: &str = "refhost.record_failed";
/// `node.failed` code: replay or recovery found no usable record (TURN-D6);
/// registered.
pub const REPLAY_SOURCE_MISSING: &str = event_codes::REPLAY_SOURCE_MISSING;
/// `node.failed` code: the call in doubt may not be re-run (TURN-D8), which
/// names it bare.
pub const TOOL_OUTCOME_UNKNOWN: &str = event_codes::TOOL_OUTCOME_UNKNOWN;
/// `node.retrying` code: an executed call failed transiently and attempts
/// remain (TURN-D9). Vendor-namespaced (HOOKS-FAIL-7).
pub const TOOL_TRANSIENT_FAILURE: &str = "refhost.tool_transient_failure";

/// Why the agent node stops (`node.failed`, or `node.retrying` for a
/// transient failure).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeHalt {
    /// Machine-readable code.
    pub code: &'static str,
    /// What happened.
    pub message: String,
}

/// A record whose write the `record-after-next-round` mutant deferred.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deferred {
    /// The attempt.
    pub attempt: u32,
    /// The emission ordinal.
    pub ordinal: u32,
    /// The row.
    pub row: records::RecordRow,
}

/// Admits one emission: records the call, runs the gates, holds it for
/// approval when it needs approval in this round (TTC §C), dispatches if
/// cleared, records the return, and says what to feed back.
pub async fn admit_in_round(
    scope: &TurnScope<'_>,
    memory: &mut RepeatMemory,
    emission: &ToolEmission,
    completion: Completion,
    round: &RoundContext<'_>,
) -> Result<Admitted, AdmissionError> {
    admit_journaled(
        scope,
        memory,
        emission,
        completion,
        round,
        &Journal::unrecorded(),
    )
    .await
}

/// Like [`admit_in_round`], writing the emission's intent and record to the
/// invocation log (TURN-D3) and sending its tool identity as
/// `Idempotency-Key` (TURN-D2).
pub async fn admit_journaled(
    scope: &TurnScope<'_>,
    memory: &mut RepeatMemory,
    emission: &ToolEmission,
    completion: Completion,
    round: &RoundContext<'_>,
    journal: &Journal,
) -> Result<Admitted, AdmissionError> {
    let state = scope.state;
    let mutant = state.mutant();
    let call_id = if emission.id.is_empty() {
        minted_call_id()
    } else {
        emission.id.clone()
    };
    let call_event_id = record_call(scope, journal, emission, &call_id)?;
    let key = records::tool_key_for(
        scope.identity_run_id(),
        journal.ordinal,
        scope.state.mutant(),
    );

    // Where a dispatch reports to: the same for a call run at once and one
    // run after its approval.
    let on = On {
        scope,
        call_id: &call_id,
        call_event_id: &call_event_id,
        content_trust: round.content_trust,
        key: &key,
    };
    let gated = check_gates(scope, memory, emission, completion);
    let mut transient = false;
    let mut mrtr = None;
    // An executed call (at once or once approved) is remembered for repeats.
    let mut executed = |tool: &FixtureTool, args: &Value, dispatched: Dispatched| {
        transient = dispatched.transient;
        mrtr = dispatched.mrtr;
        memory.grant_meta_scopes(dispatched.meta_scopes);
        memory.remember(&tool.tool_id, args, &dispatched.result);
        (Outcome::Executed, dispatched.ret, dispatched.result)
    };
    let (outcome, ret, result) = match gated {
        Err(stop) => settle_stop(scope, emission, stop)?,
        Ok((tool, args)) => match approval::verdict(tool, round.content_trust, mutant) {
            Verdict::Dispatch => executed(tool, &args, dispatch(&on, tool, &args).await?),
            Verdict::Refuse => {
                let (ret, result) = approval::refused_outright(&tool.tool_id, mutant);
                (Outcome::Refused, ret, result)
            }
            Verdict::Hold => {
                let request = HoldRequest {
                    kind: InterruptKind::Approval,
                    question: None,
                    run_id: scope.run_id,
                    node_id: AGENT_NODE_ID,
                    call_id: &call_id,
                    tool_name: &tool.tool_id,
                    bound_principal: scope.principal,
                    content_trust: round.content_trust,
                    causation: &call_event_id,
                    inputs: &[],
                };
                match approval::hold(state, request, round).await? {
                    WaitEnd::Resolved(resolution) if resolution.action == Action::Accept => {
                        // The approved call runs ONCE, through the normal path.
                        let dispatched = dispatch(&on, tool, &args).await?;
                        if mutant == Some(Mutant::ApprovedCallRunsTwice) {
                            // Bug: the approval is spent twice.
                            let _ = dispatch(&on, tool, &args).await?;
                        }
                        executed(tool, &args, dispatched)
                    }
                    WaitEnd::Resolved(_) => {
                        let (ret, result) = approval::rejected(&tool.tool_id, mutant);
                        (Outcome::Refused, ret, result)
                    }
                    // Its one outcome stays `held`; the loop fails the run.
                    WaitEnd::Expired => {
                        let (ret, result) = approval::expired(&tool.tool_id, mutant);
                        (Outcome::Held, ret, result)
                    }
                    WaitEnd::Lost => return Err(AdmissionError::ApprovalLost),
                }
            }
        },
    };
    let ret = ret.with_admission(outcome.as_str());
    let transient = (transient && journal.retry_on_transient).then(|| NodeHalt {
        code: TOOL_TRANSIENT_FAILURE,
        message: ret.error.as_ref().map_or_else(
            || "the tool failed transiently".to_owned(),
            |error| error.message.clone(),
        ),
    });
    let returned = Returned {
        call_id,
        call_event_id,
        outcome,
        ret,
        result,
        mrtr,
    };
    let mut admitted = record_return(scope, journal, emission, returned)?;
    admitted.transient = transient;
    Ok(admitted)
}

/// Appends `agent.tool-called` for `emission` (with its `intent` in the same
/// transaction when journaled) and returns the event id.
pub(crate) fn record_call(
    scope: &TurnScope<'_>,
    journal: &Journal,
    emission: &ToolEmission,
    call_id: &str,
) -> Result<String, AdmissionError> {
    // An MCP tool is reached over MCP, the host's own knowledge store
    // tools natively (TRUST-2); every other run tool over HTTP.
    let transport = match find_tool(scope.tools, &emission.name) {
        Some(tool) if tool.mcp().is_some() => Transport::Mcp,
        Some(tool) if tool.is_memory() => Transport::Native,
        _ => Transport::Http,
    };
    record_call_via(scope, journal, emission, call_id, transport)
}

/// [`record_call`] for a tool reached over `transport` (the host's own
/// clarification tool is `native`).
pub(crate) fn record_call_via(
    scope: &TurnScope<'_>,
    journal: &Journal,
    emission: &ToolEmission,
    call_id: &str,
    transport: Transport,
) -> Result<String, AdmissionError> {
    let mutant = scope.state.mutant();
    // RFC 0064 §B: argsHash over the parsed args (JCS + SHA-256), or over
    // the arguments text as a JSON string when it does not parse.
    let hashed = serde_json::from_str::<Value>(&emission.arguments_text)
        .unwrap_or_else(|_| Value::String(emission.arguments_text.clone()));
    let call = CallPayload {
        agent_id: Some(HOST_AGENT_ID.to_owned()),
        tool_name: emission.name.clone(),
        call_id: call_id.to_owned(),
        args_hash: args_hash(&hashed, &hashed, mutant)?,
        principal: Some(scope.principal.to_owned()),
        transport,
        inputs: None,
    };
    let event = NewEvent::new(TOOL_CALLED, serde_json::to_value(&call)?);
    let (doc, ()) = scope
        .state
        .storage()
        .append_event_with(scope.run_id, event, |tx, doc| {
            if !journal.enabled {
                return Ok(());
            }
            // The intent commits with the call event: after a crash, a
            // call event always has its intent (TURN-D8's call in doubt).
            let intent = records::Intent {
                tool_name: emission.name.clone(),
                call_id: call_id.to_owned(),
                called_event_id: doc.event_id.clone(),
            };
            records::put_intent(tx, scope.run_id, journal.attempt, journal.ordinal, &intent)
        })?;
    Ok(doc.event_id)
}

/// How one emission ended, before its return is written.
pub(crate) struct Returned {
    /// The call id fed back to the model.
    pub(crate) call_id: String,
    /// The `agent.tool-called` event id (the return is caused by it).
    pub(crate) call_event_id: String,
    /// Its one outcome.
    pub(crate) outcome: Outcome,
    /// The return to write.
    pub(crate) ret: ToolReturn,
    /// The result to feed back.
    pub(crate) result: CallToolResult,
    /// The final MRTR retry of an MCP call (kept in the record, RPL-10).
    pub(crate) mrtr: Option<mcp::Continuation>,
}

/// Appends `agent.tool-returned` (caused by the call event) and, in the
/// same transaction, the emission's record (TURN-D3). A simulated record
/// failure fails the node unless the tool is read-only (TURN-D4).
pub(crate) fn record_return(
    scope: &TurnScope<'_>,
    journal: &Journal,
    emission: &ToolEmission,
    returned: Returned,
) -> Result<Admitted, AdmissionError> {
    let mutant = scope.state.mutant();
    let Returned {
        call_id,
        call_event_id,
        outcome,
        ret,
        result,
        mrtr,
    } = returned;
    let payload = ReturnPayload {
        agent_id: Some(HOST_AGENT_ID.to_owned()),
        tool_name: emission.name.clone(),
        call_id: call_id.clone(),
        status: ret.status,
        duration_ms: ret.duration_ms,
        error: ret.error,
        outcome: None,
        // The call event carries both.
        transport: None,
        principal: None,
    };
    let mut payload = serde_json::to_value(&payload)?;
    if mutant == Some(Mutant::ResultOnReturn) {
        // Bug: the tool's result is copied onto the return (TURN-D12 keeps
        // it in the host's record only).
        payload["result"] = serde_json::to_value(&result)?;
    }
    let record = records::Recorded {
        tool_name: emission.name.clone(),
        call_id: call_id.clone(),
        called_event_id: call_event_id.clone(),
        outcome: outcome.as_str().to_owned(),
        returned: returned_fields(&payload),
        result: result.clone(),
        mrtr: mrtr.as_ref().map(mcp::Continuation::to_record),
    };
    let row = records::RecordRow::of(&record, journal.record_limit)?;
    // Bug under `record-after-next-round`: the row is handed back to the
    // loop, which writes it only after the next model response (TURN-D3
    // says before).
    let defer = journal.enabled && mutant == Some(Mutant::RecordAfterNextRound);
    let write = journal.enabled && !journal.record_fails && !defer;
    let event =
        NewEvent::new(TOOL_RETURNED, payload.clone()).caused_by(Some(call_event_id.clone()));
    append_return(scope, journal, event, &row, write)?;
    if outcome == Outcome::Executed && mutant == Some(Mutant::DoubleReturn) {
        // Bug: the call is reported as returning twice.
        let again = NewEvent::new(TOOL_RETURNED, payload).caused_by(Some(call_event_id));
        scope.state.storage().append_event(scope.run_id, again)?;
    }
    // TURN-D4: a lost record fails the node, unless re-running the tool
    // could not change anything (safetyTier `read` or `pure`).
    // Bug under `record-failure-ignored`: it never fails.
    let read_only = find_tool(scope.tools, &emission.name)
        .is_some_and(|tool| matches!(tool.safety_tier, SafetyTier::Read | SafetyTier::Pure));
    let halt = (journal.enabled
        && journal.record_fails
        && !read_only
        && mutant != Some(Mutant::RecordFailureIgnored))
    .then(|| NodeHalt {
        code: RECORD_FAILED,
        message: format!(
            "the record of tool call `{call_id}` (emission {}) could not be written, and tool `{}` is not read-only, so the node cannot be recovered or replayed (TURN-D4)",
            journal.ordinal, emission.name
        ),
    });
    Ok(Admitted {
        outcome,
        result: ToolResult { call_id, result },
        transient: None,
        halt,
        deferred: defer.then_some(Deferred {
            attempt: journal.attempt,
            ordinal: journal.ordinal,
            row,
        }),
    })
}

/// The `status`, `durationMs` and `error` members of a return payload, as
/// written (kept verbatim in the record).
pub(crate) fn returned_fields(payload: &Value) -> Value {
    let mut fields = serde_json::Map::new();
    for name in ["status", "durationMs", "error"] {
        if let Some(value) = payload.get(name) {
            fields.insert(name.to_owned(), value.clone());
        }
    }
    Value::Object(fields)
}

/// The outcome a record names (`executed` when unknown).
pub(crate) fn outcome_named(name: &str) -> Outcome {
    [
        Outcome::Refused,
        Outcome::Held,
        Outcome::SuppressedRepeat,
        Outcome::EndedTurn,
        Outcome::Invalid,
    ]
    .into_iter()
    .find(|outcome| outcome.as_str() == name)
    .unwrap_or(Outcome::Executed)
}

/// The return and feedback of a stopped emission (and the authorization
/// record of a deny).
pub(crate) fn settle_stop(
    scope: &TurnScope<'_>,
    emission: &ToolEmission,
    stop: Stop,
) -> Result<(Outcome, ToolReturn, CallToolResult), AdmissionError> {
    let mutant = scope.state.mutant();
    let name = emission.name.as_str();
    let outcome = stop.outcome();
    let failure = |message: String| CallToolResult::failure(message, mutant);
    // A call that did not run: `ok` with no duration and no error.
    let bare_ok = || ToolReturn {
        status: ToolStatus::Ok,
        duration_ms: None,
        error: None,
        outcome: None,
    };
    let (ret, result) = match stop {
        Stop::Truncated => (
            ToolReturn::failed(
                ToolStatus::Error,
                ToolErrorCode::TruncatedEmission,
                "the completion was truncated, so the call's arguments may be cut; it was not executed (TURN-B1)",
                None,
            ),
            failure(feedback::not_executed_text(name)),
        ),
        Stop::RefusedCompletion => (
            ToolReturn::failed(
                ToolStatus::Error,
                ToolErrorCode::RefusedEmission,
                "the model refused the completion, so none of its calls is executed (TURN-B2)",
                None,
            ),
            failure(feedback::not_executed_text(name)),
        ),
        Stop::UnknownTool => {
            let available: Vec<&str> = scope.tools.iter().map(|t| t.tool_id.as_str()).collect();
            let ret = if mutant == Some(Mutant::UnknownToolBareSuccess) {
                // Bug: a call that went nowhere is reported as a success.
                bare_ok()
            } else {
                ToolReturn::failed(
                    ToolStatus::Error,
                    ToolErrorCode::UnknownTool,
                    "the model named a tool this run does not have; it was not dispatched",
                    None,
                )
            };
            (ret, failure(feedback::unknown_tool_text(&available)))
        }
        // HOOKS-FAIL-7: argument failures carry the registered
        // `validation_error` (bare `invalid_args` only under the
        // `event-codes-unregistered` mutant).
        Stop::Unparseable => (
            ToolReturn::failed(
                ToolStatus::Error,
                ToolErrorCode::invalid_args(mutant),
                "arguments are not valid JSON",
                None,
            ),
            failure(feedback::unparseable_text(name)),
        ),
        Stop::InvalidArgs(violation) => (
            // The message is the validator's pointer + keyword only; the
            // arguments are never quoted (SR-1, TTC §G).
            ToolReturn::failed(
                ToolStatus::Error,
                ToolErrorCode::invalid_args(mutant),
                violation.to_string(),
                None,
            ),
            failure(feedback::repair_text(
                name,
                &violation,
                &emission.arguments_text,
                mutant,
            )),
        ),
        Stop::Forbidden { reason, message } => {
            // HOOKS-AUTH: every deny is recorded before the return.
            gates::record_denial(scope.state, scope.run_id, scope.principal, name, reason)?;
            (
                // The tool did not run: no durationMs.
                ToolReturn::failed(
                    ToolStatus::Forbidden,
                    ToolErrorCode::Forbidden,
                    message,
                    None,
                ),
                failure(feedback::forbidden_text(name)),
            )
        }
        Stop::RateLimited {
            retry_after_secs,
            message,
        } => (
            ToolReturn::failed(
                ToolStatus::RateLimited,
                ToolErrorCode::RateLimited,
                message,
                None,
            ),
            failure(feedback::rate_limited_text(name, retry_after_secs)),
        ),
        // Not dispatched, so no duration; the earlier result is fed back.
        Stop::Repeat(earlier) => (bare_ok(), earlier),
    };
    Ok((outcome, ret, result))
}

/// One dispatch: the return, the result to feed back, and whether the
/// failure (if any) is transient (TURN-D9).
pub(crate) struct Dispatched {
    pub(crate) ret: ToolReturn,
    pub(crate) result: CallToolResult,
    pub(crate) transient: bool,
    /// The final MRTR retry of an MCP call.
    pub(crate) mrtr: Option<mcp::Continuation>,
    /// `_meta.scopes` of an MCP result (only under `mcp-meta-grants-scopes`).
    pub(crate) meta_scopes: Vec<String>,
}

/// The emission a dispatch belongs to.
pub(crate) struct On<'s, 'a> {
    pub(crate) scope: &'s TurnScope<'a>,
    pub(crate) call_id: &'s str,
    pub(crate) call_event_id: &'s str,
    pub(crate) content_trust: ContentTrust,
    /// The tool identity, sent as `Idempotency-Key` (TURN-D2).
    pub(crate) key: &'s str,
}

/// Dispatches a cleared call: to its MCP server tool ([`mcp`], EFF-12) or
/// its receiver, with the tool identity as `Idempotency-Key` either way, or
/// to the host's knowledge store ([`memory`], TRUST-2) with the turn's
/// trust.
pub(crate) async fn dispatch(
    on: &On<'_, '_>,
    tool: &FixtureTool,
    args: &Value,
) -> Result<Dispatched, AdmissionError> {
    let state = on.scope.state;
    let receiver = match &tool.endpoint {
        ToolEndpoint::Receiver(url) => url,
        ToolEndpoint::Memory(endpoint) => {
            let outcome =
                memory::dispatch(state, on.scope.run_id, endpoint, args, on.content_trust)?;
            return Ok(Dispatched {
                ret: outcome.ret,
                result: outcome.result,
                transient: false,
                mrtr: None,
                meta_scopes: Vec::new(),
            });
        }
        ToolEndpoint::Mcp(endpoint) => {
            let call = mcp::McpCall {
                state,
                run_id: on.scope.run_id,
                principal: on.scope.principal,
                call_id: on.call_id,
                call_event_id: on.call_event_id,
                content_trust: on.content_trust,
                tool,
                endpoint,
                args,
                idempotency_key: on.key,
            };
            let outcome = call.run().await?;
            return Ok(Dispatched {
                ret: outcome.ret,
                result: outcome.result,
                transient: false,
                mrtr: outcome.continuation,
                meta_scopes: outcome.meta_scopes,
            });
        }
        // The host's own catalog tools are described, never played in a
        // run (a run offers only the tools its request declares).
        ToolEndpoint::Host => {
            let message = format!("`{}` is not played in runs of this host", tool.tool_id);
            return Ok(Dispatched {
                ret: ToolReturn::failed(
                    ToolStatus::Error,
                    ToolErrorCode::ToolExecutionFailed,
                    message.clone(),
                    Some(0),
                ),
                result: CallToolResult::failure(
                    feedback::failed_text(&tool.tool_id, &message),
                    state.mutant(),
                ),
                transient: false,
                mrtr: None,
                meta_scopes: Vec::new(),
            });
        }
    };
    Ok(dispatch_to_receiver(state, tool, receiver, args, Some(on.key)).await)
}

/// Calls the tool's receiver with the arguments and the tool identity as
/// `Idempotency-Key` (TURN-D2); every arm has a duration.
async fn dispatch_to_receiver(
    state: &Domain,
    tool: &FixtureTool,
    receiver: &reqwest::Url,
    args: &Value,
    idempotency_key: Option<&str>,
) -> Dispatched {
    let mutant = state.mutant();
    let called = state
        .invoker()
        .invoke_keyed(
            Some(receiver),
            args,
            idempotency_key,
            state.default_tool_timeout(),
        )
        .await;
    let duration_ms = called.invocation.duration_ms;
    let failed = |code: ToolErrorCode, message: String| {
        let result =
            CallToolResult::failure(feedback::failed_text(&tool.tool_id, &message), mutant);
        Dispatched {
            ret: ToolReturn::failed(ToolStatus::Error, code, message, Some(duration_ms)),
            result,
            transient: called.transient,
            mrtr: None,
            meta_scopes: Vec::new(),
        }
    };
    match called.invocation.result {
        // HOOKS-FAIL-7: vendor codes, bare only under the mutant.
        InvokeResult::Failed { code, message } => {
            failed(ToolErrorCode::from_receiver(code, mutant), message)
        }
        InvokeResult::Succeeded if !called.body_complete => failed(
            ToolErrorCode::ToolExecutionFailed,
            format!("tool answer exceeds {MAX_RECEIVER_BODY} bytes"),
        ),
        InvokeResult::Succeeded => {
            // The answer is the tool's data: JSON when it is JSON, else its
            // text; an empty answer is `null`.
            let data = if called.body.iter().all(u8::is_ascii_whitespace) {
                Value::Null
            } else {
                serde_json::from_slice(&called.body).unwrap_or_else(|_| {
                    Value::String(String::from_utf8_lossy(&called.body).into_owned())
                })
            };
            Dispatched {
                ret: ToolReturn::ok(duration_ms),
                result: CallToolResult::success(&data),
                transient: false,
                mrtr: None,
                meta_scopes: Vec::new(),
            }
        }
    }
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[
    MutantInfo {
        mutant: Mutant::EventErrorEmptyCode,
        name: "event-error-empty-code",
        breaks: "a failed tool return's error object in the log has an empty `code`",
    },
    MutantInfo {
        mutant: Mutant::TruncatedArgsExecuted,
        name: "truncated-args-executed",
        breaks: "a tool call in a truncated completion is dispatched with {} as its arguments",
    },
    MutantInfo {
        mutant: Mutant::AuthzBeforeArgs,
        name: "authz-before-args",
        breaks: "authorization runs before argument validation",
    },
    MutantInfo {
        mutant: Mutant::LimitsBeforeAuthz,
        name: "limits-before-authz",
        breaks: "the rate limit (token consumed) is checked before authorization",
    },
    MutantInfo {
        mutant: Mutant::UnknownToolBareSuccess,
        name: "unknown-tool-bare-success",
        breaks: "an unknown tool name returns status ok with no error",
    },
    MutantInfo {
        mutant: Mutant::DoubleReturn,
        name: "double-return",
        breaks: "an executed call gets two agent.tool-returned events",
    },
    MutantInfo {
        mutant: Mutant::RepeatNotSuppressed,
        name: "repeat-not-suppressed",
        breaks: "an identical repeated call is dispatched again",
    },
    MutantInfo {
        mutant: Mutant::ApprovedCallRunsTwice,
        name: "approved-call-runs-twice",
        breaks: "an accepted call is dispatched twice",
    },
    MutantInfo {
        mutant: Mutant::RecordAfterNextRound,
        name: "record-after-next-round",
        breaks: "a round's tool records are written only after the next model response has arrived (TURN-D3)",
    },
    MutantInfo {
        mutant: Mutant::RecordFailureIgnored,
        name: "record-failure-ignored",
        breaks: "a record failure is ignored for every tool, so a write tool's node goes on unrecorded (TURN-D4)",
    },
    MutantInfo {
        mutant: Mutant::ResultOnReturn,
        name: "result-on-return",
        breaks: "agent.tool-returned carries the tool's result (TURN-D12)",
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::args_schema::ArgsSchema;
    use crate::base::config::{HostConfig, RateLimitConfig};
    use crate::base::events::AUTHORIZATION_DECIDED;
    use crate::domain::catalog::{Approval, ReplayPolicy, SafetyTier};
    use crate::surface::app::AppState;
    use reqwest::Url;
    use std::time::Duration;

    fn state(mutant: Option<Mutant>, capacity: u32) -> AppState {
        AppState::new(&HostConfig {
            mutant,
            rate_limit: RateLimitConfig {
                capacity,
                refill_every: Duration::from_secs(600),
            },
            ..HostConfig::default()
        })
        .expect("state")
    }

    fn tool(id: &str, scopes: &[&str]) -> Arc<FixtureTool> {
        let input_schema = json!({"type": "object", "required": ["n"],
            "properties": {"n": {"type": "integer"}}});
        let (tier, approval) = (SafetyTier::Write, Approval::Never);
        fixture(id, scopes, input_schema, tier, approval)
    }

    fn fixture(
        id: &str,
        scopes: &[&str],
        input_schema: Value,
        safety_tier: SafetyTier,
        approval: Approval,
    ) -> Arc<FixtureTool> {
        Arc::new(FixtureTool {
            tool_id: id.to_owned(),
            description: "t".into(),
            input_validator: ArgsSchema::compile(&input_schema).expect("compiles"),
            input_schema,
            output_schema: None,
            replay_policy: ReplayPolicy::Idempotent,
            safety_tier,
            required_scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
            approval,
            // Port 9 (discard) is never dispatched to in these tests.
            endpoint: crate::domain::catalog::ToolEndpoint::Receiver(
                Url::parse("http://127.0.0.1:9/t").expect("url"),
            ),
        })
    }

    fn emission(name: &str, args: &str) -> ToolEmission {
        ToolEmission {
            id: "call_1".into(),
            name: name.into(),
            arguments_text: args.into(),
        }
    }

    fn scope_of<'a>(
        state: &'a Domain,
        principal: &'a str,
        tools: &'a [Arc<FixtureTool>],
    ) -> TurnScope<'a> {
        TurnScope {
            state,
            run_id: "run_t",
            principal,
            tools,
            repeated_call: RepeatedCall::Suppress,
            key_run_id: None,
        }
    }

    fn stop_of(
        state: &AppState,
        principal: &str,
        tools: &[Arc<FixtureTool>],
        emission: &ToolEmission,
        completion: Completion,
    ) -> Option<Stop> {
        let scope = scope_of(state, principal, tools);
        check_gates(&scope, &RepeatMemory::default(), emission, completion).err()
    }

    #[test]
    fn order_is_completion_name_arguments_authorization_limits() {
        use Check::{Arguments, Completion, Name, Repeat};
        use Gate::{Authorize, Own, RateLimit};
        assert_eq!(
            gate_order(None),
            [
                Own(Completion),
                Own(Name),
                Own(Arguments),
                Authorize,
                RateLimit,
                Own(Repeat)
            ]
        );
        let authz_first = gate_order(Some(Mutant::AuthzBeforeArgs));
        assert_eq!(authz_first[2..4], [Authorize, Own(Arguments)]);
        let limits_first = gate_order(Some(Mutant::LimitsBeforeAuthz));
        assert_eq!(limits_first[3..], [RateLimit, Own(Repeat), Authorize]);
    }

    #[test]
    fn an_emission_failing_arguments_and_authorization_is_invalid() {
        let tools = [tool("w", &["tools:write"])];
        let bad = emission("w", r#"{"n": "x"}"#);
        // carol lacks tools:write AND the args are wrong: args come first.
        let stop = stop_of(&state(None, 5), "carol", &tools, &bad, Completion::Clean);
        assert!(matches!(&stop, Some(Stop::InvalidArgs(v)) if v.to_string() == "/n: type"));
        assert_eq!(stop.map(|s| s.outcome()), Some(Outcome::Invalid));
        // Under authz-before-args the same emission is refused instead.
        let stop = stop_of(
            &state(Some(Mutant::AuthzBeforeArgs), 5),
            "carol",
            &tools,
            &bad,
            Completion::Clean,
        );
        assert!(matches!(stop, Some(Stop::Forbidden { .. })));
    }

    #[test]
    fn authorization_is_checked_before_a_token_is_taken() {
        let tools = [tool("w", &["tools:write"])];
        let good = emission("w", r#"{"n": 1}"#);
        // Capacity 1: carol's denied calls must not drain her bucket.
        let correct = state(None, 1);
        for _ in 0..3 {
            assert!(matches!(
                stop_of(&correct, "carol", &tools, &good, Completion::Clean),
                Some(Stop::Forbidden { .. })
            ));
        }
        let mutated = state(Some(Mutant::LimitsBeforeAuthz), 1);
        assert!(matches!(
            stop_of(&mutated, "carol", &tools, &good, Completion::Clean),
            Some(Stop::Forbidden { .. })
        ));
        assert!(matches!(
            stop_of(&mutated, "carol", &tools, &good, Completion::Clean),
            Some(Stop::RateLimited { .. })
        ));
    }

    #[test]
    fn completion_and_name_gates_come_first() {
        let tools = [tool("w", &[])];
        let state = state(None, 5);
        let good = emission("w", r#"{"n": 1}"#);
        assert_eq!(
            stop_of(
                &state,
                "alice",
                &tools,
                &emission("nope", "{"),
                Completion::Truncated
            ),
            Some(Stop::Truncated)
        );
        assert_eq!(
            stop_of(&state, "alice", &tools, &good, Completion::Refused),
            Some(Stop::RefusedCompletion)
        );
        assert_eq!(
            stop_of(
                &state,
                "alice",
                &tools,
                &emission("nope", "{"),
                Completion::Clean
            ),
            Some(Stop::UnknownTool)
        );
        assert_eq!(
            stop_of(
                &state,
                "alice",
                &tools,
                &emission("w", "{"),
                Completion::Clean
            ),
            Some(Stop::Unparseable)
        );
        assert_eq!(
            stop_of(&state, "alice", &tools, &good, Completion::Clean),
            None
        );
    }

    #[test]
    fn truncated_args_mutant_dispatches_empty_arguments() {
        // The schema requires `n`: the mutant dispatches `{}` regardless.
        let tools = [tool("w", &[])];
        let cut = emission("w", r#"{"n": 1, "pa"#);
        let scope_state = state(Some(Mutant::TruncatedArgsExecuted), 5);
        let scope = scope_of(&scope_state, "alice", &tools);
        let cleared = check_gates(
            &scope,
            &RepeatMemory::default(),
            &cut,
            Completion::Truncated,
        )
        .expect("cleared under the mutant");
        assert_eq!(cleared.1, json!({}));
    }

    #[test]
    fn repeats_are_suppressed_by_canonical_identity() {
        let tools = [tool("w", &[])];
        let state = state(None, 5);
        let mut memory = RepeatMemory::default();
        memory.remember(
            "w",
            &json!({"n": 1.0}),
            &CallToolResult::success(&json!({"ok": 1})),
        );
        let scope = scope_of(&state, "alice", &tools);
        let stop = check_gates(
            &scope,
            &memory,
            &emission("w", r#"{"n": 1}"#),
            Completion::Clean,
        );
        assert!(matches!(stop, Err(Stop::Repeat(_))));
        let allow = TurnScope {
            repeated_call: RepeatedCall::Allow,
            key_run_id: None,
            ..scope
        };
        assert!(
            check_gates(
                &allow,
                &memory,
                &emission("w", r#"{"n": 1}"#),
                Completion::Clean
            )
            .is_ok()
        );
    }

    #[tokio::test]
    async fn a_call_needing_approval_is_held_and_expires_without_dispatch() {
        let state = AppState::new(&HostConfig {
            approval_timeout: Duration::from_millis(20),
            ..HostConfig::default()
        })
        .expect("state");
        state.storage().create_run("run_t", "alice").expect("run");
        // Never dispatched: the hold expires.
        let schema = json!({"type": "object"});
        let (tier, approval) = (SafetyTier::Read, Approval::Always);
        let tools = [fixture("w", &["tools:write"], schema, tier, approval)];
        let scope = scope_of(&state, "alice", &tools);
        // `admit` is a trusted round: `always` still holds.
        let admitted = admit(
            &scope,
            &mut RepeatMemory::default(),
            &emission("w", r#"{"n": 1}"#),
            Completion::Clean,
        )
        .await
        .expect("admitted");
        assert_eq!(admitted.outcome, Outcome::Held);
        assert!(admitted.result.result.is_error);
        let events = state.storage().events_after("run_t", -1).expect("events");
        let types: Vec<&str> = events.iter().map(|e| e.event_type.as_str()).collect();
        assert_eq!(
            types,
            [
                TOOL_CALLED,
                crate::base::events::INTERRUPT_REQUESTED,
                TOOL_RETURNED
            ]
        );
        assert_eq!(events[1].payload["contentTrust"], "trusted");
        assert_eq!(events[1].payload["boundPrincipal"], "alice");
        assert_eq!(
            events[2].payload["error"]["code"],
            "refhost.approval_expired"
        );
        assert_eq!(events[2].payload["error"]["details"]["admission"], "held");
        assert!(state.interrupts().ticket("run_t").is_none());
    }

    #[tokio::test]
    async fn stopped_emissions_record_one_call_and_one_return() {
        let state = state(None, 5);
        state.storage().create_run("run_t", "carol").expect("run");
        let tools = [tool("w", &["tools:write"])];
        let scope = scope_of(&state, "carol", &tools);
        let mut memory = RepeatMemory::default();
        let admitted = admit(
            &scope,
            &mut memory,
            &emission("w", r#"{"n": 1}"#),
            Completion::Clean,
        )
        .await
        .expect("admitted");
        assert_eq!(admitted.outcome, Outcome::Refused);
        assert!(admitted.result.result.is_error);
        let events = state.storage().events_after("run_t", -1).expect("events");
        let types: Vec<&str> = events.iter().map(|e| e.event_type.as_str()).collect();
        assert_eq!(types, [TOOL_CALLED, AUTHORIZATION_DECIDED, TOOL_RETURNED]);
        assert_eq!(events[0].payload["agentId"], "refhost.agent");
        assert_eq!(events[0].payload["transport"], "http");
        assert_eq!(events[0].payload["callId"], "call_1");
        let returned = &events[2].payload;
        assert_eq!(returned["status"], "forbidden");
        assert_eq!(returned["error"]["details"]["admission"], "refused");
        assert!(returned.get("durationMs").is_none());
        assert_eq!(
            events[2].causation_id.as_deref(),
            Some(events[0].event_id.as_str())
        );

        // Unparseable args hash the text as a JSON string.
        let admitted = admit(
            &scope,
            &mut memory,
            &emission("w", "{\"n\":"),
            Completion::Clean,
        )
        .await
        .expect("admitted");
        assert_eq!(admitted.outcome, Outcome::Invalid);
        let events = state.storage().events_after("run_t", 2).expect("events");
        let expected = crate::base::args_hash::jcs_sha256(&json!("{\"n\":")).expect("hash");
        assert_eq!(events[0].payload["argsHash"], expected);
        assert_eq!(events[1].payload["error"]["code"], "validation_error");
    }
}
