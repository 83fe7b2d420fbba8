//! The packs-test seam, `POST /conformance/seams/packs-test/run` (the v2
//! packs-test seam family; schemas/seams/packs-test-run.*), and which pack
//! nodes a replay fork of its runs suppresses (RPL-2, RPL-3, RPL-4, RPL-5).
//!
//! One request is one run, attributed to `principal` (its tenant set as the
//! turn seam sets it), that executes a fixture pack's nodes in order. Each
//! node (nodeId = its nodeType) appends `node.started {nodeId, nodeType}`;
//! its work is ONE POST of `{packId, nodeType, runId}` to its loopback
//! `receiverUrl`, bounded by 2 s. The answer (status and JSON body) is the
//! node's outcome: it is written to the invocation log keyed
//! `(runId, nodeId, n)`, `n` counting that node's `node.started` in the run
//! ([`records::put_node_outcome`]), inside the very transaction that appends
//! `node.completed {nodeId, outputs: {status, body}}` and before that event's
//! row. A 5xx answer is recorded too (body `null`: a failure's body is never
//! kept) and fails the node (`node.failed` `refhost.pack_node_failed`); no
//! answer in time or a broken connection has no outcome to record
//! (`node.failed` `upstream_unavailable`). Either fails the run. Then
//! `run.completed {result: {packId, nodes}}`. The seam answers `201 {runId,
//! eventsUrl}` as soon as `run.started` is written; the nodes run in the
//! background, like the turn seam's loop.
//!
//! # Which nodes are side-effecting (RPL-4)
//!
//! `side_effecting(node) = role == "side-effect" OR classifier(node)`, where
//! this host's classifier says a `kind: "http"` node is side-effecting and a
//! `kind: "transform"` node is pure ([`side_effecting`]). "A node whose pack
//! declares `role: "side-effect"` is always side-effecting; classifiers only
//! add": a pack's `role: "pure"` never makes a node the classifier calls
//! side-effecting pure, and its `role: "side-effect"` makes a `transform`
//! node side-effecting. A fixture node may hide an effect whatever its kind;
//! that is exactly why a pack may declare its role.
//!
//! # Replay (RPL-2, RPL-3, RPL-5)
//!
//! The run's plan is stored like a turn run's, so `POST /runs/{runId}:fork
//! {mode: "replay"}` accepts it ([`crate::surface::run_actions`]). The fork runs the
//! pack again: a side-effecting node performs no POST and is served the
//! outcome recorded for `(sourceRunId, nodeId, n)`, so its `node.completed`
//! (or `node.failed`) equals the source's; a missing record is `node.failed`
//! `replay_source_missing` and `run.failed` (no POST, no synthesized
//! success). A pure node re-executes live: it POSTs again (with the fork's
//! runId) and reports what it gets. The fork keeps its own copy of every
//! outcome, so a fork of the fork is served too.
//!
//! # The effect seam (RPL-11)
//!
//! The pack node dispatch is the effect-seam manifest's `packs-test-node`
//! row ([`manifest_row`]). A side-effecting node dispatched live that gets a
//! 2xx answer writes ONE `delivered` ledger row keyed
//! `seam:packs-test-node`; served and pure nodes write none, and a replay
//! fork carries its source's rows over unchanged. The fire seam drives the
//! row with a one-node pack ([`fire`]).

use std::collections::HashMap;
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use reqwest::Url;
use serde_json::{Map, Value, json};
use tokio::sync::watch;

use crate::base::args_hash::sha256_hex;
use crate::base::clock::now_unix_ms;
use crate::base::event_codes::{INTERNAL_ERROR, REPLAY_SOURCE_MISSING, UPSTREAM_UNAVAILABLE};
use crate::base::events::{
    NODE_COMPLETED, NODE_FAILED, NODE_STARTED, NewEvent, RUN_CANCELLED, RUN_COMPLETED, RUN_FAILED,
    RUN_STARTED,
};
use crate::base::mutant::{Mutant, MutantInfo};
use crate::domain::effects::ledger::{self, SeamDelivery};
use crate::domain::error::{ApiError, json_response};
use crate::domain::invoker::JsonExchange;
use crate::domain::json_body::require_loopback_http;
use crate::domain::json_body::{Fields, kind, parse_object};
use crate::store::storage::{RunStatus, StorageError};
use crate::surface::seams::extract::SeamRequest;
use crate::turn::plan::HOST_SHUTDOWN;
use crate::turn::records::ReplaySource;
use crate::turn::records::{self, NodeOutcome, RunMode};
use crate::turn::state::LoopState;

/// The effect-seam manifest id of the pack node dispatch (RPL-11).
pub const PACK_NODE_SEAM: &str = "packs-test-node";

