//! The effect-seam fire seam: `POST /conformance/seams/sample/effect-seams/fire`
//! (RPL-11; schemas/seams/effect-seams-fire.request.schema.json).
//!
//! RPL-11 asks that every row of the effect-seam manifest
//! (`GET /host/effect-seams`) can be driven, and that a replay fork of the
//! run that drove it does not drive it again. One request is one run,
//! attributed to the caller, that performs EXACTLY ONE effect through the
//! named seam against the caller's loopback `receiverUrl`, then completes:
//!
//! - `tool-receiver`: one tool call (tool `tool-receiver`, arguments `{}`)
//!   admitted and dispatched by the turn loop's own admission
//!   ([`admission::admit_journaled`]): `agent.tool-called`, a POST of `{}`
//!   with the tool identity as `Idempotency-Key`, `agent.tool-returned`,
//!   and the intent and record in the invocation log;
//! - `provider:<name>`: one POST of a minimal Anthropic Messages body that
//!   declares the server tool, to `receiverUrl` playing the provider; any
//!   2xx answer counts as the provider having run it, and the raw answer is
//!   the round's record ([`records::put_raw_model`]);
//! - `packs-test-node` (kind `pack`): one packs-test run of a one-node pack
//!   whose `transform` node, declared `role: "side-effect"`, POSTs
//!   `{packId, nodeType, runId}` to `receiverUrl` ([`packs::fire`]); the
//!   run is a packs-test run in every respect (events, records, ledger row
//!   `{nodeId: "hidden-effect", keying: "seam:packs-test-node"}`), so its
//!   replay fork is a pack replay that serves the node's recorded outcome.
//!
//! A delivered effect writes ONE effect ledger row
//! `{effectId, nodeId: "agent", attempt: 1, keying: "seam:<id>", state:
//! "delivered", at}` ([`ledger::record_seam_delivery`]). The run's plan is
//! stored like a turn run's (in `turn_runs`), so `POST /runs/{id}:fork
//! {mode: "replay"}` accepts the run; the fork re-drives the plan WITHOUT
//! sending anything: it serves the recorded outcome ([`start_replay`]) and
//! carries the parent's ledger rows over unchanged (see
//! [`crate::surface::run_actions`]).
//!
//! EFF-10 ("Layer-2 deduplication never reaches across a fork; suppressing
//! effects in a fork is left to replay"): the `tool-receiver` effect is a
//! Layer-2 effect. Its identity comes from the business operation (the seam
//! and the receiver, [`tool_receiver_effect_id`]), never the run, and it is
//! performed only after an atomic claim keyed by (identity, claim scope),
//! where the scope is the run that performs it. A `mode: "branch"` fork
//! ([`start_branch`]) inherits its source's events up to `fromSeq` and runs
//! the rest live: when the effect lies after `fromSeq` it claims in its own
//! scope and performs the effect again (same `Idempotency-Key` as its
//! lineage sent, a new ledger row with the same effectId). A replay fork
//! never claims: its suppression is replay's.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use reqwest::Url;
use serde_json::{Value, json};

use crate::base::args_hash::sha256_hex;
use crate::base::args_schema::ArgsSchema;
use crate::base::clock::now_unix_ms;
use crate::base::content_trust::ContentTrust;
use crate::base::events::{
    NODE_STARTED, NewEvent, PROMPT_COMPOSED, RUN_CANCELLED, RUN_COMPLETED, RUN_FAILED, RUN_STARTED,
    TOOL_CALLED, TOOL_RETURNED,
};
use crate::base::mutant::{Mutant, MutantInfo};
use crate::base::tool_events::HOST_AGENT_ID;
use crate::domain::Domain;
use crate::domain::catalog::{Approval, FixtureTool, ReplayPolicy, SafetyTier, ToolEndpoint};
use crate::domain::effects::claim::{self, AwaitPoint, ClaimOutcome, ClaimRequest, ClaimState};
use crate::domain::effects::identity::Keying;
use crate::domain::effects::ledger::{self, SeamDelivery};
use crate::domain::error::{ApiError, json_response};
use crate::domain::json_body::require_loopback_http;
use crate::domain::json_body::{Fields, parse_object};
use crate::store::storage::{RunStatus, StorageError, insert_event};
use crate::surface::effect_seams;
use crate::surface::seams::extract::SeamRequest;
use crate::surface::seams::packs;
use crate::turn::admission::{self, Journal, RepeatMemory, TurnScope};
use crate::turn::approval::{AGENT_NODE_ID, RoundContext};
use crate::turn::driver;
use crate::turn::plan::{INTERNAL_ERROR, PROVIDER_ERROR, RunFailure};
use crate::turn::provider::ProviderTool;
use crate::turn::provider::{
    Completion, ModelRequest, ProviderSpec, ToolEmission, Transcript, Wire,
};
use crate::turn::provider_tools;
use crate::turn::records::ReplaySource;
use crate::turn::records::{self, RunMode, ToolRecord};
use crate::turn::request::{RepeatedCall, SUPPORTED_PROVIDER_TOOLS};
use crate::turn::state::LoopState;

