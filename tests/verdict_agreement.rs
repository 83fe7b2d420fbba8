//! One verdict everywhere: for every combination of a scenario filter, a `--partition` shard,
//! an expectation baseline (`--expect`), `--require-evidence` and `--include-tentative`, the
//! verdict line the console prints, the exit status, the JSON report and the JUnit XML agree.
//!
//! The reference host with one mutant gives a run with every kind of row: passes at `double`
//! and `wire`, failures in a scored family, failures and blocked rows in the tentative
//! tool-turn rows, and rows only the mutant's broken path leaves blocked. It runs once; each
//! cell takes the scenarios its selection would have run and concludes them the way `run`
//! does (`RunOutcome::refold`), then renders every output from that one conclusion. A few
//! cells also run through the `toolcert` binary, to show its exit status is the JSON's.

use std::collections::BTreeSet;
use std::process::Command;

use serde_json::Value;
use toolcert::baseline::{Expectation, Expectations};
use toolcert::partition::Partition;
use toolcert::runner::{ReferenceVariant, RunOptions, RunOutcome, run_reference};
use toolcert::suite::Suite;
use toolcert::verdict::{CertifyOptions, Disposition, Evidence, Selection, Verdict};

/// A mutant whose kills span a scored family (tool hooks) and the tentative tool-turn rows.
const MUTANT: &str = "authz-always-deny";
/// A filter matching scenarios of several families, but not all.
const FILTER: &str = "hooks.";

#[derive(Debug, Clone, Copy)]
enum Baseline {
    None,
    /// Every non-pass row of the whole run, as it was: the gate holds.
    Matching,
    /// The same, plus one row that passes listed as failing: an unexpected pass.
    Stale,
}

struct Cell {
    filter: bool,
    shard: Option<Partition>,
    baseline: Baseline,
    require: Evidence,
    tentative: bool,
}

impl std::fmt::Debug for Cell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "filter={} shard={:?} baseline={:?} require={} tentative={}",
            self.filter,
            self.shard.map(|p| p.to_string()),
            self.baseline,
            self.require,
            self.tentative
        )
    }
}

fn cells() -> Vec<Cell> {
    let mut out = Vec::new();
    let shards = [
        None,
        Some(Partition { index: 1, count: 2 }),
        Some(Partition { index: 2, count: 2 }),
    ];
    for filter in [false, true] {
        for shard in shards {
            for baseline in [Baseline::None, Baseline::Matching, Baseline::Stale] {
                for require in [Evidence::SelfReport, Evidence::Wire, Evidence::Double] {
                    for tentative in [false, true] {
                        out.push(Cell {
                            filter,
                            shard,
                            baseline,
                            require,
                            tentative,
                        });
                    }
                }
            }
        }
    }
    out
}

/// What every output says about one cell.
struct Outputs {
    exit: u8,
    console: Vec<String>,
    report: Value,
    junit_failures: usize,
    junit_verdict_failed: bool,
    markdown: String,
}

fn outputs(suite: &Suite, full: &RunOutcome, cell: &Cell) -> Outputs {
    let filters: Vec<String> = if cell.filter {
        vec![FILTER.to_string()]
    } else {
        Vec::new()
    };
    let filtered: Vec<&str> = suite
        .scenarios
        .iter()
        .map(|s| s.id.as_str())
        .filter(|id| filters.is_empty() || filters.iter().any(|f| id.contains(f.as_str())))
        .collect();
    let chosen: BTreeSet<&str> = match cell.shard {
        Some(p) => p.select(filtered.iter().copied()).into_iter().collect(),
        None => filtered.into_iter().collect(),
    };
    let scenarios = full
        .scenarios
        .iter()
        .filter(|s| chosen.contains(s.scenario_id.as_str()))
        .cloned()
        .collect();
    let certify = CertifyOptions {
        strict: false,
        require_evidence: cell.require,
        include_tentative: cell.tentative,
    };
    let selection = Selection {
        filters,
        partition: cell.shard,
        ..Selection::default()
    };
    let mut run = full.refold(suite, scenarios, certify, selection);
    let baseline = baseline_of(full, cell.baseline);
    let judgement = baseline
        .as_ref()
        .map(|e| e.judge(suite, &run.rows, &run.certification));
    if let Some(j) = &judgement {
        run.certification = run.certification.clone().with_gate(j.gate_passed);
    }
    let mut console = toolcert::report::console::conclusion_lines(suite, &run);
    console.push(format!("toolcert: {}", run.certification.final_line()));
    let mut report = toolcert::report::build(suite, &run);
    report.expectations = judgement;
    report.partition = cell.shard;
    let value = toolcert::report::to_value(suite, &report).expect("the report is valid");
    let junit = toolcert::report::render_junit(&report);
    let parsed = quick_junit::Report::deserialize_from_str(&junit).expect("JUnit parses");
    let mut junit_failures = 0;
    let mut junit_verdict_failed = false;
    for s in &parsed.test_suites {
        for c in &s.test_cases {
            if matches!(c.status, quick_junit::TestCaseStatus::NonSuccess { .. }) {
                junit_failures += 1;
                if c.name.as_str() == "verdict" {
                    junit_verdict_failed = true;
                }
            }
        }
    }
    Outputs {
        exit: run.certification.exit_code,
        console,
        report: value,
        junit_failures,
        junit_verdict_failed,
        markdown: toolcert::report::render_markdown(&report),
    }
}

