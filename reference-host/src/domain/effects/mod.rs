//! Effects (v2 idempotency, Layer 2): the one path every entry point takes
//! to perform a side effect exactly once.
//!
//! An executor [`prepare`]s an effect — derives its identity from the
//! business operation ([`identity`], EFF-1) — then [`PreparedEffect::execute`]s
//! it: claims the identity with an atomic insert-if-absent ([`claim`],
//! EFF-4), and only if it won, invokes the provider with the identity as
//! `Idempotency-Key`, retrying on 5xx and transport failures with the same
//! key ([`retry`], EFF-2, EFF-5), one ledger row per attempt ([`ledger`]).
//! An executor that loses the claim fires nothing and makes no attempt; if
//! it belongs to another run than the claim's holder (a second entry point)
//! its run's ledger gets one `attempt: 0` reference row with the same
//! effectId.
//! Records are kept ≥ 14 days ([`sweeper`]).
//!
//! Entry points: the `conformance-effect` workflow (`POST /runs`) and the
//! `test/idempotency/*` seams. They all call [`prepare`] and
//! [`PreparedEffect::execute`]; none of them touches the claim directly.

pub mod claim;
pub mod identity;
pub mod ledger;
pub mod retry;
pub mod sweeper;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use reqwest::Url;
use serde_json::{Value, json};

use crate::base::mutant::{Mutant, MutantInfo};
use crate::domain::Domain;
use crate::domain::effects::claim::{AwaitPoint, ClaimOutcome, ClaimRequest, ClaimState};
use crate::domain::effects::identity::{Activity, BusinessOperation, EffectIdentity, Keying};
use crate::domain::effects::ledger::{AttemptState, NewAttempt};
use crate::domain::effects::retry::Verdict;
use crate::domain::error::ApiError;
use crate::domain::runs::{authorize_reader, find_run, find_visible_run};
use crate::store::storage::StorageError;

/// The node id of every effect this host performs.
pub const EFFECT_NODE_ID: &str = "effect";

/// An effect could not be performed because the host itself failed.
#[derive(Debug, thiserror::Error)]
pub enum EffectError {
    /// The store failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The identity could not be derived.
    #[error(transparent)]
    Identity(#[from] identity::IdentityError),
}

impl From<EffectError> for ApiError {
    fn from(_: EffectError) -> Self {
        // Internals stay internal; the client learns what it can do.
        ApiError::internal("the host's effect store failed; retry the request")
    }
}

/// One effect to perform: the business operation and where it happens.
#[derive(Debug, Clone, PartialEq)]
pub struct EffectSpec {
    /// The tenant the operation is performed for.
    pub tenant: String,
    /// The operation, e.g. [`identity::OPERATION_CHARGE`].
    pub operation: String,
    /// The business key (None ⇒ activity-recipe keying).
    pub business_key: Option<String>,
    /// The run performing it.
    pub run_id: String,
    /// The node performing it.
    pub node_id: String,
    /// Which of the node's effects (1-based).
    pub ordinal: u32,
    /// The provider (a loopback receiver); None ⇒ the built-in no-op ledger.
    pub provider: Option<Url>,
    /// The business arguments POSTed to the provider (never stored).
    pub args: Value,
}

impl EffectSpec {
    /// A `ledger.charge` of `business_key` by node [`EFFECT_NODE_ID`] of
    /// `run_id`. The provider receives
    /// `{"operation": "ledger.charge", "businessKey": KEY, "amount": 1}`.
    pub fn charge(
        tenant: &str,
        run_id: &str,
        ordinal: u32,
        business_key: &str,
        provider: Option<Url>,
    ) -> Self {
        Self {
            tenant: tenant.to_owned(),
            operation: identity::OPERATION_CHARGE.to_owned(),
            business_key: Some(business_key.to_owned()),
            run_id: run_id.to_owned(),
            node_id: EFFECT_NODE_ID.to_owned(),
            ordinal,
            provider,
            args: json!({
                "operation": identity::OPERATION_CHARGE,
                "businessKey": business_key,
                "amount": 1,
            }),
        }
    }

    /// The business operation (the identity's input).
    pub fn operation(&self) -> BusinessOperation<'_> {
        BusinessOperation {
            tenant: &self.tenant,
            operation: &self.operation,
            business_key: self.business_key.as_deref(),
        }
    }

