//! One MCP connection shared by many callers: the guard's connection to the server it
//! guards.
//!
//! [`Client`](super::client::Client) is one caller's: it reads the server only while it waits for its own answer.
//! The guard needs more: its client's requests (a `tools/list`, a `resources/read`) and its
//! own gate (the listing, the barriers, the call) go over the same connection, concurrently,
//! and what the server sends unasked must be read at once (a `list_changed` during one call
//! invalidates every other). So after the handshake the [`Client`](super::client::Client) is taken apart
//! ([`Client::into_parts`](super::client::Client::into_parts)) and its transport given to one task that owns it: it sends what
//! callers hand it, routes every response to the caller waiting for its id, counts every
//! `notifications/tools/list_changed` in arrival order (so a barrier's answer still proves
//! that everything before it was counted), answers server requests as [`Client`](super::client::Client) does
//! (sampling and elicitation refused and recorded), and hands the server's other
//! notifications to the guard's client.
//!
//! Every wait is bounded by the caller's budget; a caller that gives up tells the task to
//! forget its id and the server to cancel (`notifications/cancelled`). Memory is bounded:
//! at most [`MAX_PENDING`] requests in flight, a bounded queue to the guard's client (a full
//! one drops the notification: the guard has already counted what it needs).

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use super::REVISION_2026_07_28;
use super::client::{
    ClientError, ClientRecord, LIST_CHANGED, Rpc, Timeouts, answer_server_request, response_result,
    stamp_2026_meta,
};
use super::transport::{Shutdown, Transport, TransportError};

/// The most requests in flight on one upstream connection.
pub const MAX_PENDING: usize = 1024;

/// What the task is asked to do.
enum Cmd {
    /// Send a request and route its response to `reply`.
    Request {
        msg: Value,
        id: i64,
        reply: oneshot::Sender<Result<Value, ClientError>>,
    },
    /// Send a notification.
    Notify(Value),
    /// Stop waiting for this id.
    Forget(i64),
    /// Close the connection (the stdio ladder, or the HTTP session's DELETE).
    Close(oneshot::Sender<Shutdown>),
}

/// What every handle sees of the connection.
#[derive(Debug)]
struct Shared {
    next_id: AtomicI64,
    list_changed: AtomicU64,
    server_requests: Mutex<Vec<(String, bool)>>,
    closed: Mutex<Option<TransportError>>,
}

/// A handle on the shared connection (cheap to clone; every clone is the same connection).
#[derive(Debug, Clone)]
pub struct Upstream {
    tx: mpsc::Sender<Cmd>,
    shared: Arc<Shared>,
    timeouts: Timeouts,
    version: Option<String>,
    client_capabilities: Value,
}

impl Upstream {
    /// Start the task on a handshaken connection. What the server sends unasked, other than
    /// requests and the `list_changed` the guard counts first, goes to `downstream` (the
    /// guard's client), when given.
    pub fn start(
        transport: Transport,
        record: ClientRecord,
        downstream: Option<mpsc::Sender<Value>>,
    ) -> Upstream {
        let shared = Arc::new(Shared {
            next_id: AtomicI64::new(record.next_id),
            list_changed: AtomicU64::new(record.list_changed),
            server_requests: Mutex::new(
                record
                    .server_requests
                    .iter()
                    .map(|r| (r.method.clone(), r.excluded))
                    .collect(),
            ),
            closed: Mutex::new(None),
        });
        let (tx, rx) = mpsc::channel(256);
        tokio::spawn(run(
            transport,
            rx,
            shared.clone(),
            downstream,
            record.timeouts.request,
        ));
        Upstream {
            tx,
            shared,
            timeouts: record.timeouts,
            version: record.version,
            client_capabilities: record.client_capabilities,
        }
    }

    /// The timeouts.
    pub fn timeouts(&self) -> Timeouts {
        self.timeouts
    }

    /// How many server requests were answered so far.
    pub fn server_request_count(&self) -> usize {
        self.shared.server_requests.lock().map_or(0, |r| r.len())
    }

