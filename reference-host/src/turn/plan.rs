//! What one turn run is asked to do ([`TurnPlan`], built by the seam from a
//! checked request, or by recovery from the stored one) and how a run fails
//! ([`RunFailure`] and its `run.failed` codes).
//!
//! Kept apart from the loop ([`crate::turn::driver`]) so that the modules
//! the loop calls (the allowlist, tool support, divergence, recovery) can
//! name a plan and a failure without importing the loop itself.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::base::event_codes;
use crate::base::mutant::{Mutant, MutantInfo};
use crate::domain::catalog::FixtureTool;
use crate::store::storage::StorageError;
use crate::turn::admission::NodeHalt;
use crate::turn::admission::error::AdmissionError;
use crate::turn::channels::{OutputPlan, plan_output};
use crate::turn::clarification::ClarificationTool;
use crate::turn::memory;
use crate::turn::provider::{ProviderError, ProviderSpec, ProviderTool};
use crate::turn::records::ReplaySource;
use crate::turn::request::{Inbound, TurnFaults, TurnLimits, TurnRunRequest};

// `run.failed` codes. HOOKS-FAIL-7: each is registered or namespaced
// `refhost.` (no registered v2 code says any of the vendor ones).

/// `run.failed` code: the provider answered non-2xx, failed, timed out or
/// cut its stream.
pub const PROVIDER_ERROR: &str = "refhost.provider_error";
/// `run.failed` code: the model refused (TURN-B2).
pub const MODEL_REFUSED: &str = "refhost.model_refused";
/// `run.failed` code: the model's output was truncated (TURN-B1).
pub const MODEL_OUTPUT_TRUNCATED: &str = "refhost.model_output_truncated";
/// `run.failed` code: one more model round was needed than allowed.
pub const MODEL_ROUNDS_EXCEEDED: &str = "refhost.model_rounds_exceeded";
/// `run.failed` code: the requested answer is not JSON matching its schema.
pub const OUTPUT_INVALID: &str = "refhost.output_invalid";
/// `run.failed` code: the host shut down mid-run.
pub const HOST_SHUTDOWN: &str = "refhost.host_shutdown";
/// `run.failed` code: the host's own store failed (registered).
pub const INTERNAL_ERROR: &str = event_codes::INTERNAL_ERROR;

/// Everything the loop needs; built by the seam from a checked request.
#[derive(Debug, Clone)]
pub struct TurnPlan {
    /// The run (already created, status `running`).
    pub run_id: String,
    /// The principal every call is attributed to.
    pub principal: String,
    /// The model provider.
    pub provider: ProviderSpec,
    /// The run's tools: the request's fixture tools, then the knowledge
    /// store's two tools when the request named them (TRUST-2).
    pub tools: Vec<Arc<FixtureTool>>,
    /// The first prompt's input (the user's task text, or the inbound
    /// content's text).
    pub input: String,
    /// Inbound content the input came from (TRUST-6): the run starts
    /// untrusted, and a voice transcript is announced by `voice.transcript`.
    pub inbound: Option<Inbound>,
    /// How the requested answer is obtained, if one was requested.
    pub output: Option<OutputPlan>,
    /// Loop limits.
    pub limits: TurnLimits,
    /// Seam-only test knobs.
    pub faults: TurnFaults,
    /// The node attempt to run (1 for a new run; the stored one on
    /// recovery).
    pub attempt: u32,
    /// For a replay fork: where tool results are served from.
    pub replay: Option<ReplaySource>,
    /// Resume from the invocation log (same-attempt recovery, TURN-D7).
    pub resume: bool,
    /// The host's clarification tool, if the request named one (TURN-E1).
    pub clarification: Option<ClarificationTool>,
    /// Provider-executed tools declared to the provider (TTC §F).
    pub provider_tools: Vec<ProviderTool>,
    /// `provider.toolSupport` (TURN-E3).
    pub tool_support: bool,
    /// `toolAllowlist` entries that resolve to no tool: each is refused at
    /// loop start, before the first provider request (HOOKS-AUTH-7).
    pub unresolved_refs: Vec<String>,
}

/// The name the `clarify-name-reserved` mutant reserves (a clean host reserves none, TURN-E5).
const RESERVED_CLARIFY_NAME: &str = "openwop_clarify";

