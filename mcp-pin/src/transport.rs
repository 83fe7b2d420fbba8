//! How JSON-RPC messages reach an MCP server and come back: a spawned command's stdio
//! (newline-delimited JSON), Streamable HTTP on loopback (POST, answered by JSON or by an SSE
//! stream; an optional GET stream for the server's own messages), or an in-process pipe to
//! toolcert's double.
//!
//! Whatever a server sends, a connection holds at most [`Limits`]: one message's size, a
//! number of messages, a number of bytes. Every received message is parsed with
//! [`toolcert_base::canonical::parse_ijson`], so a duplicate member name anywhere is an error, never
//! silently collapsed, and so is a number RFC 8785 could not canonicalize without losing it,
//! and so is text that is not UTF-8, on every transport. Every wait takes a deadline. Stopping
//! a spawned server is the bounded ladder MCP describes: close its stdin, wait, SIGTERM (to
//! its process group), wait, SIGKILL.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use toolcert_base::canonical::{IJsonError, parse_ijson};

/// Bounds on what one connection accepts from a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The largest single message (one stdio line, one SSE event, one JSON body): 4 MiB.
    pub max_message_bytes: usize,
    /// The most messages a server may send on one connection: 20,000.
    pub max_messages: u64,
    /// The most bytes a server may send on one connection: 256 MiB.
    pub max_total_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_message_bytes: 4 * 1024 * 1024,
            max_messages: 20_000,
            max_total_bytes: 256 * 1024 * 1024,
        }
    }
}

/// How long each step of stopping a spawned server may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShutdownBudget {
    /// After its stdin is closed, before SIGTERM.
    pub after_eof: Duration,
    /// After SIGTERM, before SIGKILL.
    pub after_term: Duration,
    /// After SIGKILL, before giving up on reaping it.
    pub after_kill: Duration,
}

impl Default for ShutdownBudget {
    fn default() -> Self {
        ShutdownBudget {
            after_eof: Duration::from_millis(1000),
            after_term: Duration::from_millis(1000),
            after_kill: Duration::from_millis(2000),
        }
    }
}

/// How a connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Shutdown {
    /// The server exited when its stdin closed.
    ExitedOnEof,
    /// The server exited on SIGTERM.
    ExitedOnTerm,
    /// The server had to be killed with SIGKILL.
    Killed,
    /// The server had exited already.
    AlreadyExited,
    /// Not a process toolcert started (HTTP, in-process).
    NotAProcess,
}

/// Why a message could not be sent or received.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransportError {
    /// The server command could not be started.
    #[error("could not start the MCP server `{command}`: {reason}")]
    Start {
        /// The command line.
        command: String,
        /// The OS error.
        reason: String,
    },
    /// The server closed the connection (exited, closed stdout, ended the stream).
    #[error("the MCP server closed the connection ({how}); its stderr ends: {stderr}")]
    Closed {
        /// What happened.
        how: String,
        /// The last lines it wrote to stderr (stdio), or `(none)`.
        stderr: String,
    },
    /// One message exceeded [`Limits::max_message_bytes`].
    #[error(
        "the MCP server sent a message of more than {limit} bytes; toolcert reads at most {limit} bytes per message"
    )]
    TooLarge {
        /// The limit.
        limit: usize,
    },
    /// The server sent more than [`Limits::max_messages`] messages.
    #[error(
        "the MCP server sent more than {limit} messages on one connection (a flood); toolcert stopped reading"
    )]
    Flood {
        /// The limit.
        limit: u64,
    },
    /// The server sent more than [`Limits::max_total_bytes`] bytes.
    #[error(
        "the MCP server sent more than {limit} bytes on one connection; toolcert stopped reading"
    )]
    TooManyBytes {
        /// The limit.
        limit: u64,
    },
    /// A message was not JSON (or repeated a member name).
    #[error(
        "the MCP server sent something that is not a JSON-RPC message: {reason} (it begins {prefix:?}); a stdio server must write only JSON-RPC lines to stdout"
    )]
    NotJson {
        /// The parser's complaint.
        reason: String,
        /// The first bytes, for recognizing it.
        prefix: String,
    },
    /// A message held a number outside I-JSON (RFC 7493): refused, since its canonical form
    /// could hide a change (mcp-facts §6.2).
    #[error("the MCP server sent a message toolcert cannot compare exactly: {reason}")]
    NotIJson {
        /// Which number and why.
        reason: String,
    },
    /// Writing to the server failed or did not finish in time.
    #[error("sending to the MCP server failed: {0}")]
    Write(String),
    /// An HTTP exchange failed below MCP.
    #[error("HTTP request to the MCP server failed: {0}")]
    Http(String),
    /// The server answered an HTTP status MCP does not expect there.
    #[error("the MCP server answered HTTP {status}: {body}")]
    Status {
        /// The status code.
        status: u16,
        /// The start of the body.
        body: String,
    },
    /// HTTP 404 on a request carrying `Mcp-Session-Id`: the server ended the session (MCP:
    /// it answers 404 to every later request with that id, and does not process them).
    /// toolcert never re-initializes by itself: a new session starts with no record of what
    /// this one saw (a `list_changed` included), so a silent retry could revive a review.
    #[error(
        "the MCP server ended the session (HTTP 404 for the Mcp-Session-Id it issued); toolcert does not open a new session by itself: start over with a new connection (a new gate)"
    )]
    SessionExpired,
    /// The URL is not loopback.
    #[error(
        "`{url}` is not a loopback http:// URL: toolcert speaks MCP over HTTP only to 127.0.0.1, [::1] or localhost"
    )]
    NotLoopback {
        /// The URL given.
        url: String,
    },
}

