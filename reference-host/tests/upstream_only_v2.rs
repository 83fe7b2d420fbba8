//! Upstream-only mode, major 2 (`HostConfig::upstream_only = Some(V2)`): the
//! reference host as a plain upstream OpenWOP v2 host. Its closed discovery
//! root, tenant-bound run ids in one path segment (projected or
//! percent-encoded; bare and foreign ones refused), seams closed to their
//! upstream members, refusals as the v2 error envelope, the served catalog,
//! and a replay fork of a fixture run. Everything over real HTTP on
//! 127.0.0.1; every wait is bounded.

use crate::common;

use std::time::Duration;

use common::{ALICE, CAROL, ERIN, OPERATOR, bounded, client, discovery, get_json, seam_host, send};
use reference_host::base::ids::project;
use reference_host::{HostConfig, RunningHost, UpstreamMajor};
use serde_json::{Value, json};

const TEST_TIMEOUT: Duration = Duration::from_secs(60);
const CLIENT_TIMEOUT: Duration = Duration::from_secs(20);

/// The v2 upstream-only host, seams on.
async fn host() -> RunningHost {
    seam_host(
        None,
        HostConfig {
            upstream_only: Some(UpstreamMajor::V2),
            ..HostConfig::default()
        },
    )
    .await
}

/// Starts `conformance-noop` as alice; its (tenant-bound) run id.
async fn noop_run(client: &reqwest::Client, base: &str) -> String {
    let reply = send(
        client
            .post(format!("{base}/runs"))
            .json(&json!({"workflowId": "conformance-noop"})),
        Some(ALICE),
    )
    .await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    reply.body["runId"].as_str().expect("runId").to_owned()
}

