//! `POST /v1/runs`: the upstream fixture workflows, wrapped by Layer 1.
//!
//! Body `{workflowId, inputs?, configurable?}`, closed at every level as in
//! the default mode; the caller needs `runs:write`; the run belongs to the
//! caller's tenant. Layer-1 `Idempotency-Key` handling is the default
//! mode's ([`crate::domain::layer1::guard`]): same key and body replay the cached
//! answer with `OpenWOP-Idempotent-Replay: true`, another body is 409
//! `idempotency_key_mismatch`.
//!
//! | workflowId | inputs | what it does |
//! |---|---|---|
//! | `conformance-noop` | none | completes at once: `201 {runId, status: "completed"}` |
//! | `conformance-idempotent` | `{nonce}` (a string, required) | a noop that needs a nonce |
//! | `conformance-delay` | `{delayMs?: 0..30000}` (default 1000) | answers `201 {runId, status: "running"}`, sleeps `delayMs`, then completes; `POST /v1/runs/{runId}/cancel` stops it |
//!
//! toolcert's own workflows (`conformance-effect`, `conformance-flaky`) do
//! not exist here: like any other unknown id they are 404
//! `workflow_not_found`.

use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::{Value, json};

use crate::base::events::{NewEvent, RUN_CANCELLED};
use crate::base::principals::Principal;
use crate::domain::error::{ApiError, ErrorCode};
use crate::domain::json_body::Fields;
pub use crate::domain::workflows::NOOP_WORKFLOW;
use crate::domain::workflows::{RunStart, begin_run, end_run};
use crate::store::storage::RunStatus;
use crate::turn::state::LoopState;

pub use crate::domain::workflows::IDEMPOTENT_WORKFLOW;
/// Sleeps `inputs.delayMs`, then completes.
pub const DELAY_WORKFLOW: &str = "conformance-delay";

/// The upstream fixture ids this mode serves (discovery's `fixtures`).
pub const FIXTURES: &[&str] = &[NOOP_WORKFLOW, IDEMPOTENT_WORKFLOW, DELAY_WORKFLOW];

/// Longest `inputs.delayMs` of `conformance-delay`.
pub const MAX_DELAY_MS: u64 = 30_000;
/// `inputs.delayMs` when none is given.
pub const DEFAULT_DELAY_MS: u64 = 1_000;

/// A checked upstream workflow start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpstreamWorkflow {
    /// `conformance-noop`.
    Noop,
    /// `conformance-idempotent`.
    Idempotent {
        /// The caller's nonce.
        nonce: String,
    },
    /// `conformance-delay`.
    Delay {
        /// How long the run sleeps before it completes.
        delay: Duration,
    },
}

impl UpstreamWorkflow {
    /// The workflow's id.
    pub fn id(&self) -> &'static str {
        match self {
            Self::Noop => NOOP_WORKFLOW,
            Self::Idempotent { .. } => IDEMPOTENT_WORKFLOW,
            Self::Delay { .. } => DELAY_WORKFLOW,
        }
    }

    /// Parses and checks a `POST /v1/runs` body. Every problem is a 400
    /// naming the member, except an unknown workflow: 404
    /// `workflow_not_found` naming it.
    pub fn parse(body: &[u8]) -> Result<Self, ApiError> {
        let RunStart {
            workflow_id,
            inputs,
        } = RunStart::parse(body)?;
        match workflow_id.as_str() {
            NOOP_WORKFLOW => {
                RunStart::noop_inputs(inputs)?;
                Ok(Self::Noop)
            }
            IDEMPOTENT_WORKFLOW => Ok(Self::Idempotent {
                nonce: RunStart::idempotent_inputs(inputs)?,
            }),
            DELAY_WORKFLOW => {
                let mut inputs = Fields::closed_at("inputs", inputs, &["delayMs"])?;
                let delay_ms = inputs
                    .optional_int_in("delayMs", 0, MAX_DELAY_MS)?
                    .unwrap_or(DEFAULT_DELAY_MS);
                Ok(Self::Delay {
                    delay: Duration::from_millis(delay_ms),
                })
            }
            other => Err(ApiError::new(
                ErrorCode::WorkflowNotFound,
                format!(
                    "workflow `{other}` does not exist; this host (upstream-only mode) runs {}",
                    FIXTURES.join(", ")
                ),
            )),
        }
    }
}

/// Handler for `POST /v1/runs` (the default mode's envelope around the upstream workflows).
pub async fn post_runs(
    State(state): State<LoopState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    serve(state, headers, body, ErrorCode::WorkflowNotFound).await
}

/// Handler for `POST /runs` of the v2 upstream-only mode
/// ([`super::v2`]): the same workflows with tenant-bound run ids; an
/// unknown workflow is v2's `404 not_found`.
pub async fn post_runs_v2(
    State(state): State<LoopState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    serve(state, headers, body, ErrorCode::NotFound).await
}

