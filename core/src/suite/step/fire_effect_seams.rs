//! `fireEffectSeams`: every row of the host's effect-seam manifest fired, each fired run forked in
//! replay mode, and re-fires counted (RPL-11).
//!
//! Its specification (the step as a scenario writes it), its observation; its driver is
//! `driver/src/steps/fire_effect_seams.rs`. Documented in `docs/authoring/steps.md`, section
//! `fireEffectSeams`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `{"step": "fireEffectSeams"}`: fire each row of the host's effect-seam manifest (one receiver
/// per row), fork each fired run in replay mode, and count re-fires at the receivers and in the
/// fork's effect ledger.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FireEffectSeamsSpec {
    /// Name of the observation.
    pub name: String,
    /// The role that fires, forks and reads.
    pub role: String,
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
