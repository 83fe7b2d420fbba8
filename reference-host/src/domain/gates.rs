//! The one gate pipeline every tool call passes, whichever path it takes:
//! the tool-hooks seam ([`crate::surface::seams::toolhooks`]), the upstream
//! seam ([`crate::surface::upstream::toolhooks`]) and turn admission
//! ([`crate::turn::admission`]).
//!
//! A caller states its pipeline as data, a [`Pipeline`]: which gates run
//! and in what order (a mutant's reordering is just another order), whose
//! grant authorization weighs ([`Grant`]) and how the bucket is consulted
//! ([`Bucket`]). A gate only the caller can check (a turn's completion,
//! tool name, arguments and repeat gates; a seam's `inputSchema`) is a
//! [`Gate::Own`] the pipeline hands back to it. [`Pipeline::run`] evaluates
//! the gates in order and the first that refuses decides the [`Refusal`];
//! every path records a deny with [`record_denial`] (HOOKS-AUTH).

use std::time::Instant;

use serde_json::Value;

use crate::base::events::{AUTHORIZATION_DECIDED, NewEvent, RunEventDoc};
use crate::base::mutant::Mutant;
use crate::base::tool_events::AuthorizationDecidedPayload;
use crate::domain::Domain;
use crate::domain::authz::{self, Decision, DenyReason};
use crate::domain::rate_limit::Acquire;
use crate::store::storage::StorageError;

/// One gate; `C` names the gates only the caller can check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate<C> {
    /// A check of the caller's own, evaluated by the closure given to
    /// [`Pipeline::run`].
    Own(C),
    /// Fail-closed authorization of the principal (RFC 0064 §C).
    Authorize,
    /// The per-(principal, tool) token bucket (RFC 0064 §D).
    RateLimit,
}

/// Whose scopes authorization weighs the required ones against.
#[derive(Debug, Clone, Copy)]
pub enum Grant<'a> {
    /// The scopes the host resolves for the principal.
    Resolved,
    /// The grant the caller states (the upstream seam contract); `None`
    /// means the caller stated none.
    Stated(Option<&'a [String]>),
}

/// How the rate-limit gate consults the bucket.
#[derive(Debug, Clone, Copy)]
pub enum Bucket {
    /// Take a token (turn admission).
    Take,
    /// The seams' bucket: `simulate_exhausted` (`simulateRateLimitExhausted`)
    /// answers one refill interval without a bucket; otherwise a token is
    /// taken. Bug under `rate-limit-absent`: no bucket is consulted at all.
    Seam {
        /// Whether the caller forces exhaustion.
        simulate_exhausted: bool,
    },
}

/// One call's pass through the gates: the gates in order, the call they
/// judge and the options of the policy gates.
#[derive(Debug, Clone, Copy)]
pub struct Pipeline<'a, C> {
    /// The gates, in the order they run.
    pub gates: &'a [Gate<C>],
    /// The principal the call is attributed to.
    pub principal: &'a str,
    /// The tool's name (the bucket key and authorization resource).
    pub tool: &'a str,
    /// The scopes the tool requires.
    pub required_scopes: &'a [String],
    /// Whose scopes [`Gate::Authorize`] weighs.
    pub grant: Grant<'a>,
    /// How [`Gate::RateLimit`] consults the bucket.
    pub bucket: Bucket,
}

/// Why a gate stopped the call.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal<S> {
    /// A [`Gate::Own`] check stopped it, with the caller's own reason.
    Own(S),
    /// Authorization denied (a 403 / `forbidden` return).
    Forbidden {
        /// Why (the `reason` of `authorization.decided`).
        reason: DenyReason,
        /// What is wrong and what would fix it.
        message: String,
    },
    /// The bucket is empty (a 429 / `rate_limited` return).
    RateLimited {
        /// Whole seconds until the next token (≥ 1).
        retry_after_secs: u64,
        /// The message every path words the same.
        message: String,
    },
}

impl<C: Copy> Pipeline<'_, C> {
    /// Evaluates the gates in order; the first refusal wins. `own` checks
    /// the caller's gates. Synchronous and free of I/O but the in-memory
    /// bucket, so a path's order is testable without a network.
    pub fn run<S>(
        &self,
        state: &Domain,
        mut own: impl FnMut(C) -> Result<(), S>,
    ) -> Result<(), Refusal<S>> {
        for gate in self.gates {
            match *gate {
                Gate::Own(check) => own(check).map_err(Refusal::Own)?,
                Gate::Authorize => {
                    if let Decision::Deny { reason, message } = self.authorize(state) {
                        return Err(Refusal::Forbidden { reason, message });
                    }
                }
                Gate::RateLimit => {
                    if let Some(retry_after_secs) = self.take_token(state) {
                        let (principal, tool) = (self.principal, self.tool);
                        let message = format!(
                            "rate limit for principal `{principal}` on tool `{tool}` is exhausted; retry after {retry_after_secs} s"
                        );
                        return Err(Refusal::RateLimited {
                            retry_after_secs,
                            message,
                        });
                    }
                }
            }
        }
        Ok(())
    }

    /// Fail-closed authorization of the call (RFC 0064 §C).
    fn authorize(&self, state: &Domain) -> Decision {
        let (principal, tool, required) = (self.principal, self.tool, self.required_scopes);
        match self.grant {
            Grant::Resolved => authz::decide(
                state.principals(),
                principal,
                tool,
                required,
                state.mutant(),
            ),
            Grant::Stated(granted) => {
                authz::decide_stated(principal, tool, required, granted, state.mutant())
            }
        }
    }

    /// The bucket step (RFC 0064 §D): `Some(retry_after_secs)` when empty.
    fn take_token(&self, state: &Domain) -> Option<u64> {
        match self.bucket {
            Bucket::Seam {
                simulate_exhausted: true,
            } => return Some(state.limiter().refill_interval_secs()),
            Bucket::Seam { .. } if state.mutant_is(Mutant::RateLimitAbsent) => return None,
            Bucket::Seam { .. } | Bucket::Take => {}
        }
        let limiter = state.limiter();
        let key = limiter.key(self.principal, self.tool);
        match limiter.try_acquire(key, Instant::now()) {
            Acquire::Granted => None,
            Acquire::Exhausted { retry_after_secs } => Some(retry_after_secs),
        }
    }
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
