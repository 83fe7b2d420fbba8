//! Layer 1 of v2 idempotency: the HTTP `Idempotency-Key` on `POST /runs`.
//!
//! - IDEM-L1-1 (key grammar): a key must match `^[A-Za-z0-9._~-]{22,128}$`,
//!   else 400 `idempotency_key_invalid`.
//! - IDEM-L1-2 (scope): a key is scoped by `(authenticated tenant, endpoint,
//!   key)`; the same key from another tenant is another key.
//! - IDEM-L1-3 (replay): the same key with the same body digest (SHA-256 of
//!   the RFC 8785 form of the body) replays the cached response with
//!   `OpenWOP-Idempotent-Replay: true`; the first response never carries it.
//! - IDEM-L1-4 (mismatch): the same key with a different body is 409
//!   `idempotency_key_mismatch`, with no cached body and no runId.
//! - IDEM-L1-5 (in flight): while the first request is processed, a request
//!   with its key is 409 `idempotency_in_flight` with a `Retry-After` header
//!   (never `details.retryAfter*`).
//! - IDEM-L1-6 (what is cached): only final outcomes — 2xx and non-retryable
//!   4xx. 429 and 5xx are never cached (a retry executes again), nor are
//!   400 `validation_error`, 400 `idempotency_key_invalid`, 401 and 403.
//! - Records are kept ≥ 24 h ([`LAYER1_RETENTION_SECS`]).
//!
//! The in-flight marker and the final record are ONE SQLite row. The marker
//! is taken with an atomic insert-if-absent on the scope's primary key, so
//! two requests with one key can never both become its owner.

use crate::store::storage::Cached;
use std::future::Future;
use std::time::Duration;

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use rusqlite::{OptionalExtension, params};
use serde_json::Value;

use crate::base::args_hash::sha256_hex;
use crate::base::clock::cutoff_ms;
use crate::base::clock::{now_unix_ms, secs_to_ms};
use crate::base::mutant::{Mutant, MutantInfo};
use crate::domain::error::{ApiError, ErrorCode};
use crate::store::storage::{Storage, StorageError};

/// The Layer-1 records table; one row per scope, first in flight, then done.
pub const SCHEMA: &str = "
CREATE TABLE l1_records (
    tenant TEXT NOT NULL,
    endpoint TEXT NOT NULL,
    key TEXT NOT NULL,
    digest TEXT NULL,
    state TEXT NOT NULL,
    owner TEXT NOT NULL,
    lease_until_ms INTEGER NOT NULL,
    status INTEGER NULL,
    body BLOB NULL,
    retry_after INTEGER NULL,
    recorded_at_ms INTEGER NOT NULL,
    PRIMARY KEY (tenant, endpoint, key)
);
";

/// Layer-1 records are kept at least this long: 24 h.
pub const LAYER1_RETENTION_SECS: u64 = 86_400;

/// The request header carrying the key.
pub const IDEMPOTENCY_KEY_HEADER: &str = "idempotency-key";

/// The response header marking a replay.
pub const REPLAY_HEADER: &str = "openwop-idempotent-replay";

/// The endpoint part of the scope of `POST /runs` keys.
pub const RUNS_ENDPOINT: &str = "POST /runs";

/// Shortest valid key.
pub const KEY_MIN_LEN: usize = 22;

/// Longest valid key.
pub const KEY_MAX_LEN: usize = 128;

/// How long an owner's in-flight marker holds before another request may
/// take it over (longer than [`PROCESS_BUDGET`], so a live owner is never
/// overtaken).
pub const IN_FLIGHT_LEASE: Duration = Duration::from_secs(60);

/// The longest the wrapped endpoint may take before it is answered 503.
pub const PROCESS_BUDGET: Duration = Duration::from_secs(50);

/// `Retry-After` on `idempotency_in_flight`, in seconds.
pub const IN_FLIGHT_RETRY_AFTER_SECS: u64 = 1;

/// The scope the `l1-key-not-tenant-scoped` mutant files every key under.
const UNSCOPED_TENANT: &str = "*";

const IN_FLIGHT: &str = "in_flight";
const DONE: &str = "done";

