//! One observation struct per step kind (and per double). Fields holding what the host sent
//! (bodies, events, statuses it chose) stay [`Value`]s; optional fields are left out of the
//! JSON when absent, and `Option`s without `skip_serializing_if` are `null` when absent, as
//! the observation document has always had them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `http` (and each item of `burst`, discovery's answers): one answer of the host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HttpObservation {
    /// Status code.
    pub status: u16,
    /// Headers, lowercase names.
    pub headers: BTreeMap<String, String>,
    /// Body as the host sent it (parsed JSON, `null`, or `{"$nonJson": …}`).
    pub body: Value,
}

/// `http` with `abandon`: a request toolcert dropped before the answer (MCP-14), or the
/// answer that came first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AbandonObservation {
    /// Whether toolcert dropped the connection with no answer received, once the point was
    /// reached (`false`: the host answered first).
    pub abandoned: bool,
    /// Milliseconds from sending to the drop (or to the answer).
    pub after_ms: u64,
    /// The point as seen when the request was dropped (`provider script model saw 1
    /// request(s)`); absent when the host answered first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub point: Option<String>,
    /// The host's answer, when it came before the point.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<HttpObservation>,
}

/// A seam answer's status line and headers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HttpHead {
    /// Status code.
    pub status: u16,
    /// Headers, lowercase names.
    pub headers: BTreeMap<String, String>,
}

/// `seam`: a test seam's answer, with `runId`, `toolCalled`, `toolReturned` lifted from the
/// body or its `details`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SeamObservation {
    /// Status and headers.
    pub http: HttpHead,
    /// The body.
    pub body: Value,
    /// The run the seam started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<Value>,
    /// The host's report of the call it made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_called: Option<Value>,
    /// The host's report of what the tool returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_returned: Option<Value>,
}

/// `burst`: identical requests sent together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BurstObservation {
    /// How many answers.
    pub count: usize,
    /// Their statuses, in send order.
    pub statuses: Vec<u16>,
    /// The answers.
    pub items: Vec<HttpObservation>,
}

/// `catalog`: the tool catalog as one role sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CatalogObservation {
    /// The list's status code.
    pub status: u16,
    /// `array` (a bare list), `object` (`{tools: [...]}`) or `other`.
    pub shape: String,
    /// The listed descriptors, whichever shape held them (none for `other`).
    pub tools: Vec<Value>,
    /// The list's body as the host sent it.
    pub body: Value,
    /// With `probeHiddenFrom`: that role's view of a tool it does not list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hidden: Option<HiddenToolProbe>,
}

/// A tool one role lists, fetched as a role that does not list it (CAT-3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HiddenToolProbe {
    /// The status of that role's own list.
    pub list_status: u16,
    /// The tool fetched; absent when that role lists every tool the first one does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_id: Option<String>,
    /// The answer's status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The answer's body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
}

/// `discovery`: discovery fetched, then again with `If-None-Match`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoveryObservation {
    /// The plain answer.
    pub first: HttpObservation,
    /// Its `ETag` (`null` when none).
    pub etag: Option<String>,
    /// The conditional answer (absent without an `ETag`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditional: Option<HttpObservation>,
}

/// `events`: a run's event log, with views checks read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventsObservation {
    /// Every error code the log carries, once each, in order of first appearance.
    pub error_codes: Vec<Value>,
    /// Every `payload.error` the log carries, in log order (ERR-4 judges each).
    pub error_objects: Vec<Value>,
    /// How calls and returns pair up.
    pub pairing: Pairing,
    /// The run read.
    pub run_id: String,
    /// Its last status (`null` when the host did not say).
    pub status: Value,
    /// Whether that status is settled.
    pub settled: bool,
    /// `sse` or `poll`.
    pub via: String,
    /// How many times the stream was resumed.
    pub reconnects: usize,
    /// How many distinct events.
    pub count: usize,
    /// Their types, in sequence order.
    pub types: Vec<Value>,
    /// Events by wire type.
    pub by_type: BTreeMap<String, Vec<Value>>,
    /// Events by concept (the same for both wire majors).
    pub by_concept: BTreeMap<String, Vec<Value>>,
    /// The events, in sequence order.
    pub events: Vec<Value>,
    /// How `tool.session.*` events bracket calls (CAT-13); absent when the log has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sessions: Option<SessionBrackets>,
}

