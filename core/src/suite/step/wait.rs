//! `wait`: wait (bounded) until a point in the run is reached, seen at toolcert's doubles (a
//! receiver or a provider script has seen `count` requests); unmet is `blocked`.
//!
//! Its specification (the step as a scenario writes it), its observation; its driver is
//! `driver/src/steps/wait.rs`. Documented in `docs/authoring/steps.md`, section `wait`.

use serde::{Deserialize, Serialize};

/// `{"step": "wait"}`: wait until a point in the run is reached (bounded; unmet ⇒ `blocked`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WaitSpec {
    /// Name of the observation (`/steps/<name>`).
    pub name: String,
    /// The point.
    pub until: KillPoint,
}

/// A point in a run, seen at toolcert's doubles: a receiver or a provider script has seen at
/// least `count` requests.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KillPoint {
    /// A receiver's name.
    #[serde(default)]
    pub receiver: Option<String>,
    /// A provider script's name.
    #[serde(default)]
    pub provider: Option<String>,
    /// Requests seen.
    pub count: usize,
    /// The run whose tool loop makes those requests (a template, e.g.
    /// `{{steps.run.runId}}`): once it is terminal the point will never come, so the wait
    /// ends then instead of waiting out its budget. Leave it out for a double fed after a run
    /// ends (a webhook receiver, a sweeper's redispatch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
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