type Incoming = Result<Value, TransportError>;

/// Counts what a server sent on one connection, shared by every reader of it.
#[derive(Debug, Default)]
struct Budget {
    messages: AtomicU64,
    bytes: AtomicU64,
}

impl Budget {
    /// Account for one received message of `len` bytes; an error once a limit is passed.
    fn take(&self, len: usize, limits: &Limits) -> Result<(), TransportError> {
        let n = self.messages.fetch_add(1, Ordering::Relaxed) + 1;
        if n > limits.max_messages {
            return Err(TransportError::Flood {
                limit: limits.max_messages,
            });
        }
        let b = self.bytes.fetch_add(len as u64, Ordering::Relaxed) + len as u64;
        if b > limits.max_total_bytes {
            return Err(TransportError::TooManyBytes {
                limit: limits.max_total_bytes,
            });
        }
        Ok(())
    }
}

/// Parse one received message strictly: UTF-8, no duplicate member names, I-JSON numbers.
fn decode(bytes: &[u8]) -> Incoming {
    let prefix = || String::from_utf8_lossy(&bytes[..bytes.len().min(60)]).into_owned();
    let text = std::str::from_utf8(bytes).map_err(|_| TransportError::NotJson {
        reason: "not UTF-8".into(),
        prefix: prefix(),
    })?;
    parse_ijson(text).map_err(|e| match e {
        IJsonError::Json(reason) => TransportError::NotJson {
            reason,
            prefix: prefix(),
        },
        number => TransportError::NotIJson {
            reason: number.to_string(),
        },
    })
}

/// The last lines a child wrote to stderr, each cut to 300 characters.
#[derive(Debug, Default)]
struct Tail(Vec<String>);

impl Tail {
    fn push(&mut self, line: &str) {
        let mut line: String = line.chars().take(300).collect();
        line.retain(|c| !c.is_control());
        self.0.push(line);
        if self.0.len() > 8 {
            self.0.remove(0);
        }
    }
    fn text(&self) -> String {
        if self.0.is_empty() {
            "(none)".into()
        } else {
            self.0.join(" | ")
        }
    }
}

/// A command that serves MCP on its stdio.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StdioCommand {
    /// Run through `sh -c 'exec LINE'`, or this argument vector when set.
    pub line: String,
    /// Run this program with these arguments instead of a shell line, when not empty.
    pub argv: Vec<String>,
    /// The server's environment beyond `PATH`: nothing else of toolcert's is passed on.
    pub env: Vec<(String, String)>,
}

impl StdioCommand {
    /// A shell command line.
    pub fn shell(line: impl Into<String>) -> StdioCommand {
        StdioCommand {
            line: line.into(),
            argv: Vec::new(),
            env: Vec::new(),
        }
    }

    /// A program and its arguments, run without a shell.
    pub fn argv(argv: Vec<String>) -> StdioCommand {
        StdioCommand {
            line: argv.join(" "),
            argv,
            env: Vec::new(),
        }
    }

    /// Add one environment variable.
    pub fn with_env(mut self, name: &str, value: &str) -> StdioCommand {
        self.env.push((name.to_string(), value.to_string()));
        self
    }
}

/// A credential: the value of the `Authorization` header sent to an HTTP server. It never
/// prints (its `Debug` is `[redacted]`), is never written to a snapshot, and is given to the
/// run's redactor.
#[derive(Clone, PartialEq, Eq)]
pub struct Credential(String);

impl Credential {
    /// Wrap a header value (e.g. `Bearer …`).
    pub fn new(value: impl Into<String>) -> Credential {
        Credential(value.into())
    }

    /// The header value, to send or to redact.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Credential([redacted])")
    }
}

/// Where an MCP server is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// Spawn this command and speak on its stdio.
    Stdio(StdioCommand),
    /// POST to this loopback URL.
    Http(String),
    /// POST to this loopback URL with this `Authorization` header.
    AuthorizedHttp(String, Credential),
    /// toolcert's double, in process (tests and benches).
    Double(super::double::InProcess),
}