/// Every member the request may carry (the shape is closed).
const FIELDS: &[&str] = &["seam", "receiverUrl"];

/// The manifest id (and tool name) of the tool-call seam.
pub const TOOL_RECEIVER_SEAM: &str = "tool-receiver";

/// The call id of the one tool emission of a `tool-receiver` fire; a fork
/// serves the record under the same id.
pub const FIRE_CALL_ID: &str = "call_effect_seam_1";

/// The `model` of the Messages body a `provider` fire sends.
pub const FIRE_MODEL: &str = "refhost-effect-seam";

/// The versioned server tool type declared for each supported
/// provider-executed tool (`<name>_20250305`).
pub const SERVER_TOOL_VERSION: &str = "20250305";

/// The user message of a `provider` fire's Messages body.
pub const FIRE_PROMPT: &str = "Run the declared server tool once (RPL-11 effect-seam fire).";

/// `run.failed` code: the receiver was reached but the effect was not
/// delivered (it answered an error, or the call was refused). Vendor
/// namespaced: no registered v2 code says this (HOOKS-FAIL-7).
pub const EFFECT_NOT_DELIVERED: &str = "refhost.effect_not_delivered";

/// The member under which a fire's plan is stored in `turn_runs.request`.
/// A turn request can never carry it (its shape is closed), so a stored
/// plan is one or the other.
const STORED_PLAN_MEMBER: &str = "effectSeamFire";

/// Which kind of manifest row is fired.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FireSeam {
    /// `tool-receiver` (kind `http`): one turn-loop tool call.
    ToolReceiver,
    /// `provider:<name>` (kind `provider`): one provider round that offers
    /// the provider-executed tool `<name>`.
    Provider(String),
    /// `packs-test-node` (kind `pack`): one pack node dispatch, fired as a
    /// packs-test run ([`packs::fire`]), never as a `FireRun`.
    PackNode,
}

impl FireSeam {
    /// The seam of a manifest row id this host knows how to fire.
    fn of_id(id: &str) -> Option<Self> {
        if id == TOOL_RECEIVER_SEAM {
            return Some(Self::ToolReceiver);
        }
        if id == packs::PACK_NODE_SEAM {
            return Some(Self::PackNode);
        }
        id.strip_prefix("provider:")
            .filter(|name| SUPPORTED_PROVIDER_TOOLS.contains(name))
            .map(|name| Self::Provider(name.to_owned()))
    }

    /// The manifest row id.
    pub fn id(&self) -> String {
        match self {
            Self::ToolReceiver => TOOL_RECEIVER_SEAM.to_owned(),
            Self::Provider(name) => provider_tools::seam_id(name),
            Self::PackNode => packs::PACK_NODE_SEAM.to_owned(),
        }
    }
}

/// A parsed, checked fire request: also the fire run's stored plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FireRequest {
    /// The seam to fire.
    pub seam: FireSeam,
    /// The loopback receiver that plays the tool or the provider.
    pub receiver_url: Url,
}

impl FireRequest {
    /// Parses and checks the body: a shape problem is a 400 naming the
    /// field; a seam id the manifest does not list is a 404 naming the ids
    /// it does list (under `mutant`, as `GET /host/effect-seams` serves it).
    pub fn parse(body: &[u8], mutant: Option<Mutant>) -> Result<Self, ApiError> {
        let mut fields = Fields::closed(parse_object(body)?, FIELDS)?;
        let seam_id = fields.required_string("seam")?;
        let raw_url = fields.required_string("receiverUrl")?;
        // Loopback only: the host is never made a client of another machine.
        let receiver_url = require_loopback_http("receiverUrl", &raw_url)?;
        let listed = effect_seams::seam_ids(mutant);
        let seam = listed
            .iter()
            .any(|id| id == &seam_id)
            .then(|| FireSeam::of_id(&seam_id))
            .flatten()
            .ok_or_else(|| {
                ApiError::not_found(format!(
                    "field `seam` names no row of the effect-seam manifest (GET {}); it lists: {}",
                    effect_seams::MANIFEST_PATH,
                    listed.join(", ")
                ))
            })?;
        Ok(Self { seam, receiver_url })
    }

    /// The plan text stored in `turn_runs.request`.
    fn stored(&self) -> String {
        json!({STORED_PLAN_MEMBER: {"seam": self.seam.id(), "receiverUrl": self.receiver_url.as_str()}})
            .to_string()
    }

