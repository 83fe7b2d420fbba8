//! Channel classification (TTC §A).
//!
//! Every structured emission of a model is exactly one channel:
//!
//! - `tool`: a provider-native tool call;
//! - `structured`: output the provider enforced against a schema (OpenAI
//!   `response_format: json_schema`);
//! - `prompted`: JSON the prompt asked for because no enforced mode is used
//!   (and Anthropic Messages has none here, so `structured` there is
//!   prompted).
//!
//! Prompted and structured output is validated against the requested
//! schema and is an answer, never a tool call (TURN-A2). Text the model
//! produced unrequested is not an emission, and text never becomes an
//! executed tool: the host has no inline tool-call parser (TURN-A3). The two
//! mutants that break these rules live in [`text_emissions`].

use std::sync::Arc;

use serde_json::Value;

use crate::base::args_schema::ArgsSchema;
use crate::base::mutant::{Mutant, MutantInfo};
use crate::domain::catalog::FixtureTool;
use crate::turn::provider::{ModelResponse, ToolEmission, Wire};

/// The channel of an emission, or `text` for a plain final answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    /// Provider-native tool call.
    Tool,
    /// Provider-enforced schema output.
    Structured,
    /// JSON requested in the prompt text.
    Prompted,
    /// Plain text answer (no output requested).
    Text,
}

impl Channel {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Tool => "tool",
            Self::Structured => "structured",
            Self::Prompted => "prompted",
            Self::Text => "text",
        }
    }
}

/// How the caller asked for a structured answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputMode {
    /// Provider-enforced where the wire has it.
    Structured,
    /// Asked for in the prompt.
    Prompted,
}

/// The requested structured answer.
#[derive(Debug, Clone)]
pub struct OutputSpec {
    /// How the answer is requested.
    pub mode: OutputMode,
    /// The answer's JSON Schema as given.
    pub schema: Value,
    /// The compiled schema.
    pub validator: Arc<ArgsSchema>,
}

impl OutputMode {
    /// Every wire name, in documented order.
    pub const NAMES: &'static [&'static str] = &["structured", "prompted"];

    /// Parses a wire name.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "structured" => Some(Self::Structured),
            "prompted" => Some(Self::Prompted),
            _ => None,
        }
    }
}

/// How a requested answer is actually obtained on this run's wire.
#[derive(Debug, Clone)]
pub struct OutputPlan {
    /// `structured` (enforced) or `prompted`.
    pub channel: Channel,
    /// The answer's schema.
    pub schema: Value,
    validator: Arc<ArgsSchema>,
}

impl OutputPlan {
    /// The schema to send as OpenAI `response_format`, when enforced.
    pub fn enforced_schema(&self) -> Option<&Value> {
        (self.channel == Channel::Structured).then_some(&self.schema)
    }

    /// The instruction appended to the user text, when prompted.
    pub fn instruction(&self) -> Option<String> {
        (self.channel == Channel::Prompted).then(|| {
            format!(
                "Respond only with a JSON value matching this JSON Schema (no prose): {}",
                self.schema
            )
        })
    }
}

/// Decides how the requested output (if any) is obtained on `wire`.
pub fn plan_output(
    output: Option<&OutputSpec>,
    wire: Wire,
    mutant: Option<Mutant>,
) -> Option<OutputPlan> {
    let output = output?;
    let channel = match (output.mode, wire) {
        (OutputMode::Prompted, _) => Channel::Prompted,
        // TTC §A: `structured` means provider-enforced. Anthropic Messages
        // has no enforced mode here, so the answer is honestly `prompted`.
        (OutputMode::Structured, Wire::AnthropicMessages) => Channel::Prompted,
        // Bug under `structured-not-enforced`: OpenAI could enforce the
        // schema, but the host only asks for it in the prompt.
        (OutputMode::Structured, Wire::OpenAiChat)
            if mutant == Some(Mutant::StructuredNotEnforced) =>
        {
            Channel::Prompted
        }
        (OutputMode::Structured, Wire::OpenAiChat) => Channel::Structured,
    };
    Some(OutputPlan {
        channel,
        schema: output.schema.clone(),
        validator: Arc::clone(&output.validator),
    })
}

