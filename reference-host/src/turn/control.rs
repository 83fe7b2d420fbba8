//! Per-run controls of the turn loops running in this process: the cancel
//! signal of `POST /runs/{runId}:cancel`.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use tokio::sync::watch;

/// The cancel signal of every turn loop running in this process.
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

    /// Registers a loop; the receiver yields the cancelling principal.
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

    /// Asks the loop of `run_id` to stop, as `by`; false when no loop of
    /// that run runs in this process.
    pub fn cancel(&self, run_id: &str, by: &str) -> bool {
        match self.runs().get(run_id) {
            Some(sender) => {
                sender.send_replace(Some(by.to_owned()));
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
        assert_eq!(receiver.borrow().as_deref(), Some("alice"));
        controls.remove("run_a");
        assert!(!controls.cancel("run_a", "alice"));
    }
}
