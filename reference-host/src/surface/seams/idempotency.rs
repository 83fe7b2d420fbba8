//! The idempotency seams, under `/conformance/seams/sample/test/idempotency/`.
//!
//! They drive the host's one effect path ([`crate::domain::effects`]) and its
//! Layer-1 store ([`crate::domain::layer1`]) into the situations the rules are
//! about, deterministically:
//!
//! - `concurrent-claim`: N executors as real concurrent tokio tasks race
//!   for ONE logical invocation, lined up by a barrier right before the
//!   claim (EFF-4: exactly one may win).
//! - `redispatch`: the orphan-sweeper case on one machine: owner A stalls at
//!   the claim path's await point, the sweeper re-dispatches the node to
//!   executor B, then A resumes (the seed's double charge).
//! - `effect-retry`: one effect against a provider with the retry policy
//!   (EFF-2, EFF-5).
//! - `hold`: arms a single-use hold on the caller's next `POST /runs` with a
//!   key, which then keeps its claim in flight (RFC 0213 §B; IDEM-L1-4).
//! - `sweep`: runs the retention sweeper for one run "as if now were later".
//!
//! Every body is closed (400 `validation_error` naming the member), the
//! caller needs `conformance:seams`, and every wait is bounded.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use reqwest::Url;
use serde_json::json;
use tokio::sync::{Barrier, oneshot};
use tokio::task::JoinSet;

use crate::base::clock::{now_unix_ms, secs_to_ms};
use crate::base::principals::Principal;
use crate::domain::Domain;
use crate::domain::effects::claim::AwaitPoint;
use crate::domain::effects::sweeper::{self, RunSweep};
use crate::domain::effects::{
    self, EffectError, EffectOutcome, EffectReport, EffectSpec, identity,
};
use crate::domain::error::{ApiError, json_response};
use crate::domain::json_body::require_loopback_http;
use crate::domain::json_body::{Fields, parse_object};
use crate::domain::layer1::{self, RUNS_ENDPOINT};
use crate::domain::runs::find_visible_run;
use crate::domain::workflows::{EFFECT_ESCAPED, RunFailure, begin_run, end_run};
use crate::surface::seams::extract::SeamRequest;

/// Fewest executors of `concurrent-claim`.
pub const MIN_EXECUTORS: u64 = 2;
/// Most executors of `concurrent-claim`.
pub const MAX_EXECUTORS: u64 = 256;
/// Longest `stallMs` of `redispatch`.
pub const MAX_STALL_MS: u64 = 2_000;
/// Longest `holdMs` of `hold`.
pub const MAX_HOLD_MS: u64 = 10_000;
/// Largest `nowOffsetSeconds` of `sweep`.
pub const MAX_NOW_OFFSET_SECS: u64 = 10_000_000;

/// The longest any seam waits for its executors; past it the executors are
/// aborted and the answer is 500.
pub const SEAM_BUDGET: Duration = Duration::from_secs(60);

/// How long the sweeper waits to see the owner stall before re-dispatching
/// anyway (the owner reaches its await point within microseconds).
const STALL_SIGNAL_BUDGET: Duration = Duration::from_secs(5);

fn executors_failed() -> ApiError {
    ApiError::internal("the seam's executors did not finish within 60 s; retry the request")
}

// ---------------------------------------------------------------------------
// concurrent-claim

/// `test/idempotency/concurrent-claim` request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConcurrentClaimRequest {
    /// How many executors race (2..=256).
    pub executors: usize,
    /// The business key of the one logical invocation (fresh when the request names none).
    pub business_key: String,
    /// The provider; without it the built-in no-op ledger accepts.
    pub receiver_url: Option<Url>,
    /// The principal the run is attributed to (default: the caller).
    pub principal: Option<String>,
}

impl ConcurrentClaimRequest {
    /// Parses the closed body.
    pub fn parse(body: &[u8]) -> Result<Self, ApiError> {
        let mut fields = Fields::closed(
            parse_object(body)?,
            &["executors", "businessKey", "receiverUrl", "principal"],
        )?;
        let executors = fields.required_int_in("executors", MIN_EXECUTORS, MAX_EXECUTORS)?;
        // Upstream contract: `{executors}` alone races a fresh logical invocation;
        // `businessKey` (toolcert's extension) names it.
        let business_key = match fields.optional_string("businessKey")? {
            Some(key) => key,
            None => format!("race-{}", uuid::Uuid::new_v4().simple()),
        };
        let receiver_url = fields
            .optional_string("receiverUrl")?
            .map(|raw| require_loopback_http("receiverUrl", &raw))
            .transpose()?;
        let principal = fields.optional_string("principal")?;
        Ok(Self {
            executors: usize::try_from(executors).unwrap_or(2),
            business_key,
            receiver_url,
            principal,
        })
    }
}

