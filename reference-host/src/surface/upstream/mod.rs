//! Upstream-only mode (`HostConfig::upstream_only`, `--upstream-only`): the
//! host as a plain upstream OpenWOP v1 host.
//!
//! toolcert has to certify hosts it did not write, and those implement only
//! the upstream v1 contract. In this mode the reference host is such a host,
//! so toolcert's own tests can run against one:
//!
//! - discovery serves the v1 document ([`discovery`]);
//! - every API route lives under `/v1` ([`router`]); the unprefixed v2
//!   paths (`/runs`, `/tools`, `/mcp`, `/conformance/...`) are unknown
//!   routes (404);
//! - `POST /v1/runs` runs only the upstream fixtures ([`workflows`]);
//! - `GET /v1/tools` and `GET /v1/tools/{toolId}` serve the catalog (the
//!   host's own tools, `{tools}` in both views);
//! - the read paths serve v1 event type names ([`v1_event_type`]) and the
//!   v1 poll cursor `lastSequence` ([`runs`]);
//! - with the seams on, only the upstream seams are mounted, under
//!   `/v1/host/sample/` ([`toolhooks`], [`seams`]); they ignore members
//!   they do not know, as an upstream host does.
//!
//! The mode composes the host's state and handlers: Layer-1 idempotency,
//! the effect path, run reads, the rate limiter and authentication are the
//! shared code, so their mutants break `/v1` the same way they break the v2
//! routes. Principals, tokens and storage are as in the default mode.

pub mod common;
pub mod discovery;
pub mod runs;
pub mod seams;
pub mod toolhooks;
pub mod v2;
pub mod workflows;

use axum::Router;
use axum::extract::FromRef;
use axum::routing::{get, post};

use crate::domain::Domain;
use crate::domain::effects;
use crate::surface::discovery::DiscoveryState;
use crate::turn::state::LoopState;

pub use common::{known_members, v1_event, v1_event_type};

/// `implementation.mode` of the v1 discovery document.
pub const MODE: &str = "upstream-only";

/// `POST /v1/runs`.
pub const RUNS_PATH: &str = "/v1/runs";

/// Path of the upstream tool-hooks seam.
pub const TOOLHOOKS_INVOKE_PATH: &str = "/v1/host/sample/toolhooks/invoke";

/// Path of the upstream concurrent-claim seam.
pub const CONCURRENT_CLAIM_PATH: &str = "/v1/host/sample/test/idempotency/concurrent-claim";

/// Path of the upstream Layer-1 hold seam.
pub const HOLD_PATH: &str = "/v1/host/sample/test/idempotency/hold";

/// Path of the upstream effect-retry seam.
pub const EFFECT_RETRY_PATH: &str = "/v1/host/sample/test/idempotency/effect-retry";

/// Path of the upstream OTel span scrape seam (RFC 0034 §B).
pub const OTEL_SPANS_PATH: &str = "/v1/host/sample/test/otel/spans";

/// The routes of upstream-only mode, the seams among them when
/// `seams_enabled`, for any router state the handlers' own states come from.
/// The caller adds the fallback: anything else, the v2 paths included, is
/// 404 `not_found` with the flat `{error, message}` body.
pub fn router<S>(seams_enabled: bool) -> Router<S>
where
    S: Clone + Send + Sync + 'static,
    Domain: FromRef<S>,
    LoopState: FromRef<S>,
    DiscoveryState: FromRef<S>,
{
    let mut router = Router::new()
        .route(
            "/.well-known/openwop",
            get(crate::surface::discovery::get_discovery),
        )
        .route(RUNS_PATH, post(workflows::post_runs))
        .route("/v1/runs/{runId}", get(crate::domain::runs::get_run))
        .route("/v1/runs/{runId}/cancel", post(runs::cancel))
        .route("/v1/runs/{runId}/events", get(runs::stream_events))
        .route("/v1/runs/{runId}/events/poll", get(runs::poll_events))
        .route("/v1/runs/{runId}/effects", get(effects::list_run_effects))
        // v1 tool-catalog.md §B: the catalog, `{tools}` in both views.
        .route(
            "/v1/tools",
            get(crate::surface::catalog_routes::list_tools_v1),
        )
        .route(
            "/v1/tools/{toolId}",
            get(crate::surface::catalog_routes::get_tool),
        );
    if seams_enabled {
        router = router
            .route(TOOLHOOKS_INVOKE_PATH, post(toolhooks::invoke))
            .route(CONCURRENT_CLAIM_PATH, post(seams::concurrent_claim))
            .route(HOLD_PATH, post(seams::hold))
            .route(EFFECT_RETRY_PATH, post(seams::effect_retry))
            .route(OTEL_SPANS_PATH, get(seams::otel_spans));
    }
    router
}
