//! Invoking a tool: either the built-in no-op or an HTTP receiver on loopback
//! that plays the tool (toolcert extension).
//!
//! RFC 0064 §F Redaction: the receiver's body is read (bounded) but never
//! copied into any message — it may hold secrets the tool echoed back.

use std::time::{Duration, Instant};

use reqwest::Url;
use serde_json::Value;

use crate::base::tool_events::ToolErrorCode;

/// At most this much of a receiver's body is read.
pub const MAX_RECEIVER_BODY: usize = 1 << 20;

/// How long connecting to a receiver may take (bounded separately from the
/// per-call timeout so an unroutable address fails fast).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// The construction every outbound client of this host shares (tool
/// receivers, `ctx.http.safeFetch`): no proxy (a proxy from the environment
/// must not intercept loopback traffic, nor carry a guarded request
/// elsewhere), no redirects (a redirect could lead off loopback, or past
/// the SSRF guard), bounded connect time, and no TLS roots.
///
/// No roots: everything this host calls is a plain-HTTP loopback double
/// (the SSRF guard refuses `https`), so a TLS handshake could only be a
/// mistake and fails verification. It also keeps each client cheap: with
/// the platform's roots, every `build()` reads and parses the whole system
/// certificate directory, which was some 10% of a suite run's CPU.
pub fn outbound_client_builder() -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(CONNECT_TIMEOUT)
        .tls_certs_only(std::iter::empty())
}

/// How one invocation ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InvokeResult {
    /// The tool succeeded.
    Succeeded,
    /// The tool ran (or was attempted) and failed.
    Failed {
        /// Error code.
        code: ToolErrorCode,
        /// A message with no receiver-supplied content.
        message: String,
    },
}

/// One invocation and how long it took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    /// Result.
    pub result: InvokeResult,
    /// Whole milliseconds, measured around the call.
    pub duration_ms: u64,
}

/// One invocation plus the receiver's answer body, for callers that feed the
/// tool's data back to a model (the tool loop, TTC §G).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataInvocation {
    /// How it ended and how long it took.
    pub invocation: Invocation,
    /// The answer body as read (at most [`MAX_RECEIVER_BODY`] bytes).
    pub body: Vec<u8>,
    /// False when the body was longer than the cap and was cut.
    pub body_complete: bool,
    /// Whether the failure (if any) is transient: the receiver answered
    /// 5xx, timed out, or the connection failed. A node attempt ends on one
    /// when attempts remain (TURN-D9).
    pub transient: bool,
}

/// What one POST to a receiver produced.
struct Posted {
    result: InvokeResult,
    body: Vec<u8>,
    complete: bool,
    transient: bool,
}

impl Posted {
    fn failed(result: InvokeResult) -> Self {
        Self {
            result,
            body: Vec::new(),
            complete: true,
            transient: false,
        }
    }

    /// A failure a later attempt may not see (timeout, connection, 5xx).
    fn transient(result: InvokeResult) -> Self {
        Self {
            transient: true,
            ..Self::failed(result)
        }
    }
}

/// How one effect delivery to a provider ended (the input of the effect
/// retry policy). The provider's body is read (bounded) and dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// The provider answered with this HTTP status.
    Answered(u16),
    /// No complete answer within the timeout.
    TimedOut,
    /// The connection failed or broke before a complete answer.
    Unreachable,
}

/// How one JSON POST with extra headers ended (the transport of the MCP
/// client, [`crate::turn::mcp`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JsonExchange {
    /// The server answered with this status and (bounded) body.
    Answered {
        /// HTTP status.
        status: u16,
        /// The body as read (at most [`MAX_RECEIVER_BODY`] bytes).
        body: Vec<u8>,
        /// False when the body was longer than the cap and was cut.
        complete: bool,
    },
    /// No complete answer within the timeout.
    TimedOut,
    /// The connection failed or broke before a complete answer.
    Unreachable,
}

/// Calls tools. Holds one HTTP client for the host's lifetime.
#[derive(Debug, Clone)]
pub struct ToolInvoker {
    client: reqwest::Client,
}

impl ToolInvoker {
    /// Builds the client ([`outbound_client_builder`]: no proxy, no
    /// redirects, bounded connect time).
    pub fn new() -> Result<Self, reqwest::Error> {
        let client = outbound_client_builder().build()?;
        Ok(Self { client })
    }

