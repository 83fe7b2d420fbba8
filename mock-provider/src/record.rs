//! What the provider recorded about each request, so the harness can assert what a host sent.

use std::collections::BTreeMap;
use std::fmt;

use loopback_http::HeaderMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The wire format (and so the endpoint) a request arrived on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Endpoint {
    /// OpenAI Chat Completions, `POST /v1/chat/completions`.
    #[serde(rename = "openai-chat")]
    OpenAiChat,
    /// Anthropic Messages, `POST /v1/messages`.
    #[serde(rename = "anthropic-messages")]
    AnthropicMessages,
}

impl Endpoint {
    /// The serialized name (`openai-chat` / `anthropic-messages`).
    pub fn as_str(self) -> &'static str {
        match self {
            Endpoint::OpenAiChat => "openai-chat",
            Endpoint::AnthropicMessages => "anthropic-messages",
        }
    }

    /// The request path this endpoint is served on.
    pub fn path(self) -> &'static str {
        match self {
            Endpoint::OpenAiChat => "/v1/chat/completions",
            Endpoint::AnthropicMessages => "/v1/messages",
        }
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One request as the provider saw it, and how it was answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordedRequest {
    /// Arrival position among this model key's requests, from 0.
    pub index: usize,
    /// Which endpoint it arrived on.
    pub endpoint: Endpoint,
    /// Request headers, names lowercase; credential headers are `[redacted]`, repeated headers
    /// are joined with `, `.
    pub headers: BTreeMap<String, String>,
    /// The parsed JSON body, or `{"$nonJson": "<text>"}` when the body is not JSON.
    pub body: Value,
    /// Whether the request asked for a streamed answer (`"stream": true`).
    pub stream: bool,
    /// Which round of the script answered, when one did.
    pub round: Option<usize>,
    /// How it was answered, e.g. `round 0 (toolCalls)` or `error: 404: ...`.
    pub answered: String,
}

/// Headers whose values are credentials: recordings end up in reports, so these never do.
const REDACTED_HEADERS: [&str; 4] = [
    "authorization",
    "proxy-authorization",
    "x-api-key",
    "api-key",
];

/// The placeholder recorded instead of a credential.
pub const REDACTED: &str = "[redacted]";

/// Headers as recorded: lowercase names, credentials redacted, repeats joined.
pub(crate) fn recorded_headers(headers: &HeaderMap) -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    for (name, value) in headers {
        // `HeaderName` is already lowercase; non-UTF-8 bytes are kept visible, lossily.
        let name = name.as_str();
        let value = if REDACTED_HEADERS.contains(&name) {
            REDACTED.to_string()
        } else {
            String::from_utf8_lossy(value.as_bytes()).into_owned()
        };
        out.entry(name.to_string())
            .and_modify(|existing| {
                if existing != REDACTED {
                    existing.push_str(", ");
                    existing.push_str(&value);
                }
            })
            .or_insert(value);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use loopback_http::HeaderValue;

    #[test]
    fn credentials_are_redacted_and_repeats_joined() {
        let mut headers = HeaderMap::new();
        headers.insert(
            "Authorization",
            HeaderValue::from_static("Bearer sk-secret"),
        );
        headers.insert("x-api-key", HeaderValue::from_static("sk-ant-secret"));
        headers.append("x-custom", HeaderValue::from_static("a"));
        headers.append("x-custom", HeaderValue::from_static("b"));
        let recorded = recorded_headers(&headers);
        assert_eq!(recorded["authorization"], REDACTED);
        assert_eq!(recorded["x-api-key"], REDACTED);
        assert_eq!(recorded["x-custom"], "a, b");
    }

    #[test]
    fn serializes_camel_case_with_endpoint_names() {
        let record = RecordedRequest {
            index: 0,
            endpoint: Endpoint::AnthropicMessages,
            headers: BTreeMap::new(),
            body: serde_json::json!({}),
            stream: true,
            round: Some(1),
            answered: "round 1 (text)".into(),
        };
        let value = serde_json::to_value(&record).expect("serializes");
        assert_eq!(value["endpoint"], "anthropic-messages");
        assert_eq!(value["round"], 1);
        assert_eq!(value["answered"], "round 1 (text)");
        let back: RecordedRequest = serde_json::from_value(value).expect("deserializes");
        assert_eq!(back, record);
    }
}
