//! `discovery`: the discovery document fetched, then again conditionally (`If-None-Match`).
//!
//! Its specification (the step as a scenario writes it), its observation; its driver is
//! `driver/src/steps/discovery.rs`. Documented in `docs/authoring/steps.md`, section `discovery`.

use serde::{Deserialize, Serialize};

use super::http::HttpObservation;

/// `{"step": "discovery"}`: conditional re-fetch of the discovery document.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DiscoveryProbe {
    /// Name of the observation.
    pub name: String,
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
