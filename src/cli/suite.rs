//! `toolcert suite`: the scenarios as the loader sees them, so a spec editor can check what a
//! fragment or a `params` list expands to.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `toolcert suite`.
#[derive(Debug, clap::Args)]
pub struct SuiteArgs {
    /// Load the suite from this checkout instead of the embedded one.
    #[arg(long, value_name = "DIR")]
    pub suite: Option<PathBuf>,
    /// Print the expanded scenarios (fragments and params written out) as one JSON object
    /// keyed by scenario id, instead of the id and file of each.
    #[arg(long)]
    pub expanded: bool,
    /// Only scenarios whose id contains one of these.
    pub filters: Vec<String>,
}

pub(super) fn run(args: SuiteArgs) -> anyhow::Result<ExitCode> {
    let suite = super::common::load_suite(args.suite.as_deref())?;
    let wanted = |id: &str| args.filters.is_empty() || args.filters.iter().any(|f| id.contains(f));
    let mut out = std::io::stdout().lock();
    if args.expanded {
        let map: serde_json::Map<String, serde_json::Value> = suite
            .expanded
            .iter()
            .filter(|(id, _)| wanted(id))
            .map(|(id, v)| (id.clone(), v.clone()))
            .collect();
        serde_json::to_writer_pretty(&mut out, &serde_json::Value::Object(map))?;
        writeln!(out)?;
    } else {
        for s in suite.scenarios.iter().filter(|s| wanted(&s.id)) {
            writeln!(out, "{}  {}", s.id, s.file)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