/// How long one node's POST may take, connection included.
pub const NODE_TIMEOUT: Duration = Duration::from_secs(2);

/// Most nodes a pack may have.
pub const MAX_NODES: usize = 8;

/// Longest `pack.packId` and `nodeType`, in characters.
pub const MAX_NAME_LEN: usize = 64;

/// `node.failed` / `run.failed` code: a node's receiver answered 5xx.
/// Vendor namespaced: no registered v2 code says this (HOOKS-FAIL-7).
pub const PACK_NODE_FAILED: &str = "refhost.pack_node_failed";

/// The `packId` of the one-node pack an effect-seam fire runs (RPL-11).
pub const FIRE_PACK_ID: &str = "refhost.effect-seam-fire";

/// The node of that pack: a `transform` node declared `role:
/// "side-effect"`, the RPL-4 witness of a node hiding an effect.
pub const FIRE_NODE_TYPE: &str = "hidden-effect";

/// The member under which a packs-test run's plan is stored in
/// `turn_runs.request`: neither a turn request nor a fire plan has it.
const STORED_PLAN_MEMBER: &str = "packsTestRun";

/// Every member the request may carry (the shape is closed at every level).
const FIELDS: &[&str] = &["principal", "pack"];
const PACK_FIELDS: &[&str] = &["packId", "nodes"];
const NODE_FIELDS: &[&str] = &["nodeType", "kind", "role", "receiverUrl"];

/// A node's kind: what this host's classifier looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    /// `transform`: the classifier calls it pure.
    Transform,
    /// `http`: the classifier calls it side-effecting.
    Http,
}

impl NodeKind {
    /// The wire names, in schema order.
    pub const NAMES: &'static [&'static str] = &["transform", "http"];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Transform => "transform",
            Self::Http => "http",
        }
    }

    fn parse(name: &str) -> Option<Self> {
        match name {
            "transform" => Some(Self::Transform),
            "http" => Some(Self::Http),
            _ => None,
        }
    }
}

/// The role a pack declares for a node (RPL-4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// `side-effect`: always side-effecting.
    SideEffect,
    /// `pure`: adds nothing; the classifier still decides.
    Pure,
}

impl Role {
    /// The wire names, in schema order.
    pub const NAMES: &'static [&'static str] = &["side-effect", "pure"];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::SideEffect => "side-effect",
            Self::Pure => "pure",
        }
    }

    fn parse(name: &str) -> Option<Self> {
        match name {
            "side-effect" => Some(Self::SideEffect),
            "pure" => Some(Self::Pure),
            _ => None,
        }
    }
}

/// One node of a fixture pack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackNode {
    /// The node type; also the node's id in the run.
    pub node_type: String,
    /// Its kind.
    pub kind: NodeKind,
    /// The role its pack declares, if any.
    pub role: Option<Role>,
    /// The loopback receiver that plays the node's work.
    pub receiver_url: Url,
}

impl PackNode {
    /// The node's id in the run: its nodeType (unique within the pack).
    pub fn node_id(&self) -> &str {
        &self.node_type
    }
}

/// A fixture pack: its id and its nodes, in execution order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pack {
    /// `pack.packId`.
    pub pack_id: String,
    /// 1 to [`MAX_NODES`] nodes with unique nodeTypes.
    pub nodes: Vec<PackNode>,
}

/// A parsed, checked packs-test request: also the run's stored plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackRunRequest {
    /// The principal the run is attributed to.
    pub principal: String,
    /// The pack to run.
    pub pack: Pack,
}

impl PackRunRequest {
    /// Parses and checks the body; every problem is a 400 naming the member
    /// by its full path (`pack.nodes[1].receiverUrl`).
    pub fn parse(body: &[u8]) -> Result<Self, ApiError> {
        Self::parse_map(parse_object(body)?)
    }

    fn parse_map(map: Map<String, Value>) -> Result<Self, ApiError> {
        let mut fields = Fields::closed(map, FIELDS)?;
        let principal = fields.required_string("principal")?;
        let pack = parse_pack(fields.required_object("pack")?)?;
        Ok(Self { principal, pack })
    }

    /// The request as a body of the seam (normalized).
    pub fn to_value(&self) -> Value {
        let nodes: Vec<Value> = self
            .pack
            .nodes
            .iter()
            .map(|node| {
                let mut value = json!({
                    "nodeType": node.node_type,
                    "kind": node.kind.as_str(),
                    "receiverUrl": node.receiver_url.as_str(),
                });
                if let (Some(role), Some(object)) = (node.role, value.as_object_mut()) {
                    object.insert("role".into(), json!(role.as_str()));
                }
                value
            })
            .collect();
        json!({
            "principal": self.principal,
            "pack": {"packId": self.pack.pack_id, "nodes": nodes},
        })
    }

