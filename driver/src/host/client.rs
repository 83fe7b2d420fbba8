//! The HTTP client toolcert uses against a host, with every wait bounded.
//!
//! reqwest has no timeouts by default and honours proxy variables, so the client is built
//! with `no_proxy()`, a connect timeout, a per-read timeout, an overall deadline per request
//! and a cap on response bytes ([`Budgets::max_body_bytes`], for every body and every event
//! stream read). A transcript entry keeps at most
//! [`MAX_KEPT_BODY_BYTES`](toolcert_core::transcript::MAX_KEPT_BODY_BYTES) of a body; the observation
//! keeps all of it. A host that hangs, closes the connection or sends garbage
//! yields a [`TransportError`] (or a `$nonJson` body), never a panic or a stuck run.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::{Value, json};

use super::paths::WireMajor;
use super::tls::CaCerts;
use toolcert_core::transcript::Exchange;

/// Time and size budgets, scaled by `--timeout-scale`.
#[derive(Debug, Clone, Copy)]
pub struct Budgets {
    /// TCP connect.
    pub connect: Duration,
    /// Longest gap between two reads of a response.
    pub read: Duration,
    /// Whole request, body included.
    pub request: Duration,
    /// Largest response body read.
    pub max_body_bytes: usize,
}

impl Budgets {
    /// Default budgets multiplied by `scale`.
    pub fn scaled(scale: f64) -> Budgets {
        let scale = if scale.is_finite() && scale > 0.0 {
            scale
        } else {
            1.0
        };
        let s = |ms: f64| Duration::from_millis((ms * scale).round().max(1.0) as u64);
        Budgets {
            connect: s(2_000.0),
            read: s(5_000.0),
            request: s(10_000.0),
            max_body_bytes: 4 * 1024 * 1024,
        }
    }
}

impl Default for Budgets {
    fn default() -> Self {
        Budgets::scaled(1.0)
    }
}

/// Why no usable response arrived.
#[derive(Debug, Clone, thiserror::Error)]
pub enum TransportError {
    /// Connect failed (closed port, refused).
    #[error("could not connect to {url}: {message}")]
    Connect {
        /// URL.
        url: String,
        /// Cause.
        message: String,
    },
    /// No answer within the budget.
    #[error("no complete answer from {url} within {budget_ms} ms")]
    Timeout {
        /// URL.
        url: String,
        /// The budget that ran out.
        budget_ms: u128,
    },
    /// The body exceeded the cap.
    #[error("response from {url} exceeds the {cap} byte cap")]
    TooLarge {
        /// URL.
        url: String,
        /// The cap.
        cap: usize,
    },
    /// toolcert refused to send the request: its URL would leave the host (a path a host
    /// supplied that moves the request elsewhere), or the memory budget is spent.
    #[error("toolcert did not send a request to {url}: {reason}")]
    Refused {
        /// URL (credentials masked).
        url: String,
        /// Why.
        reason: String,
    },
    /// The run's memory budget is spent ([`toolcert_core::budget`]): the answer was not kept.
    #[error("{0}")]
    OverBudget(#[from] toolcert_core::budget::Exhausted),
    /// The connection broke mid-exchange or the request could not be built.
    #[error("exchange with {url} failed: {message}")]
    Broken {
        /// URL.
        url: String,
        /// Cause.
        message: String,
    },
}

/// A request to the host.
#[derive(Debug, Clone)]
pub struct HostRequest {
    /// Method.
    pub method: reqwest::Method,
    /// Absolute path (already prefixed for the wire major).
    pub path: String,
    /// Role whose bearer token is sent.
    pub role: Option<String>,
    /// Extra headers.
    pub headers: Vec<(String, String)>,
    /// JSON body.
    pub body: Option<Value>,
}

impl HostRequest {
    /// A GET.
    pub fn get(path: impl Into<String>) -> HostRequest {
        HostRequest {
            method: reqwest::Method::GET,
            path: path.into(),
            role: None,
            headers: Vec::new(),
            body: None,
        }
    }

    /// A POST with a JSON body.
    pub fn post(path: impl Into<String>, body: Value) -> HostRequest {
        HostRequest {
            method: reqwest::Method::POST,
            path: path.into(),
            role: None,
            headers: Vec::new(),
            body: Some(body),
        }
    }

