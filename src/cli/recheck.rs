//! `toolcert recheck REPORT`: re-judge a sealed report's observations with the current suite,
//! without the host, and say which rows differ.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;

/// Arguments of `toolcert recheck`.
#[derive(Debug, clap::Args)]
pub struct RecheckArgs {
    /// A JSON report written by `toolcert run --report` (its digest must match).
    #[arg(value_name = "REPORT")]
    pub report: PathBuf,
    /// Judge with the suite of this checkout instead of the embedded one.
    #[arg(long, value_name = "DIR")]
    pub suite: Option<PathBuf>,
}

pub(super) fn run(args: RecheckArgs) -> anyhow::Result<ExitCode> {
    let report = toolcert::recheck::load_sealed(&args.report)?;
    let suite = super::common::load_suite(args.suite.as_deref()).context("loading the suite")?;
    let shown = args.report.display().to_string();
    let outcome = toolcert::recheck::recheck(&suite, &report, &shown)?;
    print_outcome(&outcome);
    Ok(conclude(&outcome, "toolcert recheck"))
}

/// Print the one-line summary of a recheck after `label` and give its exit code: 0 when no
/// row and not the verdict differs, 1 when one does (`bundle verify` ends the same way).
pub(super) fn conclude(outcome: &toolcert::recheck::Recheck, label: &str) -> ExitCode {
    let differing: Vec<&str> = outcome.differing().map(|r| r.row.as_str()).collect();
    if let Some(c) = &outcome.certification {
        // A partial report stays partial: its verdict is never read as "certified".
        println!(
            "{label}: verdict {}{}",
            c.headline,
            if outcome.verdict_differs() {
                format!(
                    " (DIFFERS: the report says {})",
                    outcome
                        .stored_verdict
                        .map(|v| serde_json::to_value(v).unwrap_or_default().to_string())
                        .unwrap_or_default()
                )
            } else {
                String::new()
            }
        );
    }
    println!(
        "{label}: {} rows, {} differ{}; {} checks changed; {} not rechecked (stored outcome kept)",
        outcome.rows.len(),
        differing.len(),
        if differing.is_empty() {
            String::new()
        } else {
            format!(" ({})", differing.join(", "))
        },
        outcome.checks.len(),
        outcome.not_rechecked.len()
    );
    if differing.is_empty() && !outcome.verdict_differs() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// Print every row (marking those that differ), every changed check and what could not be
/// rechecked; `bundle verify` prints the same lines. Cleaned like every output: a report
/// given to recheck may hold anything.
pub(super) fn print_outcome(outcome: &toolcert::recheck::Recheck) {
    // Under `--repeat` each trial of a scenario is rechecked on its own, and named.
    let at = |id: &str, trial: Option<u32>| match trial {
        Some(t) => format!("{id} (trial {t})"),
        None => id.to_string(),
    };
    let word = |d: Option<toolcert::verdict::Disposition>| d.map_or("absent", |d| d.as_str());
    for r in &outcome.rows {
        if r.stored == r.now {
            toolcert::output::say(&format!("{} {}", r.row, word(r.now)));
        } else {
            toolcert::output::say(&format!(
                "{} {} (DIFFERS: the report says {})",
                r.row,
                word(r.now),
                word(r.stored)
            ));
        }
    }
    for c in &outcome.checks {
        let s = |x: Option<toolcert::verdict::CheckStatus>| {
            x.map_or("absent".to_string(), |x| {
                serde_json::to_value(x)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default()
            })
        };
        toolcert::output::say(&format!(
            "check {} {}: {} in the report, {} now",
            at(&c.scenario_id, c.trial),
            c.check_id,
            s(c.stored),
            s(c.now)
        ));
    }
    for n in &outcome.not_rechecked {
        match &n.check_id {
            Some(check) => toolcert::output::say(&format!(
                "not rechecked: {} {check}: {}",
                at(&n.scenario_id, n.trial),
                n.why
            )),
            None => toolcert::output::say(&format!(
                "not rechecked: {}: {}",
                at(&n.scenario_id, n.trial),
                n.why
            )),
        }
    }
}