    /// The plan text stored in `turn_runs.request`.
    fn stored(&self) -> String {
        json!({ STORED_PLAN_MEMBER: self.to_value() }).to_string()
    }

    /// The packs-test plan in a stored plan text, if it is one (else a turn
    /// run's request, a fire plan, or nothing usable).
    pub fn from_stored(text: &str) -> Option<Self> {
        let value: Value = serde_json::from_str(text).ok()?;
        let Value::Object(map) = value.get(STORED_PLAN_MEMBER)?.clone() else {
            return None;
        };
        Self::parse_map(map).ok()
    }
}

fn parse_pack(map: Map<String, Value>) -> Result<Pack, ApiError> {
    let mut fields = Fields::closed_at("pack", map, PACK_FIELDS)?;
    let pack_id = fields.required_string("packId")?;
    if !is_pack_id(&pack_id) {
        return Err(ApiError::validation(format!(
            "field `{}` must match ^[a-z0-9][a-z0-9.-]{{0,63}}$",
            fields.name("packId")
        )));
    }
    let nodes_name = fields.name("nodes");
    let items = fields.optional_array("nodes")?.ok_or_else(|| {
        ApiError::validation(format!(
            "field `{nodes_name}` is required (an array of 1 to {MAX_NODES} nodes)"
        ))
    })?;
    if items.is_empty() || items.len() > MAX_NODES {
        return Err(ApiError::validation(format!(
            "field `{nodes_name}` must hold 1 to {MAX_NODES} nodes, got {}",
            items.len()
        )));
    }
    let mut nodes: Vec<PackNode> = Vec::with_capacity(items.len());
    for (index, item) in items.into_iter().enumerate() {
        let path = format!("{nodes_name}[{index}]");
        let Value::Object(map) = item else {
            return Err(ApiError::validation(format!(
                "field `{path}` must be an object, got {}",
                kind(&item)
            )));
        };
        let node = parse_node(&path, map)?;
        if nodes.iter().any(|seen| seen.node_type == node.node_type) {
            return Err(ApiError::validation(format!(
                "field `{path}.nodeType` repeats an earlier node's; nodeTypes are the nodes' ids and must be unique within a pack"
            )));
        }
        nodes.push(node);
    }
    Ok(Pack { pack_id, nodes })
}

fn parse_node(path: &str, map: Map<String, Value>) -> Result<PackNode, ApiError> {
    let mut fields = Fields::closed_at(path, map, NODE_FIELDS)?;
    let node_type = fields.required_string("nodeType")?;
    if !is_node_type(&node_type) {
        return Err(ApiError::validation(format!(
            "field `{}` must match ^[A-Za-z0-9_.-]{{1,64}}$",
            fields.name("nodeType")
        )));
    }
    // The `*_enum` accessors only return listed names, which all parse.
    let kind =
        NodeKind::parse(fields.required_enum("kind", NodeKind::NAMES)?).unwrap_or(NodeKind::Http);
    let role = fields
        .optional_enum("role", Role::NAMES)?
        .and_then(Role::parse);
    let raw_url = fields.required_string("receiverUrl")?;
    // Loopback only: the host is never made a client of another machine.
    let receiver_url = require_loopback_http(&fields.name("receiverUrl"), &raw_url)?;
    Ok(PackNode {
        node_type,
        kind,
        role,
        receiver_url,
    })
}

/// `^[a-z0-9][a-z0-9.-]{0,63}$`.
fn is_pack_id(id: &str) -> bool {
    let bytes = id.as_bytes();
    bytes.len() <= MAX_NAME_LEN
        && bytes
            .first()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'.' || *b == b'-')
}