    /// Authenticate as `role`.
    pub fn role(mut self, role: impl Into<String>) -> HostRequest {
        self.role = Some(role.into());
        self
    }

    /// Add a header.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> HostRequest {
        self.headers.push((name.into(), value.into()));
        self
    }
}

/// How a request sent with [`HostClient::send_abandoning`] ended.
#[derive(Debug, Clone)]
pub enum Sent {
    /// The whole answer came before the point.
    Answered(HostResponse),
    /// The point was reached first (what was seen): the request was dropped unanswered.
    Abandoned(String),
    /// Neither came within the request budget: the request was dropped then.
    Unreached,
}

/// A response from the host.
#[derive(Debug, Clone)]
pub struct HostResponse {
    /// Status code.
    pub status: u16,
    /// Headers, lowercase names (repeated headers joined with `, `).
    pub headers: BTreeMap<String, String>,
    /// Body: parsed JSON, `null` when empty, or `{"$nonJson": "<first 512 chars>"}`.
    pub body: Value,
    /// Size of the body as received, in bytes (at most [`Budgets::max_body_bytes`]).
    pub body_bytes: usize,
}

impl HostResponse {
    /// The observation form: `{status, headers, body}`.
    pub fn observation(&self) -> Value {
        json!({"status": self.status, "headers": self.headers, "body": self.body})
    }
}

/// A client bound to one host.
#[derive(Debug, Clone)]
pub struct HostClient {
    base_url: String,
    http: reqwest::Client,
    tokens: BTreeMap<String, String>,
    budgets: Budgets,
    wire: WireMajor,
    /// Whether `--ca-cert` roots replace the system's (for the hint on certificate errors).
    tls_roots_given: bool,
    /// The run's memory budget every kept answer is charged to, once a session sets it.
    budget: Option<std::sync::Arc<toolcert_core::budget::MemoryBudget>>,
}

impl HostClient {
    /// A client for `base_url` with per-role tokens; an https host must present a certificate
    /// from the system's roots.
    pub fn new(
        base_url: &str,
        tokens: BTreeMap<String, String>,
        budgets: Budgets,
    ) -> Result<HostClient, TransportError> {
        HostClient::new_with_ca_certs(base_url, tokens, budgets, &CaCerts::default())
    }

    /// A client for `base_url` with per-role tokens that trusts `ca_certs` (`--ca-cert`) instead
    /// of the system's roots when it has any.
    pub fn new_with_ca_certs(
        base_url: &str,
        tokens: BTreeMap<String, String>,
        budgets: Budgets,
        ca_certs: &CaCerts,
    ) -> Result<HostClient, TransportError> {
        let broken = |e: reqwest::Error| TransportError::Broken {
            url: base_url.to_string(),
            message: error_chain(&e),
        };
        // Tokens go to loopback only: the base URL is checked whole (no userinfo, a loopback
        // host), and the name `localhost` is resolved by toolcert, not the system's resolver.
        let base = super::loopback::parse_base_url(base_url, true).map_err(|e| {
            TransportError::Refused {
                url: super::loopback::masked(base_url),
                reason: e.to_string(),
            }
        })?;
        let builder = reqwest::Client::builder()
            .no_proxy()
            .connect_timeout(budgets.connect)
            .read_timeout(budgets.read)
            .redirect(reqwest::redirect::Policy::none())
            .resolve("localhost", std::net::SocketAddr::from(([127, 0, 0, 1], 0)));
        let http = ca_certs
            .apply(builder)
            .map_err(broken)?
            .build()
            .map_err(broken)?;
        Ok(HostClient {
            base_url: base.as_base(),
            http,
            tokens,
            budgets,
            wire: WireMajor::V2,
            tls_roots_given: !ca_certs.is_empty(),
            budget: None,
        })
    }

    /// Charge every answer this client (and each client made from it) keeps to `budget`.
    pub fn set_budget(&mut self, budget: std::sync::Arc<toolcert_core::budget::MemoryBudget>) {
        self.budget = Some(budget);
    }

    /// The run's memory budget, once set.
    pub fn budget(&self) -> Option<&std::sync::Arc<toolcert_core::budget::MemoryBudget>> {
        self.budget.as_ref()
    }

