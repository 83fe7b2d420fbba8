//! Helpers shared by the reference host's integration tests: the built-in
//! principals' tokens, a bounded test wrapper, an HTTP client, a seams-on
//! host, loopback servers (the base of every in-test tool receiver), a fake
//! model provider, published-schema checks, requests, event polling, and
//! the mutant families with their mutated-versus-correct check. `tests/main.rs`
//! declares it once; each test module imports it (`use crate::common;`) and
//! keeps its own test-specific helpers.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use reference_host::mutants::Mutant;
use reference_host::{HostConfig, RunningHost, start};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

// ---------------------------------------------------------------------------
// The bearer tokens of the host's built-in principals.

/// `toolcert-operator`: `conformance:seams` and `runs:read` only.
pub const OPERATOR: &str = "refhost-operator-token";
/// `alice`: tools and runs, read and write.
pub const ALICE: &str = "refhost-alice-token";
/// `bob`: alice's scopes, in alice's tenant.
pub const BOB: &str = "refhost-bob-token";
/// `carol`: no `tools:write`.
pub const CAROL: &str = "refhost-carol-token";
/// `dave`: a scope resolver that is unavailable (fail closed).
pub const DAVE: &str = "refhost-dave-token";
/// `erin`: alice's scopes in a second tenant.
pub const ERIN: &str = "refhost-erin-token";

// ---------------------------------------------------------------------------
// Test scaffolding.

/// Runs `test`, failing it if it takes longer than `limit`.
pub async fn bounded<F: std::future::Future<Output = ()>>(limit: Duration, test: F) {
    tokio::time::timeout(limit, test)
        .await
        .expect("test finished in time");
}

/// An HTTP client that ignores proxy settings (everything is loopback) and
/// gives up on any request after `timeout`.
pub fn client(timeout: Duration) -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(timeout)
        .build()
        .expect("client")
}

/// Starts a host on 127.0.0.1 with the conformance seams on and `mutant`
/// planted (if any); `config` supplies everything else.
pub async fn seam_host(mutant: Option<Mutant>, config: HostConfig) -> RunningHost {
    start(HostConfig {
        mutant,
        seams_enabled: true,
        ..config
    })
    .await
    .expect("host starts")
}

/// An axum app served on an ephemeral 127.0.0.1 port until dropped, with the
/// state its handlers share (typically what they recorded). Each in-test
/// tool receiver or provider is one of these, with its own handlers and
/// methods that read `state`.
pub struct Loopback<S> {
    /// `http://127.0.0.1:<port>`, without a trailing slash.
    pub base: String,
    pub state: S,
    task: tokio::task::JoinHandle<()>,
}

impl<S: Clone + Default + Send + Sync + 'static> Loopback<S> {
    /// Serves `routes` with a fresh (default) `state`.
    pub async fn serve(routes: Router<S>) -> Self {
        let state = S::default();
        let app = routes.with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let addr = listener.local_addr().expect("addr");
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self {
            base: format!("http://{addr}"),
            state,
            task,
        }
    }

    /// `path` (starting with `/`) on this server.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }
}

impl<S> Drop for Loopback<S> {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// What a [`LabelReceiver`] shares with its handler: one label per arrival,
/// in order, and the JSON every arrival is answered with.
#[derive(Clone, Default)]
pub struct LabelState {
    seen: Arc<Mutex<Vec<String>>>,
    answer: Arc<Mutex<Value>>,
}

/// A counting tool receiver: `POST /ok/{label}` records `label` and answers
/// a fixed JSON body.
pub type LabelReceiver = Loopback<LabelState>;

impl Loopback<LabelState> {
    /// Serves `/ok/{label}`, answering every arrival with `answer`.
    pub async fn answering(answer: Value) -> Self {
        async fn ok(State(state): State<LabelState>, Path(label): Path<String>) -> Response {
            state.seen.lock().expect("lock").push(label);
            let answer = state.answer.lock().expect("lock").clone();
            axum::Json(answer).into_response()
        }
        let receiver = Self::serve(Router::new().route("/ok/{label}", post(ok))).await;
        *receiver.state.answer.lock().expect("lock") = answer;
        receiver
    }