    /// Invokes the tool with the resolved `args`.
    ///
    /// Without a receiver the tool is a built-in no-op that succeeds.
    pub async fn invoke(
        &self,
        receiver: Option<&Url>,
        args: &Value,
        timeout: Duration,
    ) -> Invocation {
        self.invoke_for_data(receiver, args, timeout)
            .await
            .invocation
    }

    /// Like [`ToolInvoker::invoke`], and keeps the receiver's answer body
    /// (bounded) so the caller can use the tool's data.
    pub async fn invoke_for_data(
        &self,
        receiver: Option<&Url>,
        args: &Value,
        timeout: Duration,
    ) -> DataInvocation {
        self.invoke_keyed(receiver, args, None, timeout).await
    }

    /// Like [`ToolInvoker::invoke_for_data`], sending
    /// `Idempotency-Key: <key>` when a key is given (the turn loop's tool
    /// identity, TURN-D2), so a receiver can tell a re-run of the same
    /// logical call after a restart from a new call.
    pub async fn invoke_keyed(
        &self,
        receiver: Option<&Url>,
        args: &Value,
        idempotency_key: Option<&str>,
        timeout: Duration,
    ) -> DataInvocation {
        let started = Instant::now();
        let posted = match receiver {
            None => Posted::failed(InvokeResult::Succeeded),
            Some(url) => {
                // The outer timeout bounds the whole call even if the client's
                // own per-request timeout did not fire (belt and braces).
                match tokio::time::timeout(timeout, self.post(url, args, idempotency_key, timeout))
                    .await
                {
                    Ok(posted) => posted,
                    Err(_) => Posted::transient(timed_out(timeout)),
                }
            }
        };
        DataInvocation {
            invocation: Invocation {
                result: posted.result,
                duration_ms: millis(started.elapsed()),
            },
            body: posted.body,
            body_complete: posted.complete,
            transient: posted.transient,
        }
    }

    /// POSTs an effect's business arguments to `url`, with
    /// `Idempotency-Key: <key>` when a key is given, and says how the
    /// provider answered. The whole call is bounded by `timeout`.
    pub async fn deliver(
        &self,
        url: &Url,
        args: &Value,
        idempotency_key: Option<&str>,
        timeout: Duration,
    ) -> Delivery {
        let mut request = self.client.post(url.clone()).timeout(timeout).json(args);
        if let Some(key) = idempotency_key {
            request = request.header("Idempotency-Key", key);
        }
        let exchange = async {
            let mut response = match request.send().await {
                Ok(response) => response,
                Err(err) if err.is_timeout() => return Delivery::TimedOut,
                Err(_) => return Delivery::Unreachable,
            };
            let status = response.status().as_u16();
            // Drain at most MAX_RECEIVER_BODY bytes so the connection can be
            // reused; the content is never looked at.
            let mut read = 0usize;
            loop {
                match response.chunk().await {
                    Ok(Some(chunk)) => {
                        read = read.saturating_add(chunk.len());
                        if read > MAX_RECEIVER_BODY {
                            break;
                        }
                    }
                    Ok(None) => break,
                    Err(err) if err.is_timeout() => return Delivery::TimedOut,
                    Err(_) => return Delivery::Unreachable,
                }
            }
            Delivery::Answered(status)
        };
        // Belt and braces, as for tools: the outer timeout bounds the call
        // even if the client's own per-request timeout did not fire.
        tokio::time::timeout(timeout, exchange)
            .await
            .unwrap_or(Delivery::TimedOut)
    }

    /// POSTs `body` as JSON to `url` with `headers` added, reading at most
    /// [`MAX_RECEIVER_BODY`] bytes of the answer; the whole call is bounded
    /// by `timeout`.
    pub async fn post_json_with(
        &self,
        url: &Url,
        body: &Value,
        headers: &[(&str, &str)],
        timeout: Duration,
    ) -> JsonExchange {
        let mut request = self.client.post(url.clone()).timeout(timeout).json(body);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let exchange = async {
            let mut response = match request.send().await {
                Ok(response) => response,
                Err(err) if err.is_timeout() => return JsonExchange::TimedOut,
                Err(_) => return JsonExchange::Unreachable,
            };
            let status = response.status().as_u16();
            let mut body = Vec::new();
            loop {
                match response.chunk().await {
                    Ok(Some(chunk)) => {
                        let room = MAX_RECEIVER_BODY.saturating_sub(body.len());
                        if chunk.len() > room {
                            return JsonExchange::Answered {
                                status,
                                body,
                                complete: false,
                            };
                        }
                        body.extend_from_slice(&chunk);
                    }
                    Ok(None) => break,
                    Err(err) if err.is_timeout() => return JsonExchange::TimedOut,
                    Err(_) => return JsonExchange::Unreachable,
                }
            }
            JsonExchange::Answered {
                status,
                body,
                complete: true,
            }
        };
        tokio::time::timeout(timeout, exchange)
            .await
            .unwrap_or(JsonExchange::TimedOut)
    }

