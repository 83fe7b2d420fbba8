//! `toolcert coverage`: what the suite witnesses, per family, so a spec editor sees what a
//! new RFC still lacks.

use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `toolcert coverage`.
#[derive(Debug, clap::Args)]
pub struct CoverageArgs {
    /// Load the suite from this checkout instead of the embedded one.
    #[arg(long, value_name = "DIR")]
    pub suite: Option<PathBuf>,
    /// List the row ids in each column.
    #[arg(long)]
    pub verbose: bool,
}

pub(super) fn run(args: CoverageArgs) -> anyhow::Result<ExitCode> {
    let suite = super::common::load_suite(args.suite.as_deref())?;
    print!("{}", render(&suite, args.verbose));
    Ok(ExitCode::SUCCESS)
}

/// The coverage table.
pub fn render(suite: &toolcert::suite::Suite, verbose: bool) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<12} {:>7} {:>9} {:>13} {:>6}",
        "family", "covered", "uncovered", "unwitnessable", "total"
    );
    let (mut tc, mut tu, mut tw) = (0, 0, 0);
    for family in &suite.registry.families {
        let rows: Vec<_> = suite
            .registry
            .rows
            .iter()
            .filter(|r| r.family == family.id)
            .collect();
        let mut covered = Vec::new();
        let mut uncovered = Vec::new();
        let mut unwitnessable = Vec::new();
        for r in &rows {
            if r.unwitnessable.is_some() {
                unwitnessable.push(r.id.as_str());
            } else if suite.scenarios.iter().any(|s| s.rows.contains(&r.id)) {
                covered.push(r.id.as_str());
            } else {
                uncovered.push(r.id.as_str());
            }
        }
        tc += covered.len();
        tu += uncovered.len();
        tw += unwitnessable.len();
        let _ = writeln!(
            out,
            "{:<12} {:>7} {:>9} {:>13} {:>6}",
            family.id,
            covered.len(),
            uncovered.len(),
            unwitnessable.len(),
            rows.len()
        );
        if verbose {
            for (label, ids) in [
                ("covered", &covered),
                ("uncovered", &uncovered),
                ("unwitnessable", &unwitnessable),
            ] {
                if !ids.is_empty() {
                    let _ = writeln!(out, "  {label}: {}", ids.join(", "));
                }
            }
        }
    }
    let _ = writeln!(
        out,
        "{:<12} {:>7} {:>9} {:>13} {:>6}",
        "total",
        tc,
        tu,
        tw,
        tc + tu + tw
    );
    out
}
