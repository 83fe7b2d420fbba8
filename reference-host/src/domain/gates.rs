//! The policy gates every tool call passes, whichever path it takes: the
//! tool-hooks seam ([`crate::surface::seams::toolhooks`]), the upstream
//! seam ([`crate::surface::upstream::toolhooks`]) and turn admission
//! ([`crate::turn::admission`]) call these steps and nothing else for
//! authorization (RFC 0064 §C), the token bucket (§D) and the record of a
//! deny and of a tool event.
//!
//! Each path keeps its own order and its own mutants (which gate runs
//! first, what a refusal answers); the steps themselves exist once.

use std::time::Instant;

use serde_json::Value;

use crate::base::events::{AUTHORIZATION_DECIDED, NewEvent, RunEventDoc};
use crate::base::mutant::Mutant;
use crate::base::tool_events::AuthorizationDecidedPayload;
use crate::domain::Domain;
use crate::domain::authz::{self, Decision, DenyReason};
use crate::domain::rate_limit::Acquire;
use crate::store::storage::StorageError;

/// Whose scopes authorization weighs the required ones against.
#[derive(Debug, Clone, Copy)]
pub enum Grant<'a> {
    /// The scopes the host resolves for the principal.
    Resolved,
    /// The grant the caller states (the upstream seam contract); `None`
    /// means the caller stated none.
    Stated(Option<&'a [String]>),
}

/// Fail-closed authorization of `principal` calling `tool` (RFC 0064 §C).
pub fn authorize(
    state: &Domain,
    principal: &str,
    tool: &str,
    required_scopes: &[String],
    grant: Grant<'_>,
) -> Decision {
    match grant {
        Grant::Resolved => authz::decide(
            state.principals(),
            principal,
            tool,
            required_scopes,
            state.mutant(),
        ),
        Grant::Stated(granted) => {
            authz::decide_stated(principal, tool, required_scopes, granted, state.mutant())
        }
    }
}

/// Takes a token from the per-(principal, tool) bucket (RFC 0064 §D):
/// `Some(retry_after_secs)` when it is empty.
pub fn take_token(state: &Domain, principal: &str, tool: &str) -> Option<u64> {
    let limiter = state.limiter();
    let key = limiter.key(principal, tool);
    match limiter.try_acquire(key, Instant::now()) {
        Acquire::Granted => None,
        Acquire::Exhausted { retry_after_secs } => Some(retry_after_secs),
    }
}

/// The seams' bucket step: a simulated exhaustion (`simulateRateLimitExhausted`)
/// answers one refill interval; otherwise [`take_token`]. Bug under
/// `rate-limit-absent`: no bucket is consulted at all.
pub fn seam_token(state: &Domain, principal: &str, tool: &str, simulate: bool) -> Option<u64> {
    if simulate {
        Some(state.limiter().refill_interval_secs())
    } else if state.mutant_is(Mutant::RateLimitAbsent) {
        None
    } else {
        take_token(state, principal, tool)
    }
}

/// The message of an empty bucket (every path words it the same).
pub fn rate_limited_message(principal: &str, tool: &str, retry_after_secs: u64) -> String {
    format!(
        "rate limit for principal `{principal}` on tool `{tool}` is exhausted; retry after {retry_after_secs} s"
    )
}

/// HOOKS-AUTH: records a deny (`authorization.decided`, before the return).
pub fn record_denial(
    state: &Domain,
    run_id: &str,
    principal: &str,
    tool: &str,
    reason: DenyReason,
) -> Result<RunEventDoc, StorageError> {
    let decided = AuthorizationDecidedPayload {
        principal: principal.to_owned(),
        action: "tool.invoke",
        resource: format!("tool:{tool}"),
        allowed: false,
        reason: reason.as_str(),
    };
    // A struct of strings and a bool always serialises.
    let payload = serde_json::to_value(&decided).unwrap_or(Value::Null);
    record(state, run_id, AUTHORIZATION_DECIDED, payload, None)
}

/// Appends one event of a tool call to the run's log.
pub fn record(
    state: &Domain,
    run_id: &str,
    event_type: &'static str,
    payload: Value,
    causation: Option<String>,
) -> Result<RunEventDoc, StorageError> {
    let event = NewEvent::new(event_type, payload).caused_by(causation);
    state.storage().append_event(run_id, event)
}
