//! Retention: effect records are kept ≥ 14 days, Layer-1 records ≥ 24 h.
//!
//! A record is swept only when it is strictly OLDER than its retention: at
//! exactly 14 days an effect record is still kept, one millisecond later it
//! may go. Younger records are never touched. The sweep can run "as if now
//! were later" (the sweep seam adds an offset); a background sweeper runs
//! every 10 minutes with no offset.

use crate::store::storage::Cached;
use std::time::Duration;

use rusqlite::params;
use tokio::task::JoinHandle;

use crate::base::clock::{cutoff_ms, now_unix_ms};
use crate::base::mutant::{Mutant, MutantInfo};
use crate::domain::Domain;
use crate::domain::layer1;
use crate::store::storage::{Storage, StorageError};

/// Effect records (claims and ledger rows) are kept at least this long:
/// 14 days (v2 idempotency §Retention, Layer 2).
pub const EFFECT_RETENTION_SECS: u64 = 1_209_600;

/// What the `sweeper-drops-young` mutant keeps effect records for: 1 day.
pub const SHORT_EFFECT_RETENTION_SECS: u64 = 86_400;

/// How often the background sweeper runs.
pub const SWEEP_EVERY: Duration = Duration::from_secs(600);

/// The effect retention this host applies.
pub fn effect_retention_secs(mutant: Option<Mutant>) -> u64 {
    if mutant == Some(Mutant::SweeperDropsYoung) {
        // Bug: records younger than the advertised 14 days are deleted, so a
        // late retry of a charged effect would charge again.
        SHORT_EFFECT_RETENTION_SECS
    } else {
        EFFECT_RETENTION_SECS
    }
}

/// What a sweep of one run's effect records did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunSweep {
    /// Ledger rows of the run deleted.
    pub swept: u64,
    /// Ledger rows of the run left.
    pub remaining: u64,
}

/// Sweeps the effect records of `run_id` (its ledger rows and the claims it
/// made) as of `now_ms`, in one transaction.
pub fn sweep_run(
    storage: &Storage,
    run_id: &str,
    now_ms: i64,
    mutant: Option<Mutant>,
) -> Result<RunSweep, StorageError> {
    let cutoff = cutoff_ms(now_ms, effect_retention_secs(mutant));
    storage.with_conn(|conn| {
        let tx = conn.transaction()?;
        let swept = tx.execute_cached(
            "DELETE FROM effect_ledger WHERE run_id = ?1 AND at_ms < ?2",
            params![run_id, cutoff],
        )?;
        tx.execute_cached(
            "DELETE FROM effect_claims WHERE run_id = ?1 AND updated_at_ms < ?2",
            params![run_id, cutoff],
        )?;
        let remaining: i64 = tx.query_row_cached(
            "SELECT COUNT(*) FROM effect_ledger WHERE run_id = ?1",
            params![run_id],
            |row| row.get(0),
        )?;
        tx.commit()?;
        Ok(RunSweep {
            swept: u64::try_from(swept).unwrap_or(u64::MAX),
            remaining: u64::try_from(remaining).unwrap_or(0),
        })
    })
}

/// What a full sweep deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SweepTotals {
    /// Ledger rows.
    pub ledger_rows: usize,
    /// Claims.
    pub claims: usize,
    /// Layer-1 records.
    pub layer1_records: usize,
}

/// Sweeps every expired record as of `now_ms`.
pub fn sweep_all(
    storage: &Storage,
    now_ms: i64,
    mutant: Option<Mutant>,
) -> Result<SweepTotals, StorageError> {
    let cutoff = cutoff_ms(now_ms, effect_retention_secs(mutant));
    let (ledger_rows, claims) = storage.with_conn(|conn| {
        let tx = conn.transaction()?;
        let ledger_rows = tx.execute_cached(
            "DELETE FROM effect_ledger WHERE at_ms < ?1",
            params![cutoff],
        )?;
        let claims = tx.execute_cached(
            "DELETE FROM effect_claims WHERE updated_at_ms < ?1",
            params![cutoff],
        )?;
        tx.commit()?;
        Ok((ledger_rows, claims))
    })?;
    let layer1_records = layer1::sweep(storage, now_ms)?;
    Ok(SweepTotals {
        ledger_rows,
        claims,
        layer1_records,
    })
}

