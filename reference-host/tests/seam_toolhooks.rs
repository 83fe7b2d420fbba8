//! End-to-end checks of the reference host: the tool-hooks seam arms, the
//! events poll and discovery, over real HTTP on 127.0.0.1, with a tiny axum
//! receiver playing the tool. Every wait is bounded.

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use common::{
    Loopback, OPERATOR, assert_valid, bounded, client, poll, schema, seam_host, sha256_jcs,
};
use reference_host::mutants::Mutant;
use reference_host::{HostConfig, RateLimitConfig, RunningHost, start};
use serde_json::{Value, json};

const SECRET: &str = "sk-test-very-secret-value";
const TEST_TIMEOUT: Duration = Duration::from_secs(20);
const CLIENT_TIMEOUT: Duration = Duration::from_secs(10);

/// Calls the tool receiver saw, in order.
type Seen = Arc<Mutex<Vec<Value>>>;

/// A loopback tool receiver: `/ok` answers 200, `/fail` 500 with a body that
/// echoes the secret (which must never reach the host's answer), `/slow`
/// sleeps past any short timeout.
type Receiver = Loopback<Seen>;

impl Receiver {
    async fn start() -> Self {
        async fn record(State(seen): State<Seen>, body: axum::body::Bytes) -> axum::Json<Value> {
            let value: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            seen.lock().expect("lock").push(value);
            axum::Json(json!({"result": "done"}))
        }
        async fn fail(State(seen): State<Seen>, body: axum::body::Bytes) -> (StatusCode, String) {
            let value: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            seen.lock().expect("lock").push(value.clone());
            (StatusCode::INTERNAL_SERVER_ERROR, format!("boom: {value}"))
        }
        async fn slow(State(seen): State<Seen>) -> &'static str {
            seen.lock().expect("lock").push(json!("slow"));
            tokio::time::sleep(Duration::from_secs(5)).await;
            "late"
        }
        let routes = Router::new()
            .route("/ok", post(record))
            .route("/fail", post(fail))
            .route("/slow", post(slow));
        Self::serve(routes).await
    }

    fn calls(&self) -> usize {
        self.state.lock().expect("lock").len()
    }

    fn last(&self) -> Value {
        self.state
            .lock()
            .expect("lock")
            .last()
            .cloned()
            .unwrap_or(Value::Null)
    }
}

/// The tool-hooks hosts' configuration: two calls per (principal, tool),
/// refilled every 30 s.
fn config() -> HostConfig {
    HostConfig {
        rate_limit: RateLimitConfig {
            capacity: 2,
            refill_every: Duration::from_secs(30),
        },
        ..HostConfig::default()
    }
}

async fn host(mutant: Option<Mutant>) -> RunningHost {
    seam_host(mutant, config()).await
}

async fn host_without_seams() -> RunningHost {
    start(config()).await.expect("host starts")
}

struct Answer {
    status: u16,
    retry_after: Option<String>,
    body: Value,
    text: String,
}

/// Calls the seam with a body the request schema accepts and checks the
/// answer against the response schema.
async fn invoke(client: &reqwest::Client, host: &RunningHost, body: Value) -> Answer {
    assert_valid("toolhooks-invoke.request.schema.json", &body);
    let answer = invoke_raw(client, host, body).await;
    assert_valid("toolhooks-invoke.response.schema.json", &answer.body);
    answer
}

async fn invoke_raw(client: &reqwest::Client, host: &RunningHost, body: Value) -> Answer {
    let response = client
        .post(format!(
            "{}/conformance/seams/sample/toolhooks/invoke",
            host.base_url
        ))
        .bearer_auth(OPERATOR)
        .json(&body)
        .send()
        .await
        .expect("seam answers");
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let text = response.text().await.expect("body");
    let body = serde_json::from_str(&text).expect("json body");
    Answer {
        status,
        retry_after,
        body,
        text,
    }
}

