//! The reference host as a plain upstream OpenWOP v1 host (`--upstream-only`: v1 discovery
//! without `protocolVersions`, only upstream seams, seam fields and fixtures) is certified the
//! way a host toolcert did not write would be: nothing reads `fail` or `error`, every row
//! that needs one of toolcert's extensions is `blocked` with a reason naming the surface, and
//! the rows the upstream contract can witness pass, at `wire` evidence where no toolcert
//! double could be reached. The verdict table is a snapshot, so a change in what toolcert can
//! judge on an upstream host shows up in review.

use std::fmt::Write as _;

use toolcert::runner::{ReferenceVariant, RunOptions, run_reference};
use toolcert::suite::Suite;
use toolcert::verdict::Disposition;

/// What a `blocked` reason must name: a surface of `scenarios/surfaces.json`, a role the
/// profile lacks, or the self-report rule.
fn names_what_is_missing(detail: &str) -> bool {
    [
        "seam:",
        "field:",
        "fixture:",
        "fact:",
        "--spawn",
        "role \"",
        "self-report",
    ]
    .iter()
    .any(|needle| detail.contains(needle))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_only_host_gets_no_fail_and_blocked_rows_name_the_surface() {
    let suite = Suite::embedded().unwrap();
    let opts = RunOptions {
        reference_host_exe: Some(env!("CARGO_BIN_EXE_toolcert").into()),
        ..RunOptions::default()
    };
    let variant = ReferenceVariant {
        mutant: None,
        upstream_only: true,
    };
    let run = run_reference(&suite, variant, &opts, None).await.unwrap();
    assert_eq!(run.discovery["wireMajor"], 1, "{}", run.discovery);
    assert!(
        run.discovery["wireReason"]
            .as_str()
            .is_some_and(|r| r.contains("protocolVersion")),
        "{}",
        run.discovery
    );
    let mut table = String::new();
    for row in &run.rows {
        assert!(
            !matches!(
                row.disposition,
                Disposition::Fail | Disposition::Warn | Disposition::Error
            ),
            "an upstream-only host must not be convicted: {row:?}"
        );
        if row.disposition == Disposition::Blocked {
            assert!(
                names_what_is_missing(&row.detail),
                "a blocked row must name what is missing: {row:?}"
            );
        }
        let _ = writeln!(
            table,
            "{:14} {:12} {}",
            row.requirement_id,
            row.disposition.as_str(),
            row.evidence.map_or("", |e| e.as_str())
        );
    }
    // The upstream contract alone witnesses the tool-hooks seam and Layer-1 idempotency.
    let passed = |id: &str| {
        run.rows
            .iter()
            .any(|r| r.requirement_id == id && r.disposition == Disposition::Pass)
    };
    for id in [
        "HOOKS-AUTH-1",
        "HOOKS-AUTH-3",
        "HOOKS-AUDIT-1",
        "HOOKS-FAIL-1",
        "HOOKS-RL-1",
        "IDEM-L1-1",
        "IDEM-L1-3",
    ] {
        assert!(passed(id), "{id} should pass on an upstream host");
    }
    // Each profile it claims certifies, at the tier printed, and the run exits 0: rows only
    // toolcert's extensions could witness are reported, never held against it.
    let c = &run.certification;
    assert!(c.certified(), "{}", c.headline);
    assert_eq!(c.exit_code, 0);
    for p in c.profiles.iter().filter(|p| p.decides()) {
        assert!(p.certified, "{}: {}", p.id, p.reason);
        let _ = writeln!(
            table,
            "profile {:16} certified at {} ({} witnesses)",
            p.id,
            p.tier.map_or("-", |t| t.as_str()),
            p.witnesses
        );
    }
    insta::assert_snapshot!("upstream_only_verdicts", table);
}