#[tokio::test]
async fn discovery_is_the_closed_v2_root_of_this_mode() {
    bounded(TEST_TIMEOUT, async {
        let client = client(CLIENT_TIMEOUT);
        let host = host().await;
        let doc = discovery(&client, &host.base_url).await;
        assert_eq!(doc["protocolVersions"], json!(["2.0"]));
        assert_eq!(
            doc["conformance"],
            json!({"seamsProfile": "openwop-conformance-seams-v2"})
        );
        assert_eq!(
            doc["fixtures"],
            json!([
                "conformance-noop",
                "conformance-idempotent",
                "conformance-delay"
            ])
        );
        for absent in ["metadata", "mcp", "a2a", "agents", "memory", "httpClient"] {
            assert!(doc.get(absent).is_none(), "{absent} in {doc}");
        }
        assert!(doc["toolHooks"].get("turnReplay").is_none());
        assert_eq!(
            doc["idempotency"],
            json!({"status": "stable", "since": "2.0", "witness": "witnessable-gated",
                   "crossRegion": "single-region"})
        );
        host.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn run_ids_are_tenant_bound_and_travel_as_one_segment() {
    bounded(TEST_TIMEOUT, async {
        let client = client(CLIENT_TIMEOUT);
        let host = host().await;
        let base = host.base_url.clone();
        let run_id = noop_run(&client, &base).await;
        let (tenant, opaque) = run_id.split_once('/').expect("tenant-bound");
        assert_eq!(tenant, "tenant-a");
        assert!(opaque.len() >= 16, "{run_id}");
        // Projected, percent-encoded: the same run.
        for segment in [project(&run_id), run_id.replace('/', "%2F")] {
            let (status, run) = get_json(&client, &format!("{base}/runs/{segment}"), ALICE).await;
            assert_eq!(status, 200, "{segment}: {run}");
            assert_eq!(run["runId"], run_id);
        }
        // The bare form is refused: this host lists no 1.x version.
        let (status, answer) = get_json(&client, &format!("{base}/runs/{opaque}"), ALICE).await;
        assert_eq!(
            (status, answer["error"].as_str()),
            (400, Some("validation_error"))
        );
        // Another tenant's id is 403 id_tenant_mismatch, before any lookup.
        let (status, answer) =
            get_json(&client, &format!("{base}/runs/{}", project(&run_id)), ERIN).await;
        assert_eq!(
            (status, answer["error"].as_str()),
            (403, Some("id_tenant_mismatch"))
        );
        // Unauthenticated: the handler's 401, whatever the id.
        let anonymous = client
            .get(format!("{base}/runs/{}", project(&run_id)))
            .send()
            .await
            .expect("answers");
        assert_eq!(anonymous.status(), 401);
        // A replay fork of the fixture run: tenant-bound too, its eventsUrl
        // projected, its first event the source's.
        let reply = send(
            client
                .post(format!("{base}/runs/{}:fork", project(&run_id)))
                .json(&json!({"mode": "replay", "fromSeq": 1})),
            Some(ALICE),
        )
        .await;
        assert_eq!(reply.status, 201, "{}", reply.body);
        let fork = reply.body["runId"].as_str().expect("runId");
        assert!(fork.starts_with("tenant-a/"), "{fork}");
        assert_eq!(
            reply.body["eventsUrl"],
            format!("/runs/{}/events", project(fork))
        );
        let reply = send(
            client
                .post(format!("{base}/runs/{}:fork", project(&run_id)))
                .json(&json!({"mode": "replay", "fromSeq": 9})),
            Some(ALICE),
        )
        .await;
        assert_eq!(reply.status, 422, "{}", reply.body);
        assert_eq!(reply.body["error"], "fork_point_invalid");
        host.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn seams_are_closed_to_their_upstream_members() {
    bounded(TEST_TIMEOUT, async {
        let client = client(CLIENT_TIMEOUT);
        let host = host().await;
        let base = host.base_url.clone();
        let seam = |path: &str| format!("{base}/conformance/seams/sample/{path}");
        for (path, body, member) in [
            (
                "test/idempotency/effect-retry",
                json!({"providerUrl": "http://127.0.0.1:9/p", "businessKey": "k"}),
                "businessKey",
            ),
            (
                "test/idempotency/concurrent-claim",
                json!({"executors": 2, "receiverUrl": "http://127.0.0.1:9/r"}),
                "receiverUrl",
            ),
            (
                "toolhooks/invoke",
                json!({"toolName": "t", "credentials": {}}),
                "credentials",
            ),
        ] {
            let reply = send(client.post(seam(path)).json(&body), Some(OPERATOR)).await;
            assert_eq!(reply.status, 400, "{path}: {}", reply.body);
            assert_eq!(reply.body["error"], "validation_error");
            assert!(
                reply.body["message"]
                    .as_str()
                    .is_some_and(|m| m.contains(member)),
                "{path}: {}",
                reply.body
            );
        }
        // toolcert's own seams are not served.
        for path in ["turn/run", "mcp/mount", "tools/session-run"] {
            let reply = send(client.post(seam(path)).json(&json!({})), Some(OPERATOR)).await;
            assert_eq!(reply.status, 404, "{path}");
        }
        // A gate's refusal is the v2 envelope, the seam's answer under details.
        let reply = send(
            client.post(seam("toolhooks/invoke")).json(&json!({
                "toolName": "t", "requiredScopes": ["tools:write"], "grantedScopes": []
            })),
            Some(OPERATOR),
        )
        .await;
        assert_eq!(reply.status, 403, "{}", reply.body);
        assert_eq!(reply.body["error"], "forbidden");
        assert_eq!(reply.body["details"]["toolReturned"]["status"], "forbidden");
        host.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn the_served_catalog_is_a_bare_list_scoped_to_the_caller() {
    bounded(TEST_TIMEOUT, async {
        let client = client(CLIENT_TIMEOUT);
        let host = host().await;
        let base = host.base_url.clone();
        let ids = |list: &Value| -> Vec<String> {
            assert!(list.is_array(), "a bare ToolDescriptor[]: {list}");
            common::tool_ids(list)
        };
        let (status, alice) = get_json(&client, &format!("{base}/tools"), ALICE).await;
        assert_eq!(status, 200);
        assert_eq!(ids(&alice).len(), 4, "{alice}");
        let (_, carol) = get_json(&client, &format!("{base}/tools"), CAROL).await;
        assert_eq!(
            ids(&carol),
            [
                "x-host-refhost-balance-read",
                "x-host-refhost-record-lookup"
            ]
        );
        let (status, compact) =
            get_json(&client, &format!("{base}/tools?view=compact"), ALICE).await;
        assert_eq!(status, 200);
        assert_eq!(ids(&compact["tools"]), ids(&alice));
        host.shutdown().await;
    })
    .await;
}
