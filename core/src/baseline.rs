//! Expectation baselines: rows a user accepts not to pass, so a release gate can rely on the
//! run's exit status (`toolcert run --expect FILE`, `toolcert baseline REPORT`).
//!
//! A baseline lists rows with the disposition expected and why. Against a run:
//!
//! - a row that is exactly as expected is *expected*: it does not fail the gate;
//! - a row that does better (it passes, or has a milder disposition) is an *unexpected pass*:
//!   it fails the gate, because a stale baseline would hide the next regression of that row;
//! - a row that does worse (expected `warn`, got `fail`) is a *regression*: it fails the gate;
//! - an entry whose row no longer exists in the suite (or that no scenario covers any more)
//!   is *stale*: it fails the gate under `--strict`;
//! - an entry whose row exists but was not run (filtered out, or in another `--partition`
//!   shard) is *not judged*: reported, never a failure, since nothing was observed.
//!
//! The file is validated against `schemas/expectations.schema.json` when it is loaded.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::suite::{SchemaSet, Suite};
use crate::verdict::{Certification, Disposition, RowVerdict};

/// The schema every expectations file must satisfy.
pub const EXPECTATIONS_SCHEMA: &str = "schemas/expectations.schema.json";

/// The format version `toolcert baseline` writes and `--expect` reads.
pub const EXPECTATIONS_VERSION: u32 = 1;

/// An expectations file that cannot be used, or a report a baseline cannot be made from.
#[derive(Debug, thiserror::Error)]
pub enum BaselineError {
    /// The file cannot be read.
    #[error("{path}: cannot read it: {source}")]
    Io {
        /// The file.
        path: String,
        /// Cause.
        source: std::io::Error,
    },
    /// The file is not JSON (or has duplicate keys).
    #[error("{path}: not valid JSON: {message}; write it with `toolcert baseline REPORT > {path}`")]
    Json {
        /// The file.
        path: String,
        /// What the parser said.
        message: String,
    },
    /// The file does not satisfy the schema.
    #[error(
        "{path}: at JSON pointer \"{pointer}\": {message} (schema {EXPECTATIONS_SCHEMA}); each entry needs a row id, a disposition other than pass (warn, inapplicable, blocked, flaky, fail, error) and a non-empty reason"
    )]
    Invalid {
        /// The file.
        path: String,
        /// Where in the file.
        pointer: String,
        /// What is wrong there.
        message: String,
    },
    /// Two entries name the same row.
    #[error(
        "{path}: at JSON pointer \"{pointer}\": row {row} is listed twice; keep one entry per row"
    )]
    Duplicate {
        /// The file.
        path: String,
        /// The second entry.
        pointer: String,
        /// The row.
        row: String,
    },
    /// The report a baseline is made from is not a toolcert JSON report.
    #[error(
        "{path}: not a toolcert JSON report: {message}; pass the file written by `toolcert run --report`"
    )]
    Report {
        /// The file.
        path: String,
        /// What is missing.
        message: String,
    },
    /// The embedded schema is unusable (a toolcert bug, never the user's input).
    #[error("the embedded {EXPECTATIONS_SCHEMA} is unusable: {0}")]
    Schema(String),
}

/// One row the user expects not to pass.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Expectation {
    /// The requirement row id.
    pub row: String,
    /// The disposition expected.
    pub disposition: Disposition,
    /// Why the row is accepted not to pass.
    pub reason: String,
}

/// A whole expectations file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Expectations {
    /// Format version ([`EXPECTATIONS_VERSION`]).
    pub expectations_version: u32,
    /// The entries, one per row.
    pub expectations: Vec<Expectation>,
}

/// A row judged against its expectation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Judged {
    /// The row.
    pub row: String,
    /// What the baseline expected.
    pub expected: Disposition,
    /// What the run found.
    pub actual: Disposition,
    /// The baseline's reason.
    pub reason: String,
}

