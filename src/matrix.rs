//! The mutation matrix: the clean reference host against every mutant.
//!
//! It proves every check can fail. The clean host must pass every scenario; each mutant must
//! fail at least the scenarios that name it in `kills`; every row that has a scenario must be
//! turned from `pass` by at least one mutant; every mutant must be named by some scenario.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use reference_host::mutants::{ALL, Mutant};

use crate::runner::{RunOptions, RunOutcome, TargetError, run_embedded};
use crate::suite::Suite;
use crate::verdict::Disposition;

/// Whether a disposition under a mutant counts as detecting it. `inapplicable` does not: a
/// mutant that stops advertising a capability is not caught by the rows it hides.
fn detects(d: Disposition) -> bool {
    !matches!(d, Disposition::Pass | Disposition::Inapplicable)
}

/// One column of the matrix: a run against one host variant.
#[derive(Debug, Clone)]
pub struct Column {
    /// `clean` or the mutant's name.
    pub name: String,
    /// What the mutant breaks (empty for clean).
    pub breaks: String,
    /// Scenario id ⇒ disposition.
    pub scenarios: BTreeMap<String, Disposition>,
    /// Row id ⇒ disposition.
    pub rows: BTreeMap<String, Disposition>,
}

impl Column {
    fn from_run(name: &str, breaks: &str, run: &RunOutcome) -> Column {
        Column {
            name: name.to_string(),
            breaks: breaks.to_string(),
            scenarios: run
                .scenarios
                .iter()
                .map(|s| (s.scenario_id.clone(), s.disposition))
                .collect(),
            rows: run
                .rows
                .iter()
                .map(|r| (r.requirement_id.clone(), r.disposition))
                .collect(),
        }
    }
}

/// The whole matrix.
#[derive(Debug, Clone)]
pub struct Matrix {
    /// The clean host's run (kept whole: it is the reference certification).
    pub clean_run: RunOutcome,
    /// The clean column.
    pub clean: Column,
    /// One column per mutant, in `mutants::ALL` order.
    pub mutants: Vec<Column>,
}

/// Run the clean host and every mutant through the whole suite, `columns` mutants at a time.
///
/// A run spends most of its wall time waiting on timeouts the scenarios set (approval expiry,
/// held receivers), not on the CPU, so columns overlap well; each column has its own embedded
/// host and doubles, and the columns keep `mutants::ALL` order whatever finishes first.
pub async fn run_matrix(
    suite: &Suite,
    opts: &RunOptions,
    columns: usize,
) -> Result<Matrix, TargetError> {
    use futures_util::StreamExt as _;
    let run_one = |mutant: Option<Mutant>| run_embedded(suite, mutant, opts, None);
    let clean_run = run_one(None).await?;
    let clean = Column::from_run("clean", "", &clean_run);
    let runs: Vec<Result<RunOutcome, TargetError>> = futures_util::stream::iter(ALL)
        .map(|info| run_one(Some(info.mutant)))
        .buffered(columns.max(1))
        .collect()
        .await;
    let mut mutants = Vec::with_capacity(ALL.len());
    for (info, run) in ALL.iter().zip(runs) {
        mutants.push(Column::from_run(info.name, info.breaks, &run?));
    }
    Ok(Matrix {
        clean_run,
        clean,
        mutants,
    })
}

impl Matrix {
    /// Mutants whose column turned this row away from `pass`.
    pub fn killers_of_row(&self, row: &str) -> Vec<&str> {
        self.mutants
            .iter()
            .filter(|c| c.rows.get(row).is_some_and(|d| detects(*d)))
            .map(|c| c.name.as_str())
            .collect()
    }

    /// Scenarios that did not pass against this mutant.
    pub fn killed_by(&self, column: &Column) -> Vec<String> {
        column
            .scenarios
            .iter()
            .filter(|(_, d)| detects(**d))
            .map(|(s, _)| s.clone())
            .collect()
    }

