//! The event reads of one run, shared by its scenarios: after a few in a row were cut, a
//! host's logs are taken never to end and no more are read. A leaf below the scenario context
//! ([`super::ctx`]) that holds it and the events step that reads through it.

use std::time::Duration;

/// After this many event reads in a row were cut before their run's log ended, a host's logs
/// are taken never to end: the run's later reads are `blocked` at once, naming the cap,
/// instead of each waiting out its read budget (a host whose runs stay `running` for ever
/// otherwise held the whole suite for 755 s).
pub const LOG_CUTS_AFTER: usize = 3;

/// The event reads of one run: how many in a row were cut, and once [`LOG_CUTS_AFTER`] were,
/// why no more are made. Shared by every scenario of a session.
#[derive(Debug, Default)]
pub struct LogReads {
    streak: std::sync::atomic::AtomicUsize,
    stopped: std::sync::OnceLock<String>,
    /// Wakes the reads under way when reading stops.
    stop: tokio::sync::Notify,
}

impl LogReads {
    /// A read reached the end of its run's log: the streak starts again.
    pub(super) fn ended(&self) {
        self.streak.store(0, std::sync::atomic::Ordering::SeqCst);
    }

    /// A read was cut (`reason`) after up to `budget` of reading.
    pub(super) fn cut(&self, reason: &str, budget: Duration) {
        let streak = self
            .streak
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            + 1;
        if streak >= LOG_CUTS_AFTER && self.stopped.get().is_none() {
            let _ = self.stopped.set(format!(
                "not read: {streak} event reads in a row on this host were cut before their run's log ended (each may take its read budget of {} ms; the last: {reason}), so toolcert takes this host's logs never to end and reads no more of them; toolcert cannot witness the end of the run",
                budget.as_millis()
            ));
            self.stop.notify_waiters();
        }
    }

    /// Why no more reads are made, once that is so.
    pub fn stopped(&self) -> Option<String> {
        self.stopped.get().cloned()
    }

    /// Resolves with [`LogReads::stopped`]'s reason once reading stops.
    pub(super) async fn stopping(&self) -> String {
        loop {
            let woken = self.stop.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            if let Some(why) = self.stopped() {
                return why;
            }
            woken.await;
        }
    }
}
