//! Approval of tool calls (tool-turn contract §C, RFC 0143).
//!
//! After a call has cleared authorization and limits, and before it is
//! dispatched, the host asks whether it needs approval:
//!
//! | `approval` | needs approval |
//! |---|---|
//! | `always` | always |
//! | `conditional` | when the turn is untrusted AND the tool's `safetyTier` is `write` or `exec` |
//! | `never` | never |
//!
//! A call that needs approval is HELD, not refused: read-then-egress goes
//! to a human. The loop opens an interrupt at its node (`agent`), pauses,
//! and continues once the interrupt is resolved by the acting principal it
//! is bound to (accept: the call runs once; reject: it never runs), or
//! fails the run when nobody resolves it in time. Content never resolves
//! an interrupt: tool results and model text saying "approved" are data.

use serde_json::Value;

use crate::base::mutant::{Mutant, MutantInfo};
use crate::base::tool_events::{ToolErrorCode, ToolReturn, ToolStatus};
use crate::domain::Domain;
use crate::domain::catalog::{Approval, FixtureTool, SafetyTier};
use crate::domain::interrupts::{Action, HoldRequest, Resolution, Via, WaitEnd};
use crate::store::storage::StorageError;
use crate::turn::feedback::{self, CallToolResult, ToolResult};
use crate::turn::provider::Round;
use crate::turn::trust::ContentTrust;

/// The node id of the host's tool loop (one agent node per run); approval
/// interrupts are opened at it.
pub const AGENT_NODE_ID: &str = "agent";

/// `run.failed` code: a held call's interrupt was not resolved in time.
/// Vendor-namespaced (HOOKS-FAIL-7).
pub const APPROVAL_EXPIRED: &str = "refhost.approval_expired";

/// What to do with a call that cleared every gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Dispatch it now.
    Dispatch,
    /// Hold it for approval.
    Hold,
    /// Refuse it outright (only the `untrusted-write-refused` mutant).
    Refuse,
}

/// Whether a call of `tool` in a turn of `trust` needs approval (TTC §C).
/// Trust only matters for `conditional`.
pub fn needs_approval(tool: &FixtureTool, trust: ContentTrust) -> bool {
    match tool.approval {
        Approval::Always => true,
        Approval::Never => false,
        Approval::Conditional => {
            trust == ContentTrust::Untrusted
                && matches!(tool.safety_tier, SafetyTier::Write | SafetyTier::Exec)
        }
    }
}

/// What to do with a cleared call of `tool` in a turn of `trust`.
pub fn verdict(tool: &FixtureTool, trust: ContentTrust, mutant: Option<Mutant>) -> Verdict {
    if !needs_approval(tool, trust) {
        return Verdict::Dispatch;
    }
    // Bug under `untrusted-write-refused`: the pre-TTC blanket refusal. TTC
    // §C holds the call for a human instead; refusing outright makes
    // read-then-write impossible even when the user approves.
    if mutant == Some(Mutant::UntrustedWriteRefused)
        && tool.approval == Approval::Conditional
        && trust == ContentTrust::Untrusted
    {
        return Verdict::Refuse;
    }
    Verdict::Hold
}

/// What the loop knows about the round an emission belongs to.
#[derive(Debug, Clone, Copy)]
pub struct RoundContext<'a> {
    /// The trust of the turn that emitted the call.
    pub content_trust: ContentTrust,
    /// The run's finished rounds (their tool results were fed back).
    pub earlier_rounds: &'a [Round],
    /// Results of this round's earlier emissions.
    pub this_round: &'a [ToolResult],
}

impl RoundContext<'static> {
    /// A round of a turn that consumed only the user's input.
    pub fn trusted() -> Self {
        Self {
            content_trust: ContentTrust::USER_INPUT,
            earlier_rounds: &[],
            this_round: &[],
        }
    }
}

impl<'a> RoundContext<'a> {
    /// Every tool result of the run so far (content, never authority).
    pub fn tool_results(&self) -> impl Iterator<Item = &'a CallToolResult> + 'a {
        let this_round = self.this_round;
        self.earlier_rounds
            .iter()
            .flat_map(|round| round.results.iter())
            .chain(this_round)
            .map(|result| &result.result)
    }
}

/// Holds a call: opens its interrupt (`interrupt.requested`, run
/// `waiting-approval`) and waits, bounded by the host's approval timeout,
/// for the bound principal's decision.
pub async fn hold(
    state: &Domain,
    request: HoldRequest<'_>,
    round: &RoundContext<'_>,
) -> Result<WaitEnd, StorageError> {
    let pending = state.interrupts().open(state.storage(), request)?;
    if state.mutant_is(Mutant::ApprovalFromContent) && round.tool_results().any(says_approved) {
        // Bug: tool output is taken as the approver's answer, so whatever
        // a tool (or a page it read) says can approve its own follow-up.
        let ticket = pending.ticket().clone();
        let by_content = Resolution {
            action: Action::Accept,
            answers: None,
            by: ticket.bound_principal.clone(),
            via: Via::Content,
        };
        // Losing a race to a real resolution is fine for a mutant.
        let _ = state
            .interrupts()
            .resolve(state.storage(), &ticket, by_content);
    }
    Ok(pending.wait(state.approval_timeout()).await)
}

