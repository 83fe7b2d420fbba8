//! End-to-end: `toolcert recheck` re-judges a sealed report without the host, says which rows
//! differ under a changed suite, and refuses an edited report.

use std::path::Path;

use super::common::{text, toolcert};

use serde_json::Value;

#[test]
fn recheck_reproduces_the_dispositions_and_names_the_rows_a_changed_suite_moves() {
    let dir = scratch("suite");
    let report = dir.join("r.json");
    // The `disc` family: no token or canary in play, every check judged from observations.
    let out = toolcert(&["run", "-q", "disc.", "--report", report.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let stored: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert!(stored["digest"].as_str().unwrap().starts_with("sha256:"));

    // Same suite: every row prints its stored disposition, nothing differs, exit 0.
    let out = toolcert(&["recheck", report.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    for row in stored["rows"].as_array().unwrap() {
        let line = format!(
            "{} {}",
            row["requirementId"].as_str().unwrap(),
            row["disposition"].as_str().unwrap()
        );
        assert!(
            stdout.lines().any(|l| l == line),
            "{line} missing from:\n{stdout}"
        );
    }
    assert!(stdout.contains(" 0 differ;"), "{stdout}");

    // A copy of the suite whose disc.etag now wants 200 instead of 304: DISC-6 moves to fail,
    // and the recheck says exactly that row and that check.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let copy = dir.join("suite");
    crate::support::tree::copy_tree(&root.join("scenarios"), &copy.join("scenarios"));
    crate::support::tree::copy_tree(&root.join("schemas"), &copy.join("schemas"));
    let etag = copy.join("scenarios/disc/etag.json");
    let edited = std::fs::read_to_string(&etag)
        .unwrap()
        .replace(r#""equals": 304"#, r#""equals": 200"#);
    assert!(edited.contains(r#""equals": 200"#));
    std::fs::write(&etag, edited).unwrap();
    let out = toolcert(&[
        "recheck",
        report.to_str().unwrap(),
        "--suite",
        copy.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("DISC-6 fail (DIFFERS: the report says pass)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("check disc.etag conditional-304: pass in the report, fail now"),
        "{stdout}"
    );
    assert!(stdout.contains(" 1 differ (DISC-6);"), "{stdout}");
    let differing = stdout.lines().filter(|l| l.contains("DIFFERS")).count();
    assert_eq!(differing, 1, "{stdout}");

    // An edited observation breaks the digest: refused with exit 2 and the reason.
    let mut tampered = stored.clone();
    let scenario = tampered["scenarios"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|s| s["scenarioId"] == "disc.etag")
        .unwrap();
    scenario["observations"]["steps"]["probe"]["conditional"]["status"] = 200.into();
    let edited_report = dir.join("edited.json");
    std::fs::write(
        &edited_report,
        serde_json::to_string_pretty(&tampered).unwrap(),
    )
    .unwrap();
    let out = toolcert(&["recheck", edited_report.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("digest mismatch"), "{}", text(&out));
    assert!(
        text(&out).contains("edited after toolcert wrote it"),
        "{}",
        text(&out)
    );

    // A report without a digest cannot prove it was not edited: refused too.
    let mut unsealed = stored.clone();
    unsealed.as_object_mut().unwrap().remove("digest");
    std::fs::write(&edited_report, unsealed.to_string()).unwrap();
    let out = toolcert(&["recheck", edited_report.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("no \"digest\""), "{}", text(&out));

    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn scenarios_never_driven_say_they_were_not_rechecked() {
    let dir = scratch("undriven");
    let report = dir.join("r.json");
    // Upstream-only: extension scenarios are inapplicable, so never driven (no observations).
    let out = toolcert(&[
        "run",
        "-q",
        "--reference-upstream-only",
        "disc.",
        "--report",
        report.to_str().unwrap(),
    ]);
    let stored: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let undriven: Vec<&str> = stored["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["observations"].is_null())
        .map(|s| s["scenarioId"].as_str().unwrap())
        .collect();
    assert!(!undriven.is_empty(), "no undriven scenario: {}", text(&out));
    let out = toolcert(&["recheck", report.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    for id in undriven {
        assert!(
            stdout.contains(&format!(
                "not rechecked: {id}: the scenario was never driven"
            )),
            "{id}:\n{stdout}"
        );
    }
    std::fs::remove_dir_all(dir).ok();
}

/// Checks compared against the scenario's canary are rechecked against the `[canary]` marker:
/// the clean host's pass and the leaking mutant's fail both come back as stored.
#[test]
fn checks_against_the_canary_recheck_against_the_marker() {
    let dir = scratch("canary");
    for (mutant, row_disposition) in [(None, "pass"), (Some("call-event-carries-inputs"), "fail")] {
        let report = dir.join("r.json");
        let mut args = vec![
            "run",
            "-q",
            "--exact",
            "hooks.secret-redaction",
            "--report",
            report.to_str().unwrap(),
        ];
        if let Some(m) = mutant {
            args.extend(["--reference-mutant", m]);
        }
        let out = toolcert(&args);
        let stored: Value =
            serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
        let row = stored["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["requirementId"] == "HOOKS-AUDIT-3")
            .unwrap_or_else(|| panic!("no HOOKS-AUDIT-3: {}", text(&out)))
            .clone();
        assert_eq!(
            row["disposition"],
            row_disposition,
            "{mutant:?}: {}",
            text(&out)
        );
        let observations = stored["scenarios"][0]["observations"].to_string();
        assert!(
            observations.contains("[canary]"),
            "the canary is not redacted to its marker"
        );
        assert!(
            !observations.contains("tc-canary-"),
            "a canary leaked into the report"
        );
        let out = toolcert(&["recheck", report.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{mutant:?}: {}", text(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout
                .lines()
                .any(|l| l == format!("HOOKS-AUDIT-3 {row_disposition}")),
            "{mutant:?}: {stdout}"
        );
        assert!(
            stdout.contains(" 0 differ;") && stdout.contains(" 0 not rechecked"),
            "{mutant:?}: {stdout}"
        );
    }
    std::fs::remove_dir_all(dir).ok();
}

/// A check reading a redacted value that re-judges differently is reported as not
/// rechecked, with the stored status kept, never as a silent pass or a claimed rule change.
#[test]
fn a_changed_check_over_a_redacted_value_says_it_cannot_be_rechecked() {
    let dir = scratch("redacted");
    let report = dir.join("r.json");
    let out = toolcert(&[
        "run",
        "-q",
        "--exact",
        "hooks.secret-redaction",
        "--report",
        report.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let copy = dir.join("suite");
    crate::support::tree::copy_tree(&root.join("scenarios"), &copy.join("scenarios"));
    crate::support::tree::copy_tree(&root.join("schemas"), &copy.join("schemas"));
    let file = copy.join("scenarios/hooks/secret-redaction.json");
    let original = std::fs::read_to_string(&file).unwrap();
    // `seam-clean` now wants the seam's answer to carry the secret: over real values that is
    // a different verdict; the report only has the `[canary]` marker to compare with.
    let edited = original.replace(
        "\"at\": \"/steps/call/body\",\n      \"notContains\": \"{{vars.canary}}\"",
        "\"at\": \"/steps/call/body\",\n      \"contains\": \"{{vars.canary}}\"",
    );
    assert_ne!(
        edited, original,
        "the scenario changed shape; update this test"
    );
    std::fs::write(&file, edited).unwrap();
    let out = toolcert(&[
        "recheck",
        report.to_str().unwrap(),
        "--suite",
        copy.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(
            "not rechecked: hooks.secret-redaction seam-clean: it reads a value the report redacted"
        ),
        "{}",
        text(&out)
    );
    assert!(stdout.contains(" 1 not rechecked"), "{stdout}");
    // The stored status stands: the row is shown as stored, not as a rechecked pass.
    assert!(
        stdout.lines().any(|l| l == "HOOKS-AUDIT-3 pass"),
        "{stdout}"
    );
    std::fs::remove_dir_all(dir).ok();
}

/// A control over a redacted value that re-judges differently decides its scenario's other
/// checks, so the whole scenario keeps its stored outcomes and says why.
#[test]
fn a_changed_control_over_a_redacted_value_keeps_the_whole_scenario() {
    let dir = scratch("control");
    let report = dir.join("r.json");
    let out = toolcert(&[
        "run",
        "-q",
        "--exact",
        "hooks.secret-redaction",
        "--report",
        report.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let copy = dir.join("suite");
    crate::support::tree::copy_tree(&root.join("scenarios"), &copy.join("scenarios"));
    crate::support::tree::copy_tree(&root.join("schemas"), &copy.join("schemas"));
    let file = copy.join("scenarios/hooks/secret-redaction.json");
    let original = std::fs::read_to_string(&file).unwrap();
    // The control `secret-delivered` now wants the tool NOT to get the secret.
    let edited = original.replace(
        "\"at\": \"/receivers/tool/arrivals/0/body/apiKey\",\n      \"equals\": \"{{vars.canary}}\"",
        "\"at\": \"/receivers/tool/arrivals/0/body/apiKey\",\n      \"notContains\": \"{{vars.canary}}\"",
    );
    assert_ne!(
        edited, original,
        "the scenario changed shape; update this test"
    );
    std::fs::write(&file, edited).unwrap();
    let out = toolcert(&[
        "recheck",
        report.to_str().unwrap(),
        "--suite",
        copy.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(
            "not rechecked: hooks.secret-redaction: its control or required check secret-delivered"
        ),
        "{}",
        text(&out)
    );
    assert!(
        stdout.lines().any(|l| l == "HOOKS-AUDIT-3 pass"),
        "{stdout}"
    );
    assert!(
        stdout.contains(" 0 checks changed; 1 not rechecked"),
        "{stdout}"
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    std::fs::remove_dir_all(dir).ok();
}

fn scratch(name: &str) -> std::path::PathBuf {
    super::common::scratch("recheck", name)
}
