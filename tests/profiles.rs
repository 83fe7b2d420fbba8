//! A profile missing roles blocks the rows that need them; it never turns them into failures.

use toolcert::host::HostProfile;
use toolcert::runner::{RunOptions, Target, run_all};
use toolcert::suite::Suite;
use toolcert::verdict::Disposition;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_roles_are_blocked_with_the_reason_never_failed() {
    let host = reference_host::start(reference_host::HostConfig {
        seams_enabled: true,
        ..Default::default()
    })
    .await
    .unwrap();
    let mut profile = HostProfile::default();
    profile
        .set_token_flag("operator=refhost-operator-token")
        .unwrap();
    let target = Target::remote(&host.base_url, profile);
    let suite = Suite::embedded().unwrap();
    let run = run_all(&suite, &target, &RunOptions::default())
        .await
        .unwrap();
    assert!(run.denied());
    for row in &run.rows {
        assert_ne!(row.disposition, Disposition::Fail, "{row:?}");
        // The safe-fetch-run seam needs no role beyond the operator's, so its rows are measured.
        let operator_only = row.scenarios.iter().all(|s| s == "hooks.safe-fetch-pair");
        if operator_only {
            assert_eq!(row.disposition, Disposition::Pass, "{row:?}");
        } else if row.family.starts_with("HOOKS-") && row.requirement_id != "HOOKS-AUTH-4" {
            assert_eq!(row.disposition, Disposition::Blocked, "{row:?}");
            assert!(
                row.detail.contains("roles.")
                    || row.detail.contains("scopes.")
                    || row.detail.contains("no token for role"),
                "{row:?}"
            );
        }
    }
    // Discovery rows need no role and are still measured.
    let disc1 = run
        .rows
        .iter()
        .find(|r| r.requirement_id == "DISC-1")
        .unwrap();
    assert_eq!(disc1.disposition, Disposition::Pass);
    host.shutdown().await;
}
