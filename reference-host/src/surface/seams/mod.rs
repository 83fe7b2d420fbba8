//! Conformance seams: test-only endpoints under `/conformance/seams`.
//!
//! They are mounted only when seams are enabled; otherwise their paths are
//! unknown routes (404 `not_found`). Every seam requires the caller to hold
//! [`SEAMS_SCOPE`].

pub mod effect_fire;
pub mod extract;
pub mod idempotency;
pub mod mcp_client;
pub mod mcp_invoke;
pub mod mcp_mount;
pub mod packs;
pub mod request;
pub mod safe_fetch;
pub mod session_run;
pub mod toolhooks;
pub mod turn_run;

use axum::Router;
use axum::extract::FromRef;
use axum::routing::post;

use crate::domain::Domain;
use crate::surface::mcp_server::McpServer;
use crate::turn::state::LoopState;

pub use extract::{SEAMS_SCOPE, SeamRequest};

/// The seams profile advertised in discovery metadata when seams are on.
pub const SEAMS_PROFILE: &str = "openwop-conformance-seams-v2";

/// Path of the tool-hooks seam.
pub const TOOLHOOKS_INVOKE_PATH: &str = "/conformance/seams/sample/toolhooks/invoke";

/// Path of the turn seam (the host's own tool loop, TTC).
pub const TURN_RUN_PATH: &str = "/conformance/seams/sample/turn/run";

/// Path of the safe-fetch seam: one `ctx.http.safeFetch` in a run of its
/// own (HOOKS-EVT-4, HOOKS-EVT-5, HOOKS-AUTH-5).
pub const SAFE_FETCH_RUN_PATH: &str = "/conformance/seams/sample/http/safe-fetch-run";

/// Path of the effect-seam fire seam: one effect through one row of the
/// effect-seam manifest, in a run of its own (RPL-11).
pub const EFFECT_SEAMS_FIRE_PATH: &str = "/conformance/seams/sample/effect-seams/fire";

/// Path of the packs-test seam: one run of a fixture pack whose nodes'
/// declared roles a replay fork obeys (RPL-2..5).
pub const PACKS_TEST_RUN_PATH: &str = "/conformance/seams/packs-test/run";

/// Path of the concurrent-claim seam (EFF-4 race).
pub const CONCURRENT_CLAIM_PATH: &str =
    "/conformance/seams/sample/test/idempotency/concurrent-claim";

/// Path of the redispatch seam (orphan sweeper on one machine).
pub const REDISPATCH_PATH: &str = "/conformance/seams/sample/test/idempotency/redispatch";

/// Path of the effect-retry seam (EFF-2, EFF-5).
pub const EFFECT_RETRY_PATH: &str = "/conformance/seams/sample/test/idempotency/effect-retry";

/// Path of the Layer-1 hold seam (IDEM-L1-5).
pub const HOLD_PATH: &str = "/conformance/seams/sample/test/idempotency/hold";

/// Path of the MCP negotiation seam (MCP-5, MCP-6, MCP-7).
pub const MCP_INVOKE_PATH: &str = "/conformance/seams/sample/mcp/invoke";

/// Path of the tool-session seam (CAT-13, RFC 0078 §D).
pub const SESSION_RUN_PATH: &str = "/conformance/seams/sample/tools/session-run";

/// Path of the MCP client seam: one `ctx.mcp` call (MCP-13, MCP-15).
pub const MCP_CLIENT_PATH: &str = "/conformance/seams/sample/mcp/client";

/// Path of the MCP mount seam (DESC-6).
pub const MCP_MOUNT_PATH: &str = "/conformance/seams/sample/mcp/mount";

/// Path of the retention sweep seam.
pub const SWEEP_PATH: &str = "/conformance/seams/sample/test/idempotency/sweep";

/// The seam routes, for any router state the handlers' own states come
/// from (the app's, in practice): the seams never see the app's state whole.
pub fn router<S>() -> Router<S>
where
    S: Clone + Send + Sync + 'static,
    Domain: FromRef<S>,
    LoopState: FromRef<S>,
    McpServer: FromRef<S>,
{
    Router::new()
        .route(TOOLHOOKS_INVOKE_PATH, post(toolhooks::invoke))
        .route(TURN_RUN_PATH, post(turn_run::run))
        .route(SAFE_FETCH_RUN_PATH, post(safe_fetch::run))
        .route(EFFECT_SEAMS_FIRE_PATH, post(effect_fire::fire))
        .route(PACKS_TEST_RUN_PATH, post(packs::run))
        .route(CONCURRENT_CLAIM_PATH, post(idempotency::concurrent_claim))
        .route(REDISPATCH_PATH, post(idempotency::redispatch))
        .route(EFFECT_RETRY_PATH, post(idempotency::effect_retry))
        .route(HOLD_PATH, post(idempotency::hold))
        .route(SWEEP_PATH, post(idempotency::sweep))
        .route(MCP_INVOKE_PATH, post(mcp_invoke::invoke))
        .route(SESSION_RUN_PATH, post(session_run::run))
        .route(MCP_MOUNT_PATH, post(mcp_mount::mount))
        .route(MCP_CLIENT_PATH, post(mcp_client::client))
}
