//! The v1 run read paths of upstream-only mode: the events poll and stream
//! with the v1 cursor and v1 event type names, and cancellation.
//!
//! The cursor is `lastSequence` (events with a greater sequence), with
//! `since` as a fallback when `lastSequence` is absent; v2's
//! `afterSequence` is not read. `timeout` and `streamMode` are as in the
//! default mode, and so is `Last-Event-ID` on the stream (it wins over the
//! query). The waiting, filtering and tenant checks are the default mode's
//! ([`crate::domain::runs::poll_page`], [`crate::surface::sse::event_stream`]); only the
//! served event types differ ([`super::common::v1_event`]).

use std::collections::HashMap;

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};

use crate::domain::Domain;
use crate::domain::error::ApiError;
use crate::domain::runs::{PollQuery, authorize_reader, poll_page};
use crate::surface::sse::{event_stream, resume_after};
use crate::surface::upstream::common::v1_event;
use crate::turn::state::LoopState;

/// The v1 cursor parameters, in the order they are read.
const CURSORS: &[&str] = &["lastSequence", "since"];

/// Parses the v1 poll/stream query: `lastSequence` (else `since`),
/// `timeout`, `streamMode`. Problems name the parameter.
pub fn parse_query(
    query: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Result<PollQuery, ApiError> {
    let Query(mut params) = query.map_err(|rejection| {
        ApiError::validation(format!(
            "query string could not be parsed ({}); use lastSequence, timeout and streamMode",
            rejection.body_text()
        ))
    })?;
    let mut after_sequence = None;
    for name in CURSORS {
        if let Some(raw) = params.get(*name) {
            after_sequence = Some(match raw.parse::<i64>() {
                Ok(n) if n >= -1 => n,
                _ => {
                    return Err(ApiError::validation(format!(
                        "query parameter `{name}` must be an integer ≥ -1"
                    )));
                }
            });
            break;
        }
    }
    // v2's cursor means nothing to a v1 host.
    params.remove("afterSequence");
    let mut query = PollQuery::parse(&params)?;
    query.after_sequence = after_sequence;
    Ok(query)
}

/// Handler for `GET /v1/runs/{runId}/events/poll`.
pub async fn poll_events(
    State(state): State<Domain>,
    Path(run_id): Path<String>,
    headers: HeaderMap,
    query: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Result<Response, ApiError> {
    let tenant = authorize_reader(&state, &headers)?.tenant.clone();
    let query = parse_query(query)?;
    let mut page = poll_page(&state, &tenant, &run_id, &query).await?;
    page.events = page.events.into_iter().map(v1_event).collect();
    Ok(Json(page.into_json()).into_response())
}

/// Handler for `GET /v1/runs/{runId}/events`.
pub async fn stream_events(
    State(state): State<Domain>,
    Path(run_id): Path<String>,
    headers: HeaderMap,
    query: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Result<Response, ApiError> {
    let tenant = authorize_reader(&state, &headers)?.tenant.clone();
    let query = parse_query(query)?;
    let after = resume_after(&headers, &query)?;
    event_stream(state, &tenant, run_id, after, query.stream_mode, v1_event)
}

/// Handler for `POST /v1/runs/{runId}/cancel`: the default mode's
/// cancellation ([`crate::surface::run_actions::cancel`]).
pub async fn cancel(
    State(state): State<LoopState>,
    Path(run_id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    crate::surface::run_actions::cancel(&state, &run_id, &headers).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn parse(pairs: &[(&str, &str)]) -> Result<PollQuery, ApiError> {
        let params = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        parse_query(Ok(Query(params)))
    }

    #[test]
    fn last_sequence_then_since_and_never_after_sequence() {
        assert_eq!(parse(&[]).expect("ok").after_sequence, None);
        assert_eq!(
            parse(&[("lastSequence", "3")]).expect("ok").after_sequence,
            Some(3)
        );
        assert_eq!(
            parse(&[("since", "2")]).expect("ok").after_sequence,
            Some(2)
        );
        assert_eq!(
            parse(&[("lastSequence", "4"), ("since", "1")])
                .expect("ok")
                .after_sequence,
            Some(4)
        );
        assert_eq!(
            parse(&[("afterSequence", "5")]).expect("ok").after_sequence,
            None
        );
        // Not even a malformed one is looked at.
        assert!(parse(&[("afterSequence", "x")]).is_ok());
        let query = parse(&[
            ("lastSequence", "-1"),
            ("timeout", "2"),
            ("streamMode", "debug"),
        ])
        .expect("ok");
        assert_eq!(query.after_sequence, Some(-1));
        assert_eq!(query.timeout, Some(Duration::from_secs(2)));
    }

    #[test]
    fn bad_cursors_name_the_parameter() {
        for (name, value) in [
            ("lastSequence", "x"),
            ("lastSequence", "-2"),
            ("since", "1.5"),
        ] {
            let err = parse(&[(name, value)]).unwrap_err();
            assert!(
                err.message.contains(name),
                "{name}={value}: {}",
                err.message
            );
        }
        let err = parse(&[("timeout", "0")]).unwrap_err();
        assert!(err.message.contains("timeout"), "{}", err.message);
    }
}
