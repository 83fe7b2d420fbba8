//! Helpers shared by the reference host's integration tests: the built-in
//! principals' tokens, a bounded test wrapper, an HTTP client, a seams-on
//! host, loopback servers (the base of every in-test tool receiver), a fake
//! model provider, published-schema checks, requests, event polling, and
//! the mutant families with their mutated-versus-correct check. Each test
//! file declares `mod common;` and keeps its own test-specific helpers.

// Every test file is its own crate and uses only some of these helpers; the
// rest would be reported as dead code in that crate.
#![allow(dead_code)]

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

// Mutant families, each probed by its own test file (tool-hooks mutants are
// everything else, probed by tests/seam_toolhooks.rs).

/// The tool-loop mutants, in `mutants::ALL` order (after the tool-hooks
/// ones, before the idempotency ones); probed by tests/turn.rs.
pub const TURN_MUTANTS: [Mutant; 13] = [
    Mutant::TruncatedArgsExecuted,
    Mutant::PromptedOutputDispatched,
    Mutant::InlineToolParser,
    Mutant::AuthzBeforeArgs,
    Mutant::LimitsBeforeAuthz,
    Mutant::RefusalRetried,
    Mutant::RepairEchoesModelText,
    Mutant::ToolErrorWithoutIserror,
    Mutant::UnknownToolBareSuccess,
    Mutant::DoubleReturn,
    Mutant::RepeatNotSuppressed,
    Mutant::StructuredNotEnforced,
    Mutant::DescriptorWithoutReplayPolicy,
];

/// The mutants of effects and Layer-1 idempotency, in `mutants::ALL` order
/// (after the turn ones, before the trust and approval ones); probed by
/// tests/idempotency.rs.
pub const IDEMPOTENCY_MUTANTS: [Mutant; 19] = [
    Mutant::ClaimReadThenWrite,
    Mutant::AttemptInIdentity,
    Mutant::RunIdInKeying,
    Mutant::NoProviderKey,
    Mutant::RetryKeyDiffers,
    Mutant::L1KeyIgnored,
    Mutant::L1ReplayHeaderMissing,
    Mutant::L1MismatchWrongCode,
    Mutant::L1InFlightProcessed,
    Mutant::L1Caches5xx,
    Mutant::L1CachesValidationError,
    Mutant::L1InvalidKeyAccepted,
    Mutant::L1KeyNotTenantScoped,
    Mutant::L1RetentionShort,
    Mutant::SweeperDropsYoung,
    Mutant::EffectsCrossTenant,
    Mutant::LedgerLeaksArgs,
    Mutant::DistinctEffectsCollide,
    Mutant::CrossRegionUnknown,
];

/// The content-trust and approval mutants (TTC §C), in `mutants::ALL` order
/// (just before the durable ones); probed by tests/trust.rs.
pub const TRUST_MUTANTS: [Mutant; 7] = [
    Mutant::TrustFromModelOutput,
    Mutant::ApprovalByAnyPrincipal,
    Mutant::ApprovalViaLinkUntrusted,
    Mutant::ApprovalFromContent,
    Mutant::UntrustedWriteRefused,
    Mutant::ApprovedCallRunsTwice,
    Mutant::TrustNeverTainted,
];

/// The recovery and replay mutants (TTC §D), in `mutants::ALL` order (just
/// before the human-input ones); probed by tests/durable.rs.
pub const DURABLE_MUTANTS: [Mutant; 10] = [
    Mutant::ReplayExecutesTool,
    Mutant::ReplayMissEmptySuccess,
    Mutant::ReplayDurationRecomputed,
    Mutant::ReplayErrorReworded,
    Mutant::RecoveryRerunsInDoubt,
    Mutant::RecoveryFromScratch,
    Mutant::RetryServedRecords,
    Mutant::RecordAfterNextRound,
    Mutant::OversizedServedOnReplay,
    Mutant::RecordFailureIgnored,
];

/// The human-input and provider-executed-tool mutants (TTC §E, §F), in
/// `mutants::ALL` order (only [`REPLAY_SURFACE_MUTANTS`],
/// [`REFUSAL_MUTANTS`], [`DIVERGENCE_MUTANTS`], [`MCP_MUTANTS`] and
/// [`EFFECT_FIRE_MUTANTS`] follow them); probed by tests/human_input.rs.
pub const HUMAN_INPUT_MUTANTS: [Mutant; 6] = [
    Mutant::ClarificationUnbounded,
    Mutant::AskDoesNotEndTurn,
    Mutant::ToolSupportGuessed,
    Mutant::ProviderToolOutputTrusted,
    Mutant::ProviderToolUnlisted,
    Mutant::ProviderToolRefiredOnReplay,
];

/// The replay-surface mutants, in `mutants::ALL` order (only
/// [`REFUSAL_MUTANTS`], [`DIVERGENCE_MUTANTS`], [`MCP_MUTANTS`] and
/// [`EFFECT_FIRE_MUTANTS`] follow them). They are killed by toolcert's turn
/// scenarios (the root crate's mutation matrix), not probed here.
pub const REPLAY_SURFACE_MUTANTS: [Mutant; 5] = [
    Mutant::ForkOverlayAccepted,
    Mutant::EffectSeamsUnserved,
    Mutant::ToolKeyPerRun,
    Mutant::ResultOnReturn,
    Mutant::ReplayModelFromRecord,
];

