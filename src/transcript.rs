//! A scenario's transcript: every exchange with the host, in order, redacted on the way out.
//!
//! The transcript goes into the JSON report so a failure can be read (and re-checked) without
//! the host. Every token and canary of the run is scrubbed by [`crate::redact::Redactor`]
//! before any transcript leaves the process.

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::redact::REDACTED;

/// One HTTP exchange between toolcert and the host.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Exchange {
    /// The scenario step that made the exchange.
    pub step: String,
    /// HTTP method.
    pub method: String,
    /// Full URL.
    pub url: String,
    /// Request headers toolcert set (the `Authorization` value is always redacted).
    pub request_headers: serde_json::Map<String, Value>,
    /// Request body, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_body: Option<Value>,
    /// Response status, when a response arrived.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Response headers (lowercase names).
    #[serde(skip_serializing_if = "serde_json::Map::is_empty", default)]
    pub response_headers: serde_json::Map<String, Value>,
    /// Response body: parsed JSON, or `{"$nonJson": "<prefix>"}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_body: Option<Value>,
    /// Wall time of the exchange in milliseconds.
    pub elapsed_ms: u64,
    /// Transport failure, when no usable response arrived.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transport_error: Option<String>,
    /// A `curl` command that reproduces the request (token replaced by `$TOKEN`).
    pub curl: String,
}

/// The ordered exchanges of one scenario.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Transcript {
    /// Exchanges in the order they were made.
    pub exchanges: Vec<Exchange>,
}
