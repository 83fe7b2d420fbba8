//! toolcert's own MCP client: JSON-RPC requests over a [`Transport`], the `initialize`
//! handshake of 2025-11-25 (or `server/discover` and per-request `_meta` for the stateless
//! 2026-07-28 revision), exhaustive `tools/list` pagination, and `tools/call`.
//!
//! Everything stays a [`serde_json::Value`]: a typed Tool model would drop members it does
//! not know (mcp-facts §2.4, §6.1), and the snapshot must keep them all.
//!
//! While it waits for a response the client also sees what the server sends unasked. Every
//! `notifications/tools/list_changed` is counted with a sequence number, so the gate and the
//! call can ask "did one arrive since this point?" (mcp-facts §4.5). Server requests are
//! answered deterministically so a server never stalls on them (§4.10.6): `ping` gets `{}`,
//! `roots/list` gets no roots, and everything else, sampling and elicitation included (both
//! excluded by §4.8.2), gets `-32601`; each is recorded as evidence.
//!
//! On 2026-07-28 a server sends `notifications/tools/list_changed` only on a
//! `subscriptions/listen` stream, so [`Client::initialize`] opens one (asking for
//! `toolsListChanged`) right after `server/discover` and waits for its acknowledgment; without
//! it the `list_changed` rules could not see anything on that revision. The barrier there is a
//! `server/discover` round trip (there is no `ping`): on stdio it orders like a `ping` does.
//!
//! [`Rpc`] is what the gate needs of a connection; [`list_tools`] and [`barrier`] are written
//! on it, so the guard's shared upstream connection runs the same listing as this client.

use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::transport::{Endpoint, Limits, Shutdown, ShutdownBudget, Transport, TransportError};
use super::{REVISION_2025_11_25, REVISION_2026_07_28};
use toolcert_base::canonical::kind;

/// The `notifications/tools/list_changed` method name.
pub const LIST_CHANGED: &str = "notifications/tools/list_changed";

/// How long the client waits, step by step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// One request (initialize, one tools/list page, ping).
    pub request: Duration,
    /// One tools/call (`toolcert mcp call --call-timeout`, at most [`MAX_CALL_TIMEOUT`]).
    pub call: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            request: Duration::from_secs(10),
            call: DEFAULT_CALL_TIMEOUT,
        }
    }
}

/// The `tools/call` budget when none is given: 30 s.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// The longest `tools/call` budget toolcert accepts: 1 hour. A call that outlives its budget
/// is `indeterminate` and never retried, so a budget is a promise to stop waiting, not a
/// retry interval.
pub const MAX_CALL_TIMEOUT: Duration = Duration::from_secs(3600);

/// The most `tools/list` pages a listing follows before it fails.
pub const MAX_PAGES: usize = 1000;

/// Why an MCP exchange failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ClientError {
    /// The transport failed (closed, flood, oversize, not JSON, HTTP).
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// No response in time.
    #[error("the MCP server did not answer `{method}` within {after:?}")]
    Timeout {
        /// The request's method.
        method: String,
        /// The budget that passed.
        after: Duration,
    },
    /// A JSON-RPC error response.
    #[error("the MCP server answered `{method}` with JSON-RPC error {code}: {message}")]
    Rpc {
        /// The request's method.
        method: String,
        /// The error code.
        code: i64,
        /// The error message (cut to 300 characters).
        message: String,
    },
    /// The server broke the protocol (a malformed response, a result that is not an object).
    #[error("the MCP server broke the protocol answering `{method}`: {what}")]
    Protocol {
        /// The request's method.
        method: String,
        /// What was wrong.
        what: String,
    },
    /// The server negotiated a revision toolcert did not ask for.
    #[error("asked for MCP revision {asked}, the server negotiated {got}")]
    Version {
        /// The revision sent.
        asked: String,
        /// The revision answered.
        got: String,
    },
    /// A `nextCursor` repeated (the listing would never end).
    #[error("tools/list page {page} returned a cursor already seen: the server's pagination loops")]
    CursorLoop {
        /// The page (0-based) that repeated a cursor.
        page: usize,
    },
    /// More pages than [`MAX_PAGES`] (or the caller's cap).
    #[error("tools/list did not end within {max} pages")]
    TooManyPages {
        /// The cap.
        max: usize,
    },
}