/// Whether `key` matches `^[A-Za-z0-9._~-]{22,128}$` (IDEM-L1-1).
pub fn key_is_valid(key: &str) -> bool {
    (KEY_MIN_LEN..=KEY_MAX_LEN).contains(&key.len())
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'~' | b'-'))
}

fn invalid_key() -> ApiError {
    ApiError::new(
        ErrorCode::IdempotencyKeyInvalid,
        format!(
            "header `Idempotency-Key` must match ^[A-Za-z0-9._~-]{{{KEY_MIN_LEN},{KEY_MAX_LEN}}}$; send a fresh random key of that form"
        ),
    )
}

/// The request's key: `None` without the header, 400
/// `idempotency_key_invalid` for a key failing the grammar.
pub fn read_key(headers: &HeaderMap, mutant: Option<Mutant>) -> Result<Option<String>, ApiError> {
    let mut values = headers.get_all(IDEMPOTENCY_KEY_HEADER).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if mutant == Some(Mutant::L1InvalidKeyAccepted) {
        // Bug (IDEM-L1-1): whatever arrives is used as a key.
        return Ok(Some(String::from_utf8_lossy(value.as_bytes()).into_owned()));
    }
    // Two keys on one request name no single scope.
    if values.next().is_some() {
        return Err(invalid_key());
    }
    match value.to_str() {
        Ok(key) if key_is_valid(key) => Ok(Some(key.to_owned())),
        _ => Err(invalid_key()),
    }
}

/// The digest that decides "same request": SHA-256 of the RFC 8785 form of
/// a JSON body (so key order and number spelling do not matter), or of the
/// raw bytes when the body is not JSON. Prefixed so the two never collide.
pub fn body_digest(body: &[u8]) -> String {
    match serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|value| serde_json_canonicalizer::to_vec(&value).ok())
    {
        Some(canonical) => format!("jcs:{}", sha256_hex(&canonical)),
        None => format!("raw:{}", sha256_hex(body)),
    }
}

/// The scope of one key (IDEM-L1-2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    /// The authenticated tenant.
    pub tenant: String,
    /// The endpoint, e.g. [`RUNS_ENDPOINT`].
    pub endpoint: &'static str,
    /// The key.
    pub key: String,
}

impl Scope {
    /// The scope of `key` sent by a caller of `tenant` to `endpoint`.
    pub fn new(tenant: &str, endpoint: &'static str, key: &str, mutant: Option<Mutant>) -> Self {
        let tenant = if mutant == Some(Mutant::L1KeyNotTenantScoped) {
            // Bug (IDEM-L1-2): every tenant shares one key space, so one
            // tenant's key replays its response to another tenant.
            UNSCOPED_TENANT
        } else {
            tenant
        };
        Self {
            tenant: tenant.to_owned(),
            endpoint,
            key: key.to_owned(),
        }
    }
}

/// A final answer of the wrapped endpoint: what is cached and replayed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// HTTP status.
    pub status: StatusCode,
    /// The JSON body bytes.
    pub body: Vec<u8>,
    /// `Retry-After` seconds, if any.
    pub retry_after: Option<u64>,
    /// The envelope's code, for errors.
    pub error: Option<ErrorCode>,
}

impl Outcome {
    /// A success answer.
    pub fn success(status: StatusCode, body: &Value) -> Self {
        Self {
            status,
            body: serde_json::to_vec(body).unwrap_or_default(),
            retry_after: None,
            error: None,
        }
    }

    /// An error answer (the v2 envelope).
    pub fn failure(err: &ApiError) -> Self {
        Self {
            status: err.code.status(),
            body: serde_json::to_vec(&err.body()).unwrap_or_default(),
            retry_after: err.retry_after_secs,
            error: Some(err.code),
        }
    }

