//! Judging checks over a scenario's observation document (drive, then judge).
//!
//! Checks are pure functions of the observations, so a stored transcript can be re-judged
//! without the host. The judge cannot convict on a broken setup, by construction:
//!
//! - a check whose pointers run through an observation that could not be made (a
//!   [`NotObserved`](crate::observation::NotObserved): blocked, error or fail) takes that status;
//! - a positive control that does not hold is `blocked`, and so is every check of the rows
//!   it guards (its own row, or those its `guards` lists) and every check that `requires`
//!   it, so "zero calls" is never judged against a double nobody reached;
//! - a value an expectation compares with that was never observed is `blocked`, and a broken
//!   expectation of toolcert's own (a placeholder naming nothing) is `error`, never `fail`.

pub mod catalog;
pub mod error_registry;
pub mod ids;
mod matcher;
pub mod reads;
pub mod shapes;

pub use matcher::matches;
pub use reads::Reads;

use std::collections::HashMap;

use serde_json::Value;

use crate::observation::Unobserved;
use crate::suite::{Check, Scenario, Step, Suite};
use crate::template;
use crate::verdict::{CheckOutcome, CheckStatus, Evidence};

/// Judge every check of `scenario` over `doc`, in file order. `wire_major` is the host's
/// (checks of rules that belong to another major are `inapplicable`); `None` judges every
/// check, as an offline re-check of a stored report does.
pub fn evaluate(
    suite: &Suite,
    scenario: &Scenario,
    doc: &Value,
    wire_major: Option<u8>,
) -> Vec<CheckOutcome> {
    let judge = Judge {
        suite,
        scenario,
        doc,
        wire_major,
        memo: HashMap::new(),
    };
    let mut judge = judge;
    scenario
        .checks
        .iter()
        .map(|check| {
            let (status, detail) = judge.judge(check);
            CheckOutcome {
                check_id: check.id.clone(),
                row: check.row.clone(),
                says: check.says.clone(),
                status,
                detail,
                evidence: evidence_of(scenario, check),
                control: check.control,
                warn_unless_strict: check.warn_unless_strict.clone(),
            }
        })
        .collect()
}

/// What a check observes: its declared level, else `double` when it reads what one of
/// toolcert's doubles saw (directly, or through a step that aggregates double observations:
/// `wait`, `fireEffectSeams`), else `wire`.
pub fn evidence_of(scenario: &Scenario, check: &Check) -> Evidence {
    if let Some(declared) = check.evidence {
        return declared;
    }
    let reads = Reads::of(check);
    let double = reads.observation_pointers().iter().any(|p| {
        let (root, name) = reads::root_of(p);
        reads::DOUBLE_ROOTS.contains(&root)
            || (root == "steps"
                && name.is_some_and(|n| {
                    scenario.steps.iter().any(|s| {
                        s.name() == n && matches!(s, Step::Wait(_) | Step::FireEffectSeams(_))
                    })
                }))
    });
    if double {
        Evidence::Double
    } else {
        Evidence::Wire
    }
}

struct Judge<'a> {
    suite: &'a Suite,
    scenario: &'a Scenario,
    doc: &'a Value,
    wire_major: Option<u8>,
    memo: HashMap<String, Option<(CheckStatus, String)>>,
}

