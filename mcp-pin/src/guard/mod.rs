//! `toolcert mcp guard`: the reviewed-snapshot gate in front of an MCP client that does not
//! know about it.
//!
//! The client launches the guard instead of the server (stdio: `toolcert mcp guard
//! --manifest F --sha256 H --server KEY -- CMD…`) or connects to it instead of the server
//! (Streamable HTTP: the guard listens on 127.0.0.1 and forwards to the server's loopback
//! URL, see [`http`]). The guard passes the protocol through, and holds every `tools/call`
//! to the seed's rules (mcp-facts §4.4 to §4.8):
//!
//! - the snapshot is read, hashed (against the pinned digest) and schema-checked once, when
//!   the guard starts (a mismatch stops it before any server is started); it keeps that
//!   parsed copy for its lifetime, so the bytes it checked are the bytes it uses, and
//!   re-checks on every call only what time or another process can change: expiry, the
//!   window, the invalidation record beside the snapshot;
//! - one connection to the server per client session, initialized at the recorded revision
//!   with the recorded client capabilities (whatever the client declared: a catalog may
//!   depend on them), `serverInfo` (and pinned `instructions`) compared, the start-up barrier
//!   made, all before the client's `initialize` is answered;
//! - before every `tools/call`: the selected tool's review and the local policy, then the
//!   whole live listing (every page, as the seed requires before every call), the barrier,
//!   the exact comparison (and, pinned, the whole catalog), the arguments against the
//!   reviewed `inputSchema`, one more barrier, then the call on the same connection;
//! - `list_changed` (§4.5): one read on the connection before the comparison refuses the
//!   call; one read after it and before dispatch prevents the dispatch; one read while the
//!   call is in flight makes it indeterminate (the result is not passed on, the call is
//!   never retried). Each is recorded beside the snapshot, so every later call, in this guard
//!   or any other, is refused until a new capture and review;
//! - `concurrency: serialize`: calls of that tool through this guard run one at a time (the
//!   asserted scope is the tool, across every session of the guard);
//! - sampling and elicitation requests from the server are refused (a call during which one
//!   arrives fails), `roots/list` is answered with no roots, `ping` with `{}` (the server is
//!   never given access to the client through the guard).
//!
//! A refusal reaches the client as a JSON-RPC error ([`GUARD_REFUSED`], [`GUARD_FAILED`],
//! [`GUARD_INDETERMINATE`]) whose message names the rule, the drift and the fix, and whose
//! `data` carries them as JSON; arguments that do not conform to the reviewed schema come
//! back as an `isError` result, as MCP asks for input validation errors, so a model can
//! correct them. Every call writes one audit line ([`audit`]).
//!
//! What passes through untouched: every other request of the client (`tools/list`,
//! resources, prompts, completion, logging) with its answer, and the server's notifications
//! (progress, messages, `list_changed` too, after the guard counted it). The guard pins
//! tools only: resources and prompts are not gated. It does not forward the client's
//! `notifications/cancelled` (a call it dispatched ends at its answer or its budget), nor its
//! `subscriptions/listen` (it keeps its own).

pub mod audit;
pub mod http;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{OnceCell, mpsc};

use self::audit::{Audit, CallTimings, Line, Verdict};
use super::call::{Contract, Verdict as CallVerdict, check_arguments, contract, judge_result};
use super::client::{self, Client, ClientError, Initialized, Rpc};
use super::gate::{self, Evidence, GateOptions, Pinned, Refusal, Rule, Selected, micros};
use super::transport::Endpoint;
use super::upstream::Upstream;
use super::{REVISION_2026_07_28, time as mcp_time};
use toolcert_base::redact::Redactor;

/// The JSON-RPC error code of a call the guard refused before dispatch (in the
/// implementation-defined range -32000 to -32019 of MCP 2026-07-28, server errors in
/// JSON-RPC).
pub const GUARD_REFUSED: i64 = -32010;

/// The JSON-RPC error code of a call dispatched whose outcome is indeterminate (a
/// `list_changed` during it, no answer within its budget): never retried.
pub const GUARD_INDETERMINATE: i64 = -32011;

/// The JSON-RPC error code of a call dispatched that failed a rule the guard checks on the
/// answer (the output contract, an excluded request during the call).
pub const GUARD_FAILED: i64 = -32012;

