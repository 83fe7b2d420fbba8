//! Loading: parse strictly, validate against schemas, deserialize, cross-check references.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;

use super::{Registry, Scenario, SchemaSet, Step, Suite, SuiteError};
use crate::canonical::parse_strict;

pub(crate) const REGISTRY_FILE: &str = "scenarios/requirements.json";
pub(crate) const REGISTRY_SCHEMA: &str = "schemas/requirements.schema.json";
pub(crate) const SCENARIO_SCHEMA: &str = "schemas/scenario.schema.json";

/// Load from `DIR/scenarios` and `DIR/schemas`.
pub(crate) fn from_dir(dir: &Path) -> Result<Suite, SuiteError> {
    let mut files = Vec::new();
    for sub in ["scenarios", "schemas"] {
        walk(&dir.join(sub), dir, &mut files)?;
    }
    if files.is_empty() {
        return Err(SuiteError::Missing(format!(
            "scenarios/ or schemas/ under {} (pass the root of a toolcert checkout to --suite)",
            dir.display()
        )));
    }
    from_files(files)
}

fn walk(dir: &Path, root: &Path, out: &mut Vec<(String, String)>) -> Result<(), SuiteError> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    let mut paths: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            walk(&path, root, out)?;
        } else if path.extension().is_some_and(|e| e == "json") {
            let rel = path
                .strip_prefix(root)
                .unwrap_or(&path)
                .to_string_lossy()
                .replace('\\', "/");
            let text = std::fs::read_to_string(&path).map_err(|source| SuiteError::Io {
                file: rel.clone(),
                source,
            })?;
            out.push((rel, text));
        }
    }
    Ok(())
}

fn parse(file: &str, text: &str) -> Result<Value, SuiteError> {
    parse_strict(text).map_err(|e| SuiteError::Json {
        file: file.to_string(),
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    })
}

fn reference(file: &str, pointer: String, message: String) -> SuiteError {
    SuiteError::Reference {
        file: file.to_string(),
        pointer,
        message,
    }
}

/// Load from (relative path, contents) pairs.
pub(crate) fn from_files(files: Vec<(String, String)>) -> Result<Suite, SuiteError> {
    let mut schemas = SchemaSet::default();
    let mut data = BTreeMap::new();
    for (path, text) in files {
        let value = parse(&path, &text)?;
        if path.starts_with("schemas/") {
            schemas.insert(&path, &value)?;
        } else {
            data.insert(path, value);
        }
    }
    let registry_value = data
        .remove(REGISTRY_FILE)
        .ok_or_else(|| SuiteError::Missing(REGISTRY_FILE.into()))?;
    schemas.validate(REGISTRY_SCHEMA, REGISTRY_FILE, &registry_value)?;
    let registry: Registry = serde_json::from_value(registry_value).map_err(|e| {
        reference(
            REGISTRY_FILE,
            String::new(),
            format!("does not deserialize: {e}"),
        )
    })?;
    check_registry(&registry)?;

    let known_mutants: BTreeSet<&str> = reference_host::mutants::ALL
        .iter()
        .map(|m| m.name)
        .collect();
    let mut scenarios: Vec<Scenario> = Vec::new();
    for (file, value) in data {
        schemas.validate(SCENARIO_SCHEMA, &file, &value)?;
        let mut scenario: Scenario = serde_json::from_value(value)
            .map_err(|e| reference(&file, String::new(), format!("does not deserialize: {e}")))?;
        scenario.file = file.clone();
        check_scenario(&scenario, &registry, &known_mutants)?;
        if let Some(other) = scenarios.iter().find(|s| s.id == scenario.id) {
            return Err(reference(
                &file,
                "/id".into(),
                format!(
                    "scenario id \"{}\" is already used by {}",
                    scenario.id, other.file
                ),
            ));
        }
        scenarios.push(scenario);
    }
    scenarios.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(Suite {
        registry,
        scenarios,
        schemas,
    })
}

fn check_registry(registry: &Registry) -> Result<(), SuiteError> {
    let families: BTreeSet<&str> = registry.families.iter().map(|f| f.id.as_str()).collect();
    let mut seen = BTreeSet::new();
    for (i, row) in registry.rows.iter().enumerate() {
        if !seen.insert(row.id.as_str()) {
            return Err(reference(
                REGISTRY_FILE,
                format!("/rows/{i}/id"),
                format!("row id \"{}\" appears twice; ids must be unique", row.id),
            ));
        }
        if !families.contains(row.family.as_str()) {
            return Err(reference(
                REGISTRY_FILE,
                format!("/rows/{i}/family"),
                format!(
                    "row {} names unknown family \"{}\"; add it to /families",
                    row.id, row.family
                ),
            ));
        }
    }
    Ok(())
}