    /// The excluded server requests answered since the `from`-th server request.
    pub fn excluded_since(&self, from: usize) -> Vec<String> {
        self.shared
            .server_requests
            .lock()
            .map(|r| {
                r.iter()
                    .skip(from)
                    .filter(|(_, ex)| *ex)
                    .map(|(m, _)| m.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Send `msg` (a request whose `id` this replaces) and wait at most `budget` for the
    /// response; the whole response message (with the upstream id). On a timeout the server
    /// is told to cancel.
    pub async fn exchange(
        &self,
        mut msg: Value,
        method: &str,
        budget: Duration,
    ) -> Result<Value, ClientError> {
        if let Some(e) = self.shared.closed.lock().ok().and_then(|c| c.clone()) {
            return Err(ClientError::Transport(e));
        }
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        msg["id"] = json!(id);
        let (reply, rx) = oneshot::channel();
        let gone = || {
            ClientError::Transport(TransportError::Closed {
                how: "the guard's upstream connection ended".into(),
                stderr: "(none)".into(),
            })
        };
        self.tx
            .send(Cmd::Request { msg, id, reply })
            .await
            .map_err(|_| gone())?;
        match tokio::time::timeout(budget, rx).await {
            Ok(Ok(r)) => r,
            Ok(Err(_)) => Err(gone()),
            Err(_) => {
                let _ = self.tx.send(Cmd::Forget(id)).await;
                let _ = self
                    .tx
                    .send(Cmd::Notify(json!({
                        "jsonrpc": "2.0",
                        "method": "notifications/cancelled",
                        "params": {"requestId": id, "reason": "timeout"},
                    })))
                    .await;
                Err(ClientError::Timeout {
                    method: method.into(),
                    after: budget,
                })
            }
        }
    }

    /// A request of toolcert's own: params stamped for 2026-07-28; the `result` object.
    pub async fn request(
        &self,
        method: &str,
        mut params: Value,
        budget: Duration,
    ) -> Result<Value, ClientError> {
        if self.version.as_deref() == Some(REVISION_2026_07_28) {
            stamp_2026_meta(&mut params, &self.client_capabilities);
        }
        let msg = json!({"jsonrpc": "2.0", "id": 0, "method": method, "params": params});
        let response = self.exchange(msg, method, budget).await?;
        response_result(response, method)
    }

    /// Send a notification (best effort: a closed connection drops it).
    pub async fn notify(&self, msg: Value) {
        let _ = self.tx.send(Cmd::Notify(msg)).await;
    }

    /// Close the connection, bounded by the transport's shutdown ladder.
    pub async fn close(&self) -> Shutdown {
        let (reply, rx) = oneshot::channel();
        if self.tx.send(Cmd::Close(reply)).await.is_err() {
            return Shutdown::AlreadyExited;
        }
        rx.await.unwrap_or(Shutdown::AlreadyExited)
    }
}

impl Rpc for Upstream {
    fn call(
        &mut self,
        method: &str,
        params: Value,
        budget: Duration,
    ) -> impl std::future::Future<Output = Result<Value, ClientError>> + Send {
        let this = self.clone();
        let method = method.to_string();
        async move { this.request(&method, params, budget).await }
    }
    fn list_changed_seq(&self) -> u64 {
        self.shared.list_changed.load(Ordering::SeqCst)
    }
    fn excluded_requests(&self) -> Vec<String> {
        self.excluded_since(0)
    }
    fn revision(&self) -> Option<String> {
        self.version.clone()
    }
    fn request_budget(&self) -> Duration {
        self.timeouts.request
    }
}

/// The task that owns the transport.
async fn run(
    mut transport: Transport,
    mut rx: mpsc::Receiver<Cmd>,
    shared: Arc<Shared>,
    downstream: Option<mpsc::Sender<Value>>,
    request_budget: Duration,
) {
    let mut pending: HashMap<i64, oneshot::Sender<Result<Value, ClientError>>> = HashMap::new();
    let fail_all = |pending: &mut HashMap<i64, oneshot::Sender<Result<Value, ClientError>>>,
                    e: &TransportError| {
        for (_, p) in pending.drain() {
            let _ = p.send(Err(ClientError::Transport(e.clone())));
        }
    };
    loop {
        // Far enough that only a command or a message ends the wait.
        let idle = Instant::now() + Duration::from_secs(3600);
        tokio::select! {
            cmd = rx.recv() => match cmd {
                None => {
                    transport.close().await;
                    return;
                }
                Some(Cmd::Request { msg, id, reply }) => {
                    if pending.len() >= MAX_PENDING {
                        let _ = reply.send(Err(ClientError::Protocol {
                            method: "(any)".into(),
                            what: format!("more than {MAX_PENDING} requests in flight on the guard's connection"),
                        }));
                        continue;
                    }
                    pending.insert(id, reply);
                    if let Err(e) = transport.send(&msg, Instant::now() + request_budget).await
                        && let Some(p) = pending.remove(&id)
                    {
                        let _ = p.send(Err(ClientError::Transport(e)));
                    }
                }
                Some(Cmd::Notify(msg)) => {
                    let _ = transport.send(&msg, Instant::now() + request_budget).await;
                }
                Some(Cmd::Forget(id)) => {
                    pending.remove(&id);
                }
                Some(Cmd::Close(reply)) => {
                    let e = TransportError::Closed {
                        how: "the guard closed the connection".into(),
                        stderr: "(none)".into(),
                    };
                    fail_all(&mut pending, &e);
                    if let Ok(mut c) = shared.closed.lock() {
                        *c = Some(e);
                    }
                    let _ = reply.send(transport.close().await);
                    return;
                }
            },
            msg = transport.recv(idle) => match msg {
                Ok(None) => {}
                Ok(Some(m)) => route(m, &mut transport, &mut pending, &shared, &downstream, request_budget).await,
                Err(e) => {
                    fail_all(&mut pending, &e);
                    if let Ok(mut c) = shared.closed.lock() {
                        *c = Some(e);
                    }
                    // Keep serving commands (each now fails at once) until the handles go.
                    while let Some(cmd) = rx.recv().await {
                        if let Cmd::Close(reply) = cmd {
                            let _ = reply.send(transport.close().await);
                            return;
                        }
                    }
                    transport.close().await;
                    return;
                }
            },
        }
    }
}

/// One message from the server.
async fn route(
    msg: Value,
    transport: &mut Transport,
    pending: &mut HashMap<i64, oneshot::Sender<Result<Value, ClientError>>>,
    shared: &Shared,
    downstream: &Option<mpsc::Sender<Value>>,
    request_budget: Duration,
) {
    let method = msg
        .get("method")
        .and_then(Value::as_str)
        .map(str::to_string);
    match (method, msg.get("id").cloned()) {
        // A response: to the caller waiting for its id (one nobody waits for is dropped).
        (None, Some(id)) => {
            if let Some(p) = id.as_i64().and_then(|i| pending.remove(&i)) {
                let _ = p.send(Ok(msg));
            }
        }
        (None, None) => {}
        // A server request: answered here, never forwarded (§4.10.6).
        (Some(method), Some(id)) => {
            let (reply, excluded) = answer_server_request(&method, &id);
            if let Ok(mut r) = shared.server_requests.lock()
                && r.len() < 10_000
            {
                r.push((method, excluded));
            }
            let _ = transport
                .send(&reply, Instant::now() + request_budget)
                .await;
        }
        // A notification: counted in arrival order, then passed on to the guard's client.
        (Some(method), None) => {
            if method == LIST_CHANGED {
                shared.list_changed.fetch_add(1, Ordering::SeqCst);
            }
            if let Some(d) = downstream {
                let _ = d.try_send(msg);
            }
        }
    }
}