    /// The HTTP response; `replay` marks a replayed cached response.
    pub fn into_response(self, replay: bool, mutant: Option<Mutant>) -> Response {
        let mut response = (self.status, self.body).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if let Some(secs) = self.retry_after {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        // IDEM-L1-3: a replay says so; a first response never does.
        if replay && mutant != Some(Mutant::L1ReplayHeaderMissing) {
            headers.insert(REPLAY_HEADER, HeaderValue::from_static("true"));
        }
        response
    }
}

/// Whether an outcome is final and may be cached (IDEM-L1-6).
pub fn is_cacheable(outcome: &Outcome, mutant: Option<Mutant>) -> bool {
    let status = outcome.status.as_u16();
    if outcome.status.is_success() {
        return true;
    }
    if status >= 500 {
        // Bug when mutated: a 503 is transient; caching it replays the
        // failure to a retry that would have succeeded.
        return mutant == Some(Mutant::L1Caches5xx);
    }
    match outcome.error {
        // Bug when mutated: a malformed request was never processed, so
        // there is nothing final to replay.
        Some(ErrorCode::ValidationError) => mutant == Some(Mutant::L1CachesValidationError),
        Some(
            ErrorCode::IdempotencyKeyInvalid
            | ErrorCode::Unauthenticated
            | ErrorCode::Forbidden
            | ErrorCode::RateLimited
            | ErrorCode::IdempotencyInFlight
            | ErrorCode::IdempotencyKeyMismatch
            | ErrorCode::IdempotencyKeyConflict,
        ) => false,
        // Any other 4xx (e.g. 404 for an unknown workflow) is final.
        _ => (400..500).contains(&status) && status != 429,
    }
}

/// What the record of a scope says about a new request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Begin {
    /// This request owns the scope (token given) and must be processed.
    Owner(String),
    /// A final response is recorded for this body: replay it.
    Replay(Outcome),
    /// The key was used with another body.
    Mismatch,
    /// The first request is still being processed.
    InFlight,
}

/// One stored row.
struct Row {
    digest: Option<String>,
    state: String,
    lease_until_ms: i64,
    status: Option<u16>,
    body: Option<Vec<u8>>,
    retry_after: Option<i64>,
}

fn read_row(storage: &Storage, scope: &Scope) -> Result<Option<Row>, StorageError> {
    storage.with_conn(|conn| {
        conn.query_row_cached(
            "SELECT digest, state, lease_until_ms, status, body, retry_after FROM l1_records
             WHERE tenant = ?1 AND endpoint = ?2 AND key = ?3",
            params![scope.tenant, scope.endpoint, scope.key],
            |row| {
                Ok(Row {
                    digest: row.get(0)?,
                    state: row.get(1)?,
                    lease_until_ms: row.get(2)?,
                    status: row.get(3)?,
                    body: row.get(4)?,
                    retry_after: row.get(5)?,
                })
            },
        )
        .optional()
    })
}

/// Inserts an in-flight marker if the scope has no row (atomic
/// insert-if-absent on the primary key); true when this call inserted it.
fn insert_marker(
    storage: &Storage,
    scope: &Scope,
    digest: Option<&str>,
    owner: &str,
    lease_until_ms: i64,
    now_ms: i64,
) -> Result<bool, StorageError> {
    let inserted = storage.with_conn(|conn| {
        conn.execute_cached(
            "INSERT INTO l1_records (tenant, endpoint, key, digest, state, owner, lease_until_ms,
                 recorded_at_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
             ON CONFLICT(tenant, endpoint, key) DO NOTHING",
            params![
                scope.tenant,
                scope.endpoint,
                scope.key,
                digest,
                IN_FLIGHT,
                owner,
                lease_until_ms,
                now_ms
            ],
        )
    })?;
    Ok(inserted == 1)
}

/// Takes over an in-flight marker whose lease ran out (its owner is gone):
/// one conditional UPDATE, so at most one taker wins.
fn take_over_expired(
    storage: &Storage,
    scope: &Scope,
    digest: Option<&str>,
    owner: &str,
    lease_until_ms: i64,
    now_ms: i64,
) -> Result<bool, StorageError> {
    let taken = storage.with_conn(|conn| {
        conn.execute_cached(
            "UPDATE l1_records SET digest = ?4, owner = ?5, lease_until_ms = ?6, recorded_at_ms = ?7
             WHERE tenant = ?1 AND endpoint = ?2 AND key = ?3
               AND state = 'in_flight' AND lease_until_ms <= ?7",
            params![
                scope.tenant,
                scope.endpoint,
                scope.key,
                digest,
                owner,
                lease_until_ms,
                now_ms
            ],
        )
    })?;
    Ok(taken == 1)
}

fn new_owner() -> String {
    format!("l1_{}", uuid::Uuid::new_v4().simple())
}

