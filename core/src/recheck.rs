//! Offline recheck (`toolcert recheck REPORT`): re-judge every check of a stored report from
//! the observations it carries, with the current suite and without the host.
//!
//! Every report is sealed with a digest: SHA-256 over the RFC 8785 canonical form of the
//! report without its `digest` member. A report whose digest does not match was edited after
//! toolcert wrote it, and is refused: rechecking edited observations would certify nothing.
//!
//! What cannot be rechecked says so, and keeps its stored outcome instead of passing:
//!
//! - a scenario the current suite no longer has;
//! - a scenario that was never driven (its observations are `null`: inapplicable, blocked
//!   before its first step, or not run), whose stored outcome came from the run, not from
//!   observations;
//! - a check that reads a value the report redacted (`[redacted]`, `[canary]`) and whose
//!   re-judged status differs from the stored one. Redaction is applied to both sides alike
//!   (the scenario's canary variable is `[canary]` too), so a check comparing an observation
//!   with the canary compares marker with marker and is rechecked against the marker; but two
//!   different secrets both read `[redacted]`, so a changed verdict there may be an artefact
//!   of redaction rather than of the suite's rules, and is reported as not recheckable; when
//!   such a check is a control or required by another, it decided the scenario's other
//!   checks, so the whole scenario keeps its stored outcomes.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::result::ScenarioResult;
use crate::suite::Suite;
use crate::verdict::{
    Certification, CertifyOptions, CheckOutcome, CheckStatus, Disposition, Evidence, FoldOptions,
    Selection, Verdict,
};

/// The prefix of a report's `digest`.
pub const DIGEST_PREFIX: &str = "sha256:";

/// A report that cannot be rechecked.
#[derive(Debug, thiserror::Error)]
pub enum RecheckError {
    /// The file cannot be read.
    #[error("{path}: cannot read it: {source}")]
    Io {
        /// The file.
        path: String,
        /// Cause.
        source: std::io::Error,
    },
    /// The file is not JSON.
    #[error("{path}: not valid JSON: {message}")]
    Json {
        /// The file.
        path: String,
        /// What the parser said.
        message: String,
    },
    /// The report has no digest (written by an older toolcert, or stripped).
    #[error(
        "{path}: the report has no \"digest\", so edits to it cannot be detected; rerun `toolcert run --report` with this toolcert to get a sealed report"
    )]
    NoDigest {
        /// The file.
        path: String,
    },
    /// The digest does not match the content: the report was edited.
    #[error(
        "{path}: digest mismatch: the report says {stored} but its content hashes to {computed}; it was edited after toolcert wrote it (observations, checks or rows changed), so it is refused; rerun the host to get a report to recheck"
    )]
    Tampered {
        /// The file.
        path: String,
        /// The digest the report carries.
        stored: String,
        /// The digest of its content.
        computed: String,
    },
    /// A member toolcert needs is missing or malformed.
    #[error("{path}: not a toolcert JSON report: at {pointer}: {message}")]
    NotAReport {
        /// The file.
        path: String,
        /// Where.
        pointer: String,
        /// What.
        message: String,
    },
}

/// The digest of a report: `sha256:` and the hex SHA-256 of its RFC 8785 form without its
/// `digest` member.
pub fn digest_of(report: &Value) -> String {
    // A report being sealed has no digest yet: hash it as it is, without a copy (a
    // `--repeat 8` report is some 28 MB).
    let hex = match report.get("digest") {
        None => toolcert_base::canonical::jcs_sha256_hex(report),
        Some(_) => {
            let mut body = report.clone();
            if let Value::Object(map) = &mut body {
                map.remove("digest");
            }
            toolcert_base::canonical::jcs_sha256_hex(&body)
        }
    };
    format!("{DIGEST_PREFIX}{hex}")
}

/// Check a report's digest; `file` names it in errors.
pub fn verify(report: &Value, file: &str) -> Result<(), RecheckError> {
    let stored = report["digest"]
        .as_str()
        .ok_or_else(|| RecheckError::NoDigest {
            path: file.to_string(),
        })?;
    let computed = digest_of(report);
    if stored != computed {
        return Err(RecheckError::Tampered {
            path: file.to_string(),
            stored: stored.to_string(),
            computed,
        });
    }
    Ok(())
}