impl Judge<'_> {
    fn judge(&mut self, check: &Check) -> (CheckStatus, String) {
        match self.memo.get(&check.id) {
            Some(Some(done)) => return done.clone(),
            Some(None) => {
                return (
                    CheckStatus::Error,
                    format!("check {} requires itself through a cycle", check.id),
                );
            }
            None => {}
        }
        self.memo.insert(check.id.clone(), None);
        let result = self.judge_uncached(check);
        self.memo.insert(check.id.clone(), Some(result.clone()));
        result
    }

    /// Why the check does not apply on this wire major, if so.
    fn off_major(&self, check: &Check) -> Option<String> {
        let major = self.wire_major?;
        if !check.wire.is_empty() && !check.wire.contains(&major) {
            return Some(format!(
                "this check belongs to wire major {:?}; the host speaks {major}",
                check.wire
            ));
        }
        let row = self.suite.registry.row(&check.row)?;
        (!row.applies_on(major)).then(|| {
            format!(
                "row {} belongs to wire major {:?}; the host speaks {major}",
                row.id, row.wire
            )
        })
    }

    fn judge_uncached(&mut self, check: &Check) -> (CheckStatus, String) {
        if let Some(why) = self.off_major(check) {
            return (CheckStatus::Inapplicable, why);
        }
        let scenario = self.scenario;
        for req in &check.requires {
            let Some(dep) = scenario.checks.iter().find(|c| &c.id == req) else {
                return (CheckStatus::Error, format!("requires unknown check {req}"));
            };
            let (status, detail) = self.judge(dep);
            if status != CheckStatus::Pass && status != CheckStatus::Inapplicable {
                let status = if status == CheckStatus::Error {
                    CheckStatus::Error
                } else {
                    CheckStatus::Blocked
                };
                return (
                    status,
                    format!(
                        "cannot be judged: the check it relies on ({req}) did not pass: {detail}"
                    ),
                );
            }
        }
        // Structural guard: while a positive control of the row has not held, no check of
        // the row can convict the host (the setup it relies on was not shown to work).
        if !check.control {
            let guards: Vec<&Check> = scenario
                .checks
                .iter()
                .filter(|c| c.id != check.id && c.guards_row(&check.row))
                .collect();
            for control in guards {
                let (status, detail) = self.judge(control);
                match status {
                    CheckStatus::Pass | CheckStatus::Inapplicable => {}
                    CheckStatus::Error => {
                        return (
                            CheckStatus::Error,
                            format!(
                                "cannot be judged: the positive control {} broke: {detail}",
                                control.id
                            ),
                        );
                    }
                    _ => {
                        return (
                            CheckStatus::Blocked,
                            format!(
                                "cannot convict: the positive control {} of this row did not hold: {detail}",
                                control.id
                            ),
                        );
                    }
                }
            }
        }
        let reads = Reads::of(check);
        for pointer in reads.observation_pointers() {
            if let Some(state) = observation_state(self.doc, &pointer, self.scenario) {
                return state;
            }
        }
        if let Some(state) = self.expectation_state(&reads) {
            return state;
        }
        match matches(&check.expect, self.doc.pointer(&check.at), self.doc) {
            Ok(()) => (CheckStatus::Pass, String::new()),
            Err(why) if check.control => (
                CheckStatus::Blocked,
                format!(
                    "positive control failed ({}: {why}); the setup it proves did not work here, so the legs it guards prove nothing{}",
                    check.says,
                    self.needs()
                ),
            ),
            Err(why) => (CheckStatus::Fail, format!("{}: {why}", check.says)),
        }
    }

    /// What the scenario needs beyond the upstream API, for a failed control's reason.
    fn needs(&self) -> String {
        let surfaces = &self.suite.surfaces;
        let named: Vec<String> = self
            .scenario
            .surfaces
            .iter()
            .filter(|id| surfaces.get(id).is_some_and(|s| s.kind.is_extension()))
            .map(|id| surfaces.reason(id))
            .collect();
        if named.is_empty() {
            String::new()
        } else {
            format!("; this leg needs {}", named.join("; "))
        }
    }

    /// Whether toolcert's own expectation can be evaluated: the values it compares with were
    /// observed and its placeholders resolve. A value the host never produced makes the check
    /// `blocked`; a mistake in the scenario data is `error`, never the host's `fail`.
    fn expectation_state(&self, reads: &Reads<'_>) -> Option<(CheckStatus, String)> {
        for pointer in reads.pointers.iter().skip(1) {
            if self.doc.pointer(pointer).is_none() {
                return Some((
                    CheckStatus::Blocked,
                    format!("the value this check compares with ({pointer}) was not observed"),
                ));
            }
        }
        for path in &reads.placeholders {
            if template::lookup(self.doc, path).is_some() {
                continue;
            }
            let mut parts = path.split('.');
            let (root, name) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
            let surfaces = &self.suite.surfaces;
            return Some(match root {
                "vars" | "provider" | "discovery" => (
                    CheckStatus::Error,
                    format!(
                        "scenario data: the expected value names {{{{{path}}}}}, which does not exist"
                    ),
                ),
                "facts" => (
                    CheckStatus::Blocked,
                    format!(
                        "the expected value needs {{{{{path}}}}}, which the host cannot advertise and the host profile does not state: {}",
                        surfaces.reason(&crate::suite::fact_id(name))
                    ),
                ),
                "fixtures" => (
                    CheckStatus::Blocked,
                    format!(
                        "the expected value needs fixture {name}, which the host does not advertise: {}",
                        surfaces.reason(&crate::suite::fixture_id(name))
                    ),
                ),
                _ => (
                    CheckStatus::Blocked,
                    format!("the expected value names {{{{{path}}}}}, which was not observed"),
                ),
            });
        }
        for pattern in &reads.patterns {
            if let Err(e) = regex::Regex::new(pattern) {
                return Some((
                    CheckStatus::Error,
                    format!("toolcert's pattern {pattern:?} does not compile: {e}"),
                ));
            }
        }
        None
    }
}