    /// Charge `bytes` kept to the run's budget (nothing to charge without one).
    pub(crate) fn charge(&self, bytes: usize) -> Result<(), TransportError> {
        match &self.budget {
            Some(b) => b.charge(bytes).map_err(TransportError::OverBudget),
            None => Ok(()),
        }
    }

    /// The same client (tokens, budgets, wire) for another base URL: a spawned host.
    pub fn with_base_url(&self, base_url: &str) -> HostClient {
        HostClient {
            base_url: base_url.trim_end_matches('/').to_string(),
            ..self.clone()
        }
    }

    /// The host's base URL.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The wire major in use.
    pub fn wire(&self) -> WireMajor {
        self.wire
    }

    /// Set the wire major (after discovery).
    pub fn set_wire(&mut self, wire: WireMajor) {
        self.wire = wire;
    }

    /// The budgets in force.
    pub fn budgets(&self) -> Budgets {
        self.budgets
    }

    /// The underlying HTTP client (no proxy, connect and read timeouts set).
    pub(crate) fn http(&self) -> &reqwest::Client {
        &self.http
    }

    /// A role's token.
    pub(crate) fn token(&self, role: &str) -> Option<&str> {
        self.tokens.get(role).map(String::as_str)
    }

    /// Whether a role has a token.
    pub fn has_role(&self, role: &str) -> bool {
        self.tokens.contains_key(role)
    }

    /// The URL of `path` on the host; refused when it would not go where the base URL goes
    /// ([`super::loopback::same_origin`]): a path holding a host-supplied value such as
    /// `@198.51.100.7/x` must not move a request, and its token, off the host.
    pub(crate) fn url_for(&self, path: &str) -> Result<String, TransportError> {
        let url = format!("{}{}", self.base_url, path);
        if super::loopback::same_origin(&self.base_url, &url) {
            Ok(url)
        } else {
            Err(TransportError::Refused {
                url: super::loopback::masked(&url),
                reason: format!(
                    "the path {path:?} would send it off the host {}",
                    self.base_url
                ),
            })
        }
    }

    /// Send a request; returns the response (or transport error) and the transcript entry.
    pub async fn send(
        &self,
        step: &str,
        req: &HostRequest,
    ) -> (Result<HostResponse, TransportError>, Exchange) {
        let (builder, url, mut exchange) = match self.prepare(step, req) {
            Ok(prepared) => prepared,
            Err(refused) => {
                let (e, exchange) = *refused;
                return (Err(e), exchange);
            }
        };
        let started = Instant::now();
        let result = tokio::time::timeout(self.budgets.request, self.exchange(builder, &url)).await;
        exchange.elapsed_ms = started.elapsed().as_millis() as u64;
        let result = match result {
            Ok(r) => r,
            Err(_) => Err(TransportError::Timeout {
                url: url.clone(),
                budget_ms: self.budgets.request.as_millis(),
            }),
        };
        Self::record(&mut exchange, &result);
        (result, exchange)
    }

    /// Send a request and drop it (its connection with it) as soon as `point` resolves, unless
    /// the whole answer came first (MCP-14: a client that goes away while the host still owes
    /// the answer). `point` resolves with a description of what was seen; a point not reached
    /// within the request budget drops the request then, as [`Sent::Unreached`].
    pub async fn send_abandoning(
        &self,
        step: &str,
        req: &HostRequest,
        point: impl std::future::Future<Output = String>,
    ) -> (Result<Sent, TransportError>, Exchange) {
        let (builder, url, mut exchange) = match self.prepare(step, req) {
            Ok(prepared) => prepared,
            Err(refused) => {
                let (e, exchange) = *refused;
                return (Err(e), exchange);
            }
        };
        let started = Instant::now();
        let work = self.exchange(builder, &url);
        let point = tokio::time::timeout(self.budgets.request, point);
        tokio::pin!(work, point);
        // An answer complete at the same instant the point is reached counts as answered.
        let sent = tokio::select! {
            biased;
            result = &mut work => result.map(Sent::Answered),
            seen = &mut point => Ok(match seen {
                Ok(seen) => Sent::Abandoned(seen),
                Err(_) => Sent::Unreached,
            }),
        };
        exchange.elapsed_ms = started.elapsed().as_millis() as u64;
        match &sent {
            Ok(Sent::Answered(response)) => Self::record(&mut exchange, &Ok(response.clone())),
            Ok(Sent::Abandoned(seen)) => {
                exchange.transport_error = Some(format!(
                    "not a transport error: toolcert dropped the request after {} ms, once {seen} (the scenario's client goes away before the answer)",
                    exchange.elapsed_ms
                ));
            }
            Ok(Sent::Unreached) => {
                exchange.transport_error = Some(format!(
                    "not a transport error: toolcert dropped the request after {} ms, its point unreached and no answer within the request budget",
                    exchange.elapsed_ms
                ));
            }
            Err(e) => exchange.transport_error = Some(e.to_string()),
        }
        (sent, exchange)
    }

