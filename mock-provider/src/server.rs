//! The HTTP server: routes, the in-process [`MockProvider`], and the standalone server.

use std::future::IntoFuture;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{ConnectInfo, DefaultBodyLimit, Request, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::control::{self, CONTROL_PREFIX};
use crate::error::ScriptError;
use crate::exchange::{self, MAX_REQUEST_BYTES};
use crate::record::{Endpoint, RecordedRequest};
use crate::script::Script;
use crate::state::ProviderState;

/// How long shutdown waits for in-flight answers (a scripted delay can be 30 s) before the
/// server task is abandoned: shutting a test run down must itself be bounded.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// The provider routes plus the `/_toolcert` control API, over `state`.
///
/// Serve it with `into_make_service_with_connect_info::<SocketAddr>()` so the loopback guard
/// can see peers; without connect info the guard relies on the listener being loopback-bound.
pub fn router(state: ProviderState) -> Router {
    Router::new()
        .route(Endpoint::OpenAiChat.path(), post(openai_chat))
        .route(Endpoint::AnthropicMessages.path(), post(anthropic_messages))
        .route(
            &format!("{CONTROL_PREFIX}/scripts"),
            post(control::load_script),
        )
        .route(
            &format!("{CONTROL_PREFIX}/scripts/{{model}}/requests"),
            get(control::recorded),
        )
        .route(
            &format!("{CONTROL_PREFIX}/scripts/{{model}}"),
            delete(control::forget),
        )
        .fallback(not_served)
        .layer(DefaultBodyLimit::max(MAX_REQUEST_BYTES))
        .layer(middleware::from_fn(loopback_only))
        .with_state(state)
}

async fn openai_chat(
    State(state): State<ProviderState>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    exchange::handle(state, Endpoint::OpenAiChat, headers, body).await
}

async fn anthropic_messages(
    State(state): State<ProviderState>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    exchange::handle(state, Endpoint::AnthropicMessages, headers, body).await
}

async fn not_served(method: Method, uri: Uri) -> Response {
    (
        StatusCode::NOT_FOUND,
        axum::Json(json!({
            "error": {
                "message": format!(
                    "mock-provider does not serve {method} {}; it serves POST /v1/chat/completions, POST /v1/messages and the /_toolcert control API",
                    uri.path()
                ),
                "type": "invalid_request_error",
                "param": null,
                "code": "unknown_url",
            }
        })),
    )
        .into_response()
}

/// Refuse peers that are not on this machine. The listener only ever binds loopback, so this
/// is defence in depth for the control API (which can replace any script).
async fn loopback_only(request: Request, next: Next) -> Response {
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(addr)| addr.ip());
    if let Some(ip) = peer
        && !ip.to_canonical().is_loopback()
    {
        return (
            StatusCode::FORBIDDEN,
            axum::Json(json!({"error": {"message": "mock-provider serves loopback clients only"}})),
        )
            .into_response();
    }
    next.run(request).await
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
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
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
        let app = router(state.clone()).into_make_service_with_connect_info::<SocketAddr>();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            // `axum::serve` only returns once shut down; an accept error is retried inside.
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stopped.await;
                })
                .await;
        });
        Ok(MockProvider {
            state,
            base_url: format!("http://{local_addr}"),
            local_addr,
            stop: Some(stop),
            task: Some(task),
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
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(mut task) = self.task.take()
            && tokio::time::timeout(SHUTDOWN_GRACE, &mut task)
                .await
                .is_err()
        {
            task.abort();
        }
    }
}

impl Drop for MockProvider {
    fn drop(&mut self) {
        // Stop accepting; the server task winds down on its own without blocking the drop.
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
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
    let app = router(ProviderState::new()).into_make_service_with_connect_info::<SocketAddr>();
    let (stop, stopped) = oneshot::channel::<()>();
    let server = axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            let _ = stopped.await;
        })
        .into_future();
    let mut server = std::pin::pin!(server);
    tokio::select! {
        result = &mut server => return result,
        () = ctrl_c() => {}
    }
    let _ = stop.send(());
    // Answers in flight get a bounded grace period, like `MockProvider::shutdown`.
    tokio::time::timeout(SHUTDOWN_GRACE, server)
        .await
        .unwrap_or(Ok(()))
}

async fn ctrl_c() {
    if let Err(e) = tokio::signal::ctrl_c().await {
        // Without a signal handler the server just runs until killed.
        eprintln!("mock-provider: cannot listen for ctrl-c ({e}); serving until killed");
        std::future::pending::<()>().await;
    }
}
