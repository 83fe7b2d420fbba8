//! The upstream idempotency seams of upstream-only mode, under
//! `/v1/host/sample/test/idempotency/`.
//!
//! Each is the default mode's seam ([`crate::surface::seams::idempotency`]) with the
//! upstream request shape: members the upstream contract does not define
//! (toolcert's `receiverUrl`, `businessKey`, `principal`) are ignored, not
//! refused, and each request is one logical invocation of its own. The
//! caller checks are the default mode's (401 unauthenticated, 403 without
//! `conformance:seams`), before the body is read.
//!
//! - `concurrent-claim {executors}` ⇒ `200 {logicalInvocationId, mintedIds,
//!   attempted, delivered}`; the effect goes to the built-in no-op ledger
//!   (the upstream request names no provider), so `delivered` counts the
//!   executors that won the claim.
//! - `hold {key, holdMs: 1..10000}` ⇒ `201 {key, holdMs}`.
//! - `effect-retry {providerUrl}` ⇒ `201 {runId, effectId}`.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Map, Value, json};

use crate::domain::Domain;
use crate::domain::error::{ApiError, json_response};
use crate::surface::seams::SeamRequest;
use crate::surface::seams::idempotency::{self, ConcurrentClaimRequest, race_claim};
use crate::surface::upstream::{fresh_business_key, known_members};

/// Handler for `POST /v1/host/sample/test/idempotency/concurrent-claim`.
pub async fn concurrent_claim(
    State(state): State<Domain>,
    seam: SeamRequest,
) -> Result<Response, ApiError> {
    let caller = &seam.caller;
    let mut request = known_members(&seam.body, &["executors"])?;
    request.insert("businessKey".to_owned(), json!(fresh_business_key()));
    let request = ConcurrentClaimRequest::parse(&bytes_of(request))?;
    let race = race_claim(&state, caller, request).await?;
    Ok(json_response(
        StatusCode::OK,
        &json!({
            "logicalInvocationId": race.logical_invocation_id,
            "mintedIds": race.minted_ids,
            "attempted": race.attempted,
            "delivered": race.delivered,
        }),
    ))
}

/// Handler for `POST /v1/host/sample/test/idempotency/hold`.
pub async fn hold(State(state): State<Domain>, seam: SeamRequest) -> Result<Response, ApiError> {
    let request = known_members(&seam.body, &["key", "holdMs"])?;
    let body = bytes_of(request);
    idempotency::hold(State(state), SeamRequest { body, ..seam }).await
}

/// Handler for `POST /v1/host/sample/test/idempotency/effect-retry`.
pub async fn effect_retry(
    State(state): State<Domain>,
    seam: SeamRequest,
) -> Result<Response, ApiError> {
    let mut request = known_members(&seam.body, &["providerUrl"])?;
    request.insert("businessKey".to_owned(), json!(fresh_business_key()));
    let body = bytes_of(request);
    idempotency::effect_retry(State(state), SeamRequest { body, ..seam }).await
}

/// The body the default mode's parser reads.
fn bytes_of(object: Map<String, Value>) -> Bytes {
    Bytes::from(serde_json::to_vec(&Value::Object(object)).unwrap_or_default())
}