/// How a log's `tool.session.opened`/`closed` events bracket tool calls (CAT-13, RFC 0078
/// §D): every closed event must match an earlier opened one of the same `sessionId` and
/// `toolId`, with at least one call and its return between them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionBrackets {
    /// How many opened events.
    pub opened: usize,
    /// How many closed events.
    pub closed: usize,
    /// Session ids of closed events that no earlier opened event of the same `sessionId` and
    /// `toolId` matches (or that close a session a second time).
    pub closes_without_open: Vec<Value>,
    /// Session ids whose bracket encloses no complete call/return pair.
    pub empty_brackets: Vec<Value>,
    /// Session ids opened and never closed.
    pub unclosed: Vec<Value>,
    /// The closed events' `outcome` values, in log order (`null` when absent).
    pub outcomes: Vec<Value>,
}

/// How tool calls and returns pair up in a log (TURN-B6).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Pairing {
    /// How many calls.
    pub calls: usize,
    /// How many returns.
    pub returns: usize,
    /// Call ids no return names.
    pub calls_without_return: Vec<Value>,
    /// Call ids more than one return names.
    pub calls_with_several_returns: Vec<Value>,
    /// Return call ids no call names.
    pub returns_without_call: Vec<Value>,
    /// Returns by status (`absent` when none).
    pub status_counts: BTreeMap<String, usize>,
}

/// Which bound cut an `events` read short.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Truncation {
    /// What the host did.
    pub reason: String,
    /// `events`, `bytes`, `eventSize`, `budget` or `polls`.
    pub cap: String,
    /// The bound's value.
    pub limit: u128,
    /// Events the host sent.
    pub received: usize,
    /// Body bytes read.
    pub bytes: usize,
}

/// What a cut read saw before it stopped (for a reader; never judged).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PartialLog {
    /// The run read.
    pub run_id: String,
    /// Its last status.
    pub status: Value,
    /// Whether that status is settled.
    pub settled: bool,
    /// `sse` or `poll`.
    pub via: String,
    /// Resumptions.
    pub reconnects: usize,
    /// Distinct events read.
    pub count: usize,
    /// How many of them are kept here.
    pub kept: usize,
    /// The first events read.
    pub events: Vec<Value>,
}

/// `foreach`: the same seam call made `count` times.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ForeachObservation {
    /// Calls made.
    pub count: usize,
    /// Their answers.
    pub items: Vec<SeamObservation>,
}

/// `host` with `kill`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KillObservation {
    /// Always true.
    pub killed: bool,
    /// `SIGKILL`.
    pub signal: String,
    /// How long the kill took.
    pub took_ms: u64,
}

/// `host` with `restart`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RestartObservation {
    /// Always true.
    pub restarted: bool,
    /// Where the host serves now.
    pub base_url: String,
    /// How many times the process has been started.
    pub starts: u32,
    /// How long the restart took.
    pub took_ms: u64,
}

/// `wait`: the point was reached.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WaitObservation {
    /// Always true.
    pub reached: bool,
    /// How long it took.
    pub waited_ms: u64,
}

/// `release`: a holding receiver answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReleaseObservation {
    /// Always true.
    pub released: bool,
    /// Calls it held.
    pub arrived_before: usize,
}

/// `fireEffectSeams`: every manifest row fired and forked (RPL-11).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FireEffectSeamsObservation {
    /// Rows the manifest lists.
    pub manifest_rows: usize,
    /// One per row.
    pub rows: Vec<EffectSeamRow>,
}

