//! Judging checks over a scenario's observation document (drive, then judge).
//!
//! Checks are pure functions of the observations, so a stored transcript can be re-judged
//! without the host. A check whose pointer runs through a `$blocked` / `$error` / `$fail`
//! observation takes that status; a failed positive control makes its row `blocked` and
//! blocks every check that requires it, so "zero calls" is never judged against a double
//! nobody reached.

pub mod error_registry;
mod matcher;

pub use matcher::matches;

use std::collections::HashMap;

use serde_json::Value;

use crate::suite::{Check, Matcher, Scenario};
use crate::verdict::{CheckOutcome, CheckStatus};

/// Judge every check of `scenario` over `doc`, in file order.
pub fn evaluate(scenario: &Scenario, doc: &Value) -> Vec<CheckOutcome> {
    let mut memo: HashMap<String, Option<(CheckStatus, String)>> = HashMap::new();
    scenario
        .checks
        .iter()
        .map(|check| {
            let (status, detail) = judge(scenario, check, doc, &mut memo);
            CheckOutcome {
                check_id: check.id.clone(),
                row: check.row.clone(),
                says: check.says.clone(),
                status,
                detail,
            }
        })
        .collect()
}

fn judge(
    scenario: &Scenario,
    check: &Check,
    doc: &Value,
    memo: &mut HashMap<String, Option<(CheckStatus, String)>>,
) -> (CheckStatus, String) {
    match memo.get(&check.id) {
        Some(Some(done)) => return done.clone(),
        Some(None) => {
            return (
                CheckStatus::Error,
                format!("check {} requires itself through a cycle", check.id),
            );
        }
        None => {}
    }
    memo.insert(check.id.clone(), None);
    let result = judge_uncached(scenario, check, doc, memo);
    memo.insert(check.id.clone(), Some(result.clone()));
    result
}

fn judge_uncached(
    scenario: &Scenario,
    check: &Check,
    doc: &Value,
    memo: &mut HashMap<String, Option<(CheckStatus, String)>>,
) -> (CheckStatus, String) {
    for req in &check.requires {
        let Some(dep) = scenario.checks.iter().find(|c| &c.id == req) else {
            return (CheckStatus::Error, format!("requires unknown check {req}"));
        };
        let (status, detail) = judge(scenario, dep, doc, memo);
        if status != CheckStatus::Pass {
            let status = if status == CheckStatus::Error {
                CheckStatus::Error
            } else {
                CheckStatus::Blocked
            };
            return (
                status,
                format!("cannot be judged: the check it relies on ({req}) did not pass: {detail}"),
            );
        }
    }
    for pointer in pointers_of(check) {
        if let Some(state) = observation_state(doc, pointer) {
            return state;
        }
    }
    match matches(&check.expect, doc.pointer(&check.at), doc) {
        Ok(()) => (CheckStatus::Pass, String::new()),
        Err(why) if check.control => (
            CheckStatus::Blocked,
            format!(
                "positive control failed ({}: {why}); toolcert's double was not reached as expected, so the negative legs prove nothing",
                check.says
            ),
        ),
        Err(why) => (CheckStatus::Fail, format!("{}: {why}", check.says)),
    }
}

/// Every pointer a check reads.
fn pointers_of(check: &Check) -> Vec<&str> {
    let mut out = vec![check.at.as_str()];
    match &check.expect {
        Matcher::EqualsAt(p)
        | Matcher::JcsSha256Of(p)
        | Matcher::NotJcsSha256Of(p)
        | Matcher::MemberOf(p) => out.push(p),
        Matcher::EqualsAtIgnoring(spec) => out.push(&spec.at),
        _ => {}
    }
    out
}

/// If the pointer passes through an observation that could not be made, its status.
fn observation_state(doc: &Value, pointer: &str) -> Option<(CheckStatus, String)> {
    let mut node = doc;
    let mut segments = pointer.split('/').skip(1);
    loop {
        if let Value::Object(map) = node {
            for (key, status) in [
                ("$blocked", CheckStatus::Blocked),
                ("$error", CheckStatus::Error),
                ("$fail", CheckStatus::Fail),
            ] {
                if let Some(reason) = map.get(key) {
                    let reason = reason.as_str().unwrap_or("").to_string();
                    return Some((status, reason));
                }
            }
        }
        let seg = segments.next()?;
        let seg = seg.replace("~1", "/").replace("~0", "~");
        node = match node {
            Value::Object(m) => m.get(&seg)?,
            Value::Array(a) => a.get(seg.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn scenario(checks: Value) -> Scenario {
        serde_json::from_value(json!({
            "id": "t.t", "title": "t", "rows": ["HOOKS-AUTH-1", "HOOKS-AUTH-3"], "gate": null,
            "kills": [], "steps": [], "checks": checks
        }))
        .unwrap()
    }

    #[test]
    fn failed_control_blocks_its_dependents_instead_of_passing_them() {
        let s = scenario(json!([
            {"id": "control", "row": "HOOKS-AUTH-3", "says": "granted call reached the receiver", "at": "/receivers/g/count", "expect": {"equals": 1}, "control": true},
            {"id": "denied", "row": "HOOKS-AUTH-1", "says": "denied call never reached it", "at": "/receivers/d/count", "expect": {"equals": 0}, "requires": ["control"]}
        ]));
        let doc = json!({"receivers": {"g": {"count": 0}, "d": {"count": 0}}});
        let out = evaluate(&s, &doc);
        assert_eq!(out[0].status, CheckStatus::Blocked);
        assert_eq!(out[1].status, CheckStatus::Blocked);
        let doc = json!({"receivers": {"g": {"count": 1}, "d": {"count": 0}}});
        let out = evaluate(&s, &doc);
        assert!(out.iter().all(|o| o.status == CheckStatus::Pass), "{out:?}");
        let doc = json!({"receivers": {"g": {"count": 1}, "d": {"count": 1}}});
        assert_eq!(evaluate(&s, &doc)[1].status, CheckStatus::Fail);
    }

    #[test]
    fn observation_states_propagate_along_the_pointer() {
        let s = scenario(json!([
            {"id": "a", "row": "HOOKS-AUTH-1", "says": "s", "at": "/steps/x/toolReturned/status", "expect": {"equals": "forbidden"}},
            {"id": "b", "row": "HOOKS-AUTH-3", "says": "s", "at": "/steps/y/http/status", "expect": {"equals": 200}}
        ]));
        let doc =
            json!({"steps": {"x": {"$blocked": "seam not wired"}, "y": {"$error": "timeout"}}});
        let out = evaluate(&s, &doc);
        assert_eq!(
            (out[0].status, out[0].detail.as_str()),
            (CheckStatus::Blocked, "seam not wired")
        );
        assert_eq!(out[1].status, CheckStatus::Error);
    }
}