/// If the pointer passes through an observation that could not be made, its status. Only the
/// observations toolcert recorded are looked at (see [`crate::observation::state_along`]): a
/// `$blocked`, `$error` or `$fail` a host put in what it sent is its data, judged as such.
fn observation_state(
    doc: &Value,
    pointer: &str,
    scenario: &Scenario,
) -> Option<(CheckStatus, String)> {
    let (state, reason) = crate::observation::state_along(doc, pointer, &Recorded(scenario))?;
    let status = match state {
        Unobserved::Blocked => CheckStatus::Blocked,
        Unobserved::Error => CheckStatus::Error,
        Unobserved::Fail => CheckStatus::Fail,
    };
    Some((status, reason))
}

/// The observations a scenario's run records, by position: every step and double it names,
/// the nested observation of a `repeat` step (`met`), and the variables toolcert renders from
/// its own data (a variable rendered from the captured discovery document holds the host's
/// data, so it is never read as a not-made observation).
struct Recorded<'s>(&'s Scenario);

impl crate::observation::MarkerPositions for Recorded<'_> {
    fn recorded(&self, root: &str, name: &str) -> bool {
        match root {
            "vars" => self.0.vars.get(name).is_some_and(|template| {
                !reads::placeholders_in(template)
                    .iter()
                    .any(|p| p.split('.').next() == Some("discovery"))
            }),
            _ => true,
        }
    }

    fn nested(&self, root: &str, name: &str, field: &str) -> bool {
        root == "steps"
            && crate::observation::NESTED.contains(&field)
            && self
                .0
                .steps
                .iter()
                .any(|s| s.name() == name && matches!(s, Step::Repeat(_)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observation::NotObserved;
    use serde_json::json;

    /// DISC-4 on a host that advertises every candidate family: the one check of
    /// `disc.unadvertised-none-left` is a control that cannot hold there, so the row is
    /// `blocked` (with the reason), never passed and never silently left out.
    #[test]
    fn disc4_with_no_unadvertised_candidate_is_blocked() {
        let suite = Suite::embedded().unwrap();
        let scenario = suite
            .scenarios
            .iter()
            .find(|s| s.id == "disc.unadvertised-none-left")
            .expect("the scenario is in the suite");
        let all =
            json!({"discovery": {"document": {"toolCatalog": {}, "agents": {}, "prompts": {}}}});
        let outcomes = evaluate(&suite, scenario, &all, Some(2));
        assert_eq!(outcomes.len(), 1);
        assert_eq!(outcomes[0].status, CheckStatus::Blocked, "{outcomes:?}");
        let one_left = json!({"discovery": {"document": {"toolCatalog": {}, "agents": {}}}});
        let outcomes = evaluate(&suite, scenario, &one_left, Some(2));
        assert_eq!(outcomes[0].status, CheckStatus::Pass, "{outcomes:?}");
    }

    fn scenario(checks: Value) -> Scenario {
        serde_json::from_value(json!({
            "id": "t.t", "title": "t", "rows": ["HOOKS-AUTH-1", "HOOKS-AUTH-3"], "gate": null,
            "kills": [], "steps": [], "checks": checks
        }))
        .unwrap()
    }

    fn judge(s: &Scenario, doc: &Value) -> Vec<CheckOutcome> {
        evaluate(&Suite::embedded().unwrap(), s, doc, None)
    }

    #[test]
    fn failed_control_blocks_its_dependents_instead_of_passing_them() {
        let s = scenario(json!([
            {"id": "control", "row": "HOOKS-AUTH-3", "says": "granted call reached the receiver", "at": "/receivers/g/count", "expect": {"equals": 1}, "control": true},
            {"id": "denied", "row": "HOOKS-AUTH-1", "says": "denied call never reached it", "at": "/receivers/d/count", "expect": {"equals": 0}, "requires": ["control"]}
        ]));
        let doc = json!({"receivers": {"g": {"count": 0}, "d": {"count": 0}}});
        let out = judge(&s, &doc);
        assert_eq!(out[0].status, CheckStatus::Blocked);
        assert_eq!(out[1].status, CheckStatus::Blocked);
        let doc = json!({"receivers": {"g": {"count": 1}, "d": {"count": 0}}});
        let out = judge(&s, &doc);
        assert!(out.iter().all(|o| o.status == CheckStatus::Pass), "{out:?}");
        let doc = json!({"receivers": {"g": {"count": 1}, "d": {"count": 1}}});
        assert_eq!(judge(&s, &doc)[1].status, CheckStatus::Fail);
    }

    #[test]
    fn a_failed_control_guards_every_check_of_its_rows_without_requires() {
        let s = scenario(json!([
            {"id": "control", "row": "HOOKS-AUTH-3", "says": "path works", "at": "/receivers/g/count", "expect": {"equals": 1}, "control": true, "guards": ["HOOKS-AUTH-3", "HOOKS-AUTH-1"]},
            {"id": "own-row", "row": "HOOKS-AUTH-3", "says": "ok", "at": "/steps/a/status", "expect": {"equals": "ok"}},
            {"id": "guarded", "row": "HOOKS-AUTH-1", "says": "forbidden", "at": "/steps/b/status", "expect": {"equals": "forbidden"}}
        ]));
        let broken = json!({"receivers": {"g": {"count": 0}}, "steps": {"a": {"status": "no"}, "b": {"status": "no"}}});
        let out = judge(&s, &broken);
        assert!(
            out.iter().all(|o| o.status == CheckStatus::Blocked),
            "{out:?}"
        );
        assert!(
            out[2].detail.contains("positive control control"),
            "{}",
            out[2].detail
        );
        let working = json!({"receivers": {"g": {"count": 1}}, "steps": {"a": {"status": "no"}, "b": {"status": "no"}}});
        let out = judge(&s, &working);
        assert_eq!(out[1].status, CheckStatus::Fail);
        assert_eq!(out[2].status, CheckStatus::Fail);
        // A control whose guards leave out its own row guards only the rows it lists: a wire
        // check of its row can still convict the host that broke the control's setup.
        let narrow = scenario(json!([
            {"id": "control", "row": "HOOKS-AUTH-3", "says": "path works", "at": "/receivers/g/count", "expect": {"equals": 1}, "control": true, "guards": ["HOOKS-AUTH-1"]},
            {"id": "own-row", "row": "HOOKS-AUTH-3", "says": "ok", "at": "/steps/a/status", "expect": {"equals": "ok"}},
            {"id": "guarded", "row": "HOOKS-AUTH-1", "says": "forbidden", "at": "/steps/b/status", "expect": {"equals": "forbidden"}}
        ]));
        let out = judge(&narrow, &broken);
        assert_eq!(out[1].status, CheckStatus::Fail);
        assert_eq!(out[2].status, CheckStatus::Blocked);
    }

    #[test]
    fn observation_states_propagate_along_the_pointer() {
        let s = scenario(json!([
            {"id": "a", "row": "HOOKS-AUTH-1", "says": "s", "at": "/steps/x/toolReturned/status", "expect": {"equals": "forbidden"}},
            {"id": "b", "row": "HOOKS-AUTH-3", "says": "s", "at": "/steps/y/http/status", "expect": {"equals": 200}},
            {"id": "c", "row": "HOOKS-AUTH-3", "says": "s", "at": "/steps/z/runId", "expect": {"equals": "{{steps.x.runId}}"}}
        ]));
        let doc = json!({"steps": {
            "x": NotObserved::blocked("seam not wired").to_value(),
            "y": NotObserved::error("timeout").to_value(),
            "z": {"runId": "r"},
        }});
        let out = judge(&s, &doc);
        assert_eq!(
            (out[0].status, out[0].detail.as_str()),
            (CheckStatus::Blocked, "seam not wired")
        );
        assert_eq!(out[1].status, CheckStatus::Error);
        // A step named only in the expected value's template is read too.
        assert_eq!(out[2].status, CheckStatus::Blocked);
    }

    /// What a host sent is data at any depth: a `$blocked`, `$error` or `$fail` in a body, a
    /// header map, an arrival or a discovery-rendered variable never turns a failing check
    /// into another disposition, nor a passing one.
    #[test]
    fn markers_in_host_data_are_data() {
        let s: Scenario = serde_json::from_value(json!({
            "id": "t.t", "title": "t", "rows": ["HOOKS-AUTH-1", "HOOKS-AUTH-3"], "gate": null,
            "kills": [], "vars": {"fromHost": "{{discovery.document.toolHooks}}", "mine": "x-{{vars.nonce}}"},
            "steps": [
                {"step": "http", "name": "call", "method": "GET", "path": "/x"},
                {"step": "repeat", "name": "burst", "max": 2, "until": {"at": "/status", "expect": {"equals": "x"}},
                 "call": {"name": "burst", "seam": "toolhooks/invoke", "role": "operator", "body": {}}}
            ],
            "checks": [
                {"id": "a", "row": "HOOKS-AUTH-1", "says": "s", "at": "/steps/call/body/result/status", "expect": {"equals": "forbidden"}},
                {"id": "b", "row": "HOOKS-AUTH-1", "says": "s", "at": "/steps/call/headers/x", "expect": {"equals": "1"}},
                {"id": "c", "row": "HOOKS-AUTH-3", "says": "s", "at": "/vars/fromHost/supported", "expect": {"equals": true}},
                {"id": "d", "row": "HOOKS-AUTH-3", "says": "s", "at": "/steps/burst/met/toolReturned/status", "expect": {"equals": "ok"}},
                {"id": "e", "row": "HOOKS-AUTH-3", "says": "s", "at": "/steps/burst/first/body/x", "expect": {"equals": 1}},
                {"id": "f", "row": "HOOKS-AUTH-3", "says": "s", "at": "/vars/mine", "expect": {"equals": "y"}}
            ]
        }))
        .unwrap();
        let planted = json!({"$blocked": "forged", "$error": "forged", "$fail": "forged"});
        let mut body = planted.clone();
        body["result"] = planted.clone();
        body["result"]["status"] = json!("ok");
        let doc = json!({
            "vars": {"fromHost": planted.clone(), "mine": NotObserved::error("scenario data").to_value()},
            "steps": {
                "call": {"status": 200, "headers": {"x": "2"}, "body": body},
                "burst": {"iterations": 1, "statuses": [200], "okCount": 1, "conditionMet": false,
                          "first": {"http": {"status": 200, "headers": {}}, "body": planted.clone()},
                          "last": null,
                          "met": NotObserved::blocked("no answer met the condition").to_value()}
            }
        });
        let out = judge(&s, &doc);
        let status = |id: &str| out.iter().find(|o| o.check_id == id).unwrap().status;
        assert_eq!(status("a"), CheckStatus::Fail, "{out:?}");
        assert_eq!(status("b"), CheckStatus::Fail, "{out:?}");
        assert_eq!(status("c"), CheckStatus::Fail, "{out:?}");
        assert_eq!(status("e"), CheckStatus::Fail, "{out:?}");
        // Where toolcert recorded a not-made observation, it still decides.
        assert_eq!(status("d"), CheckStatus::Blocked, "{out:?}");
        assert_eq!(status("f"), CheckStatus::Error, "{out:?}");
    }

    #[test]
    fn an_unobserved_comparison_blocks_and_a_broken_expectation_is_an_error() {
        let s = scenario(json!([
            {"id": "a", "row": "HOOKS-AUTH-1", "says": "same run", "at": "/steps/x/runId", "expect": {"equalsAt": "/steps/y/runId"}},
            {"id": "b", "row": "HOOKS-AUTH-3", "says": "named", "at": "/steps/x/runId", "expect": {"equals": "{{vars.missing}}"}}
        ]));
        let doc = json!({"steps": {"x": {"runId": "r"}, "y": {}}, "vars": {}});
        let out = judge(&s, &doc);
        assert_eq!(out[0].status, CheckStatus::Blocked, "{out:?}");
        assert_eq!(out[1].status, CheckStatus::Error, "{out:?}");
    }

    #[test]
    fn evidence_is_inferred_from_what_a_check_reads() {
        let s = scenario(json!([
            {"id": "a", "row": "HOOKS-AUTH-1", "says": "s", "at": "/receivers/r/count", "expect": {"equals": 0}},
            {"id": "b", "row": "HOOKS-AUTH-1", "says": "s", "at": "/steps/x/status", "expect": {"equals": 403}},
            {"id": "c", "row": "HOOKS-AUTH-1", "says": "s", "at": "/steps/x/delivered", "expect": {"equals": 1}, "evidence": "self-report"}
        ]));
        let out = judge(&s, &json!({}));
        let levels: Vec<Evidence> = out.iter().map(|o| o.evidence).collect();
        assert_eq!(
            levels,
            vec![Evidence::Double, Evidence::Wire, Evidence::SelfReport]
        );
    }

    /// IDEM-L1-4 over a same-key burst (`idem.l1-burst-idempotent`): two runs for one key
    /// fail whatever the retry timing; on v2 a 409 carrying timing in `details` fails and one
    /// without `Retry-After` fails a check that only warns (a SHOULD); v1 puts its timing in
    /// `details.retryAfter` and is held to neither.
    #[test]
    fn in_flight_timing_and_duplicates_are_judged_per_major() {
        let suite = Suite::embedded().unwrap();
        let scenario = suite
            .scenarios
            .iter()
            .find(|s| s.id == "idem.l1-burst-idempotent")
            .expect("the scenario is in the suite");
        let created = |run: &str| json!({"status": 201, "headers": {}, "body": {"runId": run}});
        let busy = |headers: Value, details: Value| {
            json!({"status": 409, "headers": headers,
                   "body": {"error": "idempotency_in_flight", "message": "in flight", "details": details}})
        };
        let doc = |items: Vec<Value>| {
            let statuses: Vec<Value> = items.iter().map(|i| i["status"].clone()).collect();
            json!({"steps": {
                "dupes": {"count": items.len(), "statuses": statuses, "items": items},
                "after": {"status": 201, "headers": {"openwop-idempotent-replay": "true"}, "body": {"runId": "r1"}}
            }})
        };
        let status = |doc: &Value, major: u8, id: &str| {
            let out = evaluate(&suite, scenario, doc, Some(major));
            let o = out.iter().find(|o| o.check_id == id).unwrap().clone();
            (o.status, o.warn_unless_strict.is_some())
        };
        let timed = doc(vec![
            created("r1"),
            busy(json!({}), json!({"retryAfter": 1})),
        ]);
        assert_eq!(
            status(&timed, 2, "no-details-timing"),
            (CheckStatus::Fail, false)
        );
        assert_eq!(status(&timed, 2, "retry-after"), (CheckStatus::Fail, true));
        assert_eq!(
            status(&timed, 1, "no-details-timing").0,
            CheckStatus::Inapplicable
        );
        assert_eq!(
            status(&timed, 1, "retry-after").0,
            CheckStatus::Inapplicable
        );
        assert_eq!(status(&timed, 1, "in-flight-envelope").0, CheckStatus::Pass);
        let clean = doc(vec![
            created("r1"),
            busy(json!({"retry-after": "1"}), json!({})),
            created("r1"),
        ]);
        for id in [
            "one-run",
            "answered",
            "in-flight-envelope",
            "no-details-timing",
            "retry-after",
        ] {
            assert_eq!(status(&clean, 2, id).0, CheckStatus::Pass, "{id}");
        }
        let duplicated = doc(vec![created("r1"), created("r2")]);
        assert_eq!(status(&duplicated, 1, "one-run").0, CheckStatus::Fail);
        assert_eq!(status(&duplicated, 2, "one-run").0, CheckStatus::Fail);
        let refused = doc(vec![json!({"status": 401, "headers": {}, "body": {}})]);
        assert_eq!(status(&refused, 1, "one-run").0, CheckStatus::Blocked);
    }

    #[test]
    fn rules_of_another_wire_major_are_inapplicable() {
        let s: Scenario = serde_json::from_value(json!({
            "id": "t.t", "title": "t", "rows": ["IDEM-L1-8", "IDEM-L1-2"], "gate": null, "kills": [], "steps": [],
            "checks": [
                {"id": "a", "row": "IDEM-L1-8", "says": "s", "at": "/x", "expect": {"present": true}},
                {"id": "b", "row": "IDEM-L1-2", "says": "s", "at": "/x", "expect": {"present": true}, "wire": [1]}
            ]
        }))
        .unwrap();
        let suite = Suite::embedded().unwrap();
        let doc = json!({"x": 1});
        let v1 = evaluate(&suite, &s, &doc, Some(1));
        assert_eq!(v1[0].status, CheckStatus::Inapplicable, "{v1:?}");
        assert_eq!(v1[1].status, CheckStatus::Pass);
        let v2 = evaluate(&suite, &s, &doc, Some(2));
        assert_eq!(v2[0].status, CheckStatus::Pass);
        assert_eq!(v2[1].status, CheckStatus::Inapplicable);
    }
}