    async fn post(
        &self,
        url: &Url,
        args: &Value,
        idempotency_key: Option<&str>,
        timeout: Duration,
    ) -> Posted {
        let mut request = self.client.post(url.clone()).timeout(timeout).json(args);
        if let Some(key) = idempotency_key {
            request = request.header("Idempotency-Key", key);
        }
        let sent = request.send().await;
        let mut response = match sent {
            Ok(response) => response,
            Err(err) => return Posted::transient(transport_failure(&err, timeout)),
        };
        // Read at most MAX_RECEIVER_BODY bytes so the measured duration
        // covers the tool's whole answer and memory stays bounded.
        let mut body = Vec::new();
        let mut complete = true;
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    let room = MAX_RECEIVER_BODY.saturating_sub(body.len());
                    if chunk.len() > room {
                        body.extend_from_slice(chunk.get(..room).unwrap_or_default());
                        complete = false;
                        break;
                    }
                    body.extend_from_slice(&chunk);
                }
                Ok(None) => break,
                Err(err) => return Posted::transient(transport_failure(&err, timeout)),
            }
        }
        let status = response.status();
        if status.is_success() {
            Posted {
                result: InvokeResult::Succeeded,
                body,
                complete,
                transient: false,
            }
        } else {
            // The body of a failure is dropped: it is never copied anywhere.
            let result = InvokeResult::Failed {
                code: ToolErrorCode::ToolExecutionFailed,
                message: format!("tool receiver answered HTTP {}", status.as_u16()),
            };
            // A 5xx may pass on a later attempt (TURN-D9); a 4xx will not.
            if status.is_server_error() {
                Posted::transient(result)
            } else {
                Posted::failed(result)
            }
        }
    }
}

fn timed_out(timeout: Duration) -> InvokeResult {
    InvokeResult::Failed {
        code: ToolErrorCode::ToolTimeout,
        message: format!(
            "tool did not answer within {} ms; raise timeoutMs or make the tool faster",
            millis(timeout)
        ),
    }
}

/// Maps a client error to a tool error without echoing its text (which may
/// include the receiver URL or response fragments).
fn transport_failure(err: &reqwest::Error, timeout: Duration) -> InvokeResult {
    if err.is_timeout() {
        return timed_out(timeout);
    }
    InvokeResult::Failed {
        code: ToolErrorCode::ToolUnreachable,
        message: if err.is_connect() {
            "tool receiver could not be reached (connection failed); check that it is listening"
                .to_owned()
        } else {
            "tool receiver connection failed before a complete answer arrived".to_owned()
        },
    }
}

/// Whole milliseconds, saturating.
pub fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn no_receiver_is_a_successful_noop() {
        let invoker = ToolInvoker::new().expect("client");
        let invocation = invoker
            .invoke(None, &json!({}), Duration::from_secs(1))
            .await;
        assert_eq!(invocation.result, InvokeResult::Succeeded);
    }

    #[tokio::test]
    async fn closed_port_is_unreachable() {
        // Bind then drop a listener to get a loopback port nobody listens on.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        drop(listener);
        let url = Url::parse(&format!("http://{addr}/tool")).expect("url");
        let invoker = ToolInvoker::new().expect("client");
        let invocation = invoker
            .invoke(Some(&url), &json!({}), Duration::from_secs(2))
            .await;
        assert!(
            matches!(
                invocation.result,
                InvokeResult::Failed {
                    code: ToolErrorCode::ToolUnreachable,
                    ..
                }
            ),
            "{invocation:?}"
        );
    }

    #[test]
    fn millis_saturates() {
        assert_eq!(millis(Duration::from_millis(1500)), 1500);
        assert_eq!(millis(Duration::MAX), u64::MAX);
    }
}
