//! The invocation log of turn runs (TTC §D): each run's plan and, per node
//! attempt, every model response and every tool emission's record.
//!
//! - `turn_runs` keeps the run's plan (the raw, already validated seam
//!   request, re-parsed on recovery), its current node attempt, and for a
//!   fork the source run and mode.
//! - `turn_records` keeps one row per `(run, attempt, kind, ordinal)`:
//!   `model` rows are keyed by round, `tool` rows by the per-node emission
//!   ordinal (1, 2, 3 … in admission order, across rounds). A tool row is
//!   an `intent` (written with `agent.tool-called`, before dispatch), then
//!   `recorded` (written with `agent.tool-returned`, in the same
//!   transaction, before the next model round: TURN-D3), or `digest` when
//!   the record is over the size limit (TURN-D10).
//!
//! Records are keyed by attempt, so a new attempt never reads an earlier
//! attempt's records (TURN-D9).
//!
//! - `node_records` keeps the outcome of each pack node dispatch of a
//!   packs-test run (`crate::surface::seams::packs`), keyed `(run, nodeId, n)` where
//!   `n` counts that node's `node.started` in the run: what a replay fork
//!   serves a side-effecting node instead of dispatching it (RPL-2).

use crate::store::storage::Cached;
use rusqlite::{OptionalExtension, Transaction, params};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::base::args_hash::sha256_hex;
use crate::base::mutant::{Mutant, MutantInfo};
use crate::store::storage::{Storage, StorageError};
use crate::turn::feedback::CallToolResult;
use crate::turn::provider::ModelResponse;

/// The run a replay fork serves its tool results from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplaySource {
    /// The source run.
    pub run_id: String,
    /// The source's final node attempt (its records are the ones served).
    pub attempt: u32,
}

/// The tables of the invocation log.
pub const SCHEMA: &str = "
CREATE TABLE turn_runs (
    run_id TEXT PRIMARY KEY,
    request TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    source_run_id TEXT NULL,
    mode TEXT NOT NULL,
    from_seq INTEGER NULL
);
CREATE TABLE turn_records (
    run_id TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    kind TEXT NOT NULL,
    ordinal INTEGER NOT NULL,
    state TEXT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (run_id, attempt, kind, ordinal)
);
CREATE TABLE node_records (
    run_id TEXT NOT NULL,
    node_id TEXT NOT NULL,
    n INTEGER NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (run_id, node_id, n)
);
";

/// How a turn run executes its plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunMode {
    /// Tools are dispatched.
    Live,
    /// A `mode: "replay"` fork: tools are served from the source's records
    /// and never dispatched (TURN-D5).
    Replay,
    /// A `mode: "branch"` fork of an effect-seam fire run: the source's
    /// events up to `fromSeq` are inherited, the rest runs live (EFF-10).
    Branch,
}

impl RunMode {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Live => "live",
            Self::Replay => "replay",
            Self::Branch => "branch",
        }
    }

    fn parse(value: &str) -> Option<Self> {
        match value {
            "live" => Some(Self::Live),
            "replay" => Some(Self::Replay),
            "branch" => Some(Self::Branch),
            _ => None,
        }
    }
}

/// A turn run's stored plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredPlan {
    /// The raw seam request body (valid: it passed `TurnRunRequest::parse`).
    pub request: String,
    /// The run's current node attempt (1-based).
    pub attempt: u32,
    /// The source run of a fork.
    pub source_run_id: Option<String>,
    /// Live or replay.
    pub mode: RunMode,
    /// A fork's `fromSeq` as echoed in its 201 (`None` for a live run):
    /// its events up to here re-state the source's, so webhooks never
    /// deliver them again (RPL-8).
    pub from_seq: Option<i64>,
}

/// The `intent` of a tool emission: written with `agent.tool-called`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Intent {
    /// The tool the model named.
    pub tool_name: String,
    /// The call id fed back to the model.
    pub call_id: String,
    /// The `agent.tool-called` event's id (a recovered return is caused by it).
    pub called_event_id: String,
}

/// A `recorded` tool emission: everything needed to serve it again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Recorded {
    /// The tool the model named.
    pub tool_name: String,
    /// The call id fed back to the model.
    pub call_id: String,
    /// The `agent.tool-called` event's id.
    pub called_event_id: String,
    /// The TTC outcome (`executed`, `refused`, …).
    pub outcome: String,
    /// The `agent.tool-returned` fields `status`, `durationMs`, `error`,
    /// verbatim (served byte for byte on replay: HOOKS-AUDIT-4).
    pub returned: Value,
    /// The result fed back to the model.
    pub result: CallToolResult,
    /// An MCP call that went through MRTR: the final retry's
    /// `{inputResponses, requestState?}`, so a replay fork has the human's
    /// answers without asking again (RPL-10). Interim `input_required`
    /// results are never recorded (MCP-9).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mrtr: Option<Value>,
}

