//! End-to-end: expectation baselines (`toolcert baseline`, `toolcert run --expect`) against the
//! embedded reference host, narrowed to `disc.etag`, which the `discovery-etag-ignored` mutant
//! makes fail on row DISC-6.

use std::path::Path;
use std::process::Output;

use super::common::{read, text, toolcert};

use serde_json::{Value, json};

const MUTANT: &str = "discovery-etag-ignored";
const SCENARIO: &str = "disc.etag";
const ROW: &str = "DISC-6";

/// `run -q --exact disc.etag --report R [extra…]`, optionally against the mutant.
fn run(mutant: bool, report: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "run",
        "-q",
        "--exact",
        SCENARIO,
        "--report",
        report.to_str().unwrap(),
    ];
    if mutant {
        args.extend(["--reference-mutant", MUTANT]);
    }
    args.extend(extra);
    toolcert(&args)
}

fn rows_of(report: &Value, list: &str) -> Vec<String> {
    report["expectations"][list]
        .as_array()
        .unwrap_or_else(|| panic!("no expectations.{list} in the report"))
        .iter()
        .map(|j| j["row"].as_str().unwrap().to_string())
        .collect()
}

fn schema_violations(report: &Value) -> Vec<String> {
    let suite = toolcert::suite::Suite::embedded().unwrap();
    suite
        .schemas
        .violations("schemas/report.schema.json", report)
        .unwrap()
        .into_iter()
        .map(|v| format!("{} {}", v.pointer, v.message))
        .collect()
}