impl Endpoint {
    /// `stdio` or `http`, as the snapshot records the transport.
    pub fn kind(&self) -> &'static str {
        match self {
            Endpoint::Stdio(_) => "stdio",
            Endpoint::Http(_) | Endpoint::AuthorizedHttp(..) => "http",
            Endpoint::Double(_) => "in-process",
        }
    }
}

enum Inner {
    Lines {
        writer: Option<Box<dyn AsyncWrite + Send + Unpin>>,
        child: Option<Box<Child>>,
        tasks: Vec<JoinHandle<()>>,
    },
    Http(Box<HttpConn>),
}

/// One open connection to an MCP server.
pub struct Transport {
    inner: Inner,
    inbox: mpsc::Receiver<Incoming>,
    stderr: Arc<Mutex<Tail>>,
    broken: Option<TransportError>,
    shutdown: ShutdownBudget,
}

impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.inner {
            Inner::Lines { .. } => "lines",
            Inner::Http(_) => "http",
        };
        f.debug_struct("Transport").field("kind", &kind).finish()
    }
}

impl Drop for Transport {
    fn drop(&mut self) {
        match &mut self.inner {
            Inner::Lines { tasks, child, .. } => {
                tasks.iter().for_each(|t| t.abort());
                if let Some(c) = child {
                    kill_group(c, libc::SIGKILL);
                }
            }
            Inner::Http(h) => h
                .tasks
                .lock()
                .map(|t| t.iter().for_each(|t| t.abort()))
                .unwrap_or(()),
        }
    }
}

/// Send `sig` to the child's process group (it leads one: spawned with `process_group(0)`).
fn kill_group(child: &Child, sig: i32) {
    if let Some(pid) = child.id() {
        // SAFETY: killpg only sends a signal to a process group we created; no memory is shared.
        unsafe {
            libc::killpg(pid as libc::pid_t, sig);
        }
    }
}

async fn read_lines<R: AsyncRead + Unpin>(
    pipe: R,
    tx: mpsc::Sender<Incoming>,
    limits: Limits,
    stderr: Arc<Mutex<Tail>>,
) {
    let budget = Budget::default();
    let mut reader = BufReader::with_capacity(64 * 1024, pipe);
    let mut line: Vec<u8> = Vec::new();
    let closed = |how: &str| TransportError::Closed {
        how: how.to_string(),
        stderr: stderr.lock().map(|t| t.text()).unwrap_or_default(),
    };
    loop {
        let buf = match reader.fill_buf().await {
            Ok(b) => b,
            Err(e) => {
                let _ = tx.send(Err(closed(&format!("reading failed: {e}")))).await;
                return;
            }
        };
        if buf.is_empty() {
            // Give the stderr drain a moment, so the reason is in the error.
            tokio::time::sleep(Duration::from_millis(30)).await;
            let _ = tx.send(Err(closed("end of its stdout"))).await;
            return;
        }
        let (take, complete) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (i, true),
            None => (buf.len(), false),
        };
        if line.len() + take > limits.max_message_bytes {
            let _ = tx
                .send(Err(TransportError::TooLarge {
                    limit: limits.max_message_bytes,
                }))
                .await;
            return;
        }
        line.extend_from_slice(&buf[..take]);
        reader.consume(if complete { take + 1 } else { take });
        if !complete {
            continue;
        }
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            line.clear();
            continue;
        }
        if let Err(e) = budget.take(line.len(), &limits) {
            let _ = tx.send(Err(e)).await;
            return;
        }
        let msg = decode(&line);
        line.clear();
        let fatal = msg.is_err();
        if tx.send(msg).await.is_err() || fatal {
            return;
        }
    }
}

async fn drain_stderr<R: AsyncRead + Unpin>(pipe: R, tail: Arc<Mutex<Tail>>) {
    let mut lines = BufReader::new(pipe);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        // A line is cut at 64 KiB so an endless stderr line cannot grow memory.
        match (&mut lines)
            .take(64 * 1024)
            .read_until(b'\n', &mut buf)
            .await
        {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                if let Ok(mut t) = tail.lock() {
                    t.push(String::from_utf8_lossy(&buf).trim_end());
                }
            }
        }
    }
}

use tokio::io::AsyncReadExt as _;

impl Transport {
    /// Open a connection to `endpoint`.
    pub async fn open(
        endpoint: &Endpoint,
        limits: Limits,
        shutdown: ShutdownBudget,
    ) -> Result<Transport, TransportError> {
        match endpoint {
            Endpoint::Stdio(cmd) => Transport::spawn(cmd, limits, shutdown),
            Endpoint::Http(url) => Transport::http(url, limits, None),
            Endpoint::AuthorizedHttp(url, c) => Transport::http(url, limits, Some(c.clone())),
            Endpoint::Double(double) => {
                let (r, w) = double.connect();
                Ok(Transport::lines(r, w, limits))
            }
        }
    }

