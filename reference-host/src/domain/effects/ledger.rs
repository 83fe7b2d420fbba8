//! The effect ledger: one row per attempt (EFF-2), content-free.
//!
//! A row is written when an attempt starts (`claimed`) and settled when it
//! ends: `released` for a failed attempt that will be retried, `completed`
//! when the provider accepted the effect, `escaped` for the last attempt
//! when every attempt failed (or the provider refused). Rows name the
//! effect, node, attempt and key, never the business arguments.
//! `GET /runs/{runId}/effects` serves a run's rows; they are kept ≥ 14
//! days (see [`crate::domain::effects::sweeper`]).
//!
//! A run that reaches an effect another run already claimed makes no
//! attempt and fires nothing; its ledger shows one reference row for it
//! (`attempt: 0`, the state it found, the same effectId), so every entry
//! point can see which effect its business operation was.
//!
//! RPL-11: an effect fired through an effect seam
//! (`POST /conformance/seams/sample/effect-seams/fire`) writes one
//! `delivered` row keyed `seam:<seam id>` ([`record_seam_delivery`]), and a
//! fork carries its source's rows over unchanged ([`inherit_rows`]): an
//! inherited effect, not a new delivery.

use crate::store::storage::Cached;
use rusqlite::params;
use serde::Serialize;
use serde_json::Value;

use crate::base::clock::{now_unix_ms, rfc3339_at_ms};
use crate::base::mutant::{Mutant, MutantInfo};
use crate::domain::effects::identity::Keying;
use crate::store::storage::{Storage, StorageError};

/// The ledger table. `args` is filled only under the `ledger-leaks-args`
/// mutant; the correct host writes NULL there.
pub const SCHEMA: &str = "
CREATE TABLE effect_ledger (
    row_id INTEGER PRIMARY KEY AUTOINCREMENT,
    effect_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    tenant TEXT NOT NULL,
    node_id TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    keying TEXT NOT NULL,
    state TEXT NOT NULL,
    at TEXT NOT NULL,
    at_ms INTEGER NOT NULL,
    invocation_id TEXT NULL,
    provider_key TEXT NULL,
    args TEXT NULL
);
CREATE INDEX effect_ledger_run ON effect_ledger(run_id, row_id);
CREATE INDEX effect_ledger_at ON effect_ledger(at_ms);
";

/// The state of one attempt row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AttemptState {
    /// The attempt is in progress.
    Claimed,
    /// The provider accepted the effect on this attempt.
    Completed,
    /// This attempt failed and a later one follows.
    Released,
    /// This was the last attempt and the effect did not go through.
    Escaped,
    /// An effect fired once through an effect seam reached its receiver
    /// (RPL-11); the row's `at` is the time of that delivery.
    Delivered,
}

impl AttemptState {
    /// The wire string.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Claimed => "claimed",
            Self::Completed => "completed",
            Self::Released => "released",
            Self::Escaped => "escaped",
            Self::Delivered => "delivered",
        }
    }

    /// Parses a wire string.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "claimed" => Some(Self::Claimed),
            "completed" => Some(Self::Completed),
            "released" => Some(Self::Released),
            "escaped" => Some(Self::Escaped),
            "delivered" => Some(Self::Delivered),
            _ => None,
        }
    }
}

/// An attempt about to start.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NewAttempt<'a> {
    /// The effect id this attempt carries.
    pub effect_id: &'a str,
    /// The run of the executor making the attempt.
    pub run_id: &'a str,
    /// The tenant.
    pub tenant: &'a str,
    /// The node.
    pub node_id: &'a str,
    /// 1, 2, 3.
    pub attempt: u32,
    /// How the effect id was derived.
    pub keying: Keying,
    /// The logical invocation.
    pub invocation_id: &'a str,
    /// The `Idempotency-Key` sent to the provider, if any.
    pub provider_key: Option<&'a str>,
    /// The business arguments (NOT stored by the correct host).
    pub args: &'a Value,
}

/// One ledger row as served by `GET /runs/{runId}/effects`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LedgerRow {
    /// The effect id.
    pub effect_id: String,
    /// The node.
    pub node_id: String,
    /// 1-based attempt number.
    pub attempt: u32,
    /// `business-identity` or `activity-recipe`, or `seam:<seam id>` for
    /// an effect fired through an effect seam (RPL-11).
    pub keying: String,
    /// The attempt's state.
    pub state: AttemptState,
    /// RFC 3339 time of the row's last change.
    pub at: String,
    /// The logical invocation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub invocation_id: Option<String>,
    /// The key sent to the provider.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider_key: Option<String>,
    /// Present only under the `ledger-leaks-args` mutant.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub args: Option<Value>,
}