/// One executor's part: its index, the id it minted, what it did.
type ExecutorResult = (usize, Result<(String, EffectReport), EffectError>);

/// Handler for `POST …/test/idempotency/concurrent-claim`.
pub async fn concurrent_claim(
    State(state): State<Domain>,
    seam: SeamRequest,
) -> Result<Response, ApiError> {
    let caller = &seam.caller;
    let request = ConcurrentClaimRequest::parse(&seam.body)?;
    let race = race_claim(&state, caller, request).await?;
    Ok(json_response(
        StatusCode::OK,
        &json!({
            "runId": race.run_id,
            "logicalInvocationId": race.logical_invocation_id,
            "mintedIds": race.minted_ids,
            "attempted": race.attempted,
            "delivered": race.delivered,
        }),
    ))
}

/// What one concurrent-claim race did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimRace {
    /// The seam's run.
    pub run_id: String,
    /// The one logical invocation the executors raced for.
    pub logical_invocation_id: String,
    /// The effect id each executor minted, in executor order.
    pub minted_ids: Vec<String>,
    /// How many executors attempted the claim.
    pub attempted: usize,
    /// How many reached the provider and were accepted.
    pub delivered: usize,
}

/// Runs one race of `request.executors` executors for one logical
/// invocation, in a run of its own (attributed to `request.principal`, or
/// `caller`). Shared by the v2 seam and the upstream-only mode's
/// ([`crate::surface::upstream`]).
pub async fn race_claim(
    state: &Domain,
    caller: &Principal,
    request: ConcurrentClaimRequest,
) -> Result<ClaimRace, ApiError> {
    let principal = request.principal.unwrap_or_else(|| caller.id.clone());
    let tenant = state
        .principals()
        .tenant_of(&principal)
        .ok_or_else(|| {
            ApiError::validation(
                "field `principal` names no principal this host knows; use a configured principal id",
            )
        })?
        .to_owned();
    let run_id = state.new_run_id(&tenant);
    begin_run(
        state,
        &run_id,
        &principal,
        &tenant,
        json!({"seam": "test/idempotency/concurrent-claim", "executors": request.executors}),
    )?;
    let spec = EffectSpec::charge(
        &tenant,
        &run_id,
        1,
        &request.business_key,
        request.receiver_url,
    );
    let logical_invocation_id = identity::logical_invocation_id(&tenant, &spec.activity(1));

    let barrier = Arc::new(Barrier::new(request.executors));
    let mut executors = JoinSet::new();
    for index in 0..request.executors {
        let (state, spec, barrier) = (state.clone(), spec.clone(), barrier.clone());
        executors.spawn(async move {
            // Each executor derives the identity on its own…
            let prepared = effects::prepare(spec, state.mutant());
            // …then all line up right before the claim, so the claims race
            // for real. Every executor reaches the barrier, even one whose
            // derivation failed, so no executor waits for a missing peer.
            barrier.wait().await;
            let result = match prepared {
                Ok(prepared) => {
                    let minted = prepared.effect_id().to_owned();
                    prepared
                        .execute(&state, AwaitPoint::yield_once())
                        .await
                        .map(|report| (minted, report))
                }
                Err(err) => Err(err),
            };
            (index, result)
        });
    }
    let mut results = join_bounded(executors).await.ok_or_else(executors_failed)?;
    results.sort_by_key(|(index, _)| *index);
    let mut minted_ids = Vec::with_capacity(results.len());
    let mut reports = Vec::with_capacity(results.len());
    for (_, result) in results {
        let (minted, report) = result?;
        minted_ids.push(minted);
        reports.push(report);
    }
    // Every executor that ran attempted the claim; only the winner(s)
    // reached the provider, which `delivered` counts.
    let attempted = reports.len();
    let delivered = reports.iter().filter(|r| r.outcome.delivered()).count();
    let effect_id = minted_ids.first().cloned().unwrap_or_default();
    let fired = reports.iter().filter(|r| r.outcome.fired()).count();
    end_run(
        state,
        &run_id,
        seam_result(&reports, &effect_id, fired, delivered),
    )?;
    Ok(ClaimRace {
        run_id,
        logical_invocation_id,
        minted_ids,
        attempted,
        delivered,
    })
}

