//! Error types: the closed v2 error envelope served to clients, and the
//! errors that can stop the host from starting.
//!
//! Every 4xx/5xx body this host writes is exactly
//! `{"error": CODE, "message": "...", "details"?: {...}}` (v2 closed
//! envelope). `Retry-After` travels as a header, never inside `details`.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

/// The closed set of v2 error codes this host emits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// 400: the request is malformed or fails validation.
    ValidationError,
    /// 401: no bearer token, or one that names no principal.
    Unauthenticated,
    /// 403: the caller (or the attributed principal) lacks a required scope.
    Forbidden,
    /// 404: no such route or resource.
    NotFound,
    /// 429: a rate limit is exhausted; always sent with `Retry-After`.
    RateLimited,
    /// 500: the host failed; the request may be retried.
    InternalError,
    /// 400: an `Idempotency-Key` header does not match
    /// `^[A-Za-z0-9._~-]{22,128}$` (v2 idempotency §Layer 1, key grammar).
    IdempotencyKeyInvalid,
    /// 409: the key was used before with a different request body.
    IdempotencyKeyMismatch,
    /// 409: the first request with this key is still being processed;
    /// always sent with `Retry-After`.
    IdempotencyInFlight,
    /// 409 `idempotency_key_conflict`: NOT a v2 code. Only the
    /// `l1-mismatch-wrong-code` mutant sends it, in place of
    /// [`ErrorCode::IdempotencyKeyMismatch`].
    IdempotencyKeyConflict,
    /// 503: the host cannot serve the request now; always sent with
    /// `Retry-After`, and a retry may succeed.
    ServiceUnavailable,
    /// 422: the host does not serve what was asked (a `branch` fork, or a
    /// replay fork of a run that is not a turn run; RPL-9).
    CapabilityNotProvided,
    /// 409 `refhost.run_already_terminal`: a vendor code (ERR-1 allows
    /// `vendor.code` names outside `openwop.`) for an action on a run that
    /// already finished, e.g. `:cancel` on a completed run. No registered
    /// v2 code says this, and borrowing an idempotency code misled callers.
    RunAlreadyTerminal,
    /// 404 `workflow_not_found`: the v1 code of an unknown `workflowId`.
    /// Only the upstream-only mode sends it ([`crate::surface::upstream`]); the v2
    /// host answers `not_found`.
    WorkflowNotFound,
    /// 403 `id_tenant_mismatch`: a tenant-bound id whose tenant segment is
    /// not the caller's (identity.md §5; v2 upstream-only mode).
    IdTenantMismatch,
    /// 422 `fork_point_invalid`: a fork's `fromSeq` names no event of the
    /// source log (runs.md §Fork).
    ForkPointInvalid,
    /// 400 `interop_version_unsupported`: an MCP or A2A negotiation would
    /// land below the advertised floor (MCP-5, A2A-3); `details` say
    /// `protocol`, `requested` and `supported[]`.
    InteropVersionUnsupported,
}

impl ErrorCode {
    /// The wire string of the code.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ValidationError => "validation_error",
            Self::Unauthenticated => "unauthenticated",
            Self::Forbidden => "forbidden",
            Self::NotFound => "not_found",
            Self::RateLimited => "rate_limited",
            Self::InternalError => "internal_error",
            Self::IdempotencyKeyInvalid => "idempotency_key_invalid",
            Self::IdempotencyKeyMismatch => "idempotency_key_mismatch",
            Self::IdempotencyInFlight => "idempotency_in_flight",
            Self::IdempotencyKeyConflict => "idempotency_key_conflict",
            Self::ServiceUnavailable => "service_unavailable",
            Self::CapabilityNotProvided => "capability_not_provided",
            Self::RunAlreadyTerminal => "refhost.run_already_terminal",
            Self::WorkflowNotFound => "workflow_not_found",
            Self::InteropVersionUnsupported => "interop_version_unsupported",
            Self::IdTenantMismatch => "id_tenant_mismatch",
            Self::ForkPointInvalid => "fork_point_invalid",
        }
    }

    /// The HTTP status that always accompanies the code.
    pub fn status(self) -> StatusCode {
        match self {
            Self::ValidationError => StatusCode::BAD_REQUEST,
            Self::Unauthenticated => StatusCode::UNAUTHORIZED,
            Self::Forbidden | Self::IdTenantMismatch => StatusCode::FORBIDDEN,
            Self::NotFound | Self::WorkflowNotFound => StatusCode::NOT_FOUND,
            Self::RateLimited => StatusCode::TOO_MANY_REQUESTS,
            Self::InternalError => StatusCode::INTERNAL_SERVER_ERROR,
            Self::IdempotencyKeyInvalid | Self::InteropVersionUnsupported => {
                StatusCode::BAD_REQUEST
            }
            Self::IdempotencyKeyMismatch
            | Self::IdempotencyInFlight
            | Self::IdempotencyKeyConflict
            | Self::RunAlreadyTerminal => StatusCode::CONFLICT,
            Self::ServiceUnavailable => StatusCode::SERVICE_UNAVAILABLE,
            Self::CapabilityNotProvided | Self::ForkPointInvalid => {
                StatusCode::UNPROCESSABLE_ENTITY
            }
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error answered to a client as the v2 error envelope.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ApiError {
    /// The envelope's `error` code (also decides the HTTP status).
    pub code: ErrorCode,
    /// What is wrong and what would fix it; never empty.
    pub message: String,
    /// Optional structured details.
    pub details: Option<Map<String, Value>>,
    /// Whole seconds for the `Retry-After` header (429, 503 and
    /// `idempotency_in_flight` only).
    pub retry_after_secs: Option<u64>,
}

impl ApiError {
    /// An error with a code and message, no details.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        let mut message = message.into();
        if message.trim().is_empty() {
            // The envelope requires a non-empty message; never send a blank one.
            message = format!("request failed with {code}");
        }
        Self {
            code,
            message,
            details: None,
            retry_after_secs: None,
        }
    }

    /// 400 `validation_error`.
    pub fn validation(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::ValidationError, message)
    }

    /// 401 `unauthenticated`.
    pub fn unauthenticated(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Unauthenticated, message)
    }

    /// 403 `forbidden`.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Forbidden, message)
    }

    /// 404 `not_found`.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::NotFound, message)
    }

    /// 500 `internal_error`.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InternalError, message)
    }

    /// Attaches `details`.
    pub fn with_details(mut self, details: Map<String, Value>) -> Self {
        self.details = Some(details);
        self
    }

    /// Attaches a `Retry-After` value; clamped to at least 1 s because a
    /// `Retry-After: 0` would invite an immediate retry that must fail again.
    pub fn with_retry_after(mut self, secs: u64) -> Self {
        self.retry_after_secs = Some(secs.max(1));
        self
    }

    /// The envelope body as JSON.
    pub fn body(&self) -> Value {
        let mut body = json!({
            "error": self.code.as_str(),
            "message": self.message,
        });
        if let (Some(details), Some(object)) = (&self.details, body.as_object_mut()) {
            object.insert("details".to_owned(), Value::Object(details.clone()));
        }
        body
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = json_response(self.code.status(), &self.body());
        if let Some(secs) = self.retry_after_secs {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }
}

