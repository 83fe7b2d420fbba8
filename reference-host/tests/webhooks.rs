//! Webhook subscriptions and their fan-out (RPL-8): delivery order and body
//! shape, the event filter, tenants, and that a fork's prefix is never
//! delivered again (a webhook receiver after a fork). Every wait is bounded
//! and everything is loopback.

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use common::{
    ALICE, ERIN, FakeProvider, Loopback, OPERATOR, bounded, client, events_until, openai_text,
    seam_host,
};
use reference_host::mutants::Mutant;
use reference_host::{HostConfig, RunningHost};
use serde_json::{Value, json};

const TEST_TIMEOUT: Duration = Duration::from_secs(60);
const CLIENT_TIMEOUT: Duration = Duration::from_secs(10);

/// One delivery the receiver saw: its path label, `OpenWOP-Delivery` and body.
type Seen = (String, Option<String>, Value);

type Receiver = Loopback<Arc<Mutex<Vec<Seen>>>>;

/// A webhook receiver answering 200 at `/hook/{label}`, recording each POST.
async fn receiver() -> Receiver {
    async fn record(
        State(seen): State<Arc<Mutex<Vec<Seen>>>>,
        Path(label): Path<String>,
        headers: HeaderMap,
        body: axum::body::Bytes,
    ) -> StatusCode {
        let delivery = headers
            .get("openwop-delivery")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
        seen.lock().expect("lock").push((label, delivery, body));
        StatusCode::OK
    }
    Loopback::serve(Router::new().route("/hook/{label}", post(record))).await
}

impl Receiver {
    /// Bodies delivered to `label`, in arrival order.
    fn bodies(&self, label: &str) -> Vec<Value> {
        self.all(label).into_iter().map(|(_, _, b)| b).collect()
    }

    fn all(&self, label: &str) -> Vec<Seen> {
        self.state
            .lock()
            .expect("lock")
            .iter()
            .filter(|(l, _, _)| l == label)
            .cloned()
            .collect()
    }

