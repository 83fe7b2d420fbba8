//! Shared state, the router, and the running server.

use std::net::SocketAddr;
use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::FromRef;
use axum::http::{Method, Uri};
use axum::routing::{delete, get, post};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::base::config::{HostConfig, UpstreamMajor};
use crate::domain::Domain;
use crate::domain::effects;
use crate::domain::error::{ApiError, HostError};
use crate::domain::runs;
use crate::domain::webhooks;
use crate::domain::workflows;
use crate::store::storage::Storage;
use crate::surface::catalog_routes;
use crate::surface::discovery::{self, DiscoveryDoc, DiscoveryState};
use crate::surface::effect_seams;
use crate::surface::error_shape;
use crate::surface::interrupt_routes;
use crate::surface::mcp_server::{self, McpServer};
use crate::surface::run_actions;
use crate::surface::seams;
use crate::surface::sse;
use crate::surface::upstream;
use crate::surface::webhook_routes;
use crate::turn;
use crate::turn::state::LoopState;

/// The schema SQL of every module keeping tables in the store, in creation
/// order: the store runs them without importing any of those modules.
pub const STORE_SCHEMAS: &[crate::store::storage::Schema] = &[
    effects::claim::SCHEMA,
    effects::ledger::SCHEMA,
    crate::domain::layer1::SCHEMA,
    workflows::SCHEMA,
    turn::records::SCHEMA,
    turn::memory::SCHEMA,
];

/// How long [`RunningHost::shutdown`] waits for in-flight requests.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// The router's state: everything any request handler needs; cheap to
/// clone. Handlers never take it whole: each extracts the narrow part it
/// uses ([`LoopState`], [`Domain`], [`McpServer`], [`DiscoveryState`]; the
/// `FromRef` impls below). It derefs to the tool loop's [`LoopState`] (and
/// that to the domain's [`Domain`]) for start-up and tests.
#[derive(Debug, Clone)]
pub struct AppState {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    turn: LoopState,
    seams_enabled: bool,
    /// Serving as a plain upstream host of one major
    /// ([`crate::surface::upstream`]).
    upstream_only: Option<UpstreamMajor>,
    /// The discovery document, rendered on first use.
    discovery: DiscoveryState,
    /// The MCP server mount's templates and request-state key (TURN-E4).
    mcp_server: McpServer,
}

impl AppState {
    /// Builds the state for `config`: the store in `config.data_dir` (or a
    /// fresh in-memory one), empty buckets.
    pub fn new(config: &HostConfig) -> Result<Self, HostError> {
        let storage = match &config.data_dir {
            Some(dir) => Storage::open_dir(dir, STORE_SCHEMAS)?,
            None => Storage::open_in_memory(STORE_SCHEMAS)?,
        };
        let domain = Domain::new(config, storage)?;
        let inner = Inner {
            turn: LoopState::new(config, domain)?,
            seams_enabled: config.seams_enabled,
            upstream_only: config.upstream_only,
            discovery: DiscoveryState::new(
                match config.upstream_only {
                    Some(UpstreamMajor::V1) => upstream::discovery::render,
                    Some(UpstreamMajor::V2) => upstream::v2::render,
                    None => DiscoveryDoc::render,
                },
                config.seams_enabled,
                config.mutant,
            ),
            mcp_server: McpServer::new(),
        };
        Ok(Self {
            inner: Arc::new(inner),
        })
    }

    /// The tool loop's state underneath.
    pub fn loop_state(&self) -> &LoopState {
        &self.inner.turn
    }

    /// The domain's state underneath.
    pub fn domain(&self) -> &Domain {
        self.inner.turn.domain()
    }

    /// Whether the conformance seams are mounted.
    pub fn seams_enabled(&self) -> bool {
        self.inner.seams_enabled
    }

    /// The major the host serves as a plain upstream host of
    /// (`--upstream-only`, [`crate::surface::upstream`]), if any.
    pub fn upstream_only(&self) -> Option<UpstreamMajor> {
        self.inner.upstream_only
    }

    /// The rendered discovery document (rendered on first use,
    /// [`DiscoveryState::doc`]).
    pub fn discovery(&self) -> &DiscoveryDoc {
        self.inner.discovery.doc()
    }