    /// The request builder, its URL and the transcript entry of a request; a request whose
    /// URL would leave the host is refused, with its transcript entry saying so.
    fn prepare(
        &self,
        step: &str,
        req: &HostRequest,
    ) -> Result<(reqwest::RequestBuilder, String, Exchange), Box<(TransportError, Exchange)>> {
        let mut exchange = Exchange {
            step: step.to_string(),
            method: req.method.to_string(),
            url: format!("{}{}", self.base_url, req.path),
            request_body: req.body.as_ref().map(kept_body),
            ..Exchange::default()
        };
        let url = match self.url_for(&req.path) {
            Ok(url) => url,
            Err(e) => {
                exchange.url = super::loopback::masked(&exchange.url);
                exchange.transport_error = Some(e.to_string());
                return Err(Box::new((e, exchange)));
            }
        };
        let mut builder = self.http.request(req.method.clone(), &url);
        let mut curl = format!("curl -sS -X {} '{}'", req.method, url);
        if let Some(role) = &req.role {
            let token = self.tokens.get(role).cloned().unwrap_or_default();
            builder = builder.bearer_auth(token);
            exchange
                .request_headers
                .insert("authorization".into(), json!("Bearer [redacted]"));
            curl.push_str(" -H \"Authorization: Bearer $TOKEN\"");
        }
        for (name, value) in &req.headers {
            builder = builder.header(name, value);
            exchange
                .request_headers
                .insert(name.to_ascii_lowercase(), json!(value));
            curl.push_str(&format!(" -H '{name}: {value}'"));
        }
        if let Some(body) = &req.body {
            builder = builder.json(body);
            curl.push_str(&format!(" -H 'content-type: application/json' -d '{body}'"));
        }
        exchange.curl = curl;
        Ok((builder, url, exchange))
    }

    /// Record an answer (or the transport error) in its transcript entry.
    fn record(exchange: &mut Exchange, result: &Result<HostResponse, TransportError>) {
        match result {
            Ok(resp) => {
                exchange.status = Some(resp.status);
                exchange.response_headers = resp
                    .headers
                    .iter()
                    .map(|(k, v)| (k.clone(), json!(v)))
                    .collect();
                exchange.response_body = Some(kept_body(&resp.body));
            }
            Err(e) => exchange.transport_error = Some(e.to_string()),
        }
    }

    async fn exchange(
        &self,
        builder: reqwest::RequestBuilder,
        url: &str,
    ) -> Result<HostResponse, TransportError> {
        let classify = |e: reqwest::Error| {
            if e.is_timeout() {
                TransportError::Timeout {
                    url: url.to_string(),
                    budget_ms: self.budgets.read.as_millis(),
                }
            } else if e.is_connect() {
                let mut message = error_chain(&e);
                // rustls' wording for a certificate that chains to no trusted root, a wrong
                // name or an expired one.
                if message.contains("invalid peer certificate") {
                    message.push_str(if self.tls_roots_given {
                        " (the host's certificate does not verify against the --ca-cert roots)"
                    } else {
                        " (for a host whose certificate comes from a private CA, pass it with --ca-cert FILE)"
                    });
                }
                TransportError::Connect {
                    url: url.to_string(),
                    message,
                }
            } else {
                TransportError::Broken {
                    url: url.to_string(),
                    message: error_chain(&e),
                }
            }
        };
        let response = builder.send().await.map_err(classify)?;
        let status = response.status().as_u16();
        let mut headers: BTreeMap<String, String> = BTreeMap::new();
        for (name, value) in response.headers() {
            let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
            headers
                .entry(name.as_str().to_ascii_lowercase())
                .and_modify(|v| {
                    v.push_str(", ");
                    v.push_str(&value);
                })
                .or_insert(value);
        }
        let mut stream = response.bytes_stream();
        let mut bytes = Vec::new();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(classify)?;
            if bytes.len() + chunk.len() > self.budgets.max_body_bytes {
                return Err(TransportError::TooLarge {
                    url: url.to_string(),
                    cap: self.budgets.max_body_bytes,
                });
            }
            bytes.extend_from_slice(&chunk);
        }
        self.charge(bytes.len())?;
        Ok(HostResponse {
            status,
            headers,
            body: parse_body(&bytes),
            body_bytes: bytes.len(),
        })
    }
}