/// What the log holds for one tool emission.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolRecord {
    /// Called, not (yet) recorded: the call in doubt after a crash.
    Intent(Intent),
    /// Recorded whole.
    Recorded(Recorded),
    /// Over the size limit: `{digest, truncated: true, bytes}`; a miss on
    /// replay and recovery (TURN-D10).
    Digest(Value),
}

/// The recorded outcome of one pack node dispatch (RPL-2): the receiver's
/// HTTP status and its JSON body (`null` when the body was not JSON). It is
/// exactly the `outputs` of the node's `node.completed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeOutcome {
    /// The receiver's HTTP status.
    pub status: u16,
    /// The receiver's JSON body, or `null`.
    pub body: Value,
}

/// A record ready to write: its state and body text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordRow {
    /// `recorded` or `digest`.
    pub state: &'static str,
    /// The body text.
    pub body: String,
}

impl RecordRow {
    /// The row for `record`: whole when its body is at most `limit` bytes,
    /// else a digest of the full body with a truncation marker (TURN-D10).
    pub fn of(record: &Recorded, limit: usize) -> Result<Self, StorageError> {
        let body = serde_json::to_string(record).map_err(|err| StorageError::Corrupt {
            column: "turn_records.body",
            problem: err.to_string(),
        })?;
        if body.len() <= limit {
            return Ok(Self {
                state: "recorded",
                body,
            });
        }
        let digest = json!({
            "digest": format!("sha256:{}", sha256_hex(body.as_bytes())),
            "truncated": true,
            "bytes": body.len(),
        });
        Ok(Self {
            state: "digest",
            body: digest.to_string(),
        })
    }
}

/// The tool identity sent as `Idempotency-Key`: lowercase hex SHA-256 of
/// `{run_id}/agent/{ordinal}` (the logical invocation plus the per-node
/// ordinal, TURN-D2). It does not include the attempt, so a same-attempt
/// re-run and a later attempt carry the same key.
pub fn tool_key(run_id: &str, ordinal: u32) -> String {
    sha256_hex(format!("{run_id}/agent/{ordinal}").as_bytes())
}

/// [`tool_key`], or under `tool-key-per-run` the run's key with no ordinal.
pub fn tool_key_for(run_id: &str, ordinal: u32, mutant: Option<Mutant>) -> String {
    if mutant == Some(Mutant::ToolKeyPerRun) {
        // Bug: every call of the run gets one identity (TURN-D2).
        return sha256_hex(format!("{run_id}/agent").as_bytes());
    }
    tool_key(run_id, ordinal)
}

/// Saves a new turn run's plan at attempt 1.
pub fn save_plan(
    storage: &Storage,
    run_id: &str,
    request: &str,
    source_run_id: Option<&str>,
    mode: RunMode,
) -> Result<(), StorageError> {
    save_fork_plan(storage, run_id, request, source_run_id, mode, None)
}

/// Saves a new turn run's plan at attempt 1 with a fork's `fromSeq`. It is
/// written before the fork has any event, so the webhook fan-out reads the
/// fork's replay-ness from the run for its very first event (RPL-8).
pub fn save_fork_plan(
    storage: &Storage,
    run_id: &str,
    request: &str,
    source_run_id: Option<&str>,
    mode: RunMode,
    from_seq: Option<i64>,
) -> Result<(), StorageError> {
    storage.with_conn(|conn| {
        conn.execute_cached(
            "INSERT INTO turn_runs (run_id, request, attempt, source_run_id, mode, from_seq)
             VALUES (?1, ?2, 1, ?3, ?4, ?5)",
            params![run_id, request, source_run_id, mode.as_str(), from_seq],
        )
        .map(|_| ())
    })
}

