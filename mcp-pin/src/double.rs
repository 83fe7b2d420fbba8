//! toolcert's scriptable MCP server double: everything a real server does to a pinned
//! catalog, on demand. It paginates, drifts between connections or between pages, repeats a
//! tool name, sends `notifications/tools/list_changed` at chosen points (right after
//! `initialized`, after a given `tools/list` page, during a call), lies in annotations,
//! answers `isError` or non-conforming `structuredContent`, hangs or floods; over HTTP it can
//! offer the GET stream for what it sends unasked, and end a session on demand (404).
//!
//! One [`Script`] (JSON) drives it. It serves newline-delimited JSON-RPC on any byte pipe
//! ([`serve_lines`]: in process, or on stdio as the hidden `toolcert mcp double` subcommand)
//! and Streamable HTTP on 127.0.0.1 ([`serve_http`]). A [`Witness`] counts connections and
//! records every `tools/call` it received, so a test can prove that a refusal happened
//! before any connection or before any dispatch.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};

use super::REVISION_2025_11_25;

/// What the double serves and how it misbehaves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct Script {
    /// Revisions it accepts; an `initialize` with another one gets the first (as the SDK does).
    pub protocol_versions: Vec<String>,
    /// The `serverInfo` it reports.
    pub server_info: Value,
    /// The `capabilities` it reports.
    pub capabilities: Value,
    /// `instructions`, when set.
    pub instructions: Option<Value>,
    /// The catalog, page by page.
    pub pages: Vec<Vec<Value>>,
    /// From the `afterLists`-th `tools/list` request on (0-based, counted per connection),
    /// serve these pages instead: drift between pages, or between listings.
    pub drift: Option<Drift>,
    /// When to send `notifications/tools/list_changed`.
    pub list_changed: ListChangedAt,
    /// The `result` of every `tools/call` (default: one text block).
    pub call_result: Value,
    /// Answer `tools/call` with this JSON-RPC error object instead.
    pub call_error: Option<Value>,
    /// Never answer requests of this method.
    pub hang_on: Option<String>,
    /// Before answering this method, send `count` notifications of `bytes` bytes each.
    pub flood: Option<Flood>,
    /// Send this server → client request after `initialized` (e.g. `roots/list`).
    pub request_after_initialized: Option<String>,
    /// Every `nextCursor` is `page-1`: pagination that loops.
    pub loop_cursors: bool,
    /// Answer every `tools/list` with this `result` instead (a lying server).
    pub list_result: Option<Value>,
    /// HTTP only: offer the optional GET stream (SSE). Without it GET is 405 and what the
    /// double sends unasked waits for the next request's response stream.
    pub get_stream: bool,
    /// HTTP only: end the session at this request (answer it 404, forget the session, end
    /// its GET stream), as a server that expires sessions does.
    pub expire_session: Option<ExpireSession>,
    /// 2026-07-28: how `subscriptions/listen` is answered. A 2026-07-28 session sends
    /// `list_changed` only on an open, acknowledged stream that asked for `toolsListChanged`.
    pub listen: ListenMode,
    /// 2026-07-28: the `cacheScope` of every `tools/list` result.
    pub cache_scope: String,
    /// 2026-07-28: the `ttlMs` of every `tools/list` result.
    pub ttl_ms: u64,
    /// 2026-07-28: leave `ttlMs` and `cacheScope` out (a server breaking the revision).
    pub omit_cache_fields: bool,
    /// Answer each `tools/call` this many milliseconds later, reading on meanwhile (stdio and
    /// in process), so calls can overlap.
    pub call_delay_ms: u64,
    /// Stdio only: instead of serving this script, run a real server and drift it (see
    /// [`super::drifter`]); the other members are then unused.
    pub wrap: Option<super::drifter::Wrap>,
}

/// How the double answers `subscriptions/listen` (2026-07-28).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ListenMode {
    /// Acknowledge, honouring what was asked.
    #[default]
    Honour,
    /// Acknowledge without `toolsListChanged`.
    IgnoreTools,
    /// Answer `-32601`.
    Refuse,
}

/// When the HTTP double ends a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExpireSession {
    /// At a request of this method…
    pub on: String,
    /// …the `nth` one (0-based, counted per session).
    pub nth: u64,
}

/// Pages served from a point on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Drift {
    /// The 0-based `tools/list` request from which `pages` are served.
    pub after_lists: u64,
    /// The drifted catalog.
    pub pages: Vec<Vec<Value>>,
}

