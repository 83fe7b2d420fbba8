//! The knowledge store of turn runs (RFC 0143 cl. 2–3, TRUST-2).
//!
//! A run whose request carries `memory: {storeTool, recallTool, namespace}`
//! offers the model two more tools under those names: the host's own
//! (no receiver), declared to the provider like any other tool and admitted
//! through the ordinary path ([`crate::turn::admission`]: gates, approval,
//! `agent.tool-called` / `agent.tool-returned` with `transport: "native"`,
//! records; a replay fork serves their records and never writes the store):
//!
//! | tool | arguments | result | descriptor |
//! |---|---|---|---|
//! | store | `{key: 1..128 chars, text: ≤ 4096 chars}` | `{"stored": key}` | `replayPolicy` idempotent, `safetyTier` write, `approval` never |
//! | recall | `{key: 1..128 chars}` | `{"key", "text"}` or `{"key", "found": false}` | `replayPolicy` deterministic, `safetyTier` read, `approval` never |
//!
//! A store writes the segment (tenant of the run, namespace, key) =
//! `{text, contentTrust}`, replacing an earlier one. Segments live in the
//! `knowledge` table of the host's store, so they outlive the run (and,
//! with `--data-dir`, the process): a later run of the same tenant and
//! namespace recalls them; no other tenant ever sees them.
//!
//! Trust (TRUST-2, the named per-tool decisions of [`crate::turn::trust`]):
//! a segment keeps the trust of the turn whose model answer emitted the
//! store call; the store's ack has that trust too; a recall result has the
//! recalled segment's stored trust (trusted when nothing was found). So
//! knowledge stored after reading untrusted content is recalled untrusted,
//! in any later run.

use crate::store::storage::Cached;
use std::sync::Arc;
use std::time::Instant;

use rusqlite::{OptionalExtension, params};
use serde_json::{Value, json};

use crate::base::args_schema::ArgsSchema;
use crate::base::clock::now_unix_ms;
use crate::base::tool_events::ToolReturn;
use crate::domain::Domain;
use crate::domain::catalog::{Approval, FixtureTool, ReplayPolicy, SafetyTier, ToolEndpoint};
use crate::store::storage::StorageError;
use crate::turn::feedback::CallToolResult;
use crate::turn::request::MemorySpec;
use crate::turn::trust::{self, ContentTrust};

/// The knowledge table (one row per segment).
pub const SCHEMA: &str = "
CREATE TABLE knowledge (
    tenant TEXT NOT NULL,
    namespace TEXT NOT NULL,
    key TEXT NOT NULL,
    text TEXT NOT NULL,
    content_trust TEXT NOT NULL,
    run_id TEXT NOT NULL,
    stored_at INTEGER NOT NULL,
    PRIMARY KEY (tenant, namespace, key)
);
";

/// Longest segment key, in characters.
pub const MAX_KEY_CHARS: usize = 128;

/// Longest segment text, in characters.
pub const MAX_TEXT_CHARS: usize = 4096;

/// The host-authored description of the store tool.
pub const STORE_DESCRIPTION: &str =
    "Store a piece of knowledge under a key, replacing what was stored under that key before";

/// The host-authored description of the recall tool.
pub const RECALL_DESCRIPTION: &str = "Recall the knowledge stored under a key";

// The endpoint of the two tools is the catalog's (layer 2): a tool entry
// names it without knowing the store.
pub use crate::domain::catalog::{MemoryEndpoint, MemoryOp};

/// The store tool's input schema: `{key, text}`, nothing else.
pub fn store_schema() -> Value {
    json!({
        "type": "object",
        "required": ["key", "text"],
        "properties": {
            "key": {"type": "string", "minLength": 1, "maxLength": MAX_KEY_CHARS},
            "text": {"type": "string", "maxLength": MAX_TEXT_CHARS}
        },
        "additionalProperties": false
    })
}

/// The recall tool's input schema: `{key}`, nothing else.
pub fn recall_schema() -> Value {
    json!({
        "type": "object",
        "required": ["key"],
        "properties": {
            "key": {"type": "string", "minLength": 1, "maxLength": MAX_KEY_CHARS}
        },
        "additionalProperties": false
    })
}

/// The two tools `spec` offers, store first. Empty only if a fixed schema
/// failed to compile, which it does not.
pub fn tools(spec: &MemorySpec) -> Vec<Arc<FixtureTool>> {
    let tool = |op: MemoryOp| -> Option<Arc<FixtureTool>> {
        let (name, description, schema, replay_policy, safety_tier) = match op {
            // Storing the same segment again changes nothing further.
            MemoryOp::Store => (
                &spec.store_tool,
                STORE_DESCRIPTION,
                store_schema(),
                ReplayPolicy::Idempotent,
                SafetyTier::Write,
            ),
            MemoryOp::Recall => (
                &spec.recall_tool,
                RECALL_DESCRIPTION,
                recall_schema(),
                ReplayPolicy::Deterministic,
                SafetyTier::Read,
            ),
        };
        let input_validator = ArgsSchema::compile(&schema).ok()?;
        Some(Arc::new(FixtureTool {
            tool_id: name.clone(),
            description: description.to_owned(),
            input_schema: schema,
            input_validator,
            output_schema: None,
            replay_policy,
            safety_tier,
            required_scopes: Vec::new(),
            // The store is a write that needs no approval: it changes only
            // the host's own knowledge, and what it stores keeps its trust.
            approval: Approval::Never,
            endpoint: ToolEndpoint::Memory(MemoryEndpoint {
                op,
                namespace: spec.namespace.clone(),
            }),
        }))
    };
    [MemoryOp::Store, MemoryOp::Recall]
        .into_iter()
        .filter_map(tool)
        .collect()
}