/// Read a report, parse it strictly and verify its digest.
pub fn load_sealed(path: &std::path::Path) -> Result<Value, RecheckError> {
    let shown = path.display().to_string();
    let text =
        crate::input::read_to_string(path, crate::input::MAX_REPORT_BYTES).map_err(|source| {
            RecheckError::Io {
                path: shown.clone(),
                source,
            }
        })?;
    let value = toolcert_base::canonical::parse_strict(&text).map_err(|e| RecheckError::Json {
        path: shown.clone(),
        message: e.to_string(),
    })?;
    verify(&value, &shown)?;
    Ok(value)
}

/// The stored scenarios of a report.
pub fn scenarios_of(report: &Value, file: &str) -> Result<Vec<ScenarioResult>, RecheckError> {
    let list = report["scenarios"]
        .as_array()
        .ok_or_else(|| RecheckError::NotAReport {
            path: file.to_string(),
            pointer: "/scenarios".into(),
            message: "expected an array".into(),
        })?;
    list.iter()
        .enumerate()
        .map(|(i, s)| {
            serde_json::from_value(s.clone()).map_err(|e| RecheckError::NotAReport {
                path: file.to_string(),
                pointer: format!("/scenarios/{i}"),
                message: e.to_string(),
            })
        })
        .collect()
}

/// The `repeat` member of a report (`None` without `--repeat`).
pub fn repeat_of(
    report: &Value,
    file: &str,
) -> Result<Option<crate::repeat::Repeat>, RecheckError> {
    match &report["repeat"] {
        Value::Null => Ok(None),
        r => serde_json::from_value(r.clone())
            .map(Some)
            .map_err(|e| RecheckError::NotAReport {
                path: file.to_string(),
                pointer: "/repeat".into(),
                message: e.to_string(),
            }),
    }
}

/// The fold options a report was made with (`strict`).
pub fn fold_options_of(report: &Value) -> FoldOptions {
    FoldOptions {
        strict: report["strict"].as_bool().unwrap_or(false),
    }
}

/// The certification options a report was made with (its `certification.options`; a report
/// older than minor 3 has only `strict` and `summary.requireEvidence`).
pub fn certify_options_of(report: &Value) -> CertifyOptions {
    serde_json::from_value(report["certification"]["options"].clone()).unwrap_or(CertifyOptions {
        strict: report["strict"].as_bool().unwrap_or(false),
        require_evidence: report["summary"]["requireEvidence"]
            .as_str()
            .and_then(|s| s.parse::<Evidence>().ok())
            .unwrap_or(Evidence::SelfReport),
        include_tentative: false,
    })
}

/// The selection a report was made with (its `certification.selection`; before minor 3, only
/// its `partition`).
pub fn selection_of(report: &Value) -> Selection {
    serde_json::from_value(report["certification"]["selection"].clone()).unwrap_or(Selection {
        partition: serde_json::from_value(report["partition"].clone()).ok(),
        ..Selection::default()
    })
}

/// A check whose re-judged status differs from the stored one (or that one side lacks).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckDiff {
    /// The scenario.
    pub scenario_id: String,
    /// The trial (`--repeat`), if the report was repeated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trial: Option<u32>,
    /// The check.
    pub check_id: String,
    /// The stored status (`None`: the check is new in the suite).
    pub stored: Option<CheckStatus>,
    /// The re-judged status (`None`: the suite no longer has the check).
    pub now: Option<CheckStatus>,
}

/// A scenario or check that could not be rechecked, and why; its stored outcome was kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NotRechecked {
    /// The scenario.
    pub scenario_id: String,
    /// The trial (`--repeat`), if the report was repeated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trial: Option<u32>,
    /// The check, or `None` for the whole scenario.
    pub check_id: Option<String>,
    /// Why.
    pub why: String,
}

/// A row: its stored disposition and the re-judged one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RowRecheck {
    /// The row.
    pub row: String,
    /// Stored (`None`: the row was not in the report).
    pub stored: Option<Disposition>,
    /// Re-judged (`None`: no rechecked check names it any more).
    pub now: Option<Disposition>,
}