/// What `initialize` (or `server/discover`) told the client.
#[derive(Debug, Clone, PartialEq)]
pub struct Initialized {
    /// The negotiated revision.
    pub protocol_version: String,
    /// The complete `serverInfo` object (`Value::Null` when the server sent none).
    pub server_info: Value,
    /// The complete `capabilities` object.
    pub capabilities: Value,
    /// `instructions`, when sent.
    pub instructions: Option<Value>,
}

impl Initialized {
    /// Whether the server declared `capabilities.tools.listChanged: true`.
    pub fn declares_list_changed(&self) -> bool {
        self.capabilities
            .pointer("/tools/listChanged")
            .and_then(Value::as_bool)
            == Some(true)
    }
}

/// A server → client request the client answered.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ServerRequest {
    /// Its method.
    pub method: String,
    /// Whether the method is excluded from the snapshot flow (sampling, elicitation: §4.8.2).
    pub excluded: bool,
    /// The list-changed sequence number when it arrived.
    pub at_seq: u64,
}

/// What one listing returned: the page results, each whole but without JSON-RPC framing.
#[derive(Debug, Clone, PartialEq)]
pub struct Listing {
    /// Every page's `result` object, in order.
    pub pages: Vec<Value>,
}

impl Listing {
    /// Every Tool object across the pages, in order.
    pub fn tools(&self) -> impl Iterator<Item = &Value> {
        self.pages
            .iter()
            .filter_map(|p| p.get("tools").and_then(Value::as_array))
            .flatten()
    }
}

/// What became of the `subscriptions/listen` stream (2026-07-28).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Listen {
    /// Not a 2026-07-28 connection (its `list_changed` needs no subscription).
    NotNeeded,
    /// The server acknowledged the stream and honours `toolsListChanged`.
    Acknowledged,
    /// The server acknowledged the stream but does not honour `toolsListChanged`: it will
    /// never announce a change of its tools.
    NotHonoured,
    /// The server refused `subscriptions/listen` (the JSON-RPC error code).
    Refused(i64),
    /// No acknowledgment within the request budget.
    NoAcknowledgment,
}

/// The method of the 2026-07-28 subscription stream.
pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";

/// The acknowledgment a server sends first on a `subscriptions/listen` stream.
pub const SUBSCRIPTIONS_ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";

/// What the gate needs of a connection: a request with a budget, and what arrived unasked.
/// [`Client`] is one; the guard's shared upstream connection is another.
pub trait Rpc: Send {
    /// One request, waiting at most `budget` for its response; the `result` object.
    fn call(
        &mut self,
        method: &str,
        params: Value,
        budget: Duration,
    ) -> impl std::future::Future<Output = Result<Value, ClientError>> + Send;
    /// How many `notifications/tools/list_changed` arrived so far on this connection.
    fn list_changed_seq(&self) -> u64;
    /// The methods of the excluded server requests (sampling, elicitation: §4.8.2) answered
    /// so far on this connection.
    fn excluded_requests(&self) -> Vec<String>;
    /// The negotiated revision, once initialized.
    fn revision(&self) -> Option<String>;
    /// The budget of one request.
    fn request_budget(&self) -> Duration;
}

