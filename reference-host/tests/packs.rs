//! Fixture packs whose role declaration replay obeys (RPL-2..5), over real
//! HTTP on 127.0.0.1: `POST /conformance/seams/packs-test/run` runs a pack's
//! nodes in order against loopback receivers that count arrivals; a replay
//! fork serves every side-effecting node (its pack declares `role:
//! "side-effect"`, or its kind is `http`) its recorded outcome and sends it
//! nothing, re-executes pure nodes live, and fails a side-effecting node
//! with no record with `replay_source_missing`; the `packs-test-node` row of
//! the effect-seam manifest can be fired and a fork of the fired run does
//! not fire it again (RPL-11). Every wait is bounded.

use crate::common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use common::{
    ALICE, Loopback, OPERATOR, assert_valid, bounded, client, events_until, get_json,
    nonconformant_codes, of_type, replay_fork, seam_host, send,
};
use reference_host::mutants::Mutant;
use reference_host::{HostConfig, RunningHost};
use serde_json::{Value, json};

const TEST_TIMEOUT: Duration = Duration::from_secs(60);
const CLIENT_TIMEOUT: Duration = Duration::from_secs(15);
const RUN: &str = "/conformance/seams/packs-test/run";
const FIRE: &str = "/conformance/seams/sample/effect-seams/fire";
const REQUEST_SCHEMA: &str = "packs-test-run.request.schema.json";
const RESPONSE_SCHEMA: &str = "packs-test-run.response.schema.json";

// ---------------------------------------------------------------------------
// The receiver: counts every arrival per path. `/fail` answers 500, `/gone`
// 404, `/text` a 200 that is not JSON, `/flaky` 500 on its first arrival and
// 200 after, `/slow` after 1.5 s; any other path 200 `{path, n}`, n counting
// that path's arrivals (so a re-execution answers differently).

/// One request the receiver got.
#[derive(Debug, Clone)]
struct Arrival {
    path: String,
    body: Value,
}

type Receiver = Loopback<Arc<Mutex<Vec<Arrival>>>>;

async fn receiver() -> Receiver {
    async fn answer(
        State(seen): State<Arc<Mutex<Vec<Arrival>>>>,
        uri: Uri,
        body: Bytes,
    ) -> Response {
        let path = uri.path().to_owned();
        let n = {
            let mut seen = seen.lock().expect("lock");
            seen.push(Arrival {
                path: path.clone(),
                body: serde_json::from_slice(&body).unwrap_or(Value::Null),
            });
            seen.iter().filter(|a| a.path == path).count()
        };
        match path.as_str() {
            "/fail" => (
                StatusCode::INTERNAL_SERVER_ERROR,
                axum::Json(json!({"secret": "RECEIVER-FAILURE-BODY"})),
            )
                .into_response(),
            "/gone" => (StatusCode::NOT_FOUND, axum::Json(json!({"why": "gone"}))).into_response(),
            "/text" => (StatusCode::OK, "plain text").into_response(),
            "/flaky" if n == 1 => StatusCode::SERVICE_UNAVAILABLE.into_response(),
            "/slow" => {
                tokio::time::sleep(Duration::from_millis(1500)).await;
                axum::Json(json!({"slow": true})).into_response()
            }
            _ => axum::Json(json!({"path": path, "n": n})).into_response(),
        }
    }
    Receiver::serve(Router::new().route("/{*path}", post(answer))).await
}

/// Arrivals per path.
fn counts(receiver: &Receiver) -> HashMap<String, usize> {
    let mut counts = HashMap::new();
    for arrival in receiver.state.lock().expect("lock").iter() {
        *counts.entry(arrival.path.clone()).or_default() += 1;
    }
    counts
}

fn count(receiver: &Receiver, path: &str) -> usize {
    counts(receiver).get(path).copied().unwrap_or(0)
}

fn arrivals(receiver: &Receiver) -> Vec<Arrival> {
    receiver.state.lock().expect("lock").clone()
}

// ---------------------------------------------------------------------------
// Requests.

async fn host(mutant: Option<Mutant>) -> RunningHost {
    seam_host(mutant, HostConfig::default()).await
}

