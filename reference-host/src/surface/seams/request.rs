//! The request body of `POST /conformance/seams/sample/toolhooks/invoke`
//! (schemas/seams/toolhooks-invoke.request.schema.json).

use std::collections::BTreeMap;
use std::time::Duration;

use reqwest::Url;
use serde_json::Value;

use crate::base::tool_events::Transport;
use crate::domain::error::ApiError;
use crate::domain::json_body::{Fields, parse_object, require_loopback_http};

/// Every member the request may carry (the shape is closed).
const FIELDS: &[&str] = &[
    "principal",
    "toolName",
    "requiredScopes",
    "grantedScopes",
    "args",
    "credentials",
    "transport",
    "receiverUrl",
    "inputSchema",
    "timeoutMs",
    "simulateRateLimitExhausted",
    "simulateToolError",
];

/// Largest accepted `timeoutMs`.
pub const MAX_TIMEOUT_MS: u64 = 30_000;

/// A parsed, shape-checked seam request.
#[derive(Debug, Clone, PartialEq)]
pub struct InvokeRequest {
    /// The principal the call is attributed to.
    pub principal: String,
    /// Tool name.
    pub tool_name: String,
    /// The tool's mount-declared required scopes.
    pub required_scopes: Vec<String>,
    /// The grant the caller states (upstream seam contract); `None` makes the host resolve
    /// the principal's own scopes.
    pub granted_scopes: Option<Vec<String>>,
    /// Arguments (a JSON object), possibly with credential references.
    pub args: Value,
    /// Credential ref ⇒ raw secret.
    pub credentials: BTreeMap<String, String>,
    /// Transport echoed on the call event.
    pub transport: Transport,
    /// Loopback HTTP endpoint that plays the tool, if any.
    pub receiver_url: Option<Url>,
    /// The tool's input JSON Schema, if any.
    pub input_schema: Option<Value>,
    /// Per-call timeout, if given.
    pub timeout: Option<Duration>,
    /// Force the §D rate-limited arm.
    pub simulate_rate_limit_exhausted: bool,
    /// Force the §F ran-and-threw arm.
    pub simulate_tool_error: bool,
}

impl InvokeRequest {
    /// Parses and shape-checks the body; every problem is a 400 naming the field.
    pub fn parse(body: &[u8]) -> Result<Self, ApiError> {
        let mut fields = Fields::closed(parse_object(body)?, FIELDS)?;
        let principal = fields.required_string("principal")?;
        let tool_name = fields.required_string("toolName")?;
        let required_scopes = fields
            .optional_string_array("requiredScopes")?
            .unwrap_or_default();
        let granted_scopes = fields.optional_string_array("grantedScopes")?;
        let args = Value::Object(fields.optional_object("args")?.unwrap_or_default());
        let credentials = fields
            .optional_string_map("credentials")?
            .unwrap_or_default();
        let transport = match fields.optional_string("transport")? {
            None => Transport::default(),
            Some(name) => Transport::parse(&name).ok_or_else(|| {
                ApiError::validation("field `transport` must be one of `mcp`, `http`, `native`")
            })?,
        };
        let receiver_url = fields
            .optional_string("receiverUrl")?
            .map(|raw| loopback_url(&raw))
            .transpose()?;
        let input_schema = fields.optional_object("inputSchema")?.map(Value::Object);
        let timeout = fields
            .optional_int_in("timeoutMs", 1, MAX_TIMEOUT_MS)?
            .map(Duration::from_millis);
        let simulate_rate_limit_exhausted = fields
            .optional_bool("simulateRateLimitExhausted")?
            .unwrap_or(false);
        let simulate_tool_error = fields.optional_bool("simulateToolError")?.unwrap_or(false);
        Ok(Self {
            principal,
            tool_name,
            required_scopes,
            granted_scopes,
            args,
            credentials,
            transport,
            receiver_url,
            input_schema,
            timeout,
            simulate_rate_limit_exhausted,
            simulate_tool_error,
        })
    }
}

/// Accepts only plain-HTTP loopback URLs for `receiverUrl`.
fn loopback_url(raw: &str) -> Result<Url, ApiError> {
    require_loopback_http("receiverUrl", raw)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(value: Value) -> Result<InvokeRequest, ApiError> {
        InvokeRequest::parse(value.to_string().as_bytes())
    }

    #[test]
    fn minimal_request_gets_defaults() {
        let request = parse(json!({"principal": "alice", "toolName": "t"})).expect("valid");
        assert_eq!(request.args, json!({}));
        assert_eq!(request.transport, Transport::Native);
        assert!(request.required_scopes.is_empty());
        assert_eq!(request.timeout, None);
        assert!(!request.simulate_tool_error);
    }

    #[test]
    fn full_request_parses() {
        let request = parse(json!({
            "principal": "alice", "toolName": "t", "requiredScopes": ["tools:write"],
            "args": {"k": {"$credential": "c"}}, "credentials": {"c": "s"},
            "transport": "mcp", "receiverUrl": "http://127.0.0.1:9/x",
            "inputSchema": {"type": "object"}, "timeoutMs": 500,
            "simulateRateLimitExhausted": true, "simulateToolError": false
        }))
        .expect("valid");
        assert_eq!(request.transport, Transport::Mcp);
        assert_eq!(request.timeout, Some(Duration::from_millis(500)));
        assert_eq!(request.credentials["c"], "s");
        assert!(request.simulate_rate_limit_exhausted);
    }

    #[test]
    fn problems_name_the_field() {
        let cases = [
            (json!({"toolName": "t"}), "principal"),
            (
                json!({"principal": "a", "toolName": "t", "extra": 1}),
                "extra",
            ),
            (json!({"principal": "a", "toolName": 3}), "toolName"),
            (
                json!({"principal": "a", "toolName": "t", "args": []}),
                "args",
            ),
            (
                json!({"principal": "a", "toolName": "t", "transport": "grpc"}),
                "transport",
            ),
            (
                json!({"principal": "a", "toolName": "t", "timeoutMs": 0}),
                "timeoutMs",
            ),
            (
                json!({"principal": "a", "toolName": "t", "timeoutMs": 30001}),
                "timeoutMs",
            ),
            (
                json!({"principal": "a", "toolName": "t", "requiredScopes": "x"}),
                "requiredScopes",
            ),
        ];
        for (body, field) in cases {
            let err = parse(body.clone()).unwrap_err();
            assert!(err.message.contains(field), "{body}: {}", err.message);
        }
    }

    #[test]
    fn receiver_must_be_loopback_http() {
        for ok in [
            "http://127.0.0.1:8080/t",
            "http://localhost/t",
            "http://[::1]:1/t",
        ] {
            assert!(loopback_url(ok).is_ok(), "{ok}");
        }
        for bad in [
            "https://127.0.0.1/t",
            "http://127.0.0.1.example.com/t",
            "http://10.0.0.1/t",
            "http://example.com/t",
            "not a url",
        ] {
            assert!(loopback_url(bad).is_err(), "{bad}");
        }
    }
}
