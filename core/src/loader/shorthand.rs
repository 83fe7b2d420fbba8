//! The short forms a scenario file may use, written out in full before validation.
//!
//! - A check or condition holds its matcher inline, beside `at`:
//!   `{"at": "/steps/call/status", "equals": 200}` is `{"at": …, "expect": {"equals": 200}}`.
//!   Inside matchers too (`some`, `none`, `each` and its `where`, `asJson`, `ifPresent`,
//!   `not`, `length`, `entropyBits`) and in a `repeat` step's `until`.
//! - `rows`, when absent, is the scenario's `row` then every row its checks name or guard, in
//!   the order written.
//! - `gate`, when absent, is `null` (the scenario applies to every host).
//!
//! Keyed checks (`checks` as an object) are read by [`super::keyed`] while the file is parsed.
//! The long forms stay valid, so what runs, validates and is reported is one form.

use serde_json::{Map, Value};
use toolcert_base::canonical::pointer_token;

use crate::suite::SuiteError;

/// Members of a check other than its matcher.
const CHECK_MEMBERS: &[&str] = &[
    "id",
    "row",
    "says",
    "at",
    "expect",
    "control",
    "requires",
    "guards",
    "evidence",
    "wire",
    "warnUnlessStrict",
];
/// Members of a condition (`some`/`none` items, `asJson`, `where`, `until`) other than its matcher.
const CONDITION_MEMBERS: &[&str] = &["at", "expect"];
/// Members of an `each` other than its matcher.
const EACH_MEMBERS: &[&str] = &["at", "expect", "where"];

/// Write `value` (one expanded scenario, fragments and params already applied) in its long
/// form. Errors name the file, the pointer and the fix.
pub(crate) fn write_out(file: &str, value: &mut Value) -> Result<(), SuiteError> {
    let Value::Object(scenario) = value else {
        return Ok(());
    };
    let fail = |(pointer, message): (String, String)| SuiteError::Reference {
        file: file.to_string(),
        pointer,
        message,
    };
    if let Some(Value::Array(checks)) = scenario.get_mut("checks") {
        for (i, check) in checks.iter_mut().enumerate() {
            if let Value::Object(check) = check {
                inline_matcher(check, CHECK_MEMBERS, &format!("/checks/{i}")).map_err(fail)?;
            }
        }
    }
    if let Some(Value::Array(steps)) = scenario.get_mut("steps") {
        for (i, step) in steps.iter_mut().enumerate() {
            if step.get("step").and_then(Value::as_str) != Some("repeat") {
                continue;
            }
            if let Some(Value::Object(until)) = step.get_mut("until") {
                inline_matcher(until, CONDITION_MEMBERS, &format!("/steps/{i}/until"))
                    .map_err(fail)?;
            }
        }
    }
    if !scenario.contains_key("rows") {
        let rows = derived_rows(scenario);
        scenario.insert("rows".into(), Value::Array(rows));
    }
    scenario.entry("gate").or_insert(Value::Null);
    Ok(())
}

/// The scenario's `row`, then each check's `row` and `guards`, first mention first.
fn derived_rows(scenario: &Map<String, Value>) -> Vec<Value> {
    let mut rows: Vec<Value> = Vec::new();
    let mut add = |row: &Value| {
        if row.is_string() && !rows.contains(row) {
            rows.push(row.clone());
        }
    };
    if let Some(row) = scenario.get("row") {
        add(row);
    }
    for check in scenario
        .get("checks")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(row) = check.get("row") {
            add(row);
        }
        for row in check
            .get("guards")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            add(row);
        }
    }
    rows
}

/// Write out a list of conditions (a data mutant's `when` or `where`) in place: each holds
/// its matcher inline or under `expect`, as a scenario's conditions do.
pub(crate) fn write_out_conditions(
    file: &str,
    conditions: &mut Value,
    pointer: &str,
) -> Result<(), SuiteError> {
    let Value::Array(items) = conditions else {
        return Ok(());
    };
    for (i, item) in items.iter_mut().enumerate() {
        if let Value::Object(condition) = item {
            inline_matcher(condition, CONDITION_MEMBERS, &format!("{pointer}/{i}")).map_err(
                |(pointer, message)| SuiteError::Reference {
                    file: file.to_string(),
                    pointer,
                    message,
                },
            )?;
        }
    }
    Ok(())
}

