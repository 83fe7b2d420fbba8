//! JUnit XML (`--junit PATH`): one test case per requirement row, classname = family, then
//! the suite `certification`: one case per claimed profile and one for the run's verdict.
//!
//! The mapping reads the run's certification, so the XML has a failure exactly when the run
//! exits non-zero. A row that denies certification is a failure (`error` for an `error` row);
//! a row that does not is a success (`pass`, `warn`, with the evidence tier in system-out) or
//! skipped with the reason (`inapplicable`; a tentative row; a row only toolcert's extensions
//! could witness here; a partial run's row left to the whole run). `flaky` (`--repeat K`)
//! fails with type `flaky`, a pass below `--require-evidence` with type `below-tier`. Under
//! `--repeat K` every case also carries the properties `trials`, `passes` and `passK`. Every
//! case carries the properties `disposition` and `standing`, and a `pass` or `warn` case
//! `evidence`.
//!
//! With `--expect FILE`: a row exactly as the baseline expects is skipped (property
//! `baseline` = `expected`, the reason in the message); an unexpected pass and a regression are
//! failures of type `unexpected-pass` / `regression`; each stale entry is a case of the suite
//! `baseline`, a failure under `--strict` and skipped otherwise.

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use super::json::Report as JsonReport;
use crate::verdict::{Disposition, Standing};

fn standing_word(s: Standing) -> &'static str {
    match s {
        Standing::Scored => "scored",
        Standing::Tentative => "tentative",
        Standing::NeedsExtension => "needs-extension",
        Standing::Incomplete => "incomplete",
    }
}

/// One case per claimed profile, then `verdict`: the run's own verdict (with `--expect`, the
/// gate's), a failure exactly when the run exits non-zero. Under a baseline the gate decides,
/// so a profile that is not certified is reported (skipped), not failed.
fn certification_suite(report: &JsonReport) -> TestSuite {
    let c = &report.certification;
    let mut suite = TestSuite::new("certification");
    for p in c.profiles.iter().filter(|p| p.claimed) {
        let status = if p.certified {
            TestCaseStatus::success()
        } else if !p.decides() || c.gate.is_some() || c.verdict == crate::verdict::Verdict::Partial
        {
            let mut s = TestCaseStatus::skipped();
            s.set_message(format!("not certified: {}", p.reason));
            s
        } else {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_message(format!("not certified: {}", p.reason))
                .set_type("profile");
            s
        };
        let mut case = TestCase::new(format!("profile:{}", p.id), status);
        case.set_classname("toolcert.certification");
        if let Some(tier) = p.tier {
            case.add_property(("tier", tier.as_str()));
        }
        case.add_property(("witnesses", p.witnesses.to_string().as_str()));
        suite.add_test_case(case);
    }
    let status = if c.exit_code == 0 {
        TestCaseStatus::success()
    } else {
        let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
        s.set_message(c.final_line()).set_type("verdict");
        s
    };
    let mut case = TestCase::new("verdict", status);
    case.set_classname("toolcert.certification");
    case.set_system_out(c.final_line());
    suite.add_test_case(case);
    suite
}