    /// The MCP server mount (`POST /mcp`): its run templates and its
    /// request-state key (TURN-E4).
    pub fn mcp_server(&self) -> &McpServer {
        &self.inner.mcp_server
    }
}

impl Deref for AppState {
    type Target = LoopState;

    fn deref(&self) -> &LoopState {
        &self.inner.turn
    }
}

// Handlers of the lower layers extract their own state from the router's.
impl FromRef<AppState> for LoopState {
    fn from_ref(state: &AppState) -> Self {
        state.loop_state().clone()
    }
}

impl FromRef<AppState> for Domain {
    fn from_ref(state: &AppState) -> Self {
        state.domain().clone()
    }
}

// The MCP mount's handlers take its templates and key beside the loop state.
impl FromRef<AppState> for McpServer {
    fn from_ref(state: &AppState) -> Self {
        state.mcp_server().clone()
    }
}

// The discovery handler needs only its document.
impl FromRef<AppState> for DiscoveryState {
    fn from_ref(state: &AppState) -> Self {
        state.inner.discovery.clone()
    }
}

/// The host's routes. Unknown routes and wrong methods answer the 404
/// `not_found` envelope (the closed code set has no 405). In upstream-only
/// mode the routes are [`upstream::router`]'s (v1) or
/// [`upstream_v2_router`]'s instead.
pub fn router(state: AppState) -> Router {
    match state.upstream_only() {
        Some(UpstreamMajor::V1) => {
            return upstream::router(state.seams_enabled())
                .fallback(unknown_route)
                .method_not_allowed_fallback(unknown_route)
                .with_state(state);
        }
        Some(UpstreamMajor::V2) => return upstream_v2_router(state),
        None => {}
    }
    let mut router = v2_routes()
        .route("/runs", post(workflows::post_runs))
        .route(
            "/runs/{runId}/interrupts/{nodeId}",
            post(interrupt_routes::resolve_at_node),
        )
        .route(
            "/interrupts/{token}",
            post(interrupt_routes::resolve_by_link),
        )
        // CAT-4: the refused DELETE (the reads are in `v2_routes`).
        .route("/tools/{toolId}", delete(catalog_routes::delete_tool))
        .route("/webhooks", post(webhook_routes::post_webhook))
        // The manifest-agent inventory (RFC 0072 §A), per tenant (RFC 0074),
        // each entry with its A2A routing value (A2A-8, RFC 0202).
        .route("/agents", get(crate::domain::agents::list_agents))
        .route("/agents/{agentId}", get(crate::domain::agents::get_agent))
        // DISC-4: an operation of the unadvertised `prompts` family (404 not_found).
        .route("/prompts", get(error_shape::prompts))
        .route(
            "/webhooks/{webhookId}",
            delete(webhook_routes::delete_webhook),
        )
        // TURN-E4: the host as an MCP server (authenticated; its tools are
        // registered through the turn seam, so without seams it lists none).
        .route(mcp_server::MCP_PATH, post(mcp_server::handle))
        // A2A-2, A2A-3, A2A-5: the agent card, negotiated by A2A-Version.
        .route(
            crate::domain::a2a::AGENT_CARD_PATH,
            get(crate::surface::a2a::get_agent_card),
        )
        // A2A-4, A2A-6, A2A-7: the JSON-RPC endpoint the card advertises.
        .route(
            crate::domain::a2a::A2A_PATH,
            post(crate::surface::a2a::post_rpc),
        );
    if state.seams_enabled() {
        router = router.merge(seams::router());
    }
    let domain = state.domain().clone();
    router
        .fallback(unknown_route)
        .method_not_allowed_fallback(unknown_route)
        .layer(axum::middleware::from_fn_with_state(
            domain,
            error_shape::shape_errors,
        ))
        .with_state(state)
}

