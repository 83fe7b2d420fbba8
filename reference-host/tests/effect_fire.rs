//! RPL-11 over real HTTP on 127.0.0.1: every row of the effect-seam
//! manifest is fired once through
//! `POST /conformance/seams/sample/effect-seams/fire` against a loopback
//! receiver that counts arrivals; the fired run's ledger holds exactly one
//! `delivered` row; a replay fork of it sends nothing and inherits the
//! parent's rows unchanged on (nodeId, attempt, at); a branch fork (EFF-10)
//! from before the effect performs it again in its own claim scope (same
//! `Idempotency-Key`, a new ledger row with the same effectId) and one
//! from after it inherits it. Every wait is bounded.

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::routing::post;
use common::{
    ALICE, Loopback, OPERATOR, assert_valid, bounded, client, events_until, get_json,
    nonconformant_codes, of_type, replay_fork, seam_host, send,
};
use reference_host::mutants::Mutant;
use reference_host::{HostConfig, RunningHost};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

const TEST_TIMEOUT: Duration = Duration::from_secs(60);
const CLIENT_TIMEOUT: Duration = Duration::from_secs(15);
const FIRE: &str = "/conformance/seams/sample/effect-seams/fire";
const REQUEST_SCHEMA: &str = "effect-seams-fire.request.schema.json";
const RESPONSE_SCHEMA: &str = "effect-seams-fire.response.schema.json";

// ---------------------------------------------------------------------------
// The receiver: counts every arrival; `/fail` answers 500.

/// One request the receiver got.
#[derive(Debug, Clone)]
struct Arrival {
    path: String,
    idempotency_key: Option<String>,
    anthropic_version: Option<String>,
    body: Value,
}

type Receiver = Loopback<Arc<Mutex<Vec<Arrival>>>>;

async fn receiver() -> Receiver {
    async fn answer(
        State(seen): State<Arc<Mutex<Vec<Arrival>>>>,
        uri: Uri,
        headers: HeaderMap,
        body: Bytes,
    ) -> (StatusCode, axum::Json<Value>) {
        let header = |name: &str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        seen.lock().expect("lock").push(Arrival {
            path: uri.path().to_owned(),
            idempotency_key: header("idempotency-key"),
            anthropic_version: header("anthropic-version"),
            body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        });
        if uri.path() == "/fail" {
            return (StatusCode::INTERNAL_SERVER_ERROR, axum::Json(json!({})));
        }
        (StatusCode::OK, axum::Json(json!({"ok": true})))
    }
    Receiver::serve(Router::new().route("/{*path}", post(answer))).await
}

fn arrivals(receiver: &Receiver) -> Vec<Arrival> {
    receiver.state.lock().expect("lock").clone()
}

// ---------------------------------------------------------------------------
// Requests.

async fn host(mutant: Option<Mutant>) -> RunningHost {
    seam_host(mutant, HostConfig::default()).await
}

/// The manifest's row ids, as `GET /host/effect-seams` serves them.
async fn manifest_ids(client: &reqwest::Client, host: &RunningHost) -> Vec<String> {
    let (status, doc) = get_json(
        client,
        &format!("{}/host/effect-seams", host.base_url),
        OPERATOR,
    )
    .await;
    assert_eq!(status, 200, "{doc}");
    doc["seams"]
        .as_array()
        .expect("seams")
        .iter()
        .map(|row| row["seam"].as_str().expect("seam").to_owned())
        .collect()
}

/// Fires `seam` at `url`; the run is terminal when this returns 201.
async fn fire(client: &reqwest::Client, host: &RunningHost, seam: &str, url: &str) -> String {
    let body = json!({"seam": seam, "receiverUrl": url});
    assert_valid(REQUEST_SCHEMA, &body);
    let answer = send(
        client.post(format!("{}{FIRE}", host.base_url)).json(&body),
        Some(OPERATOR),
    )
    .await;
    assert_eq!(answer.status, 201, "{}", answer.body);
    assert_valid(RESPONSE_SCHEMA, &answer.body);
    answer.body["runId"].as_str().expect("runId").to_owned()
}

