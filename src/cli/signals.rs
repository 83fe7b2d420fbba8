//! SIGINT and SIGTERM during `toolcert run`: end every process toolcert started (spawned
//! hosts, the embedded host's children, their process groups and whatever they forked),
//! remove its scratch directories, and let the run conclude with what it measured, its report
//! marked partial, exiting 128 + the signal's number (130, 143).
//!
//! Before the run's session is open (a `--spawn` host still starting, discovery under way)
//! there is nothing measured to report: the processes are ended and toolcert exits at once.
//! A second signal exits at once too.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

use toolcert::host::reap;
use toolcert::runner::interrupt;

/// Whether the run's session is open (a signal then lets it conclude).
static RUNNING: AtomicBool = AtomicBool::new(false);

/// Handle SIGINT and SIGTERM on `rt` from now on, and adopt orphaned descendants
/// ([`reap::become_subreaper`]).
pub fn install(rt: &tokio::runtime::Runtime) {
    reap::become_subreaper();
    #[cfg(unix)]
    rt.spawn(async {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut int), Ok(mut term)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) else {
            return;
        };
        loop {
            let (name, code) = tokio::select! {
                _ = int.recv() => ("SIGINT", 130u8),
                _ = term.recv() => ("SIGTERM", 143u8),
            };
            if !RUNNING.load(Ordering::SeqCst) || interrupt::raised().is_some() {
                reap::end_everything();
                toolcert::output::warn(&format!(
                    "toolcert: {name}: every process toolcert started is ended; exiting"
                ));
                std::process::exit(i32::from(code));
            }
            // The scenarios stop first (a step under way is abandoned as interrupted, not
            // failed by its host vanishing), then their hosts are ended.
            interrupt::raise(name);
            reap::end_everything();
            toolcert::output::warn(&format!(
                "toolcert: {name}: every process toolcert started is ended; writing the reports of what was measured (marked partial)"
            ));
        }
    });
}

/// The run's session is open: a signal from now on lets the run conclude.
pub fn running() {
    RUNNING.store(true, Ordering::SeqCst);
}

/// Mark a report interrupted (what it holds is partial) when the run was.
pub fn mark_partial(report: &mut toolcert::report::Report) {
    if let Some(signal) = interrupt::raised() {
        report.interrupted = Some(serde_json::json!({
            "signal": signal,
            "reason": format!(
                "toolcert was interrupted by {signal}: only what was measured before it is judged; every other row is error"
            ),
        }));
    }
}

/// End what is left of the run's processes (children a host left to toolcert as subreaper),
/// and the exit status of an interrupted run: 128 + the signal's number.
pub fn finish() -> Option<ExitCode> {
    reap::end_children();
    interrupt::raised().map(|signal| {
        toolcert::output::say(&format!(
            "toolcert: interrupted by {signal}: the reports hold what was measured before it (marked partial)"
        ));
        ExitCode::from(if signal == "SIGTERM" { 143 } else { 130 })
    })
}