/// Points at which the double sends `notifications/tools/list_changed`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct ListChangedAt {
    /// How many, right after `notifications/initialized` (server-everything sends one).
    pub after_initialized: u32,
    /// After answering the `tools/list` requests with these 0-based numbers.
    pub after_lists: Vec<u64>,
    /// After answering the `ping`s with these 0-based numbers (the gate's start-up barrier is
    /// ping 0, its barrier after the listing ping 1, the call's pre-dispatch barrier ping 2,
    /// so `[1]` lands between gate and dispatch).
    pub after_pings: Vec<u64>,
    /// Before answering a `tools/call`.
    pub during_call: bool,
}

/// A flood of notifications.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Flood {
    /// Before answering this method.
    pub on: String,
    /// How many notifications.
    pub count: u64,
    /// Padding bytes in each.
    pub bytes: usize,
}

impl Default for Script {
    fn default() -> Self {
        Script {
            protocol_versions: vec![REVISION_2025_11_25.to_string()],
            server_info: json!({"name": "toolcert-double", "version": "1.0.0"}),
            capabilities: json!({"tools": {"listChanged": true}}),
            instructions: None,
            pages: vec![vec![echo_tool()]],
            drift: None,
            list_changed: ListChangedAt::default(),
            call_result: json!({"content": [{"type": "text", "text": "ok"}]}),
            call_error: None,
            hang_on: None,
            flood: None,
            request_after_initialized: None,
            loop_cursors: false,
            list_result: None,
            get_stream: false,
            expire_session: None,
            listen: ListenMode::Honour,
            cache_scope: "public".into(),
            ttl_ms: 60_000,
            omit_cache_fields: false,
            call_delay_ms: 0,
            wrap: None,
        }
    }
}

/// A small, complete Tool: every kind of member a drift can touch.
pub fn echo_tool() -> Value {
    json!({
        "name": "echo",
        "title": "Echo",
        "description": "Echoes the message back.",
        "inputSchema": {
            "type": "object",
            "properties": {"message": {"type": "string", "maxLength": 100}},
            "required": ["message"],
            "additionalProperties": false
        },
        "outputSchema": {
            "type": "object",
            "properties": {"echo": {"type": "string"}},
            "required": ["echo"]
        },
        "annotations": {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false},
        "execution": {"taskSupport": "forbidden"},
        "icons": [{"src": "data:image/png;base64,AAAA", "mimeType": "image/png", "sizes": ["16x16"]}],
        "x-vendor": {"tier": 1}
    })
}

/// A catalog of `n` generated tools on pages of `per_page`.
pub fn generated_pages(n: usize, per_page: usize) -> Vec<Vec<Value>> {
    let tools: Vec<Value> = (0..n)
        .map(|i| {
            let mut t = echo_tool();
            t["name"] = json!(format!("tool-{i:05}"));
            t["description"] = json!(format!("Generated tool number {i}."));
            t
        })
        .collect();
    tools
        .chunks(per_page.max(1))
        .map(<[Value]>::to_vec)
        .collect()
}

/// What the double saw, shared with the test that runs it.
#[derive(Debug, Default)]
pub struct Witness {
    /// Connections opened (stdio processes, in-process pipes, HTTP sessions).
    pub connections: AtomicU64,
    /// The `params` of every `tools/call` received.
    pub calls: Mutex<Vec<Value>>,
    /// The method of every message received (requests and notifications, in order; at most
    /// [`MAX_BACKLOG`] × 10), so a test can see what a client sent when.
    pub methods: Mutex<Vec<String>>,
    /// `tools/call`s being answered now ([`Script::call_delay_ms`]).
    pub in_flight: AtomicU64,
    /// The most `tools/call`s that were in flight at once.
    pub max_in_flight: AtomicU64,
    /// The exchange on stdio and in process, message by message (`{"from": "client" |
    /// "server", "message": …}`), at most [`MAX_TRANSCRIPT`] entries.
    pub transcript: Mutex<Vec<Value>>,
    /// Entries left out of `transcript` once it was full.
    pub transcript_dropped: AtomicU64,
}

/// The most messages a [`Witness`] keeps of an exchange.
pub const MAX_TRANSCRIPT: usize = 200;

