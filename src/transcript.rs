//! A scenario's transcript: every exchange with the host, in order, redacted on the way out.
//!
//! The transcript goes into the JSON report so a failure can be read (and re-checked) without
//! the host. Bearer tokens and the scenario's secrets are scrubbed by [`redact`] before any
//! transcript leaves the process.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The marker that replaces a secret in reports.
pub const REDACTED: &str = "[redacted]";

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

/// Replace every occurrence of each secret (tokens, canaries) in every string of `value`,
/// keys included, with [`REDACTED`]. Empty secrets are ignored.
pub fn redact(value: &Value, secrets: &[String]) -> Value {
    let secrets: Vec<&str> = secrets
        .iter()
        .map(String::as_str)
        .filter(|s| !s.is_empty())
        .collect();
    fn scrub(s: &str, secrets: &[&str]) -> String {
        secrets
            .iter()
            .fold(s.to_string(), |acc, secret| acc.replace(secret, REDACTED))
    }
    fn walk(v: &Value, secrets: &[&str]) -> Value {
        match v {
            Value::String(s) => Value::String(scrub(s, secrets)),
            Value::Array(a) => Value::Array(a.iter().map(|x| walk(x, secrets)).collect()),
            Value::Object(m) => Value::Object(
                m.iter()
                    .map(|(k, x)| (scrub(k, secrets), walk(x, secrets)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
    walk(value, &secrets)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secrets_are_scrubbed_everywhere_including_keys() {
        let v = json!({"a": "Bearer tok-1", "tok-1": ["x canary-9 y", 3]});
        let out = redact(&v, &["tok-1".into(), "canary-9".into(), String::new()]);
        assert_eq!(
            out,
            json!({"a": "Bearer [redacted]", "[redacted]": ["x [redacted] y", 3]})
        );
    }
}
