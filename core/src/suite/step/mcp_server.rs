//! `mcpServer`: an endpoint of toolcert's MCP server double with scripted `tools/call` answers, and
//! what it saw (`/mcpServers/<name>`).
//!
//! Its specification (the step as a scenario writes it), its observation; its driver is
//! `driver/src/steps/mcp_server.rs`. Documented in `docs/authoring/steps.md`, section `mcpServer`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `{"step": "mcpServer"}`: an MCP server double endpoint and its scripted `tools/call`
/// answers, consumed in order.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct McpServerSpec {
    /// Name (observation at `/mcpServers/<name>`, URL at `{{mcpServers.<name>.url}}`).
    pub name: String,
    /// One answer per `tools/call`, in order; a call past the end gets a JSON-RPC error and
    /// is recorded as a problem.
    #[serde(default)]
    pub answers: Vec<McpAnswer>,
    /// The tools `tools/list` serves, verbatim (templated; e.g. a tool whose annotations
    /// lie about what it does, DESC-6).
    #[serde(default)]
    pub tools: Vec<Value>,
}

/// One scripted answer to a `tools/call`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct McpAnswer {
    /// A complete result with one text block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// `structuredContent` of a complete result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// `isError` of a complete result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// `_meta` of a complete result (e.g. a peer claiming scopes it cannot grant, TRUST-5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
    /// An MRTR `input_required` result: `{inputRequests, requestState?}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_required: Option<Value>,
    /// A JSON-RPC error `{code, message}` instead of a result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpc_error: Option<Value>,
}

/// `/mcpServers/NAME`: what an MCP server double endpoint saw.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpServerObservation {
    /// Its URL.
    pub url: Value,
    /// `tools/call` requests.
    pub count: usize,
    /// Each of them.
    pub calls: Vec<McpCall>,
    /// Distinct JSON-RPC ids among them (absent until the scenario ends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distinct_rpc_ids: Option<usize>,
    /// Distinct `Idempotency-Key`s among them (absent until the scenario ends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distinct_idempotency_keys: Option<usize>,
    /// Requests of any method (absent until the scenario ends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<usize>,
    /// The `MCP-Protocol-Version` header of every request of any method, in
    /// arrival order (`null` where none was sent; absent until the scenario ends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_versions: Option<Vec<Value>>,
    /// Each `tools/list` request, in arrival order (absent until the scenario ends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lists: Option<Vec<McpList>>,
    /// What the double found wrong.
    pub problems: Vec<String>,
}

/// One `tools/list` at an MCP server double.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpList {
    /// `params.cursor` (`null` when absent).
    pub cursor: Value,
    /// The `result` the double answered with.
    pub sent: Value,
}

/// One `tools/call` at an MCP server double (absent members are `null`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpCall {
    /// JSON-RPC id.
    pub rpc_id: Value,
    /// Tool name.
    pub name: Value,
    /// Arguments.
    pub arguments: Value,
    /// `inputResponses`.
    pub input_responses: Value,
    /// `requestState`.
    pub request_state: Value,
    /// The `Idempotency-Key` header.
    pub idempotency_key: Value,
    /// The `MCP-Protocol-Version` header.
    pub protocol_version: Value,
    /// The `traceparent` header.
    pub traceparent: Value,
    /// The `tracestate` header.
    pub tracestate: Value,
    /// `params._meta`.
    pub meta: Value,
    /// The trace context that arrived, either way the spec allows (MCP-15):
    /// `{traceparent, tracestate}`, each from `params._meta` or else the header.
    pub trace_context: Value,
    /// The `result` the double answered with (`null` for a JSON-RPC error).
    pub sent: Value,
    /// Milliseconds since the double started.
    pub at_ms: u64,
}