    /// Spawn `cmd` with a scrubbed environment and speak MCP on its stdio.
    pub fn spawn(
        cmd: &StdioCommand,
        limits: Limits,
        shutdown: ShutdownBudget,
    ) -> Result<Transport, TransportError> {
        let mut command = if cmd.argv.is_empty() {
            let mut c = Command::new("sh");
            c.arg("-c").arg(format!("exec {}", cmd.line));
            c
        } else {
            let mut c = Command::new(&cmd.argv[0]);
            c.args(&cmd.argv[1..]);
            c
        };
        command.env_clear();
        command.env(
            "PATH",
            std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into()),
        );
        for (k, v) in &cmd.env {
            command.env(k, v);
        }
        command
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = command.spawn().map_err(|e| TransportError::Start {
            command: cmd.line.clone(),
            reason: e.to_string(),
        })?;
        let stderr = Arc::new(Mutex::new(Tail::default()));
        let (tx, inbox) = mpsc::channel(64);
        let mut tasks = Vec::new();
        if let Some(err) = child.stderr.take() {
            tasks.push(tokio::spawn(drain_stderr(err, stderr.clone())));
        }
        let stdout = child.stdout.take().ok_or_else(|| TransportError::Start {
            command: cmd.line.clone(),
            reason: "its stdout could not be read".into(),
        })?;
        tasks.push(tokio::spawn(read_lines(stdout, tx, limits, stderr.clone())));
        let writer = child
            .stdin
            .take()
            .map(|w| Box::new(w) as Box<dyn AsyncWrite + Send + Unpin>);
        Ok(Transport {
            inner: Inner::Lines {
                writer,
                child: Some(Box::new(child)),
                tasks,
            },
            inbox,
            stderr,
            broken: None,
            shutdown,
        })
    }

    /// Newline-delimited JSON-RPC over any byte pipe (the in-process double).
    pub fn lines<R, W>(read: R, write: W, limits: Limits) -> Transport
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let stderr = Arc::new(Mutex::new(Tail::default()));
        let (tx, inbox) = mpsc::channel(64);
        let task = tokio::spawn(read_lines(read, tx, limits, stderr.clone()));
        Transport {
            inner: Inner::Lines {
                writer: Some(Box::new(write)),
                child: None,
                tasks: vec![task],
            },
            inbox,
            stderr,
            broken: None,
            shutdown: ShutdownBudget::default(),
        }
    }

    /// Streamable HTTP to a loopback URL, with an `Authorization` header when given.
    pub fn http(
        url: &str,
        limits: Limits,
        authorization: Option<Credential>,
    ) -> Result<Transport, TransportError> {
        let (tx, inbox) = mpsc::channel(64);
        let mut conn = HttpConn::new(url, limits, tx)?;
        conn.authorization = authorization;
        Ok(Transport {
            inner: Inner::Http(Box::new(conn)),
            inbox,
            stderr: Arc::new(Mutex::new(Tail::default())),
            broken: None,
            shutdown: ShutdownBudget::default(),
        })
    }

    /// Whether this is an HTTP connection.
    pub fn is_http(&self) -> bool {
        matches!(self.inner, Inner::Http(_))
    }

    /// Set the `MCP-Protocol-Version` header sent on later HTTP requests (no-op on stdio).
    pub fn set_protocol_version(&mut self, version: &str) {
        if let Inner::Http(h) = &mut self.inner {
            h.version = Some(version.to_string());
        }
    }

    /// Open the optional GET stream for the server's own messages (HTTP only). Returns
    /// whether the server offers one (stdio: `false`, there is only the one stream). 404 for
    /// the session it issued is [`TransportError::SessionExpired`].
    pub async fn open_server_stream(&mut self, deadline: Instant) -> Result<bool, TransportError> {
        match &mut self.inner {
            Inner::Http(h) => h.listen(deadline).await,
            Inner::Lines { .. } => Ok(false),
        }
    }

    /// The last lines a spawned server wrote to stderr.
    pub fn stderr_tail(&self) -> String {
        self.stderr.lock().map(|t| t.text()).unwrap_or_default()
    }

    /// Send one message, finishing by `deadline`.
    pub async fn send(&mut self, msg: &Value, deadline: Instant) -> Result<(), TransportError> {
        if let Some(e) = &self.broken {
            return Err(e.clone());
        }
        match &mut self.inner {
            Inner::Lines { writer, .. } => {
                let Some(w) = writer.as_mut() else {
                    return Err(TransportError::Write("stdin is closed".into()));
                };
                let mut line =
                    serde_json::to_vec(msg).map_err(|e| TransportError::Write(e.to_string()))?;
                line.push(b'\n');
                let write = async {
                    w.write_all(&line).await?;
                    w.flush().await
                };
                match tokio::time::timeout_at(deadline.into(), write).await {
                    Ok(Ok(())) => Ok(()),
                    Ok(Err(e)) => Err(TransportError::Write(format!(
                        "{e}; its stderr ends: {}",
                        self.stderr.lock().map(|t| t.text()).unwrap_or_default()
                    ))),
                    Err(_) => Err(TransportError::Write(
                        "the server stopped reading its stdin (the write did not finish in time)"
                            .into(),
                    )),
                }
            }
            Inner::Http(h) => h.post(msg, deadline).await,
        }
    }

    /// The next message, `Ok(None)` when `deadline` passes first. An error is final: every
    /// later call returns it again.
    pub async fn recv(&mut self, deadline: Instant) -> Result<Option<Value>, TransportError> {
        if let Some(e) = &self.broken {
            return Err(e.clone());
        }
        match tokio::time::timeout_at(deadline.into(), self.inbox.recv()).await {
            Err(_) => Ok(None),
            Ok(Some(Ok(v))) => Ok(Some(v)),
            Ok(Some(Err(e))) => {
                self.broken = Some(e.clone());
                Err(e)
            }
            Ok(None) => {
                let e = TransportError::Closed {
                    how: "the connection ended".into(),
                    stderr: self.stderr_tail(),
                };
                self.broken = Some(e.clone());
                Err(e)
            }
        }
    }

    /// End the connection: for a spawned server, close stdin, wait, SIGTERM, wait, SIGKILL.
    pub async fn close(mut self) -> Shutdown {
        let budget = self.shutdown;
        match &mut self.inner {
            Inner::Lines { writer, child, .. } => {
                drop(writer.take());
                let Some(mut c) = child.take() else {
                    return Shutdown::NotAProcess;
                };
                if let Ok(Some(_)) = c.try_wait() {
                    return Shutdown::AlreadyExited;
                }
                if tokio::time::timeout(budget.after_eof, c.wait())
                    .await
                    .is_ok()
                {
                    return Shutdown::ExitedOnEof;
                }
                kill_group(&c, libc::SIGTERM);
                if tokio::time::timeout(budget.after_term, c.wait())
                    .await
                    .is_ok()
                {
                    kill_group(&c, libc::SIGKILL);
                    return Shutdown::ExitedOnTerm;
                }
                kill_group(&c, libc::SIGKILL);
                let _ = c.start_kill();
                let _ = tokio::time::timeout(budget.after_kill, c.wait()).await;
                Shutdown::Killed
            }
            Inner::Http(h) => {
                h.end_session().await;
                Shutdown::NotAProcess
            }
        }
    }

    /// Replace the shutdown budget (tests use short ones).
    pub fn set_shutdown_budget(&mut self, budget: ShutdownBudget) {
        self.shutdown = budget;
    }
}