/// Every `tools/list` page, following `nextCursor` until it is absent (§4.3.2), at most
/// `max_pages` pages; a repeated cursor is a loop (§4.10.4). Each page is the complete
/// `result` object, without JSON-RPC framing (§4.3.3). `first_page_only` exists for the
/// gate's mutant of that name and must not be used otherwise.
pub async fn list_tools<R: Rpc>(
    rpc: &mut R,
    max_pages: usize,
    first_page_only: bool,
) -> Result<Listing, ClientError> {
    let mut pages = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut cursor: Option<Value> = None;
    let budget = rpc.request_budget();
    loop {
        if pages.len() >= max_pages.min(MAX_PAGES) {
            return Err(ClientError::TooManyPages {
                max: max_pages.min(MAX_PAGES),
            });
        }
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let result = rpc.call("tools/list", params, budget).await?;
        if !result.get("tools").is_some_and(Value::is_array) {
            return Err(ClientError::Protocol {
                method: "tools/list".into(),
                what: format!("page {} has no `tools` array", pages.len()),
            });
        }
        let next = result.get("nextCursor").cloned();
        pages.push(result);
        match next {
            None | Some(Value::Null) => break,
            Some(Value::String(c)) => {
                if !seen.insert(c.clone()) {
                    return Err(ClientError::CursorLoop {
                        page: pages.len() - 1,
                    });
                }
                cursor = Some(Value::String(c));
            }
            Some(other) => {
                return Err(ClientError::Protocol {
                    method: "tools/list".into(),
                    what: format!("nextCursor is not a string: {other}"),
                });
            }
        }
        if first_page_only {
            break;
        }
    }
    Ok(Listing { pages })
}

