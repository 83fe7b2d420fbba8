//! `receiver`: a tool receiver, toolcert's double that plays a tool and counts the calls it gets
//! (`/receivers/<name>`, URL at `{{receivers.<name>.url}}`).
//!
//! Its specification (the step as a scenario writes it), its observation; its driver is
//! `driver/src/steps/receiver.rs`. Documented in `docs/authoring/steps.md`, section `receiver`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `{"step": "receiver"}`: a receiver endpoint and how it answers.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReceiverSpec {
    /// Name (observation at `/receivers/<name>`, URL at `{{receivers.<name>.url}}`).
    pub name: String,
    /// HTTP status the receiver answers with (default 200).
    #[serde(default = "default_status")]
    pub status: u16,
    /// JSON body it answers with (templated; default `{"ok": true}`).
    #[serde(default)]
    pub body: Option<Value>,
    /// Delay before answering, in milliseconds (bounded to 30 000; a "hang" is a long delay).
    #[serde(default)]
    pub delay_ms: u64,
    /// Answer the first `count` calls with `status` instead (a transient provider failure).
    #[serde(default)]
    pub fail_first: Option<FailFirst>,
    /// Hold every call open (its arrival recorded at once) until a `release` step, at most
    /// 30 s: the window in which a recovery scenario kills the host (TURN-D8).
    #[serde(default)]
    pub hold: bool,
    /// Apply `delayMs` to the first call only: a re-execution answers at once, so its
    /// measured duration differs from the recorded one (HOOKS-AUDIT-4).
    #[serde(default)]
    pub delay_first_only: bool,
    /// Add a `pad` string of this many bytes to the body (a number, or a template such as
    /// `{{facts.recordLimitBytes}}`): an answer over a host's record size limit (TURN-D10).
    #[serde(default)]
    pub pad_bytes: Option<Value>,
}

/// `failFirst` of a receiver.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FailFirst {
    /// How many calls fail.
    pub count: u32,
    /// The status they get.
    pub status: u16,
}

fn default_status() -> u16 {
    200
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
