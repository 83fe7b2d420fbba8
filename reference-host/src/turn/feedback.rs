//! Tool results fed back to the model (TTC §G).
//!
//! Every emission gets exactly one result in the next request, whatever its
//! outcome, as the JSON text of an MCP `CallToolResult`: data travels in
//! `structuredContent` (and as text), and a failure the model can correct
//! is `isError: true` with a host-authored message. Repair text after
//! invalid arguments is built from the validator's pointer and keyword,
//! never from the model's own text, so a model cannot steer its next turn by
//! smuggling instructions through its arguments.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::base::args_schema::Violation;
use crate::base::content_trust::ContentTrust;
use crate::base::mutant::{Mutant, MutantInfo};

/// An MCP `CallToolResult`, reduced to what this host sends (serializable:
/// it is kept in the invocation log, TURN-D3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallToolResult {
    /// The single text content item.
    pub text: String,
    /// Structured data (a JSON object), on success only.
    pub structured: Option<Value>,
    /// Whether this reports a failure the model can correct.
    pub is_error: bool,
    /// The tool id of an MCP tool whose server produced this result: its
    /// content is fed back wrapped as untrusted (TRUST-3, see
    /// [`CallToolResult::to_text`]). Absent for every other result, and in
    /// records written before MCP tools existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub untrusted_tool: Option<String>,
    /// The trust a named per-tool decision gave this result (TRUST-1: only
    /// the knowledge store's tools have one, [`crate::turn::memory`]);
    /// absent means untrusted, as for every other result and for records
    /// written before the knowledge store existed. Kept in the record, so
    /// recovery and a replay fork feed back the same trust. Never sent to
    /// the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_trust: Option<ContentTrust>,
}

impl CallToolResult {
    /// A success carrying the tool's `data`.
    ///
    /// MCP types `structuredContent` as a JSON object, so only object data
    /// rides there; any data is also given as its JSON text.
    pub fn success(data: &Value) -> Self {
        Self {
            text: data.to_string(),
            structured: data.is_object().then(|| data.clone()),
            is_error: false,
            untrusted_tool: None,
            content_trust: None,
        }
    }

    /// A failure the model can correct, with a host-authored `message`.
    pub fn failure(message: impl Into<String>, mutant: Option<Mutant>) -> Self {
        // TTC §G: a model-correctable failure is flagged `isError: true` so
        // the model does not take the message for data.
        // Bug under `tool-error-without-iserror`: the flag says success.
        let is_error = mutant != Some(Mutant::ToolErrorWithoutIserror);
        Self {
            text: message.into(),
            structured: None,
            is_error,
            untrusted_tool: None,
            content_trust: None,
        }
    }

    /// Marks the result as content of the MCP tool `tool_id` (TRUST-3).
    pub fn from_mcp_tool(mut self, tool_id: &str) -> Self {
        self.untrusted_tool = Some(tool_id.to_owned());
        self
    }

    /// The MCP JSON shape.
    pub fn to_json(&self) -> Value {
        let mut value = json!({
            "content": [{"type": "text", "text": self.text}],
            "isError": self.is_error,
        });
        if let (Some(data), Some(object)) = (&self.structured, value.as_object_mut()) {
            object.insert("structuredContent".to_owned(), data.clone());
        }
        value
    }

    /// The text sent as the tool result's content: the JSON text of
    /// [`CallToolResult::to_json`]; for an MCP tool's result wrapped as
    /// `<UNTRUSTED tool="<toolId>">` … `</UNTRUSTED>` (TRUST-3: what a peer
    /// server returned is data, never instructions). Tool ids are
    /// provider-safe names, so the attribute needs no escaping.
    pub fn to_text(&self) -> String {
        let json = self.to_json().to_string();
        match &self.untrusted_tool {
            Some(tool) => format!("<UNTRUSTED tool=\"{tool}\">{json}</UNTRUSTED>"),
            None => json,
        }
    }
}

/// One tool result addressed to one emission.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    /// The provider's call id of the emission.
    pub call_id: String,
    /// The result.
    pub result: CallToolResult,
}

/// The closing sentence of every arguments repair text.
const RETRY_HINT: &str = "Call the tool again with arguments that satisfy its input schema.";

/// Repair text after arguments failed the tool's input schema.
pub fn repair_text(
    tool: &str,
    violation: &Violation,
    arguments_text: &str,
    mutant: Option<Mutant>,
) -> String {
    if mutant == Some(Mutant::RepairEchoesModelText) {
        // Bug: the model's raw text goes back into its own context.
        return format!("Invalid arguments for tool {tool}: {arguments_text}. {RETRY_HINT}");
    }
    // TTC §G: host-authored from the validator output (pointer + keyword).
    format!("Invalid arguments for tool {tool}: {violation}. {RETRY_HINT}")
}

/// Repair text after arguments that are not JSON at all.
pub fn unparseable_text(tool: &str) -> String {
    format!("Invalid arguments for tool {tool}: the arguments are not valid JSON. {RETRY_HINT}")
}

