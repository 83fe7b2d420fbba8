//! The HTTP server: routes, the in-process [`MockProvider`], and the standalone server.

use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use loopback_http::{Request, Response, Router, Server, StatusCode, response};
use serde_json::json;
use tokio::net::TcpListener;

use crate::control::{self, CONTROL_PREFIX};
use crate::error::ScriptError;
use crate::exchange;
use crate::record::{Endpoint, RecordedRequest};
use crate::script::Script;
use crate::state::ProviderState;

/// How long shutdown waits for in-flight answers (a scripted delay can be 30 s) before the
/// server task is abandoned: shutting a test run down must itself be bounded.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// The provider routes plus the `/_toolcert` control API, over `state`; serve it with
/// [`loopback_http::Server`].
pub fn router(state: ProviderState) -> Router<ProviderState> {
    Router::new(state)
        .post(Endpoint::OpenAiChat.path(), openai_chat)
        .post(Endpoint::AnthropicMessages.path(), anthropic_messages)
        .post(&format!("{CONTROL_PREFIX}/scripts"), control::load_script)
        .get(
            &format!("{CONTROL_PREFIX}/scripts/{{model}}/requests"),
            control::recorded,
        )
        .delete(
            &format!("{CONTROL_PREFIX}/scripts/{{model}}"),
            control::forget,
        )
        .fallback(not_served)
        .guard(loopback_only)
}

async fn openai_chat(state: ProviderState, request: Request) -> Response {
    exchange::handle(state, Endpoint::OpenAiChat, request.headers, request.body).await
}

async fn anthropic_messages(state: ProviderState, request: Request) -> Response {
    exchange::handle(
        state,
        Endpoint::AnthropicMessages,
        request.headers,
        request.body,
    )
    .await
}

async fn not_served(_: ProviderState, request: Request) -> Response {
    response::json(
        StatusCode::NOT_FOUND,
        &json!({
            "error": {
                "message": format!(
                    "mock-provider does not serve {} {}; it serves POST /v1/chat/completions, POST /v1/messages and the /_toolcert control API",
                    request.method,
                    request.uri.path()
                ),
                "type": "invalid_request_error",
                "param": null,
                "code": "unknown_url",
            }
        }),
    )
}

/// Refuse peers that are not on this machine. The listener only ever binds loopback, so this
/// is defence in depth for the control API (which can replace any script).
fn loopback_only(request: &Request) -> Option<Response> {
    (!request.peer.ip().to_canonical().is_loopback()).then(|| {
        response::json(
            StatusCode::FORBIDDEN,
            &json!({"error": {"message": "mock-provider serves loopback clients only"}}),
        )
    })
}

fn ensure_loopback(addr: SocketAddr) -> io::Result<()> {
    if addr.ip().is_loopback() {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("mock-provider binds loopback addresses only, not {addr}"),
        ))
    }
}

/// A running mock provider on a loopback port, owned by the harness (or a test).
///
/// Dropping it stops accepting connections; [`MockProvider::shutdown`] also waits (bounded)
/// for answers in flight.
#[derive(Debug)]
pub struct MockProvider {
    state: ProviderState,
    base_url: String,
    local_addr: SocketAddr,
    server: Server,
}

impl MockProvider {
    /// Start on `127.0.0.1` with an OS-chosen port.
    pub async fn start() -> io::Result<MockProvider> {
        MockProvider::bind(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0)).await
    }

    /// Start on `addr`, which must be a loopback address (`InvalidInput` otherwise).
    pub async fn bind(addr: SocketAddr) -> io::Result<MockProvider> {
        ensure_loopback(addr)?;
        let listener = TcpListener::bind(addr).await?;
        let local_addr = listener.local_addr()?;
        let state = ProviderState::new();
        let server = Server::start(listener, router(state.clone()))?;
        Ok(MockProvider {
            state,
            base_url: format!("http://{local_addr}"),
            local_addr,
            server,
        })
    }

    /// `http://127.0.0.1:PORT`, no trailing slash; the endpoints are this plus
    /// `/v1/chat/completions` and `/v1/messages`.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The bound socket address.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The full URL of `endpoint` on this provider.
    pub fn url(&self, endpoint: Endpoint) -> String {
        format!("{}{}", self.base_url, endpoint.path())
    }

    /// The shared state (the same the router serves).
    pub fn state(&self) -> &ProviderState {
        &self.state
    }

    /// Load `script`, replacing any script for the same key and clearing its record.
    pub fn load(&self, script: Script) -> Result<(), ScriptError> {
        self.state.load(script)
    }

    /// Every request recorded for `model`, in arrival order.
    pub fn requests(&self, model: &str) -> Vec<RecordedRequest> {
        self.state.requests(model)
    }

    /// Every problem recorded for `model`, in arrival order.
    pub fn problems(&self, model: &str) -> Vec<String> {
        self.state.problems(model)
    }

    /// Drop `model`'s script and record.
    pub fn forget(&self, model: &str) {
        self.state.forget(model);
    }

    /// Stop the server, waiting at most two seconds for answers in flight.
    pub async fn shutdown(self) {
        self.server.shutdown(SHUTDOWN_GRACE).await;
    }
}

/// Serve a fresh provider (with the control API) on `addr` until ctrl-c.
///
/// Prints exactly one line, `mock-provider listening on http://127.0.0.1:PORT`, once bound,
/// so a wrapper can read the port. `addr` must be loopback.
pub async fn serve_standalone(addr: SocketAddr) -> io::Result<()> {
    ensure_loopback(addr)?;
    let listener = TcpListener::bind(addr).await?;
    let local_addr = listener.local_addr()?;
    println!("mock-provider listening on http://{local_addr}");
    let server = Server::start(listener, router(ProviderState::new()))?;
    ctrl_c().await;
    // Answers in flight get a bounded grace period, like `MockProvider::shutdown`.
    server.shutdown(SHUTDOWN_GRACE).await;
    Ok(())
}

async fn ctrl_c() {
    if let Err(e) = tokio::signal::ctrl_c().await {
        // Without a signal handler the server just runs until killed.
        eprintln!("mock-provider: cannot listen for ctrl-c ({e}); serving until killed");
        std::future::pending::<()>().await;
    }
}