impl Witness {
    fn record(&self, from: &str, message: &Value) {
        if let Ok(mut t) = self.transcript.lock()
            && t.len() < MAX_TRANSCRIPT
        {
            t.push(json!({"from": from, "message": message}));
            return;
        }
        self.transcript_dropped.fetch_add(1, Ordering::Relaxed);
    }
}

impl Witness {
    /// How many `tools/call` requests arrived.
    pub fn call_count(&self) -> usize {
        self.calls.lock().map(|c| c.len()).unwrap_or(0)
    }
}

/// What to do with one incoming message.
#[derive(Debug, PartialEq)]
enum Reply {
    /// Send these messages, in order.
    Send(Vec<Value>),
    /// Never answer.
    Hang,
}

/// The most messages the HTTP double holds for a client that has not read them yet (the
/// next response stream's backlog, or the GET stream's): beyond it, it drops them. Bounded
/// like everything else, and far more than any test sends.
pub const MAX_BACKLOG: usize = 1024;

/// One connection's state.
#[derive(Debug)]
struct Session {
    script: Arc<Script>,
    witness: Arc<Witness>,
    lists: u64,
    pings: u64,
    /// HTTP: unasked messages waiting for the next response stream (no GET stream offered)
    /// or for the GET stream to open.
    pending: std::collections::VecDeque<Value>,
    /// HTTP: the open GET stream.
    get_stream: Option<tokio::sync::mpsc::Sender<Value>>,
    /// HTTP: requests seen per method (for [`Script::expire_session`]).
    requests: std::collections::HashMap<String, u64>,
    /// The client speaks 2026-07-28 (it discovered, or its requests carry that revision).
    modern: bool,
    /// 2026-07-28: the id of the open `subscriptions/listen` that asked for tools.
    listen: Option<Value>,
}

impl Session {
    fn new(script: Arc<Script>, witness: Arc<Witness>) -> Session {
        witness.connections.fetch_add(1, Ordering::SeqCst);
        Session {
            script,
            witness,
            lists: 0,
            pings: 0,
            pending: std::collections::VecDeque::new(),
            get_stream: None,
            requests: std::collections::HashMap::new(),
            modern: false,
            listen: None,
        }
    }

    /// HTTP: send messages the client did not ask for here (after a notification was
    /// handled, or after a request's response): on the GET stream when one is open, else
    /// held (bounded) until it opens, or, without a GET stream, for the next response stream.
    fn unasked(&mut self, msgs: Vec<Value>) {
        for m in msgs {
            if let Some(tx) = &self.get_stream {
                match tx.try_send(m) {
                    Ok(()) => continue,
                    Err(e) => {
                        // Full or closed: this stream is over; hold the rest for the next.
                        self.get_stream = None;
                        let m = match e {
                            tokio::sync::mpsc::error::TrySendError::Full(m)
                            | tokio::sync::mpsc::error::TrySendError::Closed(m) => m,
                        };
                        if self.pending.len() < MAX_BACKLOG {
                            self.pending.push_back(m);
                        }
                        continue;
                    }
                }
            }
            if self.pending.len() < MAX_BACKLOG {
                self.pending.push_back(m);
            }
        }
    }

    /// HTTP: whether this request is the one [`Script::expire_session`] names.
    fn expires_at(&mut self, method: &str) -> bool {
        let n = self.requests.entry(method.to_string()).or_insert(0);
        let this = *n;
        *n += 1;
        self.script
            .expire_session
            .as_ref()
            .is_some_and(|x| x.on == method && x.nth == this)
    }

    fn list_changed() -> Value {
        json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    }