/// The largest message the guard reads from its client: 4 MiB.
pub const MAX_CLIENT_MESSAGE: usize = 4 * 1024 * 1024;

/// What a guard guards.
#[derive(Debug, Clone)]
pub struct GuardConfig {
    /// The reviewed snapshot.
    pub manifest: PathBuf,
    /// The server.
    pub upstream: Endpoint,
    /// The gate's options (digest, server key, policies, timeouts; `tool` is per call).
    pub gate: GateOptions,
    /// The secrets of this run (the server's `--env` values, the credential), scrubbed from
    /// every server text the guard shows.
    pub secrets: Vec<String>,
}

/// A running guard: the snapshot, the audit log, the per-tool serialization locks.
#[derive(Debug)]
pub struct Guard {
    config: GuardConfig,
    pinned: Pinned,
    audit: Audit,
    redactor: Redactor,
    serial: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// Per tool, what does not change for the guard's lifetime: the selection and review
    /// checks, and the compiled schemas.
    reviewed: Mutex<HashMap<String, Arc<Result<Reviewed, Refusal>>>>,
    sessions: AtomicU64,
    /// A durable invalidation seen by this guard (kept in memory too, in case the record
    /// could not be written beside the snapshot).
    invalidated: Mutex<Option<String>>,
}

impl Guard {
    /// Read, hash and check the snapshot (rule 1 and completeness). A refusal here stops
    /// the guard before any server is started.
    pub fn new(config: GuardConfig, audit: Audit) -> Result<Arc<Guard>, Refusal> {
        let pinned = Pinned::load(&config.manifest, &config.gate.sha256, &config.gate.server)?;
        let redactor = Redactor::new(config.secrets.clone(), Vec::new());
        Ok(Arc::new(Guard {
            config,
            pinned,
            audit,
            redactor,
            serial: Mutex::new(HashMap::new()),
            reviewed: Mutex::new(HashMap::new()),
            sessions: AtomicU64::new(0),
            invalidated: Mutex::new(None),
        }))
    }

    /// The snapshot it guards with.
    pub fn pinned(&self) -> &Pinned {
        &self.pinned
    }

    /// A new client session; what the server sends unasked goes to `downstream`.
    pub fn session(self: &Arc<Self>, downstream: mpsc::Sender<Value>) -> Arc<Session> {
        Arc::new(Session {
            guard: self.clone(),
            id: self.sessions.fetch_add(1, Ordering::Relaxed) + 1,
            downstream,
            link: OnceCell::new(),
        })
    }

    /// The static checks of one tool, made once.
    fn reviewed(&self, tool: &str, opts: &GateOptions) -> Arc<Result<Reviewed, Refusal>> {
        let mut m = self.reviewed.lock().unwrap_or_else(|e| e.into_inner());
        m.entry(tool.to_string())
            .or_insert_with(|| {
                Arc::new(self.pinned.select_static(tool, opts).map(|selected| {
                    let contract = contract(&selected.tool, false);
                    Reviewed { selected, contract }
                }))
            })
            .clone()
    }

    fn serial_lock(&self, tool: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut m = self.serial.lock().unwrap_or_else(|e| e.into_inner());
        m.entry(tool.to_string()).or_default().clone()
    }

    /// The gate options for one tool.
    fn options(&self, tool: &str) -> GateOptions {
        let mut o = self.config.gate.clone();
        o.tool = tool.to_string();
        o
    }

    /// Record a durable invalidation (beside the snapshot and in memory); the record error.
    fn invalidate(&self, rule: &str, startup: bool, reason: &str) -> Option<String> {
        if !self.config.gate.record {
            return None;
        }
        // A start-up notification refuses every connection of a strict guard anyway; it is
        // recorded (for later gates) but not kept in memory, so that it stays a per-policy
        // verdict (see `invalidation`).
        if !startup && let Ok(mut i) = self.invalidated.lock() {
            i.get_or_insert_with(|| {
                format!("{rule}: {}", reason.chars().take(200).collect::<String>())
            });
        }
        self.pinned.record(rule, startup, reason)
    }
}

/// A reviewed tool as the guard keeps it.
#[derive(Debug)]
struct Reviewed {
    selected: Selected,
    contract: Result<Contract, CallVerdict>,
}

/// The server side of one client session.
#[derive(Debug)]
struct Link {
    upstream: Upstream,
    init: Initialized,
    /// The handshake's verdict: the `list_changed` mark, or the refusal every call gets.
    standing: Result<u64, Refusal>,
    evidence: Evidence,
}

