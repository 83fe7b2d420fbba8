//! `GET /runs/{runId}` and `GET /runs/{runId}/events/poll`.

use std::collections::HashMap;
use std::time::Duration;

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde_json::json;
use tokio::time::Instant;

use crate::base::events::{RunEventDoc, visible_in_updates};
use crate::base::principals::Principal;
use crate::domain::Domain;
use crate::domain::auth::{authenticate, require_scope};
use crate::domain::error::ApiError;
use crate::store::storage::RunRecord;

/// Scope needed to read runs and their events.
pub const RUNS_READ_SCOPE: &str = "runs:read";

/// Longest accepted long-poll `timeout`, in seconds.
pub const MAX_POLL_TIMEOUT_SECS: u64 = 60;

/// Which events a poll returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamMode {
    /// Everything except the `agent.*` family.
    Updates,
    /// Everything.
    Debug,
}

/// Parsed poll query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PollQuery {
    /// Return events with a greater sequence (`None`: all).
    pub after_sequence: Option<i64>,
    /// Long-poll budget.
    pub timeout: Option<Duration>,
    /// Filter.
    pub stream_mode: StreamMode,
}

impl PollQuery {
    /// Parses the query string of the poll and stream reads; problems name the parameter.
    pub fn from_request(
        query: Result<Query<HashMap<String, String>>, QueryRejection>,
    ) -> Result<Self, ApiError> {
        let Query(params) = query.map_err(|rejection| {
            ApiError::validation(format!(
                "query string could not be parsed ({}); use afterSequence, timeout and streamMode",
                rejection.body_text()
            ))
        })?;
        Self::parse(&params)
    }

    /// Parses and checks the query parameters; problems name the parameter.
    pub fn parse(params: &HashMap<String, String>) -> Result<Self, ApiError> {
        let after_sequence = params
            .get("afterSequence")
            .map(|raw| match raw.parse::<i64>() {
                Ok(n) if n >= -1 => Ok(n),
                _ => Err(ApiError::validation(
                    "query parameter `afterSequence` must be an integer ≥ -1",
                )),
            })
            .transpose()?;
        let timeout = params
            .get("timeout")
            .map(|raw| match raw.parse::<u64>() {
                Ok(secs) if (1..=MAX_POLL_TIMEOUT_SECS).contains(&secs) => {
                    Ok(Duration::from_secs(secs))
                }
                _ => Err(ApiError::validation(format!(
                    "query parameter `timeout` must be whole seconds from 1 to {MAX_POLL_TIMEOUT_SECS}"
                ))),
            })
            .transpose()?;
        let stream_mode = match params.get("streamMode").map(String::as_str) {
            None | Some("updates") => StreamMode::Updates,
            Some("debug") => StreamMode::Debug,
            Some(_) => {
                return Err(ApiError::validation(
                    "query parameter `streamMode` must be `updates` or `debug`",
                ));
            }
        };
        Ok(Self {
            after_sequence,
            timeout,
            stream_mode,
        })
    }
}

/// Authenticates the caller and checks `runs:read`.
pub fn authorize_read(state: &Domain, headers: &HeaderMap) -> Result<(), ApiError> {
    authorize_reader(state, headers).map(|_| ())
}

/// Authenticates the caller, checks `runs:read`, and returns the caller
/// (whose tenant decides which runs it can see).
pub fn authorize_reader<'s>(
    state: &'s Domain,
    headers: &HeaderMap,
) -> Result<&'s Principal, ApiError> {
    let caller = authenticate(headers, state.principals())?;
    require_scope(caller, RUNS_READ_SCOPE)?;
    Ok(caller)
}

/// The 404 of a run that does not exist (or that the caller may not see).
fn unknown_run(run_id: &str) -> ApiError {
    ApiError::not_found(format!(
        "run `{run_id}` does not exist; use a runId returned by this host"
    ))
}

/// The run, or 404 (no tenant check: for host-internal lookups).
pub fn find_run(state: &Domain, run_id: &str) -> Result<RunRecord, ApiError> {
    state
        .storage()
        .run(run_id)?
        .ok_or_else(|| unknown_run(run_id))
}

/// The run when it belongs to `tenant`. Another tenant's run gets exactly
/// the 404 of an unknown run, message included, so a caller cannot probe
/// for run ids that exist elsewhere.
pub fn find_visible_run(state: &Domain, tenant: &str, run_id: &str) -> Result<RunRecord, ApiError> {
    state
        .storage()
        .run(run_id)?
        .filter(|run| run.tenant == tenant)
        .ok_or_else(|| unknown_run(run_id))
}