    /// A `list_changed` as this session sends it: always on 2025-11-25; on 2026-07-28 only on
    /// an open `subscriptions/listen` stream, tagged with its id (else it is lost, as a
    /// client that never listens would lose it).
    fn announce(&self, out: &mut Vec<Value>) {
        if !self.modern {
            out.push(Session::list_changed());
        } else if let Some(sub) = &self.listen {
            out.push(json!({
                "jsonrpc": "2.0",
                "method": "notifications/tools/list_changed",
                "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": sub}},
            }));
        }
    }

    fn handle(&mut self, msg: &Value) -> Reply {
        let s = self.script.clone();
        let method = msg.get("method").and_then(Value::as_str).unwrap_or("");
        if !method.is_empty()
            && let Ok(mut m) = self.witness.methods.lock()
            && m.len() < MAX_BACKLOG * 10
        {
            m.push(method.to_string());
        }
        let Some(id) = msg.get("id").cloned() else {
            // A notification (or a response to our request).
            if method == "notifications/initialized" {
                let mut out: Vec<Value> = (0..s.list_changed.after_initialized)
                    .map(|_| Session::list_changed())
                    .collect();
                if let Some(m) = &s.request_after_initialized {
                    out.push(json!({"jsonrpc": "2.0", "id": 0, "method": m}));
                }
                return Reply::Send(out);
            }
            return Reply::Send(vec![]);
        };
        if msg.get("method").is_none() {
            return Reply::Send(vec![]);
        }
        if msg
            .pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion")
            .and_then(Value::as_str)
            == Some("2026-07-28")
        {
            self.modern = true;
        }
        if method == "tools/call"
            && let Ok(mut calls) = self.witness.calls.lock()
        {
            calls.push(msg.get("params").cloned().unwrap_or(Value::Null));
        }
        if s.hang_on.as_deref() == Some(method) {
            return Reply::Hang;
        }
        let mut out = Vec::new();
        if let Some(f) = &s.flood
            && f.on == method
        {
            let pad = "x".repeat(f.bytes);
            for _ in 0..f.count {
                out.push(json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": pad}}));
            }
        }
        let ok = |result: Value| json!({"jsonrpc": "2.0", "id": id, "result": result});
        let err = |code: i64, message: &str| json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
        let params = msg.get("params").cloned().unwrap_or(json!({}));
        match method {
            "initialize" => {
                let asked = params
                    .get("protocolVersion")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let version = if s.protocol_versions.iter().any(|v| v == asked) {
                    asked.to_string()
                } else {
                    s.protocol_versions.first().cloned().unwrap_or_default()
                };
                let mut result = json!({
                    "protocolVersion": version,
                    "capabilities": s.capabilities,
                    "serverInfo": s.server_info,
                });
                if let Some(i) = &s.instructions {
                    result["instructions"] = i.clone();
                }
                out.push(ok(result));
            }
            "server/discover" if s.protocol_versions.iter().any(|v| v == "2026-07-28") => {
                self.modern = true;
                let mut result = json!({
                    "supportedVersions": s.protocol_versions,
                    "capabilities": s.capabilities,
                    "serverInfo": s.server_info,
                });
                if let Some(i) = &s.instructions {
                    result["instructions"] = i.clone();
                }
                out.push(ok(result));
            }
            "subscriptions/listen" if self.modern => match s.listen {
                ListenMode::Refuse => out.push(err(-32601, "method not found")),
                mode => {
                    let tools = mode == ListenMode::Honour
                        && params.pointer("/notifications/toolsListChanged") == Some(&json!(true));
                    if tools {
                        self.listen = Some(id.clone());
                    }
                    // The request stays open: the acknowledgment is a notification on it.
                    out.push(json!({
                        "jsonrpc": "2.0",
                        "method": "notifications/subscriptions/acknowledged",
                        "params": {
                            "notifications": if tools { json!({"toolsListChanged": true}) } else { json!({}) },
                            "_meta": {"io.modelcontextprotocol/subscriptionId": id},
                        },
                    }));
                }
            },
            "ping" => {
                out.push(ok(json!({})));
                if s.list_changed.after_pings.contains(&self.pings) {
                    self.announce(&mut out);
                }
                self.pings += 1;
            }
            "tools/list" if s.list_result.is_some() => {
                out.push(ok(s.list_result.clone().unwrap_or_default()));
            }
            "tools/list" => {
                let n = self.lists;
                self.lists += 1;
                let pages = match &s.drift {
                    Some(d) if n >= d.after_lists => &d.pages,
                    _ => &s.pages,
                };
                let index = match params.get("cursor") {
                    None | Some(Value::Null) => Some(0),
                    Some(Value::String(c)) => c
                        .strip_prefix("page-")
                        .and_then(|p| p.parse::<usize>().ok()),
                    Some(_) => None,
                };
                match index.filter(|i| *i < pages.len().max(1)) {
                    None => out.push(err(-32602, "invalid cursor")),
                    Some(i) => {
                        let tools = pages.get(i).cloned().unwrap_or_default();
                        let mut result = json!({"tools": tools});
                        if self.modern && !s.omit_cache_fields {
                            result["ttlMs"] = json!(s.ttl_ms);
                            result["cacheScope"] = json!(s.cache_scope);
                        }
                        if i + 1 < pages.len() || (s.loop_cursors && pages.len() > 1) {
                            let next = if s.loop_cursors { 1 } else { i + 1 };
                            result["nextCursor"] = json!(format!("page-{next}"));
                        }
                        out.push(ok(result));
                    }
                }
                if s.list_changed.after_lists.contains(&n) {
                    self.announce(&mut out);
                }
            }
            "tools/call" => {
                if s.list_changed.during_call {
                    self.announce(&mut out);
                }
                match &s.call_error {
                    Some(e) => out.push(json!({"jsonrpc": "2.0", "id": id, "error": e})),
                    None => out.push(ok(s.call_result.clone())),
                }
            }
            _ => out.push(err(-32601, "method not found")),
        }
        Reply::Send(out)
    }
}

