//! Per-run controls of the loops running in this process: the cancel
//! signal of `POST /runs/{runId}:cancel` (and of a dropped MCP request,
//! [`crate::turn::ownership`]).
//!
//! The signal carries the `run.cancelled.reason` the loop writes: `cancelRun`
//! says who cancelled (`cancelled by <principal>`), a dropped MCP request says
//! `mcp-request-cancelled` (v2 interop §"MCP tasks and cancellation").

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use tokio::sync::watch;

/// `run.cancelled.reason` of a run whose MCP request ended before its whole
/// answer was sent (RFC 0198; v2 interop §"MCP tasks and cancellation").
pub const MCP_REQUEST_CANCELLED: &str = "mcp-request-cancelled";

/// The `run.cancelled.reason` `cancelRun` writes for `principal`.
pub fn cancelled_by(principal: &str) -> String {
    format!("cancelled by {principal}")
}

/// The cancel signal of every loop running in this process.
#[derive(Debug, Default)]
pub struct RunControls {
    runs: Mutex<HashMap<String, watch::Sender<Option<String>>>>,
}

impl RunControls {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    fn runs(&self) -> MutexGuard<'_, HashMap<String, watch::Sender<Option<String>>>> {
        // Each operation is one insert, lookup or removal, so a poisoned
        // map is still consistent.
        self.runs
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Registers a loop; the receiver yields the `run.cancelled.reason` to
    /// write once the run is cancelled.
    pub fn register(&self, run_id: &str) -> watch::Receiver<Option<String>> {
        let sender = watch::Sender::new(None);
        let receiver = sender.subscribe();
        self.runs().insert(run_id.to_owned(), sender);
        receiver
    }

    /// Forgets a loop that ended.
    pub fn remove(&self, run_id: &str) {
        self.runs().remove(run_id);
    }

    /// Asks the loop of `run_id` to stop, as `by` (`cancelRun`); false when
    /// no loop of that run runs in this process.
    pub fn cancel(&self, run_id: &str, by: &str) -> bool {
        self.cancel_with_reason(run_id, &cancelled_by(by))
    }

    /// Asks the loop of `run_id` to stop and write `reason` as its
    /// `run.cancelled.reason`; false when no loop of that run runs here.
    pub fn cancel_with_reason(&self, run_id: &str, reason: &str) -> bool {
        match self.runs().get(run_id) {
            Some(sender) => {
                sender.send_replace(Some(reason.to_owned()));
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cancel_reaches_the_registered_loop_only() {
        let controls = RunControls::new();
        let receiver = controls.register("run_a");
        assert!(!controls.cancel("run_b", "alice"));
        assert!(controls.cancel("run_a", "alice"));
        assert_eq!(receiver.borrow().as_deref(), Some("cancelled by alice"));
        assert!(controls.cancel_with_reason("run_a", MCP_REQUEST_CANCELLED));
        assert_eq!(receiver.borrow().as_deref(), Some(MCP_REQUEST_CANCELLED));
        controls.remove("run_a");
        assert!(!controls.cancel("run_a", "alice"));
    }
}
