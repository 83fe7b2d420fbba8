//! The scenario vocabulary has one list: every step kind and every matcher the code knows is in
//! `schemas/scenario.schema.json` and in the authoring guide, and nothing is in either that the
//! code does not know. A step kind or matcher added on one side only fails here, naming what is
//! missing where.

use std::collections::BTreeSet;

use toolcert::suite::{Matcher, Step};

const SCHEMA: &str = include_str!("../schemas/scenario.schema.json");
const STEPS_DOC: &str = include_str!("../docs/authoring/steps.md");
const MATCHERS_DOC: &str = include_str!("../docs/authoring/matchers.md");

/// The variant names serde accepts, read from the error it gives for a name it does not
/// (`unknown variant `x`, expected one of `a`, `b`, …`): the code's own list, not a copy.
fn variants_from_error(error: &str) -> BTreeSet<String> {
    let (_, list) = error
        .split_once("expected one of ")
        .unwrap_or_else(|| panic!("serde's error lists no variants: {error}"));
    list.split(", ")
        .map(|name| {
            name.trim()
                .trim_start_matches("or ")
                .trim_matches('`')
                .split('`')
                .next()
                .unwrap_or_default()
                .to_owned()
        })
        .filter(|name| !name.is_empty())
        .collect()
}

fn schema() -> serde_json::Value {
    serde_json::from_str(SCHEMA).expect("the scenario schema is JSON")
}

fn code_step_kinds() -> BTreeSet<String> {
    let error = serde_json::from_value::<Step>(serde_json::json!({"step": "no-such-kind"}))
        .expect_err("an unknown step kind is refused");
    variants_from_error(&error.to_string())
}

fn code_matchers() -> BTreeSet<String> {
    let error = serde_json::from_value::<Matcher>(serde_json::json!({"noSuchMatcher": true}))
        .expect_err("an unknown matcher is refused");
    variants_from_error(&error.to_string())
}

fn names(value: &serde_json::Value) -> BTreeSet<String> {
    match value {
        serde_json::Value::Array(items) => items
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        serde_json::Value::Object(members) => members.keys().cloned().collect(),
        _ => BTreeSet::new(),
    }
}

/// What `left` has that `right` lacks.
fn missing(left: &BTreeSet<String>, right: &BTreeSet<String>) -> Vec<String> {
    left.difference(right).cloned().collect()
}

#[test]
fn the_code_knows_a_fair_number_of_each() {
    // Guards the error parsing above: a serde message that changed shape would read as an
    // empty list and make the comparisons below vacuous.
    assert!(code_step_kinds().len() >= 10, "{:?}", code_step_kinds());
    assert!(code_matchers().len() >= 20, "{:?}", code_matchers());
    assert!(code_step_kinds().contains("burst"));
    assert!(code_matchers().contains("equals"));
}

#[test]
fn every_step_kind_is_in_the_schema_with_its_shape_and_in_the_guide() {
    let code = code_step_kinds();
    let schema = schema();
    let listed = names(&schema["$defs"]["step"]["properties"]["step"]["enum"]);
    assert!(
        missing(&code, &listed).is_empty() && missing(&listed, &code).is_empty(),
        "step kinds: in the code, not the schema's enum: {:?}; in the schema's enum, not the code: {:?}",
        missing(&code, &listed),
        missing(&listed, &code)
    );
    // Each kind's members are checked by its own branch of the schema.
    let shaped: BTreeSet<String> = schema["$defs"]["step"]["allOf"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|branch| branch["if"]["properties"]["step"]["const"].as_str())
        .map(str::to_owned)
        .collect();
    assert!(
        missing(&code, &shaped).is_empty(),
        "step kinds without an if/then branch in the schema's $defs/step: {:?}",
        missing(&code, &shaped)
    );
    let headed: BTreeSet<String> = STEPS_DOC
        .lines()
        .filter_map(|line| line.strip_prefix("## "))
        .map(|h| h.trim().to_owned())
        .collect();
    assert!(
        missing(&code, &headed).is_empty(),
        "step kinds with no `## kind` section in docs/authoring/steps.md: {:?}",
        missing(&code, &headed)
    );
}

#[test]
fn every_matcher_is_in_the_schema_both_ways_of_writing_it_and_in_the_guide() {
    let code = code_matchers();
    let schema = schema();
    let listed = names(&schema["$defs"]["matcher"]["properties"]);
    assert!(
        missing(&code, &listed).is_empty() && missing(&listed, &code).is_empty(),
        "matchers: in the code, not the schema's $defs/matcher: {:?}; in the schema, not the code: {:?}",
        missing(&code, &listed),
        missing(&listed, &code)
    );
    // A check may write its matcher inline beside `at`, so every matcher is a member there too.
    let mut inline = names(&schema["$defs"]["inlineMatcher"]["properties"]);
    inline.remove("expect");
    assert!(
        missing(&code, &inline).is_empty() && missing(&inline, &code).is_empty(),
        "matchers: in the code, not $defs/inlineMatcher: {:?}; in $defs/inlineMatcher, not the code: {:?}",
        missing(&code, &inline),
        missing(&inline, &code)
    );
    let undocumented: Vec<&String> = code
        .iter()
        .filter(|name| !MATCHERS_DOC.contains(&format!("`{name}:")))
        .collect();
    assert!(
        undocumented.is_empty(),
        "matchers docs/authoring/matchers.md does not describe (as `name: …`): {undocumented:?}"
    );
}