#[test]
fn a_baseline_accepts_the_known_failure_and_catches_every_other_change() {
    let dir = scratch("gate");
    let first = dir.join("first.json");

    // The mutant fails DISC-6: without a baseline the run fails.
    let out = run(true, &first, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));

    // `toolcert baseline` writes every non-pass row, with the row's detail as the reason.
    let out = toolcert(&["baseline", first.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let baseline: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(baseline["expectationsVersion"], 1);
    let entries = baseline["expectations"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "{baseline}");
    assert_eq!(entries[0]["row"], ROW);
    assert_eq!(entries[0]["disposition"], "fail");
    let detail = read(&first)["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["requirementId"] == ROW)
        .unwrap()["detail"]
        .clone();
    assert_eq!(entries[0]["reason"], detail);
    let expect = dir.join("expect.json");
    std::fs::write(&expect, &out.stdout).unwrap();
    // A baseline is only made from a sealed report: an edited one is refused.
    let mut edited = read(&first);
    edited["rows"][0]["disposition"] = json!("warn");
    let edited_path = dir.join("edited.json");
    std::fs::write(&edited_path, edited.to_string()).unwrap();
    let out = toolcert(&["baseline", edited_path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("digest mismatch"), "{}", text(&out));

    // The same failure with the baseline: exit 0, and every format says the row was expected.
    let (again, xml, md) = (
        dir.join("again.json"),
        dir.join("again.xml"),
        dir.join("again.md"),
    );
    let out = run(
        true,
        &again,
        &[
            "--expect",
            expect.to_str().unwrap(),
            "--junit",
            xml.to_str().unwrap(),
            "--markdown",
            md.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("1 expected, 0 unexpected passes, 0 regressions, 0 stale"),
        "{stdout}"
    );
    assert!(stdout.contains("toolcert: gate passed"), "{stdout}");
    let report = read(&again);
    assert!(
        schema_violations(&report).is_empty(),
        "{:?}",
        schema_violations(&report)
    );
    assert_eq!(rows_of(&report, "expected"), [ROW]);
    assert_eq!(report["expectations"]["gatePassed"], true);
    // The host is still not certified: the baseline changes the gate, not the verdict.
    assert_eq!(report["summary"]["certified"], false);
    let junit = std::fs::read_to_string(&xml).unwrap();
    assert!(junit.contains("expected fail by the baseline"), "{junit}");
    assert!(
        !junit.contains("<failure"),
        "an expected row must not be a JUnit failure:\n{junit}"
    );
    let markdown = std::fs::read_to_string(&md).unwrap();
    assert!(
        markdown.contains("## Expectation baseline") && markdown.contains("Gate: **passed**"),
        "{markdown}"
    );

    // The clean host does better than expected: an unexpected pass fails the gate.
    let clean = dir.join("clean.json");
    let out = run(
        false,
        &clean,
        &[
            "--expect",
            expect.to_str().unwrap(),
            "--junit",
            xml.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let report = read(&clean);
    assert_eq!(rows_of(&report, "unexpectedPasses"), [ROW]);
    assert_eq!(report["expectations"]["gatePassed"], false);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("unexpected passes (update the baseline")
    );
    let junit = std::fs::read_to_string(&xml).unwrap();
    assert!(junit.contains("unexpected-pass"), "{junit}");

    // Worse than expected (expected warn, got fail): a regression fails the gate.
    let mut milder = baseline.clone();
    milder["expectations"][0]["disposition"] = json!("warn");
    let milder_path = dir.join("milder.json");
    std::fs::write(&milder_path, milder.to_string()).unwrap();
    let worse = dir.join("worse.json");
    let out = run(true, &worse, &["--expect", milder_path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(rows_of(&read(&worse), "regressions"), [ROW]);

    // A stale entry (a row that does not exist) is reported; it fails only under --strict.
    let mut stale = baseline.clone();
    stale["expectations"].as_array_mut().unwrap().push(
        json!({"row": "GONE-99", "disposition": "fail", "reason": "row removed from the spec"}),
    );
    let stale_path = dir.join("stale.json");
    std::fs::write(&stale_path, stale.to_string()).unwrap();
    let lax = dir.join("lax.json");
    let out = run(true, &lax, &["--expect", stale_path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stale_rows: Vec<Value> = read(&lax)["expectations"]["stale"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(stale_rows.len(), 1);
    assert_eq!(stale_rows[0]["row"], "GONE-99");
    // Under --strict the same baseline without the stale entry holds, with it the gate fails.
    let strict_ok = run(
        true,
        &lax,
        &["--strict", "--expect", expect.to_str().unwrap()],
    );
    assert_eq!(strict_ok.status.code(), Some(0), "{}", text(&strict_ok));
    let strict = run(
        true,
        &lax,
        &[
            "--strict",
            "--expect",
            stale_path.to_str().unwrap(),
            "--junit",
            xml.to_str().unwrap(),
            "--markdown",
            md.to_str().unwrap(),
        ],
    );
    assert_eq!(strict.status.code(), Some(1), "{}", text(&strict));
    let junit = std::fs::read_to_string(&xml).unwrap();
    assert!(
        junit.contains("stale:GONE-99") && junit.contains("type=\"stale\""),
        "{junit}"
    );
    let markdown = std::fs::read_to_string(&md).unwrap();
    assert!(
        markdown.contains("### Stale entries") && markdown.contains("GONE-99"),
        "{markdown}"
    );
    assert!(markdown.contains("Gate: **failed**"), "{markdown}");
    assert!(
        text(&strict).contains("stale entries (no such row, or no scenario covers it): GONE-99")
    );

    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_bad_baseline_is_refused_with_exit_2_naming_the_pointer() {
    let dir = scratch("bad");
    let report = dir.join("r.json");
    let cases: [(&str, &[&str]); 3] = [
        (
            r#"{"expectationsVersion":1,"expectations":[{"row":"DISC-6","disposition":"pass","reason":"x"}]}"#,
            &["\"/expectations/0/disposition\"", "other than pass"],
        ),
        (
            r#"{"expectationsVersion":1,"expectations":[{"row":"DISC-6","disposition":"fail"}]}"#,
            &["\"/expectations/0\"", "reason"],
        ),
        (
            r#"{"expectationsVersion":1,"expectations":[{"row":"DISC-6","disposition":"fail","reason":"a"},{"row":"DISC-6","disposition":"warn","reason":"b"}]}"#,
            &["\"/expectations/1/row\"", "listed twice"],
        ),
    ];
    for (i, (body, needles)) in cases.iter().enumerate() {
        let file = dir.join(format!("bad{i}.json"));
        std::fs::write(&file, body).unwrap();
        let out = run(false, &report, &["--expect", file.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        for needle in *needles {
            assert!(
                stderr.contains(needle),
                "case {i}: {needle} not in:\n{stderr}"
            );
        }
        // Refused before any scenario ran: no report was written.
        assert!(!report.exists(), "case {i}: a report was written");
    }
    std::fs::remove_dir_all(dir).ok();
}

fn scratch(name: &str) -> std::path::PathBuf {
    super::common::scratch("baseline", name)
}
