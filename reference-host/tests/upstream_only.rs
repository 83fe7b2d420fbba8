//! Upstream-only mode (`HostConfig::upstream_only`): the reference host as a
//! plain upstream OpenWOP v1 host. Discovery, the `/v1` routes, Layer 1,
//! the v1 poll cursor and event names, the upstream fixtures, the upstream
//! seams, and which mutants still break it. Everything over real HTTP on
//! 127.0.0.1; every wait is bounded.

use crate::common;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing;
use common::{
    ALICE, CAROL, ERIN, LabelReceiver, Loopback, OPERATOR, assert_observable, bounded, client,
    discovery, seam_host, sha256_jcs,
};
use reference_host::base::events::{
    NewEvent, REPLAY_DIVERGED_AT_REFUSAL, RUN_COMPLETED, TOOL_CALLED, TOOL_RETURNED,
};
use reference_host::mutants::Mutant;
use reference_host::store::storage::RunStatus;
use reference_host::{
    AppState, HostConfig, RateLimitConfig, RunningHost, UpstreamMajor, router, start,
};
use serde_json::{Value, json};

const TEST_TIMEOUT: Duration = Duration::from_secs(30);
const LONG_TIMEOUT: Duration = Duration::from_secs(240);
const CLIENT_TIMEOUT: Duration = Duration::from_secs(20);

/// SHA-256 of `{}` in RFC 8785 form.
const EMPTY_ARGS_HASH: &str = "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a";

// ---------------------------------------------------------------------------
// Hosts and requests.

/// Upstream-only, two calls per (principal, tool) refilled every 30 s.
fn config() -> HostConfig {
    HostConfig {
        upstream_only: Some(UpstreamMajor::V1),
        rate_limit: RateLimitConfig {
            capacity: 2,
            refill_every: Duration::from_secs(30),
        },
        ..HostConfig::default()
    }
}

/// An upstream-only host with the seams on and `mutant` planted.
async fn host(mutant: Option<Mutant>) -> RunningHost {
    seam_host(mutant, config()).await
}

fn fresh(prefix: &str) -> String {
    format!("{prefix}-{}", uuid::Uuid::new_v4().simple())
}

/// A fresh valid Idempotency-Key.
fn fresh_key() -> String {
    format!("idem.{}", uuid::Uuid::new_v4().simple())
}

#[derive(Debug)]
struct Answer {
    status: u16,
    headers: HeaderMap,
    body: Value,
    text: String,
}

