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
    assert!(!run.certification.certified());
    for row in &run.rows {
        assert_ne!(row.disposition, Disposition::Fail, "{row:?}");
        // The safe-fetch-run seam needs no role beyond the operator's, so its rows are
        // measured, and the rows it shares with a leg that needs the actor's role pass at the
        // evidence that leg could not reach for want of the role.
        let operator_only = row.scenarios.iter().all(|s| s == "hooks.safe-fetch-pair");
        let with_operator_leg = row.scenarios.iter().any(|s| s == "hooks.safe-fetch-pair");
        if operator_only {
            assert_eq!(row.disposition, Disposition::Pass, "{row:?}");
        } else if with_operator_leg && row.disposition == Disposition::Pass {
            assert!(row.detail.contains("roles."), "{row:?}");
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

/// A profile maps a fixture id to the host's own workflow: scenarios start that workflow, and
/// a host that does not know it blocks the rows (its positive control fails), never fails them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_profile_maps_a_fixture_to_the_hosts_own_workflow() {
    let host = reference_host::start(reference_host::HostConfig {
        seams_enabled: true,
        ..Default::default()
    })
    .await
    .unwrap();
    let mut profile = HostProfile::reference();
    profile.fixtures.insert(
        "conformance-idempotent".into(),
        "my-own-idempotent-flow".into(),
    );
    let target = Target::remote(&host.base_url, profile);
    let suite = Suite::embedded().unwrap();
    let only = |s: &toolcert::suite::Scenario| s.id == "idem.l1-replay-noop";
    let run = toolcert::runner::run_selected(&suite, &target, &RunOptions::default(), Some(&only))
        .await
        .unwrap();
    let scenario = &run.scenarios[0];
    let sent: Vec<&serde_json::Value> = scenario
        .transcript
        .exchanges
        .iter()
        .filter_map(|e| e.request_body.as_ref())
        .collect();
    assert!(
        sent.iter()
            .all(|b| b["workflowId"] == "my-own-idempotent-flow"),
        "{sent:?}"
    );
    for row in &run.rows {
        assert_eq!(row.disposition, Disposition::Blocked, "{row:?}");
        assert!(row.detail.contains("first-created"), "{row:?}");
    }
    host.shutdown().await;
}
