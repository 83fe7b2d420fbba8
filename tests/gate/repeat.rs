//! End-to-end: `toolcert run --repeat K` (pass^k) against the embedded reference host.

use std::process::{Command, Output};

use super::common::{read, scratch, text, toolcert};

/// Run toolcert with the mutant switched on only in the listed trials' hosts.
fn toolcert_with_mutant_trials(trials: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolcert"))
        .env("TOOLCERT_TEST_MUTANT_TRIALS", trials)
        .args(args)
        .output()
        .expect("toolcert runs")
}

#[test]
fn three_trials_hold_pass_k_on_every_row() {
    let dir = scratch("repeat", "clean");
    let report = dir.join("r.json");
    let out = toolcert(&[
        "run",
        "-q",
        "--seed",
        "13",
        "--repeat",
        "3",
        // The machine may be loaded (other tests run beside this one): slower answers must
        // not read as flaky rows.
        "--timeout-scale",
        "3",
        "--report",
        report.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let r = read(&report);
    assert_eq!(r["repeat"]["trials"], 3);
    let seeds = r["repeat"]["seeds"].as_array().unwrap();
    assert_eq!(seeds.len(), 3);
    assert_eq!(seeds[0], 13, "trial 1 runs with the run seed");
    let rows = r["rows"].as_array().unwrap();
    assert!(rows.len() > 50, "the whole suite ran");
    for row in rows {
        if crate::support::rows::other_major(row) {
            continue;
        }
        assert_eq!(row["disposition"], "pass", "{row}");
        assert_eq!(row["passK"], true, "{row}");
        assert_eq!(
            (row["passes"].as_u64(), row["trials"].as_u64()),
            (Some(3), Some(3)),
            "{row}"
        );
    }
    assert_eq!(r["summary"]["flaky"], 0);
    // Every scenario ran once per trial, each trial with its recorded seed.
    let scenarios = r["scenarios"].as_array().unwrap();
    assert_eq!(
        scenarios.len() as u64,
        3 * r["summary"]["scenarios"].as_u64().unwrap()
    );
    for s in scenarios {
        let t = s["trial"].as_u64().unwrap() as usize;
        assert_eq!(s["seed"], seeds[t - 1], "{}", s["scenarioId"]);
    }
    // The repeated report is sealed and rechecks to the same rows.
    let out = toolcert(&["recheck", report.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains(" 0 differ"), "{}", text(&out));
}

#[test]
fn a_row_that_fails_in_one_trial_is_flaky_in_every_format() {
    let dir = scratch("repeat", "flaky");
    let (report, junit, markdown) = (dir.join("r.json"), dir.join("r.xml"), dir.join("r.md"));
    // The mutant breaks discovery's 304 (DISC-6) in trial 2's host only.
    let args = [
        "run",
        "--seed",
        "5",
        "--repeat",
        "3",
        "--reference-mutant",
        "discovery-etag-ignored",
        "--exact",
        "disc.etag",
        "--report",
        report.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
        "--markdown",
        markdown.to_str().unwrap(),
    ];
    let out = toolcert_with_mutant_trials("2", &args);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a flaky row never certifies: {}",
        text(&out)
    );
    assert!(
        text(&out).contains("passed 2 of 3 trials"),
        "{}",
        text(&out)
    );
    let r = read(&report);
    let row = &r["rows"][0];
    assert_eq!(row["requirementId"], "DISC-6");
    assert_eq!(row["disposition"], "flaky", "{row}");
    assert_eq!(
        (row["passes"].as_u64(), row["trials"].as_u64()),
        (Some(2), Some(3))
    );
    assert_eq!(row["passK"], false);
    assert_eq!(r["summary"]["flaky"], 1);
    assert_eq!(r["summary"]["certified"], false);
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains(r#"type="flaky""#), "{xml}");
    assert!(
        xml.contains(r#"<property name="passes" value="2"/>"#),
        "{xml}"
    );
    let md = std::fs::read_to_string(&markdown).unwrap();
    assert!(md.contains("### DISC-6 — flaky"), "{md}");
    assert!(md.contains("passed 2 of 3 (pass^k: no)"), "{md}");

    // Recheck re-judges it trial by trial and agrees.
    let out = toolcert(&["recheck", report.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("DISC-6 flaky"), "{}", text(&out));

    // A baseline may accept a known flaky row: the gate holds while it stays flaky...
    let out = toolcert(&["baseline", report.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let baseline = dir.join("expect.json");
    std::fs::write(&baseline, &out.stdout).unwrap();
    let mut expecting = args.to_vec();
    expecting.extend(["--expect", baseline.to_str().unwrap()]);
    let out = toolcert_with_mutant_trials("2", &expecting);
    assert!(out.status.success(), "{}", text(&out));
    // ...and a row now broken in every trial is a regression.
    let out = toolcert_with_mutant_trials("1,2,3", &expecting);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("regressions: DISC-6 (expected flaky, got fail)"),
        "{}",
        text(&out)
    );
}

#[test]
fn repeated_shards_merge_and_mismatched_repeats_are_refused() {
    let dir = scratch("repeat", "merge");
    let shard = |k: u32, repeat: &str| {
        let path = dir.join(format!("s{k}-{repeat}.json"));
        let partition = format!("{k}/2");
        let out = toolcert(&[
            "run",
            "-q",
            "--seed",
            "3",
            "--repeat",
            repeat,
            "disc.",
            "--partition",
            &partition,
            "--report",
            path.to_str().unwrap(),
        ]);
        // A shard of only inapplicable rows measures nothing and exits 1; it still reports.
        assert!(path.is_file(), "{}", text(&out));
        path
    };
    let (a, b, c) = (shard(1, "2"), shard(2, "2"), shard(2, "3"));
    let merged = dir.join("merged.json");
    let out = toolcert(&[
        "merge",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "-o",
        merged.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let r = read(&merged);
    assert_eq!(r["repeat"]["trials"], 2);
    let measured: Vec<_> = r["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["disposition"] == "pass")
        .collect();
    assert!(!measured.is_empty());
    for row in measured {
        assert_eq!(
            (row["passes"].as_u64(), row["trials"].as_u64()),
            (Some(2), Some(2)),
            "{row}"
        );
    }
    let out = toolcert(&[
        "merge",
        a.to_str().unwrap(),
        c.to_str().unwrap(),
        "-o",
        merged.to_str().unwrap(),
    ]);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("/repeat is"), "{}", text(&out));
}

#[test]
fn repeat_counts_out_of_range_are_refused() {
    for bad in ["0", "65", "x"] {
        let out = toolcert(&["run", "--repeat", bad, "disc.etag"]);
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", text(&out));
        assert!(text(&out).contains("from 1 to 64"), "{bad}: {}", text(&out));
    }
}
