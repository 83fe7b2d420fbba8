//! `catalog`: the host's tool catalog listed as a role, whichever shape the list has (CAT, DESC).
//!
//! Its specification (the step as a scenario writes it), its observation; its driver is
//! `driver/src/steps/catalog.rs`. Documented in `docs/authoring/steps.md`, section `catalog`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `{"step": "catalog"}`: `GET /tools` (with `query`) as `role`, the items read from a bare
/// array or from `{tools: [...]}`; with `probeHiddenFrom`, the first listed tool that role
/// does not list is fetched as that role (CAT-3).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CatalogSpec {
    /// Name of the observation.
    pub name: String,
    /// The role that lists.
    pub role: String,
    /// The query string after `?` (templated), e.g. `view=compact`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// A second role, whose view of a tool it does not list is probed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_hidden_from: Option<String>,
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