impl From<crate::store::storage::StorageError> for ApiError {
    fn from(_: crate::store::storage::StorageError) -> Self {
        // Storage internals are not the client's business (and could carry
        // stored payloads); the message says only what the client can do.
        Self::internal("the host's run store failed; retry the request")
    }
}

/// A response with a JSON body and `content-type: application/json`.
pub fn json_response(status: StatusCode, body: &Value) -> Response {
    // Serialising a `Value` cannot fail (all keys are strings), so the empty
    // fallback is unreachable in practice; it keeps this path panic-free.
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    let mut response = (status, bytes).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// Errors that stop [`crate::start`] or [`crate::AppState::new`].
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// The listening socket could not be bound.
    #[error("cannot bind {addr}: {source}")]
    Bind {
        /// The address that was asked for.
        addr: std::net::SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
    /// The SQLite store could not be opened, prepared or recovered.
    #[error("the run store failed: {0}")]
    Storage(#[from] crate::store::storage::StorageError),
    /// An outbound HTTP client (tool receivers, safeFetch, providers) could
    /// not be built.
    #[error("cannot build an outbound HTTP client: {0}")]
    HttpClient(#[source] reqwest::Error),
    /// The principals list is invalid.
    #[error("invalid principals: {0}")]
    Principals(#[from] crate::base::principals::PrincipalsError),
    /// The durable store (`--data-dir`) could not be opened as it is; the
    /// message names the file or directory and what would fix it.
    #[error(transparent)]
    Store(#[from] crate::store::storage::StoreOpenError),
    /// Any other I/O failure while starting.
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn body_of(response: Response) -> (StatusCode, axum::http::HeaderMap, Value) {
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .expect("body readable");
        let value = serde_json::from_slice(&bytes).expect("json body");
        (status, headers, value)
    }

    #[tokio::test]
    async fn envelope_has_exactly_error_and_message() {
        let (status, headers, body) =
            body_of(ApiError::not_found("no such run").into_response()).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert_eq!(headers[header::CONTENT_TYPE], "application/json");
        assert_eq!(
            body,
            json!({"error": "not_found", "message": "no such run"})
        );
    }

    #[tokio::test]
    async fn envelope_carries_details_and_retry_after_header() {
        let mut details = Map::new();
        details.insert("scope".into(), json!("tool"));
        let err = ApiError::new(ErrorCode::RateLimited, "slow down")
            .with_details(details)
            .with_retry_after(0);
        let (status, headers, body) = body_of(err.into_response()).await;
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(headers[header::RETRY_AFTER], "1");
        assert_eq!(
            body,
            json!({"error": "rate_limited", "message": "slow down", "details": {"scope": "tool"}})
        );
    }

    #[test]
    fn empty_message_is_replaced() {
        let err = ApiError::validation("  ");
        assert!(!err.message.trim().is_empty());
    }

    #[test]
    fn every_code_maps_to_its_status() {
        let pairs = [
            (ErrorCode::ValidationError, 400),
            (ErrorCode::Unauthenticated, 401),
            (ErrorCode::Forbidden, 403),
            (ErrorCode::NotFound, 404),
            (ErrorCode::RateLimited, 429),
            (ErrorCode::InternalError, 500),
            (ErrorCode::IdempotencyKeyInvalid, 400),
            (ErrorCode::IdempotencyKeyMismatch, 409),
            (ErrorCode::IdempotencyInFlight, 409),
            (ErrorCode::IdempotencyKeyConflict, 409),
            (ErrorCode::ServiceUnavailable, 503),
            (ErrorCode::CapabilityNotProvided, 422),
            (ErrorCode::RunAlreadyTerminal, 409),
            (ErrorCode::WorkflowNotFound, 404),
        ];
        for (code, status) in pairs {
            assert_eq!(code.status().as_u16(), status, "{code}");
        }
    }
}