/// One dispatched call: its return and the result to feed back.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryOutcome {
    /// `ok` with the time the store took.
    pub ret: ToolReturn,
    /// The result, carrying its named per-tool trust.
    pub result: CallToolResult,
}

/// Runs one cleared call of a knowledge store tool of run `run_id` in a
/// turn of trust `turn` (the arguments passed the tool's schema). A store
/// failure is the host's own and fails the run.
pub fn dispatch(
    state: &Domain,
    run_id: &str,
    endpoint: &MemoryEndpoint,
    args: &Value,
    turn: ContentTrust,
) -> Result<MemoryOutcome, StorageError> {
    let started = Instant::now();
    let tenant = state
        .storage()
        .run(run_id)?
        .map(|run| run.tenant)
        .ok_or_else(|| StorageError::Corrupt {
            column: "runs.tenant",
            problem: format!("run `{run_id}` has no row"),
        })?;
    let key = args["key"].as_str().unwrap_or_default();
    let result = match endpoint.op {
        MemoryOp::Store => {
            let text = args["text"].as_str().unwrap_or_default();
            let segment = Segment {
                text: text.to_owned(),
                trust: trust::of_stored_segment(turn),
            };
            put(state, &tenant, &endpoint.namespace, key, &segment, run_id)?;
            CallToolResult::success(&json!({"stored": key})).with_trust(trust::of_store_ack(turn))
        }
        MemoryOp::Recall => {
            let mutant = state.mutant();
            match get(state, &tenant, &endpoint.namespace, key)? {
                Some(segment) => {
                    CallToolResult::success(&json!({"key": key, "text": segment.text}))
                        .with_trust(trust::of_recall(Some(segment.trust), mutant))
                }
                None => CallToolResult::success(&json!({"key": key, "found": false}))
                    .with_trust(trust::of_recall(None, mutant)),
            }
        }
    };
    let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    Ok(MemoryOutcome {
        ret: ToolReturn::ok(duration_ms),
        result,
    })
}

/// A stored segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// Its text.
    pub text: String,
    /// The trust it was stored with.
    pub trust: ContentTrust,
}

/// Writes (or replaces) segment (`tenant`, `namespace`, `key`), stored by
/// `run_id`.
pub fn put(
    state: &Domain,
    tenant: &str,
    namespace: &str,
    key: &str,
    segment: &Segment,
    run_id: &str,
) -> Result<(), StorageError> {
    let stored_at = now_unix_ms();
    state.storage().with_conn(|conn| {
        conn.execute_cached(
            "INSERT INTO knowledge (tenant, namespace, key, text, content_trust, run_id, stored_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
             ON CONFLICT (tenant, namespace, key) DO UPDATE SET
                 text = excluded.text, content_trust = excluded.content_trust,
                 run_id = excluded.run_id, stored_at = excluded.stored_at",
            params![
                tenant,
                namespace,
                key,
                segment.text,
                segment.trust.as_str(),
                run_id,
                stored_at
            ],
        )
        .map(|_| ())
    })
}