/// Decides what to do with a request of `scope` whose body has `digest`.
pub fn begin(
    storage: &Storage,
    scope: &Scope,
    digest: &str,
    now_ms: i64,
) -> Result<Begin, StorageError> {
    let lease_until = now_ms.saturating_add(secs_to_ms(IN_FLIGHT_LEASE.as_secs()));
    // A row can vanish between the failed insert and the read (its owner
    // ended with an uncacheable outcome); a few rounds settle that, and
    // if they do not, the client is told to retry.
    for _ in 0..4 {
        let owner = new_owner();
        if insert_marker(storage, scope, Some(digest), &owner, lease_until, now_ms)? {
            return Ok(Begin::Owner(owner));
        }
        let Some(row) = read_row(storage, scope)? else {
            continue;
        };
        if row.state == IN_FLIGHT && row.lease_until_ms <= now_ms {
            if take_over_expired(storage, scope, Some(digest), &owner, lease_until, now_ms)? {
                return Ok(Begin::Owner(owner));
            }
            continue;
        }
        // A hold marker has no digest: it stands for any body.
        if row.digest.as_deref().is_some_and(|stored| stored != digest) {
            return Ok(Begin::Mismatch);
        }
        if row.state == DONE {
            let Some(status) = row.status.and_then(|s| StatusCode::from_u16(s).ok()) else {
                return Err(StorageError::Corrupt {
                    column: "l1_records.status",
                    problem: "a done record without a valid status".to_owned(),
                });
            };
            let body = row.body.unwrap_or_default();
            return Ok(Begin::Replay(Outcome {
                status,
                body,
                retry_after: row.retry_after.and_then(|secs| u64::try_from(secs).ok()),
                error: None,
            }));
        }
        return Ok(Begin::InFlight);
    }
    Ok(Begin::InFlight)
}

/// Ends `owner`'s processing: a cacheable outcome becomes the final record,
/// anything else releases the key so a retry executes again.
pub fn finish(
    storage: &Storage,
    scope: &Scope,
    owner: &str,
    outcome: &Outcome,
    cache: bool,
) -> Result<(), StorageError> {
    storage.with_conn(|conn| {
        if cache {
            conn.execute_cached(
                "UPDATE l1_records SET state = ?5, status = ?6, body = ?7, retry_after = ?8,
                     recorded_at_ms = ?9
                 WHERE tenant = ?1 AND endpoint = ?2 AND key = ?3 AND owner = ?4",
                params![
                    scope.tenant,
                    scope.endpoint,
                    scope.key,
                    owner,
                    DONE,
                    outcome.status.as_u16(),
                    outcome.body,
                    outcome
                        .retry_after
                        .map(|secs| i64::try_from(secs).unwrap_or(i64::MAX)),
                    now_unix_ms()
                ],
            )
        } else {
            conn.execute_cached(
                "DELETE FROM l1_records
                 WHERE tenant = ?1 AND endpoint = ?2 AND key = ?3 AND owner = ?4",
                params![scope.tenant, scope.endpoint, scope.key, owner],
            )
        }
    })?;
    Ok(())
}

/// The key of the final Layer-1 record of `tenant`'s `endpoint` whose cached answer names
/// `run_id` (the key that created the run), if one does.
pub fn key_of_run(
    storage: &Storage,
    tenant: &str,
    endpoint: &str,
    run_id: &str,
) -> Result<Option<String>, StorageError> {
    storage.with_conn(|conn| {
        conn.query_row(
            "SELECT key FROM l1_records
             WHERE tenant = ?1 AND endpoint = ?2 AND state = 'done'
               AND instr(CAST(body AS TEXT), ?3) > 0
             LIMIT 1",
            params![tenant, endpoint, format!("\"{run_id}\"")],
            |row| row.get::<_, String>(0),
        )
        .optional()
    })
}

/// How a caller's key may show in the host's logs and spans: a truncated, salted hash (RFC
/// 0150 §F), the salt drawn once per process, so the key cannot be recovered or matched.
pub fn key_fingerprint(key: &str) -> String {
    static SALT: std::sync::OnceLock<[u8; 16]> = std::sync::OnceLock::new();
    let salt = SALT.get_or_init(|| {
        let mut salt = [0u8; 16];
        // Without entropy the fingerprint is still a hash; the salt only hides keys further.
        let _ = getrandom::fill(&mut salt);
        salt
    });
    let mut material = salt.to_vec();
    material.extend_from_slice(key.as_bytes());
    sha256_hex(&material)[..16].to_owned()
}