/// One client session of the guard.
#[derive(Debug)]
pub struct Session {
    guard: Arc<Guard>,
    id: u64,
    downstream: mpsc::Sender<Value>,
    link: OnceCell<Result<Link, String>>,
}

fn error(id: &Value, code: i64, message: impl Into<String>, data: Option<Value>) -> Value {
    let mut e = json!({"code": code, "message": message.into()});
    if let Some(d) = data {
        e["data"] = d;
    }
    json!({"jsonrpc": "2.0", "id": id, "error": e})
}

/// What a refusal tells the client to do about it.
fn fix(rule: Rule, startup: bool) -> &'static str {
    match rule {
        Rule::ListChanged | Rule::Invalidated if startup => {
            "this server announces list_changed while starting: run the guard with --list-changed settle, which accepts exactly those (the listing already reflects them) and still refuses any later one"
        }
        r if r.durable() || matches!(r, Rule::Invalidated | Rule::Expired | Rule::Window) => {
            "capture and review the server again (toolcert mcp capture, toolcert mcp review) and pin the new digest"
        }
        Rule::Review | Rule::Incomplete => {
            "review this tool (toolcert mcp review) and pin the new digest"
        }
        Rule::Policy => {
            "this deployment's policy file does not accept the review: review again or change the policy"
        }
        Rule::Authorization => {
            "run the guard under the authorization context the catalog was captured with (--auth-context), or capture and review under this one"
        }
        Rule::ExcludedRequest => {
            "this server asks its client for sampling or elicitation, which pinned calls exclude: it cannot be pinned"
        }
        Rule::Digest => "pin the digest of the snapshot you reviewed (toolcert mcp digest)",
        // Connect, Listing, SessionExpired, and what the arms above did not take.
        _ => {
            "check that the server runs and answers: the guard lists its whole catalog before every call"
        }
    }
}

/// The outcome of one call, before it becomes an answer and an audit line.
struct Outcome {
    verdict: Verdict,
    rule: Option<String>,
    drift: Vec<String>,
    answer: Value,
}