    /// Where attempt `attempt` happens.
    pub fn activity(&self, attempt: u32) -> Activity<'_> {
        Activity {
            run_id: &self.run_id,
            node_id: &self.node_id,
            ordinal: self.ordinal,
            attempt,
        }
    }
}

/// An effect whose identity one executor has derived, not yet claimed.
#[derive(Debug, Clone)]
pub struct PreparedEffect {
    spec: EffectSpec,
    identity: EffectIdentity,
    invocation_id: String,
    executor: String,
}

/// Derives the identity of `spec` for a fresh executor (`exe_…`).
pub fn prepare(spec: EffectSpec, mutant: Option<Mutant>) -> Result<PreparedEffect, EffectError> {
    // The claim is made with the first attempt's identity (EFF-2: the
    // correct identity is the same for every attempt anyway).
    let identity = identity::derive(&spec.operation(), &spec.activity(1), mutant)?;
    let invocation_id = identity::logical_invocation_id(&spec.tenant, &spec.activity(1));
    Ok(PreparedEffect {
        spec,
        identity,
        invocation_id,
        executor: format!("exe_{}", uuid::Uuid::new_v4().simple()),
    })
}

/// How one executor's part in an effect ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EffectOutcome {
    /// Won the claim; the provider accepted the effect.
    Delivered {
        /// Attempts made.
        attempts: u32,
    },
    /// Won the claim; no attempt was accepted.
    Escaped {
        /// Attempts made.
        attempts: u32,
    },
    /// Lost the claim: another executor holds or held it; nothing fired.
    Deduplicated {
        /// The effect's state as the loser saw it.
        holder: ClaimState,
    },
}

impl EffectOutcome {
    /// Whether this executor invoked the provider.
    pub fn fired(self) -> bool {
        !matches!(self, Self::Deduplicated { .. })
    }

    /// Whether this executor's invocation was accepted.
    pub fn delivered(self) -> bool {
        matches!(self, Self::Delivered { .. })
    }

    /// A short name for run results.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Delivered { .. } => "delivered",
            Self::Escaped { .. } => "escaped",
            Self::Deduplicated { .. } => "deduplicated",
        }
    }
}

/// What one executor did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EffectReport {
    /// The effect id (the claim's key).
    pub effect_id: String,
    /// How it was derived.
    pub keying: Keying,
    /// The logical invocation.
    pub invocation_id: String,
    /// How it ended for this executor.
    pub outcome: EffectOutcome,
}

impl PreparedEffect {
    /// The effect id this executor derived.
    pub fn effect_id(&self) -> &str {
        &self.identity.effect_id
    }

    /// The logical invocation id.
    pub fn invocation_id(&self) -> &str {
        &self.invocation_id
    }

    /// This executor's id.
    pub fn executor(&self) -> &str {
        &self.executor
    }

    /// What is being performed.
    pub fn spec(&self) -> &EffectSpec {
        &self.spec
    }

    /// Claims the effect (passing `await_point` inside the claim path) and,
    /// only if this executor won, invokes the provider with retries.
    pub async fn execute(
        &self,
        state: &Domain,
        await_point: AwaitPoint,
    ) -> Result<EffectReport, EffectError> {
        let request = ClaimRequest {
            effect_id: &self.identity.effect_id,
            // EFF-4: one claim per business operation across entry points.
            claim_scope: claim::HOST_SCOPE,
            tenant: &self.spec.tenant,
            operation: &self.spec.operation,
            keying: self.identity.keying,
            run_id: &self.spec.run_id,
            node_id: &self.spec.node_id,
            invocation_id: &self.invocation_id,
            executor: &self.executor,
        };
        let claimed = claim::claim(state.storage(), &request, await_point, state.mutant()).await?;
        let outcome = match claimed {
            // EFF-4: the loser fires nothing and adds no attempt row.
            ClaimOutcome::Lost {
                holder_state,
                holder_run,
            } => {
                // A second ENTRY POINT (another run) leaves one reference
                // row in its own ledger naming the same effectId; a second
                // executor of the same run (a race, a re-dispatch) leaves
                // nothing, because its run's ledger already has the rows.
                if holder_run.as_deref() != Some(self.spec.run_id.as_str()) {
                    ledger::record_reference(
                        state.storage(),
                        &ledger::Reference {
                            effect_id: &self.identity.effect_id,
                            run_id: &self.spec.run_id,
                            tenant: &self.spec.tenant,
                            node_id: &self.spec.node_id,
                            keying: self.identity.keying,
                            state: reference_state(holder_state),
                        },
                    )?;
                }
                EffectOutcome::Deduplicated {
                    holder: holder_state,
                }
            }
            ClaimOutcome::Won => {
                let attempts = run_attempts(state, self).await?;
                if attempts.accepted {
                    EffectOutcome::Delivered {
                        attempts: attempts.made,
                    }
                } else {
                    EffectOutcome::Escaped {
                        attempts: attempts.made,
                    }
                }
            }
        };
        Ok(EffectReport {
            effect_id: self.identity.effect_id.clone(),
            keying: self.identity.keying,
            invocation_id: self.invocation_id.clone(),
            outcome,
        })
    }
}