/// The segment (`tenant`, `namespace`, `key`), if one was stored.
pub fn get(
    state: &Domain,
    tenant: &str,
    namespace: &str,
    key: &str,
) -> Result<Option<Segment>, StorageError> {
    let row = state.storage().with_conn(|conn| {
        conn.query_row_cached(
            "SELECT text, content_trust FROM knowledge
             WHERE tenant = ?1 AND namespace = ?2 AND key = ?3",
            params![tenant, namespace, key],
            |row| Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?)),
        )
        .optional()
    })?;
    row.map(|(text, trust)| {
        let trust = ContentTrust::parse(&trust).ok_or_else(|| StorageError::Corrupt {
            column: "knowledge.content_trust",
            problem: format!("unknown trust `{trust}`"),
        })?;
        Ok(Segment { text, trust })
    })
    .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::config::HostConfig;
    use crate::base::mutant::Mutant;
    use crate::surface::app::AppState;

    fn spec() -> MemorySpec {
        MemorySpec {
            store_tool: "remember".into(),
            recall_tool: "recall".into(),
            namespace: "ns".into(),
        }
    }

    fn state(mutant: Option<Mutant>) -> AppState {
        AppState::new(&HostConfig {
            mutant,
            ..HostConfig::default()
        })
        .expect("state")
    }

    fn endpoint(op: MemoryOp) -> MemoryEndpoint {
        MemoryEndpoint {
            op,
            namespace: "ns".into(),
        }
    }

    #[test]
    fn the_tools_and_their_descriptor_values() {
        let tools = tools(&spec());
        assert_eq!(tools.len(), 2);
        let (store, recall) = (&tools[0], &tools[1]);
        assert_eq!(store.tool_id, "remember");
        assert_eq!(store.replay_policy, ReplayPolicy::Idempotent);
        assert_eq!(store.safety_tier, SafetyTier::Write);
        assert_eq!(store.approval, Approval::Never);
        assert_eq!(recall.tool_id, "recall");
        assert_eq!(recall.replay_policy, ReplayPolicy::Deterministic);
        assert_eq!(recall.safety_tier, SafetyTier::Read);
        assert!(store.required_scopes.is_empty() && recall.required_scopes.is_empty());
        for (args, ok) in [
            (json!({"key": "k", "text": ""}), true),
            (
                json!({"key": "ä".repeat(128), "text": "ü".repeat(4096)}),
                true,
            ),
            (json!({"key": "", "text": "t"}), false),
            (json!({"key": "k".repeat(129), "text": "t"}), false),
            (json!({"key": "k", "text": "t".repeat(4097)}), false),
            (json!({"key": "k"}), false),
            (json!({"key": "k", "text": "t", "extra": 1}), false),
        ] {
            assert_eq!(
                store.input_validator.first_violation(&args).is_none(),
                ok,
                "{args}"
            );
        }
        for (args, ok) in [
            (json!({"key": "k"}), true),
            (json!({"key": 1}), false),
            (json!({"key": "k", "text": "t"}), false),
        ] {
            assert_eq!(
                recall.input_validator.first_violation(&args).is_none(),
                ok,
                "{args}"
            );
        }
    }

    #[test]
    fn segments_keep_the_storing_turns_trust_per_tenant_and_namespace() {
        let state = state(None);
        state
            .storage()
            .create_run_in("run_a", "alice", "tenant-a")
            .expect("run");
        state
            .storage()
            .create_run_in("run_b", "erin", "tenant-b")
            .expect("run");
        let store = endpoint(MemoryOp::Store);
        let recall = endpoint(MemoryOp::Recall);
        let stored = dispatch(
            &state,
            "run_a",
            &store,
            &json!({"key": "k", "text": "from a page"}),
            ContentTrust::Untrusted,
        )
        .expect("store");
        assert_eq!(stored.result.structured, Some(json!({"stored": "k"})));
        assert_eq!(stored.result.content_trust(), ContentTrust::Untrusted);
        let recalled = dispatch(
            &state,
            "run_a",
            &recall,
            &json!({"key": "k"}),
            ContentTrust::Trusted,
        )
        .expect("recall");
        assert_eq!(
            recalled.result.structured,
            Some(json!({"key": "k", "text": "from a page"}))
        );
        assert_eq!(recalled.result.content_trust(), ContentTrust::Untrusted);
        // Another tenant, or another namespace, finds nothing: trusted.
        let other = dispatch(
            &state,
            "run_b",
            &recall,
            &json!({"key": "k"}),
            ContentTrust::Trusted,
        )
        .expect("recall");
        assert_eq!(
            other.result.structured,
            Some(json!({"key": "k", "found": false}))
        );
        assert_eq!(other.result.content_trust(), ContentTrust::Trusted);
        let elsewhere = MemoryEndpoint {
            op: MemoryOp::Recall,
            namespace: "other".into(),
        };
        let missing = dispatch(
            &state,
            "run_a",
            &elsewhere,
            &json!({"key": "k"}),
            ContentTrust::Trusted,
        )
        .expect("recall");
        assert_eq!(
            missing.result.structured.as_ref().map(|s| &s["found"]),
            Some(&json!(false))
        );
        // A trusted turn replaces the segment, trust included.
        dispatch(
            &state,
            "run_a",
            &store,
            &json!({"key": "k", "text": "the user's"}),
            ContentTrust::Trusted,
        )
        .expect("store");
        let segment = get(&state, "tenant-a", "ns", "k").expect("read");
        assert_eq!(
            segment,
            Some(Segment {
                text: "the user's".into(),
                trust: ContentTrust::Trusted
            })
        );
        assert!(
            dispatch(
                &state,
                "run_missing",
                &recall,
                &json!({"key": "k"}),
                ContentTrust::Trusted
            )
            .is_err()
        );
    }

    #[test]
    fn the_mutant_trusts_every_recalled_segment() {
        let state = state(Some(Mutant::RecalledKnowledgeTrusted));
        state.storage().create_run("run_a", "alice").expect("run");
        dispatch(
            &state,
            "run_a",
            &endpoint(MemoryOp::Store),
            &json!({"key": "k", "text": "t"}),
            ContentTrust::Untrusted,
        )
        .expect("store");
        let recalled = dispatch(
            &state,
            "run_a",
            &endpoint(MemoryOp::Recall),
            &json!({"key": "k"}),
            ContentTrust::Untrusted,
        )
        .expect("recall");
        assert_eq!(recalled.result.content_trust(), ContentTrust::Trusted);
    }
}