/// Serve MCP as newline-delimited JSON-RPC on a byte pipe until it closes.
pub async fn serve_lines<R, W>(read: R, write: W, script: Arc<Script>, witness: Arc<Witness>)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let delay = std::time::Duration::from_millis(script.call_delay_ms);
    let write = Arc::new(tokio::sync::Mutex::new(write));
    let mut session = Session::new(script, witness.clone());
    let mut lines = BufReader::new(read);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        // One message is at most 4 MiB: the double is bounded like the client.
        match (&mut lines)
            .take(4 * 1024 * 1024)
            .read_until(b'\n', &mut buf)
            .await
        {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let Ok(msg) = serde_json::from_slice::<Value>(&buf) else {
            continue;
        };
        witness.record("client", &msg);
        let is_call = msg.get("method").and_then(Value::as_str) == Some("tools/call");
        match session.handle(&msg) {
            Reply::Hang => continue,
            Reply::Send(out) => {
                let mut bytes = Vec::new();
                for m in out {
                    witness.record("server", &m);
                    bytes.extend_from_slice(m.to_string().as_bytes());
                    bytes.push(b'\n');
                }
                if is_call && !delay.is_zero() {
                    // A call that takes time, answered while the double reads on: calls
                    // overlap when the client sends them so, and the witness counts it.
                    let (write, witness) = (write.clone(), witness.clone());
                    tokio::spawn(async move {
                        let now = witness.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                        witness.max_in_flight.fetch_max(now, Ordering::SeqCst);
                        tokio::time::sleep(delay).await;
                        witness.in_flight.fetch_sub(1, Ordering::SeqCst);
                        let mut w = write.lock().await;
                        let _ = w.write_all(&bytes).await;
                        let _ = w.flush().await;
                    });
                    continue;
                }
                let mut w = write.lock().await;
                if w.write_all(&bytes).await.is_err() || w.flush().await.is_err() {
                    return;
                }
            }
        }
    }
}

/// Serve on this process's stdin and stdout (the hidden `toolcert mcp double` subcommand).
pub async fn serve_stdio(script: Script) {
    if let Some(wrap) = script.wrap {
        if let Err(e) = super::drifter::serve(wrap).await {
            eprintln!("toolcert mcp double: the wrapped server: {e}");
        }
        return;
    }
    serve_lines(
        tokio::io::stdin(),
        tokio::io::stdout(),
        Arc::new(script),
        Arc::new(Witness::default()),
    )
    .await;
}

/// A double reachable in process: each connection gets a fresh session on a pipe.
#[derive(Debug, Clone)]
pub struct InProcess {
    /// The script every connection serves.
    pub script: Arc<Script>,
    /// What the double saw.
    pub witness: Arc<Witness>,
}

impl PartialEq for InProcess {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.script, &other.script)
    }
}
impl Eq for InProcess {}

impl InProcess {
    /// A double for `script`.
    pub fn new(script: Script) -> InProcess {
        InProcess {
            script: Arc::new(script),
            witness: Arc::new(Witness::default()),
        }
    }

    /// Open one connection: the client's ends of a pipe whose other end the double serves.
    pub fn connect(
        &self,
    ) -> (
        tokio::io::ReadHalf<tokio::io::DuplexStream>,
        tokio::io::WriteHalf<tokio::io::DuplexStream>,
    ) {
        let (client, server) = tokio::io::duplex(1 << 20);
        let (sr, sw) = tokio::io::split(server);
        tokio::spawn(serve_lines(
            sr,
            sw,
            self.script.clone(),
            self.witness.clone(),
        ));
        tokio::io::split(client)
    }
}