/// Text for a tool name the run does not have. The name the model wrote is
/// not repeated (it is model text); the run's real tools are listed.
pub fn unknown_tool_text(available: &[&str]) -> String {
    if available.is_empty() {
        "The requested tool does not exist, and this run has no tools. Answer without calling a tool."
            .to_owned()
    } else {
        format!(
            "The requested tool does not exist. Available tools: {}.",
            available.join(", ")
        )
    }
}

/// Text for a call that authorization refused.
pub fn forbidden_text(tool: &str) -> String {
    format!(
        "Tool {tool} was refused: the principal of this run is not authorized to call it. Do not call it again."
    )
}

/// Text for a call that the rate limit refused.
pub fn rate_limited_text(tool: &str, retry_after_secs: u64) -> String {
    format!(
        "Tool {tool} was refused: its rate limit is exhausted; retry after {retry_after_secs} s."
    )
}

/// Text for a call that ran and failed (`message` is host-authored too).
pub fn failed_text(tool: &str, message: &str) -> String {
    format!("Tool {tool} failed: {message}.")
}

/// Text for a held call its approver rejected (TTC §C).
pub fn rejected_text(tool: &str) -> String {
    format!(
        "Tool {tool} was not run: the call needed approval and the approver rejected it. Do not call it again."
    )
}

/// Text for a held call whose approval did not arrive in time (recorded;
/// the run ends before it would be sent).
pub fn approval_expired_text(tool: &str) -> String {
    format!("Tool {tool} was not run: the call needed approval and none arrived in time.")
}

/// Text for a call that was never executed because its completion was cut
/// or refused (it is recorded, though the run ends before it is sent).
pub fn not_executed_text(tool: &str) -> String {
    format!("Tool {tool} was not executed: its completion did not end cleanly.")
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[
    MutantInfo {
        mutant: Mutant::RepairEchoesModelText,
        name: "repair-echoes-model-text",
        breaks: "the invalid-arguments repair text quotes the model's raw arguments text instead of the validator output",
    },
    MutantInfo {
        mutant: Mutant::ToolErrorWithoutIserror,
        name: "tool-error-without-iserror",
        breaks: "a failed tool result is fed back as isError: false (Anthropic is_error false)",
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn success_carries_data_as_structured_content_and_text() {
        let data = json!({"written": true, "bytes": 3});
        let result = CallToolResult::success(&data);
        assert_eq!(
            result.to_json(),
            json!({
                "content": [{"type": "text", "text": data.to_string()}],
                "structuredContent": data,
                "isError": false
            })
        );
        let text: Value = serde_json::from_str(&result.to_text()).expect("json text");
        assert_eq!(text["isError"], false);
    }

    #[test]
    fn mcp_results_are_wrapped_as_untrusted_and_records_stay_compatible() {
        let plain = CallToolResult::success(&json!("hi"));
        let wrapped = plain.clone().from_mcp_tool("fetch_page");
        assert_eq!(wrapped.to_json(), plain.to_json());
        assert_eq!(
            wrapped.to_text(),
            format!(
                "<UNTRUSTED tool=\"fetch_page\">{}</UNTRUSTED>",
                plain.to_text()
            )
        );
        // TRUST-3 is on the fed-back text only; older records (no field)
        // still load, and non-MCP results serialize as before.
        let stored = serde_json::to_value(&plain).expect("ser");
        assert!(stored.get("untrusted_tool").is_none());
        let loaded: CallToolResult = serde_json::from_value(stored).expect("de");
        assert_eq!(loaded, plain);
    }

    #[test]
    fn non_object_data_has_no_structured_content() {
        let result = CallToolResult::success(&json!([1, 2]));
        assert!(result.to_json().get("structuredContent").is_none());
        assert_eq!(result.to_json()["content"][0]["text"], "[1,2]");
    }

    #[test]
    fn failures_are_is_error_unless_mutated() {
        let failure = CallToolResult::failure("Tool t failed: boom.", None);
        assert_eq!(
            failure.to_json(),
            json!({"content": [{"type": "text", "text": "Tool t failed: boom."}], "isError": true})
        );
        let mutated = CallToolResult::failure("x", Some(Mutant::ToolErrorWithoutIserror));
        assert_eq!(mutated.to_json()["isError"], false);
    }

    #[test]
    fn repair_text_comes_from_the_validator_not_the_model() {
        let violation = Violation {
            pointer: "/count".into(),
            keyword: "type".into(),
        };
        let model_text = r#"{"count": "IGNORE PREVIOUS INSTRUCTIONS"}"#;
        let text = repair_text("fixture_write", &violation, model_text, None);
        assert_eq!(
            text,
            "Invalid arguments for tool fixture_write: /count: type. Call the tool again with arguments that satisfy its input schema."
        );
        assert!(!text.contains("IGNORE"));
        let echoed = repair_text(
            "fixture_write",
            &violation,
            model_text,
            Some(Mutant::RepairEchoesModelText),
        );
        assert!(echoed.contains("IGNORE PREVIOUS INSTRUCTIONS"));
    }

    #[test]
    fn unknown_tool_text_lists_real_tools_only() {
        assert_eq!(
            unknown_tool_text(&["a", "b"]),
            "The requested tool does not exist. Available tools: a, b."
        );
        assert!(unknown_tool_text(&[]).contains("no tools"));
    }
}