fn assert_envelope(body: &Value, code: &str) {
    let object = body.as_object().expect("object");
    assert_eq!(body["error"], code, "{body}");
    assert!(
        body["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{body}"
    );
    for key in object.keys() {
        assert!(
            ["error", "message", "details"].contains(&key.as_str()),
            "{body}"
        );
    }
}

#[test]
fn response_schema_rejects_shapes_outside_the_closed_contract() {
    let validator = schema("toolhooks-invoke.response.schema.json");
    let called = json!({
        "agentId": "core.system", "toolName": "t", "callId": format!("call_{}", "0".repeat(32)),
        "argsHash": "0".repeat(64), "principal": "alice", "transport": "native"
    });
    let body = |returned: Value| json!({"runId": format!("run_{}", "0".repeat(32)), "toolCalled": called, "toolReturned": returned});
    let ok = json!({"agentId": "core.system", "toolName": "t", "callId": called["callId"], "status": "ok", "durationMs": 3});
    assert!(validator.is_valid(&body(ok.clone())));
    let mut bad_status = ok.clone();
    bad_status["status"] = json!("invalid_args");
    assert!(!validator.is_valid(&body(bad_status)));
    let mut with_outcome = ok;
    with_outcome["outcome"] = json!({});
    assert!(!validator.is_valid(&body(with_outcome)));
    assert!(!validator.is_valid(&json!({"status": "rate_limited"})));
    assert!(validator.is_valid(&json!({"error": "not_found", "message": "no"})));
    assert!(!validator.is_valid(
        &json!({"error": "rate_limited", "message": "x", "details": {"retryAfterSeconds": 3}})
    ));
}

#[tokio::test]
async fn ok_arm_sends_resolved_args_and_records_redacted_hash() {
    bounded(TEST_TIMEOUT, async {
        let receiver = Receiver::start().await;
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        let answer = invoke(
            &client,
            &host,
            json!({
                "principal": "alice", "toolName": "weather", "requiredScopes": ["tools:write"],
                "args": {"city": "Oslo", "apiKey": {"$credential": "weather-key"}, "n": 10.0},
                "credentials": {"weather-key": SECRET},
                "transport": "http", "receiverUrl": receiver.url("/ok"),
            }),
        )
        .await;
        assert_eq!(answer.status, 200, "{}", answer.text);
        assert!(!answer.text.contains(SECRET));
        let called = &answer.body["toolCalled"];
        let returned = &answer.body["toolReturned"];
        assert_eq!(called["agentId"], "core.system");
        assert_eq!(called["principal"], "alice");
        assert_eq!(called["transport"], "http");
        assert!(called.get("inputs").is_none());
        assert_eq!(
            called["argsHash"],
            sha256_jcs(&json!({"city": "Oslo", "apiKey": "[redacted]", "n": 10}))
        );
        assert_eq!(returned["status"], "ok");
        assert_eq!(returned["callId"], called["callId"]);
        assert!(returned["durationMs"].is_u64());
        assert!(returned.get("error").is_none() && returned.get("outcome").is_none());
        // The tool itself received the raw secret.
        assert_eq!(receiver.calls(), 1);
        assert_eq!(receiver.last()["apiKey"], SECRET);

        let run_id = answer.body["runId"].as_str().expect("runId");
        let run: Value = client
            .get(format!("{}/runs/{run_id}", host.base_url))
            .bearer_auth(OPERATOR)
            .send()
            .await
            .expect("run")
            .json()
            .await
            .expect("json");
        assert_eq!(run["status"], "completed");
        let events = poll(&client, &host, run_id, "streamMode=debug").await;
        assert!(!events.to_string().contains(SECRET));
        host.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn forbidden_arm_denies_before_invoking_and_logs_the_decision() {
    bounded(TEST_TIMEOUT, async {
        let receiver = Receiver::start().await;
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        let answer = invoke(
            &client,
            &host,
            json!({
                "principal": "carol", "toolName": "deploy", "requiredScopes": ["tools:write"],
                "receiverUrl": receiver.url("/ok"),
            }),
        )
        .await;
        assert_eq!(answer.status, 403, "{}", answer.text);
        assert_envelope(&answer.body, "forbidden");
        let details = &answer.body["details"];
        assert_eq!(details["scope"], "tool");
        assert_eq!(details["toolName"], "deploy");
        assert_eq!(details["requiredScopes"], json!(["tools:write"]));
        assert_eq!(details["toolReturned"]["status"], "forbidden");
        assert_eq!(details["toolReturned"]["error"]["code"], "forbidden");
        assert!(details["toolReturned"].get("durationMs").is_none());
        assert_eq!(receiver.calls(), 0, "the tool must not run on a deny");

        // dave's resolver is unavailable: fail closed, reason unevaluable.
        let dave = invoke(
            &client,
            &host,
            json!({"principal": "dave", "toolName": "t"}),
        )
        .await;
        assert_eq!(dave.status, 403);

        let run_id = details["runId"].as_str().expect("runId");
        let debug = poll(&client, &host, run_id, "streamMode=debug").await;
        let events = debug["events"].as_array().expect("events");
        let types: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
        assert_eq!(
            types,
            [
                "agent.tool-called",
                "authorization.decided",
                "agent.tool-returned"
            ]
        );
        let sequences: Vec<i64> = events
            .iter()
            .filter_map(|e| e["sequence"].as_i64())
            .collect();
        assert_eq!(sequences, [0, 1, 2]);
        assert_eq!(events[1]["payload"]["allowed"], false);
        assert_eq!(events[1]["payload"]["reason"], "missing-scope");
        assert_eq!(events[1]["payload"]["resource"], "tool:deploy");
        assert_eq!(events[2]["causationId"], events[0]["eventId"]);
        assert!(events.iter().all(|e| e["schemaVersion"] == 1));
        assert_eq!(debug["lastSequence"], 2);
        assert_eq!(debug["status"], "failed");
        assert_eq!(debug["isTerminal"], true);

        // updates mode omits agent.* events; afterSequence filters.
        let updates = poll(&client, &host, run_id, "").await;
        assert_eq!(updates["events"].as_array().map(Vec::len), Some(1));
        assert_eq!(updates["events"][0]["type"], "authorization.decided");
        let tail = poll(
            &client,
            &host,
            run_id,
            "afterSequence=1&streamMode=debug&timeout=1",
        )
        .await;
        assert_eq!(tail["events"].as_array().map(Vec::len), Some(1));
        assert_eq!(tail["lastSequence"], 2);
        let none = poll(&client, &host, run_id, "afterSequence=2").await;
        assert_eq!(none["events"], json!([]));
        assert_eq!(none["lastSequence"], 2);
        host.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn rate_limit_is_per_principal_and_tool_with_retry_after() {
    bounded(TEST_TIMEOUT, async {
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        let call = json!({"principal": "alice", "toolName": "search"});
        for _ in 0..2 {
            assert_eq!(invoke(&client, &host, call.clone()).await.status, 200);
        }
        let limited = invoke(&client, &host, call).await;
        assert_eq!(limited.status, 429, "{}", limited.text);
        assert_envelope(&limited.body, "rate_limited");
        let retry_after: u64 = limited
            .retry_after
            .as_deref()
            .and_then(|v| v.parse().ok())
            .expect("Retry-After in whole seconds");
        assert!(retry_after >= 1);
        let details = &limited.body["details"];
        assert_eq!(details["scope"], "tool");
        assert_eq!(details["toolReturned"]["status"], "rate_limited");
        assert!(details["toolReturned"].get("durationMs").is_none());
        for key in ["retryAfter", "retryAfterMs", "retryAfterSeconds"] {
            assert!(details.get(key).is_none());
        }
        // Another principal, or another tool, has its own bucket.
        let bob = invoke(
            &client,
            &host,
            json!({"principal": "bob", "toolName": "search"}),
        )
        .await;
        assert_eq!(bob.status, 200);
        let other = invoke(
            &client,
            &host,
            json!({"principal": "alice", "toolName": "fetch"}),
        )
        .await;
        assert_eq!(other.status, 200);
        // The forced arm works without touching a bucket.
        let forced = invoke(
            &client,
            &host,
            json!({"principal": "bob", "toolName": "x", "simulateRateLimitExhausted": true}),
        )
        .await;
        assert_eq!(forced.status, 429);
        assert!(forced.retry_after.is_some());
        host.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn invalid_args_are_reported_before_any_gate() {
    bounded(TEST_TIMEOUT, async {
        let receiver = Receiver::start().await;
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        // carol would be denied, but argument validation comes first.
        let answer = invoke(
            &client,
            &host,
            json!({
                "principal": "carol", "toolName": "t", "requiredScopes": ["tools:write"],
                "args": {"count": "three", "key": {"$credential": "k"}},
                "credentials": {"k": SECRET},
                "inputSchema": {
                    "type": "object",
                    "properties": {"count": {"type": "integer"}, "key": {"type": "integer"}}
                },
                "receiverUrl": receiver.url("/ok"),
            }),
        )
        .await;
        assert_eq!(answer.status, 200, "{}", answer.text);
        let returned = &answer.body["toolReturned"];
        assert_eq!(returned["status"], "error");
        assert_eq!(returned["error"]["code"], "validation_error");
        let message = returned["error"]["message"].as_str().expect("message");
        assert!(
            message.starts_with("/count: ") || message.starts_with("/key: "),
            "{message}"
        );
        assert!(returned.get("durationMs").is_none());
        assert!(!answer.text.contains(SECRET));
        assert_eq!(receiver.calls(), 0);

        // A schema that does not compile is a 400.
        let bad = invoke(
            &client,
            &host,
            json!({"principal": "alice", "toolName": "t", "inputSchema": {"type": 5}}),
        )
        .await;
        assert_eq!(bad.status, 400);
        assert_envelope(&bad.body, "validation_error");
        host.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn receiver_failures_map_to_error_codes_without_echoing_the_body() {
    bounded(TEST_TIMEOUT, async {
        let receiver = Receiver::start().await;
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        let answer = invoke(
            &client,
            &host,
            json!({
                "principal": "alice", "toolName": "t1",
                "args": {"key": {"$credential": "k"}}, "credentials": {"k": SECRET},
                "receiverUrl": receiver.url("/fail"),
            }),
        )
        .await;
        assert_eq!(answer.status, 200, "{}", answer.text);
        let returned = &answer.body["toolReturned"];
        assert_eq!(returned["status"], "error");
        assert_eq!(returned["error"]["code"], "refhost.tool_execution_failed");
        assert_eq!(
            returned["error"]["message"],
            "tool receiver answered HTTP 500"
        );
        assert!(returned["durationMs"].is_u64());
        assert!(returned.get("outcome").is_none());
        assert!(!answer.text.contains(SECRET) && !answer.text.contains("boom"));

        let slow = invoke(
            &client,
            &host,
            json!({
                "principal": "alice", "toolName": "t2", "timeoutMs": 200,
                "receiverUrl": receiver.url("/slow"),
            }),
        )
        .await;
        assert_eq!(
            slow.body["toolReturned"]["error"]["code"],
            "refhost.tool_timeout"
        );
        assert!(slow.body["toolReturned"]["durationMs"].is_u64());

        let simulated = invoke(
            &client,
            &host,
            json!({
                "principal": "alice", "toolName": "t3", "simulateToolError": true,
                "receiverUrl": receiver.url("/ok"),
            }),
        )
        .await;
        assert_eq!(
            simulated.body["toolReturned"]["error"]["code"],
            "refhost.tool_execution_failed"
        );
        assert!(simulated.body["toolReturned"]["durationMs"].is_u64());
        let before = receiver.calls();
        assert_eq!(
            before, 2,
            "fail + slow only; the simulation skips the receiver"
        );

        let run_id = answer.body["runId"].as_str().expect("runId");
        let run = poll(&client, &host, run_id, "streamMode=debug").await;
        assert_eq!(run["status"], "failed");
        assert!(!run.to_string().contains(SECRET));
        host.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn seam_requires_auth_scope_and_valid_body_and_is_absent_when_disabled() {
    bounded(TEST_TIMEOUT, async {
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        let url = format!(
            "{}/conformance/seams/sample/toolhooks/invoke",
            host.base_url
        );
        let body = json!({"principal": "alice", "toolName": "t"});
        let anonymous = client.post(&url).json(&body).send().await.expect("answer");
        assert_eq!(anonymous.status(), 401);
        let carol = client
            .post(&url)
            .bearer_auth("refhost-carol-token")
            .json(&body)
            .send()
            .await
            .expect("answer");
        assert_eq!(carol.status(), 403);
        let bad = invoke_raw(
            &client,
            &host,
            json!({"principal": "alice", "toolName": "t", "receiverUrl": "http://example.com/x"}),
        )
        .await;
        assert_eq!(bad.status, 400);
        assert!(
            bad.body["message"]
                .as_str()
                .unwrap_or("")
                .contains("receiverUrl")
        );
        let missing_ref = invoke(
            &client,
            &host,
            json!({"principal": "alice", "toolName": "t", "args": {"k": {"$credential": "nope"}}}),
        )
        .await;
        assert_eq!(missing_ref.status, 400);
        assert!(
            missing_ref.body["message"]
                .as_str()
                .unwrap_or("")
                .contains("nope")
        );
        host.shutdown().await;

        let closed = host_without_seams().await;
        let answer = client
            .post(format!(
                "{}/conformance/seams/sample/toolhooks/invoke",
                closed.base_url
            ))
            .bearer_auth(OPERATOR)
            .json(&body)
            .send()
            .await
            .expect("answer");
        assert_eq!(answer.status(), 404);
        let envelope: Value = answer.json().await.expect("json");
        assert_envelope(&envelope, "not_found");
        closed.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn discovery_serves_etag_and_304() {
    bounded(TEST_TIMEOUT, async {
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        let url = format!("{}/.well-known/openwop", host.base_url);
        let first = client.get(&url).send().await.expect("answer");
        assert_eq!(first.status(), 200);
        let etag = first.headers()["etag"].to_str().expect("ascii").to_owned();
        let doc: Value = first.json().await.expect("json");
        assert_eq!(doc["preferredVersion"], "2.0");
        assert_eq!(
            doc["conformance"]["seamsProfile"],
            "openwop-conformance-seams-v2"
        );
        let again = client
            .get(&url)
            .header("if-none-match", &etag)
            .header("OpenWOP-Version", "2.0")
            .send()
            .await
            .expect("answer");
        assert_eq!(again.status(), 304);
        assert_eq!(again.headers()["etag"], etag.as_str());
        assert!(again.bytes().await.expect("body").is_empty());
        host.shutdown().await;
    })
    .await;
}