/// Streamable HTTP to one loopback MCP endpoint.
struct HttpConn {
    client: reqwest::Client,
    url: reqwest::Url,
    session: Option<String>,
    version: Option<String>,
    tx: mpsc::Sender<Incoming>,
    tasks: Arc<Mutex<Vec<JoinHandle<()>>>>,
    limits: Limits,
    budget: Arc<Budget>,
    authorization: Option<Credential>,
}

/// Whether `url` is an http URL on a loopback address; `localhost` is pinned to 127.0.0.1.
fn loopback(url: &str) -> Result<(reqwest::Url, bool), TransportError> {
    let bad = || TransportError::NotLoopback {
        url: url.to_string(),
    };
    let parsed = reqwest::Url::parse(url).map_err(|_| bad())?;
    if parsed.scheme() != "http" {
        return Err(bad());
    }
    let host = parsed.host_str().ok_or_else(bad)?;
    let is_localhost = if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        let ip: std::net::Ipv6Addr = v6.parse().map_err(|_| bad())?;
        if !ip.is_loopback() {
            return Err(bad());
        }
        false
    } else if let Ok(ip) = host.parse::<std::net::Ipv4Addr>() {
        if !ip.is_loopback() {
            return Err(bad());
        }
        false
    } else if host.eq_ignore_ascii_case("localhost") {
        true
    } else {
        return Err(bad());
    };
    Ok((parsed, is_localhost))
}

