//! The claim that guards an effect (v2 idempotency §Claim, EFF-4).
//!
//! Before an executor fires an effect it claims the effect id. The claim
//! MUST be an atomic insert-if-absent that at most one executor can win:
//! the motivating bug is a host whose claim was read-then-write (`SELECT`,
//! then `INSERT OR REPLACE`) and charged twice when an orphan sweeper
//! re-dispatched a run whose owner was stalled but alive, on one machine.
//!
//! The claim path has exactly one await point ([`AwaitPoint`]). In the
//! correct claim it comes BEFORE the single atomic statement, so nothing an
//! executor learned before it can go stale; under the `claim-read-then-write`
//! mutant it sits BETWEEN the read and the write, which is the bug.
//!
//! A claim is keyed by (effect id, claim scope). The workflow and
//! idempotency-seam effects claim in the host-wide scope `""`, so every
//! entry point of one business operation meets one claim (EFF-4). An
//! effect-seam fire claims in the scope of the run that performs it
//! ([`crate::surface::seams::effect_fire`]): a branch fork is its own scope, so its
//! parent's claim never suppresses it (EFF-10: Layer-2 dedup never reaches
//! across a fork; suppression in a fork is replay's job).

use crate::store::storage::Cached;
use std::time::Duration;

use rusqlite::{OptionalExtension, params};
use tokio::sync::oneshot;

use crate::base::clock::now_unix_ms;
use crate::base::mutant::{Mutant, MutantInfo};
use crate::domain::effects::identity::Keying;
use crate::store::storage::{Storage, StorageError};

/// The claims table: one row per (effect id, claim scope), whoever
/// performs it. The primary key is what makes the claim atomic.
pub const SCHEMA: &str = "
CREATE TABLE effect_claims (
    effect_id TEXT NOT NULL,
    claim_scope TEXT NOT NULL DEFAULT '',
    tenant TEXT NOT NULL,
    operation TEXT NOT NULL,
    keying TEXT NOT NULL,
    run_id TEXT NOT NULL,
    node_id TEXT NOT NULL,
    invocation_id TEXT NOT NULL,
    executor TEXT NOT NULL,
    state TEXT NOT NULL,
    claimed_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL,
    PRIMARY KEY (effect_id, claim_scope)
);
CREATE INDEX effect_claims_updated ON effect_claims(updated_at_ms);
";

/// Where a claimed effect stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClaimState {
    /// An executor holds the claim and is (or was) invoking the provider.
    Claimed,
    /// The provider accepted the effect.
    Completed,
    /// Every attempt failed or the provider refused: the outcome escaped
    /// the host, so no entry point fires it again.
    Escaped,
}

impl ClaimState {
    /// The stored string.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Claimed => "claimed",
            Self::Completed => "completed",
            Self::Escaped => "escaped",
        }
    }

    /// Parses a stored string.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "claimed" => Some(Self::Claimed),
            "completed" => Some(Self::Completed),
            "escaped" => Some(Self::Escaped),
            _ => None,
        }
    }
}

/// The host-wide claim scope: every entry point of one business
/// operation races for the same claim (EFF-4).
pub const HOST_SCOPE: &str = "";

/// What an executor claims.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClaimRequest<'a> {
    /// The effect id (with `claim_scope`, the key the executors race for).
    pub effect_id: &'a str,
    /// Where the claim holds: [`HOST_SCOPE`], or the id of the run that
    /// performs an effect-seam fire (EFF-10: a fork is its own scope).
    pub claim_scope: &'a str,
    /// The tenant of the operation.
    pub tenant: &'a str,
    /// The operation.
    pub operation: &'a str,
    /// How the id was derived.
    pub keying: Keying,
    /// The run of the claiming executor.
    pub run_id: &'a str,
    /// The node of the claiming executor.
    pub node_id: &'a str,
    /// The logical invocation.
    pub invocation_id: &'a str,
    /// The claiming executor (`exe_…`).
    pub executor: &'a str,
}

/// How a claim ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimOutcome {
    /// This executor holds the claim and alone may fire the effect.
    Won,
    /// Another executor holds or held it; this one must not fire.
    Lost {
        /// Where the effect stands (as read right after losing).
        holder_state: ClaimState,
        /// The run whose executor holds the claim, when it could be read.
        holder_run: Option<String>,
    },
}