/// Writes the row of an attempt that is starting (`claimed`); returns its id.
pub fn open_attempt(
    storage: &Storage,
    attempt: &NewAttempt<'_>,
    mutant: Option<Mutant>,
) -> Result<i64, StorageError> {
    let args = if mutant == Some(Mutant::LedgerLeaksArgs) {
        // Bug: the ledger must be content-free; the arguments are the
        // caller's business data and never belong in it.
        Some(attempt.args.to_string())
    } else {
        None
    };
    let now = now_unix_ms();
    storage.with_conn(|conn| {
        conn.execute_cached(
            "INSERT INTO effect_ledger (effect_id, run_id, tenant, node_id, attempt, keying, state,
                 at, at_ms, invocation_id, provider_key, args)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            params![
                attempt.effect_id,
                attempt.run_id,
                attempt.tenant,
                attempt.node_id,
                attempt.attempt,
                attempt.keying.as_str(),
                AttemptState::Claimed.as_str(),
                rfc3339_at_ms(now),
                now,
                attempt.invocation_id,
                attempt.provider_key,
                args
            ],
        )?;
        Ok(conn.last_insert_rowid())
    })
}

/// A run that reached an effect another run's executor already claimed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reference<'a> {
    /// The effect (the same id the first entry point derived).
    pub effect_id: &'a str,
    /// The run that reached it second.
    pub run_id: &'a str,
    /// The tenant.
    pub tenant: &'a str,
    /// The node.
    pub node_id: &'a str,
    /// How the id was derived.
    pub keying: Keying,
    /// The effect's state when this run reached it.
    pub state: AttemptState,
}

/// Records, once per (run, effect), that `reference.run_id` reached an
/// effect performed by another run: a row with `attempt: 0` (this run made
/// no attempt), the effect's state as it found it, and no invocationId or
/// providerKey (it invoked nothing). One statement, so two executors of
/// the same run cannot write it twice. Returns whether a row was written.
pub fn record_reference(
    storage: &Storage,
    reference: &Reference<'_>,
) -> Result<bool, StorageError> {
    let now = now_unix_ms();
    let written = storage.with_conn(|conn| {
        conn.execute_cached(
            "INSERT INTO effect_ledger (effect_id, run_id, tenant, node_id, attempt, keying, state,
                 at, at_ms, invocation_id, provider_key, args)
             SELECT ?1, ?2, ?3, ?4, 0, ?5, ?6, ?7, ?8, NULL, NULL, NULL
             WHERE NOT EXISTS (
                 SELECT 1 FROM effect_ledger WHERE run_id = ?2 AND effect_id = ?1
             )",
            params![
                reference.effect_id,
                reference.run_id,
                reference.tenant,
                reference.node_id,
                reference.keying.as_str(),
                reference.state.as_str(),
                rfc3339_at_ms(now),
                now
            ],
        )
    })?;
    Ok(written == 1)
}

/// Settles the row of a finished attempt.
pub fn close_attempt(
    storage: &Storage,
    row_id: i64,
    state: AttemptState,
) -> Result<(), StorageError> {
    let now = now_unix_ms();
    storage.with_conn(|conn| {
        conn.execute_cached(
            "UPDATE effect_ledger SET state = ?2, at = ?3, at_ms = ?4 WHERE row_id = ?1",
            params![row_id, state.as_str(), rfc3339_at_ms(now), now],
        )
    })?;
    Ok(())
}

/// The `keying` prefix of a row written by an effect seam (RPL-11).
pub const SEAM_KEYING_PREFIX: &str = "seam:";

/// One effect delivered through an effect seam (RPL-11).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeamDelivery<'a> {
    /// The effect id.
    pub effect_id: &'a str,
    /// The run that fired it.
    pub run_id: &'a str,
    /// The run's tenant.
    pub tenant: &'a str,
    /// The node that fired it.
    pub node_id: &'a str,
    /// The manifest row id of the seam (the row's keying is `seam:<id>`).
    pub seam: &'a str,
    /// When the receiver answered, as Unix milliseconds.
    pub at_ms: i64,
}

