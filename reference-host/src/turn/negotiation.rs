//! MCP version negotiation of the host's MCP client (MCP-5, MCP-6, MCP-7).
//!
//! The host offers the revisions of its `mcp` discovery record
//! ([`crate::turn::mcp::discovery_record`]): `revisions`, `preferredVersion`
//! and the floor `minimumRevision`. A caller may name a revision
//! (`requestVersion`); the outcome is
//!
//! - no revision named, or one offered ⇒ `accepted` at that revision
//!   (`preferredVersion` when none was named);
//! - one below `minimumRevision` ⇒ `refused` (`below-minimum`): the host
//!   fails closed with `400 interop_version_unsupported` and sends the
//!   server nothing, whatever downgrades above the floor would be allowed
//!   (MCP-5);
//! - one above the floor that is not offered ⇒ `downgraded` to
//!   `preferredVersion`. The host's MCP client presents no credential to
//!   the server, so every exchange is unauthenticated and is never
//!   negotiated below `preferredVersion` (MCP-6).
//!
//! Every outcome, refusals included, is written to the host's durable log
//! as a content-free `negotiation.decided {protocol, peer, requested?,
//! negotiated, outcome, reason}` (MCP-7): `peer` is the SHA-256 of the
//! server's origin, never the origin or URL itself.

use serde_json::{Map, Value, json};

use crate::base::args_hash::sha256_hex;
use crate::base::mutant::{Mutant, MutantInfo};
use crate::turn::mcp::PROTOCOL_VERSION;

/// The revisions the client offers (`mcp.revisions`).
pub const REVISIONS: &[&str] = &[PROTOCOL_VERSION];

/// The floor (`mcp.minimumRevision`).
pub const MINIMUM_REVISION: &str = PROTOCOL_VERSION;

/// The event type of a negotiation outcome on the host's log.
pub const NEGOTIATION_DECIDED: &str = "negotiation.decided";

/// How a negotiation ended (`outcome`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Served at the revision asked for (or the preferred one).
    Accepted,
    /// Served at another revision than the one asked for.
    Downgraded,
    /// Not served: below the floor.
    Refused,
}

impl Outcome {
    /// The wire string.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Accepted => "accepted",
            Self::Downgraded => "downgraded",
            Self::Refused => "refused",
        }
    }
}

/// One negotiation's decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// The revision the caller named, if any.
    pub requested: Option<String>,
    /// The revision the exchange uses (`None` when refused).
    pub negotiated: Option<String>,
    /// The outcome.
    pub outcome: Outcome,
    /// Why (`preferred`, `offered`, `below-minimum`, `not-offered`).
    pub reason: &'static str,
    /// Whether the `MCP-Protocol-Version` header is sent (always, except
    /// under `mcp-unauthenticated-downgraded`: then the server assumes its
    /// oldest revision).
    pub header: bool,
}

/// Whether `value` looks like an MCP revision (`YYYY-MM-DD`), so that
/// revisions compare as strings.
pub fn is_revision(value: &str) -> bool {
    let bytes = value.as_bytes();
    bytes.len() == 10
        && bytes.iter().enumerate().all(|(i, b)| {
            if i == 4 || i == 7 {
                *b == b'-'
            } else {
                b.is_ascii_digit()
            }
        })
}

/// Decides the revision for a request naming `requested` (already checked
/// with [`is_revision`]).
pub fn decide(requested: Option<&str>, mutant: Option<Mutant>) -> Decision {
    let Some(requested) = requested else {
        // MCP-6: an unauthenticated exchange is served at preferredVersion.
        // Bug under `mcp-unauthenticated-downgraded`: the header is left
        // out, so the server falls back to its oldest revision.
        let header = mutant != Some(Mutant::McpUnauthenticatedDowngraded);
        return Decision {
            requested: None,
            negotiated: Some(PROTOCOL_VERSION.to_owned()),
            outcome: Outcome::Accepted,
            reason: "preferred",
            header,
        };
    };
    let decision = |negotiated: Option<&str>, outcome, reason| Decision {
        requested: Some(requested.to_owned()),
        negotiated: negotiated.map(str::to_owned),
        outcome,
        reason,
        header: true,
    };
    if REVISIONS.contains(&requested) {
        return decision(Some(requested), Outcome::Accepted, "offered");
    }
    if requested < MINIMUM_REVISION {
        // MCP-5: below the floor fails closed. Bug under
        // `mcp-below-floor-served`: the requested revision is served.
        if mutant == Some(Mutant::McpBelowFloorServed) {
            return decision(Some(requested), Outcome::Downgraded, "below-minimum");
        }
        return decision(None, Outcome::Refused, "below-minimum");
    }
    decision(Some(PROTOCOL_VERSION), Outcome::Downgraded, "not-offered")
}