/// A run's rows judged against a baseline.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Judgement {
    /// Rows exactly as expected: they do not fail the gate.
    pub expected: Vec<Judged>,
    /// Rows better than expected (a pass, or a milder disposition): they fail the gate.
    pub unexpected_passes: Vec<Judged>,
    /// Rows worse than expected: they fail the gate.
    pub regressions: Vec<Judged>,
    /// Entries whose row no longer exists or no scenario covers: they fail under `--strict`.
    pub stale: Vec<Expectation>,
    /// Entries whose row exists but did not run here (filters, partitions): never a failure.
    pub not_judged: Vec<Expectation>,
    /// Whether the gate holds: every row passes or is as expected, nothing passes
    /// unexpectedly, nothing regressed, no stale entry under `--strict`, and something was
    /// measured.
    pub gate_passed: bool,
}

impl Judgement {
    /// Whether `row` failed exactly as the baseline expected.
    pub fn is_expected(&self, row: &str) -> bool {
        self.expected.iter().any(|j| j.row == row)
    }
}

fn schema() -> Result<&'static SchemaSet, BaselineError> {
    static SCHEMA: std::sync::OnceLock<Result<SchemaSet, String>> = std::sync::OnceLock::new();
    SCHEMA
        .get_or_init(|| {
            let text = crate::suite::embedded::FILES
                .iter()
                .find(|(path, _)| *path == EXPECTATIONS_SCHEMA)
                .map(|(_, text)| *text)
                .ok_or_else(|| "not embedded by build.rs".to_string())?;
            let value: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
            let mut set = SchemaSet::default();
            set.insert(EXPECTATIONS_SCHEMA, &value)
                .map_err(|e| e.to_string())?;
            Ok(set)
        })
        .as_ref()
        .map_err(|e| BaselineError::Schema(e.clone()))
}

impl Expectations {
    /// Read and validate an expectations file.
    pub fn load(path: &Path) -> Result<Expectations, BaselineError> {
        let shown = path.display().to_string();
        let text = crate::input::read_to_string(path, crate::input::MAX_BASELINE_BYTES).map_err(
            |source| BaselineError::Io {
                path: shown.clone(),
                source,
            },
        )?;
        Expectations::parse(&text, &shown)
    }