/// A deliberate pause at the claim path's one await point.
#[derive(Debug)]
struct Stall {
    duration: Duration,
    reached: Option<oneshot::Sender<()>>,
}

/// The claim path's single await point. By default it yields to the
/// scheduler once (a real host awaits its store there); the redispatch
/// seam makes the owner executor stall at it instead, and says when it got
/// there so the sweeper can re-dispatch at exactly that moment.
#[derive(Debug, Default)]
pub struct AwaitPoint {
    stall: Option<Stall>,
}

impl AwaitPoint {
    /// Yield once to the scheduler.
    pub fn yield_once() -> Self {
        Self::default()
    }

    /// Signal `reached`, then sleep for `duration` (bounded by the caller).
    pub fn stall(duration: Duration, reached: oneshot::Sender<()>) -> Self {
        Self {
            stall: Some(Stall {
                duration,
                reached: Some(reached),
            }),
        }
    }

    /// Passes the await point.
    async fn pass(self) {
        match self.stall {
            None => tokio::task::yield_now().await,
            Some(stall) => {
                if let Some(reached) = stall.reached {
                    // Nobody listening only means nobody re-dispatches.
                    let _ = reached.send(());
                }
                tokio::time::sleep(stall.duration).await;
            }
        }
    }
}

/// Claims `request.effect_id` for `request.executor`.
pub async fn claim(
    storage: &Storage,
    request: &ClaimRequest<'_>,
    await_point: AwaitPoint,
    mutant: Option<Mutant>,
) -> Result<ClaimOutcome, StorageError> {
    if mutant == Some(Mutant::ClaimReadThenWrite) {
        return claim_read_then_write(storage, request, await_point).await;
    }
    // The await point comes first: whatever happens while this executor is
    // suspended, the statement below decides afresh.
    await_point.pass().await;
    // EFF-4, v2 idempotency §Claim: the claim is ONE statement, an
    // insert-if-absent on the primary key. Its atomicity comes from SQLite
    // executing that single statement atomically against the PRIMARY KEY
    // (`ON CONFLICT DO NOTHING`), and the row count it returns says who won:
    // 1 for exactly one executor, 0 for every other. No lock serializes the
    // executors before the claim: the connection mutex is held only for
    // this one statement (never across an await), so executors genuinely
    // race up to here and SQL alone picks the winner.
    let inserted = write_claim(storage, request, ClaimWrite::InsertIfAbsent)?;
    if inserted == 1 {
        Ok(ClaimOutcome::Won)
    } else {
        lost(storage, request)
    }
}

/// The seed's bug (`claim-read-then-write`): read, await, then overwrite.
/// Two executors that both read "absent" before either writes both win.
async fn claim_read_then_write(
    storage: &Storage,
    request: &ClaimRequest<'_>,
    await_point: AwaitPoint,
) -> Result<ClaimOutcome, StorageError> {
    if let Some(holder) = holder_in(storage, request.effect_id, request.claim_scope)? {
        return Ok(ClaimOutcome::Lost {
            holder_state: holder.state,
            holder_run: Some(holder.run_id),
        });
    }
    // Bug: the read above is stale by the time the write below runs.
    await_point.pass().await;
    write_claim(storage, request, ClaimWrite::Overwrite)?;
    Ok(ClaimOutcome::Won)
}

/// How the claim row is written.
#[derive(Clone, Copy)]
enum ClaimWrite {
    /// The atomic insert-if-absent: exactly one executor writes the row.
    InsertIfAbsent,
    /// The mutant's overwrite, which always "wins" and never reports a conflict.
    Overwrite,
}

/// Writes the claim row; returns the number of rows written.
fn write_claim(
    storage: &Storage,
    request: &ClaimRequest<'_>,
    how: ClaimWrite,
) -> Result<usize, StorageError> {
    let (verb, on_conflict) = match how {
        ClaimWrite::InsertIfAbsent => ("INSERT", "ON CONFLICT(effect_id, claim_scope) DO NOTHING"),
        ClaimWrite::Overwrite => ("INSERT OR REPLACE", ""),
    };
    let sql = format!(
        "{verb} INTO effect_claims (effect_id, tenant, operation, keying, run_id, node_id,
             invocation_id, executor, state, claimed_at_ms, updated_at_ms, claim_scope)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10, ?11) {on_conflict}"
    );
    let now = now_unix_ms();
    storage.with_conn(|conn| {
        conn.execute_cached(
            &sql,
            params![
                request.effect_id,
                request.tenant,
                request.operation,
                request.keying.as_str(),
                request.run_id,
                request.node_id,
                request.invocation_id,
                request.executor,
                ClaimState::Claimed.as_str(),
                now,
                request.claim_scope
            ],
        )
    })
}