/// The content-free `negotiation.decided` payload for a decision with the
/// server at `origin` (MCP-7). `None` under `mcp-negotiation-unlogged` for
/// a refusal (the bug: only served exchanges are logged).
pub fn decided_payload(decision: &Decision, origin: &str, mutant: Option<Mutant>) -> Option<Value> {
    if decision.outcome == Outcome::Refused && mutant == Some(Mutant::McpNegotiationUnlogged) {
        return None;
    }
    // Bug under `mcp-negotiation-logs-origin`: `peer` is the origin in clear.
    let peer = if mutant == Some(Mutant::McpNegotiationLogsOrigin) {
        origin.to_owned()
    } else {
        sha256_hex(origin.as_bytes())
    };
    let mut payload = Map::new();
    payload.insert("protocol".to_owned(), json!("mcp"));
    payload.insert("peer".to_owned(), json!(peer));
    if let Some(requested) = &decision.requested {
        payload.insert("requested".to_owned(), json!(requested));
    }
    payload.insert("negotiated".to_owned(), json!(decision.negotiated));
    payload.insert("outcome".to_owned(), json!(decision.outcome.as_str()));
    payload.insert("reason".to_owned(), json!(decision.reason));
    Some(Value::Object(payload))
}

/// The `details` of a refusal (`interop_version_unsupported`, MCP-5).
pub fn refusal_details(requested: &str) -> Map<String, Value> {
    let mut details = Map::new();
    details.insert("protocol".to_owned(), json!("mcp"));
    details.insert("requested".to_owned(), json!(requested));
    details.insert("supported".to_owned(), json!(REVISIONS));
    details
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[
    MutantInfo {
        mutant: Mutant::McpBelowFloorServed,
        name: "mcp-below-floor-served",
        breaks: "an MCP revision below mcp.minimumRevision is served instead of refused 400 interop_version_unsupported (MCP-5, MCP-6)",
    },
    MutantInfo {
        mutant: Mutant::McpUnauthenticatedDowngraded,
        name: "mcp-unauthenticated-downgraded",
        breaks: "an unauthenticated MCP exchange with no revision named is sent without MCP-Protocol-Version, so the server falls back below preferredVersion (MCP-6)",
    },
    MutantInfo {
        mutant: Mutant::McpNegotiationUnlogged,
        name: "mcp-negotiation-unlogged",
        breaks: "a refused MCP negotiation writes no negotiation.decided (MCP-7)",
    },
    MutantInfo {
        mutant: Mutant::McpNegotiationLogsOrigin,
        name: "mcp-negotiation-logs-origin",
        breaks: "negotiation.decided carries the MCP server's origin in clear as peer (MCP-7)",
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_follow_the_floor() {
        assert_eq!(decide(None, None).outcome, Outcome::Accepted);
        assert!(decide(None, None).header);
        let offered = decide(Some(PROTOCOL_VERSION), None);
        assert_eq!(offered.negotiated.as_deref(), Some(PROTOCOL_VERSION));
        let below = decide(Some("2025-06-18"), None);
        assert_eq!(below.outcome, Outcome::Refused);
        assert_eq!(below.negotiated, None);
        let above = decide(Some("2099-01-01"), None);
        assert_eq!(above.outcome, Outcome::Downgraded);
        assert_eq!(above.negotiated.as_deref(), Some(PROTOCOL_VERSION));
    }

    #[test]
    fn the_log_never_holds_the_origin() {
        let origin = "http://127.0.0.1:4000";
        let refused = decide(Some("2025-06-18"), None);
        let payload = decided_payload(&refused, origin, None).expect("refusals are logged");
        assert!(!payload.to_string().contains("127.0.0.1"));
        assert_eq!(payload["requested"], "2025-06-18");
        assert_eq!(payload["negotiated"], Value::Null);
        assert_eq!(payload["outcome"], "refused");
        assert_eq!(payload["peer"].as_str().map(str::len), Some(64));
    }

    #[test]
    fn revisions_are_dates() {
        assert!(is_revision("2026-07-28"));
        assert!(!is_revision("2026-7-28"));
        assert!(!is_revision("latest"));
    }
}
