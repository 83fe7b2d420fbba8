//! End-to-end checks of issue 2's rows over real HTTP on 127.0.0.1:
//! registered-or-vendor event error codes (HOOKS-FAIL-7), forbidden-at-load
//! through the turn seam's `toolAllowlist` (HOOKS-AUTH-7), and
//! `ctx.http.safeFetch` through the safe-fetch seam (HOOKS-EVT-4,
//! HOOKS-EVT-5, HOOKS-AUTH-5).
//! Every wait is bounded; nothing leaves loopback (blocked addresses are
//! never connected to, which is the point).

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use common::{
    ALICE, FakeProvider, Loopback, OPERATOR, Reply, assert_valid, bounded, client, discovery,
    events_until, get_json, nonconformant_codes, of_type, openai_calls, openai_text, poll,
    seam_host, send, sha256_jcs,
};
use reference_host::mutants::Mutant;
use reference_host::{HostConfig, RunningHost, start};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const TEST_TIMEOUT: Duration = Duration::from_secs(30);
const CLIENT_TIMEOUT: Duration = Duration::from_secs(15);
const SAFE_FETCH: &str = "/conformance/seams/sample/http/safe-fetch-run";
const TURN_RUN: &str = "/conformance/seams/sample/turn/run";
/// The body the fetched server answers with; it must never reach the log.
const BODY_MARKER: &str = "FETCHED-BODY-CONTENT";

// ---------------------------------------------------------------------------
// Loopback doubles.

/// Requests the web double saw: `(method, x-probe header, body)`.
type Seen = Arc<Mutex<Vec<(String, Option<String>, String)>>>;

/// A loopback web server for safeFetch: `/page` answers 200 with
/// [`BODY_MARKER`], `/missing` 404, `/big` 2 MiB, `/echo` records what it
/// got. Doubles
/// as the tool receiver of the turn runs (`/ok/{label}`, `/fail/{label}`).
type Web = Loopback<Seen>;

impl Web {
    async fn start() -> Self {
        async fn page() -> &'static str {
            BODY_MARKER
        }
        async fn big() -> Vec<u8> {
            vec![b'x'; 2 * 1_048_576]
        }
        async fn missing() -> Response {
            (StatusCode::NOT_FOUND, "no such page").into_response()
        }
        async fn echo(
            State(seen): State<Seen>,
            method: axum::http::Method,
            headers: HeaderMap,
            body: Bytes,
        ) -> &'static str {
            let probe = headers
                .get("x-probe")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let body = String::from_utf8_lossy(&body).into_owned();
            seen.lock()
                .expect("lock")
                .push((method.to_string(), probe, body));
            "echoed"
        }
        async fn ok(State(seen): State<Seen>, Path(label): Path<String>) -> Response {
            seen.lock()
                .expect("lock")
                .push(("TOOL".into(), Some(label), String::new()));
            axum::Json(json!({"done": true})).into_response()
        }
        async fn fail(State(seen): State<Seen>, Path(label): Path<String>) -> Response {
            seen.lock()
                .expect("lock")
                .push(("TOOL".into(), Some(label), String::new()));
            (StatusCode::INTERNAL_SERVER_ERROR, "RECEIVER-BODY").into_response()
        }
        let routes = Router::new()
            .route("/page", get(page))
            .route("/missing", get(missing))
            .route("/big", get(big))
            .route("/echo", get(echo).post(echo))
            .route("/ok/{label}", post(ok))
            .route("/fail/{label}", post(fail));
        Self::serve(routes).await
    }

    fn seen(&self) -> Vec<(String, Option<String>, String)> {
        self.state.lock().expect("lock").clone()
    }

    /// Tool calls that reached `/ok/{label}` or `/fail/{label}`.
    fn tool_calls(&self, label: &str) -> usize {
        self.seen()
            .iter()
            .filter(|(method, seen, _)| method == "TOOL" && seen.as_deref() == Some(label))
            .count()
    }
}