/// Whether a tool result's data says `"approved": true`.
fn says_approved(result: &CallToolResult) -> bool {
    result
        .structured
        .as_ref()
        .and_then(|data| data.get("approved"))
        == Some(&Value::Bool(true))
}

/// The return and feedback of a held call its approver rejected: not run,
/// so no `durationMs`.
pub fn rejected(tool: &str, mutant: Option<Mutant>) -> (ToolReturn, CallToolResult) {
    (
        ToolReturn::failed(
            ToolStatus::Error,
            ToolErrorCode::ApprovalRejected,
            "the call was held for approval and the bound principal rejected it; it was not executed (TTC §C)",
            None,
        ),
        CallToolResult::failure(feedback::rejected_text(tool), mutant),
    )
}

/// The return and feedback of a held call whose interrupt expired.
pub fn expired(tool: &str, mutant: Option<Mutant>) -> (ToolReturn, CallToolResult) {
    (
        ToolReturn::failed(
            ToolStatus::Error,
            ToolErrorCode::ApprovalExpired,
            "the call was held for approval and its interrupt was not resolved in time; it was not executed",
            None,
        ),
        CallToolResult::failure(feedback::approval_expired_text(tool), mutant),
    )
}

/// The return and feedback of the `untrusted-write-refused` mutant's
/// outright refusal.
pub fn refused_outright(tool: &str, mutant: Option<Mutant>) -> (ToolReturn, CallToolResult) {
    (
        ToolReturn::failed(
            ToolStatus::Forbidden,
            ToolErrorCode::Forbidden,
            "the turn consumed untrusted content, so this write is refused",
            None,
        ),
        CallToolResult::failure(feedback::forbidden_text(tool), mutant),
    )
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[
    MutantInfo {
        mutant: Mutant::ApprovalFromContent,
        name: "approval-from-content",
        breaks: "a tool result whose JSON has \"approved\": true resolves the open interrupt as accept",
    },
    MutantInfo {
        mutant: Mutant::UntrustedWriteRefused,
        name: "untrusted-write-refused",
        breaks: "an untrusted conditional write is refused outright with forbidden instead of held (the pre-TTC blanket refusal)",
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::args_schema::ArgsSchema;
    use crate::domain::catalog::ReplayPolicy;
    use reqwest::Url;
    use serde_json::json;

    fn tool(approval: Approval, safety_tier: SafetyTier) -> FixtureTool {
        let input_schema = json!({"type": "object"});
        FixtureTool {
            tool_id: "t".into(),
            description: "t".into(),
            input_validator: ArgsSchema::compile(&input_schema).expect("compiles"),
            input_schema,
            output_schema: None,
            replay_policy: ReplayPolicy::Idempotent,
            safety_tier,
            required_scopes: Vec::new(),
            approval,
            endpoint: crate::domain::catalog::ToolEndpoint::Receiver(
                Url::parse("http://127.0.0.1:9/t").expect("url"),
            ),
        }
    }

    #[test]
    fn approval_matrix_follows_ttc_c() {
        use ContentTrust::{Trusted, Untrusted};
        use SafetyTier::{Exec, Pure, Read, Write};
        for tier in [Pure, Read, Write, Exec] {
            for trust in [Trusted, Untrusted] {
                assert!(needs_approval(&tool(Approval::Always, tier), trust));
                assert!(!needs_approval(&tool(Approval::Never, tier), trust));
                let conditional = needs_approval(&tool(Approval::Conditional, tier), trust);
                let expected = trust == Untrusted && matches!(tier, Write | Exec);
                assert_eq!(conditional, expected, "{tier:?} {trust:?}");
            }
        }
    }

    #[test]
    fn needed_approval_holds_unless_mutated() {
        let write = tool(Approval::Conditional, SafetyTier::Write);
        assert_eq!(
            verdict(&write, ContentTrust::Trusted, None),
            Verdict::Dispatch
        );
        assert_eq!(
            verdict(&write, ContentTrust::Untrusted, None),
            Verdict::Hold
        );
        assert_eq!(
            verdict(
                &write,
                ContentTrust::Untrusted,
                Some(Mutant::UntrustedWriteRefused)
            ),
            Verdict::Refuse
        );
        // The mutant is the blanket refusal of untrusted conditional
        // writes; `always` calls are still held.
        let always = tool(Approval::Always, SafetyTier::Write);
        assert_eq!(
            verdict(
                &always,
                ContentTrust::Untrusted,
                Some(Mutant::UntrustedWriteRefused)
            ),
            Verdict::Hold
        );
    }

    #[test]
    fn rejected_calls_have_no_duration_and_are_errors() {
        let (ret, result) = rejected("w", None);
        assert_eq!(ret.status, ToolStatus::Error);
        assert_eq!(ret.duration_ms, None);
        assert_eq!(
            ret.error.map(|e| e.code),
            Some(ToolErrorCode::ApprovalRejected)
        );
        assert!(result.is_error);
    }

    #[test]
    fn only_structured_approved_true_counts_for_the_content_mutant() {
        assert!(says_approved(&CallToolResult::success(
            &json!({"approved": true})
        )));
        assert!(!says_approved(&CallToolResult::success(
            &json!({"approved": "true"})
        )));
        assert!(!says_approved(&CallToolResult::success(&json!("approved"))));
    }
}
