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

/// The agent id of the host's own test agent (the tool loop of the turn
/// seam): its calls come from a model, so they are not `core.system`.
pub const HOST_AGENT_ID: &str = "refhost.agent";

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
    /// The model named a tool the run does not have (TTC §B name gate).
    UnknownTool,
    /// The call came in a truncated completion, so its arguments were cut
    /// (TURN-B1): it is never executed.
    TruncatedEmission,
    /// The call came in a completion the model refused (TURN-B2): it is
    /// never executed.
    RefusedEmission,
    /// The call was held for approval and the approver rejected it (TTC
    /// §C): it is never executed.
    ApprovalRejected,
    /// The call was held for approval and nobody resolved the interrupt in
    /// time: it is never executed and the run fails.
    ApprovalExpired,
    /// A replay fork found no usable record for the call (TURN-D6,
    /// TURN-D10): it is not executed and the node fails.
    ReplaySourceMissing,
    /// After a restart the call in doubt may or may not have run, and its
    /// `replayPolicy` forbids running it again (TURN-D8).
    ToolOutcomeUnknown,
    /// The call came after a clarification ask in the same round: the ask
    /// ended the turn, so it is never executed (TURN-E2).
    EndedTurn,
    /// A clarification ask past `limits.clarificationRounds`: refused with
    /// no new interrupt (TURN-E1).
    ClarificationRoundsExceeded,
    /// A clarification ask nobody answered in time; the run fails.
    ClarificationExpired,
}

/// The `error` member of a failed return.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolError {
    /// Machine-readable code.
    pub code: ToolErrorCode,
    /// Human-readable message; never contains secrets or the tool's body.
    pub message: String,
    /// Extra machine-readable facts; the tool loop sets `admission`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<ToolErrorDetails>,
}

/// `error.details` of a return written by the tool loop.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolErrorDetails {
    /// The tool-turn contract outcome of the emission (`invalid`,
    /// `refused`, `executed`, …), so a reader can tell a gate's refusal from
    /// a tool that ran and failed without parsing messages.
    pub admission: &'static str,
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
                details: None,
            }),
            outcome: None,
        }
    }

    /// Tags the error (if any) with the TTC admission outcome.
    pub fn with_admission(mut self, admission: &'static str) -> Self {
        if let Some(error) = self.error.as_mut() {
            error.details = Some(ToolErrorDetails { admission });
        }
        self
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
                details: None,
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
    fn admission_details_ride_on_the_error_only() {
        let failed = ToolReturn::failed(
            ToolStatus::Error,
            ToolErrorCode::InvalidArgs,
            "/n: type",
            None,
        )
        .with_admission("invalid");
        assert_eq!(
            serde_json::to_value(failed.error).expect("ser"),
            json!({"code": "invalid_args", "message": "/n: type", "details": {"admission": "invalid"}})
        );
        assert_eq!(ToolReturn::ok(3).with_admission("executed").error, None);
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
        assert_eq!(
            serde_json::to_value(ToolErrorCode::TruncatedEmission).expect("ser"),
            json!("truncated_emission")
        );
        assert_eq!(
            serde_json::to_value(ToolErrorCode::UnknownTool).expect("ser"),
            json!("unknown_tool")
        );
        assert_eq!(
            serde_json::to_value(ToolErrorCode::ApprovalRejected).expect("ser"),
            json!("approval_rejected")
        );
        assert_eq!(Transport::parse("http"), Some(Transport::Http));
        assert_eq!(Transport::parse("grpc"), None);
    }
}
