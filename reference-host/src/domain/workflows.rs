//! `POST /runs`: start one of the built-in workflows, wrapped by Layer 1.
//!
//! Body `{workflowId, inputs?, configurable?}`, closed at every level; the
//! caller needs `runs:write`. The run belongs to the caller's tenant and is
//! attributed to the caller. The work is done before the answer:
//! `201 {runId, status}`.
//!
//! | workflowId | inputs | what it does |
//! |---|---|---|
//! | `conformance-noop` | none | completes at once |
//! | `conformance-idempotent` | `{nonce}` (a string) | completes at once; the nonce only varies the body (upstream fixture) |
//! | `conformance-effect` | `{businessKey, receiverUrl, count?: 1..4}` | performs `count` `ledger.charge` effects through the effect path, keys `businessKey` (count 1) or `businessKey#1`…`#n`, node `effect`, then completes |
//! | `conformance-flaky` | `{nonce, failTimes: 0..5}` | the first `failTimes` starts for the nonce answer 503 `service_unavailable` (`Retry-After: 1`), later ones complete at once |

use crate::store::storage::Cached;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use reqwest::Url;
use rusqlite::params;
use serde_json::{Map, Value, json};

use crate::base::events::{NewEvent, RUN_COMPLETED, RUN_FAILED, RUN_STARTED};
use crate::base::principals::Principal;
use crate::domain::Domain;
use crate::domain::auth::{authenticate, require_scope};
use crate::domain::effects::{self, EffectReport, EffectSpec};
use crate::domain::error::{ApiError, ErrorCode};
use crate::domain::json_body::require_loopback_http;
use crate::domain::json_body::{Fields, body_rejection, parse_object};
use crate::domain::layer1::{self, RUNS_ENDPOINT};
use crate::store::storage::{RunStatus, StorageError};

/// Per-tenant start counters of `conformance-flaky`.
pub const SCHEMA: &str = "
CREATE TABLE flaky_starts (
    tenant TEXT NOT NULL,
    nonce TEXT NOT NULL,
    starts INTEGER NOT NULL,
    PRIMARY KEY (tenant, nonce)
);
";

/// Scope needed to start runs.
pub const RUNS_WRITE_SCOPE: &str = "runs:write";

/// Completes at once.
pub const NOOP_WORKFLOW: &str = "conformance-noop";
/// A noop that requires `inputs.nonce` (upstream fixture; the nonce only varies the body).
pub const IDEMPOTENT_WORKFLOW: &str = "conformance-idempotent";
/// Performs effects.
pub const EFFECT_WORKFLOW: &str = "conformance-effect";
/// Fails a given number of times first.
pub const FLAKY_WORKFLOW: &str = "conformance-flaky";

/// Every built-in workflow id.
pub const WORKFLOWS: &[&str] = &[
    NOOP_WORKFLOW,
    IDEMPOTENT_WORKFLOW,
    EFFECT_WORKFLOW,
    FLAKY_WORKFLOW,
];

/// Most effects one `conformance-effect` run performs.
pub const MAX_EFFECT_COUNT: u64 = 4;

/// Most failing starts of one `conformance-flaky` nonce.
pub const MAX_FAIL_TIMES: u64 = 5;

/// `run.failed` code of a `conformance-effect` run with an effect that did
/// not go through. Vendor-namespaced (HOOKS-FAIL-7).
pub const EFFECT_ESCAPED: &str = "refhost.effect_escaped";

const FIELDS: &[&str] = &["workflowId", "inputs", "configurable"];
const EFFECT_INPUTS: &[&str] = &["businessKey", "receiverUrl", "count"];
const FLAKY_INPUTS: &[&str] = &["nonce", "failTimes"];

/// A `POST /runs` body as both modes read it, before its workflow's inputs are: closed
/// `{workflowId, inputs?, configurable?}`, `configurable` accepted (an object) and not used
/// by any built-in workflow. Every problem is a 400 naming the member.
#[derive(Debug)]
pub struct RunStart {
    /// The workflow asked for.
    pub workflow_id: String,
    /// Its inputs (empty when absent).
    pub inputs: Map<String, Value>,
}

impl RunStart {
    /// Parse the envelope.
    pub fn parse(body: &[u8]) -> Result<RunStart, ApiError> {
        let mut fields = Fields::closed(parse_object(body)?, FIELDS)?;
        let workflow_id = fields.required_string("workflowId")?;
        let inputs = fields.optional_object("inputs")?.unwrap_or_default();
        fields.optional_object("configurable")?;
        Ok(RunStart {
            workflow_id,
            inputs,
        })
    }

    /// `conformance-noop`'s inputs: none.
    pub fn noop_inputs(inputs: Map<String, Value>) -> Result<(), ApiError> {
        Fields::closed_at("inputs", inputs, &[])?;
        Ok(())
    }