/// A running HTTP double.
#[derive(Debug)]
pub struct HttpDouble {
    /// Its MCP endpoint, `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    /// What it saw.
    pub witness: Arc<Witness>,
    /// Serves until the double is dropped.
    _server: loopback_http::Server,
}

#[derive(Clone)]
struct HttpState {
    script: Arc<Script>,
    witness: Arc<Witness>,
    sessions: Arc<Mutex<std::collections::HashMap<String, Session>>>,
}

/// Serve Streamable HTTP on 127.0.0.1 (an ephemeral port): POST answers a request with
/// `application/json` when it is the only message, or an SSE stream (priming event, then
/// every notification and the response) otherwise; 202 for notifications; `Mcp-Session-Id`
/// issued on `initialize` and required after (an unknown one is 404). What the double sends
/// unasked (after a notification, or after a request's response) goes on the GET stream when
/// [`Script::get_stream`] offers one (one per session, 409 for a second; held, bounded, until
/// it opens), else on the next response stream; without it GET is 405. DELETE ends the
/// session. [`Script::expire_session`] answers one request 404 and forgets the session.
pub async fn serve_http(script: Script) -> std::io::Result<HttpDouble> {
    let state = HttpState {
        script: Arc::new(script),
        witness: Arc::new(Witness::default()),
        sessions: Arc::new(Mutex::new(std::collections::HashMap::new())),
    };
    let witness = state.witness.clone();
    let router = loopback_http::Router::new(state)
        .post("/mcp", http_post)
        .get("/mcp", http_get)
        .delete("/mcp", http_delete);
    // loopback-http sets TCP_NODELAY: an event written on an open GET stream must not wait for
    // the client's delayed ACK of the one before, long after the answers to later POSTs.
    let server = loopback_http::Server::bind(SocketAddr::from(([127, 0, 0, 1], 0)), router).await?;
    Ok(HttpDouble {
        url: format!("http://{}/mcp", server.local_addr()),
        witness,
        _server: server,
    })
}

async fn http_post(state: HttpState, request: loopback_http::Request) -> loopback_http::Response {
    use loopback_http::{StatusCode, response};
    let headers = request.headers;
    let body = match request.body.read_or_reject().await {
        Ok(body) => body,
        Err(rejected) => return rejected,
    };
    let Ok(msg) = serde_json::from_slice::<Value>(&body) else {
        return response::text(StatusCode::BAD_REQUEST, "not JSON");
    };
    let is_init = msg.get("method").and_then(Value::as_str) == Some("initialize");
    let sid = headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let (sid, reply) = {
        let Ok(mut sessions) = state.sessions.lock() else {
            return response::status(StatusCode::INTERNAL_SERVER_ERROR);
        };
        let sid = if is_init {
            let sid = uuid::Uuid::new_v4().to_string();
            sessions.insert(
                sid.clone(),
                Session::new(state.script.clone(), state.witness.clone()),
            );
            sid
        } else {
            match sid {
                None => {
                    return response::text(StatusCode::BAD_REQUEST, "Mcp-Session-Id required");
                }
                Some(s) if !sessions.contains_key(&s) => {
                    return response::status(StatusCode::NOT_FOUND);
                }
                Some(s) => s,
            }
        };
        let Some(session) = sessions.get_mut(&sid) else {
            return response::status(StatusCode::NOT_FOUND);
        };
        let is_request = msg.get("id").is_some() && msg.get("method").is_some();
        let method = msg.get("method").and_then(Value::as_str).unwrap_or("");
        if is_request && !is_init && session.expires_at(method) {
            // The session ends here: this request is not processed, the GET stream ends.
            sessions.remove(&sid);
            return response::status(StatusCode::NOT_FOUND);
        }
        let id = msg.get("id").cloned();
        let reply = match session.handle(&msg) {
            // After a notification (list_changed after `initialized`): unasked.
            Reply::Send(out) if !is_request => {
                session.unasked(out);
                Reply::Send(vec![])
            }
            // A request's stream ends with its response; what follows it is unasked.
            Reply::Send(mut out) => {
                let end = out
                    .iter()
                    .position(|m| m.get("method").is_none() && m.get("id") == id.as_ref());
                let later = end.map_or(Vec::new(), |i| out.split_off(i + 1));
                let mut all: Vec<Value> = if state.script.get_stream {
                    Vec::new()
                } else {
                    session.pending.drain(..).collect()
                };
                all.extend(out);
                session.unasked(later);
                Reply::Send(all)
            }
            Reply::Hang => Reply::Hang,
        };
        (sid, reply)
    };
    let out = match reply {
        Reply::Hang => {
            // Never answer: the client's deadline must end the wait.
            std::future::pending::<()>().await;
            return response::status(StatusCode::INTERNAL_SERVER_ERROR);
        }
        Reply::Send(out) => out,
    };
    let is_request = msg.get("id").is_some() && msg.get("method").is_some();
    let mut resp = if !is_request {
        response::status(StatusCode::ACCEPTED)
    } else if out.len() == 1 {
        response::with_type(
            StatusCode::OK,
            "application/json",
            out[0].to_string().into(),
        )
    } else {
        let mut sse = String::from("id: 0\ndata:\n\n");
        for m in &out {
            sse.push_str("event: message\ndata: ");
            sse.push_str(&m.to_string());
            sse.push_str("\n\n");
        }
        response::with_type(StatusCode::OK, "text/event-stream", sse.into())
    };
    if is_init && let Ok(v) = sid.parse() {
        resp.headers_mut().insert("mcp-session-id", v);
    }
    resp
}