/// How long an armed hold waits for its create before it lapses.
pub const HOLD_ARM_TTL: Duration = Duration::from_secs(60);

/// Holds armed by the hold seam (RFC 0213 §B, `armIdempotencyHold`): the
/// next create of a scope that becomes its owner keeps its claim in flight
/// for the hold's duration before it is processed, so a concurrent
/// same-key create meets the in-flight branch of [`guard`]. A hold is used
/// once, and one nobody used lapses after [`HOLD_ARM_TTL`]; an unarmed key
/// is never delayed. The seam never answers a create itself.
#[derive(Debug, Default)]
pub struct ArmedHolds {
    armed: std::sync::Mutex<std::collections::HashMap<HoldSlot, (Duration, std::time::Instant)>>,
}

/// The scope an armed hold is for: tenant, endpoint, key.
type HoldSlot = (String, &'static str, String);

impl ArmedHolds {
    /// Arms `scope` for `hold` (a second arming replaces the first).
    pub fn arm(&self, scope: &Scope, hold: Duration) {
        let mut armed = self
            .armed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = std::time::Instant::now();
        armed.retain(|_, (_, at)| now.duration_since(*at) < HOLD_ARM_TTL);
        armed.insert(Self::slot(scope), (hold, now));
    }

    /// Takes the hold armed for `scope`, if one is armed and has not lapsed.
    pub fn take(&self, scope: &Scope) -> Option<Duration> {
        let mut armed = self
            .armed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (hold, at) = armed.remove(&Self::slot(scope))?;
        (at.elapsed() < HOLD_ARM_TTL).then_some(hold)
    }

    fn slot(scope: &Scope) -> HoldSlot {
        (scope.tenant.clone(), scope.endpoint, scope.key.clone())
    }
}

/// Deletes final records older than 24 h and markers whose lease ran out,
/// as of `now_ms`; returns how many rows went.
pub fn sweep(storage: &Storage, now_ms: i64) -> Result<usize, StorageError> {
    let cutoff = cutoff_ms(now_ms, LAYER1_RETENTION_SECS);
    storage.with_conn(|conn| {
        conn.execute_cached(
            "DELETE FROM l1_records
             WHERE (state = 'done' AND recorded_at_ms < ?1)
                OR (state = 'in_flight' AND lease_until_ms < ?2)",
            params![cutoff, now_ms],
        )
    })
}

/// What [`guard`] reads of the host's state: the caller passes the parts of its
/// `Domain`, which lives above this module and is not named here.
#[derive(Debug, Clone, Copy)]
pub struct GuardState<'a> {
    /// The store holding the Layer-1 records.
    pub storage: &'a Storage,
    /// The holds the hold seam armed.
    pub holds: &'a ArmedHolds,
    /// The active mutant, if any.
    pub mutant: Option<Mutant>,
}