    /// Waits (bounded) until `label` got a delivery of `run_id`'s `kind`.
    async fn wait_for(&self, label: &str, run_id: &str, kind: &str) {
        for _ in 0..400 {
            if self
                .bodies(label)
                .iter()
                .any(|b| b["runId"] == run_id && b["type"] == kind)
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!(
            "no {kind} of {run_id} delivered to {label}: {:#?}",
            self.bodies(label)
        );
    }
}

async fn subscribe(
    client: &reqwest::Client,
    host: &RunningHost,
    token: &str,
    body: &Value,
) -> (u16, Value) {
    let response = client
        .post(format!("{}/webhooks", host.base_url))
        .bearer_auth(token)
        .json(body)
        .send()
        .await
        .expect("answers");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn subscribed(
    client: &reqwest::Client,
    host: &RunningHost,
    token: &str,
    body: Value,
) -> String {
    let (status, answer) = subscribe(client, host, token, &body).await;
    assert_eq!(status, 201, "{answer}");
    answer["webhookId"].as_str().expect("webhookId").to_owned()
}

/// A text-only turn run attributed to `principal`; returns its id.
async fn turn_run(
    client: &reqwest::Client,
    host: &RunningHost,
    provider: &FakeProvider,
    principal: &str,
) -> String {
    let model = provider.script(vec![openai_text("done"), openai_text("done")]);
    let response = client
        .post(format!(
            "{}/conformance/seams/sample/turn/run",
            host.base_url
        ))
        .bearer_auth(OPERATOR)
        .json(&json!({
            "principal": principal,
            "provider": {"wire": "openai-chat", "baseUrl": provider.base, "model": model},
            "tools": [],
            "input": "Say done."
        }))
        .send()
        .await
        .expect("answers");
    let status = response.status().as_u16();
    let answer: Value = response.json().await.expect("json");
    assert_eq!(status, 201, "{answer}");
    answer["runId"].as_str().expect("runId").to_owned()
}

/// Every event of the run once it is terminal.
async fn finished(client: &reqwest::Client, host: &RunningHost, run_id: &str) -> Vec<Value> {
    events_until(client, host, run_id, 20, |_| false).await
}

async fn fork(client: &reqwest::Client, host: &RunningHost, run_id: &str, body: Value) -> Value {
    let response = client
        .post(format!("{}/runs/{run_id}:fork", host.base_url))
        .bearer_auth(OPERATOR)
        .json(&body)
        .send()
        .await
        .expect("answers");
    let status = response.status().as_u16();
    let answer: Value = response.json().await.expect("json");
    assert_eq!(status, 201, "{answer}");
    answer
}

fn of_run(bodies: &[Value], run_id: &str) -> Vec<Value> {
    bodies
        .iter()
        .filter(|b| b["runId"] == run_id)
        .cloned()
        .collect()
}

fn sequences(bodies: &[Value]) -> Vec<i64> {
    bodies
        .iter()
        .filter_map(|b| b["sequence"].as_i64())
        .collect()
}

#[tokio::test]
async fn a_turn_runs_events_are_delivered_in_order_with_the_body_shape() {
    bounded(TEST_TIMEOUT, async {
        let host = seam_host(None, HostConfig::default()).await;
        let provider = FakeProvider::start().await;
        let hooks = receiver().await;
        let client = client(CLIENT_TIMEOUT);
        let url = hooks.url("/hook/all");
        let (status, answer) = subscribe(&client, &host, ALICE, &json!({"url": url})).await;
        assert_eq!(status, 201, "{answer}");
        let webhook_id = answer["webhookId"].as_str().expect("id").to_owned();
        assert!(webhook_id.starts_with("wh_"));
        assert_eq!(answer, json!({"webhookId": webhook_id, "url": url}));

        let run_id = turn_run(&client, &host, &provider, "alice").await;
        let events = finished(&client, &host, &run_id).await;
        let last = events.last().expect("events")["type"]
            .as_str()
            .expect("type");
        hooks.wait_for("all", &run_id, last).await;
        let seen = hooks.all("all");
        let expected: Vec<Value> = events
            .iter()
            .map(|e| {
                json!({
                    "webhookId": webhook_id, "runId": run_id, "sequence": e["sequence"],
                    "eventId": e["eventId"], "type": e["type"], "payload": e["payload"],
                })
            })
            .collect();
        let bodies: Vec<Value> = seen.iter().map(|(_, _, b)| b.clone()).collect();
        assert_eq!(bodies, expected);
        for (_, header, body) in &seen {
            assert_eq!(header.as_deref(), body["eventId"].as_str());
        }
        host.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn the_events_filter_delivers_only_the_listed_types() {
    bounded(TEST_TIMEOUT, async {
        let host = seam_host(None, HostConfig::default()).await;
        let provider = FakeProvider::start().await;
        let hooks = receiver().await;
        let client = client(CLIENT_TIMEOUT);
        let (status, answer) = subscribe(
            &client,
            &host,
            ALICE,
            &json!({"url": hooks.url("/hook/some"), "events": ["run.completed"]}),
        )
        .await;
        assert_eq!(status, 201, "{answer}");
        assert_eq!(answer["events"], json!(["run.completed"]));
        subscribed(
            &client,
            &host,
            ALICE,
            json!({"url": hooks.url("/hook/all")}),
        )
        .await;
        let run_id = turn_run(&client, &host, &provider, "alice").await;
        finished(&client, &host, &run_id).await;
        hooks.wait_for("all", &run_id, "run.completed").await;
        hooks.wait_for("some", &run_id, "run.completed").await;
        assert!(hooks.bodies("all").len() > 1);
        let some = hooks.bodies("some");
        assert_eq!(some.len(), 1, "{some:#?}");
        assert_eq!(some[0]["type"], "run.completed");
        host.shutdown().await;
    })
    .await;
}

/// What a webhook receiver saw after two replay forks of a finished run:
/// one with the default `fromSeq` (its whole history re-states the
/// source's) and one from sequence 1; a later ordinary run is the marker
/// that the dispatcher got past both forks' events.
struct AfterFork {
    source: Vec<Value>,
    whole: Vec<Value>,
    whole_events: Vec<Value>,
    partial: Vec<Value>,
    partial_events: Vec<Value>,
}

async fn after_fork(mutant: Option<Mutant>) -> AfterFork {
    let host = seam_host(mutant, HostConfig::default()).await;
    let provider = FakeProvider::start().await;
    let hooks = receiver().await;
    let client = client(CLIENT_TIMEOUT);
    subscribed(&client, &host, ALICE, json!({"url": hooks.url("/hook/w")})).await;
    let source_id = turn_run(&client, &host, &provider, "alice").await;
    finished(&client, &host, &source_id).await;
    let whole = fork(&client, &host, &source_id, json!({"mode": "replay"})).await;
    let whole_id = whole["runId"].as_str().expect("runId").to_owned();
    let whole_events = finished(&client, &host, &whole_id).await;
    let partial = fork(
        &client,
        &host,
        &source_id,
        json!({"mode": "replay", "fromSeq": 1}),
    )
    .await;
    assert_eq!(partial["fromSeq"], 1);
    let partial_id = partial["runId"].as_str().expect("runId").to_owned();
    let partial_events = finished(&client, &host, &partial_id).await;
    let marker = turn_run(&client, &host, &provider, "alice").await;
    finished(&client, &host, &marker).await;
    hooks.wait_for("w", &marker, "run.completed").await;
    let bodies = hooks.bodies("w");
    host.shutdown().await;
    AfterFork {
        source: of_run(&bodies, &source_id),
        whole: of_run(&bodies, &whole_id),
        whole_events,
        partial: of_run(&bodies, &partial_id),
        partial_events,
    }
}

#[tokio::test]
async fn a_replay_forks_prefix_is_never_delivered_again() {
    bounded(TEST_TIMEOUT, async {
        let seen = after_fork(None).await;
        assert!(!seen.source.is_empty());
        // The fork re-states exactly the source's history: nothing new.
        assert_eq!(seen.whole_events.len(), seen.source.len());
        assert!(seen.whole.is_empty(), "RPL-8: {:#?}", seen.whole);
        // From sequence 1: only the events after it.
        let beyond: Vec<i64> = seen
            .partial_events
            .iter()
            .filter_map(|e| e["sequence"].as_i64())
            .filter(|s| *s > 1)
            .collect();
        assert!(!beyond.is_empty());
        assert_eq!(sequences(&seen.partial), beyond);
    })
    .await;
}

#[tokio::test]
async fn subscriptions_are_checked_and_deleted_per_tenant() {
    bounded(TEST_TIMEOUT, async {
        let host = seam_host(None, HostConfig::default()).await;
        let provider = FakeProvider::start().await;
        let hooks = receiver().await;
        let client = client(CLIENT_TIMEOUT);
        let ok_url = hooks.url("/hook/x");
        for (body, field) in [
            (json!({"url": "http://example.com/hook"}), "url"),
            (json!({"url": "https://127.0.0.1/hook"}), "url"),
            (json!({"url": ok_url, "secret": "s"}), "secret"),
            (json!({"url": ok_url, "events": []}), "events"),
            (json!({"url": ok_url, "events": ["a", "a"]}), "events"),
            (json!({"url": ok_url, "events": "run.completed"}), "events"),
            (json!({"events": ["a"]}), "url"),
        ] {
            let (status, answer) = subscribe(&client, &host, ALICE, &body).await;
            assert_eq!(status, 400, "{body}: {answer}");
            assert_eq!(answer["error"], "validation_error");
            assert!(answer["message"].as_str().expect("message").contains(field));
        }
        let anonymous = client
            .post(format!("{}/webhooks", host.base_url))
            .json(&json!({"url": ok_url}))
            .send()
            .await
            .expect("answers");
        assert_eq!(anonymous.status(), 401);

        // Delete: another tenant's id is unknown; the owner's works once.
        let gone = subscribed(
            &client,
            &host,
            ALICE,
            json!({"url": hooks.url("/hook/gone")}),
        )
        .await;
        let delete = |token: &'static str, id: String| {
            let client = client.clone();
            let url = format!("{}/webhooks/{id}", host.base_url);
            async move {
                client
                    .delete(url)
                    .bearer_auth(token)
                    .send()
                    .await
                    .expect("answers")
                    .status()
                    .as_u16()
            }
        };
        assert_eq!(delete(ERIN, gone.clone()).await, 404);
        assert_eq!(delete(ALICE, gone.clone()).await, 204);
        assert_eq!(delete(ALICE, gone.clone()).await, 404);

        // Erin (tenant-b) never sees alice's (tenant-a) runs; a deleted
        // subscription gets nothing. Erin's own later run is the marker.
        subscribed(
            &client,
            &host,
            ERIN,
            json!({"url": hooks.url("/hook/erin")}),
        )
        .await;
        subscribed(
            &client,
            &host,
            ALICE,
            json!({"url": hooks.url("/hook/alice")}),
        )
        .await;
        let alice_run = turn_run(&client, &host, &provider, "alice").await;
        finished(&client, &host, &alice_run).await;
        // The operator (tenant-a) cannot poll erin's run: its delivery is
        // the wait.
        let erin_run = turn_run(&client, &host, &provider, "erin").await;
        hooks.wait_for("erin", &erin_run, "run.completed").await;
        hooks.wait_for("alice", &alice_run, "run.completed").await;
        assert!(of_run(&hooks.bodies("erin"), &alice_run).is_empty());
        assert!(of_run(&hooks.bodies("alice"), &erin_run).is_empty());
        assert!(hooks.bodies("gone").is_empty());
        host.shutdown().await;
    })
    .await;
}
