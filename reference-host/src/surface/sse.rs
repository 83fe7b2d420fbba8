//! `GET /runs/{runId}/events`: a run's events as server-sent events.
//!
//! Each event is one frame, `id: <sequence>`, `event: <type>`,
//! `data: <RunEventDoc JSON>`, so a client that reconnects with
//! `Last-Event-ID` resumes right after the last sequence it saw (the header
//! wins over `?afterSequence=`). `streamMode` filters as the poll does. A
//! keep-alive comment goes out after 5 s of silence; the stream ends once
//! the run is terminal and its last event has been sent, and after 60 s
//! whatever happens, so no connection is held open unbounded.

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::base::events::{RunEventDoc, visible_in_updates};
use crate::domain::Domain;
use crate::domain::error::ApiError;
use crate::domain::runs::{PollQuery, StreamMode, authorize_reader, find_visible_run};

/// Silence after which a keep-alive comment is sent.
pub const KEEP_ALIVE_EVERY: Duration = Duration::from_secs(5);

/// Longest a stream stays open.
pub const MAX_STREAM: Duration = Duration::from_secs(60);

/// The keep-alive frame (an SSE comment, ignored by clients).
pub const KEEP_ALIVE_FRAME: &str = ": keep-alive\n\n";

/// The SSE frame of one event. The envelope JSON is one line (serde_json
/// escapes control characters), so one `data:` line carries it.
pub fn frame(event: &RunEventDoc) -> String {
    let data = serde_json::to_string(event).unwrap_or_else(|_| "{}".to_owned());
    format!(
        "id: {}\nevent: {}\ndata: {data}\n\n",
        event.sequence, event.event_type
    )
}

/// The sequence to resume after: `Last-Event-ID` if sent, else
/// `afterSequence`, else everything (-1).
pub fn resume_after(headers: &HeaderMap, query: &PollQuery) -> Result<i64, ApiError> {
    let Some(value) = headers.get("last-event-id") else {
        return Ok(query.after_sequence.unwrap_or(-1));
    };
    value
        .to_str()
        .ok()
        .and_then(|text| text.trim().parse::<i64>().ok())
        .filter(|sequence| *sequence >= -1)
        .ok_or_else(|| {
            ApiError::validation(
                "header `Last-Event-ID` must be an event sequence (an integer ≥ -1) sent by this stream",
            )
        })
}