/// Handler for `GET /runs/{runId}`.
pub async fn get_run(
    State(state): State<Domain>,
    Path(run_id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let caller = authorize_reader(&state, &headers)?;
    let run = find_visible_run(&state, &caller.tenant, &run_id)?;
    let mut body = json!({
        "runId": run.run_id,
        "status": run.status.as_str(),
        "createdAt": run.created_at,
    });
    if let Some(object) = body.as_object_mut() {
        // A failed run says why (`{code, message}`).
        if let Some(error) = run.error {
            object.insert("error".to_owned(), error);
        }
        // A run waiting for approval says where it is paused (TTC §C).
        if let Some(node) = run.current_node_id {
            object.insert("currentNodeId".to_owned(), node.into());
        }
    }
    Ok(Json(body).into_response())
}

/// Handler for `GET /runs/{runId}/events/poll`.
pub async fn poll_events(
    State(state): State<Domain>,
    Path(run_id): Path<String>,
    headers: HeaderMap,
    query: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Result<Response, ApiError> {
    let tenant = authorize_reader(&state, &headers)?.tenant.clone();
    let query = PollQuery::from_request(query)?;
    let page = poll_page(&state, &tenant, &run_id, &query).await?;
    Ok(Json(page.into_json()).into_response())
}

/// One answer of the events poll: the run as read last, and its events
/// after the cursor (filtered by the stream mode).
#[derive(Debug, Clone)]
pub struct PollPage {
    /// The run.
    pub run: RunRecord,
    /// The events, in sequence order.
    pub events: Vec<RunEventDoc>,
    /// The sequence to poll after next time.
    pub last_sequence: i64,
}

impl PollPage {
    /// `{runId, events, lastSequence, status, isTerminal}`.
    pub fn into_json(self) -> serde_json::Value {
        json!({
            "runId": self.run.run_id,
            "events": self.events,
            "lastSequence": self.last_sequence,
            "status": self.run.status.as_str(),
            "isTerminal": self.run.status.is_terminal(),
        })
    }
}

/// The poll itself, for a caller of `tenant` (already authorized): waits up
/// to `query.timeout` for an event after the cursor, and returns at once
/// when there is one or when the run is terminal. Shared by the v2 poll and
/// the upstream-only mode's v1 poll ([`crate::surface::upstream`]).
pub async fn poll_page(
    state: &Domain,
    tenant: &str,
    run_id: &str,
    query: &PollQuery,
) -> Result<PollPage, ApiError> {
    let after = query.after_sequence.unwrap_or(-1);
    find_visible_run(state, tenant, run_id)?;
    // Subscribe to this run's signal before the first read, so an append
    // between the read and the wait still wakes us, and other runs' writes
    // do not.
    let mut changes = state
        .storage()
        .subscribe_run(run_id)
        .unwrap_or_else(|| state.storage().subscribe());
    let deadline = query.timeout.map(|timeout| Instant::now() + timeout);
    loop {
        // Mark the signal seen BEFORE reading: a write after this point
        // (even one racing the read below) wakes the wait.
        changes.borrow_and_update();
        let run = find_visible_run(state, tenant, run_id)?;
        let events: Vec<RunEventDoc> = state
            .storage()
            .events_after(run_id, after)?
            .into_iter()
            .filter(|event| {
                query.stream_mode == StreamMode::Debug || visible_in_updates(&event.event_type)
            })
            .collect();
        // Return when there is something to show, when nothing more can
        // arrive (terminal run), or when the long-poll budget is spent.
        let done = !events.is_empty()
            || run.status.is_terminal()
            || deadline.is_none_or(|deadline| Instant::now() >= deadline);
        if done {
            let last_sequence = events.last().map_or(after, |event| event.sequence);
            return Ok(PollPage {
                run,
                events,
                last_sequence,
            });
        }
        if let Some(deadline) = deadline {
            // Wakes on a committed write to this run or at the deadline,
            // whichever is first; the loop re-reads either way, so the wait
            // is bounded (and never a busy loop: a closed signal just waits
            // out the deadline).
            match tokio::time::timeout_at(deadline, changes.changed()).await {
                Ok(Ok(())) | Err(_) => {}
                Ok(Err(_)) => tokio::time::sleep_until(deadline).await,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn defaults() {
        let query = PollQuery::parse(&params(&[])).expect("valid");
        assert_eq!(query.after_sequence, None);
        assert_eq!(query.timeout, None);
        assert_eq!(query.stream_mode, StreamMode::Updates);
    }

    #[test]
    fn valid_values() {
        let query = PollQuery::parse(&params(&[
            ("afterSequence", "3"),
            ("timeout", "60"),
            ("streamMode", "debug"),
        ]))
        .expect("valid");
        assert_eq!(query.after_sequence, Some(3));
        assert_eq!(query.timeout, Some(Duration::from_secs(60)));
        assert_eq!(query.stream_mode, StreamMode::Debug);
    }

    #[test]
    fn bad_values_name_the_parameter() {
        for (name, value) in [
            ("afterSequence", "x"),
            ("afterSequence", "-2"),
            ("timeout", "0"),
            ("timeout", "61"),
            ("timeout", "1.5"),
            ("streamMode", "all"),
        ] {
            let err = PollQuery::parse(&params(&[(name, value)])).unwrap_err();
            assert!(
                err.message.contains(name),
                "{name}={value}: {}",
                err.message
            );
        }
    }
}