impl HttpConn {
    fn new(
        url: &str,
        limits: Limits,
        tx: mpsc::Sender<Incoming>,
    ) -> Result<HttpConn, TransportError> {
        let (url, localhost) = loopback(url)?;
        let mut builder = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(2));
        if localhost {
            let port = url.port_or_known_default().unwrap_or(80);
            builder = builder.resolve(
                url.host_str().unwrap_or("localhost"),
                std::net::SocketAddr::from(([127, 0, 0, 1], port)),
            );
        }
        let client = builder
            .build()
            .map_err(|e| TransportError::Http(e.to_string()))?;
        Ok(HttpConn {
            client,
            url,
            session: None,
            version: None,
            tx,
            tasks: Arc::new(Mutex::new(Vec::new())),
            limits,
            budget: Arc::new(Budget::default()),
            authorization: None,
        })
    }

    fn headers(&self, req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let mut req = req;
        if let Some(s) = &self.session {
            req = req.header("Mcp-Session-Id", s);
        }
        if let Some(v) = &self.version {
            req = req.header("MCP-Protocol-Version", v);
        }
        if let Some(c) = &self.authorization {
            req = req.header("Authorization", c.expose());
        }
        req
    }

    fn spawn(&self, fut: impl std::future::Future<Output = ()> + Send + 'static) {
        let handle = tokio::spawn(fut);
        if let Ok(mut t) = self.tasks.lock() {
            t.retain(|t| !t.is_finished());
            t.push(handle);
        }
    }

    async fn post(&mut self, msg: &Value, deadline: Instant) -> Result<(), TransportError> {
        let body = serde_json::to_vec(msg).map_err(|e| TransportError::Write(e.to_string()))?;
        let is_request = msg.get("method").is_some() && msg.get("id").is_some();
        let is_initialize = msg.get("method").and_then(Value::as_str) == Some("initialize");
        let req = self.headers(
            self.client
                .post(self.url.clone())
                .header("Content-Type", "application/json")
                .header("Accept", "application/json, text/event-stream")
                .body(body),
        );
        let resp = match tokio::time::timeout_at(deadline.into(), req.send()).await {
            Err(_) => {
                return Err(TransportError::Http(
                    "no HTTP response within the request budget".into(),
                ));
            }
            Ok(Err(e)) => return Err(TransportError::Http(error_chain(&e))),
            Ok(Ok(r)) => r,
        };
        let status = resp.status().as_u16();
        if is_initialize && let Some(sid) = resp.headers().get("mcp-session-id") {
            let ok = !sid.is_empty() && sid.as_bytes().iter().all(|b| (0x21..=0x7e).contains(b));
            if !ok {
                return Err(TransportError::Http(
                    "the Mcp-Session-Id the server issued is not visible ASCII (0x21-0x7E)".into(),
                ));
            }
            self.session = Some(String::from_utf8_lossy(sid.as_bytes()).into_owned());
        }
        if status == 404 && self.session.is_some() {
            return Err(TransportError::SessionExpired);
        }
        if !(200..300).contains(&status) {
            let text = bounded_text(resp, deadline, 600).await;
            return Err(TransportError::Status { status, body: text });
        }
        if status == 202 || !is_request {
            return Ok(());
        }
        let ctype = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        let tx = self.tx.clone();
        let limits = self.limits;
        let budget = self.budget.clone();
        let id = msg.get("id").cloned().unwrap_or(Value::Null);
        if ctype.starts_with("text/event-stream") {
            self.spawn(read_sse(resp, tx, limits, budget, Some(id)));
        } else if ctype.starts_with("application/json") {
            self.spawn(async move {
                let out = read_json_body(resp, limits, &budget).await;
                let _ = tx.send(out).await;
            });
        } else {
            return Err(TransportError::Http(format!(
                "a request was answered with Content-Type `{ctype}`; MCP allows application/json or text/event-stream"
            )));
        }
        Ok(())
    }

    async fn listen(&mut self, deadline: Instant) -> Result<bool, TransportError> {
        let req = self.headers(
            self.client
                .get(self.url.clone())
                .header("Accept", "text/event-stream"),
        );
        let resp = match tokio::time::timeout_at(deadline.into(), req.send()).await {
            Err(_) => return Ok(false),
            Ok(Err(e)) => return Err(TransportError::Http(error_chain(&e))),
            Ok(Ok(r)) => r,
        };
        let is_sse = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|c| c.to_ascii_lowercase().starts_with("text/event-stream"));
        if resp.status().as_u16() == 404 && self.session.is_some() {
            return Err(TransportError::SessionExpired);
        }
        // 405: the server offers no GET stream; anything else that is not an event stream
        // is taken the same way (its messages then come on the POST streams only).
        if resp.status().as_u16() == 200 && is_sse {
            let (tx, limits, budget) = (self.tx.clone(), self.limits, self.budget.clone());
            self.spawn(read_sse(resp, tx, limits, budget, None));
            Ok(true)
        } else {
            Ok(false)
        }
    }

    async fn end_session(&mut self) {
        if self.session.is_none() {
            return;
        }
        let req = self.headers(self.client.delete(self.url.clone()));
        let _ = tokio::time::timeout(Duration::from_secs(1), req.send()).await;
        if let Ok(t) = self.tasks.lock() {
            t.iter().for_each(|t| t.abort());
        }
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

async fn bounded_text(resp: reqwest::Response, deadline: Instant, max: usize) -> String {
    let mut stream = resp.bytes_stream();
    let mut out = Vec::new();
    while out.len() < max {
        match tokio::time::timeout_at(deadline.into(), stream.next()).await {
            Ok(Some(Ok(chunk))) => out.extend_from_slice(&chunk),
            _ => break,
        }
    }
    out.truncate(max);
    let mut text = String::from_utf8_lossy(&out).into_owned();
    text.retain(|c| !c.is_control());
    if text.is_empty() {
        "(empty body)".into()
    } else {
        text
    }
}

async fn read_json_body(resp: reqwest::Response, limits: Limits, budget: &Budget) -> Incoming {
    let mut stream = resp.bytes_stream();
    let mut body = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| TransportError::Http(error_chain(&e)))?;
        if body.len() + chunk.len() > limits.max_message_bytes {
            return Err(TransportError::TooLarge {
                limit: limits.max_message_bytes,
            });
        }
        body.extend_from_slice(&chunk);
    }
    budget.take(body.len(), &limits)?;
    decode(&body)
}