/// Move the one member of `object` that is not in `members` under `expect`, then do the same
/// inside that matcher.
fn inline_matcher(
    object: &mut Map<String, Value>,
    members: &[&str],
    pointer: &str,
) -> Result<(), (String, String)> {
    let inline: Vec<String> = object
        .keys()
        .filter(|k| !members.contains(&k.as_str()))
        .cloned()
        .collect();
    match (object.contains_key("expect"), inline.as_slice()) {
        (true, []) => {}
        (true, [other, ..]) => {
            return Err((
                format!("{pointer}/{}", pointer_token(other)),
                format!(
                    "\"{other}\" beside \"expect\": a check holds one matcher, written inline (\"{other}\": …) or under \"expect\"; remove one"
                ),
            ));
        }
        (false, [one]) => {
            let (key, matcher) = object
                .remove_entry(one.as_str())
                .unwrap_or_else(|| (one.clone(), Value::Null));
            object.insert(
                "expect".into(),
                Value::Object(Map::from_iter([(key, matcher)])),
            );
        }
        (false, []) => {
            return Err((
                pointer.to_string(),
                "no matcher: add one beside \"at\", e.g. \"equals\": 200 (the matchers are listed in schemas/scenario.schema.json, $defs/matcher)".into(),
            ));
        }
        (false, several) => {
            return Err((
                pointer.to_string(),
                format!(
                    "more than one matcher ({}); a check or condition holds exactly one: split it, or combine them with \"some\"",
                    several
                        .iter()
                        .map(|k| format!("\"{k}\""))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
    }
    if let Some(Value::Object(matcher)) = object.get_mut("expect") {
        inside_matcher(matcher, &format!("{pointer}/expect"))?;
    }
    if let Some(Value::Object(only)) = object.get_mut("where") {
        inline_matcher(only, CONDITION_MEMBERS, &format!("{pointer}/where"))?;
    }
    Ok(())
}

/// The conditions and matchers a matcher holds.
fn inside_matcher(matcher: &mut Map<String, Value>, pointer: &str) -> Result<(), (String, String)> {
    for (key, value) in matcher.iter_mut() {
        let at = format!("{pointer}/{key}");
        match (key.as_str(), value) {
            ("some" | "none", Value::Array(conditions)) => {
                for (i, condition) in conditions.iter_mut().enumerate() {
                    if let Value::Object(condition) = condition {
                        inline_matcher(condition, CONDITION_MEMBERS, &format!("{at}/{i}"))?;
                    }
                }
            }
            ("each", Value::Object(each)) => inline_matcher(each, EACH_MEMBERS, &at)?,
            ("asJson", Value::Object(condition)) => {
                inline_matcher(condition, CONDITION_MEMBERS, &at)?;
            }
            ("ifPresent" | "not" | "length" | "entropyBits", Value::Object(inner)) => {
                inside_matcher(inner, &at)?;
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn long(mut v: Value) -> Result<Value, String> {
        write_out("f.json", &mut v).map_err(|e| e.to_string())?;
        Ok(v)
    }

    #[test]
    fn inline_matchers_are_written_under_expect_at_every_depth() {
        let short = json!({"row": "R-1", "checks": [{
            "id": "c", "says": "s", "at": "/a",
            "some": [{"at": "/x", "equals": 1}, {"at": "/y", "expect": {"absent": true}}]
        }, {
            "id": "d", "says": "s", "at": "/b",
            "each": {"at": "/v", "ifPresent": {"asJson": {"at": "/k", "matches": "^a"}},
                     "where": {"at": "/w", "equals": "mine"}}
        }], "steps": [{"step": "repeat", "until": {"at": "/status", "equals": 200}}]});
        let v = long(short).unwrap();
        assert_eq!(
            v["checks"][0]["expect"],
            json!({"some": [{"at": "/x", "expect": {"equals": 1}}, {"at": "/y", "expect": {"absent": true}}]})
        );
        assert_eq!(
            v["checks"][1]["expect"],
            json!({"each": {"at": "/v",
                "expect": {"ifPresent": {"asJson": {"at": "/k", "expect": {"matches": "^a"}}}},
                "where": {"at": "/w", "expect": {"equals": "mine"}}}})
        );
        assert_eq!(
            v["steps"][0]["until"],
            json!({"at": "/status", "expect": {"equals": 200}})
        );
    }

    #[test]
    fn rows_and_gate_default_from_what_the_file_says() {
        let v = long(json!({"row": "R-1", "checks": [
            {"id": "a", "says": "s", "at": "/a", "equals": 1, "control": true, "guards": ["R-1", "R-3"]},
            {"id": "b", "row": "R-2", "says": "s", "at": "/a", "equals": 1},
            {"id": "c", "says": "s", "at": "/a", "equals": 1}
        ]}))
        .unwrap();
        assert_eq!(v["rows"], json!(["R-1", "R-3", "R-2"]));
        assert_eq!(v["gate"], Value::Null);
        // Written rows and gate are kept as written.
        let v = long(json!({"row": "R-1", "rows": ["R-1", "R-9"], "gate": "mcp", "checks": []}))
            .unwrap();
        assert_eq!(v["rows"], json!(["R-1", "R-9"]));
        assert_eq!(v["gate"], json!("mcp"));
    }

    #[test]
    fn a_check_holds_exactly_one_matcher() {
        let err = |c: Value| long(json!({"checks": [c]})).unwrap_err();
        let both =
            err(json!({"id": "c", "says": "s", "at": "/a", "equals": 1, "expect": {"equals": 1}}));
        assert!(
            both.contains("/checks/0/equals") && both.contains("remove one"),
            "{both}"
        );
        let none = err(json!({"id": "c", "says": "s", "at": "/a"}));
        assert!(
            none.contains("/checks/0") && none.contains("no matcher"),
            "{none}"
        );
        let two = err(json!({"id": "c", "says": "s", "at": "/a", "equals": 1, "absent": true}));
        assert!(
            two.contains("more than one matcher") && two.contains("\"absent\", \"equals\""),
            "{two}"
        );
        let nested = err(json!({"id": "c", "says": "s", "at": "/a", "some": [{"at": "/x"}]}));
        assert!(nested.contains("/checks/0/expect/some/0"), "{nested}");
    }
}
