//! The JSON report (`--report PATH`), validated against `schemas/report.schema.json` before
//! it is written.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Value, json};

use crate::result::{RunOutcome, ScenarioResult};
use crate::suite::Suite;
use crate::verdict::{Disposition, Evidence, RowVerdict};

/// Schema every JSON report must satisfy.
pub const REPORT_SCHEMA: &str = "schemas/report.schema.json";

/// A report that could not be produced or written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The report does not satisfy its own schema (a toolcert bug).
    #[error("the report does not satisfy {REPORT_SCHEMA} at {pointer}: {message}")]
    Invalid {
        /// Where.
        pointer: String,
        /// What.
        message: String,
    },
    /// Writing failed.
    #[error("cannot write {path}: {source}")]
    Io {
        /// The path.
        path: String,
        /// Cause.
        source: std::io::Error,
    },
}

/// One row of the report: the verdict plus the rule it judges.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReportRow {
    /// The verdict.
    #[serde(flatten)]
    pub verdict: RowVerdict,
    /// The rule in toolcert's words.
    pub rule: String,
    /// Source seed / RFC section.
    pub source: String,
}

/// The whole report.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// Format version of this document.
    pub report_version: u32,
    /// Minor format version: fields added compatibly within `reportVersion` (1: `digest`,
    /// `expectations`, `partition`; 2: `repeat`, the `flaky` disposition, rows' `trials`,
    /// `passes` and `passK`, scenarios' `trial` and `seed`; 3: `certification`, rows'
    /// `needs`, and passes at the `self-report` tier).
    pub report_minor: u32,
    /// toolcert's version.
    pub toolcert_version: String,
    /// The suite version (rows and scenarios).
    pub suite_version: String,
    /// When the report was made (RFC 3339, UTC).
    pub generated_at: String,
    /// The seed.
    pub seed: u64,
    /// Strict mode.
    pub strict: bool,
    /// The host and its captured discovery document.
    pub host: Value,
    /// Counts.
    pub summary: Value,
    /// The certification: the verdict, per profile, every judged row's standing, what ran,
    /// and the exit status. Every output reads this one computation.
    pub certification: crate::verdict::Certification,
    /// One row per judged requirement.
    pub rows: Vec<ReportRow>,
    /// Rows no scenario covers yet.
    pub uncovered: Vec<String>,
    /// Per scenario: checks, transcript (redacted), observations (redacted).
    pub scenarios: Vec<ScenarioResult>,
    /// The run's rows judged against `--expect FILE`, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expectations: Option<crate::baseline::Judgement>,
    /// The `--partition K/N` shard this report covers, when sharded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partition: Option<crate::partition::Partition>,
    /// `--repeat K` with K > 1: K and every trial's seed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeat: Option<crate::repeat::Repeat>,
    /// A run interrupted by a signal: `{signal, reason}` (what was not measured is `error`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<Value>,
}

/// Count dispositions.
pub fn counts(rows: &[RowVerdict]) -> BTreeMap<&'static str, usize> {
    let mut out: BTreeMap<&'static str, usize> =
        Disposition::ALL.iter().map(|d| (d.as_str(), 0)).collect();
    for r in rows {
        *out.entry(r.disposition.as_str()).or_default() += 1;
    }
    out
}

/// Build the report from a run.
pub fn build(suite: &Suite, run: &RunOutcome) -> Report {
    let rows: Vec<ReportRow> = run
        .rows
        .iter()
        .map(|v| {
            let row = suite.registry.row(&v.requirement_id);
            ReportRow {
                verdict: v.clone(),
                rule: row.map(|r| r.rule.clone()).unwrap_or_default(),
                source: row.map(|r| r.source.clone()).unwrap_or_default(),
            }
        })
        .collect();
    let mut summary = json!(counts(&run.rows));
    summary["rowsJudged"] = json!(run.rows.len());
    summary["rowsMeasured"] = json!(run.measured());
    let at = |e: Evidence| {
        run.rows
            .iter()
            .filter(|r| r.disposition == Disposition::Pass && r.evidence == Some(e))
            .count()
    };
    summary["passEvidence"] = json!({"double": at(Evidence::Double), "wire": at(Evidence::Wire)});
    summary["requireEvidence"] = json!(run.require_evidence);
    // Scenarios, not trials: under `--repeat` each scenario has K results.
    let distinct: std::collections::BTreeSet<&str> = run
        .scenarios
        .iter()
        .map(|s| s.scenario_id.as_str())
        .collect();
    summary["scenarios"] = json!(distinct.len());
    summary["uncovered"] = json!(run.uncovered.len());
    summary["certified"] = json!(run.certification.certified());
    summary["elapsedMs"] = json!(run.elapsed_ms);
    let generated_at = time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    Report {
        report_version: 2,
        report_minor: REPORT_MINOR,
        toolcert_version: env!("CARGO_PKG_VERSION").to_string(),
        suite_version: crate::SUITE_VERSION.to_string(),
        generated_at,
        seed: run.seed,
        strict: run.strict,
        host: json!({
            "baseUrl": run.base_url,
            "embedded": run.embedded,
            "mutant": run.mutant,
            "upstreamOnly": run.upstream_only,
            "discovery": run.discovery,
        }),
        summary,
        certification: run.certification.clone(),
        rows,
        uncovered: run.uncovered.clone(),
        scenarios: run.scenarios.clone(),
        expectations: None,
        partition: None,
        repeat: run.repeat.clone(),
        interrupted: None,
    }
}

/// The minor format version this toolcert writes.
pub const REPORT_MINOR: u32 = 3;

/// The report as JSON, validated against its schema and sealed with its `digest`.
pub fn to_value(suite: &Suite, report: &Report) -> Result<Value, ReportError> {
    let mut value = serde_json::to_value(report).map_err(|e| ReportError::Invalid {
        pointer: String::new(),
        message: e.to_string(),
    })?;
    let digest = crate::recheck::digest_of(&value);
    if let Value::Object(map) = &mut value {
        map.insert("digest".into(), json!(digest));
    }
    if let Ok(Some(v)) = suite
        .schemas
        .violations(REPORT_SCHEMA, &value)
        .map(|v| v.into_iter().next())
    {
        return Err(ReportError::Invalid {
            pointer: v.pointer,
            message: v.message,
        });
    }
    Ok(value)
}

/// Validate and write the JSON report.
pub fn write_json(
    suite: &Suite,
    report: &Report,
    path: &std::path::Path,
) -> Result<(), ReportError> {
    let value = to_value(suite, report)?;
    let text = crate::output::json_text(&value);
    crate::output::write_atomic(path, &text, crate::output::Format::Json).map_err(|source| {
        ReportError::Io {
            path: path.display().to_string(),
            source,
        }
    })
}