/// The user message: the task, plus the JSON instruction when prompted.
pub fn user_message(input: &str, plan: Option<&OutputPlan>) -> String {
    match plan.and_then(OutputPlan::instruction) {
        Some(instruction) => format!("{input}\n\n{instruction}"),
        None => input.to_owned(),
    }
}

/// What a clean completion amounts to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Classified<'r> {
    /// Provider-native tool calls (channel `tool`); any text beside them
    /// was not requested and is not an emission.
    ToolCalls(&'r [ToolEmission]),
    /// A final answer in `channel` (`structured`, `prompted` or `text`).
    Answer {
        /// The channel.
        channel: Channel,
        /// The answer text (`""` when the model said nothing).
        text: &'r str,
    },
}

/// Classifies a clean completion.
pub fn classify<'r>(response: &'r ModelResponse, plan: Option<&OutputPlan>) -> Classified<'r> {
    if !response.tool_calls.is_empty() {
        return Classified::ToolCalls(&response.tool_calls);
    }
    Classified::Answer {
        channel: plan.map_or(Channel::Text, |plan| plan.channel),
        text: response.text.as_deref().unwrap_or_default(),
    }
}

/// The final result of an answer: its value, or why it is invalid.
///
/// A requested answer must be JSON matching the schema; the message of an
/// invalid one names the pointer and keyword, never the model's text.
pub fn final_answer(text: &str, plan: Option<&OutputPlan>) -> Result<Value, String> {
    let Some(plan) = plan else {
        // No output requested: the text is the answer, never parsed.
        return Ok(Value::String(text.to_owned()));
    };
    let value: Value = serde_json::from_str(text.trim())
        .map_err(|_| format!("the {} answer is not a JSON value", plan.channel.as_str()))?;
    match plan.validator.first_violation(&value) {
        None => Ok(value),
        Some(violation) => Err(format!(
            "the {} answer does not match the output schema at {violation}",
            plan.channel.as_str()
        )),
    }
}

/// Tool calls the host derives from answer text: none, ever (TURN-A2,
/// TURN-A3). Only the two mutants below make any.
pub fn text_emissions(
    text: &str,
    plan: Option<&OutputPlan>,
    tools: &[Arc<FixtureTool>],
    mutant: Option<Mutant>,
) -> Vec<ToolEmission> {
    if mutant == Some(Mutant::PromptedOutputDispatched) && plan.is_some() {
        // Bug: a structured/prompted answer shaped like a tool call is
        // taken for one.
        prompted_tool_call(text, tools).into_iter().collect()
    } else if mutant == Some(Mutant::InlineToolParser) {
        // Bug: tool calls written in the text are parsed and executed.
        inline_tool_calls(text)
    } else {
        Vec::new()
    }
}

/// `{"tool": NAME, "arguments": {…}}` naming a run tool (mutant only).
fn prompted_tool_call(text: &str, tools: &[Arc<FixtureTool>]) -> Option<ToolEmission> {
    let value: Value = serde_json::from_str(text.trim()).ok()?;
    let name = value.get("tool")?.as_str()?;
    let arguments = value.get("arguments").filter(|a| a.is_object())?;
    tools
        .iter()
        .any(|tool| tool.tool_id == name)
        .then(|| ToolEmission {
            id: minted_call_id(),
            name: name.to_owned(),
            arguments_text: arguments.to_string(),
        })
}