/// Starts the background sweeper: every [`SWEEP_EVERY`], with no offset,
/// until the host shuts down.
pub fn spawn_background(state: Domain) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(SWEEP_EVERY);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // The first tick is immediate; a fresh host has nothing to sweep.
        ticks.tick().await;
        loop {
            tokio::select! {
                () = state.shutdown_requested() => return,
                _ = ticks.tick() => {
                    // A failed sweep is retried at the next tick; retention
                    // is a floor, so sweeping late is always allowed.
                    let _ = sweep_all(state.storage(), now_unix_ms(), state.mutant());
                }
            }
        }
    })
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[MutantInfo {
    mutant: Mutant::SweeperDropsYoung,
    name: "sweeper-drops-young",
    breaks: "the retention sweeper deletes effect records older than 1 day instead of 14 days",
}];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::clock::secs_to_ms;
    use crate::domain::effects::identity::Keying;
    use crate::domain::effects::ledger::{NewAttempt, open_attempt};
    use serde_json::json;

    const DAY_MS: i64 = 86_400_000;

    /// One ledger row for `run_id`; returns its stored `at_ms`.
    fn row(store: &Storage, run_id: &str) -> i64 {
        let args = json!({});
        let id = open_attempt(
            store,
            &NewAttempt {
                effect_id: "eff_1",
                run_id,
                tenant: "tenant-a",
                node_id: "effect",
                attempt: 1,
                keying: Keying::BusinessIdentity,
                invocation_id: "inv_1",
                provider_key: None,
                args: &args,
            },
            None,
        )
        .expect("row");
        store
            .with_conn(|conn| {
                conn.query_row(
                    "SELECT at_ms FROM effect_ledger WHERE row_id = ?1",
                    params![id],
                    |r| r.get(0),
                )
            })
            .expect("at_ms")
    }

    #[test]
    fn the_boundary_is_exactly_14_days() {
        let store = Storage::open_in_memory(crate::surface::app::STORE_SCHEMAS).expect("open");
        let at = row(&store, "run_1");
        let fourteen_days = 14 * DAY_MS;
        assert_eq!(secs_to_ms(EFFECT_RETENTION_SECS), fourteen_days);
        // Exactly 14 days old: kept.
        let kept = sweep_run(&store, "run_1", at + fourteen_days, None).expect("sweep");
        assert_eq!(
            kept,
            RunSweep {
                swept: 0,
                remaining: 1
            }
        );
        // One millisecond older: swept.
        let gone = sweep_run(&store, "run_1", at + fourteen_days + 1, None).expect("sweep");
        assert_eq!(
            gone,
            RunSweep {
                swept: 1,
                remaining: 0
            }
        );
    }

    #[test]
    fn young_records_and_other_runs_are_never_touched() {
        let store = Storage::open_in_memory(crate::surface::app::STORE_SCHEMAS).expect("open");
        let at = row(&store, "run_1");
        row(&store, "run_2");
        let a_day_later = sweep_run(&store, "run_1", at + 2 * DAY_MS, None).expect("sweep");
        assert_eq!(a_day_later.swept, 0);
        let much_later = sweep_run(&store, "run_1", at + 30 * DAY_MS, None).expect("sweep");
        assert_eq!(much_later.swept, 1);
        let other = sweep_run(&store, "run_2", at, None).expect("sweep");
        assert_eq!(other.remaining, 1);
    }

    #[test]
    fn the_mutant_sweeps_after_one_day() {
        let store = Storage::open_in_memory(crate::surface::app::STORE_SCHEMAS).expect("open");
        let at = row(&store, "run_1");
        let swept = sweep_run(
            &store,
            "run_1",
            at + 2 * DAY_MS,
            Some(Mutant::SweeperDropsYoung),
        )
        .expect("sweep");
        assert_eq!(swept.swept, 1);
    }

    #[test]
    fn a_full_sweep_covers_every_table() {
        let store = Storage::open_in_memory(crate::surface::app::STORE_SCHEMAS).expect("open");
        let at = row(&store, "run_1");
        let totals = sweep_all(&store, at + 15 * DAY_MS, None).expect("sweep");
        assert_eq!(totals.ledger_rows, 1);
        assert_eq!(
            sweep_all(&store, at, None).expect("sweep"),
            SweepTotals::default()
        );
    }
}