/// What a transcript entry keeps of a body: the body itself up to
/// [`MAX_KEPT_BODY_BYTES`](toolcert_core::transcript::MAX_KEPT_BODY_BYTES) serialized, else its
/// truncated form (the response's observation keeps it whole).
fn kept_body(body: &Value) -> Value {
    toolcert_core::transcript::truncated(body, toolcert_core::transcript::MAX_KEPT_BODY_BYTES)
        .unwrap_or_else(|| body.clone())
}

/// Parse a body leniently for observation: JSON (duplicate keys rejected), `null` when empty,
/// else `{"$nonJson": prefix}` so checks fail with what was actually sent.
pub(crate) fn parse_body(bytes: &[u8]) -> Value {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Value::Null;
    }
    let text = String::from_utf8_lossy(bytes);
    // Refused before parsing: what would take far more memory parsed than it took to send.
    let (values, _) = toolcert_core::budget::shape_of(bytes);
    if values > toolcert_core::budget::MAX_BODY_VALUES {
        let prefix: String = text.chars().take(512).collect();
        return json!({"$nonJson": prefix, "$parseError": format!(
            "not parsed: the body holds more than {} JSON values, toolcert's bound for one answer",
            toolcert_core::budget::MAX_BODY_VALUES
        )});
    }
    match toolcert_base::canonical::parse_strict(&text) {
        Ok(v) => v,
        Err(e) => {
            let prefix: String = text.chars().take(512).collect();
            json!({"$nonJson": prefix, "$parseError": e.to_string()})
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

// Here, beside the response, and not with the observation type: observations are read
// offline (re-check, bundles), and the crate holding them knows no HTTP client.
impl From<&HostResponse> for toolcert_core::observation::HttpObservation {
    fn from(r: &HostResponse) -> toolcert_core::observation::HttpObservation {
        toolcert_core::observation::HttpObservation {
            status: r.status,
            headers: r.headers.clone(),
            body: r.body.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_parse_leniently_for_observation() {
        assert_eq!(parse_body(b""), Value::Null);
        assert_eq!(parse_body(b"{\"a\":1}"), json!({"a": 1}));
        let garbage = parse_body(b"<html>oops");
        assert_eq!(garbage["$nonJson"], "<html>oops");
        assert!(parse_body(b"{\"a\":1,\"a\":2}").get("$nonJson").is_some());
    }

    #[tokio::test]
    async fn a_closed_port_is_a_connect_error_and_a_silent_one_times_out() {
        // Closed port: bind, learn the port, drop the listener.
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let budgets = Budgets::scaled(0.1);
        let client = HostClient::new(
            &format!("http://127.0.0.1:{port}"),
            BTreeMap::new(),
            budgets,
        )
        .unwrap();
        let (r, ex) = client.send("s", &HostRequest::get("/x")).await;
        assert!(matches!(r, Err(TransportError::Connect { .. })), "{r:?}");
        assert!(ex.transport_error.is_some());

        // Accepts and never answers.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let hold = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((s, _)) = listener.accept().await {
                held.push(s);
            }
        });
        let client = HostClient::new(&format!("http://{addr}"), BTreeMap::new(), budgets).unwrap();
        let started = Instant::now();
        let (r, _) = client.send("s", &HostRequest::get("/x")).await;
        assert!(matches!(r, Err(TransportError::Timeout { .. })), "{r:?}");
        assert!(started.elapsed() < Duration::from_secs(3));
        hold.abort();
    }
}