/// The stored plan of a turn run, if the run is one.
pub fn plan(storage: &Storage, run_id: &str) -> Result<Option<StoredPlan>, StorageError> {
    let row = storage.with_conn(|conn| {
        conn.query_row_cached(
            "SELECT request, attempt, source_run_id, mode, from_seq FROM turn_runs WHERE run_id = ?1",
            params![run_id],
            |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, i64>(1)?,
                    row.get::<_, Option<String>>(2)?,
                    row.get::<_, String>(3)?,
                    row.get::<_, Option<i64>>(4)?,
                ))
            },
        )
        .optional()
    })?;
    row.map(|(request, attempt, source_run_id, mode, from_seq)| {
        Ok(StoredPlan {
            request,
            attempt: u32::try_from(attempt).map_err(|_| StorageError::Corrupt {
                column: "turn_runs.attempt",
                problem: format!("attempt {attempt} out of range"),
            })?,
            source_run_id,
            mode: RunMode::parse(&mode).ok_or_else(|| StorageError::Corrupt {
                column: "turn_runs.mode",
                problem: format!("unknown mode `{mode}`"),
            })?,
            from_seq,
        })
    })
    .transpose()
}

/// Sets the run's current attempt inside `tx` (with the `node.retrying`
/// event that ends the previous one).
pub fn set_attempt(tx: &Transaction<'_>, run_id: &str, attempt: u32) -> Result<(), StorageError> {
    tx.execute_cached(
        "UPDATE turn_runs SET attempt = ?2 WHERE run_id = ?1",
        params![run_id, attempt],
    )?;
    Ok(())
}

/// Records the model response of `round` (before its calls are admitted).
pub fn put_model(
    storage: &Storage,
    run_id: &str,
    attempt: u32,
    round: u32,
    response: &ModelResponse,
) -> Result<(), StorageError> {
    let body = serde_json::to_string(response).map_err(|err| StorageError::Corrupt {
        column: "turn_records.body",
        problem: err.to_string(),
    })?;
    storage.with_conn(|conn| {
        conn.execute_cached(
            "INSERT OR REPLACE INTO turn_records (run_id, attempt, kind, ordinal, state, body)
             VALUES (?1, ?2, 'model', ?3, 'recorded', ?4)",
            params![run_id, attempt, round, body],
        )
        .map(|_| ())
    })
}

/// The recorded model response of `round`, if any. A `raw` row (an
/// effect-seam fire's provider answer, RPL-11) is not a model response and
/// reads as none.
pub fn model(
    storage: &Storage,
    run_id: &str,
    attempt: u32,
    round: u32,
) -> Result<Option<ModelResponse>, StorageError> {
    let body = row(storage, run_id, attempt, "model", round)?;
    body.filter(|(state, _)| state != RAW_STATE)
        .map(|(_, body)| {
            serde_json::from_str(&body).map_err(|err| StorageError::Corrupt {
                column: "turn_records.body",
                problem: err.to_string(),
            })
        })
        .transpose()
}

/// The `state` of a model row that holds a provider's raw answer.
const RAW_STATE: &str = "raw";

/// Records the RAW answer of a provider to `round`, as it came: the
/// round's record of an effect-seam fire through a `provider` row, whose
/// receiver may answer any 2xx body (RPL-11). A replay fork serves it from
/// here instead of asking again.
pub fn put_raw_model(
    storage: &Storage,
    run_id: &str,
    attempt: u32,
    round: u32,
    answer: &str,
) -> Result<(), StorageError> {
    storage.with_conn(|conn| {
        conn.execute_cached(
            "INSERT OR REPLACE INTO turn_records (run_id, attempt, kind, ordinal, state, body)
             VALUES (?1, ?2, 'model', ?3, ?4, ?5)",
            params![run_id, attempt, round, RAW_STATE, answer],
        )
        .map(|_| ())
    })
}

/// The raw provider answer recorded for `round` by [`put_raw_model`], if any.
pub fn raw_model(
    storage: &Storage,
    run_id: &str,
    attempt: u32,
    round: u32,
) -> Result<Option<String>, StorageError> {
    Ok(row(storage, run_id, attempt, "model", round)?
        .filter(|(state, _)| state == RAW_STATE)
        .map(|(_, body)| body))
}

/// Writes the intent of tool emission `ordinal` inside `tx` (with its
/// `agent.tool-called` event).
pub fn put_intent(
    tx: &Transaction<'_>,
    run_id: &str,
    attempt: u32,
    ordinal: u32,
    intent: &Intent,
) -> Result<(), StorageError> {
    let body = serde_json::to_string(intent).map_err(|err| StorageError::Corrupt {
        column: "turn_records.body",
        problem: err.to_string(),
    })?;
    tx.execute_cached(
        "INSERT OR REPLACE INTO turn_records (run_id, attempt, kind, ordinal, state, body)
         VALUES (?1, ?2, 'tool', ?3, 'intent', ?4)",
        params![run_id, attempt, ordinal, body],
    )?;
    Ok(())
}