/// The event-code, forbidden-at-load and host-service refusal mutants
/// (HOOKS-FAIL-7, HOOKS-AUTH-7, HOOKS-EVT-5, HOOKS-AUTH-5), in
/// `mutants::ALL` order (only [`DIVERGENCE_MUTANTS`], [`MCP_MUTANTS`] and
/// [`EFFECT_FIRE_MUTANTS`] follow them); probed by tests/refusals.rs.
pub const REFUSAL_MUTANTS: [Mutant; 5] = [
    Mutant::EventCodesUnregistered,
    Mutant::ForbiddenAtLoadPlaceholderCall,
    Mutant::SafeFetchBlockedUnaudited,
    Mutant::ServiceRefusalWithoutService,
    Mutant::ServiceRefusalReasonSnake,
];

/// The replay divergence (RPL-7) and fork byte-equivalence (RPL-6)
/// mutants, in `mutants::ALL` order (only [`MCP_MUTANTS`] and
/// [`EFFECT_FIRE_MUTANTS`] follow them);
/// probed by tests/divergence.rs.
pub const DIVERGENCE_MUTANTS: [Mutant; 3] = [
    Mutant::ReplayDivergenceSilent,
    Mutant::RefusalDivergenceContinues,
    Mutant::ForkEventsAnnotated,
];

/// The MCP tool mutants (EFF-12, TRUST-3, TRUST-5, RPL-10, TURN-F4), in
/// `mutants::ALL` order (only [`EFFECT_FIRE_MUTANTS`] follow them); probed by tests/mcp.rs.
pub const MCP_MUTANTS: [Mutant; 6] = [
    Mutant::McpResultUnwrapped,
    Mutant::McpMetaGrantsScopes,
    Mutant::MrtrRetryNewIdentity,
    Mutant::MrtrStateDropped,
    Mutant::ReplayReissuesMrtr,
    Mutant::McpDelegatedToProvider,
];

/// The effect-seam fire and fork-ledger mutants (RPL-11) and the branch
/// fork mutant (EFF-10) that close `mutants::ALL`, in order; probed by
/// tests/effect_fire.rs.
pub const EFFECT_FIRE_MUTANTS: [Mutant; 3] = [
    Mutant::FireSeamRefiresOnFork,
    Mutant::ForkLedgerRestamped,
    Mutant::Layer2DedupSpansFork,
];

/// The webhook fan-out mutant (RPL-8), in `mutants::ALL` order (only
/// [`PACK_MUTANTS`] and the trust groups follow it); probed by tests/webhooks.rs.
pub const WEBHOOK_MUTANTS: [Mutant; 1] = [Mutant::WebhookRefiresPrefix];

/// The pack role mutants (RPL-4), in `mutants::ALL` order; probed by
/// tests/packs.rs.
pub const PACK_MUTANTS: [Mutant; 2] = [Mutant::PackRoleIgnored, Mutant::PackPureRoleOverrides];

/// The store-then-recall mutant (TRUST-2), in `mutants::ALL` order (only
/// [`INBOUND_MUTANTS`] follow it); probed by tests/memory.rs.
pub const MEMORY_MUTANTS: [Mutant; 1] = [Mutant::RecalledKnowledgeTrusted];

/// The inbound-content mutants (TRUST-6), in `mutants::ALL` order (only
/// [`MCP_SERVER_MUTANTS`] follow them); probed by tests/inbound.rs.
pub const INBOUND_MUTANTS: [Mutant; 2] =
    [Mutant::A2aUserRoleTrusted, Mutant::VoiceTranscriptTrusted];

/// The MCP server mount mutants (TURN-E4, MCP-9) that close
/// `mutants::ALL`, in order; probed by tests/mcp_server.rs.
pub const MCP_SERVER_MUTANTS: [Mutant; 3] = [
    Mutant::McpAskAsToolError,
    Mutant::McpRequestStateUnbound,
    Mutant::McpInputResponsesDropped,
];

/// Assert `group` stands in `mutants::ALL` as one contiguous run, in its order. Each test
/// file probes its own group; a mutant in no group is caught by
/// tests/seam_toolhooks.rs's `every_mutant_is_observable`, whose `match` names every mutant.
pub fn assert_contiguous(group: &[Mutant]) {
    let all: Vec<Mutant> = reference_host::mutants::ALL
        .iter()
        .map(|info| info.mutant)
        .collect();
    let start = all
        .iter()
        .position(|m| Some(m) == group.first())
        .unwrap_or_else(|| panic!("{:?} is not in mutants::ALL", group.first()));
    assert_eq!(&all[start..(start + group.len()).min(all.len())], group);
}

/// The `error.code` of every event payload in `events` (top-level
/// `error.code` of `agent.tool-returned`, `node.failed`, `run.failed`, …)
/// that is neither registered nor vendor-namespaced (HOOKS-FAIL-7).
pub fn nonconformant_codes(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter_map(|event| event["payload"]["error"]["code"].as_str())
        .filter(|code| !reference_host::event_codes::is_conformant(code))
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