/// The outcome of a recheck.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Recheck {
    /// Every row of either side, in registry order then the stored order.
    pub rows: Vec<RowRecheck>,
    /// Checks whose status changed, appeared or disappeared.
    pub checks: Vec<CheckDiff>,
    /// What could not be rechecked.
    pub not_rechecked: Vec<NotRechecked>,
    /// The verdict the report states (`None` before report minor 3).
    pub stored_verdict: Option<Verdict>,
    /// The certification recomputed from the re-judged rows, with the report's options and
    /// selection (a partial run stays partial).
    pub certification: Option<Certification>,
}

impl Recheck {
    /// Rows whose disposition differs.
    pub fn differing(&self) -> impl Iterator<Item = &RowRecheck> {
        self.rows.iter().filter(|r| r.stored != r.now)
    }

    /// Whether the recomputed verdict differs from the one the report states.
    pub fn verdict_differs(&self) -> bool {
        match (&self.stored_verdict, &self.certification) {
            (Some(stored), Some(now)) => *stored != now.verdict,
            _ => false,
        }
    }
}

/// Whether any value a check reads carries a redaction marker.
fn reads_redacted(check: &crate::suite::Check, doc: &Value) -> bool {
    let reads = crate::expect::Reads::of(check);
    let mut pointers = reads.observation_pointers();
    pointers.extend(reads.placeholders.iter().map(|p| {
        let segs: Vec<String> = p
            .split('.')
            .map(toolcert_base::canonical::pointer_token)
            .collect();
        format!("/{}", segs.join("/"))
    }));
    pointers.iter().any(|p| {
        doc.pointer(p).is_some_and(|v| {
            let text = v.to_string();
            text.contains(toolcert_base::redact::REDACTED)
                || text.contains(toolcert_base::redact::CANARY)
        })
    })
}