    /// The fire plan in a stored plan text, if it is one (else a turn
    /// run's request, or nothing usable).
    pub fn from_stored(text: &str) -> Option<Self> {
        let value: Value = serde_json::from_str(text).ok()?;
        let plan = value.get(STORED_PLAN_MEMBER)?;
        let seam = FireSeam::of_id(plan.get("seam")?.as_str()?)?;
        let receiver_url =
            require_loopback_http("receiverUrl", plan.get("receiverUrl")?.as_str()?).ok()?;
        Some(Self { seam, receiver_url })
    }
}

/// Handler for the seam: fires the effect, settles the run and answers
/// `201 {runId}` once the run is terminal.
pub async fn fire(State(state): State<LoopState>, seam: SeamRequest) -> Result<Response, ApiError> {
    // Caller checks first, as for every seam.
    let caller = &seam.caller;
    let body = seam.body;
    let request = FireRequest::parse(&body, state.mutant())?;
    if request.seam == FireSeam::PackNode {
        // A pack node dispatch is a packs-test run: its plan, events,
        // records and replay are the packs-test seam's.
        let run_id = packs::fire(&state, &caller.id, &caller.tenant, &request.receiver_url).await?;
        return Ok(json_response(
            StatusCode::CREATED,
            &json!({"runId": run_id}),
        ));
    }

    let run_id = state.new_run_id(&caller.tenant);
    state
        .storage()
        .create_run_in(&run_id, &caller.id, &caller.tenant)?;
    // RPL-11: a stored plan, so that `:fork` accepts the run and a replay
    // fork can re-drive it without a model.
    records::save_plan(
        state.storage(),
        &run_id,
        &request.stored(),
        None,
        RunMode::Live,
    )?;
    let run = FireRun {
        state: &state,
        run_id: &run_id,
        principal: &caller.id,
        tenant: &caller.tenant,
        request: &request,
        replay: None,
        branch: None,
    };
    run.begin()?;
    let ended = run.perform().await;
    run.settle(ended)?;
    Ok(json_response(
        StatusCode::CREATED,
        &json!({"runId": run_id}),
    ))
}

/// Starts the replay fork `run_id` (already created, its plan saved) of a
/// fire run: `run.started` now, then a task that serves the source's
/// recorded outcome and sends nothing (RPL-11).
pub fn start_replay(
    state: &LoopState,
    run_id: &str,
    principal: &str,
    tenant: &str,
    request: FireRequest,
    source: ReplaySource,
) -> Result<(), StorageError> {
    let run = FireRun {
        state,
        run_id,
        principal,
        tenant,
        request: &request,
        replay: Some(&source),
        branch: None,
    };
    run.begin()?;
    let state = state.clone();
    let (run_id, principal, tenant) = (run_id.to_owned(), principal.to_owned(), tenant.to_owned());
    tokio::spawn(async move {
        let run = FireRun {
            state: &state,
            run_id: &run_id,
            principal: &principal,
            tenant: &tenant,
            request: &request,
            replay: Some(&source),
            branch: None,
        };
        let ended = run.perform().await;
        // If even the terminal write fails the store is gone; the run
        // stays `running`, as a turn run's would.
        let _ = run.settle(ended);
    });
    Ok(())
}

/// The message of the 422 a branch fork of any other run gets (EFF-10).
pub const BRANCH_SOURCE_UNSUPPORTED: &str =
    "branch forks are served for `tool-receiver` effect-seam fire runs only; send mode `replay`";

/// The source of a `mode: "branch"` fork of a `tool-receiver` fire run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BranchSource {
    /// The run the branch forks.
    pub run_id: String,
    /// The source's final node attempt (whose records an inherited effect
    /// is copied from).
    pub attempt: u32,
    /// The first run of the fork lineage (the fire run itself): every
    /// branch re-sends ITS tool identity as `Idempotency-Key`, the value
    /// the effect was first sent with.
    pub lineage_root: String,
}

/// Where the source's effect lies relative to a branch's `fromSeq`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BranchEffect {
    /// The source's `agent.tool-called` is after `fromSeq` (or absent): the
    /// branch performs the effect anew (EFF-10).
    Live,
    /// The source's `agent.tool-returned` is at or before `fromSeq`: the
    /// branch inherits the effect, its record and its ledger rows.
    Inherited,
}

/// What a branch fork inherits and what it still runs live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BranchPoint {
    /// The last inherited sequence.
    pub from_seq: i64,
    /// Whether the effect is inherited or performed again.
    pub effect: BranchEffect,
    /// Whether the inherited prefix holds `node.started`.
    pub node_started: bool,
    /// The source's terminal status when the prefix ends with its terminal
    /// event (nothing is left to run).
    pub terminal: Option<RunStatus>,
}

