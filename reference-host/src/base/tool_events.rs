//! Payloads of the tool-hook events (`agent.tool-called`,
//! `agent.tool-returned`, `authorization.decided`).
//!
//! Both tool events are content-free (RFC 0064 §B): the call carries an
//! argsHash instead of inputs, and the return carries a status and, on
//! failure, an `error` — never the tool's `outcome`.

use serde::Serialize;
use serde_json::Value;

use crate::base::event_codes;
use crate::base::mutant::{Mutant, MutantInfo};

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
///
/// HOOKS-FAIL-7: every code an event carries is either a registered v2 code
/// or vendor-namespaced (`refhost.…`, see [`crate::base::event_codes`]); the one
/// exception is `tool_outcome_unknown`, which TURN-D8 names bare. The wire
/// string of each variant is [`ToolErrorCode::as_str`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolErrorCode {
    /// `validation_error` (registered): the args do not parse or fail the
    /// tool's input schema.
    ValidationError,
    /// `forbidden` (registered): authorization denied the call, or a host
    /// service refused it (HOOKS-AUTH-5, HOOKS-AUTH-7).
    Forbidden,
    /// `rate_limited` (registered): the rate limit refused the call.
    RateLimited,
    /// `refhost.tool_execution_failed`: the tool ran and failed (its
    /// receiver answered non-2xx, or an over-long answer).
    ToolExecutionFailed,
    /// `refhost.tool_timeout`: the tool did not answer in time.
    ToolTimeout,
    /// `refhost.tool_unreachable`: the tool could not be reached.
    ToolUnreachable,
    /// `refhost.unknown_tool`: the model named a tool the run does not
    /// offer (TTC §B name gate).
    UnknownTool,
    /// `refhost.truncated_emission`: the call came in a truncated
    /// completion, so its arguments were cut (TURN-B1): never executed.
    TruncatedEmission,
    /// `refhost.refused_emission`: the call came in a completion the model
    /// refused (TURN-B2): never executed.
    RefusedEmission,
    /// `refhost.approval_rejected`: the call was held for approval and the
    /// approver rejected it (TTC §C): never executed.
    ApprovalRejected,
    /// `refhost.approval_expired`: the call was held for approval and nobody
    /// resolved the interrupt in time: never executed, and the run fails.
    ApprovalExpired,
    /// `replay_source_missing` (registered): a replay fork found no usable
    /// record for the call (TURN-D6, TURN-D10): not executed, the node fails.
    ReplaySourceMissing,
    /// `tool_outcome_unknown` (bare, as TURN-D8 requires): after a restart
    /// the call in doubt may or may not have run, and its `replayPolicy`
    /// forbids running it again.
    ToolOutcomeUnknown,
    /// `refhost.ended_turn`: the call came after a clarification ask in the
    /// same round, which ended the turn (TURN-E2): never executed.
    EndedTurn,
    /// `refhost.clarification_rounds_exceeded`: a clarification ask past
    /// `limits.clarificationRounds`, refused with no new interrupt (TURN-E1).
    ClarificationRoundsExceeded,
    /// `refhost.clarification_expired`: a clarification ask nobody answered
    /// in time; the run fails.
    ClarificationExpired,
    /// `upstream_unavailable` (registered): `ctx.http.safeFetch` could not
    /// get an answer (connection failure or timeout).
    UpstreamUnavailable,
    /// `refhost.mcp_tool_error`: an MCP tool answered a complete result
    /// with `isError: true` (EFF-12).
    McpToolError,
    /// `mcp_error` (registered): the MCP server answered a JSON-RPC error,
    /// a non-200 status or an unparseable body, or could not be reached.
    McpError,
    /// `mcp_mrtr_rounds_exceeded` (registered): an MCP tool asked for input
    /// again after `mcp.mrtr.maxRounds` retries (EFF-12).
    McpMrtrRoundsExceeded,
    /// `refhost.mcp_input_expired`: nobody answered an MCP tool's request
    /// for input in time; the call was not retried.
    McpInputExpired,
    /// Bare `tool_execution_failed`, neither registered nor vendor: only the
    /// `event-codes-unregistered` mutant emits it (HOOKS-FAIL-7).
    BareToolExecutionFailed,
    /// Bare `invalid_args`, neither registered nor vendor: only the
    /// `event-codes-unregistered` mutant emits it (HOOKS-FAIL-7).
    BareInvalidArgs,
}