/// Read an SSE stream, sending every `message` event's data as a JSON-RPC message; stop
/// after the response to `until` (a request's id) when given.
async fn read_sse(
    resp: reqwest::Response,
    tx: mpsc::Sender<Incoming>,
    limits: Limits,
    budget: Arc<Budget>,
    until: Option<Value>,
) {
    let mut stream = resp.bytes_stream();
    let mut parser = SseParser::new(limits.max_message_bytes);
    while let Some(chunk) = stream.next().await {
        let chunk = match chunk {
            Ok(c) => c,
            Err(e) => {
                if until.is_some() {
                    let _ = tx.send(Err(TransportError::Http(error_chain(&e)))).await;
                }
                return;
            }
        };
        let events = match parser.feed(&chunk) {
            Ok(ev) => ev,
            Err(e) => {
                let _ = tx.send(Err(e)).await;
                return;
            }
        };
        for data in events {
            if let Err(e) = budget.take(data.len(), &limits) {
                let _ = tx.send(Err(e)).await;
                return;
            }
            let msg = decode(data.as_bytes());
            let done = match (&msg, &until) {
                (Ok(v), Some(id)) => v.get("id") == Some(id) && v.get("method").is_none(),
                (Err(_), _) => true,
                _ => false,
            };
            if tx.send(msg).await.is_err() || done {
                return;
            }
        }
    }
    if let Some(id) = until {
        let _ = tx
            .send(Err(TransportError::Closed {
                how: format!("the SSE stream answering request {id} ended without its response"),
                stderr: "(none)".into(),
            }))
            .await;
    }
}

/// An incremental Server-Sent Events parser: yields the `data` of each `message` event.
/// Events with empty data (a priming event) and other event types are skipped.
#[derive(Debug)]
pub struct SseParser {
    line: Vec<u8>,
    data: String,
    event: String,
    event_bytes: usize,
    max_event_bytes: usize,
    last_cr: bool,
}

impl SseParser {
    /// A parser that refuses events over `max_event_bytes`.
    pub fn new(max_event_bytes: usize) -> SseParser {
        SseParser {
            line: Vec::new(),
            data: String::new(),
            event: String::new(),
            event_bytes: 0,
            max_event_bytes,
            last_cr: false,
        }
    }