fn node(node_type: &str, kind: &str, role: Option<&str>, url: &str) -> Value {
    let mut value = json!({"nodeType": node_type, "kind": kind, "receiverUrl": url});
    if let Some(role) = role {
        value["role"] = json!(role);
    }
    value
}

fn pack(nodes: Vec<Value>) -> Value {
    json!({"principal": "alice", "pack": {"packId": "fixture.roles", "nodes": nodes}})
}

/// The three-node witness pack: a transform node that hides an effect and
/// declares it, a plain transform node, and an http node that claims to be
/// pure.
fn witness_pack(receiver: &Receiver) -> Value {
    pack(vec![
        node(
            "hidden",
            "transform",
            Some("side-effect"),
            &receiver.url("/hidden"),
        ),
        node("plain", "transform", None, &receiver.url("/plain")),
        node("http", "http", Some("pure"), &receiver.url("/http")),
    ])
}

/// Starts a packs-test run of `body`; checks the 201 and returns the run id.
async fn start(client: &reqwest::Client, host: &RunningHost, body: &Value) -> String {
    assert_valid(REQUEST_SCHEMA, body);
    let answer = send(
        client.post(format!("{}{RUN}", host.base_url)).json(body),
        Some(OPERATOR),
    )
    .await;
    assert_eq!(answer.status, 201, "{}", answer.body);
    assert_valid(RESPONSE_SCHEMA, &answer.body);
    let run_id = answer.body["runId"].as_str().expect("runId").to_owned();
    assert_eq!(answer.body["eventsUrl"], format!("/runs/{run_id}/events"));
    run_id
}

/// The run's events, once it is terminal.
async fn events(client: &reqwest::Client, host: &RunningHost, run_id: &str) -> Vec<Value> {
    events_until(client, host, run_id, 10, |_| false).await
}

/// Runs `body` to its end: the run id and its events.
async fn run(client: &reqwest::Client, host: &RunningHost, body: &Value) -> (String, Vec<Value>) {
    let run_id = start(client, host, body).await;
    let events = events(client, host, &run_id).await;
    (run_id, events)
}

/// Forks `run_id` in replay mode: the fork's id and its events once terminal.
async fn fork(client: &reqwest::Client, host: &RunningHost, run_id: &str) -> (String, Vec<Value>) {
    let fork_id = replay_fork(client, &host.base_url, run_id).await;
    let events = events(client, host, &fork_id).await;
    (fork_id, events)
}

/// `GET /runs/{run_id}/effects` rows.
async fn ledger(client: &reqwest::Client, host: &RunningHost, run_id: &str) -> Vec<Value> {
    let (status, body) = get_json(
        client,
        &format!("{}/runs/{run_id}/effects", host.base_url),
        OPERATOR,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body["effects"].as_array().cloned().expect("effects")
}

/// `(type, nodeId)` of each event.
fn shape(events: &[Value]) -> Vec<(String, Option<String>)> {
    events
        .iter()
        .map(|e| {
            (
                e["type"].as_str().unwrap_or_default().to_owned(),
                e["nodeId"].as_str().map(str::to_owned),
            )
        })
        .collect()
}

fn expected_shape(steps: &[(&str, Option<&str>)]) -> Vec<(String, Option<String>)> {
    steps
        .iter()
        .map(|(kind, node)| ((*kind).to_owned(), node.map(str::to_owned)))
        .collect()
}

/// The `node.completed` outputs of `node_id`.
fn outputs<'e>(events: &'e [Value], node_id: &str) -> &'e Value {
    &of_type(events, "node.completed")
        .into_iter()
        .find(|e| e["payload"]["nodeId"] == node_id)
        .unwrap_or_else(|| panic!("no node.completed for {node_id}: {events:#?}"))["payload"]["outputs"]
}

fn terminal(events: &[Value]) -> &Value {
    events.last().expect("an event")
}

// ---------------------------------------------------------------------------
// The run.