/// Joins every executor within [`SEAM_BUDGET`]; `None` (and every executor
/// aborted, by dropping the set) when the budget runs out or one panicked.
async fn join_bounded(mut set: JoinSet<ExecutorResult>) -> Option<Vec<ExecutorResult>> {
    let all = async {
        let mut results = Vec::with_capacity(set.len());
        while let Some(joined) = set.join_next().await {
            results.push(joined.ok()?);
        }
        Some(results)
    };
    tokio::time::timeout(SEAM_BUDGET, all).await.ok().flatten()
}

/// A seam run's result: completed unless the effect escaped.
/// `fired` counts executors that invoked the provider.
fn seam_result(
    reports: &[EffectReport],
    effect_id: &str,
    fired: usize,
    delivered: usize,
) -> Result<serde_json::Value, RunFailure> {
    if reports
        .iter()
        .any(|r| matches!(r.outcome, EffectOutcome::Escaped { .. }))
    {
        return Err(RunFailure {
            code: EFFECT_ESCAPED,
            message: "the effect was not accepted by its provider after every attempt".to_owned(),
        });
    }
    Ok(json!({"effectId": effect_id, "fired": fired, "delivered": delivered}))
}

// ---------------------------------------------------------------------------
// redispatch

/// `test/idempotency/redispatch` request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedispatchRequest {
    /// The business key of the node's effect.
    pub business_key: String,
    /// The provider.
    pub receiver_url: Url,
    /// How long the owner stalls at its claim path's await point.
    pub stall: Duration,
}

impl RedispatchRequest {
    /// Parses the closed body.
    pub fn parse(body: &[u8]) -> Result<Self, ApiError> {
        let mut fields = Fields::closed(
            parse_object(body)?,
            &["businessKey", "receiverUrl", "stallMs"],
        )?;
        let business_key = fields.required_string("businessKey")?;
        let receiver_url =
            require_loopback_http("receiverUrl", &fields.required_string("receiverUrl")?)?;
        let stall_ms = fields.required_int_in("stallMs", 1, MAX_STALL_MS)?;
        Ok(Self {
            business_key,
            receiver_url,
            stall: Duration::from_millis(stall_ms),
        })
    }
}

/// Handler for `POST …/test/idempotency/redispatch`.
pub async fn redispatch(
    State(state): State<Domain>,
    seam: SeamRequest,
) -> Result<Response, ApiError> {
    let caller = &seam.caller;
    let request = RedispatchRequest::parse(&seam.body)?;
    let run_id = state.new_run_id(&caller.tenant);
    begin_run(
        &state,
        &run_id,
        &caller.id,
        &caller.tenant,
        json!({"seam": "test/idempotency/redispatch", "executors": 2}),
    )?;
    let spec = EffectSpec::charge(
        &caller.tenant,
        &run_id,
        1,
        &request.business_key,
        Some(request.receiver_url),
    );
    // Owner A derives the identity, then stalls inside its claim path (at
    // its one await point), alive but silent.
    let owner = effects::prepare(spec.clone(), state.mutant())?;
    let effect_id = owner.effect_id().to_owned();
    let (stalled, owner_stalled) = oneshot::channel();
    let mut executors = JoinSet::new();
    {
        let state = state.clone();
        let stall = request.stall;
        executors.spawn(async move {
            let result = owner
                .execute(&state, AwaitPoint::stall(stall, stalled))
                .await
                .map(|report| (String::new(), report));
            (0, result)
        });
    }
    // The orphan sweeper sees the owner stalled and re-dispatches the run's
    // node to executor B, which runs it from the start (derives the
    // identity itself, then claims). If A never reaches its await point
    // (it lost before it), B is dispatched anyway after a bounded wait.
    let _ = tokio::time::timeout(STALL_SIGNAL_BUDGET, owner_stalled).await;
    {
        let state = state.clone();
        executors.spawn(async move {
            let result = match effects::prepare(spec, state.mutant()) {
                Ok(redispatched) => redispatched
                    .execute(&state, AwaitPoint::yield_once())
                    .await
                    .map(|report| (String::new(), report)),
                Err(err) => Err(err),
            };
            (1, result)
        });
    }
    // Both finish before the answer.
    let results = join_bounded(executors).await.ok_or_else(executors_failed)?;
    let mut reports = Vec::with_capacity(2);
    for (_, result) in results {
        reports.push(result?.1);
    }
    let fired = reports.iter().filter(|r| r.outcome.fired()).count();
    let delivered = reports.iter().filter(|r| r.outcome.delivered()).count();
    end_run(
        &state,
        &run_id,
        seam_result(&reports, &effect_id, fired, delivered),
    )?;
    Ok(json_response(
        StatusCode::OK,
        &json!({
            "runId": run_id,
            "effectId": effect_id,
            "executors": 2,
            "delivered": delivered,
        }),
    ))
}