impl ToolErrorCode {
    /// The wire string of the code.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ValidationError => event_codes::VALIDATION_ERROR,
            Self::Forbidden => event_codes::FORBIDDEN,
            Self::RateLimited => event_codes::RATE_LIMITED,
            Self::ToolExecutionFailed => "refhost.tool_execution_failed",
            Self::ToolTimeout => "refhost.tool_timeout",
            Self::ToolUnreachable => "refhost.tool_unreachable",
            Self::UnknownTool => "refhost.unknown_tool",
            Self::TruncatedEmission => "refhost.truncated_emission",
            Self::RefusedEmission => "refhost.refused_emission",
            Self::ApprovalRejected => "refhost.approval_rejected",
            Self::ApprovalExpired => "refhost.approval_expired",
            Self::ReplaySourceMissing => event_codes::REPLAY_SOURCE_MISSING,
            Self::ToolOutcomeUnknown => event_codes::TOOL_OUTCOME_UNKNOWN,
            Self::EndedTurn => "refhost.ended_turn",
            Self::ClarificationRoundsExceeded => "refhost.clarification_rounds_exceeded",
            Self::ClarificationExpired => "refhost.clarification_expired",
            Self::UpstreamUnavailable => event_codes::UPSTREAM_UNAVAILABLE,
            Self::McpToolError => "refhost.mcp_tool_error",
            Self::McpError => "mcp_error",
            Self::McpMrtrRoundsExceeded => "mcp_mrtr_rounds_exceeded",
            Self::McpInputExpired => "refhost.mcp_input_expired",
            Self::BareToolExecutionFailed => "tool_execution_failed",
            Self::BareInvalidArgs => "invalid_args",
        }
    }

    /// The code of a failure reported by a tool's receiver (`code` as the
    /// invoker classified it). Bug under `event-codes-unregistered`: a
    /// non-2xx answer or an unreachable receiver is reported with the bare,
    /// unregistered `tool_execution_failed` (HOOKS-FAIL-7).
    pub fn from_receiver(code: Self, mutant: Option<Mutant>) -> Self {
        match code {
            Self::ToolExecutionFailed | Self::ToolUnreachable
                if mutant == Some(Mutant::EventCodesUnregistered) =>
            {
                Self::BareToolExecutionFailed
            }
            other => other,
        }
    }

    /// The code of an argument-validation failure: the registered
    /// `validation_error` (HOOKS-FAIL-7). Bug under
    /// `event-codes-unregistered`: the bare `invalid_args`.
    pub fn invalid_args(mutant: Option<Mutant>) -> Self {
        if mutant == Some(Mutant::EventCodesUnregistered) {
            Self::BareInvalidArgs
        } else {
            Self::ValidationError
        }
    }
}

impl Serialize for ToolErrorCode {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// The `error` member of a failed return.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolError {
    /// Machine-readable code.
    pub code: ToolErrorCode,
    /// Human-readable message; never contains secrets or the tool's body.
    pub message: String,
    /// Extra machine-readable facts: the tool loop sets `admission`; a
    /// host-service refusal sets `service` and `reason` (HOOKS-AUTH-5).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<ToolErrorDetails>,
}

