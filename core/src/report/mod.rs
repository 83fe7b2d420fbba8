//! Reports. The JSON report is the single source; JUnit XML, Markdown and HTML derive from it.
//! The console's conclusion ([`console`]) is read off the same run, so it cannot contradict
//! them or the exit status.

pub mod console;
mod html;
mod json;
mod junit;
mod markdown;

pub use html::{escape as escape_html, render_html};
pub use json::{
    REPORT_MINOR, Report, ReportError, build, counts as counts_for, to_value, write_json,
};
pub use junit::render_junit;
pub use markdown::render_markdown;
