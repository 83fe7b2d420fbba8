//! Data mutants (`scenarios/mutants/<name>.json`, [`crate::suite::mutant`]): taken out of the
//! suite's files before the scenarios, validated against `schemas/mutant.schema.json`, their
//! conditions written out in long form and their matchers checked by deserializing them.

use std::collections::BTreeMap;

use serde_json::Value;

use super::shorthand::write_out_conditions;
use crate::suite::mutant::MUTANTS_DIR;
use crate::suite::{DataMutant, SchemaSet, SuiteError};

/// The data mutant schema.
pub(crate) const MUTANT_SCHEMA: &str = "schemas/mutant.schema.json";

/// Take the data mutant files out of `data` and load each; the error names the file, the
/// pointer and the fix.
pub(crate) fn take(
    data: &mut BTreeMap<String, Value>,
    schemas: &SchemaSet,
) -> Result<BTreeMap<String, DataMutant>, SuiteError> {
    let files: Vec<String> = data
        .keys()
        .filter(|k| k.starts_with(MUTANTS_DIR))
        .cloned()
        .collect();
    let mut out = BTreeMap::new();
    for file in files {
        let Some(doc) = data.remove(&file) else {
            continue;
        };
        let mutant = load_one(&file, doc, schemas)?;
        out.insert(mutant.name.clone(), mutant);
    }
    Ok(out)
}

fn reference(file: &str, pointer: impl Into<String>, message: impl Into<String>) -> SuiteError {
    SuiteError::Reference {
        file: file.to_string(),
        pointer: pointer.into(),
        message: message.into(),
    }
}

fn load_one(file: &str, mut doc: Value, schemas: &SchemaSet) -> Result<DataMutant, SuiteError> {
    let name = file
        .strip_prefix(MUTANTS_DIR)
        .and_then(|rest| rest.strip_suffix(".json"))
        .unwrap_or_default()
        .to_string();
    let well_named = !name.is_empty()
        && name.split('-').all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        });
    if !well_named {
        return Err(reference(
            file,
            "",
            format!(
                "a data mutant is named by its file: {MUTANTS_DIR}<name>.json, the name lowercase words and digits joined by '-' (e.g. {MUTANTS_DIR}tools-list-unsorted.json); rename the file"
            ),
        ));
    }
    schemas.validate(MUTANT_SCHEMA, file, &doc)?;
    if let Some(Value::Array(rewrites)) = doc.get_mut("rewrites") {
        for (i, rewrite) in rewrites.iter_mut().enumerate() {
            if let Some(when) = rewrite.get_mut("when") {
                write_out_conditions(file, when, &format!("/rewrites/{i}/when"))?;
            }
            if let Some(only) = rewrite.get_mut("events").and_then(|e| e.get_mut("where")) {
                write_out_conditions(file, only, &format!("/rewrites/{i}/events/where"))?;
            }
        }
    }
    let mut mutant: DataMutant = serde_json::from_value(doc)
        .map_err(|e| reference(file, "", format!("does not deserialize: {e}")))?;
    for (i, rewrite) in mutant.rewrites.iter().enumerate() {
        let pointers = rewrite
            .response
            .iter()
            .flat_map(|r| r.set.iter().map(|s| &s.at).chain(&r.remove))
            .chain(
                rewrite
                    .events
                    .iter()
                    .flat_map(|e| e.set.iter().map(|s| &s.at).chain(&e.remove)),
            );
        for at in pointers {
            if at.is_empty() {
                return Err(reference(
                    file,
                    format!("/rewrites/{i}"),
                    "a set or remove at \"\" (the whole body) changes nothing a check can name; write the members it changes",
                ));
            }
        }
    }
    mutant.name = name;
    mutant.file = file.to_string();
    Ok(mutant)
}

#[cfg(test)]
mod tests {
    use crate::loader::load::embedded_with_file;
    use crate::suite::mutant::path_matches;

    #[test]
    fn a_data_mutant_loads_with_inline_matchers() {
        let suite = embedded_with_file(
            "scenarios/mutants/tools-gone.json",
            r#"{"breaks": "the catalog answers 404", "rewrites": [
                {"method": "GET", "path": "/**/tools", "when": [{"at": "/response/status", "equals": 200}],
                 "response": {"status": 404, "headers": {"x-mutant": "tools-gone"}, "remove": ["/0"]}},
                {"path": "/**/runs/*/events", "events": {"where": [{"at": "/type", "equals": "run.completed"}], "drop": true}}
            ]}"#,
        )
        .expect("loads");
        let m = &suite.data_mutants["tools-gone"];
        assert_eq!(m.file, "scenarios/mutants/tools-gone.json");
        assert_eq!(m.rewrites.len(), 2);
        assert_eq!(m.rewrites[0].when.len(), 1);
        assert!(
            m.rewrites[1]
                .events
                .as_ref()
                .is_some_and(|e| e.drop && e.within == "/events")
        );
        assert!(path_matches(&m.rewrites[0].path, "/v1/tools"));
    }

    #[test]
    fn bad_data_mutants_name_the_file_pointer_and_fix() {
        let cases = [
            (
                "scenarios/mutants/Bad_Name.json",
                r#"{"breaks": "x", "rewrites": [{"path": "/", "response": {"status": 500}}]}"#,
                "rename the file",
            ),
            (
                "scenarios/mutants/no-edit.json",
                r#"{"breaks": "x", "rewrites": [{"path": "/"}]}"#,
                "/rewrites/0",
            ),
            (
                "scenarios/mutants/two-matchers.json",
                r#"{"breaks": "x", "rewrites": [{"path": "/", "when": [{"at": "/response/status", "equals": 1, "present": true}], "response": {"status": 500}}]}"#,
                "/rewrites/0/when/0",
            ),
            (
                "scenarios/mutants/bad-matcher.json",
                r#"{"breaks": "x", "rewrites": [{"path": "/", "when": [{"at": "/response/status", "equalz": 1}], "response": {"status": 500}}]}"#,
                "does not deserialize",
            ),
            (
                "scenarios/mutants/whole-body.json",
                r#"{"breaks": "x", "rewrites": [{"path": "/", "response": {"remove": [""]}}]}"#,
                "the whole body",
            ),
            (
                "scenarios/mutants/drop-and-set.json",
                r#"{"breaks": "x", "rewrites": [{"path": "/", "events": {"drop": true, "remove": ["/a"]}}]}"#,
                "/rewrites/0/events",
            ),
        ];
        for (file, text, says) in cases {
            let err = embedded_with_file(file, text).expect_err(file).to_string();
            assert!(err.contains(file), "{file}: {err}");
            assert!(err.contains(says), "{file}: expected {says:?} in {err}");
        }
    }
}