impl TurnPlan {
    /// The plan of a new (attempt 1, not resumed, live) run of `request`.
    pub fn new(run_id: String, request: TurnRunRequest, mutant: Option<Mutant>) -> Self {
        let output = plan_output(request.output.as_ref(), request.provider.wire, mutant);
        let clarification = match request.clarification_tool.as_deref() {
            // Bug under `clarify-name-reserved`: a name is reserved for
            // clarification, so an ordinary run tool of that name is never
            // dispatched (TURN-E5 reserves none).
            None if mutant == Some(Mutant::ClarifyNameReserved)
                && request
                    .tools
                    .iter()
                    .any(|t| t.tool_id == RESERVED_CLARIFY_NAME) =>
            {
                ClarificationTool::new(RESERVED_CLARIFY_NAME)
            }
            named => named.and_then(ClarificationTool::new),
        };
        // TRUST-2: the knowledge store's tools are offered and admitted
        // like the run's own, after them.
        let mut tools = request.tools;
        if let Some(spec) = &request.memory {
            tools.extend(memory::tools(spec));
        }
        Self {
            run_id,
            principal: request.principal,
            provider: request.provider,
            tools,
            input: request.input,
            inbound: request.inbound,
            output,
            limits: request.limits,
            faults: request.faults,
            attempt: 1,
            replay: None,
            resume: false,
            clarification,
            provider_tools: request.provider_tools,
            tool_support: request.tool_support,
            unresolved_refs: request.unresolved_refs,
        }
    }
}

/// Why a run failed (`run.failed {error: {code, message, details?}}`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct RunFailure {
    /// Machine-readable code.
    pub code: &'static str,
    /// What happened; never a copy of provider or model text.
    pub message: String,
    /// Structured facts, when the code needs them (e.g.
    /// `capability_not_provided` names the capability).
    pub details: Option<Value>,
    /// Whether the agent node failed first (`node.failed` before
    /// `run.failed`: a lost record, a replay miss, an outcome unknown).
    pub node_failed: bool,
}

impl RunFailure {
    /// A run failure (not a node failure).
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            details: None,
            node_failed: false,
        }
    }

    /// Attaches `details` to the failure's error.
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// The failure of the agent node that `halt` stopped (`node.failed` first).
    pub(crate) fn node(halt: NodeHalt) -> Self {
        Self {
            code: halt.code,
            message: halt.message,
            details: None,
            node_failed: true,
        }
    }

    /// The `error` member of `node.failed` / `run.failed`.
    pub(crate) fn error(&self) -> Value {
        let mut error = json!({"code": self.code, "message": self.message});
        if let (Some(details), Some(object)) = (&self.details, error.as_object_mut()) {
            object.insert("details".to_owned(), details.clone());
        }
        error
    }
}

impl From<ProviderError> for RunFailure {
    fn from(err: ProviderError) -> Self {
        // Never retried: the run fails on the first provider failure.
        Self::new(PROVIDER_ERROR, err.to_string())
    }
}

impl From<AdmissionError> for RunFailure {
    fn from(_: AdmissionError) -> Self {
        Self::new(
            INTERNAL_ERROR,
            "the host could not record a tool call, so the run stopped",
        )
    }
}

impl From<StorageError> for RunFailure {
    fn from(_: StorageError) -> Self {
        Self::new(
            INTERNAL_ERROR,
            "the host could not read or write its invocation log, so the run stopped",
        )
    }
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[MutantInfo {
    mutant: Mutant::ClarifyNameReserved,
    name: "clarify-name-reserved",
    breaks: "with no clarificationTool named, a run tool called openwop_clarify raises a clarification interrupt (TURN-E5)",
}];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::turn::tool_support;

    #[test]
    fn provider_failures_keep_the_reason_only() {
        let failure = RunFailure::from(ProviderError::Status(502));
        assert_eq!(failure.code, PROVIDER_ERROR);
        assert_eq!(failure.message, "provider answered HTTP 502");
        assert!(event_codes::is_vendor_namespaced(failure.code));
    }

    #[test]
    fn details_ride_on_the_error_only_when_given() {
        assert_eq!(
            RunFailure::new(OUTPUT_INVALID, "m").error(),
            json!({"code": OUTPUT_INVALID, "message": "m"})
        );
        assert_eq!(
            tool_support::unsupported(2).error()["details"],
            json!({"capability": "tools"})
        );
    }
}
