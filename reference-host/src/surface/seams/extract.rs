//! The extractor every seam handler takes ([`SeamRequest`]): the caller is
//! authenticated and holds [`SEAMS_SCOPE`] before a byte of the body is read.
//! Below the seam router ([`super`]) and the seams, which all use it.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{FromRef, FromRequest, Request};
use axum::http::HeaderMap;

use crate::base::principals::Principal;
use crate::domain::Domain;
use crate::domain::auth::{authenticate, require_scope};
use crate::domain::error::ApiError;
use crate::domain::json_body::body_rejection;

/// The scope a caller needs to use any seam.
pub const SEAMS_SCOPE: &str = "conformance:seams";

/// The caller of a seam, authenticated and holding [`SEAMS_SCOPE`]. Every seam checks its
/// caller before it reads the body, so an unauthenticated or unscoped caller learns nothing
/// about its request.
fn seam_caller<'s>(state: &'s Domain, headers: &HeaderMap) -> Result<&'s Principal, ApiError> {
    let caller = authenticate(headers, state.principals())?;
    require_scope(caller, SEAMS_SCOPE)?;
    Ok(caller)
}

/// A seam's request body, or the 400 of an unreadable one.
fn seam_body(body: Result<Bytes, BytesRejection>) -> Result<Bytes, ApiError> {
    body.map_err(|rejection| body_rejection(&rejection))
}

/// A seam request: its caller, authenticated and holding [`SEAMS_SCOPE`] (`seam_caller`),
/// and then its body. The one extractor every seam handler takes, so no seam reads a byte of
/// its body for a caller it refuses.
#[derive(Debug)]
pub struct SeamRequest {
    /// The authenticated caller.
    pub caller: Principal,
    /// The request body, read after the caller was accepted.
    pub body: Bytes,
}

impl<S> FromRequest<S> for SeamRequest
where
    Domain: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        let domain = Domain::from_ref(state);
        let caller = seam_caller(&domain, request.headers())?.clone();
        let body = seam_body(Bytes::from_request(request, state).await)?;
        Ok(Self { caller, body })
    }
}
