//! Progress bars on long runs (`run` with many scenarios, `--repeat`, `matrix`).
//!
//! A bar is drawn on stderr only when a person is watching: stdout and stderr are both
//! terminals, `CI` is unset (or `false`/`0`), and `-q` was not given ([`should_draw`]). While it
//! is drawn, every line toolcert prints goes through [`Progress::say`], and libtest's result
//! lines are routed through a pipe and printed the same way ([`Progress::route_libtest`]), so
//! the bar is cleared before each line and redrawn under it, never mixed into one.

use std::io::Write as _;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Runs with fewer units (trials, columns) than this end before a bar is worth drawing.
pub const MIN_UNITS: u64 = 8;

/// Whether the `CI` variable says toolcert runs in CI: any non-empty value but `false`/`0`.
pub fn in_ci(ci: Option<&str>) -> bool {
    ci.is_some_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// The one decision whether to draw a bar: both stdout and stderr are terminals (the bar
/// goes to stderr, beside stdout's lines), not in CI, not `-q`, and at least [`MIN_UNITS`]
/// units of work.
pub fn should_draw(
    stdout_tty: bool,
    stderr_tty: bool,
    ci: Option<&str>,
    quiet: bool,
    units: u64,
) -> bool {
    stdout_tty && stderr_tty && !in_ci(ci) && !quiet && units >= MIN_UNITS
}

/// A bar, or nothing when [`should_draw`] says no (then every call is a plain print or a
/// no-op). Clones share the bar.
#[derive(Clone)]
pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    /// A bar over `units` units of `what` (e.g. "trials"), if this process should draw one.
    pub fn new(units: u64, what: &str, quiet: bool) -> Progress {
        use std::io::IsTerminal as _;
        let ci = std::env::var("CI").ok();
        let draw = should_draw(
            std::io::stdout().is_terminal(),
            std::io::stderr().is_terminal(),
            ci.as_deref(),
            quiet,
            units,
        );
        if !draw {
            return Progress { bar: None };
        }
        // Drawn on stderr whatever it is: `should_draw` is the only gate (indicatif's own
        // terminal check would hide a wrong decision instead of letting a test see it).
        let target = ProgressDrawTarget::term_like_with_hz(Box::new(console::Term::stderr()), 10);
        let bar = ProgressBar::with_draw_target(Some(units), target);
        let template = format!("[{{elapsed_precise}}] {{wide_bar}} {{pos}}/{{len}} {what}");
        if let Ok(style) = ProgressStyle::with_template(&template) {
            bar.set_style(style);
        }
        bar.enable_steady_tick(Duration::from_millis(250));
        Progress { bar: Some(bar) }
    }

    /// One unit done.
    pub fn inc(&self) {
        if let Some(bar) = &self.bar {
            bar.inc(1);
        }
    }

    /// Print a line on stdout, above the bar when one is drawn, cleaned like every output
    /// ([`crate::output::clean`]: it may quote what a host sent).
    pub fn say(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.suspend(|| crate::output::say(line)),
            None => crate::output::say(line),
        }
    }

    /// Remove the bar (before the summary).
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }

    /// Send libtest's output through a pipe whose lines are cleaned
    /// ([`crate::output::clean`]) and printed on stdout, above the bar when one is drawn: the
    /// bytes printed are the redacted ones, after every change libtest's own writer makes
    /// (it drops control characters when stdout is not a terminal, which could join a secret
    /// split by one back together after an earlier redaction). Returns the forwarder to
    /// [`Forwarder::finish`] once libtest is done; `None` without a usable pipe, and then the
    /// bar is removed, so it never mixes into libtest's lines (the messages toolcert hands
    /// libtest are cleaned already).
    pub fn route_libtest(&mut self, args: &mut libtest_mimic::Arguments) -> Option<Forwarder> {
        let routed = forwarder(self.bar.clone(), args);
        if routed.is_none() {
            self.finish();
            self.bar = None;
        }
        routed
    }
}

/// Copies libtest's lines from a pipe to stdout, each under the bar's `suspend`.
pub struct Forwarder {
    writer: Option<std::io::PipeWriter>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Forwarder {
    /// Close toolcert's end of the pipe (libtest closed its own when its run returned) and
    /// wait until every line is printed.
    pub fn finish(mut self) {
        drop(self.writer.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(unix)]
fn forwarder(bar: Option<ProgressBar>, args: &mut libtest_mimic::Arguments) -> Option<Forwarder> {
    use std::io::BufRead as _;
    use std::os::fd::AsRawFd as _;
    let (reader, writer) = std::io::pipe().ok()?;
    // libtest-mimic writes to a `logfile` path: the pipe's write end, by its /dev/fd name.
    let path = format!("/dev/fd/{}", writer.as_raw_fd());
    // libtest-mimic panics on a logfile it cannot create: make sure it can, first.
    std::fs::OpenOptions::new().write(true).open(&path).ok()?;
    args.logfile = Some(path);
    let thread = std::thread::spawn(move || {
        let mut reader = std::io::BufReader::new(reader);
        let mut line = Vec::new();
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let clean = crate::output::clean(&String::from_utf8_lossy(&line));
                    let print = || {
                        let mut out = std::io::stdout().lock();
                        let _ = out.write_all(clean.as_bytes());
                        let _ = out.flush();
                    };
                    match &bar {
                        Some(bar) => bar.suspend(print),
                        None => print(),
                    }
                }
            }
        }
    });
    Some(Forwarder {
        writer: Some(writer),
        thread: Some(thread),
    })
}

#[cfg(not(unix))]
fn forwarder(_bar: Option<ProgressBar>, _args: &mut libtest_mimic::Arguments) -> Option<Forwarder> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bar_is_drawn_only_for_a_person_at_a_terminal() {
        // Every input that must switch it off, one at a time.
        assert!(should_draw(true, true, None, false, 100));
        assert!(!should_draw(false, true, None, false, 100), "stdout piped");
        assert!(!should_draw(true, false, None, false, 100), "stderr piped");
        assert!(
            !should_draw(true, true, Some("true"), false, 100),
            "CI=true"
        );
        assert!(!should_draw(true, true, Some("1"), false, 100), "CI=1");
        assert!(!should_draw(true, true, None, true, 100), "-q");
        assert!(
            !should_draw(true, true, None, false, MIN_UNITS - 1),
            "short"
        );
        // CI set to nothing, `false` or `0` is not CI.
        for v in ["", "false", "0"] {
            assert!(
                should_draw(true, true, Some(v), false, MIN_UNITS),
                "CI={v:?}"
            );
        }
    }
}
