//! Shared state, the router, and the running server.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::http::{Method, Uri};
use axum::routing::{delete, get, post};
use tokio::net::TcpListener;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

use crate::catalog::{self, Catalog};
use crate::config::HostConfig;
use crate::discovery::{self, DiscoveryDoc};
use crate::effect_seams;
use crate::effects;
use crate::error::{ApiError, HostError};
use crate::http_client::SafeFetch;
use crate::interrupts::{self, Interrupts};
use crate::invoker::ToolInvoker;
use crate::mcp_server::{self, McpServer};
use crate::mutant::Mutant;
use crate::principals::{Principal, PrincipalDirectory};
use crate::rate_limit::RateLimiter;
use crate::runs;
use crate::seams;
use crate::sse;
use crate::storage::Storage;
use crate::turn;
use crate::turn::control::RunControls;
use crate::turn::provider::ProviderClient;
use crate::upstream;
use crate::webhooks;
use crate::workflows;

/// The schema SQL of every module keeping tables in the store, in creation
/// order: the store runs them without importing any of those modules.
pub const STORE_SCHEMAS: &[crate::storage::Schema] = &[
    effects::claim::SCHEMA,
    effects::ledger::SCHEMA,
    crate::layer1::SCHEMA,
    workflows::SCHEMA,
    turn::records::SCHEMA,
    turn::memory::SCHEMA,
];

/// How long [`RunningHost::shutdown`] waits for in-flight requests.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// Everything a request handler needs; cheap to clone.
#[derive(Debug, Clone)]
pub struct AppState {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    mutant: Option<Mutant>,
    seams_enabled: bool,
    /// Serving as a plain upstream v1 host ([`crate::upstream`]).
    upstream_only: bool,
    principals: PrincipalDirectory,
    storage: Storage,
    /// Webhook subscriptions and their delivery queue, fed by the store
    /// after every commit (RPL-8).
    fanout: Arc<webhooks::Fanout>,
    limiter: RateLimiter,
    invoker: ToolInvoker,
    /// `ctx.http.safeFetch` (guard and client).
    safe_fetch: SafeFetch,
    discovery: DiscoveryDoc,
    default_tool_timeout: Duration,
    catalog: Catalog,
    provider: ProviderClient,
    /// Open approval interrupts (TTC §C).
    interrupts: Interrupts,
    /// How long a held call waits for approval.
    approval_timeout: Duration,
    /// Set once the host is shutting down; background tool loops watch it.
    shutdown: watch::Sender<bool>,
    /// Whether the store is durable (`--data-dir`): then a shutdown leaves
    /// in-flight turn runs `running`, to be recovered at the next start.
    durable: bool,
    /// Largest whole tool record (TURN-D10).
    record_limit_bytes: usize,
    /// Cancel signals of the turn loops running here.
    run_controls: RunControls,
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
        let fanout = Arc::new(webhooks::Fanout::new());
        fanout.set_mutant(config.mutant);
        // A fresh store: the slot is free.
        storage.set_commit_listener(fanout.clone());
        let inner = Inner {
            mutant: config.mutant,
            seams_enabled: config.seams_enabled,
            upstream_only: config.upstream_only,
            principals: PrincipalDirectory::new(config.principals.clone())?,
            storage,
            fanout,
            limiter: RateLimiter::new(config.rate_limit, config.mutant),
            invoker: ToolInvoker::new().map_err(HostError::HttpClient)?,
            // Test mode (seams on) is what lets loopback through the guard.
            safe_fetch: SafeFetch::new(config.seams_enabled).map_err(HostError::HttpClient)?,
            discovery: if config.upstream_only {
                upstream::discovery::render(config.mutant)
            } else {
                DiscoveryDoc::render(config.seams_enabled, config.mutant)
            },
            default_tool_timeout: config.default_tool_timeout,
            catalog: Catalog::new(),
            provider: ProviderClient::new().map_err(HostError::HttpClient)?,
            interrupts: Interrupts::new(),
            approval_timeout: config.approval_timeout,
            shutdown: watch::Sender::new(false),
            durable: config.data_dir.is_some(),
            record_limit_bytes: config.record_limit_bytes,
            run_controls: RunControls::new(),
            mcp_server: McpServer::new(),
        };
        Ok(Self {
            inner: Arc::new(inner),
        })
    }

    /// The active mutant, if any.
    pub fn mutant(&self) -> Option<Mutant> {
        self.inner.mutant
    }

    /// Whether `mutant` is the active one.
    pub fn mutant_is(&self, mutant: Mutant) -> bool {
        self.inner.mutant == Some(mutant)
    }

    /// Whether the conformance seams are mounted.
    pub fn seams_enabled(&self) -> bool {
        self.inner.seams_enabled
    }

    /// Whether the host serves as a plain upstream v1 host
    /// (`--upstream-only`, [`crate::upstream`]).
    pub fn upstream_only(&self) -> bool {
        self.inner.upstream_only
    }

    /// Known principals.
    pub fn principals(&self) -> &PrincipalDirectory {
        &self.inner.principals
    }

    /// The tenant a run attributed to `attributed` belongs to: that
    /// principal's tenant, or the caller's when the principal is unknown
    /// (a seam may attribute a call to a principal the host does not know,
    /// to show fail-closed authorization).
    pub fn run_tenant(&self, attributed: &str, caller: &Principal) -> String {
        self.principals()
            .tenant_of(attributed)
            .unwrap_or(&caller.tenant)
            .to_owned()
    }

    /// The run/event store.
    pub fn storage(&self) -> &Storage {
        &self.inner.storage
    }

    /// The webhook fan-out (subscriptions and delivery queue, RPL-8).
    pub fn fanout(&self) -> &webhooks::Fanout {
        &self.inner.fanout
    }

    /// The per-tool rate limiter.
    pub fn limiter(&self) -> &RateLimiter {
        &self.inner.limiter
    }

    /// The tool invoker.
    pub fn invoker(&self) -> &ToolInvoker {
        &self.inner.invoker
    }

    /// `ctx.http.safeFetch`: the SSRF guard and its client.
    pub fn safe_fetch(&self) -> &SafeFetch {
        &self.inner.safe_fetch
    }

    /// The rendered discovery document.
    pub fn discovery(&self) -> &DiscoveryDoc {
        &self.inner.discovery
    }

    /// Tool timeout when a call gives none.
    pub fn default_tool_timeout(&self) -> Duration {
        self.inner.default_tool_timeout
    }

    /// The tool catalog (run-scoped fixture tools).
    pub fn catalog(&self) -> &Catalog {
        &self.inner.catalog
    }

    /// The model provider client.
    pub fn provider(&self) -> &ProviderClient {
        &self.inner.provider
    }

    /// The open approval interrupts.
    pub fn interrupts(&self) -> &Interrupts {
        &self.inner.interrupts
    }

    /// How long a call held for approval waits before its run fails with
    /// `approval_expired`.
    pub fn approval_timeout(&self) -> Duration {
        self.inner.approval_timeout
    }

    /// Whether the store survives a restart (`--data-dir`).
    pub fn durable(&self) -> bool {
        self.inner.durable
    }

    /// Largest serialized tool record kept whole (TURN-D10).
    pub fn record_limit_bytes(&self) -> usize {
        self.inner.record_limit_bytes
    }

    /// The cancel signals of the turn loops running in this process.
    pub fn run_controls(&self) -> &RunControls {
        &self.inner.run_controls
    }

    /// The MCP server mount (`POST /mcp`): its run templates and its
    /// request-state key (TURN-E4).
    pub fn mcp_server(&self) -> &McpServer {
        &self.inner.mcp_server
    }

    /// Tells background work (tool loops) that the host is stopping.
    pub fn request_shutdown(&self) {
        self.inner.shutdown.send_replace(true);
    }

    /// Resolves once [`AppState::request_shutdown`] has been called.
    pub async fn shutdown_requested(&self) {
        let mut stopping = self.inner.shutdown.subscribe();
        // The sender lives as long as this state, so the wait only ends on
        // a shutdown request.
        let _ = stopping.wait_for(|stopping| *stopping).await;
    }
}