// ---------------------------------------------------------------------------
// effect-retry

/// `test/idempotency/effect-retry` request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EffectRetryRequest {
    /// The provider.
    pub provider_url: Url,
    /// The business key.
    pub business_key: String,
}

impl EffectRetryRequest {
    /// Parses the closed body.
    pub fn parse(body: &[u8]) -> Result<Self, ApiError> {
        let mut fields = Fields::closed(parse_object(body)?, &["providerUrl", "businessKey"])?;
        let provider_url =
            require_loopback_http("providerUrl", &fields.required_string("providerUrl")?)?;
        // Upstream contract: `{providerUrl}` alone retries an effect of a fresh logical
        // invocation; `businessKey` (toolcert's extension) names it.
        let business_key = match fields.optional_string("businessKey")? {
            Some(key) => key,
            None => format!("retry-{}", uuid::Uuid::new_v4().simple()),
        };
        Ok(Self {
            provider_url,
            business_key,
        })
    }
}

/// Handler for `POST …/test/idempotency/effect-retry`.
pub async fn effect_retry(
    State(state): State<Domain>,
    seam: SeamRequest,
) -> Result<Response, ApiError> {
    let caller = &seam.caller;
    let request = EffectRetryRequest::parse(&seam.body)?;
    let run_id = state.new_run_id(&caller.tenant);
    begin_run(
        &state,
        &run_id,
        &caller.id,
        &caller.tenant,
        json!({"seam": "test/idempotency/effect-retry"}),
    )?;
    let spec = EffectSpec::charge(
        &caller.tenant,
        &run_id,
        1,
        &request.business_key,
        Some(request.provider_url),
    );
    // Bounded inside: at most 3 attempts of at most the tool timeout each.
    let report = tokio::time::timeout(SEAM_BUDGET, effects::perform(&state, spec))
        .await
        .map_err(|_| executors_failed())??;
    let fired = usize::from(report.outcome.fired());
    let delivered = usize::from(report.outcome.delivered());
    end_run(
        &state,
        &run_id,
        seam_result(
            std::slice::from_ref(&report),
            &report.effect_id,
            fired,
            delivered,
        ),
    )?;
    Ok(json_response(
        StatusCode::CREATED,
        &json!({"runId": run_id, "effectId": report.effect_id}),
    ))
}

// ---------------------------------------------------------------------------
// hold

/// `test/idempotency/hold` request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HoldRequest {
    /// The Layer-1 key of `POST /runs` to hold.
    pub key: String,
    /// For how long.
    pub hold: Duration,
}

impl HoldRequest {
    /// Parses the closed body; `key` must satisfy the key grammar.
    pub fn parse(body: &[u8]) -> Result<Self, ApiError> {
        let mut fields = Fields::closed(parse_object(body)?, &["key", "holdMs"])?;
        let key = fields.required_string("key")?;
        if !layer1::key_is_valid(&key) {
            return Err(ApiError::validation(
                "field `key` must match ^[A-Za-z0-9._~-]{22,128}$ (the Idempotency-Key grammar)",
            ));
        }
        let hold_ms = fields.required_int_in("holdMs", 1, MAX_HOLD_MS)?;
        Ok(Self {
            key,
            hold: Duration::from_millis(hold_ms),
        })
    }
}

/// Handler for `POST …/test/idempotency/hold`: arms a single-use hold on the
/// caller tenant's next `POST /runs` with `key` (RFC 0213 §B,
/// `armIdempotencyHold`). That create claims the key and keeps the claim in
/// flight for `holdMs`, then completes normally; a concurrent same-key
/// create meets the production in-flight branch. The seam never answers a
/// create and never emits a 409 itself.
pub async fn hold(State(state): State<Domain>, seam: SeamRequest) -> Result<Response, ApiError> {
    let caller = &seam.caller;
    let request = HoldRequest::parse(&seam.body)?;
    // The same scope a `POST /runs` of the caller's tenant uses.
    let scope = layer1::Scope::new(&caller.tenant, RUNS_ENDPOINT, &request.key, state.mutant());
    state.holds().arm(&scope, request.hold);
    Ok(json_response(
        StatusCode::CREATED,
        &json!({"key": request.key, "holdMs": request.hold.as_millis()}),
    ))
}

// ---------------------------------------------------------------------------
// sweep

/// `test/idempotency/sweep` request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepRequest {
    /// The run whose effect records are swept.
    pub run_id: String,
    /// Sweep as if now were this much later.
    pub now_offset_secs: u64,
}