/// Reads the source's events and says where a branch at `from_seq` stands.
/// A `fromSeq` inside the effect (its `agent.tool-called` inherited, its
/// `agent.tool-returned` not) is a 400 naming `fromSeq`: the branch could
/// neither inherit the outcome nor call again without a second call event.
pub fn branch_point(
    state: &Domain,
    source_run_id: &str,
    from_seq: i64,
) -> Result<BranchPoint, ApiError> {
    let events = state.storage().events_after(source_run_id, -1)?;
    let first = |kind: &str| {
        events
            .iter()
            .find(|event| event.event_type == kind)
            .map(|event| event.sequence)
    };
    let inherited = |kind: &str| first(kind).is_some_and(|seq| seq <= from_seq);
    let effect = match (first(TOOL_CALLED), first(TOOL_RETURNED)) {
        (Some(called), _) if called > from_seq => BranchEffect::Live,
        (None, _) => BranchEffect::Live,
        (Some(_), Some(returned)) if returned <= from_seq => BranchEffect::Inherited,
        (Some(called), returned) => {
            let after = returned.map_or_else(|| "the end".to_owned(), |seq| seq.to_string());
            return Err(ApiError::validation(format!(
                "field `fromSeq` is {from_seq}, inside the effect (agent.tool-called at {called}, agent.tool-returned at {after}); branch from before {called} to perform it again, or from the return on to inherit it"
            )));
        }
    };
    let terminal = events
        .iter()
        .filter(|event| event.sequence <= from_seq)
        .find_map(|event| match event.event_type.as_str() {
            RUN_COMPLETED => Some(RunStatus::Completed),
            RUN_FAILED => Some(RunStatus::Failed),
            RUN_CANCELLED => Some(RunStatus::Cancelled),
            _ => None,
        });
    Ok(BranchPoint {
        from_seq,
        effect,
        node_started: inherited(NODE_STARTED),
        terminal,
    })
}

/// Starts the branch fork `run_id` (already created, its plan saved, its
/// ledger rows inherited when the effect is) of a `tool-receiver` fire
/// run: copies the source's events up to `fromSeq` now, then, unless the
/// copy already ends the run, a task continues live (EFF-10). Returns the
/// branch's status for the 201.
pub fn start_branch(
    state: &LoopState,
    run_id: &str,
    principal: &str,
    tenant: &str,
    request: FireRequest,
    source: BranchSource,
    point: BranchPoint,
) -> Result<RunStatus, ApiError> {
    let storage = state.storage();
    storage.copy_events(&source.run_id, run_id, point.from_seq)?;
    if point.effect == BranchEffect::Inherited {
        // The branch keeps its own record, so a fork of it can be served.
        records::copy_tool_records(storage, &source.run_id, source.attempt, run_id)?;
    }
    if let Some(status) = point.terminal {
        let error = storage.run(&source.run_id)?.and_then(|run| run.error);
        storage.set_run_outcome(run_id, status, error.as_ref())?;
        return Ok(status);
    }
    let state = state.clone();
    let (run_id, principal, tenant) = (run_id.to_owned(), principal.to_owned(), tenant.to_owned());
    tokio::spawn(async move {
        let run = FireRun {
            state: &state,
            run_id: &run_id,
            principal: &principal,
            tenant: &tenant,
            request: &request,
            replay: None,
            branch: Some(&source),
        };
        let ended = run.continue_branch(point).await;
        // As for a replay fork: a failed terminal write leaves it `running`.
        let _ = run.settle(ended);
    });
    Ok(RunStatus::Running)
}

/// One fire run: the parent (live), a replay fork or a branch fork of one.
struct FireRun<'a> {
    state: &'a LoopState,
    run_id: &'a str,
    principal: &'a str,
    tenant: &'a str,
    request: &'a FireRequest,
    /// For a replay fork: the fire run whose records are served.
    replay: Option<&'a ReplaySource>,
    /// For a branch fork: the run it forks (EFF-10).
    branch: Option<&'a BranchSource>,
}

