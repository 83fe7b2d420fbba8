//! The A2A routes: the agent card at `GET /.well-known/agent-card.json`,
//! negotiated by the `A2A-Version` header ([`crate::domain::a2a`]).
//!
//! The card is public (A2A discovery needs no credential); it names no
//! tenant, principal or task.

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;

use crate::domain::a2a::{self, Negotiated};
use crate::domain::error::{ApiError, ErrorCode, json_response};
use crate::surface::app::AppState;

/// Longest `A2A-Version` header read.
const MAX_VERSION_LEN: usize = 32;

/// Handler for `GET /.well-known/agent-card.json`.
pub async fn get_agent_card(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let mutant = state.mutant();
    let requested = match headers.get("a2a-version") {
        None => None,
        Some(value) => Some(
            value
                .to_str()
                .ok()
                .filter(|v| v.len() <= MAX_VERSION_LEN)
                .ok_or_else(|| {
                    ApiError::validation(
                        "header `A2A-Version` must be a major.minor version such as 1.0",
                    )
                })?,
        ),
    };
    let version = match a2a::negotiate(requested, mutant) {
        Negotiated::Serve(version) => version,
        Negotiated::Malformed => {
            return Err(ApiError::validation(
                "header `A2A-Version` must be a major.minor version such as 1.0",
            ));
        }
        Negotiated::BelowFloor => {
            let requested = requested.unwrap_or_default();
            return Err(ApiError::new(
                ErrorCode::InteropVersionUnsupported,
                format!(
                    "A2A version {requested} is below this host's minimumVersion {}; ask for one of {:?}",
                    a2a::MINIMUM_VERSION,
                    a2a::VERSIONS
                ),
            )
            .with_details(a2a::refusal_details(requested)));
        }
    };
    // The interfaces live on this host: the origin the caller reached.
    let host = headers
        .get("host")
        .and_then(|h| h.to_str().ok())
        .filter(|h| h.bytes().all(|b| b.is_ascii_graphic()))
        .unwrap_or("127.0.0.1");
    let card = a2a::agent_card(version, &format!("http://{host}"), mutant);
    let mut response = json_response(StatusCode::OK, &card);
    response
        .headers_mut()
        .insert("a2a-version", HeaderValue::from_static(version));
    Ok(response)
}
