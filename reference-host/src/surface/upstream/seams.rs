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
//! - `GET …/test/otel/spans?runId=` (RFC 0034 §B, `spec/v1/host-sample-test-seams.md` §2) ⇒
//!   `200 {spans: [{name, attributes, events}]}`: the spans of one run of the caller's
//!   tenant. The run span names the Layer-1 key that created the run only by its truncated
//!   salted fingerprint (RFC 0150 §F), never in clear.

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Map, Value, json};

use crate::base::mutant::{Mutant, MutantInfo};
use crate::domain::Domain;
use crate::domain::error::{ApiError, json_response};
use crate::domain::layer1::{self, RUNS_ENDPOINT};
use crate::domain::runs::find_visible_run;
use crate::surface::seams::extract::SeamRequest;
use crate::surface::seams::idempotency::{self, ConcurrentClaimRequest, race_claim};
use crate::surface::upstream::common::{fresh_business_key, known_members};

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

/// Handler for `GET /v1/host/sample/test/otel/spans?runId=`.
pub async fn otel_spans(
    State(state): State<Domain>,
    Query(query): Query<HashMap<String, String>>,
    seam: SeamRequest,
) -> Result<Response, ApiError> {
    let run_id = query
        .get("runId")
        .filter(|id| !id.is_empty())
        .ok_or_else(|| ApiError::validation("query parameter `runId` names the run to scrape"))?;
    let tenant = &seam.caller.tenant;
    let run = find_visible_run(&state, tenant, run_id)?;
    let events = state.storage().events_after(run_id, -1)?;
    let mut attributes = Map::new();
    attributes.insert("openwop.run.id".to_owned(), json!(run.run_id));
    attributes.insert("openwop.run.status".to_owned(), json!(run.status.as_str()));
    if let Some(key) = layer1::key_of_run(state.storage(), tenant, RUNS_ENDPOINT, run_id)? {
        if state.mutant() == Some(Mutant::SpansShowIdempotencyKey) {
            // Bug (IDEM-L1-10): the caller's key in clear in a span.
            attributes.insert("openwop.idempotency.key".to_owned(), json!(key));
        } else {
            attributes.insert(
                "openwop.idempotency.key_fingerprint".to_owned(),
                json!(layer1::key_fingerprint(&key)),
            );
        }
    }
    let span_events: Vec<Value> = events
        .iter()
        .map(|e| json!({"name": super::common::v1_event_type(&e.event_type), "attributes": {"openwop.event.sequence": e.sequence}}))
        .collect();
    Ok(json_response(
        StatusCode::OK,
        &json!({"spans": [{"name": "openwop.run", "attributes": attributes, "events": span_events}]}),
    ))
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[MutantInfo {
    mutant: Mutant::SpansShowIdempotencyKey,
    name: "spans-show-idempotency-key",
    breaks: "the run span of the OTel scrape seam carries the caller's Idempotency-Key in clear",
}];

/// The body the default mode's parser reads.
fn bytes_of(object: Map<String, Value>) -> Bytes {
    Bytes::from(serde_json::to_vec(&Value::Object(object)).unwrap_or_default())
}