/// A round trip that proves every message the server sent before answering it has been
/// read (stdio keeps order; over HTTP it rides the same stream). Used right before a
/// dispatch so a `list_changed` already sent is seen (§4.5.3). A JSON-RPC error answer (a
/// server without `ping`) still serves as the barrier. 2026-07-28 has no `ping`: there the
/// barrier is a `server/discover` round trip, which every server of that revision answers.
pub async fn barrier<R: Rpc>(rpc: &mut R) -> Result<(), ClientError> {
    let method = if rpc.revision().as_deref() == Some(REVISION_2026_07_28) {
        "server/discover"
    } else {
        "ping"
    };
    let budget = rpc.request_budget();
    match rpc.call(method, json!({}), budget).await {
        Ok(_) | Err(ClientError::Rpc { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// The `_meta` members every 2026-07-28 request carries (mcp-facts §3).
pub fn stamp_2026_meta(params: &mut Value, client_capabilities: &Value) {
    let Some(obj) = params.as_object_mut() else {
        return;
    };
    let meta = obj
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(meta) = meta.as_object_mut() {
        meta.insert(
            "io.modelcontextprotocol/protocolVersion".into(),
            json!(REVISION_2026_07_28),
        );
        meta.insert(
            "io.modelcontextprotocol/clientCapabilities".into(),
            client_capabilities.clone(),
        );
        meta.insert("io.modelcontextprotocol/clientInfo".into(), client_info());
    }
}

/// How toolcert answers a server → client request (never forwarded: §4.10.6): `ping` with
/// `{}`, `roots/list` with no roots, anything else (sampling and elicitation included) with
/// `-32601`. Returns the reply and whether the method is excluded by §4.8.2.
pub fn answer_server_request(method: &str, id: &Value) -> (Value, bool) {
    let excluded = method.starts_with("sampling/") || method.starts_with("elicitation/");
    let reply = match method {
        "ping" => json!({"jsonrpc": "2.0", "id": id, "result": {}}),
        "roots/list" => json!({"jsonrpc": "2.0", "id": id, "result": {"roots": []}}),
        _ => json!({"jsonrpc": "2.0", "id": id, "error": {
            "code": -32601,
            "message": format!("toolcert does not serve `{method}` (excluded from pinned MCP calls)"),
        }}),
    };
    (reply, excluded)
}

/// The response `msg` to a request of `method`: its `result` object, or the JSON-RPC error.
pub fn response_result(msg: Value, method: &str) -> Result<Value, ClientError> {
    if let Some(err) = msg.get("error") {
        let code = err.get("code").and_then(Value::as_i64).unwrap_or(0);
        let message = err
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("(no message)")
            .chars()
            .take(300)
            .collect();
        return Err(ClientError::Rpc {
            method: method.into(),
            code,
            message,
        });
    }
    // Take the result rather than copy it (a page of a large catalog is megabytes).
    let mut msg = msg;
    match msg.as_object_mut().and_then(|m| m.remove("result")) {
        Some(r @ Value::Object(_)) => Ok(r),
        Some(other) => Err(ClientError::Protocol {
            method: method.into(),
            what: format!("the result is not an object but {}", kind(&other)),
        }),
        None => Err(ClientError::Protocol {
            method: method.into(),
            what: "the response has no result".into(),
        }),
    }
}

/// One MCP connection.
#[derive(Debug)]
pub struct Client {
    transport: Transport,
    next_id: i64,
    timeouts: Timeouts,
    version: Option<String>,
    client_capabilities: Value,
    list_changed: u64,
    notifications: u64,
    server_requests: Vec<ServerRequest>,
    server_stream: bool,
    listen: Listen,
}

impl Rpc for Client {
    fn call(
        &mut self,
        method: &str,
        params: Value,
        budget: Duration,
    ) -> impl std::future::Future<Output = Result<Value, ClientError>> + Send {
        self.request_within(method, params, budget)
    }
    fn list_changed_seq(&self) -> u64 {
        self.list_changed
    }
    fn excluded_requests(&self) -> Vec<String> {
        self.server_requests
            .iter()
            .filter(|r| r.excluded)
            .map(|r| r.method.clone())
            .collect()
    }
    fn revision(&self) -> Option<String> {
        self.version.clone()
    }
    fn request_budget(&self) -> Duration {
        self.timeouts.request
    }
}

/// What a [`Client`] knew about its connection when it was taken apart ([`Client::into_parts`]).
#[derive(Debug, Clone)]
pub struct ClientRecord {
    /// The next request id.
    pub next_id: i64,
    /// The timeouts.
    pub timeouts: Timeouts,
    /// The negotiated revision.
    pub version: Option<String>,
    /// The client capabilities sent.
    pub client_capabilities: Value,
    /// `list_changed` seen so far.
    pub list_changed: u64,
    /// Server requests answered so far.
    pub server_requests: Vec<ServerRequest>,
}

/// The `clientInfo` toolcert sends.
pub fn client_info() -> Value {
    json!({"name": "toolcert", "version": crate::TOOLCERT_VERSION})
}

impl Client {
    /// Open a connection to `endpoint` (spawn the command, or prepare the HTTP client).
    pub async fn connect(
        endpoint: &Endpoint,
        limits: Limits,
        timeouts: Timeouts,
    ) -> Result<Client, ClientError> {
        let transport = Transport::open(endpoint, limits, ShutdownBudget::default()).await?;
        Ok(Client::over(transport, timeouts))
    }

    /// A client over an already open transport.
    pub fn over(transport: Transport, timeouts: Timeouts) -> Client {
        Client {
            transport,
            next_id: 1,
            timeouts,
            version: None,
            client_capabilities: json!({}),
            list_changed: 0,
            notifications: 0,
            server_requests: Vec::new(),
            server_stream: false,
            listen: Listen::NotNeeded,
        }
    }

    /// What became of the `subscriptions/listen` stream (2026-07-28).
    pub fn listen_state(&self) -> &Listen {
        &self.listen
    }

    /// The negotiated revision, once initialized.
    pub fn revision(&self) -> Option<&str> {
        self.version.as_deref()
    }

    /// The client capabilities sent.
    pub fn client_capabilities(&self) -> &Value {
        &self.client_capabilities
    }

    /// Take the open transport and the connection's record (the guard shares one connection
    /// between its calls and its client's own requests from here on).
    pub fn into_parts(self) -> (Transport, ClientRecord) {
        (
            self.transport,
            ClientRecord {
                next_id: self.next_id,
                timeouts: self.timeouts,
                version: self.version,
                client_capabilities: self.client_capabilities,
                list_changed: self.list_changed,
                server_requests: self.server_requests,
            },
        )
    }

    /// The timeouts in force.
    pub fn timeouts(&self) -> Timeouts {
        self.timeouts
    }

    /// How many `notifications/tools/list_changed` arrived so far on this connection.
    pub fn list_changed_seq(&self) -> u64 {
        self.list_changed
    }

    /// How many notifications of any kind arrived so far.
    pub fn notification_count(&self) -> u64 {
        self.notifications
    }

    /// Whether an HTTP server offered the GET stream for its own messages (stdio: false;
    /// there everything is on one ordered stream). When it did, a message on it has no order
    /// relative to the answers to POSTs, so [`Client::barrier`] orders only the POST stream.
    pub fn has_server_stream(&self) -> bool {
        self.server_stream
    }

    /// The server → client requests answered so far.
    pub fn server_requests(&self) -> &[ServerRequest] {
        &self.server_requests
    }

    /// The last lines a spawned server wrote to stderr (diagnostics only).
    pub fn stderr_tail(&self) -> String {
        self.transport.stderr_tail()
    }

    /// Handshake at `version` with these client capabilities. For 2025-11-25 (and older):
    /// `initialize`, then `notifications/initialized`. For 2026-07-28: `server/discover`,
    /// and every later request carries the version, capabilities and client info in `_meta`.
    /// A server that answers another revision is refused ([`ClientError::Version`]): the
    /// snapshot pins one revision and the gate requires it (§4.4.3).
    pub async fn initialize(
        &mut self,
        version: &str,
        client_capabilities: &Value,
    ) -> Result<Initialized, ClientError> {
        self.client_capabilities = client_capabilities.clone();
        if version == REVISION_2026_07_28 {
            self.version = Some(version.to_string());
            self.transport.set_protocol_version(version);
            let result = self.request("server/discover", json!({})).await?;
            let server_info = result
                .get("serverInfo")
                .or_else(|| result.pointer("/_meta/io.modelcontextprotocol~1serverInfo"))
                .cloned()
                .unwrap_or(Value::Null);
            let supported = result
                .get("supportedVersions")
                .and_then(Value::as_array)
                .is_none_or(|v| v.iter().any(|s| s.as_str() == Some(version)));
            if !supported {
                return Err(ClientError::Version {
                    asked: version.into(),
                    got: result["supportedVersions"].to_string(),
                });
            }
            self.listen = self.open_listen().await?;
            return Ok(Initialized {
                protocol_version: version.to_string(),
                server_info,
                capabilities: result.get("capabilities").cloned().unwrap_or(json!({})),
                instructions: result.get("instructions").cloned(),
            });
        }
        let params = json!({
            "protocolVersion": version,
            "capabilities": client_capabilities,
            "clientInfo": client_info(),
        });
        let result = self.request("initialize", params).await?;
        let got = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .ok_or_else(|| ClientError::Protocol {
                method: "initialize".into(),
                what: "the result has no protocolVersion string".into(),
            })?
            .to_string();
        if got != version {
            return Err(ClientError::Version {
                asked: version.into(),
                got,
            });
        }
        self.version = Some(got.clone());
        self.transport.set_protocol_version(&got);
        // Over HTTP the server's own messages come on an optional GET stream (405: none).
        // It is opened before `initialized` is sent: a server that emits list_changed while
        // handling `initialized` (and, like the TypeScript SDK without an event store, drops
        // what it cannot deliver) then has a stream to put it on, so it is seen.
        let deadline = Instant::now() + self.timeouts.request;
        self.server_stream = self.transport.open_server_stream(deadline).await?;
        self.notify("notifications/initialized", None).await?;
        Ok(Initialized {
            protocol_version: got,
            server_info: result.get("serverInfo").cloned().unwrap_or(Value::Null),
            capabilities: result.get("capabilities").cloned().unwrap_or(json!({})),
            instructions: result.get("instructions").cloned(),
        })
    }

    /// Open the 2026-07-28 `subscriptions/listen` stream for `toolsListChanged` and wait (one
    /// request budget) for its acknowledgment. The request stays open for the connection's
    /// life; everything on it is read as unasked traffic, so its `list_changed` are counted
    /// like any other.
    async fn open_listen(&mut self) -> Result<Listen, ClientError> {
        let id = self.next_id;
        self.next_id += 1;
        let mut params = json!({"notifications": {"toolsListChanged": true}});
        stamp_2026_meta(&mut params, &self.client_capabilities);
        let msg =
            json!({"jsonrpc": "2.0", "id": id, "method": SUBSCRIPTIONS_LISTEN, "params": params});
        let deadline = Instant::now() + self.timeouts.request;
        self.transport.send(&msg, deadline).await?;
        loop {
            let Some(msg) = self.transport.recv(deadline).await? else {
                return Ok(Listen::NoAcknowledgment);
            };
            if msg.get("method").and_then(Value::as_str) == Some(SUBSCRIPTIONS_ACKNOWLEDGED) {
                let honoured = msg
                    .pointer("/params/notifications/toolsListChanged")
                    .and_then(Value::as_bool)
                    == Some(true);
                return Ok(if honoured {
                    Listen::Acknowledged
                } else {
                    Listen::NotHonoured
                });
            }
            if msg.get("method").is_none() && msg.get("id") == Some(&json!(id)) {
                let code = msg
                    .pointer("/error/code")
                    .and_then(Value::as_i64)
                    .unwrap_or(0);
                return Ok(Listen::Refused(code));
            }
            self.unasked(msg).await?;
        }
    }

    /// The causal start-up barrier, for right after [`Client::initialize`] and before the
    /// first `tools/list`: one [`Client::barrier`] round trip. Returns how many
    /// `list_changed` arrived on the connection so far.
    ///
    /// On stdio (one ordered stream each way) the `ping` is read after
    /// `notifications/initialized`, so every message the server wrote before answering it
    /// (all it emitted while handling `initialized`, which is where servers announce tools
    /// registered at start-up, mcp-facts §5.3.4) has been read when the answer arrives. The
    /// notifications counted here were all read before the first `tools/list` request is
    /// sent: the server emitted each before it received that request, so the listing that
    /// follows already reflects whatever change they announce. They cannot describe a list
    /// the client has not read yet. A server that announces later (on a timer, after the
    /// ping) is not waited for: its notification lands after the listing began and refuses.
    ///
    /// Over Streamable HTTP the ping's answer orders only the POST stream; a notification
    /// on the optional GET stream has no order relative to it and may be counted later
    /// (where it refuses: fail closed).
    pub async fn startup_barrier(&mut self) -> Result<u64, ClientError> {
        self.barrier().await?;
        Ok(self.list_changed)
    }

    /// Read whatever the server sends until `deadline`, handling it as unasked traffic.
    pub async fn drain_until(&mut self, deadline: Instant) -> Result<(), ClientError> {
        while let Some(msg) = self.transport.recv(deadline).await? {
            self.unasked(msg).await?;
        }
        Ok(())
    }

    /// The [`barrier`] on this connection.
    pub async fn barrier(&mut self) -> Result<(), ClientError> {
        barrier(self).await
    }

    /// [`list_tools`] on this connection.
    pub async fn list_tools(
        &mut self,
        max_pages: usize,
        first_page_only: bool,
    ) -> Result<Listing, ClientError> {
        list_tools(self, max_pages, first_page_only).await
    }

    /// `tools/call`: the complete response `result` or the JSON-RPC error.
    pub async fn call_tool(&mut self, name: &str, arguments: &Value) -> Result<Value, ClientError> {
        let params = json!({"name": name, "arguments": arguments});
        let budget = self.timeouts.call;
        self.request_within("tools/call", params, budget).await
    }

    /// Send a notification.
    pub async fn notify(&mut self, method: &str, params: Option<Value>) -> Result<(), ClientError> {
        let mut msg = json!({"jsonrpc": "2.0", "method": method});
        if let Some(p) = params {
            msg["params"] = p;
        }
        let deadline = Instant::now() + self.timeouts.request;
        self.transport.send(&msg, deadline).await?;
        Ok(())
    }

    /// One request with the default request budget.
    pub async fn request(&mut self, method: &str, params: Value) -> Result<Value, ClientError> {
        let budget = self.timeouts.request;
        self.request_within(method, params, budget).await
    }

    /// One request, waiting at most `budget` for its response; the `result` object.
    pub async fn request_within(
        &mut self,
        method: &str,
        mut params: Value,
        budget: Duration,
    ) -> Result<Value, ClientError> {
        let id = self.next_id;
        self.next_id += 1;
        if self.version.as_deref() == Some(REVISION_2026_07_28) {
            stamp_2026_meta(&mut params, &self.client_capabilities);
        }
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let deadline = Instant::now() + budget;
        self.transport.send(&msg, deadline).await?;
        loop {
            let Some(msg) = self.transport.recv(deadline).await? else {
                // Tell the server to stop working on it (MCP: requests that time out SHOULD
                // be cancelled); best effort.
                let _ = self
                    .notify(
                        "notifications/cancelled",
                        Some(json!({"requestId": id, "reason": "timeout"})),
                    )
                    .await;
                return Err(ClientError::Timeout {
                    method: method.into(),
                    after: budget,
                });
            };
            let is_response = msg.get("method").is_none()
                && (msg.get("result").is_some() || msg.get("error").is_some());
            if !is_response {
                self.unasked(msg).await?;
                continue;
            }
            if msg.get("id") != Some(&json!(id)) {
                // A response to something else (or a lie about the id): not ours. An error
                // without an id (allowed in 2025-11-25) is taken as ours: nothing else is
                // outstanding on this connection.
                if msg.get("id").is_none_or(Value::is_null) && msg.get("error").is_some() {
                } else {
                    continue;
                }
            }
            return response_result(msg, method);
        }
    }

    /// Handle a message that is not the response being waited for.
    async fn unasked(&mut self, msg: Value) -> Result<(), ClientError> {
        let Some(method) = msg
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_string)
        else {
            return Ok(());
        };
        match msg.get("id") {
            None => {
                self.notifications += 1;
                if method == LIST_CHANGED {
                    self.list_changed += 1;
                }
                Ok(())
            }
            Some(id) => {
                let (reply, excluded) = answer_server_request(&method, id);
                self.server_requests.push(ServerRequest {
                    method: method.clone(),
                    excluded,
                    at_seq: self.list_changed,
                });
                // Bounded: a server that only sends requests is stopped by the message cap.
                if self.server_requests.len() > 1000 {
                    self.server_requests.remove(0);
                }
                let deadline = Instant::now() + self.timeouts.request;
                self.transport.send(&reply, deadline).await?;
                Ok(())
            }
        }
    }

    /// Close the connection (for a spawned server: EOF, SIGTERM, SIGKILL, each bounded).
    pub async fn close(self) -> Shutdown {
        self.transport.close().await
    }
}

/// The revision toolcert asks for when nothing else is said.
pub const DEFAULT_REVISION: &str = REVISION_2025_11_25;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::double::{InProcess, Script};
    use crate::transport::{Endpoint, StdioCommand};

    async fn connect(script: Script) -> Client {
        Client::connect(
            &Endpoint::Double(InProcess::new(script)),
            Limits::default(),
            Timeouts::default(),
        )
        .await
        .unwrap()
    }

    #[tokio::test]
    async fn the_stateless_revision_discovers_and_tags_every_request() {
        let script = Script {
            protocol_versions: vec![REVISION_2026_07_28.into()],
            ..Script::default()
        };
        let mut c = connect(script).await;
        let init = c.initialize(REVISION_2026_07_28, &json!({})).await.unwrap();
        assert_eq!(init.protocol_version, REVISION_2026_07_28);
        assert_eq!(init.server_info["name"], "toolcert-double");
        let listing = c.list_tools(10, false).await.unwrap();
        assert_eq!(listing.tools().count(), 1);
        // A 2025-11-25-only server has no server/discover.
        let mut old = connect(Script::default()).await;
        let err = old
            .initialize(REVISION_2026_07_28, &json!({}))
            .await
            .unwrap_err();
        assert!(
            matches!(err, ClientError::Rpc { code: -32601, .. }),
            "{err}"
        );
    }

    #[tokio::test]
    async fn a_server_answering_another_revision_is_refused() {
        let script = Script {
            protocol_versions: vec!["2025-06-18".into()],
            ..Script::default()
        };
        let err = connect(script)
            .await
            .initialize(REVISION_2025_11_25, &json!({}))
            .await
            .unwrap_err();
        assert_eq!(
            err,
            ClientError::Version {
                asked: "2025-11-25".into(),
                got: "2025-06-18".into()
            }
        );
    }

    #[tokio::test]
    async fn server_requests_are_answered_and_excluded_ones_recorded() {
        for (method, excluded) in [("roots/list", false), ("sampling/createMessage", true)] {
            let script = Script {
                request_after_initialized: Some(method.into()),
                ..Script::default()
            };
            let mut c = connect(script).await;
            c.initialize(REVISION_2025_11_25, &json!({})).await.unwrap();
            c.startup_barrier().await.unwrap();
            assert_eq!(
                c.server_requests(),
                [ServerRequest {
                    method: method.into(),
                    excluded,
                    at_seq: 0
                }]
            );
        }
    }

    #[tokio::test]
    async fn a_silent_server_times_out_with_a_typed_error() {
        let script = Script {
            hang_on: Some("initialize".into()),
            ..Script::default()
        };
        let mut c = Client::connect(
            &Endpoint::Double(InProcess::new(script)),
            Limits::default(),
            Timeouts {
                request: Duration::from_millis(200),
                ..Timeouts::default()
            },
        )
        .await
        .unwrap();
        let err = c
            .initialize(REVISION_2025_11_25, &json!({}))
            .await
            .unwrap_err();
        assert!(
            matches!(err, ClientError::Timeout { ref method, .. } if method == "initialize"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn shutdown_is_eof_then_sigterm_then_sigkill() {
        let budget = crate::transport::ShutdownBudget {
            after_eof: Duration::from_millis(200),
            after_term: Duration::from_millis(200),
            after_kill: Duration::from_millis(1000),
        };
        for (line, want) in [
            ("cat", Shutdown::ExitedOnEof),
            (
                "sh -c 'while :; do sleep 0.05; done'",
                Shutdown::ExitedOnTerm,
            ),
            (
                "sh -c 'trap \"\" TERM; while :; do sleep 0.05; done'",
                Shutdown::Killed,
            ),
        ] {
            let mut t =
                Transport::spawn(&StdioCommand::shell(line), Limits::default(), budget).unwrap();
            t.set_shutdown_budget(budget);
            let started = Instant::now();
            assert_eq!(t.close().await, want, "{line}");
            assert!(started.elapsed() < Duration::from_secs(3), "{line}");
        }
        let err = Transport::spawn(
            &StdioCommand::argv(vec!["/nonexistent/mcp".into()]),
            Limits::default(),
            budget,
        )
        .unwrap_err();
        assert!(matches!(err, TransportError::Start { .. }), "{err}");
    }
}