    /// Feed bytes; returns the data of every event completed by them.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<Vec<String>, TransportError> {
        let mut out = Vec::new();
        for &b in bytes {
            if b == b'\n' && self.last_cr {
                self.last_cr = false;
                continue;
            }
            self.last_cr = b == b'\r';
            if b == b'\n' || b == b'\r' {
                let line = std::mem::take(&mut self.line);
                if let Some(data) = self.line_done(&line)? {
                    out.push(data);
                }
                continue;
            }
            self.line.push(b);
            self.event_bytes += 1;
            if self.event_bytes > self.max_event_bytes {
                return Err(TransportError::TooLarge {
                    limit: self.max_event_bytes,
                });
            }
        }
        Ok(out)
    }

    fn line_done(&mut self, line: &[u8]) -> Result<Option<String>, TransportError> {
        if line.is_empty() {
            let data = std::mem::take(&mut self.data);
            let event = std::mem::take(&mut self.event);
            self.event_bytes = 0;
            let is_message = event.is_empty() || event == "message";
            return Ok((is_message && !data.is_empty()).then_some(data));
        }
        // Never replaced with U+FFFD: two servers sending different bytes would then read
        // the same (stdio refuses a line that is not UTF-8 too).
        let text = std::str::from_utf8(line).map_err(|_| TransportError::NotJson {
            reason: "an SSE line that is not UTF-8".into(),
            prefix: String::from_utf8_lossy(&line[..line.len().min(60)]).into_owned(),
        })?;
        let (field, value) = match text.find(':') {
            Some(0) => return Ok(None),
            Some(i) => {
                let v = &text[i + 1..];
                (&text[..i], v.strip_prefix(' ').unwrap_or(v))
            }
            None => (text, ""),
        };
        match field {
            "data" => {
                if !self.data.is_empty() {
                    self.data.push('\n');
                }
                self.data.push_str(value);
            }
            "event" => self.event = value.to_string(),
            _ => {}
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_parser_handles_priming_split_chunks_and_line_ends() {
        let mut p = SseParser::new(1024);
        assert!(p.feed(b"id: 1\ndata:\n\n").unwrap().is_empty());
        assert!(
            p.feed(b"event: message\r\ndata: {\"a\"")
                .unwrap()
                .is_empty()
        );
        assert_eq!(p.feed(b":1}\r\n\r\n").unwrap(), vec!["{\"a\":1}"]);
        assert_eq!(
            p.feed(b": comment\n\ndata: x\rdata: y\r\r").unwrap(),
            vec!["x\ny"]
        );
        assert!(p.feed(b"event: other\ndata: z\n\n").unwrap().is_empty());
        let mut small = SseParser::new(8);
        assert!(matches!(
            small.feed(b"data: 0123456789"),
            Err(TransportError::TooLarge { limit: 8 })
        ));
    }

    #[test]
    fn invalid_utf8_in_an_sse_event_is_refused_not_replaced() {
        // stdio refuses a line that is not UTF-8; an SSE event must be refused the same way,
        // never turned into U+FFFD (two servers sending different bytes would then compare
        // equal).
        let mut p = SseParser::new(1024);
        let err = p
            .feed(b"event: message\ndata: {\"a\":\"\xff\"}\n\n")
            .unwrap_err();
        assert!(
            matches!(err, TransportError::NotJson { ref reason, .. } if reason.contains("UTF-8")),
            "{err}"
        );
        // A multi-byte character split across chunks is still fine.
        let mut p = SseParser::new(1024);
        let e = "data: \"\u{e9}\"\n\n".as_bytes();
        assert!(p.feed(&e[..8]).unwrap().is_empty());
        assert_eq!(p.feed(&e[8..]).unwrap(), vec!["\"\u{e9}\""]);
    }

    #[test]
    fn only_loopback_http_urls_are_accepted() {
        for ok in [
            "http://127.0.0.1:3001/mcp",
            "http://127.8.0.1/mcp",
            "http://[::1]:80/mcp",
            "http://localhost:9/x",
        ] {
            assert!(loopback(ok).is_ok(), "{ok}");
        }
        for bad in [
            "https://127.0.0.1/mcp",
            "http://10.0.0.1/mcp",
            "http://example.com/mcp",
            "http://127.0.0.1.example.com/",
            "not a url",
        ] {
            assert!(
                matches!(loopback(bad), Err(TransportError::NotLoopback { .. })),
                "{bad}"
            );
        }
    }

    #[tokio::test]
    async fn oversized_lines_duplicate_keys_and_garbage_are_errors() {
        let limits = Limits {
            max_message_bytes: 64,
            ..Limits::default()
        };
        for (input, want) in [
            (format!("{}\n", "x".repeat(100)), "more than 64 bytes"),
            ("{\"a\":1,\"a\":2}\n".to_string(), "duplicate object key"),
            ("hello\n".to_string(), "not a JSON-RPC message"),
        ] {
            let (client, mut server) = tokio::io::duplex(1024);
            let (r, w) = tokio::io::split(client);
            let mut t = Transport::lines(r, w, limits);
            server.write_all(input.as_bytes()).await.unwrap();
            let err = t
                .recv(Instant::now() + Duration::from_secs(2))
                .await
                .unwrap_err();
            assert!(err.to_string().contains(want), "{err}");
        }
    }

    #[tokio::test]
    async fn a_flood_stops_at_the_message_cap() {
        let limits = Limits {
            max_messages: 10,
            ..Limits::default()
        };
        let (client, mut server) = tokio::io::duplex(1 << 16);
        let (r, w) = tokio::io::split(client);
        let mut t = Transport::lines(r, w, limits);
        tokio::spawn(async move {
            for _ in 0..100 {
                if server
                    .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n")
                    .await
                    .is_err()
                {
                    return;
                }
            }
            std::future::pending::<()>().await;
        });
        let deadline = Instant::now() + Duration::from_secs(2);
        let mut got = 0;
        let err = loop {
            match t.recv(deadline).await {
                Ok(Some(_)) => got += 1,
                Ok(None) => panic!("timed out"),
                Err(e) => break e,
            }
        };
        assert_eq!(got, 10);
        assert!(matches!(err, TransportError::Flood { limit: 10 }), "{err}");
    }
}
