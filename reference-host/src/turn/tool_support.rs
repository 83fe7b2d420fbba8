//! Models without native tool calls (tool-turn contract §E, TURN-E3).
//!
//! `provider.toolSupport: false` says the model cannot take native tools.
//! A run that has any tool (fixture tools, the clarification tool or
//! provider-executed tools) then fails BEFORE any provider request with
//! `run.failed {error: {code: "capability_not_provided", details:
//! {capability: "tools"}}}`: a typed failure, never a guess. The guess (describing the tools in the prompt
//! and mining the answer text for calls) is the `tool-support-guessed`
//! mutant, and lives here too.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::base::event_codes;
use crate::base::mutant::{Mutant, MutantInfo};
use crate::domain::catalog::FixtureTool;
use crate::turn::channels::minted_call_id;
use crate::turn::plan::{RunFailure, TurnPlan};
use crate::turn::provider::ToolEmission;

/// `run.failed` code: the run has tools and the model has no tool support.
/// The registered `capability_not_provided` (HOOKS-FAIL-7), with
/// [`MISSING_CAPABILITY`] in `details.capability`.
pub const PROVIDER_TOOLS_UNSUPPORTED: &str = event_codes::CAPABILITY_NOT_PROVIDED;

/// `details.capability` of [`PROVIDER_TOOLS_UNSUPPORTED`].
pub const MISSING_CAPABILITY: &str = "tools";

/// What the run offers and what the model supports.
#[derive(Debug, Clone, Copy)]
pub struct ToolNeeds {
    /// `provider.toolSupport`.
    pub tool_support: bool,
    /// How many tools the run would offer (fixture, clarification and
    /// provider-executed tools).
    pub tool_count: usize,
}

impl ToolNeeds {
    /// What `plan` offers against what its model supports (TURN-E3).
    pub fn of(plan: &TurnPlan) -> Self {
        Self {
            tool_support: plan.tool_support,
            tool_count: plan.tools.len()
                + usize::from(plan.clarification.is_some())
                + plan.provider_tools.len(),
        }
    }
}

/// How the run deals with its tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolMode {
    /// Native tool calls (the model supports them, or the run has none).
    Native,
    /// Fail the run before any provider request (TURN-E3).
    Unsupported,
    /// Only under `tool-support-guessed`: prompt the tools and dispatch
    /// JSON found in the answer text.
    Guessed,
}

/// How a run with `needs` uses tools. Bug under `tool-support-guessed`:
/// the unsupported case is guessed at instead of failing typed.
pub fn mode(needs: ToolNeeds, mutant: Option<Mutant>) -> ToolMode {
    if needs.tool_support || needs.tool_count == 0 {
        ToolMode::Native
    } else if mutant == Some(Mutant::ToolSupportGuessed) {
        ToolMode::Guessed
    } else {
        ToolMode::Unsupported
    }
}

/// The `run.failed` message of [`ToolMode::Unsupported`].
pub fn unsupported_message(tool_count: usize) -> String {
    format!(
        "the run has {tool_count} tool(s) and provider.toolSupport is false; the host does not imitate tool calls in text, so no provider request was made (TURN-E3)"
    )
}

/// The run failure of [`ToolMode::Unsupported`]: `capability_not_provided`
/// with `details: {capability: "tools"}` (TURN-E3, HOOKS-FAIL-7).
pub fn unsupported(tool_count: usize) -> RunFailure {
    RunFailure::new(PROVIDER_TOOLS_UNSUPPORTED, unsupported_message(tool_count))
        .with_details(json!({"capability": MISSING_CAPABILITY}))
}

/// The system prompt of a guessed run (mutant only): the tools described
/// in text, with the JSON shape to answer in.
pub fn guessed_system(system: &str, tools: &[Arc<FixtureTool>]) -> String {
    let mut prompt = format!(
        "{system}\nYou can use these tools. To call one, answer with only {{\"tool\": NAME, \"arguments\": {{...}}}}.\n"
    );
    for tool in tools {
        prompt.push_str(&format!(
            "- {}: {} Input schema: {}\n",
            tool.tool_id, tool.description, tool.input_schema
        ));
    }
    prompt
}

/// `{"tool": NAME, "arguments": {...}}` in the answer text naming a run
/// tool (mutant only).
pub fn guessed_calls(text: &str, tools: &[Arc<FixtureTool>]) -> Vec<ToolEmission> {
    let Ok(value) = serde_json::from_str::<Value>(text.trim()) else {
        return Vec::new();
    };
    let (Some(name), Some(arguments)) = (
        value.get("tool").and_then(Value::as_str),
        value.get("arguments").filter(|a| a.is_object()),
    ) else {
        return Vec::new();
    };
    if !tools.iter().any(|tool| tool.tool_id == name) {
        return Vec::new();
    }
    vec![ToolEmission {
        id: minted_call_id(),
        name: name.to_owned(),
        arguments_text: arguments.to_string(),
    }]
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[MutantInfo {
    mutant: Mutant::ToolSupportGuessed,
    name: "tool-support-guessed",
    breaks: "without tool support the tools are prompted in the system message and JSON in the answer text is dispatched (TURN-E3)",
}];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_tool_support_with_tools_fails_typed_unless_mutated() {
        let needs = |tool_support, tool_count| ToolNeeds {
            tool_support,
            tool_count,
        };
        assert_eq!(mode(needs(true, 2), None), ToolMode::Native);
        assert_eq!(mode(needs(false, 0), None), ToolMode::Native);
        assert_eq!(mode(needs(false, 1), None), ToolMode::Unsupported);
        assert_eq!(
            mode(needs(false, 1), Some(Mutant::ToolSupportGuessed)),
            ToolMode::Guessed
        );
        assert!(guessed_calls("not json", &[]).is_empty());
    }
}