/// The loser's view of the effect.
fn lost(storage: &Storage, request: &ClaimRequest<'_>) -> Result<ClaimOutcome, StorageError> {
    // A row swept between the insert and this read is reported as still
    // claimed: a loser never fires, whatever it reads afterwards.
    Ok(
        match holder_in(storage, request.effect_id, request.claim_scope)? {
            Some(holder) => ClaimOutcome::Lost {
                holder_state: holder.state,
                holder_run: Some(holder.run_id),
            },
            None => ClaimOutcome::Lost {
                holder_state: ClaimState::Claimed,
                holder_run: None,
            },
        },
    )
}

/// Who holds a claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    /// Where the effect stands.
    pub state: ClaimState,
    /// The run of the executor that claimed it.
    pub run_id: String,
}

/// The holder of the host-wide claim on `effect_id`, if claimed.
pub fn holder_of(storage: &Storage, effect_id: &str) -> Result<Option<Holder>, StorageError> {
    holder_in(storage, effect_id, HOST_SCOPE)
}

/// The holder of the claim on `effect_id` in `claim_scope`, if claimed.
pub fn holder_in(
    storage: &Storage,
    effect_id: &str,
    claim_scope: &str,
) -> Result<Option<Holder>, StorageError> {
    let row: Option<(String, String)> = storage.with_conn(|conn| {
        conn.query_row_cached(
            "SELECT state, run_id FROM effect_claims WHERE effect_id = ?1 AND claim_scope = ?2",
            params![effect_id, claim_scope],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .optional()
    })?;
    row.map(|(text, run_id)| {
        let state = ClaimState::parse(&text).ok_or_else(|| StorageError::Corrupt {
            column: "effect_claims.state",
            problem: format!("unknown state `{text}`"),
        })?;
        Ok(Holder { state, run_id })
    })
    .transpose()
}

/// The claim state of `effect_id`, if claimed.
pub fn state_of(storage: &Storage, effect_id: &str) -> Result<Option<ClaimState>, StorageError> {
    Ok(holder_of(storage, effect_id)?.map(|holder| holder.state))
}

/// Settles the claim `executor` holds on `effect_id`. Only the holder can
/// settle it (a row taken over by another executor is left alone); an
/// executor id is fresh per executor, so it also singles out the scope.
pub fn settle(
    storage: &Storage,
    effect_id: &str,
    executor: &str,
    state: ClaimState,
) -> Result<(), StorageError> {
    storage.with_conn(|conn| {
        conn.execute_cached(
            "UPDATE effect_claims SET state = ?3, updated_at_ms = ?4
             WHERE effect_id = ?1 AND executor = ?2",
            params![effect_id, executor, state.as_str(), now_unix_ms()],
        )
    })?;
    Ok(())
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[MutantInfo {
    mutant: Mutant::ClaimReadThenWrite,
    name: "claim-read-then-write",
    breaks: "the effect claim is a SELECT, an await point, then INSERT OR REPLACE (read-then-write: two executors can both win)",
}];

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use tokio::sync::Barrier;

    fn request<'a>(effect_id: &'a str, executor: &'a str) -> ClaimRequest<'a> {
        ClaimRequest {
            effect_id,
            claim_scope: HOST_SCOPE,
            tenant: "tenant-a",
            operation: "ledger.charge",
            keying: Keying::BusinessIdentity,
            run_id: "run_1",
            node_id: "effect",
            invocation_id: "inv_1",
            executor,
        }
    }

    /// Races `tasks` executors on one effect id (all released by a barrier
    /// right before the claim) and returns how many won.
    async fn race(
        store: Arc<Storage>,
        effect_id: &str,
        tasks: usize,
        mutant: Option<Mutant>,
    ) -> usize {
        let barrier = Arc::new(Barrier::new(tasks));
        let mut set = tokio::task::JoinSet::new();
        for n in 0..tasks {
            let (store, barrier, effect_id) =
                (store.clone(), barrier.clone(), effect_id.to_owned());
            set.spawn(async move {
                let executor = format!("exe_{n}");
                barrier.wait().await;
                claim(
                    &store,
                    &request(&effect_id, &executor),
                    AwaitPoint::yield_once(),
                    mutant,
                )
                .await
            });
        }
        let mut won = 0;
        while let Some(joined) = set.join_next().await {
            if joined.expect("task ran").expect("claim ran") == ClaimOutcome::Won {
                won += 1;
            }
        }
        won
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn exactly_one_of_64_concurrent_claimants_wins_50_times_over() {
        let store =
            Arc::new(Storage::open_in_memory(crate::surface::app::STORE_SCHEMAS).expect("open"));
        let run = async {
            for round in 0..50 {
                let won = race(store.clone(), &format!("eff_{round}"), 64, None).await;
                assert_eq!(won, 1, "round {round}");
            }
        };
        tokio::time::timeout(Duration::from_secs(60), run)
            .await
            .expect("bounded");
    }

    #[tokio::test]
    async fn read_then_write_lets_racers_both_win() {
        let store =
            Arc::new(Storage::open_in_memory(crate::surface::app::STORE_SCHEMAS).expect("open"));
        let won = race(store, "eff_x", 8, Some(Mutant::ClaimReadThenWrite)).await;
        assert!(won > 1, "{won}");
    }

    #[tokio::test]
    async fn losers_see_the_holder_state_and_only_the_holder_settles() {
        let store = Storage::open_in_memory(crate::surface::app::STORE_SCHEMAS).expect("open");
        let first = claim(
            &store,
            &request("eff_a", "exe_1"),
            AwaitPoint::default(),
            None,
        )
        .await
        .expect("claim");
        assert_eq!(first, ClaimOutcome::Won);
        settle(&store, "eff_a", "exe_2", ClaimState::Escaped).expect("noop");
        assert_eq!(
            state_of(&store, "eff_a").expect("read"),
            Some(ClaimState::Claimed)
        );
        settle(&store, "eff_a", "exe_1", ClaimState::Completed).expect("settle");
        let second = claim(
            &store,
            &request("eff_a", "exe_2"),
            AwaitPoint::default(),
            None,
        )
        .await
        .expect("claim");
        assert_eq!(
            second,
            ClaimOutcome::Lost {
                holder_state: ClaimState::Completed,
                holder_run: Some("run_1".to_owned()),
            }
        );
    }

    #[tokio::test]
    async fn a_claim_holds_only_in_its_scope() {
        // EFF-10: one effect id, two run scopes (a parent and its branch):
        // each wins its own; a second claim in either scope loses.
        let store = Storage::open_in_memory(crate::surface::app::STORE_SCHEMAS).expect("open");
        let scoped = |scope, executor| ClaimRequest {
            claim_scope: scope,
            ..request("eff_s", executor)
        };
        for (scope, executor) in [("run_parent", "exe_1"), ("run_branch", "exe_2")] {
            let won = claim(
                &store,
                &scoped(scope, executor),
                AwaitPoint::default(),
                None,
            )
            .await
            .expect("claim");
            assert_eq!(won, ClaimOutcome::Won, "{scope}");
        }
        let again = claim(
            &store,
            &scoped("run_branch", "exe_3"),
            AwaitPoint::default(),
            None,
        )
        .await
        .expect("claim");
        assert!(matches!(again, ClaimOutcome::Lost { .. }), "{again:?}");
        // The host-wide scope is separate from both.
        assert_eq!(holder_of(&store, "eff_s").expect("read"), None);
        assert_eq!(
            holder_in(&store, "eff_s", "run_parent").expect("read"),
            Some(Holder {
                state: ClaimState::Claimed,
                run_id: "run_1".to_owned()
            })
        );
    }

    #[tokio::test]
    async fn stall_signals_then_sleeps() {
        let (tx, rx) = oneshot::channel();
        let started = tokio::time::Instant::now();
        let pass = tokio::spawn(AwaitPoint::stall(Duration::from_millis(30), tx).pass());
        tokio::time::timeout(Duration::from_secs(5), rx)
            .await
            .expect("bounded")
            .expect("signalled");
        tokio::time::timeout(Duration::from_secs(5), pass)
            .await
            .expect("bounded")
            .expect("joined");
        assert!(started.elapsed() >= Duration::from_millis(30));
    }
}