/// Writes the record of tool emission `ordinal` inside `tx` (with its
/// `agent.tool-returned` event, TURN-D3).
pub fn put_tool(
    tx: &Transaction<'_>,
    run_id: &str,
    attempt: u32,
    ordinal: u32,
    row: &RecordRow,
) -> Result<(), StorageError> {
    tx.execute_cached(
        "INSERT OR REPLACE INTO turn_records (run_id, attempt, kind, ordinal, state, body)
         VALUES (?1, ?2, 'tool', ?3, ?4, ?5)",
        params![run_id, attempt, ordinal, row.state, row.body],
    )?;
    Ok(())
}

/// Writes a record outside any event's transaction (only the
/// `record-after-next-round` mutant defers records like this).
pub fn put_tool_late(
    storage: &Storage,
    run_id: &str,
    attempt: u32,
    ordinal: u32,
    row: &RecordRow,
) -> Result<(), StorageError> {
    storage.with_conn(|conn| {
        let tx = conn.transaction()?;
        put_tool(&tx, run_id, attempt, ordinal, row).map_err(|err| match err {
            StorageError::Sqlite(err) => err,
            StorageError::Corrupt { .. } => rusqlite::Error::InvalidQuery,
        })?;
        tx.commit()
    })
}

/// Copies every tool record of `source_run_id`'s `source_attempt` to
/// `dest_run_id`'s attempt 1, in one statement: a branch fork that inherits
/// an effect keeps its own copy of the record, so a fork of the branch can
/// be served it (EFF-10). Returns how many rows were copied.
pub fn copy_tool_records(
    storage: &Storage,
    source_run_id: &str,
    source_attempt: u32,
    dest_run_id: &str,
) -> Result<usize, StorageError> {
    storage.with_conn(|conn| {
        conn.execute_cached(
            "INSERT OR REPLACE INTO turn_records (run_id, attempt, kind, ordinal, state, body)
             SELECT ?3, 1, kind, ordinal, state, body FROM turn_records
             WHERE run_id = ?1 AND attempt = ?2 AND kind = 'tool'",
            params![source_run_id, source_attempt, dest_run_id],
        )
    })
}

/// What the log holds for tool emission `ordinal` of `attempt`, if anything.
pub fn tool(
    storage: &Storage,
    run_id: &str,
    attempt: u32,
    ordinal: u32,
) -> Result<Option<ToolRecord>, StorageError> {
    let Some((state, body)) = row(storage, run_id, attempt, "tool", ordinal)? else {
        return Ok(None);
    };
    let corrupt = |err: serde_json::Error| StorageError::Corrupt {
        column: "turn_records.body",
        problem: err.to_string(),
    };
    let record = match state.as_str() {
        "intent" => ToolRecord::Intent(serde_json::from_str(&body).map_err(corrupt)?),
        "recorded" => ToolRecord::Recorded(serde_json::from_str(&body).map_err(corrupt)?),
        "digest" => ToolRecord::Digest(serde_json::from_str(&body).map_err(corrupt)?),
        other => {
            return Err(StorageError::Corrupt {
                column: "turn_records.state",
                problem: format!("unknown state `{other}`"),
            });
        }
    };
    Ok(Some(record))
}

/// Writes the outcome of dispatch `n` of pack node `node_id` inside `tx`
/// (with the event that reports it, so never after it: RPL-2).
pub fn put_node_outcome(
    tx: &Transaction<'_>,
    run_id: &str,
    node_id: &str,
    n: u32,
    outcome: &NodeOutcome,
) -> Result<(), StorageError> {
    let body = serde_json::to_string(outcome).map_err(|err| StorageError::Corrupt {
        column: "node_records.body",
        problem: err.to_string(),
    })?;
    tx.execute_cached(
        "INSERT OR REPLACE INTO node_records (run_id, node_id, n, body) VALUES (?1, ?2, ?3, ?4)",
        params![run_id, node_id, n, body],
    )?;
    Ok(())
}

/// The recorded outcome of dispatch `n` of pack node `node_id` of `run_id`,
/// if any (a miss is RPL-3's `replay_source_missing`).
pub fn node_outcome(
    storage: &Storage,
    run_id: &str,
    node_id: &str,
    n: u32,
) -> Result<Option<NodeOutcome>, StorageError> {
    let body: Option<String> = storage.with_conn(|conn| {
        conn.query_row_cached(
            "SELECT body FROM node_records WHERE run_id = ?1 AND node_id = ?2 AND n = ?3",
            params![run_id, node_id, n],
            |row| row.get(0),
        )
        .optional()
    })?;
    body.map(|text| {
        serde_json::from_str(&text).map_err(|err| StorageError::Corrupt {
            column: "node_records.body",
            problem: err.to_string(),
        })
    })
    .transpose()
}

