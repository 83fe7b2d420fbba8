//! Progress bars on long runs (`run` with many scenarios, `--repeat`, `matrix`).
//!
//! A bar is drawn on stderr only when a person is watching: stdout and stderr are both
//! terminals, `CI` is unset (or `false`/`0`), and `-q` was not given ([`should_draw`]). While it
//! is drawn, every line toolcert prints goes through [`Progress::say`], so the bar is cleared
//! before each line and redrawn under it, never mixed into one.

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
    /// ([`toolcert::output::clean`]: it may quote what a host sent).
    pub fn say(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.suspend(|| toolcert::output::say(line)),
            None => toolcert::output::say(line),
        }
    }

    /// Remove the bar (before the summary).
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
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
