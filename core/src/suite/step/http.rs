//! `http`: one request to the host, and its answer (or, with `abandon`, the request dropped before
//! the answer). The answer is also what `burst` and `discovery` record.
//!
//! Its specification (the step as a scenario writes it), its observation; its driver is
//! `driver/src/steps/http.rs`. Documented in `docs/authoring/steps.md`, section `http`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// `{"step": "http"}`: one request to the host.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HttpCall {
    /// Name of the observation.
    pub name: String,
    /// HTTP method.
    pub method: String,
    /// API path (templated); v1 hosts get the `/v1` prefix unless `raw` is set.
    pub path: String,
    /// Send the path as written, without the wire-major prefix.
    #[serde(default)]
    pub raw: bool,
    /// Role whose token is sent; none sends no `Authorization`.
    #[serde(default)]
    pub role: Option<String>,
    /// Extra headers (templated values).
    #[serde(default)]
    pub headers: Map<String, Value>,
    /// JSON body (templated).
    #[serde(default)]
    pub body: Option<Value>,
    /// Drop the connection before the answer, as soon as a double has seen this many
    /// requests (MCP-14: a client that goes away while the host still owes the answer). The
    /// step then records an abandon observation instead of the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abandon: Option<AbandonPoint>,
}

/// When an `http` step drops its request: a receiver or a provider script has seen at least
/// `count` requests (so the host is demonstrably working on it).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AbandonPoint {
    /// A receiver's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver: Option<String>,
    /// A provider script's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Requests seen.
    pub count: usize,
}

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