fn baseline_of(full: &RunOutcome, kind: Baseline) -> Option<Expectations> {
    let mut expectations: Vec<Expectation> = full
        .rows
        .iter()
        .filter(|r| r.disposition != Disposition::Pass)
        .map(|r| Expectation {
            row: r.requirement_id.clone(),
            disposition: r.disposition,
            reason: "accepted for the test".into(),
        })
        .collect();
    match kind {
        Baseline::None => return None,
        Baseline::Matching => {}
        Baseline::Stale => {
            let passing = full
                .rows
                .iter()
                .find(|r| r.disposition == Disposition::Pass && r.family == "DISC")
                .expect("a discovery row passes");
            expectations.push(Expectation {
                row: passing.requirement_id.clone(),
                disposition: Disposition::Fail,
                reason: "fixed since".into(),
            });
        }
    }
    Some(Expectations {
        expectations_version: 1,
        expectations,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_output_agrees_in_every_cell() {
    let suite = Suite::embedded().unwrap();
    let opts = RunOptions {
        reference_host_exe: Some(env!("CARGO_BIN_EXE_toolcert").into()),
        ..RunOptions::default()
    };
    let variant = ReferenceVariant::with_mutant(Some(MUTANT.parse().unwrap()));
    let full = run_reference(&suite, variant, &opts, None).await.unwrap();
    // The run has what the table needs: scored failures, tentative failures, passes at both
    // tiers.
    let has = |f: &dyn Fn(&toolcert::verdict::RowVerdict) -> bool| full.rows.iter().any(f);
    assert!(has(
        &|r| r.disposition == Disposition::Fail && r.family != "TURN"
    ));
    assert!(has(
        &|r| r.disposition == Disposition::Fail && r.family == "TURN"
    ));
    assert!(has(&|r| r.evidence == Some(Evidence::Wire)));
    assert!(has(&|r| r.evidence == Some(Evidence::Double)));

    let mut seen = BTreeSet::new();
    for cell in cells() {
        let o = outputs(&suite, &full, &cell);
        let last = o.console.last().unwrap().clone();
        let c = &o.report["certification"];
        let partial = cell.filter || cell.shard.is_some();
        // The JSON states the exit status, the verdict and `summary.certified` alike.
        assert_eq!(c["exitCode"].as_u64(), Some(u64::from(o.exit)), "{cell:?}");
        assert_eq!(
            o.report["summary"]["certified"].as_bool(),
            Some(c["verdict"] == "certified"),
            "{cell:?}"
        );
        // The console's last line says what the exit status does.
        match (c["gate"].as_bool(), o.exit) {
            (Some(true), 0) => assert!(
                last.starts_with("toolcert: gate passed"),
                "{cell:?}: {last}"
            ),
            (Some(false), 1) => assert!(
                last.starts_with("toolcert: gate FAILED"),
                "{cell:?}: {last}"
            ),
            (None, 0) => assert!(
                last.starts_with("toolcert: certified: ")
                    || (last.starts_with("toolcert: partial: ")
                        && last.ends_with("no judged row denies")),
                "{cell:?}: {last}"
            ),
            (None, 1) => assert!(
                last.starts_with("toolcert: NOT CERTIFIED")
                    || (last.starts_with("toolcert: partial: ") && last.contains("denying")),
                "{cell:?}: {last}"
            ),
            other => panic!("{cell:?}: gate and exit disagree: {other:?}"),
        }
        // A filtered or sharded run never says certified, anywhere.
        if partial {
            assert_eq!(c["verdict"], "partial", "{cell:?}");
            assert!(
                !o.console.iter().any(|l| l.contains("toolcert: certified")),
                "{cell:?}"
            );
            assert!(!o.markdown.contains("**certified"), "{cell:?}");
        }
        // JUnit has a failure exactly when the run exits non-zero, and its verdict case says so.
        assert_eq!(
            o.junit_failures > 0,
            o.exit == 1,
            "{cell:?}: {} JUnit failures",
            o.junit_failures
        );
        assert_eq!(o.junit_verdict_failed, o.exit == 1, "{cell:?}");
        // The Markdown report carries the same verdict line.
        let verdict_text = last.trim_start_matches("toolcert: ");
        assert!(
            o.markdown.contains(&verdict_text.replace('|', "\\|")),
            "{cell:?}: the Markdown verdict differs from {verdict_text:?}"
        );
        // The gate, when there is one, is the exit status.
        if let Some(gate) = c["gate"].as_bool() {
            assert_eq!(u8::from(!gate), o.exit, "{cell:?}");
        }
        seen.insert((o.exit, c["verdict"].as_str().unwrap_or("").to_string()));
    }
    // The table reaches every verdict and both exit statuses.
    for verdict in ["not-certified", "partial"] {
        assert!(seen.iter().any(|(_, v)| v == verdict), "{seen:?}");
    }
    assert!(
        seen.iter().any(|(e, _)| *e == 0) && seen.iter().any(|(e, _)| *e == 1),
        "{seen:?}"
    );

    // The clean host certifies; `--include-tentative` and `--require-evidence double` change
    // only what they should.
    let clean = run_reference(&suite, ReferenceVariant::with_mutant(None), &opts, None)
        .await
        .unwrap();
    let refold = |require, tentative| {
        clean.refold(
            &suite,
            clean.scenarios.clone(),
            CertifyOptions {
                strict: false,
                require_evidence: require,
                include_tentative: tentative,
            },
            Selection::default(),
        )
    };
    assert_eq!(
        refold(Evidence::SelfReport, false).certification.verdict,
        Verdict::Certified
    );
    let wire = refold(Evidence::Wire, true);
    assert_eq!(
        wire.certification.verdict,
        Verdict::Certified,
        "{:?}",
        wire.certification.rows.iter().find(|r| r.denies)
    );
    let double = refold(Evidence::Double, false);
    assert_eq!(double.certification.verdict, Verdict::NotCertified);
    assert!(
        double
            .certification
            .rows
            .iter()
            .filter(|r| r.denies)
            .all(|r| r.why.contains("--require-evidence double")),
        "only rows below the tier deny"
    );
    // With the mutant, the tentative rows' failures deny only when included.
    let tentative_only_cell = |tentative| {
        let scenarios: Vec<_> = full
            .scenarios
            .iter()
            .filter(|s| s.scenario_id.starts_with("turn."))
            .cloned()
            .collect();
        let n = scenarios.len();
        let run = full.refold(
            &suite,
            scenarios,
            CertifyOptions {
                strict: false,
                require_evidence: Evidence::SelfReport,
                include_tentative: tentative,
            },
            Selection::default(),
        );
        (n, run.certification)
    };
    let (n, without) = tentative_only_cell(false);
    assert!(n > 0);
    assert!(
        without
            .rows
            .iter()
            .filter(|r| r.row.starts_with("TURN-"))
            .all(|r| !r.denies)
    );
    let (_, with) = tentative_only_cell(true);
    assert!(
        with.rows
            .iter()
            .any(|r| r.row.starts_with("TURN-") && r.denies)
    );
}

/// Through the binary: its exit status is the one the JSON report states, for a filtered run,
/// a shard and a run with a baseline.
#[test]
fn the_binary_exits_with_the_status_its_report_states() {
    let dir = std::env::temp_dir().join(format!("toolcert-agree-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let report = dir.join("r.json");
    let junit = dir.join("r.xml");
    let baseline = dir.join("expect.json");
    let run = |extra: &[&str]| {
        let mut args = vec![
            "run",
            "-q",
            "--seed",
            "3",
            "--reference-mutant",
            MUTANT,
            "--report",
            report.to_str().unwrap(),
            "--junit",
            junit.to_str().unwrap(),
        ];
        args.extend(extra);
        let out = Command::new(env!("CARGO_BIN_EXE_toolcert"))
            .args(&args)
            .output()
            .unwrap();
        let r: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        (out.status.code(), r, stdout)
    };
    // A filter of one family with a failure: partial, denying, exit 1.
    let (code, r, stdout) = run(&["hooks.authorization-upstream"]);
    assert_eq!(code, Some(1), "{stdout}");
    assert_eq!(r["certification"]["exitCode"], 1);
    assert_eq!(r["certification"]["verdict"], "partial");
    assert!(
        stdout
            .lines()
            .last()
            .unwrap()
            .starts_with("toolcert: partial: "),
        "{stdout}"
    );
    // The baseline of that report accepts it: the gate passes and the exit status is 0,
    // although the run is not certified.
    let written = Command::new(env!("CARGO_BIN_EXE_toolcert"))
        .args(["baseline", report.to_str().unwrap()])
        .output()
        .unwrap();
    std::fs::write(&baseline, &written.stdout).unwrap();
    let (code, r, stdout) = run(&[
        "--expect",
        baseline.to_str().unwrap(),
        "hooks.authorization-upstream",
    ]);
    assert_eq!(code, Some(0), "{stdout}");
    assert_eq!(r["certification"]["exitCode"], 0);
    assert_eq!(r["certification"]["gate"], true);
    assert_eq!(r["expectations"]["gatePassed"], true);
    assert!(
        stdout
            .lines()
            .last()
            .unwrap()
            .starts_with("toolcert: gate passed"),
        "{stdout}"
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("failures=\"0\""), "{xml}");
    std::fs::remove_dir_all(dir).ok();
}
