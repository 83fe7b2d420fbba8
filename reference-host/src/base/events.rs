//! The v2 run event envelope (`RunEventDoc`) and the event types this host writes.

use serde::Serialize;
use serde_json::Value;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// `agent.tool-called`: a tool call was made (content-free: no inputs).
pub const TOOL_CALLED: &str = "agent.tool-called";
/// `agent.tool-returned`: a tool call finished (content-free: no outcome).
pub const TOOL_RETURNED: &str = "agent.tool-returned";
/// `tool.session-opened` (v1 `tool.session.opened`): a tool session began
/// (RFC 0078 §D); payload `{sessionId, toolId}`, content-free.
pub const TOOL_SESSION_OPENED: &str = "tool.session-opened";
/// `tool.session-closed` (v1 `tool.session.closed`): a tool session ended;
/// payload `{sessionId, toolId, outcome}`, `outcome` ∈
/// `completed|failed|cancelled`.
pub const TOOL_SESSION_CLOSED: &str = "tool.session-closed";
/// `authorization.decided`: an authorization decision (written on deny).
pub const AUTHORIZATION_DECIDED: &str = "authorization.decided";

/// `prompt.composed`: the loop composed the next model request; carries
/// the turn's `contentTrust` (the TRUST-1 witness, TTC §C).
pub const PROMPT_COMPOSED: &str = "prompt.composed";
/// `voice.transcript`: a run started from a voice transcript (`inbound`
/// channel `voice`); payload `{contentTrust: "untrusted", text}`, written
/// before the first `prompt.composed`. `contentTrust` is a constant: a
/// transcript is never the user's trusted input (TRUST-6).
pub const VOICE_TRANSCRIPT: &str = "voice.transcript";
/// `interrupt.requested`: a tool call is held for approval (TTC §C).
pub const INTERRUPT_REQUESTED: &str = "interrupt.requested";
/// `interrupt.resolved`: a held call was accepted or rejected.
pub const INTERRUPT_RESOLVED: &str = "interrupt.resolved";

/// `run.started`: the tool loop of a turn run began (first event).
pub const RUN_STARTED: &str = "run.started";
/// `run.completed`: the run finished with a result (terminal).
pub const RUN_COMPLETED: &str = "run.completed";
/// `run.failed`: the run finished with an error (terminal).
pub const RUN_FAILED: &str = "run.failed";

/// `run.cancelled`: the run was stopped by `POST /runs/{runId}:cancel`
/// (terminal); payload `{reason}`.
pub const RUN_CANCELLED: &str = "run.cancelled";

/// `node.started`: a node attempt began; payload `{nodeId, attempt}`
/// (TURN-D9: each attempt starts with one), or for a pack node `{nodeId,
/// nodeType}` (its count is the `n` of the node's records, RPL-2).
pub const NODE_STARTED: &str = "node.started";
/// `node.completed`: a pack node finished; payload `{nodeId, outputs:
/// {status, body}}` (the packs-test seam, [`crate::surface::seams::packs`]).
pub const NODE_COMPLETED: &str = "node.completed";
/// `node.retrying`: a node attempt ended on a transient failure and the
/// next attempt follows; payload `{nodeId, attempt, error {code, message}}`.
pub const NODE_RETRYING: &str = "node.retrying";
/// `node.failed`: the node failed; payload `{nodeId, error {code, message}}`.
pub const NODE_FAILED: &str = "node.failed";

/// `replay.diverged`: a replay fork's live model round differs from the
/// source's recorded round and the fork carries on (RPL-7); payload
/// `{originalEventId, replayEventId, divergencePoint}`. Written at most once
/// per fork ([`crate::turn::divergence`]).
pub const REPLAY_DIVERGED: &str = "replay.diverged";
/// `replay.diverged-at-refusal`: exactly one of the source's round and the
/// fork's live round is a refusal (RPL-7); same payload as
/// [`REPLAY_DIVERGED`], and `run.failed` `replay_diverged_at_refusal`
/// follows.
pub const REPLAY_DIVERGED_AT_REFUSAL: &str = "replay.diverged-at-refusal";