#[tokio::test]
async fn a_pack_run_executes_its_nodes_in_order_and_records_each_outcome() {
    bounded(TEST_TIMEOUT, async {
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        let receiver = receiver().await;
        let (run_id, events) = run(&client, &host, &witness_pack(&receiver)).await;
        // Each receiver got exactly one POST of {packId, nodeType, runId}.
        let seen = arrivals(&receiver);
        assert_eq!(
            seen.iter().map(|a| a.path.as_str()).collect::<Vec<_>>(),
            ["/hidden", "/plain", "/http"],
            "in order, once each"
        );
        for (arrival, node_type) in seen.iter().zip(["hidden", "plain", "http"]) {
            assert_eq!(
                arrival.body,
                json!({"packId": "fixture.roles", "nodeType": node_type, "runId": run_id})
            );
        }
        assert_eq!(
            shape(&events),
            expected_shape(&[
                ("run.started", None),
                ("node.started", Some("hidden")),
                ("node.completed", Some("hidden")),
                ("node.started", Some("plain")),
                ("node.completed", Some("plain")),
                ("node.started", Some("http")),
                ("node.completed", Some("http")),
                ("run.completed", None),
            ])
        );
        assert_eq!(
            events[0]["payload"],
            json!({"principal": "alice", "packId": "fixture.roles"})
        );
        assert_eq!(
            events[1]["payload"],
            json!({"nodeId": "hidden", "nodeType": "hidden"})
        );
        assert_eq!(
            events[2]["payload"],
            json!({"nodeId": "hidden", "outputs": {"status": 200, "body": {"path": "/hidden", "n": 1}}})
        );
        assert_eq!(
            terminal(&events)["payload"],
            json!({"result": {"packId": "fixture.roles", "nodes": 3}})
        );
        for (n, event) in events.iter().enumerate() {
            assert_eq!(event["sequence"], n);
        }
        // The side-effecting nodes (hidden by its role, http by the
        // classifier) delivered effects; the pure one did not.
        let rows = ledger(&client, &host, &run_id).await;
        assert_eq!(
            rows.iter().map(|r| r["nodeId"].clone()).collect::<Vec<_>>(),
            ["hidden", "http"],
            "{rows:#?}"
        );
        for row in &rows {
            assert_eq!(row["keying"], "seam:packs-test-node");
            assert_eq!(row["state"], "delivered");
            assert_eq!(row["attempt"], 1);
        }
        assert_ne!(rows[0]["effectId"], rows[1]["effectId"]);
        host.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn a_replay_fork_serves_side_effecting_nodes_and_re_executes_pure_ones() {
    bounded(TEST_TIMEOUT, async {
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        let receiver = receiver().await;
        let (source_id, source_events) = run(&client, &host, &witness_pack(&receiver)).await;
        let source_rows = ledger(&client, &host, &source_id).await;
        let (fork_id, fork_events) = fork(&client, &host, &source_id).await;
        // RPL-2, RPL-4: no POST for the side-effecting nodes; RPL-5: the pure
        // node ran again, with the fork's runId.
        assert_eq!(count(&receiver, "/hidden"), 1, "role side-effect obeyed");
        assert_eq!(count(&receiver, "/http"), 1, "role pure did not override");
        assert_eq!(count(&receiver, "/plain"), 2, "the pure node re-executed");
        let last = arrivals(&receiver).pop().expect("arrival");
        assert_eq!(last.body["runId"], fork_id);
        // The same events as the source; the served outputs equal the
        // source's, the pure node reports its live answer.
        assert_eq!(shape(&fork_events), shape(&source_events));
        for node_id in ["hidden", "http"] {
            assert_eq!(
                outputs(&fork_events, node_id),
                outputs(&source_events, node_id)
            );
        }
        assert_eq!(
            outputs(&fork_events, "plain"),
            &json!({"status": 200, "body": {"path": "/plain", "n": 2}})
        );
        assert_eq!(
            fork_events[0]["payload"]["fork"],
            json!({"sourceRunId": source_id, "mode": "replay"})
        );
        assert_eq!(terminal(&fork_events)["type"], "run.completed");
        assert!(nonconformant_codes(&fork_events).is_empty());
        // The fork's ledger is the source's, unchanged: no new delivery.
        assert_eq!(ledger(&client, &host, &fork_id).await, source_rows);
        // A fork of the fork is served from the fork's own records.
        let (grand_id, grand_events) = fork(&client, &host, &fork_id).await;
        assert_eq!(count(&receiver, "/hidden"), 1);
        assert_eq!(count(&receiver, "/http"), 1);
        assert_eq!(count(&receiver, "/plain"), 3);
        assert_eq!(
            outputs(&grand_events, "hidden"),
            outputs(&source_events, "hidden")
        );
        assert_eq!(ledger(&client, &host, &grand_id).await, source_rows);
        host.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn a_missing_record_fails_the_node_with_replay_source_missing_and_sends_nothing() {
    bounded(TEST_TIMEOUT, async {
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        let receiver = receiver().await;
        // The source fails at its first (pure) node, so its http node never
        // ran and has no record. The fork's pure node passes this time.
        let body = pack(vec![
            node("first", "transform", None, &receiver.url("/flaky")),
            node("effect", "http", None, &receiver.url("/effect")),
        ]);
        let (source_id, source_events) = run(&client, &host, &body).await;
        assert_eq!(terminal(&source_events)["type"], "run.failed");
        assert_eq!(
            terminal(&source_events)["payload"]["error"]["code"],
            "refhost.pack_node_failed"
        );
        assert_eq!(count(&receiver, "/effect"), 0);
        let (_, fork_events) = fork(&client, &host, &source_id).await;
        assert_eq!(count(&receiver, "/flaky"), 2, "the pure node re-executed");
        assert_eq!(count(&receiver, "/effect"), 0, "nothing sent (RPL-3)");
        assert_eq!(
            shape(&fork_events),
            expected_shape(&[
                ("run.started", None),
                ("node.started", Some("first")),
                ("node.completed", Some("first")),
                ("node.started", Some("effect")),
                ("node.failed", Some("effect")),
                ("run.failed", None),
            ])
        );
        let failed = of_type(&fork_events, "node.failed")[0];
        assert_eq!(failed["payload"]["nodeId"], "effect");
        assert_eq!(failed["payload"]["error"]["code"], "replay_source_missing");
        assert_eq!(
            terminal(&fork_events)["payload"]["error"]["code"],
            "replay_source_missing"
        );
        assert!(
            of_type(&fork_events, "node.completed")
                .iter()
                .all(|e| e["payload"]["nodeId"] != "effect"),
            "no synthesized success"
        );
        assert!(nonconformant_codes(&fork_events).is_empty());
        host.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn receiver_failures_fail_the_run_and_a_fork_serves_a_recorded_failure() {
    bounded(TEST_TIMEOUT, async {
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        let receiver = receiver().await;
        // A 4xx is an outcome: the node completes; a non-JSON body is null.
        let (_, events) = run(
            &client,
            &host,
            &pack(vec![
                node("gone", "http", None, &receiver.url("/gone")),
                node("text", "transform", None, &receiver.url("/text")),
            ]),
        )
        .await;
        assert_eq!(terminal(&events)["type"], "run.completed");
        assert_eq!(
            outputs(&events, "gone"),
            &json!({"status": 404, "body": {"why": "gone"}})
        );
        assert_eq!(
            outputs(&events, "text"),
            &json!({"status": 200, "body": null})
        );
        // A 5xx fails the node and the run; later nodes never run.
        let body = pack(vec![
            node("broken", "http", None, &receiver.url("/fail")),
            node("after", "http", None, &receiver.url("/after")),
        ]);
        let (source_id, source_events) = run(&client, &host, &body).await;
        assert_eq!(
            shape(&source_events),
            expected_shape(&[
                ("run.started", None),
                ("node.started", Some("broken")),
                ("node.failed", Some("broken")),
                ("run.failed", None),
            ])
        );
        let error = &terminal(&source_events)["payload"]["error"];
        assert_eq!(error["code"], "refhost.pack_node_failed");
        assert_eq!(
            error["message"],
            "node `broken`'s receiver answered HTTP 500"
        );
        let text = serde_json::to_string(&source_events).expect("json");
        assert!(!text.contains("RECEIVER-FAILURE-BODY"), "{text}");
        assert!(ledger(&client, &host, &source_id).await.is_empty());
        assert_eq!(count(&receiver, "/after"), 0);
        // The fork serves the recorded 5xx: the same failure, nothing sent.
        let (_, fork_events) = fork(&client, &host, &source_id).await;
        assert_eq!(count(&receiver, "/fail"), 1);
        assert_eq!(shape(&fork_events), shape(&source_events));
        assert_eq!(
            of_type(&fork_events, "node.failed")[0]["payload"],
            of_type(&source_events, "node.failed")[0]["payload"]
        );
        // No answer at all: nothing to record, upstream_unavailable.
        let closed = {
            let gone = receiver_url_of_a_closed_port().await;
            pack(vec![node("nowhere", "http", None, &gone)])
        };
        let (_, events) = run(&client, &host, &closed).await;
        let failed = of_type(&events, "node.failed");
        assert_eq!(failed.len(), 1);
        assert_eq!(
            failed[0]["payload"]["error"]["code"],
            "upstream_unavailable"
        );
        assert_eq!(
            terminal(&events)["payload"]["error"]["code"],
            "upstream_unavailable"
        );
        assert!(nonconformant_codes(&events).is_empty());
        host.shutdown().await;
    })
    .await;
}

/// A loopback URL nothing listens on (the listener is bound, then dropped).
async fn receiver_url_of_a_closed_port() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    drop(listener);
    format!("http://{addr}/nowhere")
}

#[tokio::test]
async fn a_running_pack_can_be_cancelled_and_writes_nothing_after() {
    bounded(TEST_TIMEOUT, async {
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        let receiver = receiver().await;
        let body = pack(vec![
            node("slow", "http", None, &receiver.url("/slow")),
            node("next", "http", None, &receiver.url("/next")),
        ]);
        let run_id = start(&client, &host, &body).await;
        events_until(&client, &host, &run_id, 10, |events| {
            !of_type(events, "node.started").is_empty()
        })
        .await;
        let answer = send(
            client.post(format!("{}/runs/{run_id}:cancel", host.base_url)),
            Some(OPERATOR),
        )
        .await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        assert_eq!(answer.body["status"], "cancelled");
        tokio::time::sleep(Duration::from_millis(1800)).await;
        let events = events(&client, &host, &run_id).await;
        assert_eq!(terminal(&events)["type"], "run.cancelled");
        assert!(of_type(&events, "node.completed").is_empty(), "{events:#?}");
        assert_eq!(count(&receiver, "/next"), 0);
        host.shutdown().await;
    })
    .await;
}

// ---------------------------------------------------------------------------
// Refusals.

#[tokio::test]
async fn bad_requests_are_refused_before_any_run() {
    bounded(TEST_TIMEOUT, async {
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        let receiver = receiver().await;
        let url = receiver.url("/n");
        let ok = |kind: &str| node("n", kind, None, &url);
        let cases = [
            (json!({"pack": {"packId": "p", "nodes": [ok("http")]}}), "principal"),
            (json!({"principal": "alice"}), "pack"),
            (
                json!({"principal": "alice", "pack": {"packId": "p", "nodes": [ok("http")]}, "extra": 1}),
                "extra",
            ),
            (
                json!({"principal": "alice", "pack": {"packId": "Pack", "nodes": [ok("http")]}}),
                "pack.packId",
            ),
            (
                json!({"principal": "alice", "pack": {"packId": "p", "nodes": []}}),
                "pack.nodes",
            ),
            (
                json!({"principal": "alice", "pack": {"packId": "p", "nodes": [ok("http"), ok("http")]}}),
                "pack.nodes[1].nodeType",
            ),
            (
                json!({"principal": "alice", "pack": {"packId": "p", "nodes": [ok("rpc")]}}),
                "pack.nodes[0].kind",
            ),
            (
                json!({"principal": "alice", "pack": {"packId": "p", "nodes": [
                    ok("http"), node("m", "http", Some("maybe"), &url)]}}),
                "pack.nodes[1].role",
            ),
            (
                json!({"principal": "alice", "pack": {"packId": "p", "nodes": [
                    node("m", "http", None, "http://192.0.2.1/n")]}}),
                "pack.nodes[0].receiverUrl",
            ),
        ];
        for (body, member) in cases {
            // The schema cannot say "unique nodeType" (uniqueItems compares
            // whole nodes); every other problem it refuses too.
            if member != "pack.nodes[1].nodeType" {
                assert!(
                    !common::schema(REQUEST_SCHEMA).is_valid(&body),
                    "the published schema refuses it too: {body}"
                );
            }
            let answer = send(
                client.post(format!("{}{RUN}", host.base_url)).json(&body),
                Some(OPERATOR),
            )
            .await;
            assert_eq!(answer.status, 400, "{body}: {}", answer.body);
            assert_eq!(answer.body["error"], "validation_error");
            let message = answer.body["message"].as_str().expect("message");
            assert!(message.contains(&format!("`{member}`")), "{body}: {message}");
            assert_valid(RESPONSE_SCHEMA, &answer.body);
        }
        // The caller checks come first, as for every seam.
        let body = pack(vec![ok("http")]);
        let post = || client.post(format!("{}{RUN}", host.base_url)).json(&body);
        assert_eq!(send(post(), None).await.status, 401);
        assert_eq!(send(post(), Some(ALICE)).await.status, 403);
        assert!(arrivals(&receiver).is_empty(), "nothing was run");
        // A packs-test run has no branch forks (EFF-10 is the fire seam's).
        let (run_id, _) = run(&client, &host, &body).await;
        let answer = send(
            client
                .post(format!("{}/runs/{run_id}:fork", host.base_url))
                .json(&json!({"mode": "branch", "fromSeq": 0})),
            Some(OPERATOR),
        )
        .await;
        assert_eq!(answer.status, 422, "{}", answer.body);
        assert_eq!(answer.body["error"], "capability_not_provided");
        host.shutdown().await;
    })
    .await;
}

// ---------------------------------------------------------------------------
// The effect-seam manifest row (RPL-11).

#[tokio::test]
async fn the_manifest_row_fires_once_and_a_replay_fork_does_not_fire_it_again() {
    bounded(TEST_TIMEOUT, async {
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        let (status, manifest) = get_json(
            &client,
            &format!("{}/host/effect-seams", host.base_url),
            OPERATOR,
        )
        .await;
        assert_eq!(status, 200);
        let row = manifest["seams"]
            .as_array()
            .expect("seams")
            .iter()
            .find(|row| row["seam"] == "packs-test-node")
            .cloned()
            .expect("a pack row");
        assert_eq!(row["kind"], "http");
        assert_eq!(row["guarded"], true);
        let receiver = receiver().await;
        let body = json!({"seam": "packs-test-node", "receiverUrl": receiver.url("/fired")});
        assert_valid("effect-seams-fire.request.schema.json", &body);
        let answer = send(
            client.post(format!("{}{FIRE}", host.base_url)).json(&body),
            Some(OPERATOR),
        )
        .await;
        assert_eq!(answer.status, 201, "{}", answer.body);
        assert_valid("effect-seams-fire.response.schema.json", &answer.body);
        let parent_id = answer.body["runId"].as_str().expect("runId").to_owned();
        // Terminal when the fire answers: one delivery, one ledger row.
        let parent_events = events(&client, &host, &parent_id).await;
        assert_eq!(terminal(&parent_events)["type"], "run.completed");
        assert_eq!(count(&receiver, "/fired"), 1);
        let seen = arrivals(&receiver);
        assert_eq!(
            seen[0].body,
            json!({"packId": "refhost.effect-seam-fire", "nodeType": "hidden-effect", "runId": parent_id})
        );
        let parent_rows = ledger(&client, &host, &parent_id).await;
        assert_eq!(parent_rows.len(), 1, "{parent_rows:#?}");
        assert_eq!(parent_rows[0]["nodeId"], "hidden-effect");
        assert_eq!(parent_rows[0]["keying"], "seam:packs-test-node");
        assert_eq!(parent_rows[0]["state"], "delivered");
        // Later than the delivery, so a fresh `at` would show.
        tokio::time::sleep(Duration::from_millis(20)).await;
        let (fork_id, fork_events) = fork(&client, &host, &parent_id).await;
        assert_eq!(terminal(&fork_events)["type"], "run.completed");
        assert_eq!(count(&receiver, "/fired"), 1, "no re-fire");
        assert_eq!(ledger(&client, &host, &fork_id).await, parent_rows);
        assert_eq!(
            outputs(&fork_events, "hidden-effect"),
            outputs(&parent_events, "hidden-effect")
        );
        host.shutdown().await;
    })
    .await;
}

// ---------------------------------------------------------------------------
// The mutants.