impl FireRun<'_> {
    /// `run.started` and `node.started {nodeId: "agent", attempt: 1}` in one
    /// transaction, as a turn run starts.
    fn begin(&self) -> Result<(), StorageError> {
        let mut payload = json!({
            "agentId": HOST_AGENT_ID,
            "principal": self.principal,
            "effectSeam": self.request.seam.id(),
        });
        if let (Some(source), Some(object)) = (self.replay, payload.as_object_mut()) {
            object.insert(
                "fork".into(),
                json!({"sourceRunId": source.run_id, "mode": "replay"}),
            );
        }
        let run_id = self.run_id;
        self.state.storage().append_event_with(
            run_id,
            NewEvent::new(RUN_STARTED, payload),
            |tx, _| {
                let started =
                    NewEvent::new(NODE_STARTED, json!({"nodeId": AGENT_NODE_ID, "attempt": 1}))
                        .at_node(AGENT_NODE_ID);
                insert_event(tx, run_id, started).map(|_| ())
            },
        )?;
        Ok(())
    }

    /// The live rest of a branch fork after its inherited prefix: an
    /// inherited effect is only settled from the copied record (no call);
    /// a live one is performed again (EFF-10).
    async fn continue_branch(&self, point: BranchPoint) -> Result<(), RunFailure> {
        if point.effect == BranchEffect::Inherited {
            return self.require_delivered();
        }
        if !point.node_started {
            self.state.storage().append_event(
                self.run_id,
                NewEvent::new(NODE_STARTED, json!({"nodeId": AGENT_NODE_ID, "attempt": 1}))
                    .at_node(AGENT_NODE_ID),
            )?;
        }
        self.perform().await
    }

    /// Performs (or, in a replay fork, serves) the one effect.
    async fn perform(&self) -> Result<(), RunFailure> {
        match &self.request.seam {
            FireSeam::ToolReceiver => self.tool_call().await,
            FireSeam::Provider(name) => self.provider_round(name).await,
            // Never stored as a fire plan (the fire runs it as a packs-test
            // run), so no fire run or fork of one gets here.
            FireSeam::PackNode => Err(RunFailure::new(
                INTERNAL_ERROR,
                "a packs-test-node fire is a packs-test run, not a fire run",
            )),
        }
    }

    /// `run.completed {result: {seam, effect: "delivered"}}` or the
    /// failure; a run already terminal (cancelled meanwhile) is left so.
    fn settle(&self, ended: Result<(), RunFailure>) -> Result<(), StorageError> {
        let storage = self.state.storage();
        if storage
            .run(self.run_id)?
            .is_some_and(|run| run.status.is_terminal())
        {
            return Ok(());
        }
        match ended {
            Ok(()) => {
                let result = json!({"seam": self.request.seam.id(), "effect": "delivered"});
                storage.finish_run(
                    self.run_id,
                    RunStatus::Completed,
                    None,
                    NewEvent::new(RUN_COMPLETED, json!({ "result": result })),
                )?;
            }
            Err(failure) => driver::fail_run(self.state, self.run_id, &failure)?,
        }
        Ok(())
    }

    /// The `tool-receiver` effect: one tool call through turn admission, or
    /// in a replay fork the source's record served by
    /// [`crate::turn::replay::serve_replay`] (nothing dispatched).
    async fn tool_call(&self) -> Result<(), RunFailure> {
        let state = self.state;
        let storage = state.storage();
        let tools = [receiver_tool(&self.request.receiver_url)?];
        let scope = TurnScope {
            state,
            run_id: self.run_id,
            principal: self.principal,
            tools: &tools,
            repeated_call: RepeatedCall::Suppress,
            // EFF-10: a branch re-sends the key its lineage first sent.
            key_run_id: self.branch.map(|branch| branch.lineage_root.as_str()),
        };
        let emission = ToolEmission {
            id: FIRE_CALL_ID.to_owned(),
            name: TOOL_RECEIVER_SEAM.to_owned(),
            arguments_text: "{}".to_owned(),
        };
        let journal = Journal {
            enabled: true,
            attempt: 1,
            ordinal: 1,
            record_limit: state.record_limit_bytes(),
            record_fails: false,
            retry_on_transient: false,
        };
        // Bug under `fire-seam-refires-on-fork`: the fork dispatches the
        // call again instead of serving the record (RPL-11 says no re-fire).
        let refire = state.mutant_is(Mutant::FireSeamRefiresOnFork);
        // The executor that holds this run's claim, if it won one.
        let mut held: Option<String> = None;
        // What this run does with the call: serve a recorded return, or
        // dispatch it.
        enum Act<R> {
            Serve(R),
            Dispatch,
        }
        let act = match self.replay {
            // EFF-10: a replay fork never claims; serving the record is
            // replay's suppression.
            Some(source) if !refire => {
                Act::Serve(records::tool(storage, &source.run_id, source.attempt, 1)?)
            }
            Some(_) => Act::Dispatch,
            None => {
                let key_run = self.branch.map_or(self.run_id, |b| b.lineage_root.as_str());
                let executor = format!("exe_{}", uuid::Uuid::new_v4().simple());
                match self.claim(key_run, &executor).await? {
                    ClaimOutcome::Won => {
                        held = Some(executor);
                        Act::Dispatch
                    }
                    // Another executor of this scope holds the effect: send
                    // nothing; report the holder's recorded return (only the
                    // `layer2-dedup-spans-fork` mutant puts a branch here).
                    ClaimOutcome::Lost { holder_run, .. } => Act::Serve(match holder_run {
                        Some(holder) => records::tool(storage, &holder, 1, 1)?,
                        None => None,
                    }),
                }
            }
        };
        let dispatched = matches!(act, Act::Dispatch);
        let admitted = match act {
            Act::Serve(record) => {
                crate::turn::replay::serve_replay(&scope, &emission, record, &journal)?
            }
            Act::Dispatch => {
                admission::admit_journaled(
                    &scope,
                    &mut RepeatMemory::default(),
                    &emission,
                    Completion::Clean,
                    &RoundContext::trusted(),
                    &journal,
                )
                .await?
            }
        };
        let answered_at = now_unix_ms();
        if let Some(halt) = admitted.halt {
            if let Some(executor) = &held {
                self.settle_claim(executor, ClaimState::Escaped)?;
            }
            return Err(RunFailure {
                code: halt.code,
                message: halt.message,
                details: None,
                node_failed: true,
            });
        }
        let delivered = self.delivered()?;
        if let Some(executor) = &held {
            let settled = if delivered {
                ClaimState::Completed
            } else {
                ClaimState::Escaped
            };
            self.settle_claim(executor, settled)?;
        }
        if dispatched && delivered {
            self.record_delivery(answered_at)?;
        }
        self.require_delivered()
    }

    /// Claims the `tool-receiver` effect for `executor` of this run.
    ///
    /// Atomicity comes from [`claim::claim`]: ONE `INSERT … ON CONFLICT
    /// DO NOTHING` on the claims table's primary key (effect id, claim
    /// scope), so at most one executor per scope wins. The scope is the run
    /// that performs the effect (EFF-10): a fresh fire run and a branch
    /// fork are each their own scope, so a branch is never suppressed by
    /// its parent's claim; suppressing effects in a fork is replay's job.
    async fn claim(&self, key_run: &str, executor: &str) -> Result<ClaimOutcome, RunFailure> {
        let state = self.state;
        // Bug under `layer2-dedup-spans-fork`: the branch's claim is scoped
        // without its run (the lineage's first run stands in), so it meets
        // the parent's claim and the effect is suppressed across the fork.
        let claim_scope = match self.branch {
            Some(branch) if state.mutant_is(Mutant::Layer2DedupSpansFork) => {
                branch.lineage_root.as_str()
            }
            _ => self.run_id,
        };
        let effect_id = self.effect_id();
        let operation = format!("{}{TOOL_RECEIVER_SEAM}", ledger::SEAM_KEYING_PREFIX);
        let invocation_id = records::tool_key(key_run, 1);
        let request = ClaimRequest {
            effect_id: &effect_id,
            claim_scope,
            tenant: self.tenant,
            operation: &operation,
            keying: Keying::BusinessIdentity,
            run_id: self.run_id,
            node_id: AGENT_NODE_ID,
            invocation_id: &invocation_id,
            executor,
        };
        Ok(claim::claim(
            state.storage(),
            &request,
            AwaitPoint::yield_once(),
            state.mutant(),
        )
        .await?)
    }

    /// Settles this run's claim on the effect.
    fn settle_claim(&self, executor: &str, settled: ClaimState) -> Result<(), StorageError> {
        // The executor id is fresh per run, so it singles out this scope's row.
        claim::settle(self.state.storage(), &self.effect_id(), executor, settled)
    }

    /// Whether the run's own record of the call says it was delivered
    /// (executed and `ok`; a served record says what the source's call did).
    fn delivered(&self) -> Result<bool, StorageError> {
        Ok(matches!(
            records::tool(self.state.storage(), self.run_id, 1, 1)?,
            Some(ToolRecord::Recorded(record))
                if record.outcome == crate::turn::Outcome::Executed.as_str()
                    && record.returned["status"] == "ok"
        ))
    }

    /// `Ok` when the run's record says the effect was delivered, else the
    /// run's `refhost.effect_not_delivered` failure.
    fn require_delivered(&self) -> Result<(), RunFailure> {
        if self.delivered()? {
            return Ok(());
        }
        Err(RunFailure::new(
            EFFECT_NOT_DELIVERED,
            format!(
                "the `{TOOL_RECEIVER_SEAM}` call was not delivered (the receiver failed or the call was refused; agent.tool-returned says which)"
            ),
        ))
    }

    /// A `provider:<name>` effect: one Messages request to the receiver,
    /// its raw 2xx answer recorded as round 1; in a replay fork the
    /// source's recorded answer is served and nothing is sent (RPL-11,
    /// TURN-F2).
    async fn provider_round(&self, name: &str) -> Result<(), RunFailure> {
        let storage = self.state.storage();
        if let Some(source) = self.replay {
            let Some(answer) = records::raw_model(storage, &source.run_id, source.attempt, 1)?
            else {
                return Err(RunFailure {
                    code: admission::REPLAY_SOURCE_MISSING,
                    message: format!(
                        "the source run `{}` has no recorded provider answer, so the replay cannot serve it and does not ask the provider (TURN-D6)",
                        source.run_id
                    ),
                    details: None,
                    node_failed: true,
                });
            };
            // The fork keeps its own record, so a fork of the fork can be
            // served too.
            records::put_raw_model(storage, self.run_id, 1, 1, &answer)?;
            return Ok(());
        }
        // TRUST-1 witness, as the turn loop writes before a model request.
        self.state.storage().append_event(
            self.run_id,
            NewEvent::new(
                PROMPT_COMPOSED,
                json!({"contentTrust": ContentTrust::USER_INPUT.as_str(), "round": 1}),
            )
            .at_node(AGENT_NODE_ID),
        )?;
        let body = messages_body(&self.request.receiver_url, name);
        let answer = self
            .state
            .provider()
            .post_raw_messages(&self.request.receiver_url, &body)
            .await
            .map_err(|err| RunFailure::new(PROVIDER_ERROR, err.to_string()))?;
        let answered_at = now_unix_ms();
        records::put_raw_model(
            storage,
            self.run_id,
            1,
            1,
            &String::from_utf8_lossy(&answer),
        )?;
        self.record_delivery(answered_at)
    }

    /// The effect id of the run's effect: for `tool-receiver` the Layer-2
    /// identity of the business operation (the same in every run of a
    /// lineage, EFF-10); for a provider round the per-run seam id.
    fn effect_id(&self) -> String {
        match &self.request.seam {
            FireSeam::ToolReceiver => tool_receiver_effect_id(&self.request.receiver_url),
            FireSeam::Provider(_) | FireSeam::PackNode => {
                seam_effect_id(&self.request.seam.id(), self.run_id)
            }
        }
    }

    /// The run's one `delivered` ledger row for the seam.
    fn record_delivery(&self, at_ms: i64) -> Result<(), RunFailure> {
        let seam = self.request.seam.id();
        let effect_id = self.effect_id();
        ledger::record_seam_delivery(
            self.state.storage(),
            &SeamDelivery {
                effect_id: &effect_id,
                run_id: self.run_id,
                tenant: self.tenant,
                node_id: AGENT_NODE_ID,
                seam: &seam,
                at_ms,
            },
        )?;
        Ok(())
    }
}