/// The schema version of every event this host writes.
pub const SCHEMA_VERSION: u32 = 1;

/// One stored run event, as served by the events poll (v2 `RunEventDoc`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunEventDoc {
    /// Unique event id (`evt_` + uuid).
    pub event_id: String,
    /// The run the event belongs to.
    pub run_id: String,
    /// Event type, e.g. `agent.tool-called`.
    #[serde(rename = "type")]
    pub event_type: String,
    /// Type-specific payload.
    pub payload: Value,
    /// RFC 3339 UTC time the event was appended.
    pub timestamp: String,
    /// 0, 1, 2, … strictly increasing per run.
    pub sequence: i64,
    /// Always [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The node the event concerns, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_id: Option<String>,
    /// The event that caused this one, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub causation_id: Option<String>,
}

/// An event to append; the store assigns id, sequence and timestamp.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    /// Event type.
    pub event_type: &'static str,
    /// Payload.
    pub payload: Value,
    /// Node id, if any.
    pub node_id: Option<String>,
    /// Causing event id, if any.
    pub causation_id: Option<String>,
}

impl NewEvent {
    /// An event with no node and no cause.
    pub fn new(event_type: &'static str, payload: Value) -> Self {
        Self {
            event_type,
            payload,
            node_id: None,
            causation_id: None,
        }
    }

    /// Sets the causing event id.
    pub fn caused_by(mut self, event_id: Option<String>) -> Self {
        self.causation_id = event_id;
        self
    }

    /// Sets the node the event concerns.
    pub fn at_node(mut self, node_id: &str) -> Self {
        self.node_id = Some(node_id.to_owned());
        self
    }
}

/// Whether `streamMode=updates` shows this event type: updates omit the
/// `agent.*` family, which only `streamMode=debug` carries.
pub fn visible_in_updates(event_type: &str) -> bool {
    !event_type.starts_with("agent.")
}

/// The current time as RFC 3339 UTC.
pub fn now_rfc3339() -> String {
    // Formatting only fails for years outside 0..=9999, which the system
    // clock does not produce; the epoch fallback keeps this panic-free.
    OffsetDateTime::now_utc()
        .format(&Rfc3339)
        .unwrap_or_else(|_| "1970-01-01T00:00:00Z".to_owned())
}

/// A fresh event id.
pub fn new_event_id() -> String {
    format!("evt_{}", uuid::Uuid::new_v4().simple())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn envelope_serialises_in_camel_case_and_omits_absent_options() {
        let doc = RunEventDoc {
            event_id: "evt_1".into(),
            run_id: "run_1".into(),
            event_type: TOOL_CALLED.into(),
            payload: json!({"a": 1}),
            timestamp: "2026-01-01T00:00:00Z".into(),
            sequence: 0,
            schema_version: SCHEMA_VERSION,
            node_id: None,
            causation_id: Some("evt_0".into()),
        };
        assert_eq!(
            serde_json::to_value(&doc).expect("serialises"),
            json!({
                "eventId": "evt_1", "runId": "run_1", "type": "agent.tool-called",
                "payload": {"a": 1}, "timestamp": "2026-01-01T00:00:00Z",
                "sequence": 0, "schemaVersion": 1, "causationId": "evt_0"
            })
        );
    }

    #[test]
    fn updates_mode_hides_agent_events_only() {
        assert!(!visible_in_updates(TOOL_CALLED));
        assert!(!visible_in_updates(TOOL_RETURNED));
        assert!(visible_in_updates(AUTHORIZATION_DECIDED));
        // RPL-7: divergence is a run-level fact, shown in updates too.
        assert!(visible_in_updates(REPLAY_DIVERGED));
        assert!(visible_in_updates(REPLAY_DIVERGED_AT_REFUSAL));
    }

    #[test]
    fn timestamps_are_rfc3339_utc() {
        let now = now_rfc3339();
        assert!(now.ends_with('Z'), "{now}");
        assert!(OffsetDateTime::parse(&now, &Rfc3339).is_ok());
    }
}