fn check_scenario(
    s: &Scenario,
    registry: &Registry,
    known_mutants: &BTreeSet<&str>,
) -> Result<(), SuiteError> {
    let file = s.file.as_str();
    for (i, row) in s.rows.iter().enumerate() {
        let Some(r) = registry.row(row) else {
            return Err(reference(
                file,
                format!("/rows/{i}"),
                format!(
                    "unknown requirement row \"{row}\"; rows are listed in scenarios/requirements.json"
                ),
            ));
        };
        if let Some(reason) = &r.unwitnessable {
            return Err(reference(
                file,
                format!("/rows/{i}"),
                format!(
                    "row \"{row}\" is marked unwitnessable in the registry ({reason}); a scenario cannot witness it"
                ),
            ));
        }
    }
    for (i, mutant) in s.kills.iter().enumerate() {
        if !known_mutants.contains(mutant.as_str()) {
            return Err(reference(
                file,
                format!("/kills/{i}"),
                format!(
                    "unknown mutant \"{mutant}\"; `toolcert mutants` lists the reference host's mutants"
                ),
            ));
        }
    }
    let mut names = BTreeSet::new();
    for (i, step) in s.steps.iter().enumerate() {
        if !names.insert(step.name()) {
            return Err(reference(
                file,
                format!("/steps/{i}/name"),
                format!(
                    "step name \"{}\" is used twice; observations are keyed by name",
                    step.name()
                ),
            ));
        }
        if let Step::Provider(p) = step {
            // The provider's own validator gives the precise pointer inside the rounds.
            let script = serde_json::json!({"model": "load-check", "rounds": p.rounds});
            if let Err(e) = mock_provider::Script::from_json(&script) {
                return Err(reference(
                    file,
                    format!("/steps/{i}{}", e.pointer),
                    format!("not a valid provider round: {}", e.message),
                ));
            }
        }
        if let Step::Foreach(f) = step
            && !(1..=200).contains(&f.count)
        {
            return Err(reference(
                file,
                format!("/steps/{i}/count"),
                "foreach count must be 1..=200".into(),
            ));
        }
        if let Step::Burst(b) = step
            && !(2..=64).contains(&b.count)
        {
            return Err(reference(
                file,
                format!("/steps/{i}/count"),
                "burst count must be 2..=64".into(),
            ));
        }
        // A kill point or a release must name a double made by an earlier step.
        let earlier = |kind: &str, name: &str| {
            s.steps[..i].iter().any(|e| match e {
                Step::Receiver(r) => kind == "receiver" && r.name == name,
                Step::Provider(p) => kind == "provider" && p.name == name,
                _ => false,
            })
        };
        let refers: Vec<(&str, &str, &str)> = match step {
            Step::Release(r) => vec![("receiver", r.receiver.as_str(), "receiver")],
            Step::Wait(w) => w
                .until
                .receiver
                .iter()
                .map(|n| ("receiver", n.as_str(), "until/receiver"))
                .chain(
                    w.until
                        .provider
                        .iter()
                        .map(|n| ("provider", n.as_str(), "until/provider")),
                )
                .collect(),
            _ => Vec::new(),
        };
        for (kind, name, at) in refers {
            if !earlier(kind, name) {
                return Err(reference(
                    file,
                    format!("/steps/{i}/{at}"),
                    format!("no earlier {kind} step is named \"{name}\""),
                ));
            }
        }
        if let Step::Repeat(r) = step
            && !(1..=200).contains(&r.max)
        {
            return Err(reference(
                file,
                format!("/steps/{i}/max"),
                "repeat max must be 1..=200".into(),
            ));
        }
    }
    let mut check_ids = BTreeSet::new();
    for (i, check) in s.checks.iter().enumerate() {
        if !check_ids.insert(check.id.as_str()) {
            return Err(reference(
                file,
                format!("/checks/{i}/id"),
                format!("check id \"{}\" is used twice in this scenario", check.id),
            ));
        }
        if !s.rows.contains(&check.row) {
            return Err(reference(
                file,
                format!("/checks/{i}/row"),
                format!(
                    "check names row \"{}\", which is not in this scenario's /rows",
                    check.row
                ),
            ));
        }
    }
    for (i, check) in s.checks.iter().enumerate() {
        for (j, req) in check.requires.iter().enumerate() {
            if !check_ids.contains(req.as_str()) || req == &check.id {
                return Err(reference(
                    file,
                    format!("/checks/{i}/requires/{j}"),
                    format!(
                        "requires unknown check \"{req}\"; name another check of this scenario"
                    ),
                ));
            }
        }
    }
    for (i, row) in s.rows.iter().enumerate() {
        if !s.checks.iter().any(|c| &c.row == row) {
            return Err(reference(
                file,
                format!("/rows/{i}"),
                format!(
                    "row \"{row}\" has no check in this scenario; a row without a check would never be observed"
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn embedded_with(file: &str, text: &str) -> Result<Suite, SuiteError> {
        let mut files: Vec<(String, String)> = crate::suite::embedded::FILES
            .iter()
            .map(|(p, c)| (p.to_string(), c.to_string()))
            .collect();
        files.push((file.to_string(), text.to_string()));
        from_files(files)
    }

    const MINIMAL: &str = r#"{"id": "x.y", "title": "t", "rows": ["DISC-7"], "gate": null, "kills": [],
        "steps": [], "checks": [{"id": "c", "row": "DISC-7", "says": "s", "at": "/discovery", "expect": {"present": true}}]}"#;

    #[test]
    fn the_embedded_suite_loads() {
        let suite = Suite::embedded().unwrap();
        assert!(!suite.scenarios.is_empty());
        assert!(suite.registry.rows.len() > 100);
    }

    #[test]
    fn a_minimal_scenario_loads() {
        embedded_with("scenarios/test/min.json", MINIMAL).unwrap();
    }

    #[test]
    fn unknown_row_is_an_error_naming_file_and_pointer() {
        let text = MINIMAL.replacen(
            r#""rows": ["DISC-7"]"#,
            r#""rows": ["DISC-7", "NOPE-1"]"#,
            1,
        );
        let err = embedded_with("scenarios/test/bad.json", &text)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("scenarios/test/bad.json")
                && err.contains("\"/rows/1\"")
                && err.contains("NOPE-1"),
            "{err}"
        );
    }

    #[test]
    fn unknown_mutant_is_an_error() {
        let text = MINIMAL.replacen(r#""kills": []"#, r#""kills": ["no-such-mutant"]"#, 1);
        let err = embedded_with("scenarios/test/bad.json", &text)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("/kills/0") && err.contains("no-such-mutant"),
            "{err}"
        );
    }

    #[test]
    fn schema_violation_names_pointer_and_expectation() {
        let text = MINIMAL.replacen(
            r#"{"present": true}"#,
            r#"{"equals": 1, "absent": true}"#,
            1,
        );
        let err = embedded_with("scenarios/test/bad.json", &text)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("scenarios/test/bad.json") && err.contains("/checks/0/expect"),
            "{err}"
        );
        let text = MINIMAL.replacen(
            r#""steps": []"#,
            r#""steps": [{"step": "seam", "name": "a", "seam": "x", "body": {}}]"#,
            1,
        );
        let err = embedded_with("scenarios/test/bad.json", &text)
            .unwrap_err()
            .to_string();
        assert!(err.contains("/steps/0") && err.contains("role"), "{err}");
    }

    #[test]
    fn duplicate_keys_and_bad_json_name_the_line() {
        let err = embedded_with("scenarios/test/dup.json", "{\"id\": 1,\n \"id\": 2}")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("scenarios/test/dup.json:2:") && err.contains("duplicate"),
            "{err}"
        );
    }

    #[test]
    fn a_malformed_provider_script_names_the_pointer_inside_the_rounds() {
        let text = MINIMAL.replacen(
            r#""steps": []"#,
            r#""steps": [{"step": "provider", "name": "m", "rounds": [{"text": "ok"}, {"toolCalls": [{"arguments": {}}]}]}]"#,
            1,
        );
        let err = embedded_with("scenarios/test/bad.json", &text)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("scenarios/test/bad.json")
                && err.contains("/steps/0/rounds/1/toolCalls/0"),
            "{err}"
        );
    }

    #[test]
    fn a_row_without_a_check_is_an_error() {
        let text = MINIMAL.replacen(
            r#""rows": ["DISC-7"]"#,
            r#""rows": ["DISC-7", "DISC-6"]"#,
            1,
        );
        let err = embedded_with("scenarios/test/bad.json", &text)
            .unwrap_err()
            .to_string();
        assert!(err.contains("DISC-6") && err.contains("no check"), "{err}");
    }
}