    /// `conformance-idempotent`'s inputs: `{nonce}`, a string; the nonce.
    pub fn idempotent_inputs(inputs: Map<String, Value>) -> Result<String, ApiError> {
        Fields::closed_at("inputs", inputs, &["nonce"])?.required_string("nonce")
    }
}

/// A checked workflow start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Workflow {
    /// `conformance-noop`.
    Noop,
    /// `conformance-idempotent`: a noop whose nonce only varies the request body.
    Idempotent,
    /// `conformance-effect`.
    Effect {
        /// The caller's business key.
        business_key: String,
        /// The provider of the effects.
        receiver: Url,
        /// How many effects (1..=4).
        count: u32,
    },
    /// `conformance-flaky`.
    Flaky {
        /// Which counter.
        nonce: String,
        /// How many starts fail first.
        fail_times: u32,
    },
}

impl Workflow {
    /// The workflow's id.
    pub fn id(&self) -> &'static str {
        match self {
            Self::Noop => NOOP_WORKFLOW,
            Self::Idempotent => IDEMPOTENT_WORKFLOW,
            Self::Effect { .. } => EFFECT_WORKFLOW,
            Self::Flaky { .. } => FLAKY_WORKFLOW,
        }
    }

    /// Parses and checks a `POST /runs` body. Every problem is a 400
    /// naming the member, except an unknown workflow: 404 naming it.
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
            IDEMPOTENT_WORKFLOW => {
                RunStart::idempotent_inputs(inputs)?;
                Ok(Self::Idempotent)
            }
            EFFECT_WORKFLOW => {
                let mut inputs = Fields::closed_at("inputs", inputs, EFFECT_INPUTS)?;
                let business_key = inputs.required_string("businessKey")?;
                let receiver_url = inputs.required_string("receiverUrl")?;
                let receiver = require_loopback_http("inputs.receiverUrl", &receiver_url)?;
                let count = inputs
                    .optional_int_in("count", 1, MAX_EFFECT_COUNT)?
                    .unwrap_or(1);
                Ok(Self::Effect {
                    business_key,
                    receiver,
                    count: u32::try_from(count).unwrap_or(1),
                })
            }
            FLAKY_WORKFLOW => {
                let mut inputs = Fields::closed_at("inputs", inputs, FLAKY_INPUTS)?;
                let nonce = inputs.required_string("nonce")?;
                let fail_times = inputs
                    .optional_int_in("failTimes", 0, MAX_FAIL_TIMES)?
                    .ok_or_else(|| {
                        ApiError::validation(format!(
                            "field `inputs.failTimes` is required (an integer from 0 to {MAX_FAIL_TIMES})"
                        ))
                    })?;
                Ok(Self::Flaky {
                    nonce,
                    fail_times: u32::try_from(fail_times).unwrap_or(0),
                })
            }
            other => Err(ApiError::not_found(format!(
                "workflow `{other}` does not exist; this host runs {}",
                WORKFLOWS.join(", ")
            ))),
        }
    }
}

/// Handler for `POST /runs`.
pub async fn post_runs(
    State(state): State<Domain>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let shared = state.clone();
    serve_post_runs(&state, &headers, body, |caller, body| async move {
        start(&shared, &caller, &body).await
    })
    .await
}

/// `POST /runs` as both modes serve it (this one and [`crate::surface::upstream`]'s `/v1/runs`): the
/// caller is authenticated and scoped before Layer 1, so 401 and 403 are never cached
/// (IDEM-L1-6) and an unscoped caller learns nothing about its key; then `start` runs under
/// Layer 1.
pub async fn serve_post_runs<F, Fut>(
    state: &Domain,
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
    start: F,
) -> Response
where
    F: FnOnce(Principal, Bytes) -> Fut,
    Fut: std::future::Future<Output = Result<(StatusCode, Value), ApiError>>,
{
    let caller = match authenticate(headers, state.principals())
        .and_then(|caller| require_scope(caller, RUNS_WRITE_SCOPE).map(|()| caller))
    {
        Ok(caller) => caller.clone(),
        Err(err) => return err.into_response(),
    };
    let body = match body {
        Ok(body) => body,
        Err(rejection) => return body_rejection(&rejection).into_response(),
    };
    let tenant = caller.tenant.clone();
    let digest_input = body.clone();
    let guarded = layer1::GuardState {
        storage: state.storage(),
        holds: state.holds(),
        mutant: state.mutant(),
    };
    layer1::guard(
        guarded,
        &tenant,
        RUNS_ENDPOINT,
        headers,
        &digest_input,
        || async move { layer1::outcome_of(start(caller, body).await) },
    )
    .await
}