/// Render the JUnit XML document.
pub fn render_junit(report: &JsonReport) -> String {
    let mut junit = Report::new("toolcert");
    let mut families: Vec<&str> = report
        .rows
        .iter()
        .map(|r| r.verdict.family.as_str())
        .collect();
    families.dedup();
    for family in families {
        let mut suite = TestSuite::new(family);
        for row in report.rows.iter().filter(|r| r.verdict.family == family) {
            let v = &row.verdict;
            let message = format!("{} — {}", v.disposition, v.detail);
            let standing = report.certification.standing(&v.requirement_id);
            let denies = standing.is_some_and(|s| s.denies);
            let kind = standing.map_or(Standing::Scored, |s| s.standing);
            let skipped = |why: String| {
                let mut s = TestCaseStatus::skipped();
                s.set_message(why);
                s
            };
            let status = match v.disposition {
                Disposition::Error if denies => {
                    let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
                    s.set_message(message.clone()).set_type("error");
                    s
                }
                Disposition::Pass | Disposition::Warn if denies => {
                    let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                    s.set_message(format!(
                        "{} — {}",
                        v.disposition,
                        standing.map_or("", |s| s.why.as_str())
                    ))
                    .set_type("below-tier");
                    s
                }
                _ if denies => {
                    let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                    s.set_message(message.clone())
                        .set_type(v.disposition.as_str());
                    s.set_description(row.rule.clone());
                    s
                }
                Disposition::Pass | Disposition::Warn => TestCaseStatus::success(),
                _ => skipped(match kind {
                    Standing::Tentative => {
                        format!("tentative (a draft's rule, not scored): {message}")
                    }
                    Standing::NeedsExtension => format!(
                        "only toolcert extensions witness this row here ({}): {message}",
                        v.needs.join(", ")
                    ),
                    Standing::Incomplete => {
                        format!("partial run: left to the whole run: {message}")
                    }
                    Standing::Scored => message.clone(),
                }),
            };
            let judged = |list: &[crate::baseline::Judged]| {
                list.iter().find(|j| j.row == v.requirement_id).cloned()
            };
            let baseline = report.expectations.as_ref().and_then(|e| {
                judged(&e.expected)
                    .map(|j| ("expected", j))
                    .or_else(|| judged(&e.unexpected_passes).map(|j| ("unexpected-pass", j)))
                    .or_else(|| judged(&e.regressions).map(|j| ("regression", j)))
            });
            let status = match &baseline {
                None => status,
                Some(("expected", j)) => {
                    let mut s = TestCaseStatus::skipped();
                    s.set_message(format!(
                        "expected {} by the baseline ({}) — {message}",
                        j.expected, j.reason
                    ));
                    s
                }
                Some((kind, j)) => {
                    let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                    s.set_message(format!(
                        "{kind}: the baseline expects {} ({}), the row is {} — {}",
                        j.expected, j.reason, j.actual, v.detail
                    ))
                    .set_type(*kind);
                    s
                }
            };
            let mut case = TestCase::new(v.requirement_id.clone(), status);
            if let Some((kind, _)) = &baseline {
                case.add_property(("baseline", *kind));
            }
            case.set_classname(format!("toolcert.{family}"));
            case.set_assertions(v.assertions as usize);
            case.add_property(("disposition", v.disposition.as_str()));
            if let Some(kind) = standing.map(|s| s.standing) {
                case.add_property(("standing", standing_word(kind)));
            }
            if let Some(evidence) = v.evidence {
                case.add_property(("evidence", evidence.as_str()));
            }
            if let (Some(trials), Some(passes), Some(pass_k)) = (v.trials, v.passes, v.pass_k) {
                case.add_property(("trials", trials.to_string().as_str()));
                case.add_property(("passes", passes.to_string().as_str()));
                case.add_property(("passK", if pass_k { "true" } else { "false" }));
            }
            match (v.disposition, v.evidence) {
                (Disposition::Warn, _) => {
                    case.set_system_out(format!("warn (SHOULD): {}", v.detail));
                }
                (Disposition::Pass, Some(evidence)) if v.detail.is_empty() => {
                    case.set_system_out(format!("pass at {evidence} evidence"));
                }
                (Disposition::Pass, Some(evidence)) => {
                    case.set_system_out(format!("pass at {evidence} evidence: {}", v.detail));
                }
                _ => {}
            }
            suite.add_test_case(case);
        }
        junit.add_test_suite(suite);
    }
    junit.add_test_suite(certification_suite(report));
    if let Some(e) = report.expectations.as_ref().filter(|e| !e.stale.is_empty()) {
        let mut suite = TestSuite::new("baseline");
        for x in &e.stale {
            let message = format!(
                "stale baseline entry {} (expected {}: {}): no such row, or no scenario covers it; remove it from the baseline",
                x.row, x.disposition, x.reason
            );
            let status = if report.strict {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                s.set_message(message).set_type("stale");
                s
            } else {
                let mut s = TestCaseStatus::skipped();
                s.set_message(message);
                s
            };
            let mut case = TestCase::new(format!("stale:{}", x.row), status);
            case.set_classname("toolcert.baseline");
            suite.add_test_case(case);
        }
        junit.add_test_suite(suite);
    }
    junit.to_string().unwrap_or_default()
}