/// Wraps one endpoint with Layer 1: `process` runs only for the owner of a
/// key (or when no key is sent), and its outcome is recorded by the rules
/// above. The caller has already authenticated and authorized the request
/// (401 and 403 are never cached because they never get here).
pub async fn guard<F, Fut>(
    state: GuardState<'_>,
    tenant: &str,
    endpoint: &'static str,
    headers: &HeaderMap,
    body: &[u8],
    process: F,
) -> Response
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = Outcome>,
{
    let mutant = state.mutant;
    if mutant == Some(Mutant::L1KeyIgnored) {
        // Bug: the header is not looked at; every retry runs again.
        return bounded(process).await.into_response(false, mutant);
    }
    let key = match read_key(headers, mutant) {
        Ok(Some(key)) => key,
        Ok(None) => return bounded(process).await.into_response(false, mutant),
        Err(err) => return err.into_response(),
    };
    let scope = Scope::new(tenant, endpoint, &key, mutant);
    let digest = body_digest(body);
    let storage = state.storage;
    let begun = match begin(storage, &scope, &digest, now_unix_ms()) {
        Ok(begun) => begun,
        Err(err) => return ApiError::from(err).into_response(),
    };
    match begun {
        Begin::Owner(owner) => {
            if let Some(hold) = state.holds.take(&scope) {
                // The hold seam armed this key: the claim stays in flight.
                tokio::time::sleep(hold).await;
            }
            let outcome = bounded(process).await;
            let cache = is_cacheable(&outcome, mutant);
            // If recording fails the answer still goes out; the marker's
            // lease then expires and a later request with this key executes
            // again (never a wrong replay).
            let _ = finish(storage, &scope, &owner, &outcome, cache);
            outcome.into_response(false, mutant)
        }
        Begin::Replay(cached) => cached.into_response(true, mutant),
        Begin::Mismatch => {
            let code = if mutant == Some(Mutant::L1MismatchWrongCode) {
                // Bug (IDEM-L1-4): not the v2 code.
                ErrorCode::IdempotencyKeyConflict
            } else {
                ErrorCode::IdempotencyKeyMismatch
            };
            ApiError::new(
                code,
                "this Idempotency-Key was used with a different request body; use a fresh key for a different request",
            )
            .into_response()
        }
        Begin::InFlight if mutant == Some(Mutant::L1InFlightProcessed) => {
            // Bug (IDEM-L1-5): the duplicate runs beside the first request.
            bounded(process).await.into_response(false, mutant)
        }
        Begin::InFlight => ApiError::new(
            ErrorCode::IdempotencyInFlight,
            "a request with this Idempotency-Key is still being processed; retry after the Retry-After delay",
        )
        .with_retry_after(IN_FLIGHT_RETRY_AFTER_SECS)
        .into_response(),
    }
}

/// Runs `process` within [`PROCESS_BUDGET`]; past it the answer is a
/// (never cached) 503.
async fn bounded<F, Fut>(process: F) -> Outcome
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = Outcome>,
{
    match tokio::time::timeout(PROCESS_BUDGET, process()).await {
        Ok(outcome) => outcome,
        Err(_) => Outcome::failure(
            &ApiError::new(
                ErrorCode::ServiceUnavailable,
                "the request took too long to process; retry it",
            )
            .with_retry_after(1),
        ),
    }
}

