//! Conformance seams: test-only endpoints under `/conformance/seams`.
//!
//! They are mounted only when seams are enabled; otherwise their paths are
//! unknown routes (404 `not_found`). Every seam requires the caller to hold
//! [`SEAMS_SCOPE`].

pub mod request;
pub mod toolhooks;

use axum::Router;
use axum::routing::post;

use crate::app::AppState;

/// The scope a caller needs to use any seam.
pub const SEAMS_SCOPE: &str = "conformance:seams";

/// The seams profile advertised in discovery metadata when seams are on.
pub const SEAMS_PROFILE: &str = "openwop-conformance-seams-v2";

/// Path of the tool-hooks seam.
pub const TOOLHOOKS_INVOKE_PATH: &str = "/conformance/seams/sample/toolhooks/invoke";

/// Path of the turn seam (the host's own tool loop, TTC).
pub const TURN_RUN_PATH: &str = "/conformance/seams/sample/turn/run";

/// The seam routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route(TOOLHOOKS_INVOKE_PATH, post(toolhooks::invoke))
        .route(TURN_RUN_PATH, post(crate::turn::seam::run))
}