impl Answer {
    fn replayed(&self) -> bool {
        self.headers
            .get("openwop-idempotent-replay")
            .is_some_and(|v| v == "true")
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The run id of a `POST /v1/runs` answer.
    fn run_id(&self) -> String {
        self.body["runId"]
            .as_str()
            .map(str::to_owned)
            .unwrap_or_else(|| panic!("no runId in {}", self.text))
    }

    /// Asserts the flat v1 error body `{error, message}` with `status`.
    fn assert_flat_error(&self, status: u16, code: &str) {
        assert_eq!(self.status, status, "{}", self.text);
        let keys: BTreeSet<&str> = self
            .body
            .as_object()
            .unwrap_or_else(|| panic!("not an object: {}", self.text))
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, BTreeSet::from(["error", "message"]), "{}", self.text);
        assert_eq!(self.body["error"], code, "{}", self.text);
        assert!(
            self.body["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{}",
            self.text
        );
    }
}

async fn answer(request: reqwest::RequestBuilder, token: Option<&str>) -> Answer {
    let request = match token {
        Some(token) => request.bearer_auth(token),
        None => request,
    };
    let response = request.send().await.expect("answers");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let text = response.text().await.expect("body");
    let body = serde_json::from_str(&text).unwrap_or(Value::Null);
    Answer {
        status,
        headers,
        body,
        text,
    }
}

/// `POST /v1/runs` as `token`, with an optional Idempotency-Key.
async fn post_run(
    client: &reqwest::Client,
    host: &RunningHost,
    token: &str,
    key: Option<&str>,
    body: &Value,
) -> Answer {
    let mut request = client.post(format!("{}/v1/runs", host.base_url)).json(body);
    if let Some(key) = key {
        request = request.header("Idempotency-Key", key);
    }
    answer(request, Some(token)).await
}

async fn get(client: &reqwest::Client, host: &RunningHost, path: &str, token: &str) -> Answer {
    answer(client.get(format!("{}{path}", host.base_url)), Some(token)).await
}

/// `POST {path}` with `body` as `token`.
async fn post(
    client: &reqwest::Client,
    host: &RunningHost,
    path: &str,
    token: Option<&str>,
    body: &Value,
) -> Answer {
    answer(
        client.post(format!("{}{path}", host.base_url)).json(body),
        token,
    )
    .await
}

/// The upstream tool-hooks seam, as the operator.
async fn invoke(client: &reqwest::Client, host: &RunningHost, body: Value) -> Answer {
    post(
        client,
        host,
        "/v1/host/sample/toolhooks/invoke",
        Some(OPERATOR),
        &body,
    )
    .await
}

/// An upstream idempotency seam, as the operator.
async fn seam(client: &reqwest::Client, host: &RunningHost, name: &str, body: Value) -> Answer {
    post(
        client,
        host,
        &format!("/v1/host/sample/test/idempotency/{name}"),
        Some(OPERATOR),
        &body,
    )
    .await
}

/// The member names of an object.
fn keys(value: &Value) -> BTreeSet<&str> {
    value
        .as_object()
        .map(|object| object.keys().map(String::as_str).collect())
        .unwrap_or_default()
}

fn noop() -> Value {
    json!({"workflowId": "conformance-noop"})
}

// ---------------------------------------------------------------------------
// Discovery.

#[tokio::test]
async fn discovery_is_the_v1_document_whatever_version_is_asked_for() {
    bounded(TEST_TIMEOUT, async {
        let client = client(CLIENT_TIMEOUT);
        let host = host(None).await;
        let doc = discovery(&client, &host.base_url).await;
        assert_eq!(doc["protocolVersion"], "1.0", "{doc}");
        for v2 in ["protocolVersions", "preferredVersion", "conformance"] {
            assert!(doc.get(v2).is_none(), "{v2} in {doc}");
        }
        assert_eq!(
            doc["toolHooks"],
            json!({"supported": true, "prePostEvents": true,
                   "perToolAuthorization": true, "perToolRateLimit": true})
        );
        assert_eq!(
            doc["idempotency"],
            json!({"supported": true, "layer1RetentionSeconds": 86400,
                   "layer2RetentionSeconds": 1209600, "crossRegion": "single-region"})
        );
        assert_eq!(
            doc["authorization"],
            json!({"supported": true, "failClosed": true})
        );
        assert_eq!(
            doc["toolCatalog"],
            json!({"supported": true, "sources": ["host-extension"], "compactView": true})
        );
        // The deprecated wrapper mirrors the root families.
        for family in ["toolHooks", "idempotency", "authorization", "toolCatalog"] {
            assert_eq!(doc["capabilities"][family], doc[family], "{family}");
        }
        assert_eq!(
            doc["refusedCapabilities"],
            json!(["replay", "mcp", "a2a", "httpClient", "aiProviders"])
        );
        assert_eq!(
            doc["fixtures"],
            json!([
                "conformance-noop",
                "conformance-idempotent",
                "conformance-delay"
            ])
        );
        assert_eq!(doc["implementation"]["name"], "toolcert-reference-host");
        assert_eq!(doc["implementation"]["mode"], "upstream-only");
        assert!(doc["implementation"]["version"].is_string());
        // No v2 family at the root.
        for v2 in ["replay", "mcp", "httpClient", "memory"] {
            assert!(doc.get(v2).is_none(), "{v2} in {doc}");
        }

        for version in ["2.0", "1.0", "nonsense"] {
            let asked: Value = client
                .get(format!("{}/.well-known/openwop", host.base_url))
                .header("OpenWOP-Version", version)
                .send()
                .await
                .expect("answers")
                .json()
                .await
                .expect("json");
            assert_eq!(asked, doc, "OpenWOP-Version: {version}");
        }
        host.shutdown().await;
    })
    .await;
}

// ---------------------------------------------------------------------------
// Paths and Layer 1.

#[tokio::test]
async fn v2_paths_are_unknown_and_unknown_routes_are_flat_404s() {
    bounded(TEST_TIMEOUT, async {
        let client = client(CLIENT_TIMEOUT);
        let host = host(None).await;
        post(&client, &host, "/runs", Some(ALICE), &noop())
            .await
            .assert_flat_error(404, "not_found");
        let run = post_run(&client, &host, ALICE, None, &noop()).await;
        assert_eq!(run.status, 201, "{}", run.text);
        let run_id = run.run_id();
        for path in [
            format!("/runs/{run_id}"),
            format!("/runs/{run_id}/events/poll"),
            "/tools".to_owned(),
            "/host/effect-seams".to_owned(),
            "/v1/nope".to_owned(),
        ] {
            get(&client, &host, &path, ALICE)
                .await
                .assert_flat_error(404, "not_found");
        }
        for path in [
            "/mcp",
            "/webhooks",
            "/conformance/seams/sample/toolhooks/invoke",
            "/conformance/seams/sample/test/idempotency/hold",
        ] {
            post(&client, &host, path, Some(OPERATOR), &json!({}))
                .await
                .assert_flat_error(404, "not_found");
        }
        // `:cancel` is a v2 spelling.
        post(
            &client,
            &host,
            &format!("/runs/{run_id}:cancel"),
            Some(ALICE),
            &json!({}),
        )
        .await
        .assert_flat_error(404, "not_found");
        // A known route with the wrong method is an unknown route too.
        get(&client, &host, "/v1/runs", ALICE)
            .await
            .assert_flat_error(404, "not_found");
        host.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn v1_runs_replay_a_key_with_the_same_body_and_refuse_another_body() {
    bounded(TEST_TIMEOUT, async {
        let client = client(CLIENT_TIMEOUT);
        let host = host(None).await;
        let key = fresh_key();
        let body = json!({"workflowId": "conformance-idempotent", "inputs": {"nonce": fresh("n")}});
        let first = post_run(&client, &host, ALICE, Some(&key), &body).await;
        assert_eq!(first.status, 201, "{}", first.text);
        assert_eq!(first.body["status"], "completed");
        assert!(!first.replayed(), "a first answer is no replay");
        let again = post_run(&client, &host, ALICE, Some(&key), &body).await;
        assert_eq!(again.status, 201, "{}", again.text);
        assert!(again.replayed(), "{:?}", again.headers);
        assert_eq!(again.body, first.body, "the cached answer");

        let other =
            json!({"workflowId": "conformance-idempotent", "inputs": {"nonce": fresh("n")}});
        post_run(&client, &host, ALICE, Some(&key), &other)
            .await
            .assert_flat_error(409, "idempotency_key_mismatch");

        let run = get(
            &client,
            &host,
            &format!("/v1/runs/{}", first.run_id()),
            ALICE,
        )
        .await;
        assert_eq!(run.status, 200, "{}", run.text);
        assert_eq!(run.body["status"], "completed");

        // No key: every start is a new run.
        let one = post_run(&client, &host, ALICE, None, &noop()).await;
        let two = post_run(&client, &host, ALICE, None, &noop()).await;
        assert_ne!(one.run_id(), two.run_id());
        host.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn only_the_upstream_fixtures_exist() {
    bounded(TEST_TIMEOUT, async {
        let client = client(CLIENT_TIMEOUT);
        let host = host(None).await;
        for id in ["conformance-effect", "conformance-flaky", "no-such-flow"] {
            post_run(&client, &host, ALICE, None, &json!({"workflowId": id}))
                .await
                .assert_flat_error(404, "workflow_not_found");
        }
        let missing = post_run(
            &client,
            &host,
            ALICE,
            None,
            &json!({"workflowId": "conformance-idempotent"}),
        )
        .await;
        missing.assert_flat_error(400, "validation_error");
        assert!(
            missing.body["message"]
                .as_str()
                .is_some_and(|m| m.contains("inputs.nonce")),
            "{}",
            missing.text
        );
        let too_long = post_run(
            &client,
            &host,
            ALICE,
            None,
            &json!({"workflowId": "conformance-delay", "inputs": {"delayMs": 30_001}}),
        )
        .await;
        too_long.assert_flat_error(400, "validation_error");
        // runs:write is still required.
        post_run(&client, &host, OPERATOR, None, &noop())
            .await
            .assert_flat_error(403, "forbidden");
        answer(
            client
                .post(format!("{}/v1/runs", host.base_url))
                .json(&noop()),
            None,
        )
        .await
        .assert_flat_error(401, "unauthenticated");
        host.shutdown().await;
    })
    .await;
}

// ---------------------------------------------------------------------------
// Reads: the v1 cursor, v1 event names, the delay fixture, cancellation.

#[tokio::test]
async fn the_poll_reads_last_sequence_then_since_and_ignores_after_sequence() {
    bounded(TEST_TIMEOUT, async {
        let client = client(CLIENT_TIMEOUT);
        let host = host(None).await;
        let run_id = post_run(&client, &host, ALICE, None, &noop())
            .await
            .run_id();
        let poll = async |query: &str| {
            let page = get(
                &client,
                &host,
                &format!("/v1/runs/{run_id}/events/poll?{query}"),
                ALICE,
            )
            .await;
            assert_eq!(page.status, 200, "{query}: {}", page.text);
            page.body
        };
        let sequences = |page: &Value| -> Vec<i64> {
            page["events"]
                .as_array()
                .expect("events")
                .iter()
                .map(|e| e["sequence"].as_i64().expect("sequence"))
                .collect()
        };
        let all = poll("").await;
        assert_eq!(sequences(&all), [0, 1], "{all}");
        assert_eq!(all["events"][0]["type"], "run.started");
        assert_eq!(all["events"][1]["type"], "run.completed");
        assert_eq!(all["lastSequence"], 1);
        assert_eq!(all["isTerminal"], true);
        assert_eq!(sequences(&poll("lastSequence=0").await), [1]);
        assert_eq!(sequences(&poll("lastSequence=-1").await), [0, 1]);
        assert_eq!(sequences(&poll("since=0").await), [1]);
        assert_eq!(sequences(&poll("lastSequence=1&since=-1").await), [0i64; 0]);
        // v2's cursor is not read: everything comes back.
        assert_eq!(sequences(&poll("afterSequence=0").await), [0, 1]);
        let bad = get(
            &client,
            &host,
            &format!("/v1/runs/{run_id}/events/poll?lastSequence=x"),
            ALICE,
        )
        .await;
        bad.assert_flat_error(400, "validation_error");
        assert!(bad.text.contains("lastSequence"), "{}", bad.text);
        // Another tenant's run is an unknown run.
        get(
            &client,
            &host,
            &format!("/v1/runs/{run_id}/events/poll"),
            ERIN,
        )
        .await
        .assert_flat_error(404, "not_found");
        host.shutdown().await;
    })
    .await;
}

/// Serves `router(state)` on an ephemeral port; the server stops when the
/// returned task is aborted.
async fn serve(state: AppState) -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let app = router(state);
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://{addr}"), task)
}

#[tokio::test]
async fn every_read_path_serves_v1_event_type_names() {
    bounded(TEST_TIMEOUT, async {
        let client = client(CLIENT_TIMEOUT);
        // No upstream route writes tool events, so they are written straight
        // into the store, as a v2 run of the same store would have them.
        let stored = [
            TOOL_CALLED,
            TOOL_RETURNED,
            "tool.session-opened",
            "tool.session-closed",
            REPLAY_DIVERGED_AT_REFUSAL,
        ];
        let served_by = async |upstream_only: bool| {
            let state = AppState::new(&HostConfig {
                upstream_only: upstream_only.then_some(UpstreamMajor::V1),
                ..HostConfig::default()
            })
            .expect("state");
            let run_id = fresh("run");
            state
                .storage()
                .create_run_in(&run_id, "alice", "tenant-a")
                .expect("run");
            for kind in stored {
                state
                    .storage()
                    .append_event(&run_id, NewEvent::new(kind, json!({})))
                    .expect("event");
            }
            state
                .storage()
                .finish_run(
                    &run_id,
                    RunStatus::Completed,
                    None,
                    NewEvent::new(RUN_COMPLETED, json!({"result": null})),
                )
                .expect("finish");
            let (base, task) = serve(state).await;
            let prefix = if upstream_only { "/v1" } else { "" };
            let poll: Value = client
                .get(format!(
                    "{base}{prefix}/runs/{run_id}/events/poll?streamMode=debug"
                ))
                .bearer_auth(ALICE)
                .send()
                .await
                .expect("poll")
                .json()
                .await
                .expect("json");
            let polled: Vec<String> = poll["events"]
                .as_array()
                .expect("events")
                .iter()
                .map(|e| e["type"].as_str().expect("type").to_owned())
                .collect();
            let stream = client
                .get(format!(
                    "{base}{prefix}/runs/{run_id}/events?streamMode=debug"
                ))
                .bearer_auth(ALICE)
                .send()
                .await
                .expect("stream")
                .text()
                .await
                .expect("text");
            task.abort();
            let mut streamed = Vec::new();
            for frame in stream.split("\n\n").filter(|f| f.starts_with("id:")) {
                let lines: Vec<&str> = frame.lines().collect();
                let name = lines[1].strip_prefix("event: ").expect("event line");
                let data: Value =
                    serde_json::from_str(lines[2].strip_prefix("data: ").expect("data line"))
                        .expect("data json");
                assert_eq!(data["type"], name, "{frame}");
                streamed.push(name.to_owned());
            }
            (polled, streamed)
        };
        let v1 = [
            "agent.toolCalled",
            "agent.toolReturned",
            "tool.session.opened",
            "tool.session.closed",
            "replay.divergedAtRefusal",
            "run.completed",
        ];
        let (polled, streamed) = served_by(true).await;
        assert_eq!(polled, v1);
        assert_eq!(streamed, v1);
        // The default mode serves the stored names.
        let (polled, streamed) = served_by(false).await;
        let mut v2: Vec<&str> = stored.to_vec();
        v2.push(RUN_COMPLETED);
        assert_eq!(polled, v2);
        assert_eq!(streamed, v2);
    })
    .await;
}

#[tokio::test]
async fn the_delay_fixture_runs_in_the_background_and_can_be_cancelled() {
    bounded(TEST_TIMEOUT, async {
        let client = client(CLIENT_TIMEOUT);
        let host = host(None).await;
        let started = std::time::Instant::now();
        let run = post_run(
            &client,
            &host,
            ALICE,
            None,
            &json!({"workflowId": "conformance-delay", "inputs": {"delayMs": 400}}),
        )
        .await;
        assert_eq!(run.status, 201, "{}", run.text);
        assert_eq!(run.body["status"], "running");
        let run_id = run.run_id();
        // The stream ends once the run completes.
        let stream = client
            .get(format!("{}/v1/runs/{run_id}/events", host.base_url))
            .bearer_auth(ALICE)
            .send()
            .await
            .expect("stream")
            .text()
            .await
            .expect("text");
        assert!(stream.contains("event: run.started"), "{stream}");
        assert!(stream.contains("event: run.completed"), "{stream}");
        assert!(started.elapsed() >= Duration::from_millis(400));
        let done = get(&client, &host, &format!("/v1/runs/{run_id}"), ALICE).await;
        assert_eq!(done.body["status"], "completed", "{}", done.text);
        // A long poll wakes on the terminal event too.
        let slow = post_run(
            &client,
            &host,
            ALICE,
            None,
            &json!({"workflowId": "conformance-delay", "inputs": {"delayMs": 300}}),
        )
        .await
        .run_id();
        let page = get(
            &client,
            &host,
            &format!("/v1/runs/{slow}/events/poll?lastSequence=0&timeout=10"),
            ALICE,
        )
        .await;
        assert_eq!(
            page.body["events"][0]["type"], "run.completed",
            "{}",
            page.text
        );

        // Cancellation.
        let long = post_run(
            &client,
            &host,
            ALICE,
            None,
            &json!({"workflowId": "conformance-delay", "inputs": {"delayMs": 30_000}}),
        )
        .await
        .run_id();
        let cancelled = post(
            &client,
            &host,
            &format!("/v1/runs/{long}/cancel"),
            Some(ALICE),
            &json!({}),
        )
        .await;
        assert_eq!(cancelled.status, 200, "{}", cancelled.text);
        assert_eq!(
            cancelled.body,
            json!({"runId": long, "status": "cancelled"})
        );
        let run = get(&client, &host, &format!("/v1/runs/{long}"), ALICE).await;
        assert_eq!(run.body["status"], "cancelled");
        let events = get(
            &client,
            &host,
            &format!("/v1/runs/{long}/events/poll"),
            ALICE,
        )
        .await;
        let kinds: Vec<&str> = events.body["events"]
            .as_array()
            .expect("events")
            .iter()
            .filter_map(|e| e["type"].as_str())
            .collect();
        assert_eq!(kinds, ["run.started", "run.cancelled"]);
        let again = post(
            &client,
            &host,
            &format!("/v1/runs/{long}/cancel"),
            Some(ALICE),
            &json!({}),
        )
        .await;
        again.assert_flat_error(409, "refhost.run_already_terminal");
        host.shutdown().await;
    })
    .await;
}

// ---------------------------------------------------------------------------
// The tool-hooks seam.

/// Asserts the seam response shape: exactly `toolCalled` and `toolReturned`
/// (no runId: no run is created), and `toolCalled` exactly `{argsHash,
/// principal, transport}`.
fn assert_seam_response(answer: &Answer) {
    assert_eq!(
        keys(&answer.body),
        BTreeSet::from(["toolCalled", "toolReturned"]),
        "{}",
        answer.text
    );
    assert_eq!(
        keys(&answer.body["toolCalled"]),
        BTreeSet::from(["argsHash", "principal", "transport"]),
        "{}",
        answer.text
    );
}

#[tokio::test]
async fn granted_scopes_covering_the_required_ones_run_the_call() {
    bounded(TEST_TIMEOUT, async {
        let client = client(CLIENT_TIMEOUT);
        let host = host(None).await;
        let args = json!({"b": 10.0, "a": [1e21, "x"]});
        let ok = invoke(
            &client,
            &host,
            json!({"principal": "mallory", "toolName": fresh("t"), "args": args,
                   "requiredScopes": ["tools:write"],
                   "grantedScopes": ["tools:read", "tools:write"], "transport": "mcp"}),
        )
        .await;
        assert_eq!(ok.status, 200, "{}", ok.text);
        assert_seam_response(&ok);
        assert_eq!(
            ok.body["toolCalled"],
            json!({"argsHash": sha256_jcs(&args), "principal": "mallory", "transport": "mcp"})
        );
        assert_eq!(
            keys(&ok.body["toolReturned"]),
            BTreeSet::from(["status", "durationMs"])
        );
        assert_eq!(ok.body["toolReturned"]["status"], "ok");
        assert!(
            ok.body["toolReturned"]["durationMs"].is_u64(),
            "{}",
            ok.text
        );

        // The defaults: principal core.system, args {}, transport native,
        // and no required scopes needs no grant.
        let bare = invoke(&client, &host, json!({"toolName": fresh("t")})).await;
        assert_eq!(bare.status, 200, "{}", bare.text);
        assert_eq!(
            bare.body["toolCalled"],
            json!({"argsHash": EMPTY_ARGS_HASH, "principal": "core.system",
                   "transport": "native"})
        );
        host.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn a_missing_or_short_grant_is_forbidden_with_the_seam_response() {
    bounded(TEST_TIMEOUT, async {
        let client = client(CLIENT_TIMEOUT);
        let host = host(None).await;
        for (case, grant) in [
            ("omitted", None),
            ("empty", Some(json!([]))),
            ("other", Some(json!(["tools:read"]))),
        ] {
            let mut body = json!({"principal": "alice", "toolName": fresh("t"),
                                  "requiredScopes": ["tools:write"]});
            if let Some(grant) = grant {
                body["grantedScopes"] = grant;
            }
            let denied = invoke(&client, &host, body).await;
            assert_eq!(denied.status, 403, "{case}: {}", denied.text);
            assert_seam_response(&denied);
            let returned = &denied.body["toolReturned"];
            assert_eq!(returned["status"], "forbidden", "{case}");
            assert!(returned.get("durationMs").is_none(), "{case}: {returned}");
            assert_eq!(returned["error"]["code"], "forbidden", "{case}");
            assert!(returned["error"]["message"].is_string(), "{case}");
        }
        // alice really holds tools:write, but the seam's caller states the
        // grant: the host's record of the principal is not consulted.
        let denied = invoke(
            &client,
            &host,
            json!({"principal": "alice", "toolName": fresh("t"),
                   "requiredScopes": ["tools:write"], "grantedScopes": []}),
        )
        .await;
        assert_eq!(denied.status, 403, "{}", denied.text);
        host.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn a_simulated_tool_error_ran_and_threw() {
    bounded(TEST_TIMEOUT, async {
        let client = client(CLIENT_TIMEOUT);
        let host = host(None).await;
        let failed = invoke(
            &client,
            &host,
            json!({"toolName": fresh("t"), "simulateToolError": true}),
        )
        .await;
        assert_eq!(failed.status, 200, "{}", failed.text);
        assert_seam_response(&failed);
        let returned = &failed.body["toolReturned"];
        assert_eq!(
            keys(returned),
            BTreeSet::from(["status", "durationMs", "error"])
        );
        assert_eq!(returned["status"], "error");
        assert!(returned["durationMs"].is_u64());
        assert_eq!(returned["error"]["code"], "tool_execution_failed");
        assert!(returned["error"]["message"].is_string());
        host.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn real_calls_exhaust_the_bucket_of_one_principal_and_tool() {
    bounded(TEST_TIMEOUT, async {
        let client = client(CLIENT_TIMEOUT);
        let host = host(None).await;
        let tool = fresh("t");
        let call = async |principal: &str, tool: &str| {
            invoke(
                &client,
                &host,
                json!({"principal": principal, "toolName": tool}),
            )
            .await
        };
        // Capacity 2.
        for _ in 0..2 {
            assert_eq!(call("alice", &tool).await.status, 200);
        }
        let limited = call("alice", &tool).await;
        assert_eq!(limited.status, 429, "{}", limited.text);
        assert_seam_response(&limited);
        let returned = &limited.body["toolReturned"];
        assert_eq!(returned["status"], "rate_limited");
        assert!(returned.get("durationMs").is_none(), "{returned}");
        let retry_after: u64 = limited
            .header("retry-after")
            .expect("Retry-After")
            .parse()
            .expect("whole seconds");
        assert!((1..=30).contains(&retry_after), "{retry_after}");
        // Other buckets are untouched.
        assert_eq!(call("alice", &fresh("other")).await.status, 200);
        assert_eq!(call("bob", &tool).await.status, 200);
        // The simulation forces the arm on a full bucket.
        let forced = invoke(
            &client,
            &host,
            json!({"toolName": fresh("t"), "simulateRateLimitExhausted": true}),
        )
        .await;
        assert_eq!(forced.status, 429, "{}", forced.text);
        assert_eq!(forced.body["toolReturned"]["status"], "rate_limited");
        assert!(forced.header("retry-after").is_some());
        // Authorization comes before the bucket: a denied call takes no token.
        let denied_tool = fresh("t");
        for _ in 0..3 {
            let denied = invoke(
                &client,
                &host,
                json!({"toolName": denied_tool, "requiredScopes": ["x"]}),
            )
            .await;
            assert_eq!(denied.status, 403, "{}", denied.text);
        }
        let allowed = invoke(&client, &host, json!({"toolName": denied_tool})).await;
        assert_eq!(allowed.status, 200, "{}", allowed.text);
        host.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn toolcert_extensions_are_ignored_and_no_receiver_is_ever_called() {
    bounded(TEST_TIMEOUT, async {
        let client = client(CLIENT_TIMEOUT);
        let host = host(None).await;
        let receiver = LabelReceiver::answering(json!({"result": "done"})).await;
        let ok = invoke(
            &client,
            &host,
            json!({"toolName": fresh("t"), "args": {"k": {"$credential": "c"}},
                   "receiverUrl": receiver.url("/ok/invoke"),
                   "inputSchema": {"type": "object", "required": ["missing"]},
                   "timeoutMs": 1, "credentials": {"c": "sk-secret"},
                   "somethingElse": [1, 2]}),
        )
        .await;
        assert_eq!(ok.status, 200, "{}", ok.text);
        assert_seam_response(&ok);
        assert_eq!(ok.body["toolReturned"]["status"], "ok");
        // `$credential` is not resolved: the args are hashed as given.
        assert_eq!(
            ok.body["toolCalled"]["argsHash"],
            sha256_jcs(&json!({"k": {"$credential": "c"}}))
        );
        // Even extensions of the wrong type are ignored.
        let odd = invoke(
            &client,
            &host,
            json!({"toolName": fresh("t"), "receiverUrl": 5, "timeoutMs": "slow",
                   "simulateToolError": true}),
        )
        .await;
        assert_eq!(odd.status, 200, "{}", odd.text);
        assert_eq!(odd.body["toolReturned"]["status"], "error");
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(receiver.count("invoke"), 0, "the receiver was called");

        host.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn bad_requests_and_callers_are_refused_before_anything_is_evaluated() {
    bounded(TEST_TIMEOUT, async {
        let client = client(CLIENT_TIMEOUT);
        let host = host(None).await;
        for (body, field) in [
            (json!({}), "toolName"),
            (json!({"toolName": 7}), "toolName"),
            (json!({"toolName": "t", "principal": false}), "principal"),
            (
                json!({"toolName": "t", "requiredScopes": "x"}),
                "requiredScopes",
            ),
            (
                json!({"toolName": "t", "grantedScopes": [3]}),
                "grantedScopes",
            ),
            (json!({"toolName": "t", "args": [1]}), "args"),
            (json!({"toolName": "t", "transport": "grpc"}), "transport"),
            (
                json!({"toolName": "t", "simulateToolError": 1}),
                "simulateToolError",
            ),
            (
                json!({"toolName": "t", "simulateRateLimitExhausted": "yes"}),
                "simulateRateLimitExhausted",
            ),
        ] {
            let refused = invoke(&client, &host, body.clone()).await;
            refused.assert_flat_error(400, "validation_error");
            assert!(refused.text.contains(field), "{body}: {}", refused.text);
        }
        let malformed = answer(
            client
                .post(format!("{}/v1/host/sample/toolhooks/invoke", host.base_url))
                .header("content-type", "application/json")
                .body("{not json"),
            Some(OPERATOR),
        )
        .await;
        malformed.assert_flat_error(400, "validation_error");
        post(
            &client,
            &host,
            "/v1/host/sample/toolhooks/invoke",
            None,
            &json!({"toolName": "t"}),
        )
        .await
        .assert_flat_error(401, "unauthenticated");
        // A caller without conformance:seams keeps the default mode's 403.
        post(
            &client,
            &host,
            "/v1/host/sample/toolhooks/invoke",
            Some(CAROL),
            &json!({"toolName": "t"}),
        )
        .await
        .assert_flat_error(403, "forbidden");
        host.shutdown().await;
    })
    .await;
}

// ---------------------------------------------------------------------------
// Which seams exist.

#[tokio::test]
async fn toolcert_only_seams_are_unknown_routes() {
    bounded(TEST_TIMEOUT, async {
        let client = client(CLIENT_TIMEOUT);
        let host = host(None).await;
        for path in [
            "/v1/host/sample/turn/run",
            "/v1/host/sample/test/idempotency/redispatch",
            "/v1/host/sample/test/idempotency/sweep",
            "/v1/host/sample/http/safe-fetch-run",
            "/v1/host/sample/effect-seams/fire",
            "/v1/host/packs-test/run",
            "/v1/host/sample/packs-test/run",
            "/v1/runs/run_x/interrupts/node",
            "/v1/interrupts/token",
            "/interrupts/token",
            "/conformance/seams/sample/turn/run",
            "/conformance/seams/packs-test/run",
        ] {
            post(&client, &host, path, Some(OPERATOR), &json!({}))
                .await
                .assert_flat_error(404, "not_found");
        }
        host.shutdown().await;

        // Without the seams, none of them is mounted.
        let quiet = start(config()).await.expect("host starts");
        for path in [
            "/v1/host/sample/toolhooks/invoke",
            "/v1/host/sample/test/idempotency/concurrent-claim",
            "/v1/host/sample/test/idempotency/hold",
            "/v1/host/sample/test/idempotency/effect-retry",
        ] {
            post(&client, &quiet, path, Some(OPERATOR), &json!({}))
                .await
                .assert_flat_error(404, "not_found");
        }
        // Nor is the v2 seams profile advertised either way.
        assert!(
            discovery(&client, &quiet.base_url)
                .await
                .get("conformance")
                .is_none()
        );
        quiet.shutdown().await;
    })
    .await;
}

/// Every arrival at the provider: (businessKey of its body, its
/// `Idempotency-Key`).
type Arrivals = Arc<Mutex<Vec<(String, Option<String>)>>>;

/// A loopback effect provider: `/ok` answers 200, `/flaky` 503 to the
/// first arrival of each business key and 200 afterwards.
type Provider = Loopback<Arrivals>;

impl Provider {
    async fn start() -> Self {
        fn record(arrivals: &Arrivals, headers: &HeaderMap, body: &[u8]) -> usize {
            let value: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
            let business_key = value["businessKey"].as_str().unwrap_or("").to_owned();
            let key = headers
                .get("idempotency-key")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let mut arrivals = arrivals.lock().expect("lock");
            arrivals.push((business_key.clone(), key));
            arrivals.iter().filter(|(b, _)| *b == business_key).count()
        }
        async fn ok(
            State(arrivals): State<Arrivals>,
            headers: HeaderMap,
            body: axum::body::Bytes,
        ) -> StatusCode {
            record(&arrivals, &headers, &body);
            StatusCode::OK
        }
        async fn flaky(
            State(arrivals): State<Arrivals>,
            headers: HeaderMap,
            body: axum::body::Bytes,
        ) -> StatusCode {
            if record(&arrivals, &headers, &body) == 1 {
                StatusCode::SERVICE_UNAVAILABLE
            } else {
                StatusCode::OK
            }
        }
        Self::serve(
            Router::new()
                .route("/ok", routing::post(ok))
                .route("/flaky", routing::post(flaky)),
        )
        .await
    }

    fn arrivals(&self) -> Vec<(String, Option<String>)> {
        self.state.lock().expect("lock").clone()
    }
}

#[tokio::test]
async fn the_upstream_idempotency_seams_ignore_toolcert_members() {
    bounded(TEST_TIMEOUT, async {
        let client = client(CLIENT_TIMEOUT);
        let host = host(None).await;
        let receiver = LabelReceiver::answering(json!({})).await;

        // concurrent-claim {executors}: toolcert's receiverUrl, businessKey
        // and principal are ignored; the no-op ledger takes the effect.
        let race = seam(
            &client,
            &host,
            "concurrent-claim",
            json!({"executors": 8, "receiverUrl": receiver.url("/ok/claim"),
                   "businessKey": "ignored", "principal": "nobody-known"}),
        )
        .await;
        assert_eq!(race.status, 200, "{}", race.text);
        assert_eq!(
            keys(&race.body),
            BTreeSet::from(["logicalInvocationId", "mintedIds", "attempted", "delivered"])
        );
        assert_eq!(race.body["attempted"], 8);
        assert_eq!(race.body["delivered"], 1);
        let minted: BTreeSet<&str> = race.body["mintedIds"]
            .as_array()
            .expect("mintedIds")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert_eq!(minted.len(), 1, "one identity: {}", race.text);
        assert_eq!(receiver.count("claim"), 0);
        // Each request is one logical invocation of its own.
        let again = seam(&client, &host, "concurrent-claim", json!({"executors": 2})).await;
        assert_eq!(again.body["delivered"], 1, "{}", again.text);
        assert_ne!(
            again.body["logicalInvocationId"],
            race.body["logicalInvocationId"]
        );
        let bad = seam(&client, &host, "concurrent-claim", json!({"executors": 1})).await;
        bad.assert_flat_error(400, "validation_error");
        assert!(bad.text.contains("executors"), "{}", bad.text);

        // hold {key, holdMs} ⇒ 201 arms the caller tenant's next create with the key: that
        // create keeps its claim in flight, a concurrent one is 409 idempotency_in_flight.
        let key = fresh_key();
        let armed = seam(
            &client,
            &host,
            "hold",
            json!({"key": key, "holdMs": 1500, "extra": true}),
        )
        .await;
        assert_eq!(armed.status, 201, "{}", armed.text);
        let refused = post_run(&client, &host, OPERATOR, Some(&key), &noop()).await;
        assert_eq!(refused.status, 403, "the operator lacks runs:write");
        let body = noop();
        let (held, in_flight) =
            tokio::join!(post_run(&client, &host, ALICE, Some(&key), &body), async {
                tokio::time::sleep(Duration::from_millis(300)).await;
                post_run(&client, &host, ALICE, Some(&key), &body).await
            });
        in_flight.assert_flat_error(409, "idempotency_in_flight");
        assert!(in_flight.header("retry-after").is_some());
        assert_eq!(held.status, 201, "{}", held.text);
        seam(&client, &host, "hold", json!({"key": "short", "holdMs": 5}))
            .await
            .assert_flat_error(400, "validation_error");

        // effect-retry {providerUrl} ⇒ 201 {runId, effectId}; a flaky
        // provider is retried under one identity and one key.
        let provider = Provider::start().await;
        let retried = seam(
            &client,
            &host,
            "effect-retry",
            json!({"providerUrl": provider.url("/flaky"), "businessKey": "ignored"}),
        )
        .await;
        assert_eq!(retried.status, 201, "{}", retried.text);
        assert_eq!(keys(&retried.body), BTreeSet::from(["runId", "effectId"]));
        let arrivals = provider.arrivals();
        assert_eq!(arrivals.len(), 2, "{arrivals:?}");
        assert_ne!(arrivals[0].0, "ignored");
        assert!(arrivals[0].1.is_some() && arrivals[0].1 == arrivals[1].1);
        let run_id = retried.run_id();
        let ledger = get(
            &client,
            &host,
            &format!("/v1/runs/{run_id}/effects"),
            OPERATOR,
        )
        .await;
        assert_eq!(ledger.status, 200, "{}", ledger.text);
        let rows = ledger.body["effects"].as_array().expect("effects");
        assert!(!rows.is_empty(), "{}", ledger.text);
        assert!(
            rows.iter()
                .all(|row| row["effectId"] == retried.body["effectId"])
        );
        get(&client, &host, &format!("/v1/runs/{run_id}/effects"), ERIN)
            .await
            .assert_flat_error(404, "not_found");
        host.shutdown().await;
    })
    .await;
}

// ---------------------------------------------------------------------------
// Mutants.

/// The mutants whose bug the upstream-only mode can express, each with a
/// probe below. (The rest are silent here; see
/// `inexpressible_mutants_leave_the_upstream_answers_alone`.)
const UPSTREAM_MUTANTS: &[Mutant] = &[
    Mutant::AuthzFailOpenOnResolverError,
    Mutant::ArgsHashNoncanonical,
    Mutant::FailureBareSuccess,
    Mutant::ForbiddenWithDuration,
    Mutant::RateLimitKeyedByTool,
    Mutant::RateLimitAbsent,
    Mutant::RateLimitNoRetryAfter,
    Mutant::RateLimitBareBody,
    Mutant::AuthzAlwaysDeny,
    Mutant::CallEventCarriesInputs,
    Mutant::CallEventMissingPrincipal,
    Mutant::ErrorWithOutcome,
    Mutant::DiscoveryEtagIgnored,
    Mutant::ToolhooksFacetNotBoolean,
    Mutant::AuthorizationFailclosedFalse,
    Mutant::ClaimReadThenWrite,
    Mutant::AttemptInIdentity,
    Mutant::NoProviderKey,
    Mutant::RetryKeyDiffers,
    Mutant::L1KeyIgnored,
    Mutant::L1ReplayHeaderMissing,
    Mutant::L1MismatchWrongCode,
    Mutant::L1InFlightProcessed,
    Mutant::L1CachesValidationError,
    Mutant::L1InvalidKeyAccepted,
    Mutant::L1KeyNotTenantScoped,
    Mutant::L1RetentionShort,
    Mutant::EffectsCrossTenant,
    Mutant::LedgerLeaksArgs,
    Mutant::CrossRegionUnknown,
];

struct Probe<'a> {
    client: &'a reqwest::Client,
    host: &'a RunningHost,
    provider: &'a Provider,
}

impl Probe<'_> {
    async fn invoke(&self, body: Value) -> Answer {
        invoke(self.client, self.host, body).await
    }

    async fn post_run(&self, token: &str, key: Option<&str>, body: &Value) -> Answer {
        post_run(self.client, self.host, token, key, body).await
    }

    /// One effect-retry against the flaky provider: its run id and the
    /// provider arrivals it caused.
    async fn flaky_retry(&self) -> (String, Vec<(String, Option<String>)>) {
        let before = self.provider.arrivals().len();
        let answer = seam(
            self.client,
            self.host,
            "effect-retry",
            json!({"providerUrl": self.provider.url("/flaky")}),
        )
        .await;
        assert_eq!(answer.status, 201, "{}", answer.text);
        (answer.run_id(), self.provider.arrivals().split_off(before))
    }

    async fn ledger(&self, run_id: &str, token: &str) -> Answer {
        get(
            self.client,
            self.host,
            &format!("/v1/runs/{run_id}/effects"),
            token,
        )
        .await
    }

    /// Whether the probe for `mutant` sees its bug on this host.
    async fn observe(&self, mutant: Mutant) -> bool {
        let tool = fresh("t");
        match mutant {
            Mutant::AuthzFailOpenOnResolverError => {
                self.invoke(json!({"toolName": tool, "requiredScopes": ["x"]}))
                    .await
                    .status
                    == 200
            }
            Mutant::ArgsHashNoncanonical => {
                let args = json!({"n": 10.0, "b": 1, "a": 2});
                self.invoke(json!({"toolName": tool, "args": args})).await.body["toolCalled"]
                    ["argsHash"]
                    != sha256_jcs(&args)
            }
            Mutant::FailureBareSuccess => {
                self.invoke(json!({"toolName": tool, "simulateToolError": true}))
                    .await
                    .body["toolReturned"]["status"]
                    == "ok"
            }
            Mutant::ForbiddenWithDuration => self
                .invoke(json!({"toolName": tool, "requiredScopes": ["x"], "grantedScopes": []}))
                .await
                .body["toolReturned"]
                .get("durationMs")
                .is_some(),
            Mutant::RateLimitKeyedByTool => {
                for _ in 0..2 {
                    self.invoke(json!({"principal": "alice", "toolName": tool}))
                        .await;
                }
                self.invoke(json!({"principal": "bob", "toolName": tool}))
                    .await
                    .status
                    == 429
            }
            Mutant::RateLimitAbsent => {
                for _ in 0..2 {
                    self.invoke(json!({"toolName": tool})).await;
                }
                self.invoke(json!({"toolName": tool})).await.status == 200
            }
            Mutant::RateLimitNoRetryAfter => self
                .invoke(json!({"toolName": tool, "simulateRateLimitExhausted": true}))
                .await
                .header("retry-after")
                .is_none(),
            Mutant::RateLimitBareBody => self
                .invoke(json!({"toolName": tool, "simulateRateLimitExhausted": true}))
                .await
                .body
                .get("toolReturned")
                .is_none(),
            Mutant::AuthzAlwaysDeny => {
                self.invoke(json!({"toolName": tool, "requiredScopes": ["x"],
                                   "grantedScopes": ["x"]}))
                    .await
                    .status
                    == 403
            }
            Mutant::CallEventCarriesInputs => self
                .invoke(json!({"toolName": tool, "args": {"a": 1}}))
                .await
                .body["toolCalled"]
                .get("inputs")
                .is_some(),
            Mutant::CallEventMissingPrincipal => self
                .invoke(json!({"toolName": tool}))
                .await
                .body["toolCalled"]
                .get("principal")
                .is_none(),
            Mutant::ErrorWithOutcome => self
                .invoke(json!({"toolName": tool, "simulateToolError": true}))
                .await
                .body["toolReturned"]
                .get("outcome")
                .is_some(),
            Mutant::DiscoveryEtagIgnored => {
                let url = format!("{}/.well-known/openwop", self.host.base_url);
                let first = self.client.get(&url).send().await.expect("answers");
                let etag = first.headers()["etag"].clone();
                self.client
                    .get(&url)
                    .header("If-None-Match", etag)
                    .send()
                    .await
                    .expect("answers")
                    .status()
                    != 304
            }
            Mutant::ToolhooksFacetNotBoolean => {
                !discovery(self.client, &self.host.base_url).await["toolHooks"]["perToolRateLimit"]
                    .is_boolean()
            }
            Mutant::AuthorizationFailclosedFalse => {
                discovery(self.client, &self.host.base_url).await["authorization"]["failClosed"]
                    != true
            }
            Mutant::L1RetentionShort => {
                discovery(self.client, &self.host.base_url).await["idempotency"]["layer1RetentionSeconds"]
                    .as_u64()
                    .is_none_or(|secs| secs < 86_400)
            }
            Mutant::CrossRegionUnknown => {
                discovery(self.client, &self.host.base_url).await["idempotency"]["crossRegion"]
                    != "single-region"
            }
            Mutant::ClaimReadThenWrite => {
                // A few races; the bug needs only one double delivery.
                for _ in 0..5 {
                    let race =
                        seam(self.client, self.host, "concurrent-claim", json!({"executors": 16}))
                            .await;
                    assert_eq!(race.status, 200, "{}", race.text);
                    if race.body["delivered"].as_u64().unwrap_or(0) > 1 {
                        return true;
                    }
                }
                false
            }
            Mutant::AttemptInIdentity => {
                let (run_id, _) = self.flaky_retry().await;
                let rows = self.ledger(&run_id, OPERATOR).await;
                let ids: BTreeSet<String> = rows.body["effects"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|r| r["effectId"].as_str().map(str::to_owned))
                    .collect();
                ids.len() > 1
            }
            Mutant::NoProviderKey => {
                let (_, arrivals) = self.flaky_retry().await;
                arrivals.iter().any(|(_, key)| key.is_none())
            }
            Mutant::RetryKeyDiffers => {
                let (_, arrivals) = self.flaky_retry().await;
                let keys: BTreeSet<Option<String>> =
                    arrivals.into_iter().map(|(_, key)| key).collect();
                keys.len() > 1
            }
            Mutant::L1KeyIgnored => {
                let key = fresh_key();
                let first = self.post_run(ALICE, Some(&key), &noop()).await;
                let again = self.post_run(ALICE, Some(&key), &noop()).await;
                first.run_id() != again.run_id()
            }
            Mutant::L1ReplayHeaderMissing => {
                let key = fresh_key();
                let first = self.post_run(ALICE, Some(&key), &noop()).await;
                let again = self.post_run(ALICE, Some(&key), &noop()).await;
                first.run_id() == again.run_id() && !again.replayed()
            }
            Mutant::L1MismatchWrongCode => {
                let key = fresh_key();
                self.post_run(ALICE, Some(&key), &noop()).await;
                let other = json!({"workflowId": "conformance-noop", "configurable": {"v": 2}});
                let answer = self.post_run(ALICE, Some(&key), &other).await;
                answer.status == 409 && answer.body["error"] != "idempotency_key_mismatch"
            }
            Mutant::L1InFlightProcessed => {
                let key = fresh_key();
                let armed = seam(
                    self.client,
                    self.host,
                    "hold",
                    json!({"key": key, "holdMs": 1500}),
                )
                .await;
                assert_eq!(armed.status, 201, "{}", armed.text);
                let body = noop();
                let (held, duplicate) = tokio::join!(self.post_run(ALICE, Some(&key), &body), async {
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    self.post_run(ALICE, Some(&key), &body).await
                });
                duplicate.status == 201 && duplicate.run_id() != held.run_id()
            }
            Mutant::L1CachesValidationError => {
                let key = fresh_key();
                let bad = json!({"workflowId": 7});
                self.post_run(ALICE, Some(&key), &bad).await;
                self.post_run(ALICE, Some(&key), &bad).await.replayed()
            }
            Mutant::L1InvalidKeyAccepted => {
                self.post_run(ALICE, Some("short"), &noop()).await.status != 400
            }
            Mutant::L1KeyNotTenantScoped => {
                let key = fresh_key();
                let alice = self.post_run(ALICE, Some(&key), &noop()).await;
                let erin = self.post_run(ERIN, Some(&key), &noop()).await;
                erin.replayed() || erin.run_id() == alice.run_id()
            }
            Mutant::EffectsCrossTenant => {
                let (run_id, _) = self.flaky_retry().await;
                self.ledger(&run_id, ERIN).await.status == 200
            }
            Mutant::LedgerLeaksArgs => {
                let (run_id, _) = self.flaky_retry().await;
                self.ledger(&run_id, OPERATOR).await.body["effects"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|row| row.get("args").is_some())
            }
            other => panic!("{other} has no upstream-mode probe"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_expressible_mutant_changes_what_the_upstream_host_answers() {
    bounded(LONG_TIMEOUT, async {
        let provider = Provider::start().await;
        let client = client(CLIENT_TIMEOUT);
        for &mutant in UPSTREAM_MUTANTS {
            let probe = async |host: &RunningHost, _: &str| {
                Probe {
                    client: &client,
                    host,
                    provider: &provider,
                }
                .observe(mutant)
                .await
            };
            assert_observable(mutant, host, probe).await;
        }
    })
    .await;
}

/// A few fixed upstream-mode answers with the measured `durationMs` taken
/// out, to compare hosts.
async fn fixed_answers(client: &reqwest::Client, host: &RunningHost) -> Vec<(u16, Value)> {
    let mut answers = Vec::new();
    for body in [
        json!({"principal": "alice", "toolName": "fixed-ok", "args": {"a": 1},
               "requiredScopes": ["s"], "grantedScopes": ["s"], "transport": "http"}),
        json!({"toolName": "fixed-error", "simulateToolError": true}),
        json!({"toolName": "fixed-denied", "requiredScopes": ["s"]}),
        json!({"toolName": "fixed-denied", "requiredScopes": ["s"], "grantedScopes": []}),
        json!({"toolName": "fixed-limited", "simulateRateLimitExhausted": true}),
    ] {
        let mut answer = invoke(client, host, body).await;
        if let Some(returned) = answer.body["toolReturned"].as_object_mut() {
            returned.remove("durationMs");
        }
        answers.push((answer.status, answer.body));
    }
    answers.push((0, discovery(client, &host.base_url).await));
    answers
}

#[tokio::test]
async fn inexpressible_mutants_leave_the_upstream_answers_alone() {
    bounded(LONG_TIMEOUT, async {
        let client = client(CLIENT_TIMEOUT);
        let correct = host(None).await;
        let expected = fixed_answers(&client, &correct).await;
        correct.shutdown().await;
        // No tool to invoke, no argument schema, no events, no agentId, no
        // credentials, no v2-only discovery facet: nothing for these to break.
        for mutant in [
            Mutant::InvokeThenCheck,
            Mutant::ArgsHashRaw,
            Mutant::DenialUnlogged,
            Mutant::ReturnCausationMissing,
            Mutant::EventAgentidMissing,
            Mutant::SeamAgentidNotSystem,
            Mutant::StatusInvalidArgs,
            Mutant::EventCodesUnregistered,
            Mutant::DiscoveryPreferredUnlisted,
            Mutant::DiscoveryRecordMissingWitness,
            Mutant::TurnReplayFacetString,
        ] {
            let mutated = host(Some(mutant)).await;
            assert_eq!(
                fixed_answers(&client, &mutated).await,
                expected,
                "{mutant} changed an upstream answer"
            );
            mutated.shutdown().await;
        }
    })
    .await;
}