/// Answers a response body as [`Outcome`] (helper for handlers).
pub fn outcome_of(result: Result<(StatusCode, Value), ApiError>) -> Outcome {
    match result {
        Ok((status, body)) => Outcome::success(status, &body),
        Err(err) => Outcome::failure(&err),
    }
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[
    MutantInfo {
        mutant: Mutant::L1KeyIgnored,
        name: "l1-key-ignored",
        breaks: "Idempotency-Key on POST /runs is ignored entirely",
    },
    MutantInfo {
        mutant: Mutant::L1ReplayHeaderMissing,
        name: "l1-replay-header-missing",
        breaks: "replayed POST /runs responses omit OpenWOP-Idempotent-Replay",
    },
    MutantInfo {
        mutant: Mutant::L1MismatchWrongCode,
        name: "l1-mismatch-wrong-code",
        breaks: "a reused key with a different body answers 409 idempotency_key_conflict instead of idempotency_key_mismatch",
    },
    MutantInfo {
        mutant: Mutant::L1InFlightProcessed,
        name: "l1-in-flight-processed",
        breaks: "a request whose key is in flight is processed as a new request instead of 409 idempotency_in_flight",
    },
    MutantInfo {
        mutant: Mutant::L1Caches5xx,
        name: "l1-caches-5xx",
        breaks: "a 503 answer to POST /runs is cached and replayed",
    },
    MutantInfo {
        mutant: Mutant::L1CachesValidationError,
        name: "l1-caches-validation-error",
        breaks: "a 400 validation_error answer to POST /runs is cached and replayed",
    },
    MutantInfo {
        mutant: Mutant::L1InvalidKeyAccepted,
        name: "l1-invalid-key-accepted",
        breaks: "Idempotency-Key values failing ^[A-Za-z0-9._~-]{22,128}$ are accepted",
    },
    MutantInfo {
        mutant: Mutant::L1KeyNotTenantScoped,
        name: "l1-key-not-tenant-scoped",
        breaks: "the Layer-1 key scope omits the tenant (one tenant's key replays to another)",
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const KEY: &str = "key-0123456789abcdefghij";

    fn scope(tenant: &str) -> Scope {
        Scope::new(tenant, RUNS_ENDPOINT, KEY, None)
    }

    #[test]
    fn key_grammar() {
        assert!(key_is_valid(KEY));
        assert!(key_is_valid(&"a".repeat(22)));
        assert!(key_is_valid(&"Z".repeat(128)));
        assert!(key_is_valid("A.b_c~d-e0123456789xyzQ"));
        assert!(!key_is_valid(&"a".repeat(21)));
        assert!(!key_is_valid(&"a".repeat(129)));
        assert!(!key_is_valid("key with spaces 0123456789"));
        assert!(!key_is_valid("key/with/slash0123456789"));
        assert!(!key_is_valid("ключ-0123456789abcdefghij"));
        assert!(!key_is_valid(""));
    }

    #[test]
    fn read_key_rejects_bad_and_duplicate_keys() {
        let mut headers = HeaderMap::new();
        assert_eq!(read_key(&headers, None).expect("ok"), None);
        headers.insert(IDEMPOTENCY_KEY_HEADER, HeaderValue::from_static("short"));
        let err = read_key(&headers, None).unwrap_err();
        assert_eq!(err.code, ErrorCode::IdempotencyKeyInvalid);
        assert_eq!(
            read_key(&headers, Some(Mutant::L1InvalidKeyAccepted)).expect("ok"),
            Some("short".to_owned())
        );
        headers.insert(IDEMPOTENCY_KEY_HEADER, HeaderValue::from_static(KEY));
        assert_eq!(read_key(&headers, None).expect("ok").as_deref(), Some(KEY));
        headers.append(IDEMPOTENCY_KEY_HEADER, HeaderValue::from_static(KEY));
        assert!(read_key(&headers, None).is_err());
    }

    #[test]
    fn digest_is_jcs_sha256_of_the_body() {
        let a = body_digest(br#"{"b": 1.0, "a": [1, "x"]}"#);
        let b = body_digest(br#"{"a":[1,"x"],"b":1}"#);
        assert_eq!(a, b);
        assert_eq!(a, format!("jcs:{}", sha256_hex(br#"{"a":[1,"x"],"b":1}"#)));
        assert_ne!(a, body_digest(br#"{"a":[1,"x"],"b":2}"#));
        assert_eq!(
            body_digest(b"{oops"),
            format!("raw:{}", sha256_hex(b"{oops"))
        );
    }

    #[test]
    fn scope_includes_the_tenant_unless_mutated() {
        assert_ne!(scope("tenant-a"), scope("tenant-b"));
        let mutated = |t| Scope::new(t, RUNS_ENDPOINT, KEY, Some(Mutant::L1KeyNotTenantScoped));
        assert_eq!(mutated("tenant-a"), mutated("tenant-b"));
    }

    #[test]
    fn state_machine_owner_replay_mismatch_in_flight() {
        let store = Storage::open_in_memory(crate::surface::app::STORE_SCHEMAS).expect("open");
        let now = 1_000_000;
        let digest = body_digest(br#"{"workflowId": "conformance-noop"}"#);
        let Begin::Owner(owner) = begin(&store, &scope("tenant-a"), &digest, now).expect("begin")
        else {
            panic!("first request owns the key");
        };
        // While the owner processes: in flight, for the same body…
        assert_eq!(
            begin(&store, &scope("tenant-a"), &digest, now).expect("begin"),
            Begin::InFlight
        );
        // …and a mismatch for another body.
        assert_eq!(
            begin(&store, &scope("tenant-a"), "jcs:other", now).expect("begin"),
            Begin::Mismatch
        );
        // Another tenant's same key is another scope.
        assert!(matches!(
            begin(&store, &scope("tenant-b"), &digest, now).expect("begin"),
            Begin::Owner(_)
        ));
        let outcome = Outcome::success(StatusCode::CREATED, &json!({"runId": "run_1"}));
        finish(&store, &scope("tenant-a"), &owner, &outcome, true).expect("finish");
        let Begin::Replay(replayed) =
            begin(&store, &scope("tenant-a"), &digest, now).expect("begin")
        else {
            panic!("replay after finish");
        };
        assert_eq!(replayed.status, StatusCode::CREATED);
        assert_eq!(replayed.body, outcome.body);
        assert_eq!(
            begin(&store, &scope("tenant-a"), "jcs:other", now).expect("begin"),
            Begin::Mismatch
        );
    }

    #[test]
    fn uncacheable_outcomes_release_the_key_and_leases_expire() {
        let store = Storage::open_in_memory(crate::surface::app::STORE_SCHEMAS).expect("open");
        let Begin::Owner(owner) = begin(&store, &scope("t"), "d", 0).expect("begin") else {
            panic!("owner");
        };
        let failed = Outcome::failure(
            &ApiError::new(ErrorCode::ServiceUnavailable, "later").with_retry_after(1),
        );
        finish(&store, &scope("t"), &owner, &failed, false).expect("finish");
        assert!(matches!(
            begin(&store, &scope("t"), "d", 0).expect("begin"),
            Begin::Owner(_)
        ));
        // That second owner never finishes: past its lease, a request takes over.
        let lease = secs_to_ms(IN_FLIGHT_LEASE.as_secs());
        assert_eq!(
            begin(&store, &scope("t"), "d", lease - 1).expect("begin"),
            Begin::InFlight
        );
        assert!(matches!(
            begin(&store, &scope("t"), "d", lease).expect("begin"),
            Begin::Owner(_)
        ));
    }

    #[test]
    fn an_armed_hold_is_taken_once_by_its_own_scope() {
        let holds = ArmedHolds::default();
        holds.arm(&scope("t"), Duration::from_millis(500));
        assert_eq!(
            holds.take(&scope("u")),
            None,
            "another tenant's key is not held"
        );
        assert_eq!(holds.take(&scope("t")), Some(Duration::from_millis(500)));
        assert_eq!(holds.take(&scope("t")), None, "a hold is used once");
    }

    #[test]
    fn only_final_outcomes_are_cacheable() {
        let ok = Outcome::success(StatusCode::CREATED, &json!({}));
        assert!(is_cacheable(&ok, None));
        let not_found = Outcome::failure(&ApiError::not_found("no such workflow"));
        assert!(is_cacheable(&not_found, None));
        let never = [
            ApiError::validation("bad"),
            ApiError::new(ErrorCode::IdempotencyKeyInvalid, "bad key"),
            ApiError::unauthenticated("who"),
            ApiError::forbidden("no"),
            ApiError::new(ErrorCode::RateLimited, "slow").with_retry_after(1),
            ApiError::new(ErrorCode::ServiceUnavailable, "later").with_retry_after(1),
            ApiError::internal("oops"),
        ];
        for err in never {
            assert!(!is_cacheable(&Outcome::failure(&err), None), "{err}");
        }
        let unavailable = Outcome::failure(&ApiError::new(ErrorCode::ServiceUnavailable, "x"));
        assert!(is_cacheable(&unavailable, Some(Mutant::L1Caches5xx)));
        let invalid = Outcome::failure(&ApiError::validation("bad"));
        assert!(is_cacheable(
            &invalid,
            Some(Mutant::L1CachesValidationError)
        ));
        assert!(!is_cacheable(&invalid, Some(Mutant::L1Caches5xx)));
    }

    #[test]
    fn sweep_keeps_records_for_24_hours() {
        let store = Storage::open_in_memory(crate::surface::app::STORE_SCHEMAS).expect("open");
        let Begin::Owner(owner) = begin(&store, &scope("t"), "d", 0).expect("begin") else {
            panic!("owner");
        };
        let outcome = Outcome::success(StatusCode::CREATED, &json!({}));
        finish(&store, &scope("t"), &owner, &outcome, true).expect("finish");
        let recorded: i64 = store
            .with_conn(|conn| {
                conn.query_row("SELECT recorded_at_ms FROM l1_records", [], |row| {
                    row.get(0)
                })
            })
            .expect("read");
        let day = secs_to_ms(LAYER1_RETENTION_SECS);
        assert_eq!(sweep(&store, recorded + day).expect("sweep"), 0);
        assert_eq!(sweep(&store, recorded + day + 1).expect("sweep"), 1);
    }
}