/// `^[A-Za-z0-9_.-]{1,64}$`.
fn is_node_type(name: &str) -> bool {
    (1..=MAX_NAME_LEN).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// This host's classifier (RPL-4): an `http` node is side-effecting, a
/// `transform` node is pure.
pub fn classifier_side_effecting(kind: NodeKind) -> bool {
    kind == NodeKind::Http
}

/// Whether `node` is side-effecting: its pack declares `role:
/// "side-effect"`, or the classifier says so (RPL-4: "classifiers only
/// add"; a declared `pure` takes nothing away).
pub fn side_effecting(node: &PackNode, mutant: Option<Mutant>) -> bool {
    let classified = classifier_side_effecting(node.kind);
    match node.role {
        // Bug under `pack-role-ignored`: the declared role is dropped and
        // the classifier alone decides, so a transform node that hides an
        // effect is re-executed by a replay fork.
        Some(Role::SideEffect) => mutant != Some(Mutant::PackRoleIgnored) || classified,
        // Bug under `pack-pure-role-overrides`: a declared `pure` wins over
        // the classifier, so an http node is re-executed by a replay fork.
        Some(Role::Pure) if mutant == Some(Mutant::PackPureRoleOverrides) => false,
        Some(Role::Pure) | None => classified,
    }
}

/// The manifest row of the pack node dispatch (RPL-11).
pub fn manifest_row() -> Value {
    json!({
        "seam": PACK_NODE_SEAM,
        "kind": "http",
        "guarded": true,
        "guardedBy": "the packs-test node dispatcher: a side-effecting node of a replay fork is served its recorded outcome",
        "note": "each pack node POSTs to its receiverUrl; in a replay fork a side-effecting node (its pack declares role side-effect, or its kind is http) is served its recorded outcome and never dispatched, and a pure node re-executes",
    })
}

/// The effect id of dispatch `n` of node `node_id` in `run_id`: `eff_` +
/// 32 hex digits of SHA-256 over the seam id, the run, the node and `n`.
pub fn pack_effect_id(run_id: &str, node_id: &str, n: u32) -> String {
    let digest = sha256_hex(format!("seam:{PACK_NODE_SEAM}\0{run_id}\0{node_id}\0{n}").as_bytes());
    format!("eff_{}", digest.get(..32).unwrap_or(&digest))
}

/// Handler for the seam: checks the caller and the whole body (every
/// problem is an answer before any run exists), creates the run, writes
/// `run.started`, starts the nodes in the background and answers `201
/// {runId, eventsUrl}`.
pub async fn run(State(state): State<LoopState>, seam: SeamRequest) -> Result<Response, ApiError> {
    // Caller checks first, as for every seam.
    let caller = &seam.caller;
    let body = seam.body;
    let request = PackRunRequest::parse(&body)?;
    let tenant = state.run_tenant(&request.principal, caller);
    let run_id = state.new_run_id(&tenant);
    let run = create(&state, &run_id, &tenant, request)?;
    tokio::spawn(run.drive());
    Ok(json_response(
        StatusCode::CREATED,
        &json!({
            "runId": run_id,
            "eventsUrl": format!("/runs/{run_id}/events"),
        }),
    ))
}

/// Fires the `packs-test-node` effect seam once (RPL-11): a run attributed
/// to `principal` of the one-node pack [`FIRE_PACK_ID`] whose `transform`
/// node [`FIRE_NODE_TYPE`], declared `role: "side-effect"`, POSTs to
/// `receiver_url`. Returns the run's id once the run is terminal.
pub async fn fire(
    state: &LoopState,
    principal: &str,
    tenant: &str,
    receiver_url: &Url,
) -> Result<String, ApiError> {
    let request = PackRunRequest {
        principal: principal.to_owned(),
        pack: Pack {
            pack_id: FIRE_PACK_ID.to_owned(),
            nodes: vec![PackNode {
                node_type: FIRE_NODE_TYPE.to_owned(),
                kind: NodeKind::Transform,
                role: Some(Role::SideEffect),
                receiver_url: receiver_url.clone(),
            }],
        },
    };
    let run_id = state.new_run_id(tenant);
    let run = create(state, &run_id, tenant, request)?;
    run.drive().await;
    Ok(run_id)
}

/// Creates a live run of `request` in `tenant`, stores its plan (so `:fork`
/// accepts it) and writes `run.started`.
fn create(
    state: &LoopState,
    run_id: &str,
    tenant: &str,
    request: PackRunRequest,
) -> Result<PackRun, ApiError> {
    state
        .storage()
        .create_run_in(run_id, &request.principal, tenant)?;
    records::save_plan(
        state.storage(),
        run_id,
        &request.stored(),
        None,
        RunMode::Live,
    )?;
    Ok(PackRun::begin(
        state,
        run_id,
        &request.principal,
        tenant,
        request.pack,
        None,
    )?)
}

/// Starts the replay fork `run_id` (already created, its plan saved and its
/// ledger rows inherited) of a packs-test run: `run.started` now, then the
/// nodes in the background, side-effecting ones served from `source`'s
/// records (RPL-2, RPL-4).
pub fn start_replay(
    state: &LoopState,
    run_id: &str,
    principal: &str,
    tenant: &str,
    pack: Pack,
    source: ReplaySource,
) -> Result<(), StorageError> {
    let run = PackRun::begin(state, run_id, principal, tenant, pack, Some(source))?;
    tokio::spawn(run.drive());
    Ok(())
}

/// Why a run stopped short of `run.completed`.
#[derive(Debug)]
struct Halt {
    code: &'static str,
    message: String,
    /// The node to write `node.failed` for, when it is not written yet.
    node: Option<String>,
}

impl Halt {
    /// The node `node_id` failed (its `node.failed` is written at settling).
    fn node(node_id: &str, code: &'static str, message: String) -> Self {
        Self {
            code,
            message,
            node: Some(node_id.to_owned()),
        }
    }

    /// The `error` of `node.failed` / `run.failed`.
    fn error(&self) -> Value {
        json!({"code": self.code, "message": self.message})
    }
}

impl From<StorageError> for Halt {
    fn from(_: StorageError) -> Self {
        Self {
            code: INTERNAL_ERROR,
            message: "the host could not write the run's log, so the run stopped".to_owned(),
            node: None,
        }
    }
}

/// How a run's execution ended.
#[derive(Debug)]
enum Ended {
    /// Every node ran, or one halted the run.
    Done(Result<(), Halt>),
    /// Cancelled (`POST /runs/{runId}:cancel`); the `run.cancelled.reason`.
    Cancelled(String),
    /// The host is stopping with a durable store: the run stays `running`
    /// (start-up recovery fails it: its plan is not a turn request).
    Suspended,
}

/// One packs-test run: a live run or a replay fork of one.
struct PackRun {
    state: LoopState,
    run_id: String,
    tenant: String,
    pack: Pack,
    /// For a replay fork: the run whose records are served.
    replay: Option<ReplaySource>,
    /// The cancel signal of `POST /runs/{runId}:cancel`.
    cancel: watch::Receiver<Option<String>>,
}

impl PackRun {
    /// Registers the run's cancel signal and writes `run.started
    /// {principal, packId, fork?}`.
    fn begin(
        state: &LoopState,
        run_id: &str,
        principal: &str,
        tenant: &str,
        pack: Pack,
        replay: Option<ReplaySource>,
    ) -> Result<Self, StorageError> {
        let mut payload = json!({"principal": principal, "packId": pack.pack_id});
        if let (Some(source), Some(object)) = (&replay, payload.as_object_mut()) {
            object.insert(
                "fork".into(),
                json!({"sourceRunId": source.run_id, "mode": "replay"}),
            );
        }
        // Registered before anything else can see the run started, so a
        // cancel always reaches this run's execution.
        let cancel = state.run_controls().register(run_id);
        if let Err(err) = state
            .storage()
            .append_event(run_id, NewEvent::new(RUN_STARTED, payload))
        {
            state.run_controls().remove(run_id);
            return Err(err);
        }
        Ok(Self {
            state: state.clone(),
            run_id: run_id.to_owned(),
            tenant: tenant.to_owned(),
            pack,
            replay,
            cancel,
        })
    }

    /// Runs the nodes until done, cancelled or the host stops, then writes
    /// the terminal events.
    async fn drive(self) {
        let mut cancel = self.cancel.clone();
        let ended = tokio::select! {
            ended = self.execute() => Ended::Done(ended),
            reason = cancelled(&mut cancel) => Ended::Cancelled(reason),
            () = self.state.shutdown_requested() => {
                if self.state.durable() {
                    Ended::Suspended
                } else {
                    Ended::Done(Err(Halt {
                        code: HOST_SHUTDOWN,
                        message: "the host shut down before the run finished".to_owned(),
                        node: None,
                    }))
                }
            }
        };
        // If even the terminal write fails the store is gone; the run stays
        // `running`, as a turn run's would.
        let _ = self.settle(ended);
        self.state.run_controls().remove(&self.run_id);
    }

    /// The nodes, in order: `node.started`, then the node's work.
    async fn execute(&self) -> Result<(), Halt> {
        let mutant = self.state.mutant();
        // RPL-2: `n` counts each node's `node.started` in this run.
        let mut started: HashMap<&str, u32> = HashMap::new();
        for node in &self.pack.nodes {
            let node_id = node.node_id();
            let count = started.entry(node_id).or_insert(0);
            *count += 1;
            let n = *count;
            self.state.storage().append_event(
                &self.run_id,
                NewEvent::new(
                    NODE_STARTED,
                    json!({"nodeId": node_id, "nodeType": node.node_type}),
                )
                .at_node(node_id),
            )?;
            let side_effecting = side_effecting(node, mutant);
            match &self.replay {
                // RPL-2: served, never dispatched. RPL-5: a pure node of a
                // fork falls through and re-executes live.
                Some(source) if side_effecting => self.serve(node, n, source)?,
                _ => self.dispatch(node, n, side_effecting).await?,
            }
        }
        Ok(())
    }

    /// A side-effecting node of a replay fork: the source's outcome for
    /// `(sourceRunId, nodeId, n)`, or RPL-3's miss. Nothing is sent.
    fn serve(&self, node: &PackNode, n: u32, source: &ReplaySource) -> Result<(), Halt> {
        let node_id = node.node_id();
        let Some(outcome) =
            records::node_outcome(self.state.storage(), &source.run_id, node_id, n)?
        else {
            return Err(Halt::node(
                node_id,
                REPLAY_SOURCE_MISSING,
                format!(
                    "the source run `{}` has no recorded outcome for node `{node_id}` (dispatch {n}), so the replay cannot serve it and does not perform its effect (RPL-3)",
                    source.run_id
                ),
            ));
        };
        self.conclude(node_id, n, &outcome)
    }

    /// A node's work done live: one POST of `{packId, nodeType, runId}`.
    async fn dispatch(&self, node: &PackNode, n: u32, side_effecting: bool) -> Result<(), Halt> {
        let node_id = node.node_id();
        let body = json!({
            "packId": self.pack.pack_id,
            "nodeType": node.node_type,
            "runId": self.run_id,
        });
        let exchange = self
            .state
            .invoker()
            .post_json_with(&node.receiver_url, &body, &[], NODE_TIMEOUT)
            .await;
        let outcome = match exchange {
            JsonExchange::Answered {
                status,
                body,
                complete,
            } => NodeOutcome {
                status,
                // A failure's body is never kept (RFC 0064 §F); a cut or
                // non-JSON body is `null`.
                body: if status >= 500 || !complete {
                    Value::Null
                } else {
                    serde_json::from_slice(&body).unwrap_or(Value::Null)
                },
            },
            JsonExchange::TimedOut => {
                return Err(Halt::node(
                    node_id,
                    UPSTREAM_UNAVAILABLE,
                    format!(
                        "node `{node_id}`'s receiver did not answer within {} s; no outcome was recorded",
                        NODE_TIMEOUT.as_secs()
                    ),
                ));
            }
            JsonExchange::Unreachable => {
                return Err(Halt::node(
                    node_id,
                    UPSTREAM_UNAVAILABLE,
                    format!(
                        "node `{node_id}`'s receiver could not be reached (the connection failed or broke before a complete answer); no outcome was recorded"
                    ),
                ));
            }
        };
        let answered_at = now_unix_ms();
        self.conclude(node_id, n, &outcome)?;
        // RPL-11: a side-effecting node delivered live is one effect through
        // the `packs-test-node` seam; a pure node's work is no effect.
        if side_effecting && (200..300).contains(&outcome.status) {
            let effect_id = pack_effect_id(&self.run_id, node_id, n);
            ledger::record_seam_delivery(
                self.state.storage(),
                &SeamDelivery {
                    effect_id: &effect_id,
                    run_id: &self.run_id,
                    tenant: &self.tenant,
                    node_id,
                    seam: PACK_NODE_SEAM,
                    at_ms: answered_at,
                },
            )?;
        }
        Ok(())
    }

    /// Records `outcome` as dispatch `n` of `node_id` in this run's log and,
    /// in the same transaction and after it, appends `node.completed
    /// {nodeId, outputs}` (or for a 5xx `node.failed`
    /// `refhost.pack_node_failed`, which halts the run).
    fn conclude(&self, node_id: &str, n: u32, outcome: &NodeOutcome) -> Result<(), Halt> {
        let failure = (outcome.status >= 500).then(|| {
            format!(
                "node `{node_id}`'s receiver answered HTTP {}",
                outcome.status
            )
        });
        let event = match &failure {
            Some(message) => NewEvent::new(
                NODE_FAILED,
                json!({"nodeId": node_id, "error": {"code": PACK_NODE_FAILED, "message": message}}),
            ),
            None => NewEvent::new(
                NODE_COMPLETED,
                json!({"nodeId": node_id, "outputs": outcome}),
            ),
        }
        .at_node(node_id);
        self.state
            .storage()
            .append_event_in_slot(&self.run_id, |tx, _| {
                records::put_node_outcome(tx, &self.run_id, node_id, n, outcome)?;
                Ok(event)
            })?;
        match failure {
            // `node.failed` is written: only the run is left to fail.
            Some(message) => Err(Halt {
                code: PACK_NODE_FAILED,
                message,
                node: None,
            }),
            None => Ok(()),
        }
    }

    /// Writes how the run ended; a run already terminal is left so.
    fn settle(&self, ended: Ended) -> Result<(), StorageError> {
        let storage = self.state.storage();
        if matches!(ended, Ended::Suspended)
            || storage
                .run(&self.run_id)?
                .is_some_and(|run| run.status.is_terminal())
        {
            return Ok(());
        }
        match ended {
            Ended::Suspended => {}
            Ended::Cancelled(reason) => {
                storage.finish_run(
                    &self.run_id,
                    RunStatus::Cancelled,
                    None,
                    NewEvent::new(RUN_CANCELLED, json!({ "reason": reason })),
                )?;
            }
            Ended::Done(Ok(())) => {
                let result = json!({"packId": self.pack.pack_id, "nodes": self.pack.nodes.len()});
                storage.finish_run(
                    &self.run_id,
                    RunStatus::Completed,
                    None,
                    NewEvent::new(RUN_COMPLETED, json!({ "result": result })),
                )?;
            }
            Ended::Done(Err(halt)) => {
                let error = halt.error();
                if let Some(node_id) = &halt.node {
                    storage.append_event(
                        &self.run_id,
                        NewEvent::new(NODE_FAILED, json!({"nodeId": node_id, "error": error}))
                            .at_node(node_id),
                    )?;
                }
                storage.finish_run(
                    &self.run_id,
                    RunStatus::Failed,
                    Some(&error),
                    NewEvent::new(RUN_FAILED, json!({ "error": error })),
                )?;
            }
        }
        Ok(())
    }
}

/// Resolves with the `run.cancelled.reason` once the run is cancelled.
async fn cancelled(cancel: &mut watch::Receiver<Option<String>>) -> String {
    loop {
        if let Some(reason) = cancel.borrow_and_update().clone() {
            return reason;
        }
        if cancel.changed().await.is_err() {
            // The registry dropped the sender: nobody can cancel any more.
            std::future::pending::<()>().await;
        }
    }
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[
    MutantInfo {
        mutant: Mutant::PackRoleIgnored,
        name: "pack-role-ignored",
        breaks: "a pack's role: side-effect is ignored: the classifier alone decides, so a transform node with a hidden effect re-fires in a replay fork (RPL-4)",
    },
    MutantInfo {
        mutant: Mutant::PackPureRoleOverrides,
        name: "pack-pure-role-overrides",
        breaks: "a pack's role: pure overrides the classifier, so an http node re-fires in a replay fork (RPL-4: classifiers only add)",
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::error::ErrorCode;

    fn node(node_type: &str, kind: &str, role: Option<&str>) -> Value {
        let mut value =
            json!({"nodeType": node_type, "kind": kind, "receiverUrl": "http://127.0.0.1:9/n"});
        if let Some(role) = role {
            value["role"] = json!(role);
        }
        value
    }

    fn body(nodes: Vec<Value>) -> Value {
        json!({"principal": "alice", "pack": {"packId": "fixture.pack-1", "nodes": nodes}})
    }

    fn parse(value: &Value) -> Result<PackRunRequest, ApiError> {
        PackRunRequest::parse(value.to_string().as_bytes())
    }

    #[test]
    fn a_full_request_parses_and_round_trips_through_the_stored_plan() {
        let value = body(vec![
            node("a", "transform", Some("side-effect")),
            node("b.v2", "transform", None),
            node("C_1", "http", Some("pure")),
        ]);
        let request = parse(&value).expect("valid");
        assert_eq!(request.principal, "alice");
        assert_eq!(request.pack.pack_id, "fixture.pack-1");
        assert_eq!(request.pack.nodes.len(), 3);
        assert_eq!(request.pack.nodes[0].role, Some(Role::SideEffect));
        assert_eq!(request.pack.nodes[1].role, None);
        assert_eq!(request.pack.nodes[2].kind, NodeKind::Http);
        assert_eq!(request.to_value(), value);
        assert_eq!(
            PackRunRequest::from_stored(&request.stored()),
            Some(request)
        );
        // A turn request or a fire plan is not a packs-test plan.
        assert_eq!(PackRunRequest::from_stored(r#"{"principal": "a"}"#), None);
        assert_eq!(
            PackRunRequest::from_stored(r#"{"effectSeamFire": {"seam": "tool-receiver"}}"#),
            None
        );
    }

    #[test]
    fn problems_are_400_naming_the_member_by_its_full_path() {
        let too_many: Vec<Value> = (0..9)
            .map(|i| node(&format!("n{i}"), "http", None))
            .collect();
        let long = "x".repeat(65);
        let cases: Vec<(Value, &str)> = vec![
            (
                json!({"pack": {"packId": "p", "nodes": [node("a", "http", None)]}}),
                "`principal`",
            ),
            (json!({"principal": "alice"}), "`pack`"),
            (json!({"principal": "alice", "pack": [], }), "`pack`"),
            (
                json!({"principal": "alice", "pack": {"packId": "p", "nodes": []}, "x": 1}),
                "`x`",
            ),
            (
                json!({"principal": "alice", "pack": {"nodes": [node("a", "http", None)]}}),
                "`pack.packId`",
            ),
            (
                json!({"principal": "alice", "pack": {"packId": "Bad", "nodes": [node("a", "http", None)]}}),
                "`pack.packId`",
            ),
            (
                json!({"principal": "alice", "pack": {"packId": ".p", "nodes": [node("a", "http", None)]}}),
                "`pack.packId`",
            ),
            (
                json!({"principal": "alice", "pack": {"packId": "p"}}),
                "`pack.nodes`",
            ),
            (
                json!({"principal": "alice", "pack": {"packId": "p", "nodes": []}}),
                "`pack.nodes`",
            ),
            (
                json!({"principal": "alice", "pack": {"packId": "p", "nodes": too_many}}),
                "`pack.nodes`",
            ),
            (
                json!({"principal": "alice", "pack": {"packId": "p", "nodes": [1]}}),
                "`pack.nodes[0]`",
            ),
            (
                json!({"principal": "alice", "pack": {"packId": "p", "nodes": [node("a", "http", None)], "y": 2}}),
                "`pack.y`",
            ),
            (
                body(vec![node("a b", "http", None)]),
                "`pack.nodes[0].nodeType`",
            ),
            (
                body(vec![node(&long, "http", None)]),
                "`pack.nodes[0].nodeType`",
            ),
            (
                body(vec![node("a", "http", None), node("a", "transform", None)]),
                "`pack.nodes[1].nodeType`",
            ),
            (body(vec![node("a", "grpc", None)]), "`pack.nodes[0].kind`"),
            (
                body(vec![node("a", "http", Some("effect"))]),
                "`pack.nodes[0].role`",
            ),
            (
                body(vec![
                    json!({"nodeType": "a", "kind": "http", "receiverUrl": "http://10.0.0.1/n"}),
                ]),
                "`pack.nodes[0].receiverUrl`",
            ),
            (
                body(vec![json!({"nodeType": "a", "kind": "http"})]),
                "`pack.nodes[0].receiverUrl`",
            ),
            (
                body(vec![
                    json!({"nodeType": "a", "kind": "http", "receiverUrl": "http://127.0.0.1:9/n", "z": 0}),
                ]),
                "`pack.nodes[0].z`",
            ),
            (
                body(vec![
                    json!({"nodeType": "a", "kind": "http", "role": null, "receiverUrl": "http://127.0.0.1:9/n"}),
                ]),
                "`pack.nodes[0].role`",
            ),
        ];
        for (value, member) in cases {
            let err = parse(&value).expect_err("rejected");
            assert_eq!(err.code, ErrorCode::ValidationError, "{value}");
            assert!(err.message.contains(member), "{value}: {}", err.message);
        }
        // The edges of the patterns are accepted.
        let max_id = format!("a{}", "-".repeat(63));
        let edge = json!({"principal": "alice", "pack": {"packId": max_id, "nodes": [node(&"Z".repeat(64), "http", None)]}});
        assert!(parse(&edge).is_ok());
    }

    #[test]
    fn side_effecting_is_the_declared_role_or_the_classifier() {
        let url = Url::parse("http://127.0.0.1:9/n").expect("url");
        let node = |kind, role| PackNode {
            node_type: "n".into(),
            kind,
            role,
            receiver_url: url.clone(),
        };
        use NodeKind::{Http, Transform};
        use Role::{Pure, SideEffect};
        // (kind, role) ⇒ correct, under pack-role-ignored, under pack-pure-role-overrides.
        let table = [
            ((Transform, None), [false, false, false]),
            ((Transform, Some(Pure)), [false, false, false]),
            ((Transform, Some(SideEffect)), [true, false, true]),
            ((Http, None), [true, true, true]),
            ((Http, Some(Pure)), [true, true, false]),
            ((Http, Some(SideEffect)), [true, true, true]),
        ];
        for ((kind, role), expected) in table {
            let n = node(kind, role);
            let got = [
                side_effecting(&n, None),
                side_effecting(&n, Some(Mutant::PackRoleIgnored)),
                side_effecting(&n, Some(Mutant::PackPureRoleOverrides)),
            ];
            assert_eq!(got, expected, "{kind:?} {role:?}");
        }
    }

    #[test]
    fn effect_ids_and_codes() {
        let id = pack_effect_id("run_a", "n", 1);
        assert!(id.starts_with("eff_") && id.len() == 36, "{id}");
        assert_ne!(id, pack_effect_id("run_b", "n", 1));
        assert_ne!(id, pack_effect_id("run_a", "m", 1));
        assert_ne!(id, pack_effect_id("run_a", "n", 2));
        assert!(crate::base::event_codes::is_conformant(PACK_NODE_FAILED));
        assert!(is_pack_id(FIRE_PACK_ID));
        assert!(is_node_type(FIRE_NODE_TYPE));
        assert_eq!(manifest_row()["kind"], "http");
        assert_eq!(manifest_row()["seam"], PACK_NODE_SEAM);
    }
}