/// Both majors' `POST …/runs`, an unknown workflow answered with `unknown`.
async fn serve(
    state: LoopState,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
    unknown: ErrorCode,
) -> Response {
    let shared = state.clone();
    crate::domain::workflows::serve_post_runs(&state, &headers, body, |caller, body| async move {
        start(&shared, &caller, &body).map_err(|mut err| {
            if err.code == ErrorCode::WorkflowNotFound {
                err.code = unknown;
            }
            err
        })
    })
    .await
}

/// Starts the workflow named by `body` for `caller`: the instant ones run
/// to completion before the answer, `conformance-delay` goes on in the
/// background.
pub fn start(
    state: &LoopState,
    caller: &Principal,
    body: &[u8],
) -> Result<(StatusCode, Value), ApiError> {
    let workflow = UpstreamWorkflow::parse(body)?;
    let run_id = state.new_run_id(&caller.tenant);
    begin_run(
        state,
        &run_id,
        &caller.id,
        &caller.tenant,
        json!({"workflowId": workflow.id()}),
    )?;
    let status = match workflow {
        UpstreamWorkflow::Noop | UpstreamWorkflow::Idempotent { .. } => {
            end_run(state, &run_id, Ok(Value::Null))?
        }
        UpstreamWorkflow::Delay { delay } => {
            spawn_delay(state, &run_id, delay);
            RunStatus::Running
        }
    };
    Ok((
        StatusCode::CREATED,
        json!({"runId": run_id, "status": status.as_str()}),
    ))
}

/// Runs a `conformance-delay` run in the background: it completes after
/// `delay` unless `POST /v1/runs/{runId}/cancel` stops it first (then it
/// writes `run.cancelled`, which the cancel waits for). A shutdown leaves
/// it as it is.
fn spawn_delay(state: &LoopState, run_id: &str, delay: Duration) {
    // Registered before the answer goes out, so a cancel right after the
    // 201 reaches this run's task.
    let mut cancelled = state.run_controls().register(run_id);
    let state = state.clone();
    let run_id = run_id.to_owned();
    tokio::spawn(async move {
        tokio::select! {
            () = tokio::time::sleep(delay) => {
                // A failed write leaves the run `running`; nothing else to do.
                let _ = end_run(&state, &run_id, Ok(Value::Null));
            }
            reason = cancelled.wait_for(Option::is_some) => {
                let reason = reason.ok().and_then(|reason| reason.clone()).unwrap_or_default();
                let _ = state.storage().finish_run(
                    &run_id,
                    RunStatus::Cancelled,
                    None,
                    NewEvent::new(RUN_CANCELLED, json!({ "reason": reason })),
                );
            }
            () = state.shutdown_requested() => {}
        }
        // Forgotten only after the terminal write: a cancel arriving in
        // between then sees the terminal status (409), never a second write.
        state.run_controls().remove(&run_id);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(value: Value) -> Result<UpstreamWorkflow, ApiError> {
        UpstreamWorkflow::parse(value.to_string().as_bytes())
    }

    #[test]
    fn the_three_fixtures_parse() {
        assert_eq!(
            parse(json!({"workflowId": "conformance-noop"})).expect("ok"),
            UpstreamWorkflow::Noop
        );
        assert_eq!(
            parse(json!({"workflowId": "conformance-idempotent", "inputs": {"nonce": "n"}}))
                .expect("ok"),
            UpstreamWorkflow::Idempotent { nonce: "n".into() }
        );
        assert_eq!(
            parse(json!({"workflowId": "conformance-delay"})).expect("ok"),
            UpstreamWorkflow::Delay {
                delay: Duration::from_millis(1_000)
            }
        );
        assert_eq!(
            parse(json!({"workflowId": "conformance-delay", "inputs": {"delayMs": 0}}))
                .expect("ok"),
            UpstreamWorkflow::Delay {
                delay: Duration::ZERO
            }
        );
    }

    #[test]
    fn problems_name_the_member_and_toolcert_workflows_do_not_exist() {
        for (body, field) in [
            (
                json!({"workflowId": "conformance-idempotent"}),
                "inputs.nonce",
            ),
            (
                json!({"workflowId": "conformance-idempotent", "inputs": {"nonce": 5}}),
                "inputs.nonce",
            ),
            (
                json!({"workflowId": "conformance-delay", "inputs": {"delayMs": 30001}}),
                "inputs.delayMs",
            ),
            (
                json!({"workflowId": "conformance-delay", "inputs": {"delayMs": -1}}),
                "inputs.delayMs",
            ),
        ] {
            let err = parse(body.clone()).unwrap_err();
            assert_eq!(err.code, ErrorCode::ValidationError, "{body}");
            assert!(err.message.contains(field), "{body}: {}", err.message);
        }
        for id in ["conformance-effect", "conformance-flaky", "nope"] {
            let err = parse(json!({"workflowId": id})).unwrap_err();
            assert_eq!(err.code, ErrorCode::WorkflowNotFound, "{id}");
            assert!(err.message.contains(id), "{}", err.message);
        }
    }
}
