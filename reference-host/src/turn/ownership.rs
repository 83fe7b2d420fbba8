//! A run owned by the MCP request that started or continued it (MCP-14,
//! RFC 0198; v2 interop §"MCP tasks and cancellation"), and `cancelRun`'s
//! core, which a dropped request shares.

use serde_json::json;

use crate::base::events::{NewEvent, RUN_CANCELLED};
use crate::store::storage::{RunStatus, StorageError};
use crate::turn::state::LoopState;

/// Cancels `run_id` as `cancelRun` would, with `reason`: its loop is told to
/// stop (and writes `run.cancelled`); a run with no loop here that is not
/// terminal is settled `cancelled` at once. A terminal run is left alone.
/// Returns whether the run was not terminal (so a cancellation was asked).
pub fn cancel_run(state: &LoopState, run_id: &str, reason: &str) -> Result<bool, StorageError> {
    let Some(run) = state.storage().run(run_id)? else {
        return Ok(false);
    };
    if run.status.is_terminal() {
        return Ok(false);
    }
    if !state.run_controls().cancel_with_reason(run_id, reason) {
        state.storage().finish_run(
            run_id,
            RunStatus::Cancelled,
            None,
            NewEvent::new(RUN_CANCELLED, json!({ "reason": reason })),
        )?;
    }
    Ok(true)
}

/// A run that belongs to the MCP request that started or continued it,
/// until the host has sent that request's whole answer (MCP-14, v2 interop
/// §"MCP tasks and cancellation").
///
/// Dropped while armed (the client went away and the server dropped the
/// request, or the answer's body was dropped before it was handed over), it
/// cancels the run as `cancelRun` would, with its reason (normally
/// [`crate::turn::control::MCP_REQUEST_CANCELLED`]). [`RequestOwnedRun::release`] disarms it once
/// the answer is sent: from then on no disconnect touches the run.
///
/// A host that is shutting down drops its requests without cancelling: that
/// is not a client disconnect, and a durable host recovers the run.
#[derive(Debug)]
pub struct RequestOwnedRun {
    state: LoopState,
    run_id: String,
    reason: String,
    armed: bool,
}

impl RequestOwnedRun {
    /// `run_id` now belongs to the request being served; dropping the guard
    /// armed cancels it with `reason`.
    pub fn new(state: &LoopState, run_id: &str, reason: &str) -> Self {
        Self {
            state: state.clone(),
            run_id: run_id.to_owned(),
            reason: reason.to_owned(),
            armed: true,
        }
    }

    /// The owned run.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The request's answer was sent: the run no longer belongs to it.
    pub fn release(mut self) {
        self.armed = false;
    }
}

impl Drop for RequestOwnedRun {
    fn drop(&mut self) {
        if !self.armed || self.state.shutting_down() {
            return;
        }
        // Nobody is left to tell about a failed store write: the run then
        // stays as it is, as any loop's terminal write failing leaves it.
        let _ = cancel_run(&self.state, &self.run_id, &self.reason);
    }
}