/// Writes the one `delivered` row (attempt 1) of an effect fired through
/// an effect seam (RPL-11). Content-free like every row.
pub fn record_seam_delivery(
    storage: &Storage,
    delivery: &SeamDelivery<'_>,
) -> Result<(), StorageError> {
    storage.with_conn(|conn| {
        conn.execute_cached(
            "INSERT INTO effect_ledger (effect_id, run_id, tenant, node_id, attempt, keying, state,
                 at, at_ms, invocation_id, provider_key, args)
             VALUES (?1, ?2, ?3, ?4, 1, ?5, ?6, ?7, ?8, NULL, NULL, NULL)",
            params![
                delivery.effect_id,
                delivery.run_id,
                delivery.tenant,
                delivery.node_id,
                format!("{SEAM_KEYING_PREFIX}{}", delivery.seam),
                AttemptState::Delivered.as_str(),
                rfc3339_at_ms(delivery.at_ms),
                delivery.at_ms
            ],
        )
        .map(|_| ())
    })
}

/// Copies every row of `source_run_id` into the ledger of `fork_run_id`, in
/// order, in one statement (RPL-11): a fork inherits its source's effects
/// as they were (same effectId, nodeId, attempt, keying, state and `at`),
/// so they read as inherited effects, not new deliveries. With
/// `restamp_at_ms` (only the `fork-ledger-restamped` mutant passes one)
/// the copies get that time instead. Returns how many rows were copied.
pub fn inherit_rows(
    storage: &Storage,
    source_run_id: &str,
    fork_run_id: &str,
    restamp_at_ms: Option<i64>,
) -> Result<usize, StorageError> {
    let restamp_at = restamp_at_ms.map(rfc3339_at_ms);
    storage.with_conn(|conn| {
        conn.execute_cached(
            "INSERT INTO effect_ledger (effect_id, run_id, tenant, node_id, attempt, keying, state,
                 at, at_ms, invocation_id, provider_key, args)
             SELECT effect_id, ?2, tenant, node_id, attempt, keying, state,
                 COALESCE(?3, at), COALESCE(?4, at_ms), invocation_id, provider_key, args
             FROM effect_ledger WHERE run_id = ?1 ORDER BY row_id",
            params![source_run_id, fork_run_id, restamp_at, restamp_at_ms],
        )
    })
}

