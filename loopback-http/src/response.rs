//! The responses the doubles build most: JSON, plain text, a bare status; and the answer to
//! a request body that could not be read ([`RequestBody::read_or_reject`]).

use bytes::Bytes;
use http::{HeaderValue, StatusCode, header};
use serde_json::Value;

use crate::body::{Body, BodyError, DEFAULT_BODY_LIMIT, RequestBody, Response};

/// `status` with `body` as compact JSON (`content-type: application/json`).
pub fn json(status: StatusCode, body: &Value) -> Response {
    with_type(status, "application/json", Body::from(body.to_string()))
}

/// `status` with a plain-text body (`content-type: text/plain; charset=utf-8`).
pub fn text(status: StatusCode, body: impl Into<String>) -> Response {
    with_type(status, "text/plain; charset=utf-8", Body::from(body.into()))
}

/// `status` with an empty body.
pub fn status(status: StatusCode) -> Response {
    let mut response = Response::new(Body::empty());
    *response.status_mut() = status;
    response
}

/// `status` with `body` of the given `content-type`.
pub fn with_type(status: StatusCode, content_type: &'static str, body: Body) -> Response {
    let mut response = Response::new(body);
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

impl RequestBody {
    /// [`RequestBody::read`] with at most [`DEFAULT_BODY_LIMIT`] bytes; a failure is already
    /// the answer: `413` (or `400` for a broken transfer) with a plain-text reason.
    pub async fn read_or_reject(self) -> Result<Bytes, Response> {
        self.read(DEFAULT_BODY_LIMIT).await.map_err(|e| {
            let status = match e {
                BodyError::TooLarge => http::StatusCode::PAYLOAD_TOO_LARGE,
                BodyError::Transport(_) => http::StatusCode::BAD_REQUEST,
            };
            text(status, format!("Failed to buffer the request body: {e}"))
        })
    }
}