/// `error.details` of a failed return. Members that are `None` are left
/// out; a details object with no member is never written.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ToolErrorDetails {
    /// The tool-turn contract outcome of the emission (`invalid`,
    /// `refused`, `executed`, …), so a reader can tell a gate's refusal from
    /// a tool that ran and failed without parsing messages.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admission: Option<&'static str>,
    /// The host service that refused (`tools`, `http`): HOOKS-AUTH-5 says a
    /// `ctx.*` refusal uses a generic code with `details.service` set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service: Option<&'static str>,
    /// Why, in lower-kebab (`private-address`, `unresolved-ref`); only
    /// informative, never a routing key (HOOKS-AUTH-5).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
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
            error.details.get_or_insert_with(Default::default).admission = Some(admission);
        }
        self
    }

    /// Tags the error (if any) as a refusal of host service `service`,
    /// with an informative `reason` (HOOKS-AUTH-5: generic code plus
    /// `details.service`; the reason is lower-kebab). `None` for either
    /// leaves that member out.
    pub fn with_service(mut self, service: Option<&'static str>, reason: Option<String>) -> Self {
        if let Some(error) = self.error.as_mut()
            && (service.is_some() || reason.is_some())
        {
            let details = error.details.get_or_insert_with(Default::default);
            details.service = service;
            details.reason = reason;
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
    /// A content-free outcome: only a fetched `ctx.http.safeFetch` sets
    /// it (`{httpStatus, bytes}`, HOOKS-EVT-5); every other correct return
    /// leaves it out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Value>,
    /// Transport, on returns that have no call event to carry it
    /// (forbidden-at-load, HOOKS-AUTH-7) and on host-service returns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transport: Option<Transport>,
    /// The principal the call is attributed to, on the same returns as
    /// `transport`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
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

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[MutantInfo {
    mutant: Mutant::EventCodesUnregistered,
    name: "event-codes-unregistered",
    breaks: "event error codes are bare unregistered names (tool_execution_failed, invalid_args) (HOOKS-FAIL-7)",
}];

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Every variant, so the code tables below are total.
    const ALL_CODES: [ToolErrorCode; 23] = [
        ToolErrorCode::ValidationError,
        ToolErrorCode::Forbidden,
        ToolErrorCode::RateLimited,
        ToolErrorCode::ToolExecutionFailed,
        ToolErrorCode::ToolTimeout,
        ToolErrorCode::ToolUnreachable,
        ToolErrorCode::UnknownTool,
        ToolErrorCode::TruncatedEmission,
        ToolErrorCode::RefusedEmission,
        ToolErrorCode::ApprovalRejected,
        ToolErrorCode::ApprovalExpired,
        ToolErrorCode::ReplaySourceMissing,
        ToolErrorCode::ToolOutcomeUnknown,
        ToolErrorCode::EndedTurn,
        ToolErrorCode::ClarificationRoundsExceeded,
        ToolErrorCode::ClarificationExpired,
        ToolErrorCode::UpstreamUnavailable,
        ToolErrorCode::McpToolError,
        ToolErrorCode::McpError,
        ToolErrorCode::McpMrtrRoundsExceeded,
        ToolErrorCode::McpInputExpired,
        ToolErrorCode::BareToolExecutionFailed,
        ToolErrorCode::BareInvalidArgs,
    ];

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
            transport: None,
            principal: None,
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
            ToolErrorCode::invalid_args(None),
            "/n: type",
            None,
        )
        .with_admission("invalid");
        assert_eq!(
            serde_json::to_value(failed.error).expect("ser"),
            json!({"code": "validation_error", "message": "/n: type", "details": {"admission": "invalid"}})
        );
        assert_eq!(ToolReturn::ok(3).with_admission("executed").error, None);
    }

    #[test]
    fn service_details_merge_with_admission_and_skip_absent_members() {
        let refused =
            ToolReturn::failed(ToolStatus::Forbidden, ToolErrorCode::Forbidden, "no", None)
                .with_service(Some("tools"), Some("unresolved-ref".into()));
        assert_eq!(
            serde_json::to_value(&refused.error).expect("ser"),
            json!({"code": "forbidden", "message": "no",
                   "details": {"service": "tools", "reason": "unresolved-ref"}})
        );
        let tagged = refused.with_admission("refused");
        assert_eq!(
            serde_json::to_value(&tagged.error).expect("ser")["details"],
            json!({"admission": "refused", "service": "tools", "reason": "unresolved-ref"})
        );
        let bare = ToolReturn::failed(ToolStatus::Forbidden, ToolErrorCode::Forbidden, "no", None)
            .with_service(None, None);
        assert_eq!(bare.error.and_then(|e| e.details), None);
    }

    #[test]
    fn every_clean_code_is_registered_or_vendor_namespaced() {
        // HOOKS-FAIL-7: only the two mutant-only codes fail the rule.
        for code in ALL_CODES {
            let bare = matches!(
                code,
                ToolErrorCode::BareToolExecutionFailed | ToolErrorCode::BareInvalidArgs
            );
            assert_eq!(
                event_codes::is_conformant(code.as_str()),
                !bare,
                "{}",
                code.as_str()
            );
            assert_eq!(
                serde_json::to_value(code).expect("ser"),
                json!(code.as_str())
            );
        }
    }

    #[test]
    fn the_unregistered_mutant_changes_exactly_two_codes() {
        let mutant = Some(Mutant::EventCodesUnregistered);
        assert_eq!(ToolErrorCode::invalid_args(mutant).as_str(), "invalid_args");
        assert_eq!(
            ToolErrorCode::invalid_args(None).as_str(),
            "validation_error"
        );
        for code in ALL_CODES {
            let mutated = ToolErrorCode::from_receiver(code, mutant);
            let expected = match code {
                ToolErrorCode::ToolExecutionFailed | ToolErrorCode::ToolUnreachable => {
                    ToolErrorCode::BareToolExecutionFailed
                }
                other => other,
            };
            assert_eq!(mutated, expected);
            assert_eq!(ToolErrorCode::from_receiver(code, None), code);
        }
    }

    #[test]
    fn statuses_and_transports_use_their_wire_names() {
        assert_eq!(
            serde_json::to_value(ToolStatus::RateLimited).expect("ser"),
            json!("rate_limited")
        );
        assert_eq!(
            serde_json::to_value(ToolErrorCode::ToolExecutionFailed).expect("ser"),
            json!("refhost.tool_execution_failed")
        );
        assert_eq!(
            serde_json::to_value(Transport::Mcp).expect("ser"),
            json!("mcp")
        );
        assert_eq!(Transport::parse("http"), Some(Transport::Http));
        assert_eq!(Transport::parse("grpc"), None);
    }
}
