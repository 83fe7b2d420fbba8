//! Replay divergence (RPL-7) and byte-equivalent fork events (RPL-6) over
//! real HTTP on 127.0.0.1: a turn run, then a `mode: "replay"` fork whose
//! live model rounds agree with the source's, differ from them, or refuse
//! where the source answered. Every wait is bounded; the provider and the tool receiver are loopback doubles.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::routing::post;
use common::{
    Canned, FakeProvider, Loopback, OPERATOR, bounded, client, events_until, nonconformant_codes,
    of_type, openai_calls, openai_text, replay_fork, seam_host, send,
};
use reference_host::mutants::Mutant;
use reference_host::{HostConfig, RunningHost};
use serde_json::{Value, json};

const TEST_TIMEOUT: Duration = Duration::from_secs(60);
const CLIENT_TIMEOUT: Duration = Duration::from_secs(15);
const TURN_RUN: &str = "/conformance/seams/sample/turn/run";

// ---------------------------------------------------------------------------
// Doubles and requests.

/// A tool receiver that answers `{"ok": true}` and counts arrivals.
type Receiver = Loopback<Arc<AtomicUsize>>;

async fn receiver() -> Receiver {
    async fn answer(State(count): State<Arc<AtomicUsize>>) -> axum::Json<Value> {
        count.fetch_add(1, Ordering::SeqCst);
        axum::Json(json!({"ok": true}))
    }
    Receiver::serve(Router::new().route("/t", post(answer))).await
}

/// An OpenAI Chat refusal.
fn openai_refusal() -> Canned {
    Canned::Json(json!({
        "choices": [{"index": 0, "message": {"role": "assistant", "content": null,
                     "refusal": "I can't help with that."}, "finish_reason": "stop"}]
    }))
}

async fn host(mutant: Option<Mutant>) -> RunningHost {
    seam_host(mutant, HostConfig::default()).await
}

/// A source turn run and its replay fork, both finished.
struct Forked {
    source: Vec<Value>,
    fork: Vec<Value>,
    fork_id: String,
    /// Provider requests of the source, then of the fork.
    source_requests: usize,
    fork_requests: usize,
    /// Receiver arrivals after the source and after the fork.
    arrivals: (usize, usize),
}

/// Runs a turn whose provider answers `source`, then forks it (replay)
/// with the provider answering from `fork`; `fork` may hold answers that
/// must never be asked for.
async fn run_and_fork(
    client: &reqwest::Client,
    host: &RunningHost,
    provider: &FakeProvider,
    source: Vec<Canned>,
    fork: Vec<Canned>,
) -> Forked {
    let receiver = receiver().await;
    let source_answers = source.len();
    let model = provider.script(source.into_iter().chain(fork).collect());
    let body = json!({
        "principal": "alice",
        "provider": {"wire": "openai-chat", "baseUrl": provider.base, "model": model},
        "tools": [{
            "toolId": "t",
            "description": "A fixture tool.",
            "inputSchema": {"type": "object"},
            "replayPolicy": "idempotent",
            "safetyTier": "read",
            "receiverUrl": receiver.url("/t"),
        }],
        "input": "Use the tool."
    });
    let base = &host.base_url;
    let created = send(
        client.post(format!("{base}{TURN_RUN}")).json(&body),
        Some(OPERATOR),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let source_id = created.body["runId"].as_str().expect("runId").to_owned();
    let source = events_until(client, host, &source_id, 20, |_| false).await;
    let source_requests = provider.requests(&model).len();
    assert_eq!(
        source_requests, source_answers,
        "the source used its answers"
    );
    let after_source = receiver.state.load(Ordering::SeqCst);
    let fork_id = replay_fork(client, base, &source_id).await;
    let fork = events_until(client, host, &fork_id, 20, |_| false).await;
    let odd = nonconformant_codes(&fork);
    assert!(odd.is_empty(), "unregistered event error codes {odd:?}");
    Forked {
        source,
        fork,
        fork_id,
        source_requests,
        fork_requests: provider.requests(&model).len() - source_requests,
        arrivals: (after_source, receiver.state.load(Ordering::SeqCst)),
    }
}

/// A round of one call of tool `t` with `args`.
fn call(args: &str) -> Canned {
    openai_calls(&[("call_1", "t", args)], "tool_calls")
}

/// The single event of type `kind`.
fn only<'e>(events: &'e [Value], kind: &str) -> &'e Value {
    let found = of_type(events, kind);
    assert_eq!(found.len(), 1, "one {kind} in {events:#?}");
    found[0]
}