impl SweepRequest {
    /// Parses the closed body.
    pub fn parse(body: &[u8]) -> Result<Self, ApiError> {
        let mut fields = Fields::closed(parse_object(body)?, &["runId", "nowOffsetSeconds"])?;
        let run_id = fields.required_string("runId")?;
        let now_offset_secs = fields.required_int_in("nowOffsetSeconds", 0, MAX_NOW_OFFSET_SECS)?;
        Ok(Self {
            run_id,
            now_offset_secs,
        })
    }
}

/// Handler for `POST …/test/idempotency/sweep`.
pub async fn sweep(State(state): State<Domain>, seam: SeamRequest) -> Result<Response, ApiError> {
    let caller = &seam.caller;
    let request = SweepRequest::parse(&seam.body)?;
    // The run must be visible to the caller's tenant (404 otherwise, as
    // for every run read).
    let run = find_visible_run(&state, &caller.tenant, &request.run_id)?;
    let now = now_unix_ms().saturating_add(secs_to_ms(request.now_offset_secs));
    let RunSweep { swept, remaining } =
        sweeper::sweep_run(state.storage(), &run.run_id, now, state.mutant())?;
    Ok(json_response(
        StatusCode::OK,
        &json!({"swept": swept, "remaining": remaining}),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn bytes(value: Value) -> Vec<u8> {
        value.to_string().into_bytes()
    }

    #[test]
    fn bodies_are_closed_and_problems_name_the_member() {
        let concurrent = [
            (json!({"businessKey": "k"}), "executors"),
            (json!({"executors": 1, "businessKey": "k"}), "executors"),
            (json!({"executors": 257, "businessKey": "k"}), "executors"),
            (
                json!({"executors": 2, "businessKey": "k", "receiverUrl": "http://10.0.0.1/"}),
                "receiverUrl",
            ),
            (
                json!({"executors": 2, "businessKey": "k", "extra": true}),
                "extra",
            ),
            (
                json!({"executors": 2, "businessKey": "k", "principal": 5}),
                "principal",
            ),
        ];
        for (body, field) in concurrent {
            let err = ConcurrentClaimRequest::parse(&bytes(body.clone())).unwrap_err();
            assert!(err.message.contains(field), "{body}: {}", err.message);
        }
        let ok =
            ConcurrentClaimRequest::parse(&bytes(json!({"executors": 256, "businessKey": "k"})))
                .expect("valid");
        assert_eq!(ok.executors, 256);
        // The upstream contract's `{executors}` alone races a fresh logical invocation.
        let a = ConcurrentClaimRequest::parse(&bytes(json!({"executors": 2}))).expect("valid");
        let b = ConcurrentClaimRequest::parse(&bytes(json!({"executors": 2}))).expect("valid");
        assert_ne!(a.business_key, b.business_key);

        let redispatch = [
            (
                json!({"businessKey": "k", "receiverUrl": "http://127.0.0.1/"}),
                "stallMs",
            ),
            (
                json!({"businessKey": "k", "receiverUrl": "http://127.0.0.1/", "stallMs": 0}),
                "stallMs",
            ),
            (
                json!({"businessKey": "k", "receiverUrl": "http://127.0.0.1/", "stallMs": 2001}),
                "stallMs",
            ),
            (json!({"businessKey": "k", "stallMs": 5}), "receiverUrl"),
        ];
        for (body, field) in redispatch {
            let err = RedispatchRequest::parse(&bytes(body.clone())).unwrap_err();
            assert!(err.message.contains(field), "{body}: {}", err.message);
        }
        let err = EffectRetryRequest::parse(&bytes(json!({"businessKey": "k"}))).unwrap_err();
        assert!(err.message.contains("providerUrl"), "{}", err.message);
        let err = HoldRequest::parse(&bytes(json!({"key": "short", "holdMs": 5}))).unwrap_err();
        assert!(err.message.contains("`key`"), "{}", err.message);
        let err = HoldRequest::parse(&bytes(json!({"key": "k".repeat(22), "holdMs": 10_001})))
            .unwrap_err();
        assert!(err.message.contains("holdMs"), "{}", err.message);
        let err =
            SweepRequest::parse(&bytes(json!({"runId": "r", "nowOffsetSeconds": -1}))).unwrap_err();
        assert!(err.message.contains("nowOffsetSeconds"), "{}", err.message);
        let ok = SweepRequest::parse(&bytes(
            json!({"runId": "r", "nowOffsetSeconds": 10_000_000}),
        ))
        .expect("valid");
        assert_eq!(ok.now_offset_secs, 10_000_000);
    }
}
