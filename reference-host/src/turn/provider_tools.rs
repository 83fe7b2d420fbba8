//! Provider-executed tools (tool-turn contract §F): server tools such as
//! Anthropic's `web_search`, which the PROVIDER runs inside one model
//! answer (`server_tool_use` + `<name>_tool_result` blocks).
//!
//! The host declares them (`{type, name}` in the Messages request's
//! `tools`), echoes their blocks verbatim and never dispatches them. What
//! the host still owes (TTC §F):
//!
//! - TURN-F1: every one it supports is a `provider` row of the effect-seam
//!   manifest ([`manifest_rows`]);
//! - TURN-F2: on replay it is suppressed at the provider dispatch point: a
//!   replay fork serves a round whose source record carries
//!   provider-executed blocks from that record instead of asking the
//!   provider, and no request of a replay fork declares server tools
//!   ([`recorded_round`], [`suppressed_on_replay`]);
//! - TURN-F3: its output is untrusted, like any tool result
//!   ([`crate::turn::trust::after_provider_tools`] uses [`carries_result`]).

use serde_json::{Value, json};

use crate::base::mutant::{Mutant, MutantInfo};
use crate::store::storage::{Storage, StorageError};
use crate::turn::provider::{AssistantBlock, ModelResponse};
use crate::turn::records::{self, ReplaySource};
use crate::turn::request::SUPPORTED_PROVIDER_TOOLS;

/// The manifest row id of a provider-executed tool: `provider:<name>`.
pub fn seam_id(name: &str) -> String {
    format!("provider:{name}")
}

/// One `provider` row per provider-executed tool this host supports
/// (TURN-F1). Bug under `provider-tool-unlisted`: there is none.
pub fn manifest_rows(mutant: Option<Mutant>) -> Vec<Value> {
    if mutant == Some(Mutant::ProviderToolUnlisted) {
        return Vec::new();
    }
    SUPPORTED_PROVIDER_TOOLS
        .iter()
        .map(|name| {
            json!({
                "seam": seam_id(name),
                "kind": "provider-sdk",
                "guarded": true,
                "guardedBy": "the turn loop's replay source: a replay fork serves the model round from the source run's record",
                "note": format!(
                    "the model provider executes `{name}` inside a model answer (anthropic-messages server tool); a replay fork serves that round from the source run's record and declares no server tools, so the provider never runs it again"
                ),
            })
        })
        .collect()
}

/// Whether a block is a provider-executed tool's use or result.
fn is_provider_tool_block(block: &Value, suffix: &str) -> bool {
    block
        .get("type")
        .and_then(Value::as_str)
        .is_some_and(|kind| kind.ends_with(suffix))
}

/// Whether the answer carries the RESULT of a provider-executed tool
/// (`web_search_tool_result`, …): content the provider fetched, so
/// untrusted (TURN-F3).
pub fn carries_result(response: &ModelResponse) -> bool {
    response.blocks.iter().any(|block| match block {
        AssistantBlock::ProviderExecuted(block) => is_provider_tool_block(block, "_tool_result"),
        _ => false,
    })
}

/// Whether the answer carries any provider-executed block (its use or its
/// result): a round the provider performed an effect in.
pub fn carries_provider_blocks(response: &ModelResponse) -> bool {
    response.blocks.iter().any(|block| match block {
        AssistantBlock::ProviderExecuted(block) => {
            is_provider_tool_block(block, "server_tool_use")
                || is_provider_tool_block(block, "_tool_result")
        }
        _ => false,
    })
}

/// Whether a run suppresses provider-executed tools at the provider
/// dispatch point: true for a replay fork (TURN-F2). Bug under
/// `provider-tool-refired-on-replay`: never, so the fork asks the provider
/// live for such a round and declares the server tools again.
pub fn suppressed_on_replay(replay: Option<&ReplaySource>, mutant: Option<Mutant>) -> bool {
    replay.is_some() && mutant != Some(Mutant::ProviderToolRefiredOnReplay)
}

/// The source run's recorded answer of `round`, when it carries
/// provider-executed blocks: a replay fork serves it instead of asking the
/// provider (TURN-F2). Other rounds (and a missing record) are `None` and
/// go live as usual.
/// Bug under `replay-model-from-record`: every recorded round is served, so
/// the fork never asks the model again (RPL-5 says LLM calls re-execute).
pub fn recorded_round(
    storage: &Storage,
    source: &ReplaySource,
    round: u32,
    mutant: Option<Mutant>,
) -> Result<Option<ModelResponse>, StorageError> {
    let every_round = mutant == Some(Mutant::ReplayModelFromRecord);
    Ok(
        records::model(storage, &source.run_id, source.attempt, round)?
            .filter(|response| every_round || carries_provider_blocks(response)),
    )
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[
    MutantInfo {
        mutant: Mutant::ProviderToolUnlisted,
        name: "provider-tool-unlisted",
        breaks: "the effect-seam manifest has no row for the provider-executed tool (TURN-F1)",
    },
    MutantInfo {
        mutant: Mutant::ProviderToolRefiredOnReplay,
        name: "provider-tool-refired-on-replay",
        breaks: "a replay fork asks the provider live for a provider-tool round, server tool definitions included (TURN-F2)",
    },
    MutantInfo {
        mutant: Mutant::ReplayModelFromRecord,
        name: "replay-model-from-record",
        breaks: "a replay fork serves every recorded model round instead of asking the model again (RPL-5)",
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::turn::provider::Completion;

    fn answer(blocks: Vec<AssistantBlock>) -> ModelResponse {
        ModelResponse {
            text: None,
            refusal: None,
            tool_calls: Vec::new(),
            completion: Completion::Clean,
            blocks,
        }
    }

    #[test]
    fn provider_results_are_recognised_by_block_type() {
        let searched = answer(vec![
            AssistantBlock::ProviderExecuted(
                json!({"type": "server_tool_use", "id": "srv_1", "name": "web_search"}),
            ),
            AssistantBlock::ProviderExecuted(
                json!({"type": "web_search_tool_result", "tool_use_id": "srv_1", "content": []}),
            ),
        ]);
        assert!(carries_result(&searched));
        assert!(carries_provider_blocks(&searched));
        let plain = answer(vec![
            AssistantBlock::Text("hi".into()),
            AssistantBlock::ProviderExecuted(json!({"type": "thinking", "thinking": "x"})),
        ]);
        assert!(!carries_result(&plain));
        assert!(!carries_provider_blocks(&plain));
    }

    #[test]
    fn manifest_rows_name_each_supported_tool() {
        let rows = manifest_rows(None);
        assert_eq!(rows.len(), SUPPORTED_PROVIDER_TOOLS.len());
        assert_eq!(rows[0]["seam"], "provider:web_search");
        assert!(manifest_rows(Some(Mutant::ProviderToolUnlisted)).is_empty());
        let source = ReplaySource {
            run_id: "run_s".into(),
            attempt: 1,
        };
        assert!(suppressed_on_replay(Some(&source), None));
        assert!(!suppressed_on_replay(None, None));
        assert!(!suppressed_on_replay(
            Some(&source),
            Some(Mutant::ProviderToolRefiredOnReplay)
        ));
    }
}