    /// How many calls reached `/ok/{label}`.
    pub fn count(&self, label: &str) -> usize {
        self.state
            .seen
            .lock()
            .expect("lock")
            .iter()
            .filter(|seen| *seen == label)
            .count()
    }
}

// ---------------------------------------------------------------------------
// The fake model provider: both wire formats, answering from a per-model
// queue of canned answers and recording every request.

/// One canned provider answer.
#[derive(Debug, Clone)]
pub enum Canned {
    /// 200 with a JSON body.
    Json(Value),
    /// 200 with a `text/event-stream` body.
    Sse(String),
    /// A non-2xx status with a body that must never be copied.
    Status(u16),
    /// The inner answer after a pause.
    Delayed(Duration, Box<Canned>),
}

/// One request the provider received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub path: String,
    pub headers: HeaderMap,
    pub body: Value,
}

/// The fake provider's queues and recorded requests, per model.
#[derive(Default)]
pub struct ProviderState {
    queues: HashMap<String, VecDeque<Canned>>,
    requests: HashMap<String, Vec<Recorded>>,
}

/// The fake provider's state, shared by its handler and the test.
pub type Shared = Arc<Mutex<ProviderState>>;

/// Serves `/v1/chat/completions` and `/v1/messages`. A request is answered
/// from the queue of its body's `model`; once that queue is empty, with 599
/// and a body that must never be copied.
pub type FakeProvider = Loopback<Shared>;

impl FakeProvider {
    pub async fn start() -> Self {
        async fn answer(
            State(state): State<Shared>,
            uri: Uri,
            headers: HeaderMap,
            body: Bytes,
        ) -> Response {
            let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let model = body["model"].as_str().unwrap_or_default().to_owned();
            let canned = {
                let mut state = state.lock().expect("lock");
                state
                    .requests
                    .entry(model.clone())
                    .or_default()
                    .push(Recorded {
                        path: uri.path().to_owned(),
                        headers,
                        body,
                    });
                state.queues.get_mut(&model).and_then(VecDeque::pop_front)
            };
            let mut canned = canned.unwrap_or(Canned::Status(599));
            while let Canned::Delayed(pause, inner) = canned {
                tokio::time::sleep(pause).await;
                canned = *inner;
            }
            match canned {
                Canned::Json(value) => axum::Json(value).into_response(),
                Canned::Sse(text) => {
                    ([(header::CONTENT_TYPE, "text/event-stream")], text).into_response()
                }
                Canned::Status(code) => (
                    StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                    "PROVIDER-BODY-SECRET",
                )
                    .into_response(),
                Canned::Delayed(..) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
            }
        }
        let routes = Router::new()
            .route("/v1/chat/completions", post(answer))
            .route("/v1/messages", post(answer));
        Self::serve(routes).await
    }

    /// Queues answers for a fresh model and returns its name.
    pub fn script(&self, answers: Vec<Canned>) -> String {
        let model = format!("tc-{}", uuid::Uuid::new_v4().simple());
        self.state
            .lock()
            .expect("lock")
            .queues
            .insert(model.clone(), answers.into());
        model
    }

    /// Every request made for `model`, in order.
    pub fn requests(&self, model: &str) -> Vec<Recorded> {
        self.state
            .lock()
            .expect("lock")
            .requests
            .get(model)
            .cloned()
            .unwrap_or_default()
    }
}

/// An OpenAI Chat completion: an assistant message with `text` (or null
/// content) and the tool calls `(id, name, arguments)`, if any.
pub fn openai_answer(text: Option<&str>, calls: &[(&str, &str, &str)], finish: &str) -> Canned {
    let calls: Vec<Value> = calls
        .iter()
        .map(|(id, name, args)| {
            json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}})
        })
        .collect();
    let mut message = json!({"role": "assistant", "content": text});
    if !calls.is_empty() {
        message["tool_calls"] = json!(calls);
    }
    Canned::Json(json!({
        "id": "chatcmpl-1", "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}]
    }))
}