    /// Every way the matrix falls short; empty when it proves what it must.
    pub fn problems(&self, suite: &Suite) -> Vec<String> {
        let mut out = Vec::new();
        for (scenario, d) in &self.clean.scenarios {
            if *d != Disposition::Pass {
                out.push(format!(
                    "the clean reference host does not pass {scenario} ({d})"
                ));
            }
        }
        for s in &suite.scenarios {
            for m in &s.kills {
                let Some(col) = self.mutants.iter().find(|c| &c.name == m) else {
                    out.push(format!(
                        "{} names mutant {m}, which the matrix did not run",
                        s.id
                    ));
                    continue;
                };
                if !col.scenarios.get(&s.id).copied().is_some_and(detects) {
                    out.push(format!(
                        "mutant {m} survives {}, which claims to kill it",
                        s.id
                    ));
                }
            }
        }
        for row in &suite.registry.rows {
            let covered = suite.scenarios.iter().any(|s| s.rows.contains(&row.id));
            if covered && row.unwitnessable.is_none() && self.killers_of_row(&row.id).is_empty() {
                out.push(format!(
                    "row {} has a scenario but no mutant turns it from pass",
                    row.id
                ));
            }
        }
        for col in &self.mutants {
            if !suite.scenarios.iter().any(|s| s.kills.contains(&col.name)) {
                out.push(format!(
                    "mutant {} is named by no scenario's kills",
                    col.name
                ));
            }
            if self.killed_by(col).is_empty() {
                out.push(format!("mutant {} is killed by no scenario", col.name));
            }
        }
        out
    }

    /// The Markdown matrix (`reports/mutation-matrix.md`). Deterministic: no timings, ports
    /// or seeds, so it can be compared with the committed copy.
    pub fn render_markdown(&self, suite: &Suite) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "# Mutation matrix\n");
        let _ = writeln!(
            out,
            "Generated by `cargo run --release -- matrix`. Each mutant is the reference host with one known bug switched on; a scenario *kills* it when it neither passes nor turns inapplicable. `cargo test` fails when the clean host does not pass every scenario, when a mutant survives a scenario that names it, or when a covered row is killed by no mutant.\n"
        );
        let clean_pass = self
            .clean
            .scenarios
            .values()
            .filter(|d| **d == Disposition::Pass)
            .count();
        let _ = writeln!(
            out,
            "Clean reference host: {clean_pass} of {} scenarios pass.\n",
            self.clean.scenarios.len()
        );
        let _ = writeln!(out, "## Mutants\n");
        let _ = writeln!(out, "| mutant | breaks | named by | killed by |");
        let _ = writeln!(out, "|---|---|---|---|");
        for col in &self.mutants {
            let named: Vec<&str> = suite
                .scenarios
                .iter()
                .filter(|s| s.kills.contains(&col.name))
                .map(|s| s.id.as_str())
                .collect();
            let killed = self.killed_by(col);
            let _ = writeln!(
                out,
                "| `{}` | {} | {} | {} |",
                col.name,
                col.breaks,
                named.join(", "),
                if killed.is_empty() {
                    "**survives**".to_string()
                } else {
                    killed.join(", ")
                }
            );
        }
        let _ = writeln!(out, "\n## Rows\n");
        let _ = writeln!(out, "| row | clean | killed by |");
        let _ = writeln!(out, "|---|---|---|");
        for row in &suite.registry.rows {
            let Some(clean) = self.clean.rows.get(&row.id) else {
                continue;
            };
            let killers = self.killers_of_row(&row.id);
            let _ = writeln!(
                out,
                "| {} | {} | {} |",
                row.id,
                clean,
                if killers.is_empty() {
                    "**none**".to_string()
                } else {
                    killers.join(", ")
                }
            );
        }
        let problems = self.problems(suite);
        let _ = writeln!(out, "\n## Problems\n");
        if problems.is_empty() {
            let _ = writeln!(out, "None.");
        }
        for p in problems {
            let _ = writeln!(out, "- {p}");
        }
        out
    }
}