/// A raw TCP listener on 127.0.0.1 that counts the connections it accepts
/// and answers each with an empty 204, so a connection is observable.
struct Counter {
    port: u16,
    accepted: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Counter {
    async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&accepted);
        let task = tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                counted.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    let mut buffer = [0u8; 1024];
                    let _ = socket.read(&mut buffer).await;
                    let _ = socket
                        .write_all(b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                        .await;
                });
            }
        });
        Self {
            port,
            accepted,
            task,
        }
    }

    fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for Counter {
    fn drop(&mut self) {
        self.task.abort();
    }
}

// ---------------------------------------------------------------------------
// Host and seam helpers.

async fn host(mutant: Option<Mutant>) -> RunningHost {
    seam_host(mutant, HostConfig::default()).await
}

/// POSTs `body` to the safe-fetch seam as `token`; the answer must match
/// the published response schema.
async fn safe_fetch_raw(
    client: &reqwest::Client,
    host: &RunningHost,
    token: Option<&str>,
    body: &Value,
) -> Reply {
    let request = client
        .post(format!("{}{SAFE_FETCH}", host.base_url))
        .json(body);
    let answer = send(request, token).await;
    assert_valid("safe-fetch-run.response.schema.json", &answer.body);
    answer
}

/// One fetch through the seam as the operator (the body must match the
/// published request schema); returns the answer and the run's events.
async fn safe_fetch(
    client: &reqwest::Client,
    host: &RunningHost,
    body: Value,
) -> (Value, Vec<Value>) {
    assert_valid("safe-fetch-run.request.schema.json", &body);
    let answer = safe_fetch_raw(client, host, Some(OPERATOR), &body).await;
    assert_eq!(answer.status, 201, "{}", answer.body);
    let run_id = answer.body["runId"].as_str().expect("runId");
    let events = poll(client, host, run_id, "streamMode=debug").await["events"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    (answer.body, events)
}

/// The `(call, return)` events of a fetch, when it wrote both.
fn pair(events: &[Value]) -> Option<(Value, Value)> {
    let called = of_type(events, "agent.tool-called");
    let returned = of_type(events, "agent.tool-returned");
    match (called.as_slice(), returned.as_slice()) {
        ([call], [ret]) => Some(((*call).clone(), (*ret).clone())),
        _ => None,
    }
}

/// A write tool played by the web double at `path`.
fn tool(web: &Web, id: &str, path: &str) -> Value {
    json!({
        "toolId": id,
        "description": "Writes a file.",
        "inputSchema": {"type": "object", "required": ["path"],
                        "properties": {"path": {"type": "string"}}},
        "replayPolicy": "idempotent",
        "safetyTier": "write",
        "requiredScopes": ["tools:write"],
        "receiverUrl": web.url(path),
    })
}

fn turn_body(provider: &FakeProvider, model: &str, tools: Value) -> Value {
    json!({
        "principal": "alice",
        "provider": {"wire": "openai-chat", "baseUrl": provider.base, "model": model},
        "tools": tools,
        "input": "Write the file a.txt."
    })
}

/// Starts a turn run (the body must match the published request schema)
/// and returns its events once it is terminal.
async fn turn_run(client: &reqwest::Client, host: &RunningHost, body: &Value) -> Vec<Value> {
    assert_valid("turn-run.request.schema.json", body);
    let answer = send(
        client
            .post(format!("{}{TURN_RUN}", host.base_url))
            .json(body),
        Some(OPERATOR),
    )
    .await;
    assert_valid("turn-run.response.schema.json", &answer.body);
    assert_eq!(answer.status, 201, "{}", answer.body);
    let run_id = answer.body["runId"].as_str().expect("runId");
    events_until(client, host, run_id, 20, |_| false).await
}

fn sha256_hex(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

fn assert_conformant(events: &[Value]) {
    let odd = nonconformant_codes(events);
    assert!(odd.is_empty(), "unregistered event error codes {odd:?}");
}

// ---------------------------------------------------------------------------
// HOOKS-AUTH-7: forbidden-at-load.

#[tokio::test]
async fn unresolved_allowlist_refs_are_refused_at_load_without_a_call_event() {
    bounded(TEST_TIMEOUT, async {
        let provider = FakeProvider::start().await;
        let web = Web::start().await;
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        // The model calls the allowed tool and the one left out.
        let model = provider.script(vec![
            openai_calls(
                &[
                    ("call_b", "allow_b", r#"{"path": "b"}"#),
                    ("call_a", "allow_a", r#"{"path": "a"}"#),
                ],
                "tool_calls",
            ),
            openai_text("done"),
        ]);
        let mut body = turn_body(
            &provider,
            &model,
            json!([
                tool(&web, "allow_a", "/ok/a"),
                tool(&web, "allow_b", "/ok/b")
            ]),
        );
        body["toolAllowlist"] = json!(["pack/missing", "allow_b", "other-ref"]);
        let events = turn_run(&client, &host, &body).await;
        assert_conformant(&events);
        assert_eq!(events.last().expect("events")["type"], "run.completed");

        // Only the allowed tool is offered to the model and named at start.
        let requests = provider.requests(&model);
        let offered: Vec<&str> = requests[0].body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["function"]["name"].as_str())
            .collect();
        assert_eq!(offered, ["allow_b"]);
        assert_eq!(
            of_type(&events, "run.started")[0]["payload"]["tools"],
            json!(["allow_b"])
        );

        // One return per unresolvable ref, in allowlist order, before the
        // first prompt; no call event for either.
        let first_prompt = events
            .iter()
            .position(|e| e["type"] == "prompt.composed")
            .expect("a prompt");
        let refusals: Vec<&Value> = events[..first_prompt]
            .iter()
            .filter(|e| e["type"] == "agent.tool-returned")
            .collect();
        assert_eq!(refusals.len(), 2, "{events:#?}");
        for (event, entry) in refusals.iter().zip(["pack/missing", "other-ref"]) {
            assert!(event.get("causationId").is_none(), "{event}");
            assert_eq!(
                event["payload"],
                json!({
                    "agentId": "refhost.agent",
                    "toolName": entry,
                    "callId": format!("forbidden:{}", sha256_hex(entry)),
                    "status": "forbidden",
                    "transport": "http",
                    "principal": "alice",
                    "error": {
                        "code": "forbidden",
                        "message": format!("allowlist entry {entry} resolves to no approved pack"),
                        "details": {"service": "tools", "reason": "unresolved-ref"}
                    }
                })
            );
        }
        let called = of_type(&events, "agent.tool-called");
        assert_eq!(called.len(), 2, "one call event per model emission only");
        assert!(called.iter().all(|c| {
            !c["payload"]["callId"]
                .as_str()
                .unwrap_or_default()
                .starts_with("forbidden:")
        }));

        // The tool left out of the allowlist is an unknown tool: called,
        // refused by name, never dispatched.
        let returned = of_type(&events, "agent.tool-returned");
        let unknown = returned
            .iter()
            .find(|r| r["payload"]["callId"] == "call_a")
            .expect("a return for call_a");
        assert_eq!(unknown["payload"]["error"]["code"], "refhost.unknown_tool");
        assert_eq!(web.tool_calls("a"), 0);
        assert_eq!(web.tool_calls("b"), 1);

        // GET /tools lists only the offered tool of the run.
        let (_, tools) = get_json(&client, &format!("{}/tools", host.base_url), ALICE).await;
        let listed = common::tool_ids(&tools);
        assert!(
            listed.iter().any(|id| id == "allow_b") && !listed.iter().any(|id| id == "allow_a"),
            "{listed:?}"
        );
        host.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn bad_allowlists_are_400s_naming_the_entry() {
    bounded(TEST_TIMEOUT, async {
        let provider = FakeProvider::start().await;
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        let cases = [
            (json!("allow_a"), "/toolAllowlist"),
            (json!([]), "/toolAllowlist"),
            (json!(["a", 7]), "/toolAllowlist/1"),
            (json!(["a", ""]), "/toolAllowlist/1"),
            (json!(["a", "x".repeat(201)]), "/toolAllowlist/1"),
            (json!(["a", "b", "a"]), "/toolAllowlist/2"),
        ];
        for (allowlist, pointer) in cases {
            let mut body = turn_body(&provider, "m", json!([]));
            body["toolAllowlist"] = allowlist.clone();
            assert!(
                !common::schema("turn-run.request.schema.json").is_valid(&body),
                "the published schema rejects {allowlist} too"
            );
            let answer = send(
                client
                    .post(format!("{}{TURN_RUN}", host.base_url))
                    .json(&body),
                Some(OPERATOR),
            )
            .await;
            assert_valid("turn-run.response.schema.json", &answer.body);
            assert_eq!(answer.status, 400, "{allowlist}");
            assert_eq!(answer.body["error"], "validation_error");
            let message = answer.body["message"].as_str().unwrap_or_default();
            assert!(message.contains(&format!("({pointer})")), "{message}");
        }
        host.shutdown().await;
    })
    .await;
}

// ---------------------------------------------------------------------------
// HOOKS-FAIL-7: event error codes.

#[tokio::test]
async fn event_error_codes_are_registered_or_vendor_namespaced() {
    bounded(TEST_TIMEOUT, async {
        let provider = FakeProvider::start().await;
        let web = Web::start().await;
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        // A turn run with an invalid call, a failing tool, an unknown
        // tool, then text.
        let model = provider.script(vec![
            openai_calls(
                &[
                    ("call_1", "codes_ok", r#"{"path": 1}"#),
                    ("call_2", "codes_fail", r#"{"path": "x"}"#),
                    ("call_3", "nope", "{}"),
                ],
                "tool_calls",
            ),
            openai_text("done"),
        ]);
        let body = turn_body(
            &provider,
            &model,
            json!([
                tool(&web, "codes_ok", "/ok/codes"),
                tool(&web, "codes_fail", "/fail/codes")
            ]),
        );
        let events = turn_run(&client, &host, &body).await;
        assert_conformant(&events);
        let codes: Vec<&str> = of_type(&events, "agent.tool-returned")
            .iter()
            .filter_map(|r| r["payload"]["error"]["code"].as_str())
            .collect();
        assert_eq!(
            codes,
            [
                "validation_error",
                "refhost.tool_execution_failed",
                "refhost.unknown_tool"
            ]
        );

        // A run that fails: its run.failed code is vendor-namespaced.
        let failing = provider.script(vec![]);
        let events = turn_run(&client, &host, &turn_body(&provider, &failing, json!([]))).await;
        assert_conformant(&events);
        assert_eq!(
            events.last().expect("terminal")["payload"]["error"]["code"],
            "refhost.provider_error"
        );
        host.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn the_unregistered_mutant_changes_only_the_receiver_and_argument_codes() {
    bounded(TEST_TIMEOUT, async {
        let web = Web::start().await;
        let client = client(CLIENT_TIMEOUT);
        let closed = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            listener.local_addr().expect("addr").port()
        };
        for (mutant, expected) in [
            (
                None,
                [
                    "refhost.tool_execution_failed",
                    "refhost.tool_unreachable",
                    "validation_error",
                    "forbidden",
                ],
            ),
            (
                Some(Mutant::EventCodesUnregistered),
                [
                    "tool_execution_failed",
                    "tool_execution_failed",
                    "invalid_args",
                    "forbidden",
                ],
            ),
        ] {
            let host = host(mutant).await;
            let mut codes = Vec::new();
            for body in [
                json!({"principal": "alice", "toolName": "t", "receiverUrl": web.url("/fail/m")}),
                json!({"principal": "alice", "toolName": "t",
                       "receiverUrl": format!("http://127.0.0.1:{closed}/t")}),
                json!({"principal": "alice", "toolName": "t", "args": {"n": "x"},
                       "inputSchema": {"properties": {"n": {"type": "integer"}}}}),
                json!({"principal": "carol", "toolName": "t", "requiredScopes": ["tools:write"]}),
            ] {
                let answer = send(
                    client
                        .post(format!(
                            "{}/conformance/seams/sample/toolhooks/invoke",
                            host.base_url
                        ))
                        .json(&body),
                    Some(OPERATOR),
                )
                .await;
                let returned = if answer.status == 403 {
                    &answer.body["details"]["toolReturned"]
                } else {
                    &answer.body["toolReturned"]
                };
                codes.push(
                    returned["error"]["code"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                );
            }
            assert_eq!(codes, expected, "{mutant:?}");
            host.shutdown().await;
        }
    })
    .await;
}

// ---------------------------------------------------------------------------
// HOOKS-EVT-4, HOOKS-EVT-5, HOOKS-AUTH-5: ctx.http.safeFetch.

#[tokio::test]
async fn a_blocked_fetch_opens_no_connection() {
    bounded(TEST_TIMEOUT, async {
        let counter = Counter::start().await;
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        // 0.0.0.0 reaches local listeners on most systems: the guard must
        // stop it before any connection.
        let (answer, events) = safe_fetch(
            &client,
            &host,
            json!({"url": format!("http://0.0.0.0:{}/", counter.port)}),
        )
        .await;
        assert_eq!(answer["outcome"], "blocked");
        let (_, ret) = pair(&events).expect("a call/return pair");
        assert_eq!(
            ret["payload"]["error"]["details"]["reason"],
            "unspecified-address"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(counter.accepted(), 0, "a blocked fetch connected");

        // Control: the same port on 127.0.0.1 is fetched (test mode), so
        // the counter does see connections.
        let (answer, events) = safe_fetch(
            &client,
            &host,
            json!({"url": format!("http://127.0.0.1:{}/", counter.port)}),
        )
        .await;
        assert_eq!(answer["outcome"], "fetched");
        let (_, ret) = pair(&events).expect("a call/return pair");
        assert_eq!(
            ret["payload"]["outcome"],
            json!({"httpStatus": 204, "bytes": 0})
        );
        assert_eq!(counter.accepted(), 1);
        host.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn a_fetched_url_writes_a_content_free_pair_then_completes() {
    bounded(TEST_TIMEOUT, async {
        let web = Web::start().await;
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        let url = web.url("/page");
        let (answer, events) = safe_fetch(&client, &host, json!({"url": url})).await;
        assert_eq!(answer["outcome"], "fetched");
        assert_conformant(&events);
        let types: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
        assert_eq!(
            types,
            [
                "run.started",
                "agent.tool-called",
                "agent.tool-returned",
                "run.completed"
            ]
        );
        let (call, ret) = pair(&events).expect("a call/return pair");
        let call_id = call["payload"]["callId"]
            .as_str()
            .expect("callId")
            .to_owned();
        assert!(
            call_id.starts_with("call_") && call_id.len() == 37,
            "{call_id}"
        );
        assert_eq!(
            call["payload"],
            json!({
                "agentId": "core.system", "toolName": "http.safeFetch", "callId": call_id,
                "argsHash": sha256_jcs(&json!({"url": url, "method": "GET"})),
                "principal": "toolcert-operator", "transport": "http"
            })
        );
        assert_eq!(ret["causationId"], call["eventId"]);
        let duration = ret["payload"]["durationMs"].as_u64().expect("durationMs");
        assert_eq!(
            ret["payload"],
            json!({
                "agentId": "core.system", "toolName": "http.safeFetch", "callId": call_id,
                "status": "ok", "durationMs": duration,
                "outcome": {"httpStatus": 200, "bytes": BODY_MARKER.len()},
                "transport": "http", "principal": "toolcert-operator"
            })
        );
        let text = serde_json::to_string(&events).expect("json");
        assert!(!text.contains(BODY_MARKER), "the body reached the log");
        let run_id = answer["runId"].as_str().expect("runId");
        let (status, run) = get_json(
            &client,
            &format!("{}/runs/{run_id}", host.base_url),
            OPERATOR,
        )
        .await;
        assert_eq!((status, run["status"].as_str()), (200, Some("completed")));

        // A non-2xx answer is still an answer.
        let (_, events) = safe_fetch(&client, &host, json!({"url": web.url("/missing")})).await;
        let (_, ret) = pair(&events).expect("a call/return pair");
        assert_eq!(ret["payload"]["status"], "ok");
        assert_eq!(ret["payload"]["outcome"]["httpStatus"], 404);

        // At most maxResponseBodyBytes are read (and counted).
        let (_, events) = safe_fetch(&client, &host, json!({"url": web.url("/big")})).await;
        let (_, ret) = pair(&events).expect("a call/return pair");
        assert_eq!(
            ret["payload"]["outcome"],
            json!({"httpStatus": 200, "bytes": 1_048_576})
        );

        // POST with headers and a body reaches the server as sent.
        let (_, events) = safe_fetch(
            &client,
            &host,
            json!({"url": web.url("/echo"), "init": {
                "method": "POST", "headers": {"x-probe": "p1"}, "body": "hello"}}),
        )
        .await;
        let (call, _) = pair(&events).expect("a call/return pair");
        assert_eq!(
            call["payload"]["argsHash"],
            sha256_jcs(&json!({"url": web.url("/echo"), "method": "POST"}))
        );
        assert_eq!(
            web.seen().last().cloned(),
            Some(("POST".to_owned(), Some("p1".to_owned()), "hello".to_owned()))
        );
        host.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn a_fetch_without_an_answer_is_upstream_unavailable() {
    bounded(TEST_TIMEOUT, async {
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            listener.local_addr().expect("addr").port()
        };
        let (answer, events) = safe_fetch(
            &client,
            &host,
            json!({"url": format!("http://localhost:{port}/")}),
        )
        .await;
        assert_eq!(answer["outcome"], "fetched");
        assert_conformant(&events);
        let (call, ret) = pair(&events).expect("a call/return pair");
        assert_eq!(ret["causationId"], call["eventId"]);
        let payload = &ret["payload"];
        assert_eq!(payload["status"], "error");
        assert!(payload["durationMs"].is_u64());
        assert!(payload.get("outcome").is_none());
        assert_eq!(payload["error"]["code"], "upstream_unavailable");
        assert_eq!(payload["error"]["details"], json!({"service": "http"}));
        assert_eq!(events.last().expect("events")["type"], "run.completed");
        host.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn blocked_fetches_are_forbidden_with_service_and_a_kebab_reason() {
    bounded(TEST_TIMEOUT, async {
        let counter = Counter::start().await;
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        let port = counter.port;
        let cases = [
            ("http://10.1.2.3/x", "private-address", "10.1.2.3"),
            ("http://192.168.0.10/", "private-address", "192.168.0.10"),
            (
                "http://169.254.169.254/latest/meta-data",
                "link-local-address",
                "169.254.169.254",
            ),
            ("http://[fe80::1]/", "link-local-address", "fe80::1"),
            ("http://[fd00::1]/", "private-address", "fd00::1"),
            ("http://224.0.0.1/", "multicast-address", "224.0.0.1"),
            (
                "http://255.255.255.255/",
                "broadcast-address",
                "255.255.255.255",
            ),
            (&format!("http://[::]:{port}/"), "unspecified-address", "::"),
            (
                &format!("https://127.0.0.1:{port}/"),
                "scheme-not-allowed",
                "https",
            ),
            ("file:///etc/passwd", "scheme-not-allowed", "file"),
            (
                &format!("ftp://127.0.0.1:{port}/"),
                "scheme-not-allowed",
                "ftp",
            ),
            (
                "http://example.invalid/",
                "name-resolution-disabled",
                "example.invalid",
            ),
        ];
        for (url, reason, named) in cases {
            let (answer, events) = safe_fetch(&client, &host, json!({"url": url})).await;
            assert_eq!(answer["outcome"], "blocked", "{url}");
            assert_conformant(&events);
            let (call, ret) = pair(&events).expect("a call/return pair");
            assert_eq!(call["payload"]["transport"], "http");
            assert_eq!(call["payload"]["agentId"], "core.system");
            assert_eq!(ret["causationId"], call["eventId"]);
            let payload = &ret["payload"];
            assert_eq!(payload["status"], "forbidden", "{url}");
            assert!(payload.get("durationMs").is_none(), "{url}");
            assert_eq!(payload["transport"], "http");
            assert_eq!(payload["error"]["code"], "forbidden");
            assert_eq!(
                payload["error"]["details"],
                json!({"service": "http", "reason": reason}),
                "{url}"
            );
            let message = payload["error"]["message"].as_str().unwrap_or_default();
            assert!(message.contains(named), "{url}: {message}");
            assert_eq!(events.last().expect("events")["type"], "run.completed");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(counter.accepted(), 0);
        host.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn the_seam_checks_its_caller_and_body_and_discovery_advertises_the_client() {
    bounded(TEST_TIMEOUT, async {
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        let good = json!({"url": "http://10.0.0.1/"});
        let anonymous = safe_fetch_raw(&client, &host, None, &good).await;
        assert_eq!(anonymous.status, 401);
        let unscoped = safe_fetch_raw(&client, &host, Some(ALICE), &good).await;
        assert_eq!(unscoped.status, 403);
        let cases = [
            (json!({}), "`url`"),
            (json!({"url": "not a url"}), "`url`"),
            (json!({"url": "http://10.0.0.1/", "extra": true}), "`extra`"),
            (
                json!({"url": "http://10.0.0.1/", "init": {"method": "DELETE"}}),
                "`init.method`",
            ),
            (
                json!({"url": "http://10.0.0.1/", "init": {"verb": "GET"}}),
                "`init.verb`",
            ),
            (
                json!({"url": "http://10.0.0.1/", "init": {"body": "x"}}),
                "`init.body`",
            ),
            (
                json!({"url": "http://10.0.0.1/", "init": {"headers": {"x": 1}}}),
                "`init.headers.x`",
            ),
        ];
        for (body, field) in cases {
            let answer = safe_fetch_raw(&client, &host, Some(OPERATOR), &body).await;
            assert_eq!(answer.status, 400, "{body}");
            assert_eq!(answer.body["error"], "validation_error");
            let message = answer.body["message"].as_str().unwrap_or_default();
            assert!(message.contains(field), "{body}: {message}");
        }
        assert!(
            !common::schema("safe-fetch-run.request.schema.json")
                .is_valid(&json!({"url": "http://10.0.0.1/", "init": {"method": "PUT"}}))
        );
        let doc = discovery(&client, &host.base_url).await;
        assert_eq!(
            doc["httpClient"],
            json!({"status": "stable", "since": "2.0", "witness": "witnessable-gated",
                   "ssrfGuard": true, "maxResponseBodyBytes": 1048576,
                   "requestTimeoutMs": 5000, "methods": ["GET", "POST"], "safeFetch": {}})
        );
        assert_eq!(doc["toolHooks"]["prePostEvents"], true);
        host.shutdown().await;

        // With the seams off the path is an unknown route.
        let closed = start(HostConfig::default()).await.expect("host");
        let answer = send(
            client
                .post(format!("{}{SAFE_FETCH}", closed.base_url))
                .json(&good),
            Some(OPERATOR),
        )
        .await;
        assert_eq!(answer.status, 404);
        closed.shutdown().await;
    })
    .await;
}

// ---------------------------------------------------------------------------
// The mutants.