/// The run's rows in the order they were written.
pub fn rows_for_run(storage: &Storage, run_id: &str) -> Result<Vec<LedgerRow>, StorageError> {
    type Raw = (
        String,
        String,
        u32,
        String,
        String,
        String,
        Option<String>,
        Option<String>,
        Option<String>,
    );
    let raw: Vec<Raw> = storage.with_conn(|conn| {
        let mut statement = conn.prepare_cached(
            "SELECT effect_id, node_id, attempt, keying, state, at, invocation_id, provider_key, args
             FROM effect_ledger WHERE run_id = ?1 ORDER BY row_id",
        )?;
        statement
            .query_map(params![run_id], |row| {
                Ok((
                    row.get(0)?,
                    row.get(1)?,
                    row.get(2)?,
                    row.get(3)?,
                    row.get(4)?,
                    row.get(5)?,
                    row.get(6)?,
                    row.get(7)?,
                    row.get(8)?,
                ))
            })?
            .collect()
    })?;
    raw.into_iter()
        .map(
            |(
                effect_id,
                node_id,
                attempt,
                keying,
                state,
                at,
                invocation_id,
                provider_key,
                args,
            )| {
                // RPL-11: seam rows carry `seam:<id>`; anything else must be
                // one of the identity keyings.
                if !keying.starts_with(SEAM_KEYING_PREFIX) && Keying::parse(&keying).is_none() {
                    return Err(StorageError::Corrupt {
                        column: "effect_ledger.keying",
                        problem: format!("unknown keying `{keying}`"),
                    });
                }
                let state = AttemptState::parse(&state).ok_or_else(|| StorageError::Corrupt {
                    column: "effect_ledger.state",
                    problem: format!("unknown state `{state}`"),
                })?;
                let args = args
                    .map(|text| {
                        serde_json::from_str(&text).map_err(|e| StorageError::Corrupt {
                            column: "effect_ledger.args",
                            problem: e.to_string(),
                        })
                    })
                    .transpose()?;
                Ok(LedgerRow {
                    effect_id,
                    node_id,
                    attempt,
                    keying,
                    state,
                    at,
                    invocation_id,
                    provider_key,
                    args,
                })
            },
        )
        .collect()
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[MutantInfo {
    mutant: Mutant::LedgerLeaksArgs,
    name: "ledger-leaks-args",
    breaks: "effect ledger rows carry the business arguments in an extra args field",
}];

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn attempt<'a>(n: u32, args: &'a Value) -> NewAttempt<'a> {
        NewAttempt {
            effect_id: "eff_1",
            run_id: "run_1",
            tenant: "tenant-a",
            node_id: "effect",
            attempt: n,
            keying: Keying::BusinessIdentity,
            invocation_id: "inv_1",
            provider_key: Some("eff_1"),
            args,
        }
    }

    #[test]
    fn rows_are_per_attempt_and_content_free() {
        let store = Storage::open_in_memory(crate::surface::app::STORE_SCHEMAS).expect("open");
        let args = json!({"businessKey": "secret-order"});
        let one = open_attempt(&store, &attempt(1, &args), None).expect("open");
        close_attempt(&store, one, AttemptState::Released).expect("close");
        let two = open_attempt(&store, &attempt(2, &args), None).expect("open");
        close_attempt(&store, two, AttemptState::Completed).expect("close");
        let rows = rows_for_run(&store, "run_1").expect("rows");
        assert_eq!(rows.len(), 2);
        assert_eq!(
            (rows[0].attempt, rows[0].state),
            (1, AttemptState::Released)
        );
        assert_eq!(
            (rows[1].attempt, rows[1].state),
            (2, AttemptState::Completed)
        );
        let text = serde_json::to_string(&rows).expect("json");
        assert!(!text.contains("secret-order"), "{text}");
        let row = serde_json::to_value(&rows[0]).expect("json");
        let mut keys: Vec<&str> = row
            .as_object()
            .expect("object")
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "at",
                "attempt",
                "effectId",
                "invocationId",
                "keying",
                "nodeId",
                "providerKey",
                "state"
            ]
        );
        assert!(rows_for_run(&store, "run_2").expect("rows").is_empty());
    }

    #[test]
    fn references_are_attempt_zero_and_written_once() {
        let store = Storage::open_in_memory(crate::surface::app::STORE_SCHEMAS).expect("open");
        let reference = Reference {
            effect_id: "eff_1",
            run_id: "run_2",
            tenant: "tenant-a",
            node_id: "effect",
            keying: Keying::BusinessIdentity,
            state: AttemptState::Completed,
        };
        assert!(record_reference(&store, &reference).expect("write"));
        assert!(!record_reference(&store, &reference).expect("write"));
        let rows = rows_for_run(&store, "run_2").expect("rows");
        assert_eq!(rows.len(), 1);
        assert_eq!(
            (rows[0].attempt, rows[0].state),
            (0, AttemptState::Completed)
        );
        assert_eq!(
            (&rows[0].invocation_id, &rows[0].provider_key),
            (&None, &None)
        );
    }

    #[test]
    fn seam_rows_are_delivered_and_forks_inherit_them_unchanged() {
        let store = Storage::open_in_memory(crate::surface::app::STORE_SCHEMAS).expect("open");
        let delivery = SeamDelivery {
            effect_id: "eff_s",
            run_id: "run_p",
            tenant: "tenant-a",
            node_id: "agent",
            seam: "tool-receiver",
            at_ms: 1_700_000_000_123,
        };
        record_seam_delivery(&store, &delivery).expect("write");
        let parent = rows_for_run(&store, "run_p").expect("rows");
        assert_eq!(parent.len(), 1);
        assert_eq!(parent[0].keying, "seam:tool-receiver");
        assert_eq!(parent[0].state, AttemptState::Delivered);
        assert_eq!(parent[0].attempt, 1);
        assert_eq!(parent[0].at, "2023-11-14T22:13:20.123Z");
        assert_eq!(
            inherit_rows(&store, "run_p", "run_f", None).expect("copy"),
            1
        );
        assert_eq!(rows_for_run(&store, "run_f").expect("rows"), parent);
        inherit_rows(&store, "run_p", "run_g", Some(1_800_000_000_000)).expect("copy");
        let restamped = rows_for_run(&store, "run_g").expect("rows");
        assert_eq!(restamped[0].effect_id, parent[0].effect_id);
        assert_ne!(restamped[0].at, parent[0].at);
        assert_eq!(
            inherit_rows(&store, "run_none", "run_h", None).expect("copy"),
            0
        );
    }

    #[test]
    fn the_leak_mutant_stores_the_args() {
        let store = Storage::open_in_memory(crate::surface::app::STORE_SCHEMAS).expect("open");
        let args = json!({"businessKey": "k"});
        open_attempt(&store, &attempt(1, &args), Some(Mutant::LedgerLeaksArgs)).expect("open");
        let rows = rows_for_run(&store, "run_1").expect("rows");
        assert_eq!(rows[0].args, Some(args));
        assert_eq!(rows[0].state, AttemptState::Claimed);
    }
}
