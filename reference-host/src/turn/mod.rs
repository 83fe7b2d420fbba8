//! The tool-turn contract (TTC): the host's own tool loop, driven through
//! the turn seam (`POST /conformance/seams/sample/turn/run`).
//!
//! One run is one agent node that talks to a model provider round by round
//! ([`provider`]), classifies every structured emission into one channel
//! ([`channels`]), admits each tool emission through the gates in the order
//! the contract fixes ([`admission`]), feeds one MCP-shaped result back per
//! emission ([`feedback`]), and ends the run with `run.completed` or
//! `run.failed` ([`driver`]). Each round's prompt has a content trust
//! ([`trust`], TTC §C), and a call that needs approval in that round is held
//! until the run's principal resolves its interrupt ([`approval`]). A
//! `toolAllowlist` narrows the tools offered, and its entries that resolve
//! to no tool are refused at loop start ([`allowlist`]). The seam itself
//! ([`crate::surface::seams::turn_run`], [`request`]) only sets a run up; it never calls admission
//! directly. A tool played by an MCP server is admitted the same way and
//! dispatched by the host's own MCP client ([`mcp`]). A run may offer the
//! host's knowledge store tools, whose segments keep the trust they were
//! stored with (TRUST-2, [`memory`]), and may start from inbound content (an
//! A2A message or a voice transcript, TRUST-6) instead of the user's input,
//! which starts it untrusted ([`trust::at_start`]).
//!
//! A `mode: "replay"` fork serves its tool emissions from the source run's
//! record ([`replay`]); after a restart, recorded emissions are served and
//! the one call in doubt is settled by its `replayPolicy` ([`recovery`]).
//!
//! A run an MCP request started or continued belongs to that request until
//! its answer is sent; a client that goes away first cancels it
//! ([`ownership`], MCP-14).

pub mod admission;
pub mod allowlist;
pub mod approval;
pub mod channels;
pub mod clarification;
pub mod control;
pub mod divergence;
pub mod driver;
pub mod feedback;
pub mod mcp;
pub mod memory;
pub mod negotiation;
pub mod ownership;
pub mod plan;
pub mod provider;
pub mod provider_tools;
pub mod records;
pub mod recovery;
pub mod replay;
pub mod request;
pub mod state;
pub mod tool_support;
pub mod trust;

/// The one outcome each tool emission ends in (TTC §C).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Dispatched to the tool (which may still have failed).
    Executed,
    /// A gate (authorization, limits) or the completion refused it.
    Refused,
    /// Held for approval (TTC §C). A held call that is then accepted ends
    /// `executed` and a rejected one `refused`; one whose interrupt expired
    /// stays `held` (and its run fails).
    Held,
    /// An identical earlier call's result was reused; not dispatched.
    SuppressedRepeat,
    /// A clarification ask earlier in the same round ended the turn, so
    /// the call was not executed (TURN-E2).
    EndedTurn,
    /// Unknown tool, unparseable or schema-invalid arguments, or cut
    /// arguments of a truncated completion; not dispatched.
    Invalid,
}

impl Outcome {
    /// The contract's name for the outcome (`error.details.admission`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Executed => "executed",
            Self::Refused => "refused",
            Self::Held => "held",
            Self::SuppressedRepeat => "suppressed-repeat",
            Self::EndedTurn => "ended-turn",
            Self::Invalid => "invalid",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcome_names_are_the_contract_names() {
        let names: Vec<&str> = [
            Outcome::Executed,
            Outcome::Refused,
            Outcome::Held,
            Outcome::SuppressedRepeat,
            Outcome::EndedTurn,
            Outcome::Invalid,
        ]
        .into_iter()
        .map(Outcome::as_str)
        .collect();
        assert_eq!(
            names,
            [
                "executed",
                "refused",
                "held",
                "suppressed-repeat",
                "ended-turn",
                "invalid"
            ]
        );
    }
}
