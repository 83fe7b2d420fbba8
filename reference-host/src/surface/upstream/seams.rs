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
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::{Map, Value, json};

use crate::domain::Domain;
use crate::domain::error::{ApiError, json_response};
use crate::surface::seams::idempotency::{self, ConcurrentClaimRequest, race_claim};
use crate::surface::seams::{seam_body, seam_caller};
use crate::surface::upstream::{fresh_business_key, known_members};

/// Handler for `POST /v1/host/sample/test/idempotency/concurrent-claim`.
pub async fn concurrent_claim(
    State(state): State<Domain>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let caller = seam_caller(&state, &headers)?;
    let mut request = known_members(&seam_body(body)?, &["executors"])?;
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
pub async fn hold(
    State(state): State<Domain>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    seam_caller(&state, &headers)?;
    let request = known_members(&seam_body(body)?, &["key", "holdMs"])?;
    idempotency::hold(State(state), headers, Ok(bytes_of(request))).await
}

/// Handler for `POST /v1/host/sample/test/idempotency/effect-retry`.
pub async fn effect_retry(
    State(state): State<Domain>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    seam_caller(&state, &headers)?;
    let mut request = known_members(&seam_body(body)?, &["providerUrl"])?;
    request.insert("businessKey".to_owned(), json!(fresh_business_key()));
    idempotency::effect_retry(State(state), headers, Ok(bytes_of(request))).await
}

/// The body the default mode's parser reads.
fn bytes_of(object: Map<String, Value>) -> Bytes {
    Bytes::from(serde_json::to_vec(&Value::Object(object)).unwrap_or_default())
}
