//! `events`: a run's events read from the host's durable log until the run is terminal, with the
//! views checks read (error codes, call/return pairing, session brackets), and what a read cut
//! short by one of its bounds saw.
//!
//! Its specification (the step as a scenario writes it), its observation; its driver is
//! `driver/src/steps/events.rs`. Documented in `docs/authoring/steps.md`, section `events`.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// `{"step": "events"}`: read a run's events (debug stream mode) until the run is terminal.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EventsRead {
    /// Name of the observation.
    pub name: String,
    /// Run id (templated, usually `{{steps.<seam step>.runId}}`).
    pub run: String,
    /// Role whose token reads the log.
    pub role: String,
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