/// The Layer-2 effect identity of a `tool-receiver` fire: `eff_` + 32 hex
/// digits of SHA-256 over `seam:tool-receiver`, NUL, the receiver URL. It is
/// derived from the business operation, not the run (EFF-1), so a parent
/// and its branch forks report the same effectId (EFF-10).
pub fn tool_receiver_effect_id(receiver_url: &Url) -> String {
    let input = format!(
        "{}{TOOL_RECEIVER_SEAM}\0{receiver_url}",
        ledger::SEAM_KEYING_PREFIX
    );
    let digest = sha256_hex(input.as_bytes());
    format!("eff_{}", digest.get(..32).unwrap_or(&digest))
}

/// The effect id of a provider seam fire: `eff_` + 32 hex digits of
/// SHA-256 over the seam id, the run and the node's first effect.
pub fn seam_effect_id(seam: &str, run_id: &str) -> String {
    let digest = sha256_hex(format!("seam:{seam}\0{run_id}\0{AGENT_NODE_ID}\01").as_bytes());
    format!("eff_{}", digest.get(..32).unwrap_or(&digest))
}

/// The run-scoped tool a `tool-receiver` fire calls: any object, no scopes,
/// no approval, a write (it is an effect) that is not safe to re-run.
fn receiver_tool(receiver_url: &Url) -> Result<Arc<FixtureTool>, RunFailure> {
    let input_schema = json!({"type": "object"});
    let input_validator = ArgsSchema::compile(&input_schema)
        .map_err(|_| RunFailure::new(INTERNAL_ERROR, "the fire tool's schema did not compile"))?;
    Ok(Arc::new(FixtureTool {
        tool_id: TOOL_RECEIVER_SEAM.to_owned(),
        description: "The effect-seam fire's tool (RPL-11).".to_owned(),
        input_schema,
        input_validator,
        output_schema: None,
        replay_policy: ReplayPolicy::NonDeterministic,
        safety_tier: SafetyTier::Write,
        required_scopes: Vec::new(),
        approval: Approval::Never,
        endpoint: ToolEndpoint::Receiver(receiver_url.clone()),
    }))
}