/// Handler for `GET /runs/{runId}/events`.
pub async fn stream_events(
    State(state): State<Domain>,
    Path(run_id): Path<String>,
    headers: HeaderMap,
    query: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Result<Response, ApiError> {
    let tenant = authorize_reader(&state, &headers)?.tenant.clone();
    let query = PollQuery::from_request(query)?;
    let after = resume_after(&headers, &query)?;
    event_stream(
        state,
        &tenant,
        run_id,
        after,
        query.stream_mode,
        std::convert::identity,
    )
}

/// The stream itself, for a caller of `tenant` (already authorized), from
/// after sequence `after`. Every event passes through `view` on its way
/// out (the v2 stream sends them as stored; the upstream-only mode's v1
/// stream renames their types, [`crate::surface::upstream`]).
pub fn event_stream(
    state: Domain,
    tenant: &str,
    run_id: String,
    after: i64,
    mode: StreamMode,
    view: fn(RunEventDoc) -> RunEventDoc,
) -> Result<Response, ApiError> {
    find_visible_run(&state, tenant, &run_id)?;
    // Subscribed before the first read, so no write can slip between.
    let changes = state
        .storage()
        .subscribe_run(&run_id)
        .ok_or_else(|| ApiError::not_found(format!("run `{run_id}` does not exist")))?;
    let cursor = Cursor {
        state,
        run_id,
        after,
        mode,
        view,
        changes,
        deadline: Instant::now() + MAX_STREAM,
        pending: VecDeque::new(),
        finished: false,
    };
    let stream = futures_util::stream::unfold(cursor, |cursor| cursor.next_frame());
    let mut response = (StatusCode::OK, Body::from_stream(stream)).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    Ok(response)
}

/// Where one stream is.
struct Cursor {
    state: Domain,
    run_id: String,
    /// Last sequence read (sent, or filtered out).
    after: i64,
    mode: StreamMode,
    /// How each event is shown.
    view: fn(RunEventDoc) -> RunEventDoc,
    changes: watch::Receiver<u64>,
    deadline: Instant,
    pending: VecDeque<String>,
    finished: bool,
}

impl Cursor {
    /// The next frame, or `None` when the stream ends.
    async fn next_frame(mut self) -> Option<(Result<Bytes, Infallible>, Self)> {
        loop {
            if let Some(frame) = self.pending.pop_front() {
                return Some((Ok(Bytes::from(frame)), self));
            }
            if self.finished || Instant::now() >= self.deadline {
                return None;
            }
            // Mark the signal seen before reading: a write after this point
            // wakes the wait below.
            self.changes.borrow_and_update();
            // The status is read BEFORE the events: the terminal event is
            // committed with the terminal status, so a terminal status read
            // here guarantees the read below includes the last event.
            let store = self.state.storage();
            let (Ok(Some(run)), Ok(events)) = (
                store.run(&self.run_id),
                store.events_after(&self.run_id, self.after),
            ) else {
                // The store failed: end the stream; the client may resume.
                self.finished = true;
                continue;
            };
            for event in events {
                self.after = event.sequence;
                if self.mode == StreamMode::Debug || visible_in_updates(&event.event_type) {
                    self.pending.push_back(frame(&(self.view)(event)));
                }
            }
            if run.status.is_terminal() {
                self.finished = true;
                continue;
            }
            if !self.pending.is_empty() {
                continue;
            }
            let wake_at = (Instant::now() + KEEP_ALIVE_EVERY).min(self.deadline);
            match tokio::time::timeout_at(wake_at, self.changes.changed()).await {
                Ok(Ok(())) => {}
                // The store is gone (host dropped): nothing more can come.
                Ok(Err(_)) => self.finished = true,
                Err(_) if Instant::now() < self.deadline => {
                    self.pending.push_back(KEEP_ALIVE_FRAME.to_owned());
                }
                Err(_) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::events::SCHEMA_VERSION;
    use serde_json::json;

    fn doc(sequence: i64) -> RunEventDoc {
        RunEventDoc {
            event_id: format!("evt_{sequence}"),
            run_id: "run_1".into(),
            event_type: "run.started".into(),
            payload: json!({"text": "two\nlines"}),
            timestamp: "2026-01-01T00:00:00Z".into(),
            sequence,
            schema_version: SCHEMA_VERSION,
            node_id: None,
            causation_id: None,
        }
    }

    fn query(pairs: &[(&str, &str)]) -> PollQuery {
        let params = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        PollQuery::parse(&params).expect("valid")
    }

    #[test]
    fn frames_carry_sequence_type_and_one_line_of_json() {
        let text = frame(&doc(3));
        let lines: Vec<&str> = text.split('\n').collect();
        assert_eq!(lines[0], "id: 3");
        assert_eq!(lines[1], "event: run.started");
        assert!(lines[2].starts_with("data: {"));
        assert_eq!(
            &lines[3..],
            ["", ""],
            "exactly one blank line ends the frame"
        );
        let data: serde_json::Value =
            serde_json::from_str(lines[2].trim_start_matches("data: ")).expect("json");
        assert_eq!(data["sequence"], 3);
        assert_eq!(data["payload"]["text"], "two\nlines");
        assert!(KEEP_ALIVE_FRAME.starts_with(':') && KEEP_ALIVE_FRAME.ends_with("\n\n"));
    }

    #[test]
    fn last_event_id_wins_over_after_sequence() {
        let mut headers = HeaderMap::new();
        assert_eq!(resume_after(&headers, &query(&[])).expect("ok"), -1);
        assert_eq!(
            resume_after(&headers, &query(&[("afterSequence", "2")])).expect("ok"),
            2
        );
        headers.insert("last-event-id", HeaderValue::from_static("5"));
        assert_eq!(
            resume_after(&headers, &query(&[("afterSequence", "2")])).expect("ok"),
            5
        );
        headers.insert("last-event-id", HeaderValue::from_static("x"));
        let err = resume_after(&headers, &query(&[])).unwrap_err();
        assert!(err.message.contains("Last-Event-ID"), "{}", err.message);
    }
}
