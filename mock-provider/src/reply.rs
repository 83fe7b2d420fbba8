//! What a wire module renders and the small helpers both wires share: a [`Reply`] before it
//! becomes an HTTP response, a provider-shaped JSON error, token estimates and fresh ids.
//! Below both the wires and the exchange that calls them.

use std::time::{SystemTime, UNIX_EPOCH};

use loopback_http::{HeaderValue, Response, StatusCode, header, response};
use serde_json::Value;

use crate::sse::SseEvent;

/// A rendered successful answer, before it becomes an HTTP response.
#[derive(Debug)]
pub(crate) enum Reply {
    /// A non-streamed JSON body; `cut` sends only part of it.
    Json { body: Value, cut: bool },
    /// A streamed SSE answer; `cut` stops after that many events.
    Events {
        events: Vec<SseEvent>,
        cut: Option<u64>,
    },
}

/// A provider-shaped JSON error response with `status`, adding `retry-after` on 429.
pub(crate) fn error_json(status: u16, body: Value) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = response::json(status, &body);
    if status == StatusCode::TOO_MANY_REQUESTS {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    response
}

/// A rough token count for `usage`: about four characters per token, at least one.
/// Hosts only need plausible, deterministic numbers, not a real tokenizer.
pub(crate) fn estimate_tokens(chars: usize) -> u64 {
    u64::try_from(chars.div_ceil(4).max(1)).unwrap_or(u64::MAX)
}

/// Seconds since the Unix epoch, for OpenAI's `created`.
pub(crate) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// A fresh id suffix for response ids (`chatcmpl-…`, `msg_…`).
pub(crate) fn fresh_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}
