//! A spec editor adds a row as data: a registry entry, a scenario and a data mutant, in a copy
//! of the suite, with no line of Rust and no rebuild. `toolcert matrix --suite DIR --mutant
//! NAME FILTER` runs the new scenario on the clean host and in the mutant's column, and the
//! mutant is killed by it; a mutant the scenario does not catch is reported as surviving, and exits 1.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::support::{scratch, tree};

/// Copy `scenarios/` and `schemas/` of this checkout into `dir`.
fn copy_suite(dir: &Path) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for sub in ["scenarios", "schemas"] {
        tree::copy_tree(&root.join(sub), &dir.join(sub));
    }
}

fn write(path: &Path, value: &Value) {
    std::fs::write(path, serde_json::to_string_pretty(value).unwrap()).unwrap();
}

/// A copy of the suite with one more row (CAT-90), its scenario, and the data mutant
/// `mutant` (its rewrites as given) that the scenario names in `kills`.
fn suite_with_new_row(dir: &Path, mutant: &str, rewrites: Value) {
    copy_suite(dir);
    let registry = dir.join("scenarios/requirements.json");
    let mut rows: Value =
        serde_json::from_str(&std::fs::read_to_string(&registry).unwrap()).unwrap();
    rows["rows"].as_array_mut().unwrap().push(json!({
        "id": "CAT-90",
        "basis": "accepted",
        "family": "CAT",
        "source": "a row a spec editor adds",
        "level": "MUST",
        "rule": "Every tool the catalog lists says what it does: its descriptor has a description.",
        "witness": "List the catalog as the actor and read each descriptor's description."
    }));
    write(&registry, &rows);
    write(
        &dir.join("scenarios/cat/listed-tools-described.json"),
        &json!({
            "title": "Every tool the catalog lists has a description",
            "row": "CAT-90",
            "kills": [mutant],
            "steps": [{"step": "catalog", "name": "list", "role": "actor"}],
            "checks": {
                "listed": {
                    "says": "the catalog lists at least one tool",
                    "at": "/steps/list/tools",
                    "length": {"atLeast": 1},
                    "control": true
                },
                "described": {
                    "says": "every listed tool has a description",
                    "at": "/steps/list/tools",
                    "each": {"at": "/description", "type": "string"}
                }
            }
        }),
    );
    std::fs::create_dir_all(dir.join("scenarios/mutants")).unwrap();
    write(
        &dir.join(format!("scenarios/mutants/{mutant}.json")),
        &json!({
            "breaks": "the catalog's first tool has no description",
            "rewrites": rewrites
        }),
    );
}

fn focused_matrix(dir: &Path, mutant: &str) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_toolcert"))
        .args(["matrix", "--suite"])
        .arg(dir)
        .args(["--mutant", mutant, "-q", "cat.listed-tools-described"])
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn a_new_row_s_data_mutant_is_killed_by_its_scenario() {
    let dir = tempfile_dir("killed");
    suite_with_new_row(
        &dir,
        "tools-undescribed",
        json!([{
            "method": "GET",
            "path": "/**/tools",
            "when": [{"at": "/response/status", "equals": 200}],
            "response": {"remove": ["/0/description"]}
        }]),
    );
    let (code, text) = focused_matrix(&dir, "tools-undescribed");
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("tools-undescribed: killed by cat.listed-tools-described; rows that fail or warn: CAT-90"),
        "{text}"
    );
    assert!(text.contains("No problem."), "{text}");
    // `toolcert mutants --suite` lists it beside the reference host's.
    let listed = Command::new(env!("CARGO_BIN_EXE_toolcert"))
        .args(["mutants", "--suite"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&listed.stdout).contains(
            "tools-undescribed\t(data, scenarios/mutants/tools-undescribed.json) the catalog's first tool has no description"
        )
    );
    // `run --reference-mutant` runs it like a Rust mutant, every `--repeat` trial's host
    // behind a front of its own.
    let report = dir.join("report.json");
    let run = Command::new(env!("CARGO_BIN_EXE_toolcert"))
        .args(["run", "-q", "--suite"])
        .arg(&dir)
        .args(["--reference-mutant", "tools-undescribed", "--repeat", "2"])
        .args(["--exact", "cat.listed-tools-described", "--report"])
        .arg(&report)
        .output()
        .unwrap();
    assert_eq!(
        run.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&run.stdout)
    );
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let trials: Vec<(&Value, &Value)> = report["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (&s["trial"], &s["disposition"]))
        .collect();
    assert_eq!(
        trials,
        [(&json!(1), &json!("fail")), (&json!(2), &json!("fail"))],
        "{report}"
    );
    assert_eq!(report["host"]["mutant"], "tools-undescribed");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_data_mutant_its_scenario_misses_survives_and_exits_1() {
    let dir = tempfile_dir("survives");
    // Renames a member no check reads: the row's scenario cannot tell it apart.
    suite_with_new_row(
        &dir,
        "tools-retitled",
        json!([{
            "method": "GET",
            "path": "/**/tools",
            "response": {"set": [{"at": "/0/title", "value": "renamed"}]}
        }]),
    );
    let (code, text) = focused_matrix(&dir, "tools-retitled");
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("mutant tools-retitled survives cat.listed-tools-described, which claims to kill it (pass)"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_scenario_naming_an_unknown_mutant_is_refused_before_any_run() {
    let dir = tempfile_dir("unknown");
    suite_with_new_row(
        &dir,
        "tools-undescribed",
        json!([{"path": "/**/tools", "response": {"status": 500}}]),
    );
    std::fs::remove_file(dir.join("scenarios/mutants/tools-undescribed.json")).unwrap();
    let (code, text) = focused_matrix(&dir, "tools-undescribed");
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("scenarios/cat/listed-tools-described.json")
            && text.contains("/kills/0")
            && text.contains("scenarios/mutants/<name>.json"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A fresh directory of this test's own.
fn tempfile_dir(name: &str) -> std::path::PathBuf {
    scratch::process_scratch("data-mutants", name)
}