/// An OpenAI Chat completion with only tool calls `(id, name, arguments)`.
pub fn openai_calls(calls: &[(&str, &str, &str)], finish: &str) -> Canned {
    openai_answer(None, calls, finish)
}

/// An OpenAI Chat completion with only text, finished with `stop`.
pub fn openai_text(text: &str) -> Canned {
    openai_answer(Some(text), &[], "stop")
}

/// The tool results an OpenAI Chat request `body` fed back, as
/// `(tool_call_id, parsed content)`.
pub fn fed_back(body: &Value) -> Vec<(String, Value)> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            let text = m["content"].as_str().unwrap_or_default();
            (
                m["tool_call_id"].as_str().unwrap_or_default().to_owned(),
                serde_json::from_str(text).unwrap_or(Value::Null),
            )
        })
        .collect()
}

// ---------------------------------------------------------------------------
// Published schemas.

/// The published seam schema `schemas/seams/<name>`, compiled once per test
/// binary.
pub fn schema(name: &str) -> &'static jsonschema::Validator {
    static CACHE: OnceLock<Mutex<HashMap<String, &'static jsonschema::Validator>>> =
        OnceLock::new();
    let cache = CACHE.get_or_init(Mutex::default);
    let mut cache = cache.lock().expect("lock");
    cache.entry(name.to_owned()).or_insert_with(|| {
        let path = format!("{}/../schemas/seams/{name}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).expect("schema file");
        let value: Value = serde_json::from_str(&text).expect("schema json");
        Box::leak(Box::new(
            jsonschema::validator_for(&value).expect("schema compiles"),
        ))
    })
}

/// Asserts that `instance` satisfies the published seam schema `name`.
pub fn assert_valid(name: &str, instance: &Value) {
    let errors: Vec<String> = schema(name)
        .iter_errors(instance)
        .map(|e| format!("{}: {e}", e.instance_path().as_str()))
        .collect();
    assert!(errors.is_empty(), "{name}: {instance}\n{errors:#?}");
}

/// SHA-256 (lower-case hex) of the value's JCS canonical form: how the host
/// hashes tool arguments.
pub fn sha256_jcs(value: &Value) -> String {
    let bytes = serde_json_canonicalizer::to_vec(value).expect("jcs");
    hex::encode(Sha256::digest(&bytes))
}

// ---------------------------------------------------------------------------
// Requests.

/// A status and a JSON body.
pub struct Reply {
    pub status: u16,
    pub body: Value,
}

/// Forks `run_id` in replay mode as the operator (`POST /runs/{id}:fork
/// {mode: "replay"}`), asserts the 201 and returns the fork's run id.
pub async fn replay_fork(client: &reqwest::Client, base: &str, run_id: &str) -> String {
    let answer = send(
        client
            .post(format!("{base}/runs/{run_id}:fork"))
            .json(&json!({"mode": "replay"})),
        Some(OPERATOR),
    )
    .await;
    assert_eq!(answer.status, 201, "{}", answer.body);
    assert_eq!(answer.body["sourceRunId"], run_id, "{}", answer.body);
    assert_eq!(answer.body["mode"], "replay", "{}", answer.body);
    answer.body["runId"].as_str().expect("runId").to_owned()
}

/// Sends `request`, as `token` if given; the answer must be JSON.
pub async fn send(request: reqwest::RequestBuilder, token: Option<&str>) -> Reply {
    let request = match token {
        Some(token) => request.bearer_auth(token),
        None => request,
    };
    let response = request.send().await.expect("answers");
    let status = response.status().as_u16();
    let body: Value = response.json().await.expect("json body");
    Reply { status, body }
}