/// Asserts the RPL-7 payload of `event`: exactly the three fields, its own
/// id, and the source's event at its sequence.
fn assert_divergence_payload(event: &Value, source: &[Value], point: &str) {
    let payload = &event["payload"];
    assert_eq!(
        payload.as_object().map(|o| o.len()),
        Some(3),
        "{payload}: exactly originalEventId, replayEventId, divergencePoint"
    );
    assert_eq!(payload["replayEventId"], event["eventId"]);
    assert_eq!(payload["divergencePoint"], point);
    let original = source
        .iter()
        .find(|e| e["sequence"] == event["sequence"])
        .expect("the source has an event at the divergence sequence");
    assert_eq!(payload["originalEventId"], original["eventId"]);
}

fn terminal(events: &[Value]) -> &Value {
    events.last().expect("events")
}

// ---------------------------------------------------------------------------
// RPL-7.

#[tokio::test]
async fn an_equal_replay_writes_no_divergence_event_and_its_served_returns_are_byte_equal() {
    bounded(TEST_TIMEOUT, async {
        let host = host(None).await;
        let provider = FakeProvider::start().await;
        let client = client(CLIENT_TIMEOUT);
        // Key order and spacing of the arguments do not count (RFC 8785).
        let r = run_and_fork(
            &client,
            &host,
            &provider,
            vec![call(r#"{"a": 1, "b": 2}"#), openai_text("done")],
            vec![call(r#"{"b":2,"a":1}"#), openai_text("done")],
        )
        .await;
        assert!(
            of_type(&r.fork, "replay.diverged").is_empty(),
            "{:#?}",
            r.fork
        );
        assert!(of_type(&r.fork, "replay.diverged-at-refusal").is_empty());
        assert_eq!(terminal(&r.fork)["type"], "run.completed");
        assert_eq!(r.fork_requests, 2, "RPL-5: both rounds live");
        assert_eq!(r.arrivals.0, r.arrivals.1, "the tool was served, not run");
        // RPL-6: the served return's payload is the source's, byte for byte.
        assert_eq!(
            only(&r.fork, "agent.tool-returned")["payload"],
            only(&r.source, "agent.tool-returned")["payload"]
        );
        host.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn a_text_divergence_writes_one_replay_diverged_and_the_fork_completes() {
    bounded(TEST_TIMEOUT, async {
        let host = host(None).await;
        let provider = FakeProvider::start().await;
        let client = client(CLIENT_TIMEOUT);
        let r = run_and_fork(
            &client,
            &host,
            &provider,
            vec![call("{}"), openai_text("done")],
            vec![call("{}"), openai_text("something else")],
        )
        .await;
        let diverged = only(&r.fork, "replay.diverged");
        assert_divergence_payload(diverged, &r.source, "model-round-2");
        // The source's event there is its final answer, which the fork no
        // longer reproduces.
        let original = r
            .source
            .iter()
            .find(|e| e["eventId"] == diverged["payload"]["originalEventId"])
            .expect("a source event");
        assert_eq!(original["type"], "run.completed");
        assert!(of_type(&r.fork, "replay.diverged-at-refusal").is_empty());
        let done = terminal(&r.fork);
        assert_eq!(done["type"], "run.completed");
        assert_eq!(done["payload"]["result"], "something else");
        // The event is a run-level fact: the updates poll and the SSE
        // stream carry it too.
        let page = common::poll(&client, &host, &r.fork_id, "streamMode=updates").await;
        let updates = page["events"].as_array().cloned().unwrap_or_default();
        assert_eq!(
            only(&updates, "replay.diverged")["eventId"],
            diverged["eventId"]
        );
        let stream = client
            .get(format!("{}/runs/{}/events", host.base_url, r.fork_id))
            .bearer_auth(OPERATOR)
            .send()
            .await
            .expect("stream answers")
            .text()
            .await
            .expect("stream body");
        assert!(stream.contains("event: replay.diverged\n"), "{stream}");
        host.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn only_the_first_divergence_point_is_reported() {
    bounded(TEST_TIMEOUT, async {
        let host = host(None).await;
        let provider = FakeProvider::start().await;
        let client = client(CLIENT_TIMEOUT);
        // Round 1 differs in its arguments (its call is still served by
        // ordinal), round 2 in its text.
        let r = run_and_fork(
            &client,
            &host,
            &provider,
            vec![call(r#"{"a": 1}"#), openai_text("done")],
            vec![call(r#"{"a": 2}"#), openai_text("other")],
        )
        .await;
        let diverged = only(&r.fork, "replay.diverged");
        assert_divergence_payload(diverged, &r.source, "model-round-1");
        assert_eq!(terminal(&r.fork)["type"], "run.completed");
        assert_eq!(r.arrivals.0, r.arrivals.1, "the tool was served, not run");
        host.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn a_fork_calling_a_tool_where_the_source_answered_diverges_then_misses() {
    bounded(TEST_TIMEOUT, async {
        let host = host(None).await;
        let provider = FakeProvider::start().await;
        let client = client(CLIENT_TIMEOUT);
        let r = run_and_fork(
            &client,
            &host,
            &provider,
            vec![openai_text("done")],
            vec![call("{}"), openai_text("done")],
        )
        .await;
        let diverged = only(&r.fork, "replay.diverged");
        assert_eq!(diverged["payload"]["divergencePoint"], "model-round-1");
        // The source has no tool record to serve: a miss, as before RPL-7.
        assert_eq!(
            terminal(&r.fork)["payload"]["error"]["code"],
            "replay_source_missing"
        );
        host.shutdown().await;
    })
    .await;
}

/// A source that answered and a fork that refuses in round 1; a second
/// fork answer is queued that must never be asked for.
async fn refused_fork(host: &RunningHost) -> Forked {
    let provider = FakeProvider::start().await;
    let client = client(CLIENT_TIMEOUT);
    run_and_fork(
        &client,
        host,
        &provider,
        vec![openai_text("done")],
        vec![openai_refusal(), openai_text("never asked")],
    )
    .await
}

#[tokio::test]
async fn a_fork_refusing_where_the_source_answered_fails_with_replay_diverged_at_refusal() {
    bounded(TEST_TIMEOUT, async {
        let host = host(None).await;
        let r = refused_fork(&host).await;
        let at_refusal = only(&r.fork, "replay.diverged-at-refusal");
        assert_divergence_payload(at_refusal, &r.source, "model-round-1");
        assert!(of_type(&r.fork, "replay.diverged").is_empty(), "not both");
        let failed = terminal(&r.fork);
        assert_eq!(failed["type"], "run.failed");
        let error = &failed["payload"]["error"];
        assert_eq!(error["code"], "replay_diverged_at_refusal");
        assert_eq!(
            error["details"],
            json!({"divergencePoint": "model-round-1", "sourceRunId": r.source[0]["runId"]})
        );
        let message = error["message"].as_str().expect("message");
        assert!(
            message.contains("fork refused") && message.contains("round 1"),
            "{message}"
        );
        assert!(
            !message.contains("can't help"),
            "refusal text is not copied"
        );
        // The divergence event directly precedes the failure.
        assert_eq!(
            failed["sequence"].as_i64(),
            at_refusal["sequence"].as_i64().map(|s| s + 1)
        );
        assert_eq!(r.source_requests, 1);
        assert_eq!(r.fork_requests, 1, "no provider request after it");
        host.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn a_fork_answering_where_the_source_refused_fails_with_replay_diverged_at_refusal() {
    bounded(TEST_TIMEOUT, async {
        let host = host(None).await;
        let provider = FakeProvider::start().await;
        let client = client(CLIENT_TIMEOUT);
        let r = run_and_fork(
            &client,
            &host,
            &provider,
            vec![openai_refusal()],
            vec![call("{}"), openai_text("never asked")],
        )
        .await;
        assert_eq!(
            terminal(&r.source)["payload"]["error"]["code"],
            "refhost.model_refused"
        );
        only(&r.fork, "replay.diverged-at-refusal");
        let error = &terminal(&r.fork)["payload"]["error"];
        assert_eq!(error["code"], "replay_diverged_at_refusal");
        assert!(
            error["message"]
                .as_str()
                .is_some_and(|m| m.contains("source run") && m.contains("fork answered")),
            "{error}"
        );
        // Nothing of the live answer was acted on.
        assert!(of_type(&r.fork, "agent.tool-called").is_empty());
        assert_eq!(r.fork_requests, 1);
        host.shutdown().await;
    })
    .await;
}

// ---------------------------------------------------------------------------
// The mutants.
