//! `host`: kill (SIGKILL) or restart the scenario's own spawned host.
//!
//! Its specification (the step as a scenario writes it), its observation; its driver is
//! `driver/src/steps/host.rs`. Documented in `docs/authoring/steps.md`, section `host`.

use serde::{Deserialize, Serialize};

/// `{"step": "host"}`: what to do to the scenario's spawned host. A scenario with such a step
/// gets a host process of its own (see `toolcert run --spawn`); against a host toolcert did not
/// start, its rows are `blocked`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HostAction {
    /// Name of the observation (`/steps/<name>`).
    pub name: String,
    /// `kill` (SIGKILL, no goodbye) or `restart` (start it again on the same data directory).
    /// A `wait` step before a kill chooses the point.
    pub action: HostActionKind,
}

/// What a `host` step does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum HostActionKind {
    /// SIGKILL the process.
    Kill,
    /// Start it again on the same data directory and port.
    Restart,
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