/// The routes of v2 upstream-only mode ([`upstream::v2`]): `v2_routes`
/// and its own `POST /runs`, the seams among them when
/// `state.seams_enabled()`, behind the tenant-bound id projection
/// ([`upstream::v2::tenant_bound_paths`]). Anything else is 404 `not_found`.
pub fn upstream_v2_router(state: AppState) -> Router {
    let mut routes = v2_routes().route("/runs", post(upstream::workflows::post_runs_v2));
    if state.seams_enabled() {
        routes = routes.merge(upstream::v2::seam_routes());
    }
    let domain = state.domain().clone();
    let inner = routes
        .fallback(unknown_route)
        .method_not_allowed_fallback(unknown_route)
        .layer(axum::middleware::from_fn_with_state(
            domain.clone(),
            error_shape::shape_errors,
        ))
        .with_state(state);
    // The projection is undone before routing, so the routes' path
    // extractors read the id itself.
    Router::new()
        .fallback_service(inner)
        .layer(axum::middleware::from_fn_with_state(
            domain,
            upstream::v2::tenant_bound_paths,
        ))
}

/// The v2 routes both the default mode and the v2 upstream-only mode serve
/// ([`upstream::v2`]): discovery, run reads, `:cancel` and `:fork`, the
/// event stream and poll, the effect ledger, the catalog's reads and the
/// effect-seam manifest.
pub(crate) fn v2_routes() -> Router<AppState> {
    Router::new()
        .route("/.well-known/openwop", get(discovery::get_discovery))
        // `POST /runs/{runId}:fork` and `:cancel` share the segment (axum
        // cannot match `{runId}:fork` in one segment).
        .route(
            "/runs/{runId}",
            get(runs::get_run).post(run_actions::post_run_action),
        )
        .route("/runs/{runId}/effects", get(effects::list_run_effects))
        .route("/runs/{runId}/events", get(sse::stream_events))
        .route("/runs/{runId}/events/poll", get(runs::poll_events))
        .route("/host/effect-seams", get(effect_seams::get_effect_seams))
        .route("/tools", get(catalog_routes::list_tools))
        .route("/tools/{toolId}", get(catalog_routes::get_tool))
}

/// The 404 of a route this host does not serve (also upstream-only mode's).
pub(crate) async fn unknown_route(method: Method, uri: Uri) -> ApiError {
    ApiError::not_found(format!(
        "no route for {method} {}; see docs/reference/reference-host/README.md for the endpoints this host serves",
        uri.path()
    ))
}

/// A host serving in the background.
#[derive(Debug)]
pub struct RunningHost {
    /// `http://127.0.0.1:PORT`, no trailing slash.
    pub base_url: String,
    /// The bound address.
    pub addr: SocketAddr,
    stop: oneshot::Sender<()>,
    server: JoinHandle<std::io::Result<()>>,
    state: AppState,
}

impl RunningHost {
    /// Stops accepting, lets in-flight requests finish for up to 2 s, then
    /// aborts whatever is left. With a durable store, in-flight turn runs
    /// stay `running` and are recovered at the next start.
    pub async fn shutdown(self) {
        // Tool loops running in the background end at their next await.
        self.state.request_shutdown();
        // The server may already have stopped; then there is nobody to tell.
        let _ = self.stop.send(());
        let mut server = self.server;
        if tokio::time::timeout(SHUTDOWN_GRACE, &mut server)
            .await
            .is_err()
        {
            server.abort();
            let _ = server.await;
        }
    }
}

/// Binds `config.bind` and serves in a background task.
pub async fn start(config: HostConfig) -> Result<RunningHost, HostError> {
    let state = AppState::new(&config)?;
    let listener = TcpListener::bind(config.bind)
        .await
        .map_err(|source| HostError::Bind {
            addr: config.bind,
            source,
        })?;
    let addr = listener.local_addr()?;
    let (stop, stopped) = oneshot::channel::<()>();
    let app = router(state.clone());
    if state.durable() {
        // TTC §D: resume the turn runs a previous process left in flight
        // (and fail any other run it left), before serving requests.
        turn::recovery::recover(&state)?;
    }
    // Retention: every 10 minutes, until shutdown (it watches the signal).
    effects::sweeper::spawn_background(state.domain().clone());
    // RPL-8: the host's one webhook dispatcher, until shutdown.
    let domain = state.domain().clone();
    webhooks::spawn_dispatcher(state.domain().fanout(), async move {
        domain.shutdown_requested().await;
    });
    let server = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                // Either an explicit stop or the handle being dropped ends it.
                let _ = stopped.await;
            })
            .await
    });
    Ok(RunningHost {
        base_url: format!("http://{addr}"),
        addr,
        stop,
        server,
        state,
    })
}
