//! Layer 2, the domain: runs and events, effects and claims, authorization
//! and rate limits, idempotency (Layer-1), webhooks, workflows, the catalog
//! and the interrupt registry, the agent inventory, over the store; and their shared state,
//! [`Domain`]: what those modules need, and nothing of the tool loop or the
//! HTTP surface above them.
//!
//! The tool loop's [`crate::turn::state::LoopState`] wraps it and the app's
//! [`crate::surface::app::AppState`] wraps that; both deref to it, so a domain
//! function takes `&Domain` and a caller holding either passes its own.

pub mod a2a;
pub mod a2a_tasks;
pub mod agents;
pub mod auth;
pub mod authz;
pub mod catalog;
pub mod effects;
pub mod error;
pub mod gates;
pub mod http_client;
pub mod interrupts;
pub mod invoker;
pub mod json_body;
pub mod layer1;
pub mod rate_limit;
pub mod runs;
pub mod tool_session;
pub mod tool_view;
pub mod webhooks;
pub mod workflows;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::base::config::HostConfig;
use crate::base::mutant::Mutant;
use crate::base::principals::{Principal, PrincipalDirectory};
use crate::domain::catalog::Catalog;
use crate::domain::error::HostError;
use crate::domain::http_client::SafeFetch;
use crate::domain::interrupts::Interrupts;
use crate::domain::invoker::ToolInvoker;
use crate::domain::rate_limit::RateLimiter;
use crate::domain::webhooks::Fanout;
use crate::store::storage::Storage;

/// The domain's shared state; cheap to clone.
#[derive(Debug, Clone)]
pub struct Domain {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    mutant: Option<Mutant>,
    principals: PrincipalDirectory,
    storage: Storage,
    /// Webhook subscriptions and their delivery queue, fed by the store
    /// after every commit (RPL-8).
    fanout: Arc<Fanout>,
    limiter: RateLimiter,
    /// Layer-1 holds the hold seam armed (RFC 0213 §B).
    holds: layer1::ArmedHolds,
    invoker: ToolInvoker,
    /// `ctx.http.safeFetch` (guard and client).
    safe_fetch: SafeFetch,
    default_tool_timeout: Duration,
    catalog: Catalog,
    /// Open approval interrupts (TTC §C).
    interrupts: Interrupts,
    /// How long a held call waits for approval.
    approval_timeout: Duration,
    /// Set once the host is shutting down; background work watches it.
    shutdown: watch::Sender<bool>,
    /// Whether the store is durable (`--data-dir`): then a shutdown leaves
    /// in-flight turn runs `running`, to be recovered at the next start.
    durable: bool,
    /// Whether run ids are tenant-bound (`<tenant>/<opaque>`, identity.md
    /// §5): the v2 upstream-only mode's.
    tenant_bound_ids: bool,
}

impl Domain {
    /// The domain state for `config` over `storage` (opened by the caller,
    /// which knows every module's schema); the webhook fan-out becomes the
    /// store's commit listener.
    pub fn new(config: &HostConfig, storage: Storage) -> Result<Self, HostError> {
        let fanout = Arc::new(Fanout::new());
        fanout.set_mutant(config.mutant);
        // A fresh store: the slot is free.
        storage.set_commit_listener(fanout.clone());
        let inner = Inner {
            mutant: config.mutant,
            principals: PrincipalDirectory::new(config.principals.clone())?,
            storage,
            fanout,
            limiter: RateLimiter::new(config.rate_limit, config.mutant),
            holds: layer1::ArmedHolds::default(),
            invoker: ToolInvoker::new().map_err(HostError::HttpClient)?,
            // Test mode (seams on) is what lets loopback through the guard.
            safe_fetch: SafeFetch::new(config.seams_enabled).map_err(HostError::HttpClient)?,
            default_tool_timeout: config.default_tool_timeout,
            catalog: Catalog::with_host_tools(
                config
                    .principals
                    .iter()
                    .map(|principal| principal.tenant.as_str()),
            ),
            interrupts: Interrupts::new(),
            approval_timeout: config.approval_timeout,
            shutdown: watch::Sender::new(false),
            durable: config.data_dir.is_some(),
            tenant_bound_ids: config.upstream_only == Some(crate::base::config::UpstreamMajor::V2),
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

    /// The Layer-1 holds the hold seam armed.
    pub fn holds(&self) -> &layer1::ArmedHolds {
        &self.inner.holds
    }

    /// The run/event store.
    pub fn storage(&self) -> &Storage {
        &self.inner.storage
    }

    /// The webhook fan-out (subscriptions and delivery queue, RPL-8).
    pub fn fanout(&self) -> &Fanout {
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

    /// Tool timeout when a call gives none.
    pub fn default_tool_timeout(&self) -> Duration {
        self.inner.default_tool_timeout
    }

    /// The tool catalog (run-scoped fixture tools).
    pub fn catalog(&self) -> &Catalog {
        &self.inner.catalog
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

    /// A fresh id for a run of `tenant`: tenant-bound (`<tenant>/run_…`,
    /// identity.md §5) in the v2 upstream-only mode, else bare
    /// ([`crate::base::ids::new_run_id`]).
    pub fn new_run_id(&self, tenant: &str) -> String {
        let opaque = crate::base::ids::new_run_id();
        if self.inner.tenant_bound_ids {
            format!("{tenant}/{opaque}")
        } else {
            opaque
        }
    }

    /// Tells background work (tool loops, sweeper, dispatcher) that the
    /// host is stopping.
    pub fn request_shutdown(&self) {
        self.inner.shutdown.send_replace(true);
    }

    /// Whether [`Domain::request_shutdown`] has been called (a request
    /// dropped then was dropped by the host, not by its client).
    pub fn shutting_down(&self) -> bool {
        *self.inner.shutdown.borrow()
    }

    /// Resolves once [`Domain::request_shutdown`] has been called.
    pub async fn shutdown_requested(&self) {
        let mut stopping = self.inner.shutdown.subscribe();
        // The sender lives as long as this state, so the wait only ends on
        // a shutdown request.
        let _ = stopping.wait_for(|stopping| *stopping).await;
    }
}
