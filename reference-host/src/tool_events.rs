//! Payloads of the tool-hook events (`agent.tool-called`,
//! `agent.tool-returned`, `authorization.decided`).
//!
//! Both tool events are content-free (RFC 0064 §B): the call carries an
//! argsHash instead of inputs, and the return carries a status and, on
//! failure, an `error` — never the tool's `outcome`.

use serde::Serialize;
use serde_json::Value;

/// The reserved agent id for non-agent (seam/system) tool calls (RFC 0064 ruling 3).
pub const SYSTEM_AGENT_ID: &str = "core.system";

/// How the tool is reached (echoed on the call event).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// Model Context Protocol.
    Mcp,
    /// Plain HTTP.
    Http,
    /// In-process.
    #[default]
    Native,
}

impl Transport {
    /// Parses the wire string.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "mcp" => Some(Self::Mcp),
            "http" => Some(Self::Http),
            "native" => Some(Self::Native),
            _ => None,
        }
    }
}

/// The `status` of a tool return.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    /// The tool ran and succeeded.
    Ok,
    /// The tool did not succeed (bad args, execution failure, timeout, …).
    Error,
    /// Authorization denied the call; the tool did not run.
    Forbidden,
    /// The rate limit refused the call; the tool did not run.
    RateLimited,
    /// Outside the closed v2 enum: only the `status-invalid-args` mutant emits it.
    InvalidArgs,
}

impl ToolStatus {
    /// Whether the call succeeded.
    pub fn is_ok(self) -> bool {
        self == Self::Ok
    }
}

/// The `error.code` of a failed tool return.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolErrorCode {
    /// The args failed the tool's input schema.
    InvalidArgs,
    /// Authorization denied the call.
    Forbidden,
    /// The rate limit refused the call.
    RateLimited,
    /// The tool ran and failed.
    ToolExecutionFailed,
    /// The tool did not answer in time.
    ToolTimeout,
    /// The tool could not be reached.
    ToolUnreachable,
}

/// The `error` member of a failed return.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolError {
    /// Machine-readable code.
    pub code: ToolErrorCode,
    /// Human-readable message; never contains secrets or the tool's body.
    pub message: String,
}

/// How a call ended, before it is rendered as a return payload.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolReturn {
    /// Status.
    pub status: ToolStatus,
    /// Measured duration; present only when the tool actually ran.
    pub duration_ms: Option<u64>,
    /// Present exactly when the call did not succeed.
    pub error: Option<ToolError>,
    /// Never set by a correct host (content-free, and exclusive with `error`).
    pub outcome: Option<Value>,
}

impl ToolReturn {
    /// A successful run that took `duration_ms`.
    pub fn ok(duration_ms: u64) -> Self {
        Self {
            status: ToolStatus::Ok,
            duration_ms: Some(duration_ms),
            error: None,
            outcome: None,
        }
    }

    /// A failure with `status` and `error`, and a duration only if the tool ran.
    pub fn failed(
        status: ToolStatus,
        code: ToolErrorCode,
        message: impl Into<String>,
        duration_ms: Option<u64>,
    ) -> Self {
        Self {
            status,
            duration_ms,
            error: Some(ToolError {
                code,
                message: message.into(),
            }),
            outcome: None,
        }
    }
}

/// Payload of `agent.tool-called`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallPayload {
    /// The calling agent (`core.system` for seam calls).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Tool name.
    pub tool_name: String,
    /// Call id (`call_` + uuid).
    pub call_id: String,
    /// RFC 8785 + SHA-256 of the redacted args.
    pub args_hash: String,
    /// The principal the call is attributed to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// Transport.
    pub transport: Transport,
    /// Never set by a correct host (the event is content-free).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inputs: Option<Value>,
}

/// Payload of `agent.tool-returned`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReturnPayload {
    /// The calling agent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Tool name.
    pub tool_name: String,
    /// The call this returns.
    pub call_id: String,
    /// Status.
    pub status: ToolStatus,
    /// Duration, only when the tool ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// Error, only on failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ToolError>,
    /// Never set by a correct host.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Value>,
}

/// Payload of `authorization.decided`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuthorizationDecidedPayload {
    /// The subject.
    pub principal: String,
    /// Always `tool.invoke` here.
    pub action: &'static str,
    /// `tool:<toolName>`.
    pub resource: String,
    /// The decision.
    pub allowed: bool,
    /// `missing-scope` or `unevaluable` on a deny.
    pub reason: &'static str,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn return_payload_omits_absent_members() {
        let payload = ReturnPayload {
            agent_id: Some(SYSTEM_AGENT_ID.into()),
            tool_name: "t".into(),
            call_id: "call_1".into(),
            status: ToolStatus::Forbidden,
            duration_ms: None,
            error: Some(ToolError {
                code: ToolErrorCode::Forbidden,
                message: "no".into(),
            }),
            outcome: None,
        };
        assert_eq!(
            serde_json::to_value(&payload).expect("serialises"),
            json!({
                "agentId": "core.system", "toolName": "t", "callId": "call_1",
                "status": "forbidden", "error": {"code": "forbidden", "message": "no"}
            })
        );
    }

    #[test]
    fn statuses_and_codes_use_snake_case() {
        assert_eq!(
            serde_json::to_value(ToolStatus::RateLimited).expect("ser"),
            json!("rate_limited")
        );
        assert_eq!(
            serde_json::to_value(ToolErrorCode::ToolExecutionFailed).expect("ser"),
            json!("tool_execution_failed")
        );
        assert_eq!(
            serde_json::to_value(Transport::Mcp).expect("ser"),
            json!("mcp")
        );
        assert_eq!(Transport::parse("http"), Some(Transport::Http));
        assert_eq!(Transport::parse("grpc"), None);
    }
}