/// One manifest row fired, its run forked; the later fields are absent when an earlier
/// answer gave no run to go on with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EffectSeamRow {
    /// The manifest row's id.
    pub seam: String,
    /// The fire answer's status.
    pub fire_status: u16,
    /// The fired run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_run_id: Option<String>,
    /// Its settled status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_run_status: Option<Value>,
    /// Arrivals at the row's receiver when the run settled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivered_at_fire: Option<usize>,
    /// Its effect ledger rows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_effects: Option<usize>,
    /// The fork answer's status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fork_status: Option<u16>,
    /// The fork's run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fork_run_id: Option<String>,
    /// Its settled status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fork_run_status: Option<Value>,
    /// Its effect ledger rows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fork_effects: Option<usize>,
    /// Fork ledger rows without a parent twin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub re_fires: Option<Vec<Value>>,
    /// Arrivals at the row's receiver after the fork.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivered_by_fork: Option<usize>,
}

/// `/providers/NAME`: what the mock provider saw for a script.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderObservation {
    /// The script's key.
    pub model: String,
    /// Requests.
    pub count: usize,
    /// Each request, with wire-independent views.
    pub requests: Vec<Value>,
    /// What the provider found wrong.
    pub problems: Vec<String>,
}

/// `/receivers/NAME`: what a tool receiver saw.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReceiverObservation {
    /// Its URL.
    pub url: Value,
    /// The URL with its host written `0.0.0.0`.
    pub url_via_unspecified: Value,
    /// Arrivals.
    pub count: usize,
    /// Each arrival's `Idempotency-Key` (absent until the scenario ends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_keys: Option<Vec<Value>>,
    /// How many distinct ones (absent until the scenario ends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distinct_idempotency_keys: Option<usize>,
    /// The arrivals.
    pub arrivals: Vec<Arrival>,
}

/// `/mcpServers/NAME`: what an MCP server double endpoint saw.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpServerObservation {
    /// Its URL.
    pub url: Value,
    /// `tools/call` requests.
    pub count: usize,
    /// Each of them.
    pub calls: Vec<McpCall>,
    /// Distinct JSON-RPC ids among them (absent until the scenario ends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distinct_rpc_ids: Option<usize>,
    /// Distinct `Idempotency-Key`s among them (absent until the scenario ends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distinct_idempotency_keys: Option<usize>,
    /// Requests of any method (absent until the scenario ends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<usize>,
    /// The `MCP-Protocol-Version` header of every request of any method, in
    /// arrival order (`null` where none was sent; absent until the scenario ends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_versions: Option<Vec<Value>>,
    /// Each `tools/list` request, in arrival order (absent until the scenario ends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lists: Option<Vec<McpList>>,
    /// What the double found wrong.
    pub problems: Vec<String>,
}

/// One `tools/list` at an MCP server double.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpList {
    /// `params.cursor` (`null` when absent).
    pub cursor: Value,
    /// The `result` the double answered with.
    pub sent: Value,
}

/// One `tools/call` at an MCP server double (absent members are `null`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpCall {
    /// JSON-RPC id.
    pub rpc_id: Value,
    /// Tool name.
    pub name: Value,
    /// Arguments.
    pub arguments: Value,
    /// `inputResponses`.
    pub input_responses: Value,
    /// `requestState`.
    pub request_state: Value,
    /// The `Idempotency-Key` header.
    pub idempotency_key: Value,
    /// The `MCP-Protocol-Version` header.
    pub protocol_version: Value,
    /// The `traceparent` header.
    pub traceparent: Value,
    /// The `tracestate` header.
    pub tracestate: Value,
    /// `params._meta`.
    pub meta: Value,
    /// The trace context that arrived, either way the spec allows (MCP-15):
    /// `{traceparent, tracestate}`, each from `params._meta` or else the header.
    pub trace_context: Value,
    /// The `result` the double answered with (`null` for a JSON-RPC error).
    pub sent: Value,
    /// Milliseconds since the double started.
    pub at_ms: u64,
}

/// One call recorded at a receiver (toolcert's tool double): kept in observations, so the
/// offline re-check reads it without the double.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Arrival {
    /// HTTP method.
    pub method: String,
    /// Headers (lowercase names).
    pub headers: serde_json::Map<String, Value>,
    /// The body as JSON (or `{"$nonJson": …}`).
    pub body: Value,
    /// Milliseconds since the receiver started.
    pub at_ms: u64,
}
