//! A run interrupted by a signal: every scenario stops where it is, the ones not started are
//! not run, and the run still concludes, so its report says what was measured before the
//! signal (marked partial) instead of being lost.
//!
//! The state is the process's: a signal interrupts every session running in it. The CLI
//! raises it from its SIGINT/SIGTERM handler (after ending every process toolcert started,
//! [`crate::host::reap::end_everything`]); a session reads it before each scenario and races it
//! against each step ([`wait`]).

use std::sync::OnceLock;

/// Which signal interrupted the run, once one did.
static RAISED: OnceLock<&'static str> = OnceLock::new();

/// Wakes every step waiting in [`wait`].
static WAKE: tokio::sync::Notify = tokio::sync::Notify::const_new();

/// Interrupt the run: `signal` names why (`SIGINT`, `SIGTERM`). Only the first call counts.
pub fn raise(signal: &'static str) {
    let _ = RAISED.set(signal);
    WAKE.notify_waiters();
}

/// The signal that interrupted the run, if one did.
pub fn raised() -> Option<&'static str> {
    RAISED.get().copied()
}

/// What a row not run, or a step not finished, says about the interruption.
pub fn reason(signal: &str) -> String {
    format!("toolcert was interrupted by {signal} before this was measured")
}

/// Resolves once the run is interrupted (at once if it already is).
pub async fn wait() {
    loop {
        let woken = WAKE.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        if RAISED.get().is_some() {
            return;
        }
        woken.await;
    }
}
