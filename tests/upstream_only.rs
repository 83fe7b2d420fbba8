//! The reference host as a plain upstream OpenWOP host, in each major (`--upstream-only=v1`:
//! v1 discovery without `protocolVersions`, only the v1 seams, which ignore members they do
//! not know; `--upstream-only=v2`: the closed v2 root, the seams profile with closed bodies,
//! tenant-bound run ids), is certified the way a host toolcert did not write would be: nothing
//! reads `fail`, `warn` or `error`, every `blocked` row names the surface it misses, and the rows
//! an upstream surface can witness pass. The verdict tables are snapshots, so a change in what
//! toolcert can judge on an upstream host shows up in review.

use std::fmt::Write as _;

use reference_host::UpstreamMajor;
use toolcert::runner::{ReferenceVariant, RunOptions, RunOutcome, run_reference};
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

/// Rows of the CAT, DESC, EFF, RPL and DISC families an upstream surface witnesses on both
/// upstream-only hosts: the catalog the host serves, read as the profile's roles, the
/// effect-retry seam with only `providerUrl`, and discovery.
const MEASURED_ON_BOTH: &[&str] = &[
    "DISC-4", "CAT-1", "CAT-2", "CAT-3", "CAT-4", "CAT-5", "CAT-6", "CAT-8", "CAT-9", "CAT-10",
    "CAT-11", "CAT-12", "DESC-1", "DESC-2", "DESC-3", "DESC-4", "DISC-8", "EFF-1", "EFF-2",
    "EFF-3", "EFF-5", "EFF-9", "EFF-11",
];

/// Rows measured on the v1 host only: v1's own records and claims-checks.
const MEASURED_ON_V1: &[&str] = &["DISC-7", "EFF-7"];

/// Rows measured on the v2 host only: the closed root, the replay surface (fork, the
/// effect-seam manifest, effect-seams/fire) and the catalog's order advisory.
const MEASURED_ON_V2: &[&str] = &[
    "DISC-1", "DISC-2", "DISC-3", "DISC-5", "DISC-6", "CAT-7", "DESC-5", "EFF-10", "RPL-1",
    "RPL-2", "RPL-6", "RPL-9", "RPL-11",
];

/// Run the whole suite against the upstream-only host of `major`, check that nothing convicts
/// it and that blocked rows say what is missing, and return the verdict table.
async fn certify(major: UpstreamMajor) -> (RunOutcome, String) {
    let suite = Suite::embedded().unwrap();
    let opts = RunOptions {
        reference_host_exe: Some(env!("CARGO_BIN_EXE_toolcert").into()),
        ..RunOptions::default()
    };
    let variant = ReferenceVariant {
        upstream_only: Some(major),
        ..ReferenceVariant::default()
    };
    let run = run_reference(&suite, variant, &opts, None).await.unwrap();
    let mut table = String::new();
    for row in &run.rows {
        assert!(
            !matches!(
                row.disposition,
                Disposition::Fail | Disposition::Warn | Disposition::Error
            ),
            "an upstream-only {major} host must not be convicted: {row:?}"
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
    // Each profile it claims certifies, at the tier printed, and the run exits 0: rows only
    // toolcert's extensions could witness are reported, never held against it.
    let c = &run.certification;
    assert!(c.certified(), "upstream-only {major}: {}", c.headline);
    assert_eq!(c.exit_code, 0);
    for p in c.profiles.iter().filter(|p| p.decides()) {
        assert!(p.certified, "upstream-only {major}: {}: {}", p.id, p.reason);
        let _ = writeln!(
            table,
            "profile {:16} certified at {} ({} witnesses)",
            p.id,
            p.tier.map_or("-", |t| t.as_str()),
            p.witnesses
        );
    }
    (run, table)
}

/// The rows of `ids` that did not pass.
fn not_passed<'a>(run: &RunOutcome, ids: &[&'a str]) -> Vec<(&'a str, String)> {
    ids.iter()
        .filter_map(|id| {
            let row = run.rows.iter().find(|r| r.requirement_id == *id);
            match row {
                Some(r) if r.disposition == Disposition::Pass => None,
                Some(r) => Some((*id, format!("{}: {}", r.disposition.as_str(), r.detail))),
                None => Some((*id, "no such row".to_string())),
            }
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_only_v1_host_gets_no_fail_and_its_upstream_rows_are_measured() {
    let (run, table) = certify(UpstreamMajor::V1).await;
    assert_eq!(run.discovery["wireMajor"], 1, "{}", run.discovery);
    assert!(
        run.discovery["wireReason"]
            .as_str()
            .is_some_and(|r| r.contains("protocolVersion")),
        "{}",
        run.discovery
    );
    // The upstream contract alone witnesses the tool-hooks seam, Layer-1 idempotency (the
    // hold seam, a same-key burst, the span scrape seam) and the tool error object…
    let mut expected = vec![
        "HOOKS-AUTH-1",
        "HOOKS-AUTH-2",
        "HOOKS-AUTH-3",
        "HOOKS-AUDIT-1",
        "HOOKS-AUDIT-3",
        "HOOKS-FAIL-1",
        "HOOKS-FAIL-3",
        "HOOKS-RL-1",
        "HOOKS-RL-3",
        "IDEM-L1-1",
        "IDEM-L1-3",
        "IDEM-L1-4",
        "IDEM-L1-7",
        "IDEM-L1-9",
        "IDEM-L1-10",
        "ERR-4",
    ];
    // …and the catalog, effect and discovery rows through the surfaces a v1 host serves.
    expected.extend(MEASURED_ON_BOTH);
    expected.extend(MEASURED_ON_V1);
    let missed = not_passed(&run, &expected);
    assert!(
        missed.is_empty(),
        "not measured on the v1 host: {missed:#?}"
    );
    insta::assert_snapshot!("upstream_only_verdicts", table);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_only_v2_host_gets_no_fail_and_its_upstream_rows_are_measured() {
    let (run, table) = certify(UpstreamMajor::V2).await;
    assert_eq!(run.discovery["wireMajor"], 2, "{}", run.discovery);
    let mut expected: Vec<&str> = MEASURED_ON_BOTH.to_vec();
    expected.extend(MEASURED_ON_V2);
    let missed = not_passed(&run, &expected);
    assert!(
        missed.is_empty(),
        "not measured on the v2 host: {missed:#?}"
    );
    insta::assert_snapshot!("upstream_only_v2_verdicts", table);
}