/// Forks `run_id` (replay) and reads the fork's events until it is terminal.
async fn fork(client: &reqwest::Client, host: &RunningHost, run_id: &str) -> (String, Vec<Value>) {
    let fork_id = replay_fork(client, &host.base_url, run_id).await;
    let events = events_until(client, host, &fork_id, 10, |_| false).await;
    (fork_id, events)
}

/// The run's events (the run is terminal).
async fn events(client: &reqwest::Client, host: &RunningHost, run_id: &str) -> Vec<Value> {
    events_until(client, host, run_id, 10, |_| false).await
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

/// The multiset of (nodeId, attempt, at) of ledger rows, sorted.
fn witness(rows: &[Value]) -> Vec<(String, u64, String)> {
    let mut keys: Vec<(String, u64, String)> = rows
        .iter()
        .map(|row| {
            (
                row["nodeId"].as_str().unwrap_or_default().to_owned(),
                row["attempt"].as_u64().unwrap_or_default(),
                row["at"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    keys.sort();
    keys
}

fn terminal(events: &[Value]) -> &str {
    events
        .last()
        .and_then(|e| e["type"].as_str())
        .unwrap_or_default()
}

fn tool_key(run_id: &str) -> String {
    hex::encode(Sha256::digest(format!("{run_id}/agent/1").as_bytes()))
}

fn receiver_path(seam: &str) -> &'static str {
    match seam {
        "tool-receiver" => "/t",
        "packs-test-node" => "/k",
        _ => "/p",
    }
}

/// The node a seam's effect row names: the pack node for `packs-test-node`,
/// else the agent node.
fn effect_node(seam: &str) -> &'static str {
    if seam == "packs-test-node" {
        "hidden-effect"
    } else {
        "agent"
    }
}

// ---------------------------------------------------------------------------
// Firing each row.

#[tokio::test]
async fn each_manifest_row_fires_once_and_writes_one_delivered_ledger_row() {
    bounded(TEST_TIMEOUT, async {
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        let ids = manifest_ids(&client, &host).await;
        assert_eq!(ids, ["tool-receiver", "provider:web_search", "packs-test-node"]);
        for seam in &ids {
            let receiver = receiver().await;
            let before = OffsetDateTime::now_utc();
            let run_id = fire(&client, &host, seam, &receiver.url(receiver_path(seam))).await;
            let after = OffsetDateTime::now_utc();
            let seen = arrivals(&receiver);
            assert_eq!(seen.len(), 1, "{seam}: exactly one effect: {seen:#?}");
            assert_eq!(seen[0].path, receiver_path(seam), "receiverUrl itself");
            let run_events = events(&client, &host, &run_id).await;
            assert_eq!(terminal(&run_events), "run.completed", "{run_events:#?}");
            assert!(nonconformant_codes(&run_events).is_empty());
            if seam == "tool-receiver" {
                // As the turn loop dispatches: `{}` keyed by the tool identity.
                assert_eq!(seen[0].body, json!({}));
                assert_eq!(
                    seen[0].idempotency_key.as_deref(),
                    Some(tool_key(&run_id).as_str())
                );
                assert_eq!(of_type(&run_events, "agent.tool-called").len(), 1);
                let returned = of_type(&run_events, "agent.tool-returned");
                assert_eq!(returned.len(), 1);
                assert_eq!(returned[0]["payload"]["status"], "ok");
            } else if seam == "packs-test-node" {
                // One pack node dispatch (RPL-4's witness: a transform node
                // declared side-effect).
                assert_eq!(
                    seen[0].body,
                    json!({"packId": "refhost.effect-seam-fire", "nodeType": "hidden-effect", "runId": run_id})
                );
                assert_eq!(of_type(&run_events, "node.completed").len(), 1);
                assert!(of_type(&run_events, "agent.tool-called").is_empty());
            } else {
                // A minimal Messages body that offers the server tool.
                assert_eq!(seen[0].anthropic_version.as_deref(), Some("2023-06-01"));
                assert_eq!(
                    seen[0].body["tools"],
                    json!([{"type": "web_search_20250305", "name": "web_search"}])
                );
                assert!(of_type(&run_events, "agent.tool-called").is_empty());
            }
            let rows = ledger(&client, &host, &run_id).await;
            assert_eq!(rows.len(), 1, "{rows:#?}");
            let row = &rows[0];
            let mut keys: Vec<&str> = row
                .as_object()
                .expect("row")
                .keys()
                .map(String::as_str)
                .collect();
            keys.sort_unstable();
            assert_eq!(
                keys,
                ["at", "attempt", "effectId", "keying", "nodeId", "state"]
            );
            assert_eq!(row["nodeId"], effect_node(seam));
            assert_eq!(row["attempt"], 1);
            assert_eq!(row["keying"], format!("seam:{seam}"));
            assert_eq!(row["state"], "delivered");
            assert!(
                row["effectId"]
                    .as_str()
                    .is_some_and(|id| id.starts_with("eff_"))
            );
            let at =
                OffsetDateTime::parse(row["at"].as_str().expect("at"), &Rfc3339).expect("RFC 3339");
            let slack = Duration::from_millis(5);
            assert!(at + slack >= before && at <= after + slack, "{at}");
        }
        host.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn a_replay_fork_sends_nothing_and_inherits_the_parents_rows_unchanged() {
    bounded(TEST_TIMEOUT, async {
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        for seam in manifest_ids(&client, &host).await {
            let receiver = receiver().await;
            let parent_id = fire(&client, &host, &seam, &receiver.url(receiver_path(&seam))).await;
            let parent_events = events(&client, &host, &parent_id).await;
            let parent_rows = ledger(&client, &host, &parent_id).await;
            // A fork well after the delivery: a restamped `at` would show.
            tokio::time::sleep(Duration::from_millis(20)).await;
            let (fork_id, fork_events) = fork(&client, &host, &parent_id).await;
            assert_eq!(terminal(&fork_events), "run.completed", "{fork_events:#?}");
            assert_eq!(
                arrivals(&receiver).len(),
                1,
                "{seam}: the fork sent nothing"
            );
            let fork_rows = ledger(&client, &host, &fork_id).await;
            assert_eq!(fork_rows, parent_rows, "{seam}: inherited unchanged");
            assert_eq!(witness(&fork_rows), witness(&parent_rows));
            // The outcome served is the recorded one.
            assert_eq!(
                of_type(&fork_events, "run.completed")[0]["payload"],
                of_type(&parent_events, "run.completed")[0]["payload"]
            );
            if seam == "tool-receiver" {
                assert_eq!(
                    of_type(&fork_events, "agent.tool-returned")[0]["payload"],
                    of_type(&parent_events, "agent.tool-returned")[0]["payload"]
                );
            }
            // A fork of the fork serves the fork's own record: still nothing.
            let (grand_id, grand_events) = fork(&client, &host, &fork_id).await;
            assert_eq!(terminal(&grand_events), "run.completed");
            assert_eq!(arrivals(&receiver).len(), 1);
            assert_eq!(ledger(&client, &host, &grand_id).await, parent_rows);
        }
        host.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn an_undelivered_effect_fails_the_run_and_writes_no_row() {
    bounded(TEST_TIMEOUT, async {
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        let receiver = receiver().await;
        for (seam, code) in [
            ("tool-receiver", "refhost.effect_not_delivered"),
            ("provider:web_search", "refhost.provider_error"),
            ("packs-test-node", "refhost.pack_node_failed"),
        ] {
            let run_id = fire(&client, &host, seam, &receiver.url("/fail")).await;
            let run_events = events(&client, &host, &run_id).await;
            assert_eq!(terminal(&run_events), "run.failed");
            assert_eq!(
                run_events.last().expect("event")["payload"]["error"]["code"],
                code
            );
            assert!(nonconformant_codes(&run_events).is_empty());
            // Zero effects: nothing for RPL-11 to compare (the row is blocked).
            assert!(ledger(&client, &host, &run_id).await.is_empty());
        }
        assert_eq!(arrivals(&receiver).len(), 3);
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
        let url = receiver.url("/t");
        let post = |body: Value| client.post(format!("{}{FIRE}", host.base_url)).json(&body);
        let cases = [
            (
                json!({"seam": "nope", "receiverUrl": url}),
                404,
                "not_found",
                "tool-receiver, provider:web_search",
            ),
            (
                json!({"seam": "tool-receiver", "receiverUrl": "http://192.0.2.1/t"}),
                400,
                "validation_error",
                "receiverUrl",
            ),
            (
                json!({"seam": "tool-receiver", "receiverUrl": "https://127.0.0.1/t"}),
                400,
                "validation_error",
                "receiverUrl",
            ),
            (
                json!({"seam": "tool-receiver", "receiverUrl": url, "extra": true}),
                400,
                "validation_error",
                "extra",
            ),
            (json!({"receiverUrl": url}), 400, "validation_error", "seam"),
        ];
        for (body, status, code, names) in cases {
            let answer = send(post(body.clone()), Some(OPERATOR)).await;
            assert_eq!(answer.status, status, "{body}: {}", answer.body);
            assert_eq!(answer.body["error"], code, "{body}");
            let message = answer.body["message"].as_str().expect("message");
            assert!(message.contains(names), "{body}: {message}");
            assert_valid(RESPONSE_SCHEMA, &answer.body);
        }
        // The caller checks come first, as for every seam.
        let body = json!({"seam": "tool-receiver", "receiverUrl": url});
        assert_eq!(send(post(body.clone()), None).await.status, 401);
        assert_eq!(send(post(body), Some(ALICE)).await.status, 403);
        assert!(arrivals(&receiver).is_empty(), "nothing was fired");
        host.shutdown().await;
    })
    .await;
}

// ---------------------------------------------------------------------------
// The mutants.

/// What one fire-and-fork of `tool-receiver` showed.
struct Probe {
    /// Receiver arrivals after the parent, then after the fork.
    arrivals: (usize, usize),
    parent_rows: Vec<Value>,
    fork_rows: Vec<Value>,
}

async fn fire_and_fork(client: &reqwest::Client, host: &RunningHost) -> Probe {
    let receiver = receiver().await;
    let parent_id = fire(client, host, "tool-receiver", &receiver.url("/t")).await;
    let after_parent = arrivals(&receiver).len();
    let parent_rows = ledger(client, host, &parent_id).await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let (fork_id, _) = fork(client, host, &parent_id).await;
    Probe {
        arrivals: (after_parent, arrivals(&receiver).len()),
        parent_rows,
        fork_rows: ledger(client, host, &fork_id).await,
    }
}

#[tokio::test]
async fn a_refiring_fork_delivers_again_and_adds_a_fresh_row() {
    bounded(TEST_TIMEOUT, async {
        let host = host(Some(Mutant::FireSeamRefiresOnFork)).await;
        let client = client(CLIENT_TIMEOUT);
        let probe = fire_and_fork(&client, &host).await;
        assert_eq!(probe.arrivals, (1, 2), "the fork POSTed again");
        assert_eq!(probe.fork_rows.len(), 2, "{:#?}", probe.fork_rows);
        assert_eq!(probe.fork_rows[0], probe.parent_rows[0]);
        assert_ne!(probe.fork_rows[1]["at"], probe.parent_rows[0]["at"]);
        host.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn a_restamping_fork_sends_nothing_but_moves_at() {
    bounded(TEST_TIMEOUT, async {
        let host = host(Some(Mutant::ForkLedgerRestamped)).await;
        let client = client(CLIENT_TIMEOUT);
        let probe = fire_and_fork(&client, &host).await;
        assert_eq!(probe.arrivals, (1, 1), "no second delivery");
        assert_eq!(probe.fork_rows.len(), 1);
        assert_eq!(
            probe.fork_rows[0]["effectId"],
            probe.parent_rows[0]["effectId"]
        );
        assert_ne!(probe.fork_rows[0]["at"], probe.parent_rows[0]["at"]);
        host.shutdown().await;
    })
    .await;
}

// ---------------------------------------------------------------------------
// Branch forks (EFF-10).

/// `POST /runs/{run_id}:fork` with `body`.
async fn fork_with(
    client: &reqwest::Client,
    host: &RunningHost,
    run_id: &str,
    body: &Value,
) -> common::Reply {
    send(
        client
            .post(format!("{}/runs/{run_id}:fork", host.base_url))
            .json(body),
        Some(OPERATOR),
    )
    .await
}

/// The sequence of the source's first event of type `kind`.
fn seq_of(events: &[Value], kind: &str) -> i64 {
    of_type(events, kind)[0]["sequence"]
        .as_i64()
        .expect("sequence")
}

fn types(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .map(|e| e["type"].as_str().unwrap_or_default())
        .collect()
}

/// Branches `run_id` at `from_seq`; checks the 201 and returns the branch's
/// id and its events once terminal.
async fn branch(
    client: &reqwest::Client,
    host: &RunningHost,
    run_id: &str,
    from_seq: i64,
) -> (String, Vec<Value>) {
    let answer = fork_with(
        client,
        host,
        run_id,
        &json!({"mode": "branch", "fromSeq": from_seq}),
    )
    .await;
    assert_eq!(answer.status, 201, "{}", answer.body);
    let branch_id = answer.body["runId"].as_str().expect("runId").to_owned();
    assert_ne!(branch_id, run_id);
    assert_eq!(answer.body["sourceRunId"], run_id);
    assert_eq!(answer.body["fromSeq"], from_seq);
    assert_eq!(answer.body["mode"], "branch");
    assert!(answer.body["status"].is_string());
    assert_eq!(
        answer.body["eventsUrl"],
        format!("/runs/{branch_id}/events")
    );
    let events = events(client, host, &branch_id).await;
    (branch_id, events)
}

/// What one fire-and-branch (from `node.started`) of `tool-receiver` showed.
struct BranchProbe {
    /// Receiver arrivals after the parent, then after the branch.
    arrivals: (usize, usize),
    keys: Vec<Option<String>>,
    parent_id: String,
    parent_events: Vec<Value>,
    parent_rows: Vec<Value>,
    branch_events: Vec<Value>,
    branch_rows: Vec<Value>,
}

async fn fire_and_branch(client: &reqwest::Client, host: &RunningHost) -> BranchProbe {
    let receiver = receiver().await;
    let parent_id = fire(client, host, "tool-receiver", &receiver.url("/t")).await;
    let after_parent = arrivals(&receiver).len();
    let parent_events = events(client, host, &parent_id).await;
    let parent_rows = ledger(client, host, &parent_id).await;
    // Later than the parent's delivery, so a fresh `at` differs.
    tokio::time::sleep(Duration::from_millis(20)).await;
    let from_seq = seq_of(&parent_events, "node.started");
    let (branch_id, branch_events) = branch(client, host, &parent_id, from_seq).await;
    let seen = arrivals(&receiver);
    BranchProbe {
        arrivals: (after_parent, seen.len()),
        keys: seen.into_iter().map(|a| a.idempotency_key).collect(),
        parent_id,
        parent_events,
        parent_rows,
        branch_events,
        branch_rows: ledger(client, host, &branch_id).await,
    }
}

#[tokio::test]
async fn a_branch_from_before_the_effect_performs_it_again_in_its_own_scope() {
    bounded(TEST_TIMEOUT, async {
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        let probe = fire_and_branch(&client, &host).await;
        // EFF-10: the parent's claim does not reach across the fork.
        assert_eq!(probe.arrivals, (1, 2), "the branch POSTed again");
        let parent_key = tool_key(&probe.parent_id);
        assert_eq!(
            probe.keys,
            [Some(parent_key.clone()), Some(parent_key)],
            "the same Idempotency-Key as the parent sent"
        );
        // Events: the inherited prefix, then the live effect.
        let events = &probe.branch_events;
        assert_eq!(
            types(events),
            [
                "run.started",
                "node.started",
                "agent.tool-called",
                "agent.tool-returned",
                "run.completed"
            ]
        );
        for (copy, original) in events.iter().zip(&probe.parent_events).take(2) {
            for field in ["type", "payload", "nodeId", "sequence"] {
                assert_eq!(copy[field], original[field], "{field}");
            }
            assert_ne!(copy["eventId"], original["eventId"]);
            assert_ne!(copy["runId"], original["runId"]);
        }
        for (n, event) in events.iter().enumerate() {
            assert_eq!(event["sequence"], n, "contiguous sequences");
        }
        assert_eq!(
            of_type(events, "agent.tool-returned")[0]["payload"]["status"],
            "ok"
        );
        assert!(nonconformant_codes(events).is_empty());
        // Ledger: one new row, same effectId, a fresh `at`.
        assert_eq!(probe.parent_rows.len(), 1);
        assert_eq!(probe.branch_rows.len(), 1, "{:#?}", probe.branch_rows);
        let (parent, row) = (&probe.parent_rows[0], &probe.branch_rows[0]);
        assert_eq!(row["effectId"], parent["effectId"]);
        assert_eq!(row["keying"], "seam:tool-receiver");
        assert_eq!(row["state"], "delivered");
        assert_eq!(
            (&row["nodeId"], &row["attempt"]),
            (&parent["nodeId"], &parent["attempt"])
        );
        let at = |row: &Value| {
            OffsetDateTime::parse(row["at"].as_str().expect("at"), &Rfc3339).expect("RFC 3339")
        };
        assert!(at(row) > at(parent), "fresh at: {row} vs {parent}");
        // The parent's ledger is untouched.
        assert_eq!(
            ledger(&client, &host, &probe.parent_id).await,
            probe.parent_rows
        );
        host.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn a_branch_of_a_branch_and_a_branch_from_run_started_deliver_again() {
    bounded(TEST_TIMEOUT, async {
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        let receiver = receiver().await;
        let parent_id = fire(&client, &host, "tool-receiver", &receiver.url("/t")).await;
        // From `run.started` alone: the branch starts the node itself.
        let (first, first_events) = branch(&client, &host, &parent_id, 0).await;
        assert_eq!(
            types(&first_events),
            [
                "run.started",
                "node.started",
                "agent.tool-called",
                "agent.tool-returned",
                "run.completed"
            ]
        );
        // A branch of the branch, from before its effect: a third delivery,
        // still keyed as the lineage's first run sent it.
        let from_seq = seq_of(&first_events, "node.started");
        let (second, second_events) = branch(&client, &host, &first, from_seq).await;
        assert_eq!(terminal(&second_events), "run.completed");
        let seen = arrivals(&receiver);
        assert_eq!(seen.len(), 3);
        assert!(
            seen.iter()
                .all(|a| a.idempotency_key.as_deref() == Some(tool_key(&parent_id).as_str()))
        );
        let effect_id = ledger(&client, &host, &parent_id).await[0]["effectId"].clone();
        for run in [&first, &second] {
            let rows = ledger(&client, &host, run).await;
            assert_eq!(rows.len(), 1, "{rows:#?}");
            assert_eq!(rows[0]["effectId"], effect_id);
        }
        host.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn a_branch_from_after_the_effect_inherits_it_and_sends_nothing() {
    bounded(TEST_TIMEOUT, async {
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        let receiver = receiver().await;
        let parent_id = fire(&client, &host, "tool-receiver", &receiver.url("/t")).await;
        let parent_events = events(&client, &host, &parent_id).await;
        let parent_rows = ledger(&client, &host, &parent_id).await;
        tokio::time::sleep(Duration::from_millis(20)).await;
        // From the tool return: the effect is inherited, the run completes live.
        let returned = seq_of(&parent_events, "agent.tool-returned");
        let (branch_id, branch_events) = branch(&client, &host, &parent_id, returned).await;
        assert_eq!(types(&branch_events), types(&parent_events));
        assert_eq!(
            of_type(&branch_events, "run.completed")[0]["payload"],
            of_type(&parent_events, "run.completed")[0]["payload"]
        );
        // The copied return is caused by the copied call.
        let called = of_type(&branch_events, "agent.tool-called")[0];
        let ret = of_type(&branch_events, "agent.tool-returned")[0];
        if !ret["causationId"].is_null() {
            assert_eq!(ret["causationId"], called["eventId"]);
        }
        assert_eq!(arrivals(&receiver).len(), 1, "nothing was sent");
        assert_eq!(ledger(&client, &host, &branch_id).await, parent_rows);
        // A replay fork of that branch serves the branch's own record.
        let (replay_id, replay_events) = fork(&client, &host, &branch_id).await;
        assert_eq!(terminal(&replay_events), "run.completed");
        assert_eq!(arrivals(&receiver).len(), 1);
        assert_eq!(ledger(&client, &host, &replay_id).await, parent_rows);
        // From the very end: a completed copy.
        let last = parent_events.last().expect("event")["sequence"]
            .as_i64()
            .expect("seq");
        let answer = fork_with(
            &client,
            &host,
            &parent_id,
            &json!({"mode": "branch", "fromSeq": last}),
        )
        .await;
        assert_eq!(answer.status, 201, "{}", answer.body);
        assert_eq!(answer.body["status"], "completed");
        let end_id = answer.body["runId"].as_str().expect("runId");
        let end_events = events(&client, &host, end_id).await;
        assert_eq!(types(&end_events), types(&parent_events));
        assert_eq!(ledger(&client, &host, end_id).await, parent_rows);
        assert_eq!(arrivals(&receiver).len(), 1);
        host.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn branch_requests_are_checked() {
    bounded(TEST_TIMEOUT, async {
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        let receiver = receiver().await;
        let parent_id = fire(&client, &host, "tool-receiver", &receiver.url("/t")).await;
        let parent_events = events(&client, &host, &parent_id).await;
        let last = parent_events.last().expect("event")["sequence"]
            .as_i64()
            .expect("seq");
        let called = seq_of(&parent_events, "agent.tool-called");
        let cases = [
            (json!({"mode": "branch"}), "fromSeq"),
            (
                json!({"mode": "branch", "fromSeq": 1, "runOptionsOverlay": {"a": 1}}),
                "runOptionsOverlay",
            ),
            // Inside the effect: neither inheritable nor re-callable.
            (json!({"mode": "branch", "fromSeq": called}), "fromSeq"),
        ];
        for (body, field) in cases {
            let answer = fork_with(&client, &host, &parent_id, &body).await;
            assert_eq!(answer.status, 400, "{body}: {}", answer.body);
            assert_eq!(answer.body["error"], "validation_error");
            let message = answer.body["message"].as_str().expect("message");
            assert!(message.contains(field), "{body}: {message}");
        }
        // runs.md §Fork: a fromSeq not in the source log.
        let beyond = json!({"mode": "branch", "fromSeq": last + 1});
        let answer = fork_with(&client, &host, &parent_id, &beyond).await;
        assert_eq!(answer.status, 422, "{}", answer.body);
        assert_eq!(answer.body["error"], "fork_point_invalid");
        assert_eq!(answer.body["details"]["lastSequence"], last);
        // An empty overlay is fine.
        let answer = fork_with(
            &client,
            &host,
            &parent_id,
            &json!({"mode": "branch", "fromSeq": last, "runOptionsOverlay": {}}),
        )
        .await;
        assert_eq!(answer.status, 201, "{}", answer.body);
        // Any other source: a provider fire run, a workflow run.
        let provider_id = fire(&client, &host, "provider:web_search", &receiver.url("/p")).await;
        let workflow = send(
            client
                .post(format!("{}/runs", host.base_url))
                .json(&json!({"workflowId": "conformance-noop"})),
            Some(ALICE),
        )
        .await;
        assert_eq!(workflow.status, 201, "{}", workflow.body);
        let workflow_id = workflow.body["runId"].as_str().expect("runId").to_owned();
        for (source, token) in [(provider_id.as_str(), OPERATOR), (&workflow_id, ALICE)] {
            let answer = send(
                client
                    .post(format!("{}/runs/{source}:fork", host.base_url))
                    .json(&json!({"mode": "branch", "fromSeq": 0})),
                Some(token),
            )
            .await;
            assert_eq!(answer.status, 422, "{}", answer.body);
            assert_eq!(answer.body["error"], "capability_not_provided");
            assert_eq!(
                answer.body["message"],
                "branch forks are served for `tool-receiver` effect-seam fire runs only; send mode `replay`"
            );
        }
        // Refusals send nothing: one arrival per fire, none per refusal.
        assert_eq!(arrivals(&receiver).len(), 2);
        // Discovery lists both modes.
        let doc = common::discovery(&client, &host.base_url).await;
        assert_eq!(doc["replay"]["modes"], json!(["replay", "branch"]));
        host.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn two_fire_runs_of_one_receiver_both_deliver() {
    bounded(TEST_TIMEOUT, async {
        // Each fresh run is its own claim scope, with or without the mutant
        // (it only moves a branch's scope).
        for mutant in [None, Some(Mutant::Layer2DedupSpansFork)] {
            let host = host(mutant).await;
            let client = client(CLIENT_TIMEOUT);
            let receiver = receiver().await;
            let url = receiver.url("/t");
            let first = fire(&client, &host, "tool-receiver", &url).await;
            let second = fire(&client, &host, "tool-receiver", &url).await;
            let seen = arrivals(&receiver);
            assert_eq!(seen.len(), 2, "{mutant:?}");
            assert_ne!(seen[0].idempotency_key, seen[1].idempotency_key);
            let (one, two) = (
                ledger(&client, &host, &first).await,
                ledger(&client, &host, &second).await,
            );
            assert_eq!((one.len(), two.len()), (1, 1));
            // One business operation: one Layer-2 identity.
            assert_eq!(one[0]["effectId"], two[0]["effectId"]);
            host.shutdown().await;
        }
    })
    .await;
}

#[tokio::test]
async fn a_dedup_spanning_fork_suppresses_the_branchs_effect() {
    bounded(TEST_TIMEOUT, async {
        let host = host(Some(Mutant::Layer2DedupSpansFork)).await;
        let client = client(CLIENT_TIMEOUT);
        let probe = fire_and_branch(&client, &host).await;
        assert_eq!(probe.arrivals, (1, 1), "the parent's claim suppressed it");
        // Reported as a success served from the claim, with no new row.
        assert_eq!(terminal(&probe.branch_events), "run.completed");
        assert_eq!(
            of_type(&probe.branch_events, "agent.tool-returned")[0]["payload"]["status"],
            "ok"
        );
        assert!(probe.branch_rows.is_empty(), "{:#?}", probe.branch_rows);
        host.shutdown().await;
    })
    .await;
}