/// A minimal Anthropic Messages body offering the server tool `name`
/// (`{type: "<name>_20250305", name}`), built by the turn loop's own body
/// builder.
fn messages_body(receiver_url: &Url, name: &str) -> Value {
    let spec = ProviderSpec {
        wire: Wire::AnthropicMessages,
        base_url: receiver_url.clone(),
        model: FIRE_MODEL.to_owned(),
        stream: false,
    };
    let server_tools = [ProviderTool {
        name: name.to_owned(),
        tool_type: format!("{name}_{SERVER_TOOL_VERSION}"),
    }];
    let transcript = Transcript {
        system: driver::SYSTEM_PROMPT.to_owned(),
        user: FIRE_PROMPT.to_owned(),
        rounds: Vec::new(),
    };
    crate::turn::provider::anthropic::request_body(&ModelRequest {
        spec: &spec,
        tools: &[],
        host_tools: &[],
        server_tools: &server_tools,
        transcript: &transcript,
        response_schema: None,
        // TURN-F4: the host never hands MCP servers to the provider.
        delegate_mcp: false,
    })
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[
    MutantInfo {
        mutant: Mutant::FireSeamRefiresOnFork,
        name: "fire-seam-refires-on-fork",
        breaks: "a replay fork of a fired run delivers the tool-receiver effect again (RPL-11)",
    },
    MutantInfo {
        mutant: Mutant::Layer2DedupSpansFork,
        name: "layer2-dedup-spans-fork",
        breaks: "a branch fork's Layer-2 claim is scoped without the run, so the parent's claim suppresses the branch's effect (EFF-10)",
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::error::ErrorCode;

    fn parse(value: Value) -> Result<FireRequest, ApiError> {
        FireRequest::parse(value.to_string().as_bytes(), None)
    }

    #[test]
    fn each_manifest_row_parses_and_round_trips_through_the_stored_plan() {
        for id in effect_seams::seam_ids(None) {
            let request =
                parse(json!({"seam": id, "receiverUrl": "http://127.0.0.1:9/r"})).expect("valid");
            assert_eq!(request.seam.id(), id);
            assert_eq!(FireRequest::from_stored(&request.stored()), Some(request));
        }
        // A turn request is not a fire plan.
        assert_eq!(FireRequest::from_stored(r#"{"principal": "a"}"#), None);
    }

    #[test]
    fn problems_are_400_naming_the_field_and_unknown_seams_404() {
        let cases = [
            (json!({"receiverUrl": "http://127.0.0.1:9/r"}), "seam"),
            (json!({"seam": "tool-receiver"}), "receiverUrl"),
            (
                json!({"seam": "tool-receiver", "receiverUrl": "http://10.0.0.1/r"}),
                "receiverUrl",
            ),
            (
                json!({"seam": "tool-receiver", "receiverUrl": "http://127.0.0.1:9/r", "x": 1}),
                "x",
            ),
            (
                json!({"seam": 3, "receiverUrl": "http://127.0.0.1:9/r"}),
                "seam",
            ),
        ];
        for (body, field) in cases {
            let err = parse(body.clone()).expect_err("rejected");
            assert_eq!(err.code, ErrorCode::ValidationError, "{body}");
            assert!(err.message.contains(field), "{body}: {}", err.message);
        }
        let unknown = parse(json!({"seam": "nope", "receiverUrl": "http://127.0.0.1:9/r"}))
            .expect_err("unknown");
        assert_eq!(unknown.code, ErrorCode::NotFound);
        assert!(
            unknown
                .message
                .contains("tool-receiver, provider:web_search, packs-test-node")
        );
        // What the manifest does not list cannot be fired.
        let unlisted = FireRequest::parse(
            json!({"seam": "provider:web_search", "receiverUrl": "http://127.0.0.1:9/r"})
                .to_string()
                .as_bytes(),
            Some(Mutant::ProviderToolUnlisted),
        )
        .expect_err("unlisted");
        assert_eq!(unlisted.code, ErrorCode::NotFound);
    }

    #[test]
    fn the_provider_body_offers_the_server_tool() {
        let url = Url::parse("http://127.0.0.1:9/p").expect("url");
        let body = messages_body(&url, "web_search");
        assert_eq!(
            body["tools"],
            json!([{"type": "web_search_20250305", "name": "web_search"}])
        );
        assert_eq!(body["model"], FIRE_MODEL);
        assert_eq!(body["stream"], false);
        assert_eq!(body["messages"][0]["role"], "user");
    }

    #[test]
    fn effect_ids_are_per_seam_and_run() {
        let id = seam_effect_id("tool-receiver", "run_a");
        assert!(id.starts_with("eff_") && id.len() == 36, "{id}");
        assert_eq!(id, seam_effect_id("tool-receiver", "run_a"));
        assert_ne!(id, seam_effect_id("tool-receiver", "run_b"));
        assert_ne!(id, seam_effect_id("provider:web_search", "run_a"));
        assert!(crate::base::event_codes::is_conformant(
            EFFECT_NOT_DELIVERED
        ));
    }

    #[test]
    fn the_tool_receiver_identity_is_the_operation_not_the_run() {
        let url = Url::parse("http://127.0.0.1:9/t").expect("url");
        let id = tool_receiver_effect_id(&url);
        let digest = sha256_hex(b"seam:tool-receiver\0http://127.0.0.1:9/t");
        assert_eq!(id, format!("eff_{}", &digest[..32]));
        let other = Url::parse("http://127.0.0.1:9/u").expect("url");
        assert_ne!(id, tool_receiver_effect_id(&other));
    }
}