impl Session {
    /// Handle one message from the client; the answer to send back, for a request.
    pub async fn handle(&self, msg: Value) -> Option<Value> {
        let method = msg
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_string);
        match (method, msg.get("id").cloned()) {
            (Some(m), Some(id)) => Some(self.request(&m, id, msg).await),
            (Some(m), None) => {
                self.notification(&m, msg).await;
                None
            }
            // A response: the guard never sends its client a request.
            _ => None,
        }
    }

    async fn request(&self, method: &str, id: Value, msg: Value) -> Value {
        match method {
            "initialize" => self.initialize(id, msg, false).await,
            "server/discover" => self.initialize(id, msg, true).await,
            "tools/call" => self.call(id, msg).await,
            client::SUBSCRIPTIONS_LISTEN => error(
                &id,
                -32601,
                "the toolcert guard does not relay subscriptions/listen (it keeps its own subscription, and forwards list_changed)",
                None,
            ),
            _ => self.forward(id, msg, method).await,
        }
    }

    async fn notification(&self, method: &str, msg: Value) {
        // `initialized` was sent by the guard's own handshake; roots are answered by the
        // guard; cancellations name the client's ids, not the server's (see module docs).
        if matches!(
            method,
            "notifications/initialized"
                | "notifications/roots/list_changed"
                | "notifications/cancelled"
        ) {
            return;
        }
        if let Some(Ok(link)) = self.link.get() {
            link.upstream.notify(msg).await;
        }
    }

    /// The client's `initialize` (or `server/discover`): the guard's own handshake with the
    /// server, answered from what the server said.
    async fn initialize(&self, id: Value, msg: Value, discover: bool) -> Value {
        let version = self.guard.pinned.version.clone();
        let modern = version == REVISION_2026_07_28;
        if discover && !modern {
            // As a server of the recorded revision would: the client falls back to initialize.
            return error(&id, -32601, "Method not found: server/discover", None);
        }
        if !discover && modern {
            let asked = msg.pointer("/params/protocolVersion").cloned();
            return error(
                &id,
                -32602,
                "Unsupported protocol version: this guard speaks 2026-07-28 (use server/discover)",
                Some(json!({"supported": [REVISION_2026_07_28], "requested": asked})),
            );
        }
        let link = self.link.get_or_init(|| self.connect()).await;
        let link = match link {
            Ok(l) => l,
            Err(e) => return error(&id, -32603, e.clone(), None),
        };
        let init = &link.init;
        let mut result = if modern {
            json!({
                "supportedVersions": [REVISION_2026_07_28],
                "capabilities": init.capabilities,
                "serverInfo": init.server_info,
                "resultType": "complete",
            })
        } else {
            json!({
                "protocolVersion": version,
                "capabilities": init.capabilities,
                "serverInfo": init.server_info,
            })
        };
        if let Some(i) = &init.instructions {
            result["instructions"] = i.clone();
        }
        json!({"jsonrpc": "2.0", "id": id, "result": result})
    }

    /// Connect, initialize and check the handshake (rule 3), then share the connection.
    async fn connect(&self) -> Result<Link, String> {
        let g = &self.guard;
        let opts = &g.config.gate;
        let say = |e: &dyn std::fmt::Display| g.redactor.text(&e.to_string()).into_owned();
        let mut client = Client::connect(&g.config.upstream, opts.limits, opts.timeouts)
            .await
            .map_err(|e| format!("toolcert guard: cannot reach the server: {}", say(&e)))?;
        let init = match gate::initialize_pinned(&mut client, &g.pinned).await {
            Ok(i) => i,
            Err(r) => {
                client.close().await;
                return Err(format!(
                    "toolcert guard: the server's handshake failed: {}",
                    say(&gate::describe(&r))
                ));
            }
        };
        let mut evidence = Evidence {
            connected: true,
            list_changed_policy: Some(opts.policy),
            pinned: opts.pins(),
            ..Evidence::default()
        };
        let standing =
            gate::check_handshake(&mut client, &init, &g.pinned, opts, &mut evidence).await;
        if let Err(r) = &standing
            && r.rule.durable()
        {
            evidence.record_error = g.invalidate(r.rule.id(), r.startup, &r.message);
        }
        if let Err(r) = &standing {
            eprintln!(
                "toolcert guard: every tools/call of this session will be refused: {}",
                say(&gate::describe(r))
            );
        }
        let (transport, record) = client.into_parts();
        let upstream = Upstream::start(transport, record, Some(self.downstream.clone()));
        Ok(Link {
            upstream,
            init,
            standing,
            evidence,
        })
    }

    /// Any other request: passed to the server, its answer passed back.
    async fn forward(&self, id: Value, msg: Value, method: &str) -> Value {
        let Some(Ok(link)) = self.link.get() else {
            return error(
                &id,
                -32600,
                "the toolcert guard has no server connection: initialize first",
                None,
            );
        };
        let budget = link.upstream.timeouts().call;
        match link.upstream.exchange(msg, method, budget).await {
            Ok(mut answer) => {
                answer["id"] = id;
                answer
            }
            Err(e) => error(
                &id,
                -32603,
                format!(
                    "toolcert guard: {}",
                    self.guard.redactor.text(&e.to_string())
                ),
                None,
            ),
        }
    }

    /// A `tools/call`: the gate, the call, the audit line.
    async fn call(&self, id: Value, msg: Value) -> Value {
        let arrived = Instant::now();
        let at = mcp_time::format(mcp_time::now());
        let name = msg
            .pointer("/params/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let mut timings = CallTimings::default();
        let mut live_pages = 0;
        let outcome = self
            .gate_and_call(&id, &name, &msg, arrived, &mut timings, &mut live_pages)
            .await;
        timings.total = micros(arrived);
        self.guard.audit.write(&Line {
            at,
            session: self.id,
            server: self.guard.config.gate.server.clone(),
            tool: name,
            manifest_sha256: self.guard.pinned.sha256.clone(),
            verdict: outcome.verdict,
            rule: outcome.rule,
            drift: outcome.drift,
            live_pages,
            timings_us: timings,
        });
        outcome.answer
    }

    /// A refusal (or a failure the guard decided) as the client's answer.
    fn refusal(&self, id: &Value, verdict: Verdict, name: &str, r: &Refusal) -> Outcome {
        let code = match verdict {
            Verdict::Indeterminate => GUARD_INDETERMINATE,
            Verdict::Failed => GUARD_FAILED,
            _ => GUARD_REFUSED,
        };
        let text = gate::describe(r).replace('\n', ";");
        let fix = fix(r.rule, r.startup);
        let message = self
            .guard
            .redactor
            .text(&format!(
                "toolcert guard refused tools/call `{name}` ({}): {text}. Fix: {fix}",
                r.rule.id()
            ))
            .into_owned();
        let data = self.guard.redactor.value(&json!({
            "rule": r.rule.id(),
            "verdict": verdict,
            "tool": name,
            "manifestSha256": self.guard.pinned.sha256,
            "drift": r.diff,
            "fix": fix,
        }));
        Outcome {
            verdict,
            rule: Some(r.rule.id().to_string()),
            drift: r
                .diff
                .iter()
                .map(|c| match &c.tool {
                    Some(t) => format!("{t}:{}", c.pointer),
                    None => c.pointer.clone(),
                })
                .collect(),
            answer: error(id, code, message, Some(data)),
        }
    }

    /// A call rule's verdict (not a gate rule) as the client's answer.
    fn verdict(&self, id: &Value, verdict: Verdict, name: &str, rule: &str, why: &str) -> Outcome {
        let code = match verdict {
            Verdict::Indeterminate => GUARD_INDETERMINATE,
            Verdict::Failed => GUARD_FAILED,
            _ => GUARD_REFUSED,
        };
        let message = self
            .guard
            .redactor
            .text(&format!(
                "toolcert guard: tools/call `{name}` ({rule}): {why}"
            ))
            .into_owned();
        Outcome {
            verdict,
            rule: Some(rule.to_string()),
            drift: Vec::new(),
            answer: error(
                id,
                code,
                message,
                Some(
                    json!({"rule": rule, "verdict": verdict, "tool": name, "manifestSha256": self.guard.pinned.sha256}),
                ),
            ),
        }
    }

    async fn gate_and_call(
        &self,
        id: &Value,
        name: &str,
        msg: &Value,
        arrived: Instant,
        timings: &mut CallTimings,
        live_pages: &mut usize,
    ) -> Outcome {
        let g = &self.guard;
        let opts = g.options(name);
        let refused = |r: Refusal, timings: &mut CallTimings| {
            timings.gate = micros(arrived);
            self.refusal(id, Verdict::Refused, name, &r)
        };
        if msg.pointer("/params/task").is_some() {
            let r = gate::refuse(
                Rule::Review,
                "a task-augmented tools/call: task-augmented calls are excluded from pinned calls (4.8.1)",
            );
            return refused(r, timings);
        }
        let Some(Ok(link)) = self.link.get() else {
            return Outcome {
                verdict: Verdict::Refused,
                rule: Some(Rule::Connect.id().into()),
                drift: Vec::new(),
                answer: error(
                    id,
                    -32600,
                    "the toolcert guard has no server connection: initialize first",
                    None,
                ),
            };
        };
        // The handshake's verdict first (a start-up list_changed refuses with the fix
        // that works), then what time, another process or the deployment can change.
        let mark = match &link.standing {
            Ok(m) => *m,
            Err(r) => return refused(r.clone(), timings),
        };
        let now = mcp_time::now();
        if let Some(why) = g.invalidated.lock().ok().and_then(|i| i.clone()) {
            let r = gate::refuse(
                Rule::Invalidated,
                format!(
                    "this guard saw the snapshot invalidated ({why}); re-listing does not revive a review: a new capture and review are required"
                ),
            );
            return refused(r, timings);
        }
        if let Err(r) = g.pinned.check_fresh(now, &opts) {
            return refused(r, timings);
        }
        let reviewed = g.reviewed(name, &opts);
        let reviewed = match reviewed.as_ref() {
            Ok(r) => r,
            Err(r) => return refused(r.clone(), timings),
        };
        let selected = &reviewed.selected;
        if let Err(r) = g.pinned.check_review_date(selected, now, &opts) {
            return refused(r, timings);
        }
        // `concurrency: serialize`: one call of this tool at a time through this guard.
        let serialize = selected
            .review
            .pointer("/assertions/concurrency")
            .and_then(Value::as_str)
            == Some("serialize");
        let lock = serialize.then(|| g.serial_lock(name));
        let _held = match &lock {
            Some(l) => Some(l.lock().await),
            None => None,
        };
        let mut up = link.upstream.clone();
        let mut evidence = link.evidence.clone();
        let declares = link.init.declares_list_changed();
        let compared = gate::compare_keeping(
            &mut up,
            &g.pinned,
            selected,
            mark,
            declares,
            &opts,
            &mut evidence,
        )
        .await;
        timings.live_listing = evidence.timings_us.live_listing;
        *live_pages = evidence.live_pages;
        // A catalog of thousands of tools takes milliseconds to free: not on the call's path.
        let listing = match compared {
            Ok((_, listing)) => listing,
            Err((r, listing)) => {
                tokio::task::spawn_blocking(move || drop(listing));
                if r.rule.durable() {
                    g.invalidate(r.rule.id(), r.startup, &r.message);
                }
                return refused(r, timings);
            }
        };
        tokio::task::spawn_blocking(move || drop(listing));
        // The call rules before dispatch; bad arguments are a tool execution error in MCP
        // (input validation), so the model sees them and can correct them.
        let arguments = msg
            .pointer("/params/arguments")
            .cloned()
            .unwrap_or_else(|| json!({}));
        let checked = reviewed
            .contract
            .as_ref()
            .map_err(Clone::clone)
            .and_then(|c| check_arguments(c, &selected.review, &arguments).map(|()| c));
        let output = match checked {
            Ok(c) => c.output.as_ref(),
            Err((rule, why)) => {
                timings.gate = micros(arrived);
                let text = format!("toolcert guard did not call `{name}` ({rule}): {why}");
                return Outcome {
                    verdict: Verdict::NotDispatched,
                    rule: Some(rule.to_string()),
                    drift: Vec::new(),
                    answer: json!({"jsonrpc": "2.0", "id": id, "result": {
                        "content": [{"type": "text", "text": g.redactor.text(&text)}],
                        "isError": true,
                    }}),
                };
            }
        };
        if let Err(e) = client::barrier(&mut up).await {
            timings.gate = micros(arrived);
            let r = gate::refuse(Rule::Connect, g.redactor.text(&e.to_string()));
            return self.refusal(id, Verdict::NotDispatched, name, &r);
        }
        if up.list_changed_seq() > mark {
            timings.gate = micros(arrived);
            let why = "notifications/tools/list_changed arrived after the gate's comparison: the binding is invalidated and the call was not dispatched";
            g.invalidate("4.5.3-list-changed-before-dispatch", false, why);
            return self.verdict(
                id,
                Verdict::NotDispatched,
                name,
                "4.5.3-list-changed-before-dispatch",
                why,
            );
        }
        // Dispatch: the client's own request (its arguments, its `_meta` progress token),
        // on the connection the comparison ran on.
        timings.gate = micros(arrived);
        let requests_before = up.server_request_count();
        let mut forwarded = msg.clone();
        if g.pinned.version == REVISION_2026_07_28
            && let Some(params) = forwarded.get_mut("params")
        {
            client::stamp_2026_meta(params, &g.pinned.entry()["clientCapabilities"]);
        }
        let dispatched = Instant::now();
        let answer = up
            .exchange(forwarded, "tools/call", opts.timeouts.call)
            .await;
        timings.call = micros(dispatched);
        let in_flight = up.list_changed_seq() > mark;
        let excluded = up.excluded_since(requests_before);
        let indeterminate = |why: String| {
            self.verdict(
                id,
                Verdict::Indeterminate,
                name,
                "4.5.4-indeterminate",
                &why,
            )
        };
        if in_flight {
            let why = "notifications/tools/list_changed arrived during the call: the binding is invalidated, the result is not passed on, the side effect may have happened; not retried";
            g.invalidate("4.5.4-indeterminate", false, why);
            return indeterminate(why.into());
        }
        let mut answer = match answer {
            Ok(a) => a,
            Err(ClientError::Timeout { after, .. }) => {
                return indeterminate(format!(
                    "no answer to tools/call within {after:?}: the side effect may have happened; not retried"
                ));
            }
            Err(e) => {
                return indeterminate(format!(
                    "the connection failed during the call ({}): the side effect may have happened; not retried",
                    g.redactor.text(&e.to_string())
                ));
            }
        };
        answer["id"] = id.clone();
        if !excluded.is_empty() {
            return self.verdict(
                id,
                Verdict::Failed,
                name,
                "4.8.2-excluded-request",
                &format!(
                    "the server sent {} during the call (refused): excluded from pinned calls",
                    excluded.join(", ")
                ),
            );
        }
        if answer.get("error").is_some() {
            // The server's own protocol error: passed on as it is, to its client.
            return Outcome {
                verdict: Verdict::Failed,
                rule: Some("4.7.3-protocol-error".into()),
                drift: Vec::new(),
                answer,
            };
        }
        let result = answer.get("result").cloned().unwrap_or(Value::Null);
        match judge_result(&result, output) {
            Ok(_) => Outcome {
                verdict: Verdict::Ok,
                rule: None,
                drift: Vec::new(),
                answer,
            },
            // isError: the tool's own error, passed on (its content is for the model).
            Err((rule @ "4.7.3-is-error", _)) => Outcome {
                verdict: Verdict::Failed,
                rule: Some(rule.into()),
                drift: Vec::new(),
                answer,
            },
            Err((rule, why)) => self.verdict(id, Verdict::Failed, name, rule, &why),
        }
    }

    /// End the session: close the server connection (bounded).
    pub async fn close(&self) {
        if let Some(Ok(link)) = self.link.get() {
            link.upstream.close().await;
        }
    }
}