/// Starts and runs the workflow named by `body` for `caller`.
pub async fn start(
    state: &Domain,
    caller: &Principal,
    body: &[u8],
) -> Result<(StatusCode, Value), ApiError> {
    let workflow = Workflow::parse(body)?;
    if let Workflow::Flaky { nonce, fail_times } = &workflow {
        let starts = count_start(state, &caller.tenant, nonce)?;
        if starts <= u64::from(*fail_times) {
            // Transient by construction: no run exists and a retry (after
            // Retry-After) may succeed, so Layer 1 must not cache this.
            return Err(ApiError::new(
                ErrorCode::ServiceUnavailable,
                format!(
                    "start {starts} of {fail_times} failing starts for this nonce; retry after the Retry-After delay"
                ),
            )
            .with_retry_after(1));
        }
    }
    start_as(state, caller, workflow, &new_run_id(), Map::new()).await
}

/// Runs `workflow` for `caller` as run `run_id`, with `started` merged into
/// the `run.started` payload (the A2A projection names its message there).
pub async fn start_as(
    state: &Domain,
    caller: &Principal,
    workflow: Workflow,
    run_id: &str,
    started: Map<String, Value>,
) -> Result<(StatusCode, Value), ApiError> {
    let run_id = run_id.to_owned();
    let mut payload = started;
    payload.insert("workflowId".to_owned(), json!(workflow.id()));
    begin_run(
        state,
        &run_id,
        &caller.id,
        &caller.tenant,
        Value::Object(payload),
    )?;
    let ended = match &workflow {
        Workflow::Noop | Workflow::Idempotent | Workflow::Flaky { .. } => Ok(Value::Null),
        Workflow::Effect {
            business_key,
            receiver,
            count,
        } => {
            run_effects(
                state,
                &caller.tenant,
                &run_id,
                business_key,
                receiver,
                *count,
            )
            .await
        }
    };
    let status = end_run(state, &run_id, ended)?;
    Ok((
        StatusCode::CREATED,
        json!({"runId": run_id, "status": status.as_str()}),
    ))
}

/// Performs the effects of a `conformance-effect` run, in order, through
/// the one effect path; `Err` when one of them escaped.
async fn run_effects(
    state: &Domain,
    tenant: &str,
    run_id: &str,
    business_key: &str,
    receiver: &Url,
    count: u32,
) -> Result<Value, RunFailure> {
    let mut reports: Vec<EffectReport> = Vec::new();
    for ordinal in 1..=count {
        let key = if count == 1 {
            business_key.to_owned()
        } else {
            format!("{business_key}#{ordinal}")
        };
        let spec = EffectSpec::charge(tenant, run_id, ordinal, &key, Some(receiver.clone()));
        let report = effects::perform(state, spec)
            .await
            .map_err(|_| RunFailure::internal())?;
        reports.push(report);
    }
    let summary = effect_summary(&reports);
    if reports
        .iter()
        .any(|report| matches!(report.outcome, effects::EffectOutcome::Escaped { .. }))
    {
        return Err(RunFailure {
            code: EFFECT_ESCAPED,
            message: "an effect was not accepted by its provider after every attempt; see GET /runs/{runId}/effects".to_owned(),
        });
    }
    Ok(summary)
}

/// `{effects: [{effectId, nodeId, outcome}]}`: the run's result. An effect
/// another entry point already performed shows `outcome: "deduplicated"`
/// with the same effectId and adds no ledger row to this run.
pub fn effect_summary(reports: &[EffectReport]) -> Value {
    let effects: Vec<Value> = reports
        .iter()
        .map(|report| {
            json!({
                "effectId": report.effect_id,
                "nodeId": effects::EFFECT_NODE_ID,
                "outcome": report.outcome.as_str(),
            })
        })
        .collect();
    json!({ "effects": effects })
}

/// Counts one start of a flaky nonce; returns the count including it.
fn count_start(state: &Domain, tenant: &str, nonce: &str) -> Result<u64, StorageError> {
    // One upsert statement: concurrent starts each get their own number.
    let starts: i64 = state.storage().with_conn(|conn| {
        conn.query_row_cached(
            "INSERT INTO flaky_starts (tenant, nonce, starts) VALUES (?1, ?2, 1)
             ON CONFLICT(tenant, nonce) DO UPDATE SET starts = starts + 1
             RETURNING starts",
            params![tenant, nonce],
            |row| row.get(0),
        )
    })?;
    Ok(u64::try_from(starts).unwrap_or(0))
}

/// Why a run failed (`run.failed {error: {code, message}}`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct RunFailure {
    /// Machine-readable code.
    pub code: &'static str,
    /// What happened; content-free.
    pub message: String,
}