/// The capacity of one GET stream's queue; a client that does not read it loses the stream.
const GET_STREAM_CAPACITY: usize = 256;

async fn http_get(state: HttpState, request: loopback_http::Request) -> loopback_http::Response {
    use loopback_http::{StatusCode, response};
    let headers = request.headers;
    if !state.script.get_stream {
        return response::status(StatusCode::METHOD_NOT_ALLOWED);
    }
    let Some(sid) = headers.get("mcp-session-id").and_then(|v| v.to_str().ok()) else {
        return response::text(StatusCode::BAD_REQUEST, "Mcp-Session-Id required");
    };
    let rx = {
        let Ok(mut sessions) = state.sessions.lock() else {
            return response::status(StatusCode::INTERNAL_SERVER_ERROR);
        };
        let Some(session) = sessions.get_mut(sid) else {
            return response::status(StatusCode::NOT_FOUND);
        };
        if session.get_stream.as_ref().is_some_and(|t| !t.is_closed()) {
            return response::text(StatusCode::CONFLICT, "a GET stream is already open");
        }
        let (tx, rx) = tokio::sync::mpsc::channel(GET_STREAM_CAPACITY);
        session.get_stream = Some(tx);
        let held: Vec<Value> = session.pending.drain(..).collect();
        session.unasked(held);
        rx
    };
    super::sse::event_stream(rx)
}

async fn http_delete(state: HttpState, request: loopback_http::Request) -> loopback_http::Response {
    use loopback_http::{StatusCode, response};
    let sid = request
        .headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok());
    let removed = match (sid, state.sessions.lock()) {
        (Some(sid), Ok(mut sessions)) => sessions.remove(sid).is_some(),
        _ => false,
    };
    response::status(if removed {
        StatusCode::OK
    } else {
        StatusCode::NOT_FOUND
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(id: i64, method: &str, params: Value) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
    }

    #[test]
    fn pages_are_linked_by_cursors_and_drift_switches_the_catalog() {
        let mut script = Script {
            pages: generated_pages(5, 2),
            ..Script::default()
        };
        script.drift = Some(Drift {
            after_lists: 1,
            pages: vec![vec![echo_tool()]],
        });
        let mut s = Session::new(Arc::new(script), Arc::default());
        let Reply::Send(out) = s.handle(&req(1, "tools/list", json!({}))) else {
            panic!("hung")
        };
        assert_eq!(out[0]["result"]["nextCursor"], "page-1");
        assert_eq!(out[0]["result"]["tools"].as_array().unwrap().len(), 2);
        let Reply::Send(out) = s.handle(&req(2, "tools/list", json!({"cursor": "page-1"}))) else {
            panic!("hung")
        };
        // The second listing request is served from the drifted catalog (one page).
        assert_eq!(out[0]["error"]["code"], -32602);
    }

    #[test]
    fn unknown_versions_get_the_first_supported() {
        let mut s = Session::new(Arc::new(Script::default()), Arc::default());
        let Reply::Send(out) = s.handle(&req(
            1,
            "initialize",
            json!({"protocolVersion": "1900-01-01"}),
        )) else {
            panic!("hung")
        };
        assert_eq!(out[0]["result"]["protocolVersion"], "2025-11-25");
    }
}