/// Re-judge a (verified) report with `suite`.
pub fn recheck(suite: &Suite, report: &Value, file: &str) -> Result<Recheck, RecheckError> {
    let stored_scenarios = scenarios_of(report, file)?;
    let wire_major = report["host"]["discovery"]["wireMajor"]
        .as_u64()
        .and_then(|n| u8::try_from(n).ok());
    let mut out = Recheck::default();
    let mut rejudged: Vec<(String, Option<u32>, Vec<CheckOutcome>)> = Vec::new();
    for stored in &stored_scenarios {
        let id = stored.scenario_id.clone();
        let trial = stored.trial;
        let Some(scenario) = suite.scenario(&id) else {
            out.not_rechecked.push(NotRechecked {
                scenario_id: id.clone(),
                trial,
                check_id: None,
                why: "the suite no longer has this scenario; its stored outcome is kept".into(),
            });
            rejudged.push((id, trial, stored.checks.clone()));
            continue;
        };
        if stored.observations.is_null() {
            out.not_rechecked.push(NotRechecked {
                scenario_id: id.clone(),
                trial,
                check_id: None,
                why: "the scenario was never driven (no observations: inapplicable, blocked or not run); its stored outcome is kept".into(),
            });
            rejudged.push((id, trial, stored.checks.clone()));
            continue;
        }
        let fresh = crate::expect::evaluate(suite, scenario, &stored.observations, wire_major);
        let stored_by_id: BTreeMap<&str, &CheckOutcome> = stored
            .checks
            .iter()
            .map(|c| (c.check_id.as_str(), c))
            .collect();
        let mut kept = Vec::new();
        for outcome in fresh {
            let before = stored_by_id.get(outcome.check_id.as_str()).copied();
            let check = scenario.checks.iter().find(|c| c.id == outcome.check_id);
            let redacted = check.is_some_and(|c| reads_redacted(c, &stored.observations));
            match before {
                Some(b) if b.status != outcome.status && redacted => {
                    out.not_rechecked.push(NotRechecked {
                        scenario_id: id.clone(),
                        trial,
                        check_id: Some(outcome.check_id.clone()),
                        why: format!(
                            "it reads a value the report redacted ([redacted]/[canary]) and re-judges {} where the run saw {}; the stored status is kept",
                            outcome.status.as_str(),
                            b.status.as_str()
                        ),
                    });
                    kept.push(b.clone());
                    continue;
                }
                Some(b) if b.status != outcome.status => out.checks.push(CheckDiff {
                    scenario_id: id.clone(),
                    trial,
                    check_id: outcome.check_id.clone(),
                    stored: Some(b.status),
                    now: Some(outcome.status),
                }),
                Some(_) => {}
                None => out.checks.push(CheckDiff {
                    scenario_id: id.clone(),
                    trial,
                    check_id: outcome.check_id.clone(),
                    stored: None,
                    now: Some(outcome.status),
                }),
            }
            kept.push(outcome);
        }
        // A control or a required check that could not be rechecked decided other checks of
        // the scenario (a failing control blocks what it guards), so none of the scenario's
        // fresh outcomes can be trusted: keep all of the stored ones.
        let kept_controls: Vec<String> = out
            .not_rechecked
            .iter()
            .filter(|n| n.scenario_id == id && n.trial == trial)
            .filter_map(|n| n.check_id.clone())
            .filter(|c| {
                scenario
                    .checks
                    .iter()
                    .any(|x| (x.id == *c && x.control) || x.requires.contains(c))
            })
            .collect();
        if !kept_controls.is_empty() {
            out.not_rechecked
                .retain(|n| n.scenario_id != id || n.trial != trial);
            out.checks
                .retain(|c| c.scenario_id != id || c.trial != trial);
            out.not_rechecked.push(NotRechecked {
                scenario_id: id.clone(),
                trial,
                check_id: None,
                why: format!(
                    "its control or required check {} reads a value the report redacted and re-judges differently, and it decides the scenario's other checks; every stored outcome of the scenario is kept",
                    kept_controls.join(", ")
                ),
            });
            rejudged.push((id, trial, stored.checks.clone()));
            continue;
        }
        for b in &stored.checks {
            if !kept.iter().any(|k| k.check_id == b.check_id) {
                out.checks.push(CheckDiff {
                    scenario_id: id.clone(),
                    trial,
                    check_id: b.check_id.clone(),
                    stored: Some(b.status),
                    now: None,
                });
            }
        }
        rejudged.push((id, trial, kept));
    }
    let repeat = repeat_of(report, file)?;
    let rows = crate::repeat::fold_trials(
        suite,
        fold_options_of(report),
        rejudged
            .iter()
            .map(|(id, t, c)| (id.as_str(), *t, c.as_slice())),
        repeat.as_ref().map_or(&[][..], |r| r.seeds.as_slice()),
    );
    let stored_rows: Vec<(String, Option<Disposition>)> = report["rows"]
        .as_array()
        .map(|rows| {
            rows.iter()
                .map(|r| {
                    (
                        r["requirementId"].as_str().unwrap_or("").to_string(),
                        serde_json::from_value(r["disposition"].clone()).ok(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    for r in &rows {
        out.rows.push(RowRecheck {
            row: r.requirement_id.clone(),
            stored: stored_rows
                .iter()
                .find(|(id, _)| *id == r.requirement_id)
                .and_then(|(_, d)| *d),
            now: Some(r.disposition),
        });
    }
    for (id, d) in stored_rows {
        if !rows.iter().any(|r| r.requirement_id == id) {
            out.rows.push(RowRecheck {
                row: id,
                stored: d,
                now: None,
            });
        }
    }
    out.stored_verdict = serde_json::from_value(report["certification"]["verdict"].clone()).ok();
    if let Some(why) = report["certification"]["stopped"].as_str() {
        out.certification = Some(Certification::stopped(
            suite,
            why,
            certify_options_of(report),
            selection_of(report),
        ));
    } else {
        let ran: std::collections::BTreeSet<&str> = stored_scenarios
            .iter()
            .map(|s| s.scenario_id.as_str())
            .collect();
        let mut c = Certification::compute(
            suite,
            &rows,
            &ran,
            certify_options_of(report),
            selection_of(report),
        );
        // An interrupted run stays what it was: partial, whatever its rows say.
        if let Some(signal) = report["certification"]["interrupted"].as_str() {
            c = c.interrupted(signal);
        }
        out.certification = Some(c);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_edited_report_is_refused() {
        let mut report = json!({"rows": [], "scenarios": [{"observations": {"a": 1}}]});
        report["digest"] = json!(digest_of(&report));
        assert!(verify(&report, "r.json").is_ok());
        report["scenarios"][0]["observations"]["a"] = json!(2);
        let err = verify(&report, "r.json").unwrap_err().to_string();
        assert!(err.contains("digest mismatch"), "{err}");
        report.as_object_mut().unwrap().remove("digest");
        assert!(matches!(
            verify(&report, "r.json"),
            Err(RecheckError::NoDigest { .. })
        ));
    }
}