impl RunFailure {
    /// The host itself failed.
    pub fn internal() -> Self {
        Self {
            code: crate::base::event_codes::INTERNAL_ERROR,
            message: "the host's store failed while the run was in progress".to_owned(),
        }
    }
}

pub use crate::base::ids::new_run_id;

/// Creates a run of `tenant` attributed to `principal` and appends
/// `run.started` with `started`.
pub fn begin_run(
    state: &Domain,
    run_id: &str,
    principal: &str,
    tenant: &str,
    started: Value,
) -> Result<(), StorageError> {
    state.storage().create_run_in(run_id, principal, tenant)?;
    state
        .storage()
        .append_event(run_id, NewEvent::new(RUN_STARTED, started))?;
    Ok(())
}

/// Ends a run: `run.completed {result}` or `run.failed {error}`, event and
/// status in one transaction. Returns the terminal status.
pub fn end_run(
    state: &Domain,
    run_id: &str,
    ended: Result<Value, RunFailure>,
) -> Result<RunStatus, StorageError> {
    match ended {
        Ok(result) => {
            state.storage().finish_run(
                run_id,
                RunStatus::Completed,
                None,
                NewEvent::new(RUN_COMPLETED, json!({ "result": result })),
            )?;
            Ok(RunStatus::Completed)
        }
        Err(failure) => {
            let error = json!({"code": failure.code, "message": failure.message});
            state.storage().finish_run(
                run_id,
                RunStatus::Failed,
                Some(&error),
                NewEvent::new(RUN_FAILED, json!({ "error": error })),
            )?;
            Ok(RunStatus::Failed)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(value: Value) -> Result<Workflow, ApiError> {
        Workflow::parse(value.to_string().as_bytes())
    }

    #[test]
    fn run_failure_codes_are_registered_or_vendor_namespaced() {
        // HOOKS-FAIL-7.
        assert!(crate::base::event_codes::is_vendor_namespaced(
            EFFECT_ESCAPED
        ));
        assert!(crate::base::event_codes::is_registered(
            RunFailure::internal().code
        ));
    }

    #[test]
    fn the_three_workflows_parse() {
        assert_eq!(
            parse(json!({"workflowId": "conformance-noop"})).expect("ok"),
            Workflow::Noop
        );
        assert_eq!(
            parse(
                json!({"workflowId": "conformance-noop", "inputs": {}, "configurable": {"a": 1}})
            )
            .expect("ok"),
            Workflow::Noop
        );
        let effect = parse(json!({"workflowId": "conformance-effect",
            "inputs": {"businessKey": "k", "receiverUrl": "http://127.0.0.1:9/r", "count": 3}}))
        .expect("ok");
        assert!(matches!(effect, Workflow::Effect { count: 3, .. }));
        let flaky = parse(json!({"workflowId": "conformance-flaky",
            "inputs": {"nonce": "n", "failTimes": 0}}))
        .expect("ok");
        assert_eq!(
            flaky,
            Workflow::Flaky {
                nonce: "n".into(),
                fail_times: 0
            }
        );
    }

    #[test]
    fn problems_name_the_member_and_unknown_workflows_are_404() {
        let cases = [
            (json!({}), "workflowId"),
            (json!({"workflowId": "conformance-noop", "x": 1}), "x"),
            (
                json!({"workflowId": "conformance-noop", "inputs": {"a": 1}}),
                "inputs.a",
            ),
            (
                json!({"workflowId": "conformance-noop", "configurable": []}),
                "configurable",
            ),
            (
                json!({"workflowId": "conformance-effect", "inputs": {"receiverUrl": "http://127.0.0.1/"}}),
                "inputs.businessKey",
            ),
            (
                json!({"workflowId": "conformance-effect", "inputs": {"businessKey": "k",
                    "receiverUrl": "http://example.com/"}}),
                "inputs.receiverUrl",
            ),
            (
                json!({"workflowId": "conformance-effect", "inputs": {"businessKey": "k",
                    "receiverUrl": "http://127.0.0.1/", "count": 5}}),
                "inputs.count",
            ),
            (
                json!({"workflowId": "conformance-flaky", "inputs": {"nonce": "n"}}),
                "inputs.failTimes",
            ),
            (
                json!({"workflowId": "conformance-flaky", "inputs": {"nonce": "n", "failTimes": 6}}),
                "inputs.failTimes",
            ),
        ];
        for (body, field) in cases {
            let err = parse(body.clone()).unwrap_err();
            assert_eq!(err.code, ErrorCode::ValidationError, "{body}");
            assert!(err.message.contains(field), "{body}: {}", err.message);
        }
        let err = parse(json!({"workflowId": "no-such-flow"})).unwrap_err();
        assert_eq!(err.code, ErrorCode::NotFound);
        assert!(err.message.contains("no-such-flow"), "{}", err.message);
    }
}