    /// Validate expectations text; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Expectations, BaselineError> {
        let value =
            toolcert_base::canonical::parse_strict(text).map_err(|e| BaselineError::Json {
                path: file.to_string(),
                message: e.to_string(),
            })?;
        if let Some(v) = schema()?
            .violations(EXPECTATIONS_SCHEMA, &value)
            .map_err(|e| BaselineError::Schema(e.to_string()))?
            .into_iter()
            .next()
        {
            return Err(BaselineError::Invalid {
                path: file.to_string(),
                pointer: v.pointer,
                message: v.message,
            });
        }
        let parsed: Expectations =
            serde_json::from_value(value).map_err(|e| BaselineError::Invalid {
                path: file.to_string(),
                pointer: String::new(),
                // The schema and the type agree, so this is a toolcert bug; still say what.
                message: format!("{e} (the schema and the Expectations type disagree)"),
            })?;
        let mut seen = BTreeMap::new();
        for (i, e) in parsed.expectations.iter().enumerate() {
            if seen.insert(e.row.as_str(), i).is_some() {
                return Err(BaselineError::Duplicate {
                    path: file.to_string(),
                    pointer: format!("/expectations/{i}/row"),
                    row: e.row.clone(),
                });
            }
        }
        Ok(parsed)
    }

    /// The baseline of a JSON report: every row that did not pass, expected as it was, with
    /// the row's detail as the reason (reports are already scrubbed of tokens and canaries).
    pub fn from_report(report: &Value, file: &str) -> Result<Expectations, BaselineError> {
        let rows = report["rows"]
            .as_array()
            .ok_or_else(|| BaselineError::Report {
                path: file.to_string(),
                message: "no \"rows\" array".into(),
            })?;
        let mut expectations = Vec::new();
        for (i, row) in rows.iter().enumerate() {
            let verdict: RowVerdict =
                serde_json::from_value(row.clone()).map_err(|e| BaselineError::Report {
                    path: file.to_string(),
                    message: format!("/rows/{i}: {e}"),
                })?;
            if verdict.disposition == Disposition::Pass {
                continue;
            }
            let reason = if verdict.detail.trim().is_empty() {
                format!(
                    "{} in scenario {} (no detail recorded)",
                    verdict.disposition, verdict.scenario_id
                )
            } else {
                verdict.detail
            };
            expectations.push(Expectation {
                row: verdict.requirement_id,
                disposition: verdict.disposition,
                reason,
            });
        }
        Ok(Expectations {
            expectations_version: EXPECTATIONS_VERSION,
            expectations,
        })
    }

    /// Judge a run's rows against this baseline, with the run's certification: its
    /// `--strict`, which rows deny, and the rows it defers (a filtered run's or a
    /// `--partition` shard's rows whose other scenarios did not run here, and that no other
    /// leg could make worse): those are left to the whole run or `toolcert merge`, not judged.
    pub fn judge(
        &self,
        suite: &Suite,
        rows: &[RowVerdict],
        certification: &Certification,
    ) -> Judgement {
        let strict = certification.options.strict;
        let deferred = certification.deferred();
        let rows: Vec<&RowVerdict> = rows
            .iter()
            .filter(|r| !deferred.contains(&r.requirement_id))
            .collect();
        let mut out = Judgement::default();
        let by_row: BTreeMap<&str, &Expectation> = self
            .expectations
            .iter()
            .map(|e| (e.row.as_str(), e))
            .collect();
        for e in &self.expectations {
            let exists = suite.registry.row(&e.row).is_some()
                && suite.scenarios.iter().any(|s| s.rows.contains(&e.row));
            if !exists {
                out.stale.push(e.clone());
            } else if !rows.iter().any(|r| r.requirement_id == e.row) {
                out.not_judged.push(e.clone());
            }
        }
        for r in &rows {
            let Some(e) = by_row.get(r.requirement_id.as_str()) else {
                continue;
            };
            let judged = Judged {
                row: r.requirement_id.clone(),
                expected: e.disposition,
                actual: r.disposition,
                reason: e.reason.clone(),
            };
            if r.disposition == e.disposition {
                out.expected.push(judged);
            } else if r.disposition == Disposition::Pass
                || r.disposition.severity() < e.disposition.severity()
            {
                out.unexpected_passes.push(judged);
            } else {
                out.regressions.push(judged);
            }
        }
        let measured = rows.iter().any(|r| r.assertions > 0);
        let unexpected_denial = rows.iter().any(|r| {
            certification
                .standing(&r.requirement_id)
                .is_some_and(|s| s.denies)
                && !out.is_expected(&r.requirement_id)
        });
        out.gate_passed = measured
            && !unexpected_denial
            && out.unexpected_passes.is_empty()
            && out.regressions.is_empty()
            && (!strict || out.stale.is_empty());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_disposition_names_its_pointer() {
        let text = r#"{"expectationsVersion":1,"expectations":[{"row":"EFF-1","disposition":"pass","reason":"x"}]}"#;
        let err = Expectations::parse(text, "b.json").unwrap_err().to_string();
        assert!(err.contains("/expectations/0/disposition"), "{err}");
    }

    #[test]
    fn a_duplicate_row_is_refused() {
        let text = r#"{"expectationsVersion":1,"expectations":[{"row":"EFF-1","disposition":"fail","reason":"x"},{"row":"EFF-1","disposition":"warn","reason":"y"}]}"#;
        let err = Expectations::parse(text, "b.json").unwrap_err().to_string();
        assert!(
            err.contains("/expectations/1/row") && err.contains("twice"),
            "{err}"
        );
    }
}
