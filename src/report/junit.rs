//! JUnit XML (`--junit PATH`): one test case per requirement row, classname = family.
//!
//! Mapping (explicit, because CI systems read it): `pass` ⇒ success; `warn` ⇒ success with
//! the warning in system-out; `inapplicable` ⇒ skipped with the reason; `blocked` and `fail`
//! ⇒ failure; `flaky` (`--repeat K`: passed in some trials only) ⇒ failure of type `flaky`
//! with the pass rate in the message; `error` ⇒ error. Under `--repeat K` every case also
//! carries the properties `trials`, `passes` and `passK`. Every case carries the property `disposition`, and a `pass`
//! or `warn` case the property `evidence` (`double` or `wire`) and says it in system-out.
//!
//! With `--expect FILE`: a row exactly as the baseline expects is skipped (property
//! `baseline` = `expected`, the reason in the message); an unexpected pass and a regression are
//! failures of type `unexpected-pass` / `regression`; each stale entry is a case of the suite
//! `baseline`, a failure under `--strict` and skipped otherwise.

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use super::Report as JsonReport;
use crate::verdict::Disposition;

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
            let status = match v.disposition {
                Disposition::Pass | Disposition::Warn => TestCaseStatus::success(),
                Disposition::Inapplicable => {
                    let mut s = TestCaseStatus::skipped();
                    s.set_message(message.clone());
                    s
                }
                Disposition::Blocked | Disposition::Fail | Disposition::Flaky => {
                    let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                    s.set_message(message.clone())
                        .set_type(v.disposition.as_str());
                    s.set_description(row.rule.clone());
                    s
                }
                Disposition::Error => {
                    let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
                    s.set_message(message.clone()).set_type("error");
                    s
                }
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