/// The ledger state of a reference row: the claim's state as found.
fn reference_state(holder: ClaimState) -> ledger::AttemptState {
    match holder {
        ClaimState::Claimed => ledger::AttemptState::Claimed,
        ClaimState::Completed => ledger::AttemptState::Completed,
        ClaimState::Escaped => ledger::AttemptState::Escaped,
    }
}

/// Prepares and executes `spec` with the default await point.
pub async fn perform(state: &Domain, spec: EffectSpec) -> Result<EffectReport, EffectError> {
    prepare(spec, state.mutant())?
        .execute(state, AwaitPoint::yield_once())
        .await
}

/// Handler for `GET /runs/{runId}/effects`: the run's ledger rows,
/// content-free, one per attempt. Another tenant's run gets the same 404 as
/// an unknown one.
pub async fn list_run_effects(
    State(state): State<Domain>,
    Path(run_id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let caller = authorize_reader(&state, &headers)?;
    let run = if state.mutant_is(Mutant::EffectsCrossTenant) {
        // Bug: effects are tenant data; any reader can see any run's.
        find_run(&state, &run_id)?
    } else {
        find_visible_run(&state, &caller.tenant, &run_id)?
    };
    let effects = ledger::rows_for_run(state.storage(), &run.run_id)?;
    Ok(Json(json!({"runId": run.run_id, "effects": effects})).into_response())
}

/// Runs the attempts of an effect whose claim this executor won, writing
/// one ledger row per attempt and settling the claim at the end, by the
/// policy of [`retry`].
async fn run_attempts(
    state: &Domain,
    effect: &PreparedEffect,
) -> Result<retry::Attempts, EffectError> {
    let mutant = state.mutant();
    let spec = effect.spec();
    let timeout = state.default_tool_timeout();
    let mut attempt = 1;
    loop {
        // EFF-2: the identity is derived again for this attempt; the correct
        // derivation ignores the attempt, so every row carries one id.
        let identity = identity::derive(&spec.operation(), &spec.activity(attempt), mutant)?;
        let key = retry::provider_key(&identity.effect_id, attempt, mutant);
        let row = ledger::open_attempt(
            state.storage(),
            &NewAttempt {
                effect_id: &identity.effect_id,
                run_id: &spec.run_id,
                tenant: &spec.tenant,
                node_id: &spec.node_id,
                attempt,
                keying: identity.keying,
                invocation_id: effect.invocation_id(),
                provider_key: key.as_deref(),
                args: &spec.args,
            },
            mutant,
        )?;
        let verdict = match &spec.provider {
            // No provider configured: the built-in no-op ledger accepts.
            None => Verdict::Accepted,
            Some(url) => retry::classify(
                state
                    .invoker()
                    .deliver(url, &spec.args, key.as_deref(), timeout)
                    .await,
            ),
        };
        let last = attempt >= retry::MAX_ATTEMPTS || verdict == Verdict::Refused;
        let (row_state, settled) = match verdict {
            Verdict::Accepted => (AttemptState::Completed, Some(ClaimState::Completed)),
            _ if last => (AttemptState::Escaped, Some(ClaimState::Escaped)),
            _ => (AttemptState::Released, None),
        };
        ledger::close_attempt(state.storage(), row, row_state)?;
        if let Some(final_state) = settled {
            claim::settle(
                state.storage(),
                effect.effect_id(),
                effect.executor(),
                final_state,
            )?;
            return Ok(retry::Attempts {
                made: attempt,
                accepted: verdict == Verdict::Accepted,
            });
        }
        tokio::time::sleep(retry::BACKOFF_STEP * attempt).await;
        attempt += 1;
    }
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[MutantInfo {
    mutant: Mutant::EffectsCrossTenant,
    name: "effects-cross-tenant",
    breaks: "another tenant can read a run's effects (GET /runs/{runId}/effects skips the tenant check)",
}];