/// `<tool_call>{…}</tool_call>` segments and fenced ```json blocks with
/// `name` and `arguments` (mutant only).
fn inline_tool_calls(text: &str) -> Vec<ToolEmission> {
    let mut candidates = Vec::new();
    candidates.extend(segments(text, "<tool_call>", "</tool_call>"));
    candidates.extend(segments(text, "```json", "```"));
    candidates
        .into_iter()
        .filter_map(|segment| {
            let value: Value = serde_json::from_str(segment.trim()).ok()?;
            let name = value.get("name")?.as_str()?.to_owned();
            let arguments = value.get("arguments")?;
            let arguments_text = match arguments {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            Some(ToolEmission {
                id: minted_call_id(),
                name,
                arguments_text,
            })
        })
        .collect()
}

/// Every substring between `open` and the next `close`.
fn segments<'t>(text: &'t str, open: &str, close: &str) -> Vec<&'t str> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(open) {
        let after = &rest[start + open.len()..];
        let Some(end) = after.find(close) else { break };
        found.push(&after[..end]);
        rest = &after[end + close.len()..];
    }
    found
}

/// A host-minted call id for an emission the provider did not number.
pub fn minted_call_id() -> String {
    format!("call_{}", uuid::Uuid::new_v4().simple())
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[
    MutantInfo {
        mutant: Mutant::PromptedOutputDispatched,
        name: "prompted-output-dispatched",
        breaks: "a prompted/structured JSON answer shaped {\"tool\": NAME, \"arguments\": {…}} naming a run tool is dispatched as a tool call",
    },
    MutantInfo {
        mutant: Mutant::InlineToolParser,
        name: "inline-tool-parser",
        breaks: "assistant text with <tool_call>{…}</tool_call> or a fenced json block with name/arguments is parsed and executed",
    },
    MutantInfo {
        mutant: Mutant::StructuredNotEnforced,
        name: "structured-not-enforced",
        breaks: "output.mode structured on OpenAI sends no response_format (falls back to prompting)",
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::catalog::{Approval, ReplayPolicy, SafetyTier};
    use crate::turn::provider::{AssistantBlock, Completion};
    use reqwest::Url;
    use serde_json::json;

    fn spec(mode: OutputMode) -> OutputSpec {
        let schema = json!({"type": "object", "required": ["answer"],
            "properties": {"answer": {"type": "integer"}}});
        OutputSpec {
            mode,
            validator: Arc::new(ArgsSchema::compile(&schema).expect("compiles")),
            schema,
        }
    }

    fn text_response(text: &str) -> ModelResponse {
        ModelResponse {
            text: Some(text.to_owned()),
            refusal: None,
            tool_calls: Vec::new(),
            completion: Completion::Clean,
            blocks: vec![AssistantBlock::Text(text.to_owned())],
        }
    }

    fn tools() -> Vec<Arc<FixtureTool>> {
        let input_schema = json!({"type": "object"});
        vec![Arc::new(FixtureTool {
            tool_id: "fixture_write".into(),
            description: "writes".into(),
            input_validator: ArgsSchema::compile(&input_schema).expect("compiles"),
            input_schema,
            output_schema: None,
            replay_policy: ReplayPolicy::Idempotent,
            safety_tier: SafetyTier::Write,
            required_scopes: vec![],
            approval: Approval::Never,
            endpoint: crate::domain::catalog::ToolEndpoint::Receiver(
                Url::parse("http://127.0.0.1:9/t").expect("url"),
            ),
        })]
    }

    #[test]
    fn structured_is_enforced_only_where_the_wire_can() {
        let structured = spec(OutputMode::Structured);
        let openai = plan_output(Some(&structured), Wire::OpenAiChat, None).expect("plan");
        assert_eq!(openai.channel, Channel::Structured);
        assert!(openai.enforced_schema().is_some());
        assert!(openai.instruction().is_none());
        let anthropic =
            plan_output(Some(&structured), Wire::AnthropicMessages, None).expect("plan");
        assert_eq!(anthropic.channel, Channel::Prompted);
        assert!(anthropic.enforced_schema().is_none());
        let mutated = plan_output(
            Some(&structured),
            Wire::OpenAiChat,
            Some(Mutant::StructuredNotEnforced),
        )
        .expect("plan");
        assert!(mutated.enforced_schema().is_none());
        assert!(plan_output(None, Wire::OpenAiChat, None).is_none());
    }

    #[test]
    fn prompted_output_appends_the_schema_instruction() {
        let plan = plan_output(Some(&spec(OutputMode::Prompted)), Wire::OpenAiChat, None);
        let message = user_message("Sum 2 and 3.", plan.as_ref());
        assert!(message.starts_with(
            "Sum 2 and 3.\n\nRespond only with a JSON value matching this JSON Schema (no prose): {"
        ));
        assert_eq!(user_message("Sum.", None), "Sum.");
    }

    #[test]
    fn classification_picks_exactly_one_channel() {
        let plan = plan_output(Some(&spec(OutputMode::Prompted)), Wire::OpenAiChat, None);
        let answer = text_response(r#"{"answer": 5}"#);
        assert_eq!(
            classify(&answer, plan.as_ref()),
            Classified::Answer {
                channel: Channel::Prompted,
                text: r#"{"answer": 5}"#
            }
        );
        assert_eq!(
            classify(&answer, None),
            Classified::Answer {
                channel: Channel::Text,
                text: r#"{"answer": 5}"#
            }
        );
        let mut with_call = text_response("calling a tool");
        with_call.tool_calls.push(ToolEmission {
            id: "c".into(),
            name: "fixture_write".into(),
            arguments_text: "{}".into(),
        });
        assert!(matches!(
            classify(&with_call, plan.as_ref()),
            Classified::ToolCalls(calls) if calls.len() == 1
        ));
    }

    #[test]
    fn requested_answers_are_validated_and_text_is_never_parsed() {
        let plan = plan_output(Some(&spec(OutputMode::Prompted)), Wire::OpenAiChat, None);
        assert_eq!(
            final_answer(" {\"answer\": 5} ", plan.as_ref()),
            Ok(json!({"answer": 5}))
        );
        let invalid = final_answer(r#"{"answer": "SECRET-TEXT"}"#, plan.as_ref()).unwrap_err();
        assert!(invalid.contains("/answer: type"), "{invalid}");
        assert!(!invalid.contains("SECRET-TEXT"));
        assert!(final_answer("five", plan.as_ref()).is_err());
        assert_eq!(final_answer(r#"{"a": 1}"#, None), Ok(json!(r#"{"a": 1}"#)));
    }

    #[test]
    fn answer_text_never_yields_tool_calls_on_the_correct_host() {
        let plan = plan_output(Some(&spec(OutputMode::Prompted)), Wire::OpenAiChat, None);
        let shaped = r#"{"tool": "fixture_write", "arguments": {"path": "a"}}"#;
        assert!(text_emissions(shaped, plan.as_ref(), &tools(), None).is_empty());
        let inline = "<tool_call>{\"name\": \"fixture_write\", \"arguments\": {}}</tool_call>";
        assert!(text_emissions(inline, None, &tools(), None).is_empty());
    }

    #[test]
    fn the_text_mutants_derive_calls() {
        let plan = plan_output(Some(&spec(OutputMode::Prompted)), Wire::OpenAiChat, None);
        let shaped = r#"{"tool": "fixture_write", "arguments": {"path": "a"}}"#;
        let derived = text_emissions(
            shaped,
            plan.as_ref(),
            &tools(),
            Some(Mutant::PromptedOutputDispatched),
        );
        assert_eq!(derived.len(), 1);
        assert_eq!(derived[0].arguments_text, r#"{"path":"a"}"#);
        let unknown = r#"{"tool": "nope", "arguments": {}}"#;
        assert!(
            text_emissions(
                unknown,
                plan.as_ref(),
                &tools(),
                Some(Mutant::PromptedOutputDispatched)
            )
            .is_empty()
        );
        let inline = "Sure.\n<tool_call>{\"name\": \"fixture_write\", \"arguments\": {\"k\": 1}}</tool_call>\n```json\n{\"name\": \"other\", \"arguments\": \"{}\"}\n```";
        let derived = text_emissions(inline, None, &tools(), Some(Mutant::InlineToolParser));
        let names: Vec<&str> = derived.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["fixture_write", "other"]);
        assert_eq!(derived[1].arguments_text, "{}");
    }
}
