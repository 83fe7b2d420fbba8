//! The error answers of the v2 surface as a client receives them, and the unadvertised
//! routes: where the error-envelope mutants (ERR-1, ERR-2) and the served-unadvertised-family
//! mutant (DISC-4) are planted.
//!
//! The clean host changes nothing here: every error body is already the closed envelope
//! [`crate::domain::error::ApiError`] writes, with its code's status. A mutant site is
//! compared only on an error answer, so the probe host records it only for scenarios that
//! provoke errors.

use axum::body::{Body, to_bytes};
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::base::mutant::{Mutant, MutantInfo};
use crate::domain::Domain;
use crate::domain::error::{ApiError, json_response};

/// The largest error body the mutants rewrite (the host's own bodies are far smaller).
const MAX_ERROR_BODY: usize = 1 << 20;

/// Middleware over every v2 route: passes answers through, except under the envelope mutants.
pub async fn shape_errors(State(domain): State<Domain>, request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    let extra_key = domain.mutant_is(Mutant::ErrorBodyExtraKey);
    let not_found_400 = status == StatusCode::NOT_FOUND && domain.mutant_is(Mutant::NotFoundAs400);
    if !extra_key && !not_found_400 {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = to_bytes(body, MAX_ERROR_BODY).await else {
        return ApiError::internal("the host could not read its own error answer").into_response();
    };
    let mut envelope: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    if extra_key && let Some(object) = envelope.as_object_mut() {
        // Bug: the closed envelope grows a member (ERR-1).
        object.insert("status".to_owned(), json!(status.as_u16()));
    }
    if not_found_400 {
        // Bug: `not_found` sent with another code's status (ERR-2).
        parts.status = StatusCode::BAD_REQUEST;
    }
    parts.headers.remove(header::CONTENT_LENGTH);
    let bytes = serde_json::to_vec(&envelope).unwrap_or_default();
    Response::from_parts(parts, Body::from(bytes))
}

/// `GET /prompts` (`listPromptTemplates`): the `prompts` family, which this host does not
/// advertise, so the route answers `404 not_found` like any operation of an unadvertised
/// family (DISC-4).
pub async fn prompts(State(domain): State<Domain>) -> Response {
    if domain.mutant_is(Mutant::UnadvertisedFamilyServed) {
        // Bug: an operation of a family discovery does not advertise is served.
        return json_response(StatusCode::OK, &json!({"templates": []}));
    }
    ApiError::not_found(
        "this host does not advertise the `prompts` family, so it serves no prompt templates",
    )
    .into_response()
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[
    MutantInfo {
        mutant: Mutant::ErrorBodyExtraKey,
        name: "error-body-extra-key",
        breaks: "every error body also carries a `status` member (the envelope is closed)",
    },
    MutantInfo {
        mutant: Mutant::NotFoundAs400,
        name: "not-found-as-400",
        breaks: "a `not_found` error is sent with HTTP 400 instead of its registered 404",
    },
    MutantInfo {
        mutant: Mutant::UnadvertisedFamilyServed,
        name: "unadvertised-family-served",
        breaks: "GET /prompts answers 200 although discovery advertises no `prompts` family",
    },
];
