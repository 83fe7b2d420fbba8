//! `release`: a holding receiver answers the calls it holds.
//!
//! Its specification (the step as a scenario writes it), its observation; its driver is
//! `driver/src/steps/release.rs`. Documented in `docs/authoring/steps.md`, section `release`.

use serde::{Deserialize, Serialize};

/// `{"step": "release"}`: a holding receiver answers what it holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReleaseSpec {
    /// Name of the observation (`/steps/<name>`).
    pub name: String,
    /// The receiver.
    pub receiver: String,
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
