//! `toolcert baseline REPORT`: print the expectation baseline of a report on stdout.

use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `toolcert baseline`.
#[derive(Debug, clap::Args)]
pub struct BaselineArgs {
    /// A JSON report written by `toolcert run --report`.
    #[arg(value_name = "REPORT")]
    pub report: PathBuf,
}

pub(super) fn run(args: BaselineArgs) -> anyhow::Result<ExitCode> {
    // Sealed reports only: a baseline made from an edited report would accept rows nobody saw.
    let report = toolcert::recheck::load_sealed(&args.report)?;
    let shown = args.report.display().to_string();
    let baseline = toolcert::baseline::Expectations::from_report(&report, &shown)?;
    // The reasons quote the report's details: no raw control character reaches the console.
    let text = serde_json::to_string_pretty(&baseline)?;
    println!(
        "{}",
        toolcert::output::finish(&text, toolcert::output::Format::Json)
    );
    Ok(ExitCode::SUCCESS)
}