/// `GET url` as `token`: the status and the JSON body (null if it is not
/// JSON).
pub async fn get_json(client: &reqwest::Client, url: &str, token: &str) -> (u16, Value) {
    let response = client
        .get(url)
        .bearer_auth(token)
        .send()
        .await
        .expect("answers");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// The discovery document served at `{base_url}/.well-known/openwop`.
pub async fn discovery(client: &reqwest::Client, base_url: &str) -> Value {
    client
        .get(format!("{base_url}/.well-known/openwop"))
        .send()
        .await
        .expect("answers")
        .json()
        .await
        .expect("json")
}

// ---------------------------------------------------------------------------
// Events.

/// One `GET /runs/{run_id}/events/poll?{query}` as the operator; it must
/// answer 200 with JSON.
pub async fn poll(
    client: &reqwest::Client,
    host: &RunningHost,
    run_id: &str,
    query: &str,
) -> Value {
    let response = client
        .get(format!(
            "{}/runs/{run_id}/events/poll?{query}",
            host.base_url
        ))
        .bearer_auth(OPERATOR)
        .send()
        .await
        .expect("poll answers");
    let status = response.status();
    let text = response.text().await.expect("body");
    assert_eq!(status, 200, "{text}");
    serde_json::from_str(&text).expect("json")
}

/// Long-polls the run's events (debug mode) until `done(events)` holds or
/// the run is terminal; returns every event read. Each poll waits at most
/// 5 s and there are at most `polls` of them.
pub async fn events_until(
    client: &reqwest::Client,
    host: &RunningHost,
    run_id: &str,
    polls: usize,
    done: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    let mut events = Vec::new();
    let mut after = -1i64;
    for _ in 0..polls {
        let page = poll(
            client,
            host,
            run_id,
            &format!("streamMode=debug&timeout=5&afterSequence={after}"),
        )
        .await;
        events.extend(page["events"].as_array().cloned().unwrap_or_default());
        after = page["lastSequence"].as_i64().unwrap_or(after);
        if done(&events) || page["isTerminal"] == true {
            return events;
        }
    }
    panic!("run {run_id} neither reached the expected point nor finished: {events:#?}");
}

/// The events of type `kind`.
pub fn of_type<'e>(events: &'e [Value], kind: &str) -> Vec<&'e Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

// ---------------------------------------------------------------------------
// Mutants.

/// Asserts that the probe `observe(host, side)` sees `mutant` on a host
/// with it planted (`side` "mutated") and does not fire on a correct host
/// (`side` "correct"). `host` starts a host with the given mutant, if any;
/// each host is shut down after its probe.
pub async fn assert_observable(
    mutant: Mutant,
    host: impl AsyncFn(Option<Mutant>) -> RunningHost,
    observe: impl AsyncFn(&RunningHost, &str) -> bool,
) {
    let mutated = host(Some(mutant)).await;
    assert!(
        observe(&mutated, "mutated").await,
        "mutant {mutant} was not observable"
    );
    mutated.shutdown().await;

    let correct = host(None).await;
    assert!(
        !observe(&correct, "correct").await,
        "probe for {mutant} fires on the correct host"
    );
    correct.shutdown().await;
}

/// The `error.code` of every event payload in `events` (top-level
/// `error.code` of `agent.tool-returned`, `node.failed`, `run.failed`, …)
/// that is neither registered nor vendor-namespaced (HOOKS-FAIL-7).
pub fn nonconformant_codes(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter_map(|event| event["payload"]["error"]["code"].as_str())
        .filter(|code| !reference_host::base::event_codes::is_conformant(code))
        .map(str::to_owned)
        .collect()
}

/// An Anthropic Messages answer with `content` blocks and `stop_reason`.
pub fn anthropic_answer(content: Value, stop_reason: &str) -> Canned {
    Canned::Json(json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "m",
        "content": content, "stop_reason": stop_reason
    }))
}

/// The `toolId`s of a `GET /tools` answer (the v2 list is a bare
/// `ToolDescriptor[]`), in list order.
pub fn tool_ids(list: &Value) -> Vec<String> {
    list.as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["toolId"].as_str().map(str::to_owned))
        .collect()
}
