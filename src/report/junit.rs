//! JUnit XML (`--junit PATH`): one test case per requirement row, classname = family.
//!
//! Mapping (explicit, because CI systems read it): `pass` ⇒ success; `warn` ⇒ success with
//! the warning in system-out; `inapplicable` ⇒ skipped with the reason; `blocked` and `fail`
//! ⇒ failure; `error` ⇒ error. Every case carries the property `disposition`, and a `pass`
//! or `warn` case the property `evidence` (`double` or `wire`) and says it in system-out.

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
                Disposition::Blocked | Disposition::Fail => {
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
            let mut case = TestCase::new(v.requirement_id.clone(), status);
            case.set_classname(format!("toolcert.{family}"));
            case.set_assertions(v.assertions as usize);
            case.add_property(("disposition", v.disposition.as_str()));
            if let Some(evidence) = v.evidence {
                case.add_property(("evidence", evidence.as_str()));
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
    junit.to_string().unwrap_or_default()
}