fn row(
    storage: &Storage,
    run_id: &str,
    attempt: u32,
    kind: &str,
    ordinal: u32,
) -> Result<Option<(String, String)>, StorageError> {
    storage.with_conn(|conn| {
        conn.query_row_cached(
            "SELECT state, body FROM turn_records
             WHERE run_id = ?1 AND attempt = ?2 AND kind = ?3 AND ordinal = ?4",
            params![run_id, attempt, kind, ordinal],
            |row| Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?)),
        )
        .optional()
    })
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[MutantInfo {
    mutant: Mutant::ToolKeyPerRun,
    name: "tool-key-per-run",
    breaks: "every tool call of a run sends the same Idempotency-Key: the ordinal is left out (TURN-D2)",
}];

#[cfg(test)]
mod tests {
    use super::*;

    fn recorded(text: &str) -> Recorded {
        Recorded {
            tool_name: "t".into(),
            call_id: "c".into(),
            called_event_id: "evt_1".into(),
            outcome: "executed".into(),
            returned: json!({"status": "ok", "durationMs": 3}),
            result: CallToolResult::success(&json!({"text": text})),
            mrtr: None,
        }
    }

    #[test]
    fn records_over_the_limit_become_digests() {
        let small = RecordRow::of(&recorded("x"), 65_536).expect("row");
        assert_eq!(small.state, "recorded");
        let big = RecordRow::of(&recorded(&"y".repeat(500)), 100).expect("row");
        assert_eq!(big.state, "digest");
        let digest: Value = serde_json::from_str(&big.body).expect("json");
        assert_eq!(digest["truncated"], true);
        assert!(
            digest["digest"]
                .as_str()
                .is_some_and(|d| d.starts_with("sha256:"))
        );
        assert!(digest["bytes"].as_u64().is_some_and(|n| n > 500));
    }

    #[test]
    fn keys_are_per_run_and_ordinal_not_attempt() {
        assert_eq!(tool_key("run_a", 1), tool_key("run_a", 1));
        assert_ne!(tool_key("run_a", 1), tool_key("run_a", 2));
        assert_ne!(tool_key("run_a", 1), tool_key("run_b", 1));
        assert_eq!(tool_key("run_a", 1).len(), 64);
    }

    #[test]
    fn records_round_trip_per_attempt() {
        let storage = Storage::open_in_memory(crate::surface::app::STORE_SCHEMAS).expect("store");
        save_plan(&storage, "run_a", "{}", None, RunMode::Live).expect("plan");
        let row = RecordRow::of(&recorded("x"), 65_536).expect("row");
        storage
            .with_conn(|conn| {
                let tx = conn.transaction()?;
                put_tool(&tx, "run_a", 1, 1, &row).map_err(|_| rusqlite::Error::InvalidQuery)?;
                tx.commit()
            })
            .expect("write");
        assert!(matches!(
            tool(&storage, "run_a", 1, 1).expect("read"),
            Some(ToolRecord::Recorded(_))
        ));
        assert_eq!(tool(&storage, "run_a", 2, 1).expect("read"), None);
        let plan = plan(&storage, "run_a").expect("read").expect("plan");
        assert_eq!(plan.attempt, 1);
        put_raw_model(&storage, "run_a", 1, 1, "not json").expect("raw");
        assert_eq!(
            raw_model(&storage, "run_a", 1, 1).expect("read").as_deref(),
            Some("not json")
        );
        assert_eq!(model(&storage, "run_a", 1, 1).expect("read"), None);
        assert_eq!(plan.mode, RunMode::Live);
    }

    #[test]
    fn node_outcomes_are_keyed_by_run_node_and_n() {
        let storage = Storage::open_in_memory(crate::surface::app::STORE_SCHEMAS).expect("store");
        let outcome = NodeOutcome {
            status: 201,
            body: json!({"ok": true}),
        };
        storage
            .with_conn(|conn| {
                let tx = conn.transaction()?;
                put_node_outcome(&tx, "run_a", "fetch", 1, &outcome)
                    .map_err(|_| rusqlite::Error::InvalidQuery)?;
                tx.commit()
            })
            .expect("write");
        assert_eq!(
            node_outcome(&storage, "run_a", "fetch", 1).expect("read"),
            Some(outcome)
        );
        for (run, node, n) in [
            ("run_b", "fetch", 1),
            ("run_a", "other", 1),
            ("run_a", "fetch", 2),
        ] {
            assert_eq!(node_outcome(&storage, run, node, n).expect("read"), None);
        }
    }
}