/// The host's routes. Unknown routes and wrong methods answer the 404
/// `not_found` envelope (the closed code set has no 405). In upstream-only
/// mode the routes are [`upstream::router`]'s instead.
pub fn router(state: AppState) -> Router {
    if state.upstream_only() {
        return upstream::router(state);
    }
    let mut router = Router::new()
        .route("/.well-known/openwop", get(discovery::get_discovery))
        .route("/runs", post(workflows::post_runs))
        // `POST /runs/{runId}:fork` and `:cancel` share the segment (axum
        // cannot match `{runId}:fork` in one segment).
        .route(
            "/runs/{runId}",
            get(runs::get_run).post(turn::fork::post_run_action),
        )
        .route("/runs/{runId}/effects", get(effects::list_run_effects))
        .route("/runs/{runId}/events", get(sse::stream_events))
        .route("/runs/{runId}/events/poll", get(runs::poll_events))
        .route(
            "/runs/{runId}/interrupts/{nodeId}",
            post(interrupts::routes::resolve_at_node),
        )
        .route(
            "/interrupts/{token}",
            post(interrupts::routes::resolve_by_link),
        )
        .route("/host/effect-seams", get(effect_seams::get_effect_seams))
        .route("/tools", get(catalog::list_tools))
        .route("/tools/{toolId}", get(catalog::get_tool))
        .route("/webhooks", post(webhooks::post_webhook))
        .route("/webhooks/{webhookId}", delete(webhooks::delete_webhook))
        // TURN-E4: the host as an MCP server (authenticated; its tools are
        // registered through the turn seam, so without seams it lists none).
        .route(mcp_server::MCP_PATH, post(mcp_server::handle));
    if state.seams_enabled() {
        router = router.merge(seams::router());
    }
    router
        .fallback(unknown_route)
        .method_not_allowed_fallback(unknown_route)
        .with_state(state)
}

/// The 404 of a route this host does not serve (also upstream-only mode's).
pub(crate) async fn unknown_route(method: Method, uri: Uri) -> ApiError {
    ApiError::not_found(format!(
        "no route for {method} {}; see docs/reference-host.md for the endpoints this host serves",
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
    effects::sweeper::spawn_background(state.clone());
    // RPL-8: the host's one webhook dispatcher, until shutdown.
    webhooks::spawn_dispatcher(state.clone());
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
