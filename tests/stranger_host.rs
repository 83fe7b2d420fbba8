//! A host toolcert did not write: `tests/hosts/openwop_v1_host.py`, a plain v1 host written
//! from RFC 0064 and the Layer-1 rules alone (Python standard library, no toolcert
//! extension), started by `toolcert run --spawn`. It certifies the profiles it claims (tool
//! hooks, Layer-1 idempotency, discovery, errors) with exit status 0, every row its upstream
//! surfaces can witness measured; and the same host with flags gives issue 28's cases:
//!
//! - `--forge`: toolcert's own syntax (`$blocked`, `$error`, `$fail`, `$nonJson`, template
//!   placeholders) in every JSON object it sends gets exactly the honest run's verdicts, with
//!   a planted bug too;
//! - `--single-tenant`: the `foreign` role's own key refused on `POST /runs` makes IDEM-L1-7
//!   `blocked`, never `fail`;
//! - `--bug burst-duplicate`: a Layer-1 race (distinct runs for one key in a burst, none
//!   marked a replay) fails IDEM-L1-4, with or without a hold seam;
//! - every other planted bug is caught (fail) on an upstream surface alone.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::support::scratch;

/// The host script and the profile its roles are described by.
fn host_file(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/hosts")
        .join(name)
}

/// One certification run of the host started with `flags`: exit status and the JSON report.
fn certify(name: &str, flags: &str) -> (i32, Value) {
    let report = scratch::process_scratch("stranger-host", name).join("r.json");
    let spawn = format!(
        "python3 {} --port {{port}} {flags}",
        host_file("openwop_v1_host.py").display()
    );
    let out = Command::new(env!("CARGO_BIN_EXE_toolcert"))
        .args(["run", "-q", "--spawn", &spawn, "--profile"])
        .arg(host_file("openwop_v1_host.profile.json"))
        .arg("--report")
        .arg(&report)
        .output()
        .expect("toolcert runs");
    let text = std::fs::read_to_string(&report).unwrap_or_else(|e| {
        panic!(
            "no report for {flags:?} ({e}); stdout: {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let code = out.status.code().unwrap_or(-1);
    (
        code,
        serde_json::from_str(&text).expect("the report is JSON"),
    )
}

/// Row id ⇒ (disposition, evidence).
fn verdicts(report: &Value) -> BTreeMap<String, (String, String)> {
    report["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            (
                r["requirementId"].as_str().unwrap_or_default().to_owned(),
                (
                    r["disposition"].as_str().unwrap_or_default().to_owned(),
                    r["evidence"].as_str().unwrap_or_default().to_owned(),
                ),
            )
        })
        .collect()
}

/// The rows that read `fail` or `warn` (a kill), and those that read `error`.
fn convicted(report: &Value) -> Vec<String> {
    verdicts(report)
        .into_iter()
        .filter(|(_, (d, _))| matches!(d.as_str(), "fail" | "warn" | "error"))
        .map(|(id, (d, _))| format!("{id} {d}"))
        .collect()
}

/// Every row its upstream surfaces (the tool-hooks seam, the hold seam, the span scrape seam,
/// `POST /runs` with an upstream fixture, discovery) can witness.
const WITNESSED_UPSTREAM: &[&str] = &[
    "DISC-4",
    "DISC-7",
    "HOOKS-EVT-1",
    "HOOKS-AUDIT-1",
    "HOOKS-AUDIT-2",
    "HOOKS-AUDIT-3",
    "HOOKS-AUTH-1",
    "HOOKS-AUTH-2",
    "HOOKS-AUTH-3",
    "HOOKS-AUTH-4",
    "HOOKS-RL-1",
    "HOOKS-RL-2",
    "HOOKS-RL-3",
    "HOOKS-FAIL-1",
    "HOOKS-FAIL-2",
    "HOOKS-FAIL-3",
    "HOOKS-FAIL-4",
    "HOOKS-FAIL-5",
    "IDEM-L1-1",
    "IDEM-L1-2",
    "IDEM-L1-3",
    "IDEM-L1-4",
    "IDEM-L1-6",
    "IDEM-L1-7",
    "IDEM-L1-10",
    "ERR-4",
];

#[test]
fn the_host_certifies_its_profiles_with_exit_0() {
    let (code, report) = certify("honest", "");
    let rows = verdicts(&report);
    assert_eq!(convicted(&report), Vec::<String>::new());
    for id in WITNESSED_UPSTREAM {
        assert_eq!(
            rows.get(*id).map(|(d, _)| d.as_str()),
            Some("pass"),
            "{id} is witnessable through an upstream surface of this host: {rows:?}"
        );
    }
    // What stays blocked is blocked only on toolcert's own extensions (not scored).
    for row in report["rows"].as_array().unwrap() {
        if row["disposition"] == "blocked" {
            let needs = row["needs"].as_array().map_or(0, Vec::len);
            assert!(needs > 0, "blocked on an upstream surface: {row}");
        }
    }
    let certification = &report["certification"];
    for profile in ["discovery", "tool-hooks", "idempotency-l1", "errors"] {
        let p = certification["profiles"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["id"] == profile)
            .unwrap_or_else(|| panic!("profile {profile}"));
        assert_eq!(p["certified"], true, "{p}");
        assert_eq!(p["tier"], "wire", "{p}");
    }
    assert_eq!(certification["exitCode"], 0, "{certification}");
    assert_eq!(code, 0, "{}", certification["headline"]);
}

#[test]
fn markers_planted_in_every_answer_change_no_verdict() {
    let (honest_code, honest) = certify("honest-twin", "");
    let (forged_code, forged) = certify("forged", "--forge");
    // The forge was on: the host's answers toolcert kept carry its markers.
    let stored = forged["scenarios"].to_string();
    assert!(
        stored.contains("forged by the host: this row is blocked")
            && stored.contains("{{vars.canary}}"),
        "the forging host planted nothing"
    );
    assert_eq!(verdicts(&forged), verdicts(&honest));
    assert_eq!(forged_code, honest_code);
    // A planted bug is caught through the markers as without them.
    let (_, bug) = certify("bug-mismatch", "--bug mismatch-replays");
    let (_, forged_bug) = certify("forged-mismatch", "--forge --bug mismatch-replays");
    assert_eq!(convicted(&bug), vec!["IDEM-L1-3 fail".to_owned()]);
    assert_eq!(verdicts(&forged_bug), verdicts(&bug));
}

#[test]
fn a_foreign_role_whose_own_key_is_refused_is_blocked_not_failed() {
    let (code, report) = certify("single-tenant", "--single-tenant");
    let rows = verdicts(&report);
    assert_eq!(convicted(&report), Vec::<String>::new());
    assert_eq!(rows["IDEM-L1-7"].0, "blocked", "{rows:?}");
    let row = report["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["requirementId"] == "IDEM-L1-7")
        .unwrap();
    let detail = row["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("foreign-acts") && detail.contains("401"),
        "{detail}"
    );
    // A row blocked on the upstream contract (the role could not act) is no certification.
    assert_eq!(code, 1);
}

#[test]
fn a_burst_duplicate_fails_with_or_without_a_hold_seam() {
    for (name, flags) in [
        ("burst", "--bug burst-duplicate"),
        ("burst-no-hold", "--bug burst-duplicate --no-hold-seam"),
    ] {
        let (code, report) = certify(name, flags);
        assert_eq!(
            convicted(&report),
            vec!["IDEM-L1-4 fail".to_owned()],
            "{flags}"
        );
        assert_eq!(code, 1);
    }
    // Without the seam and without a duplicate, the overlap is not shown: blocked, not pass.
    let (_, report) = certify("no-hold", "--no-hold-seam");
    assert_eq!(verdicts(&report)["IDEM-L1-4"].0, "blocked");
}

#[test]
fn each_planted_bug_is_caught_on_an_upstream_surface() {
    let expected: &[(&str, &[&str])] = &[
        ("args-hash-raw", &["HOOKS-AUDIT-3 fail"]),
        ("replay-header-missing", &["IDEM-L1-2 fail"]),
        ("key-not-tenant-scoped", &["IDEM-L1-7 fail"]),
        ("spans-leak-key", &["IDEM-L1-10 fail"]),
        ("forbidden-with-duration", &["HOOKS-FAIL-4 fail"]),
        (
            "unevaluable-allowed",
            &["HOOKS-AUTH-2 fail", "HOOKS-FAIL-4 fail"],
        ),
        ("rate-limit-no-retry-after", &["HOOKS-RL-3 fail"]),
        (
            "failure-without-error",
            &["ERR-4 fail", "HOOKS-FAIL-1 fail", "HOOKS-FAIL-3 fail"],
        ),
    ];
    let runs: Vec<_> = expected
        .iter()
        .map(|(bug, want)| {
            let flags = format!("--bug {bug}");
            std::thread::spawn(move || (*bug, *want, certify(bug, &flags)))
        })
        .collect();
    for run in runs {
        let (bug, want, (code, report)) = run.join().expect("the run ends");
        assert_eq!(convicted(&report), want.to_vec(), "{bug}");
        assert_eq!(code, 1, "{bug}");
    }
}