/// Serve one client on a byte pipe (stdio: the guard's stdin and stdout), newline-delimited
/// JSON-RPC, until the client closes it or `shutdown` completes (a signal); then close the
/// server connection (bounded).
pub async fn serve_lines<R, W>(
    guard: Arc<Guard>,
    read: R,
    write: W,
    shutdown: impl std::future::Future<Output = ()>,
) where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let mut shutdown = std::pin::pin!(shutdown);
    let (tx, mut rx) = mpsc::channel::<Value>(1024);
    let writer = tokio::spawn(async move {
        let mut w = write;
        while let Some(m) = rx.recv().await {
            let mut line = serde_json::to_vec(&m).unwrap_or_default();
            line.push(b'\n');
            if w.write_all(&line).await.is_err() || w.flush().await.is_err() {
                return;
            }
        }
    });
    let session = guard.session(tx.clone());
    let mut reader = BufReader::new(read);
    let mut buf = Vec::new();
    let mut tasks = tokio::task::JoinSet::new();
    loop {
        buf.clear();
        let mut limited = (&mut reader).take(MAX_CLIENT_MESSAGE as u64 + 1);
        let read = limited.read_until(b'\n', &mut buf);
        tokio::select! {
            r = read => match r {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            },
            () = &mut shutdown => break,
        }
        if buf.len() > MAX_CLIENT_MESSAGE {
            let _ = tx
                .send(error(
                    &Value::Null,
                    -32700,
                    format!(
                        "a message of more than {MAX_CLIENT_MESSAGE} bytes; the guard stops reading"
                    ),
                    None,
                ))
                .await;
            break;
        }
        if buf.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let parsed = std::str::from_utf8(&buf)
            .map_err(|_| "not UTF-8".to_string())
            .and_then(|t| toolcert_base::canonical::parse_strict(t).map_err(|e| e.to_string()));
        let msg = match parsed {
            Ok(m) => m,
            Err(e) => {
                let _ = tx
                    .send(error(
                        &Value::Null,
                        -32700,
                        format!("Parse error: {e}"),
                        None,
                    ))
                    .await;
                continue;
            }
        };
        let method = msg.get("method").and_then(Value::as_str).unwrap_or("");
        // The handshake is answered before the next message is read, so a client that
        // pipelines its first requests finds the connection ready.
        if matches!(method, "initialize" | "server/discover") {
            if let Some(answer) = session.handle(msg).await {
                let _ = tx.send(answer).await;
            }
            continue;
        }
        let (s, tx) = (session.clone(), tx.clone());
        tasks.spawn(async move {
            if let Some(answer) = s.handle(msg).await {
                let _ = tx.send(answer).await;
            }
        });
        while tasks.try_join_next().is_some() {}
    }
    // The client is gone: nothing in flight has anyone to answer.
    tasks.abort_all();
    session.close().await;
    drop(tx);
    drop(session);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), writer).await;
}

/// A guard serving one client on an in-process pipe (tests, benches): the client's end, and
/// the task (it ends when the client's end is dropped).
pub fn on_pipe(guard: Arc<Guard>) -> (tokio::io::DuplexStream, tokio::task::JoinHandle<()>) {
    let (client, server) = tokio::io::duplex(1 << 20);
    let (sr, sw) = tokio::io::split(server);
    let task = tokio::spawn(serve_lines(guard, sr, sw, std::future::pending()));
    (client, task)
}
