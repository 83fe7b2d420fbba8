//! The webhook routes (RPL-8): `POST /webhooks` subscribes a loopback URL
//! to the events of the caller's tenant, `DELETE /webhooks/{webhookId}`
//! ends it. The subscriptions and their fan-out are
//! [`crate::domain::webhooks`].

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use reqwest::Url;
use serde_json::{Map, Value, json};

use crate::domain::Domain;
use crate::domain::auth::authenticate;
use crate::domain::error::{ApiError, json_response};
use crate::domain::json_body::require_loopback_http;
use crate::domain::json_body::{Fields, body_rejection, parse_object};
use crate::domain::webhooks::{subscribe, unsubscribe};

/// The members of a `POST /webhooks` body (closed).
const WEBHOOK_FIELDS: &[&str] = &["url", "events"];

/// Most event types one subscription may filter on.
pub const MAX_EVENT_TYPES: usize = 32;

/// A checked `POST /webhooks` body.
#[derive(Debug, Clone, PartialEq, Eq)]
struct WebhookRequest {
    raw_url: String,
    url: Url,
    events: Option<Vec<String>>,
}

fn parse_webhook(body: &[u8]) -> Result<WebhookRequest, ApiError> {
    let mut fields = Fields::closed(parse_object(body)?, WEBHOOK_FIELDS)?;
    let raw_url = fields.required_string("url")?;
    let url = require_loopback_http("url", &raw_url)?;
    let events = fields.optional_string_array("events")?;
    if let Some(types) = &events {
        if types.is_empty() || types.len() > MAX_EVENT_TYPES {
            return Err(ApiError::validation(format!(
                "field `events` must list 1 to {MAX_EVENT_TYPES} event types (omit it for every type)"
            )));
        }
        if types.iter().any(String::is_empty) {
            return Err(ApiError::validation(
                "field `events` must not contain an empty string",
            ));
        }
        if types
            .iter()
            .enumerate()
            .any(|(i, t)| types[..i].contains(t))
        {
            return Err(ApiError::validation(
                "field `events` must not list an event type twice",
            ));
        }
    }
    Ok(WebhookRequest {
        raw_url,
        url,
        events,
    })
}

/// Handler for `POST /webhooks`: any authenticated principal subscribes a
/// loopback URL to its tenant's events; 201 `{webhookId, url, events?}`.
pub async fn post_webhook(
    State(state): State<Domain>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let caller = authenticate(&headers, state.principals())?;
    let body = body.map_err(|rejection| body_rejection(&rejection))?;
    let request = parse_webhook(&body)?;
    let webhook_id = subscribe(
        state.fanout(),
        state.storage(),
        &caller.tenant,
        request.url,
        request.events.clone(),
    )?;
    let mut answer = Map::new();
    answer.insert("webhookId".into(), json!(webhook_id));
    answer.insert("url".into(), json!(request.raw_url));
    if let Some(events) = request.events {
        answer.insert("events".into(), json!(events));
    }
    Ok(json_response(StatusCode::CREATED, &Value::Object(answer)))
}

/// Handler for `DELETE /webhooks/{webhookId}`: 204, or 404 when no
/// subscription of the caller's tenant has that id.
pub async fn delete_webhook(
    State(state): State<Domain>,
    Path(webhook_id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let caller = authenticate(&headers, state.principals())?;
    if !unsubscribe(state.fanout(), &caller.tenant, &webhook_id) {
        return Err(ApiError::not_found(format!(
            "webhook `{webhook_id}` does not exist; use a webhookId returned by POST /webhooks"
        )));
    }
    Ok(Response::builder()
        .status(StatusCode::NO_CONTENT)
        .body(axum::body::Body::empty())
        .unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::error::ErrorCode;

    #[test]
    fn webhook_bodies_are_closed_and_checked() {
        let ok =
            parse_webhook(br#"{"url": "http://127.0.0.1:9/hook", "events": ["run.completed"]}"#)
                .expect("valid");
        assert_eq!(ok.events, Some(vec!["run.completed".to_owned()]));
        assert!(
            parse_webhook(br#"{"url": "http://localhost:9/"}"#)
                .expect("valid")
                .events
                .is_none()
        );
        let too_many: Vec<String> = (0..33).map(|i| format!("t{i}")).collect();
        let too_many = json!({"url": "http://127.0.0.1:9/", "events": too_many}).to_string();
        for (bad, field) in [
            (&br#"{}"#[..], "url"),
            (br#"{"url": "https://127.0.0.1/"}"#, "url"),
            (br#"{"url": "http://example.com/"}"#, "url"),
            (br#"{"url": "http://127.0.0.1/", "extra": 1}"#, "extra"),
            (br#"{"url": "http://127.0.0.1/", "events": []}"#, "events"),
            (
                br#"{"url": "http://127.0.0.1/", "events": ["a", "a"]}"#,
                "events",
            ),
            (br#"{"url": "http://127.0.0.1/", "events": [""]}"#, "events"),
            (br#"{"url": "http://127.0.0.1/", "events": [1]}"#, "events"),
            (too_many.as_bytes(), "events"),
        ] {
            let err = parse_webhook(bad).expect_err("rejected");
            assert_eq!(err.code, ErrorCode::ValidationError);
            assert!(err.message.contains(field), "{}", err.message);
        }
    }
}
