//! Scripts: what the provider answers, round by round, for one model key.
//!
//! A script is plain JSON (`{"model": "...", "rounds": [...]}`) so scenario files can carry it.
//! [`Script::from_json`] validates it by hand rather than through serde derive, because the
//! harness needs to point scenario authors at the exact value that is wrong (a JSON pointer),
//! and derive-based errors only give line/column positions.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value, json};

use crate::error::ScriptError;

/// Longest scripted delay: every wait in toolcert is bounded, and a host's own timeouts are
/// typically tens of seconds, so anything longer would only slow a run down.
pub const MAX_DELAY_MS: u64 = 30_000;

/// Largest `cutAfterChunks` accepted; far beyond any real answer's event count.
pub const MAX_CUT_AFTER_CHUNKS: u64 = u32::MAX as u64;

/// Lowest and highest status a scripted `error` round may use: provider errors are 4xx/5xx.
pub const ERROR_STATUS_RANGE: std::ops::RangeInclusive<u16> = 400..=599;

/// The round kinds, in the order the schema lists them. `text` doubles as the preamble of a
/// `toolCalls` round, which is why kind detection special-cases it.
const KIND_KEYS: [&str; 8] = [
    "toolCalls",
    "text",
    "structured",
    "truncated",
    "refusal",
    "contentFilter",
    "error",
    "providerTool",
];

/// The scripted answers for one model key.
#[derive(Debug, Clone, PartialEq)]
pub struct Script {
    /// The request `model` value this script answers (unique per test run).
    pub model: String,
    /// The answers, consumed one per request, in order.
    pub rounds: Vec<Round>,
}

/// One scripted answer plus its timing and transport modifiers.
#[derive(Debug, Clone, PartialEq)]
pub struct Round {
    /// What the answer says.
    pub kind: RoundKind,
    /// Wait this long (0..=30000 ms) before answering (`delayMs`).
    pub delay_ms: Option<u64>,
    /// Drop the connection after this many SSE events, or after a partial body when not
    /// streaming (`cutAfterChunks`). Never set on `error` rounds.
    pub cut_after_chunks: Option<u64>,
}

/// What a round answers with.
#[derive(Debug, Clone, PartialEq)]
pub enum RoundKind {
    /// The model calls tools (`toolCalls`), optionally after some preamble text.
    ToolCalls {
        /// The calls, at least one.
        calls: Vec<ToolCall>,
        /// Text emitted before the calls.
        text: Option<String>,
    },
    /// Plain assistant text (`text`).
    Text(String),
    /// A schema-enforced answer whose content is this value's JSON text (`structured`).
    Structured(Value),
    /// An emission cut by the token limit (`truncated`).
    Truncated {
        /// Text emitted before the cut.
        text: Option<String>,
        /// Tool calls emitted before the cut (usually with cut `argumentsText`); may be empty.
        calls: Vec<ToolCall>,
    },
    /// The model refuses (`refusal`).
    Refusal(String),
    /// The provider's content filter stops the answer (`contentFilter`).
    ContentFilter(String),
    /// A provider error response (`error`).
    Error {
        /// HTTP status, 400..=599.
        status: u16,
        /// The error message.
        message: String,
    },
    /// A provider-executed tool such as Anthropic's web search (`providerTool`).
    ProviderTool(ProviderTool),
}

/// One scripted tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The tool name the model calls.
    pub name: String,
    /// The call id; generated (`call_<n>` / `toolu_<n>`) when absent.
    pub id: Option<String>,
    /// The call's arguments.
    pub arguments: Arguments,
}

/// A tool call's arguments: a JSON value, or raw text sent verbatim (possibly invalid JSON).
#[derive(Debug, Clone, PartialEq)]
pub enum Arguments {
    /// `arguments`: any JSON value, sent as its compact JSON text.
    Json(Value),
    /// `argumentsText`: exactly these characters, valid JSON or not.
    Text(String),
}

impl Arguments {
    /// The arguments as the text a provider would stream: compact JSON, or the raw text.
    pub fn to_text(&self) -> String {
        match self {
            Arguments::Json(value) => value.to_string(),
            Arguments::Text(text) => text.clone(),
        }
    }
}

/// A provider-executed tool round (Anthropic `server_tool_use` + its result block).
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderTool {
    /// The server tool's name, e.g. `web_search`; the result block is `<name>_tool_result`.
    pub name: String,
    /// The tool input the provider reports (a JSON object).
    pub input: Value,
    /// The result block's `content`, sent verbatim.
    pub result: Value,
    /// Text the model writes after the tool ran.
    pub text: Option<String>,
    /// Host tools the model calls after the provider's tool ran (`toolCalls`), in the same
    /// answer (`stop_reason: "tool_use"`): how provider-run output flows into a host call.
    pub calls: Vec<ToolCall>,
}

impl RoundKind {
    /// The script key naming this kind (`toolCalls`, `text`, ...), used in recordings.
    pub fn name(&self) -> &'static str {
        match self {
            RoundKind::ToolCalls { .. } => "toolCalls",
            RoundKind::Text(_) => "text",
            RoundKind::Structured(_) => "structured",
            RoundKind::Truncated { .. } => "truncated",
            RoundKind::Refusal(_) => "refusal",
            RoundKind::ContentFilter(_) => "contentFilter",
            RoundKind::Error { .. } => "error",
            RoundKind::ProviderTool(_) => "providerTool",
        }
    }

    /// How many generated-id slots this round uses: one per tool call, one for a provider
    /// tool. Ids are numbered across the whole script so no two rounds reuse one.
    #[cfg(feature = "server")]
    pub(crate) fn id_slots(&self) -> usize {
        match self {
            RoundKind::ToolCalls { calls, .. } | RoundKind::Truncated { calls, .. } => calls.len(),
            RoundKind::ProviderTool(tool) => 1 + tool.calls.len(),
            _ => 0,
        }
    }
}

impl Script {
    /// Parse and strictly validate a script document.
    ///
    /// Rejects unknown keys, wrong types, rounds with zero or two kinds, out-of-range numbers,
    /// an empty model and an empty round list; the error points at the offending value.
    pub fn from_json(value: &Value) -> Result<Script, ScriptError> {
        let obj = object(value, "", "a script object {\"model\", \"rounds\"}")?;
        only_keys(obj, "", &["model", "rounds"])?;
        let model = non_empty_string(required(obj, "", "model", "the model key")?, "/model")?;
        let rounds_value = required(obj, "", "rounds", "a non-empty array of rounds")?;
        let items = rounds_value
            .as_array()
            .ok_or_else(|| ScriptError::new("/rounds", "expected a non-empty array of rounds"))?;
        if items.is_empty() {
            return Err(ScriptError::new(
                "/rounds",
                "expected at least one round (an empty script answers nothing)",
            ));
        }
        let rounds = items
            .iter()
            .enumerate()
            .map(|(i, round)| parse_round(round, &format!("/rounds/{i}")))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Script { model, rounds })
    }

    /// The script as the JSON document [`Script::from_json`] accepts (inverse of it).
    pub fn to_json(&self) -> Value {
        json!({
            "model": self.model,
            "rounds": self.rounds.iter().map(Round::to_json).collect::<Vec<_>>(),
        })
    }

    /// Check the invariants `from_json` enforces, for scripts built in code.
    pub fn validate(&self) -> Result<(), ScriptError> {
        // Re-parsing the canonical document keeps one source of truth for the rules.
        Script::from_json(&self.to_json()).map(|_| ())
    }
}

impl Serialize for Script {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Script {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Script::from_json(&value).map_err(serde::de::Error::custom)
    }
}

impl Round {
    /// A round of this kind with no modifiers.
    pub fn new(kind: RoundKind) -> Round {
        Round {
            kind,
            delay_ms: None,
            cut_after_chunks: None,
        }
    }

    fn to_json(&self) -> Value {
        let mut obj = Map::new();
        match &self.kind {
            RoundKind::ToolCalls { calls, text } => {
                obj.insert("toolCalls".into(), calls_json(calls));
                if let Some(text) = text {
                    obj.insert("text".into(), json!(text));
                }
            }
            RoundKind::Text(text) => {
                obj.insert("text".into(), json!(text));
            }
            RoundKind::Structured(value) => {
                obj.insert("structured".into(), value.clone());
            }
            RoundKind::Truncated { text, calls } => {
                let mut inner = Map::new();
                if let Some(text) = text {
                    inner.insert("text".into(), json!(text));
                }
                if !calls.is_empty() {
                    inner.insert("toolCalls".into(), calls_json(calls));
                }
                obj.insert("truncated".into(), Value::Object(inner));
            }
            RoundKind::Refusal(text) => {
                obj.insert("refusal".into(), json!(text));
            }
            RoundKind::ContentFilter(text) => {
                obj.insert("contentFilter".into(), json!(text));
            }
            RoundKind::Error { status, message } => {
                obj.insert(
                    "error".into(),
                    json!({"status": status, "message": message}),
                );
            }
            RoundKind::ProviderTool(tool) => {
                let mut inner = Map::new();
                inner.insert("name".into(), json!(tool.name));
                inner.insert("input".into(), tool.input.clone());
                inner.insert("result".into(), tool.result.clone());
                if let Some(text) = &tool.text {
                    inner.insert("text".into(), json!(text));
                }
                if !tool.calls.is_empty() {
                    inner.insert("toolCalls".into(), calls_json(&tool.calls));
                }
                obj.insert("providerTool".into(), Value::Object(inner));
            }
        }
        if let Some(delay) = self.delay_ms {
            obj.insert("delayMs".into(), json!(delay));
        }
        if let Some(cut) = self.cut_after_chunks {
            obj.insert("cutAfterChunks".into(), json!(cut));
        }
        Value::Object(obj)
    }
}

fn calls_json(calls: &[ToolCall]) -> Value {
    Value::Array(
        calls
            .iter()
            .map(|call| {
                let mut obj = Map::new();
                obj.insert("name".into(), json!(call.name));
                if let Some(id) = &call.id {
                    obj.insert("id".into(), json!(id));
                }
                match &call.arguments {
                    Arguments::Json(value) => obj.insert("arguments".into(), value.clone()),
                    Arguments::Text(text) => obj.insert("argumentsText".into(), json!(text)),
                };
                Value::Object(obj)
            })
            .collect(),
    )
}

fn parse_round(value: &Value, ptr: &str) -> Result<Round, ScriptError> {
    let obj = object(
        value,
        ptr,
        "a round object with exactly one kind key (toolCalls, text, structured, truncated, refusal, contentFilter, error, providerTool)",
    )?;
    let mut allowed: Vec<&str> = KIND_KEYS.to_vec();
    allowed.extend(["delayMs", "cutAfterChunks"]);
    only_keys(obj, ptr, &allowed)?;

    // `text` next to `toolCalls` is that round's preamble, not a second kind.
    let has_calls = obj.contains_key("toolCalls");
    let kinds: Vec<&str> = KIND_KEYS
        .iter()
        .copied()
        .filter(|k| obj.contains_key(*k) && !(has_calls && *k == "text"))
        .collect();
    let kind_key = match kinds.as_slice() {
        [one] => *one,
        [] => {
            return Err(ScriptError::new(
                ptr,
                "expected exactly one kind key: toolCalls, text, structured, truncated, refusal, contentFilter, error or providerTool",
            ));
        }
        [first, second, ..] => {
            return Err(ScriptError::new(
                child(ptr, second),
                format!(
                    "a round has exactly one kind, but this one has both \"{first}\" and \"{second}\""
                ),
            ));
        }
    };

    let kind_ptr = child(ptr, kind_key);
    let kind_value = &obj[kind_key];
    let kind = match kind_key {
        "toolCalls" => RoundKind::ToolCalls {
            calls: parse_calls(kind_value, &kind_ptr)?,
            text: optional_string(obj, ptr, "text")?,
        },
        "text" => RoundKind::Text(string(kind_value, &kind_ptr)?),
        "structured" => RoundKind::Structured(kind_value.clone()),
        "truncated" => {
            let inner = object(
                kind_value,
                &kind_ptr,
                "an object {\"text\"?, \"toolCalls\"?} describing what was emitted before the cut",
            )?;
            only_keys(inner, &kind_ptr, &["text", "toolCalls"])?;
            let calls = match inner.get("toolCalls") {
                Some(calls) => parse_calls(calls, &child(&kind_ptr, "toolCalls"))?,
                None => Vec::new(),
            };
            RoundKind::Truncated {
                text: optional_string(inner, &kind_ptr, "text")?,
                calls,
            }
        }
        "refusal" => RoundKind::Refusal(string(kind_value, &kind_ptr)?),
        "contentFilter" => RoundKind::ContentFilter(string(kind_value, &kind_ptr)?),
        "error" => parse_error(kind_value, &kind_ptr)?,
        // The only kind left is `providerTool`.
        _ => RoundKind::ProviderTool(parse_provider_tool(kind_value, &kind_ptr)?),
    };

    let delay_ms = optional_integer(obj, ptr, "delayMs", 0, MAX_DELAY_MS)?;
    let cut_after_chunks = optional_integer(obj, ptr, "cutAfterChunks", 0, MAX_CUT_AFTER_CHUNKS)?;
    if cut_after_chunks.is_some() && matches!(kind, RoundKind::Error { .. }) {
        return Err(ScriptError::new(
            child(ptr, "cutAfterChunks"),
            "cutAfterChunks cuts an answer's body; an error round has none to cut (use delayMs or a non-error round)",
        ));
    }
    Ok(Round {
        kind,
        delay_ms,
        cut_after_chunks,
    })
}

fn parse_calls(value: &Value, ptr: &str) -> Result<Vec<ToolCall>, ScriptError> {
    let items = value
        .as_array()
        .ok_or_else(|| ScriptError::new(ptr, "expected a non-empty array of tool calls"))?;
    if items.is_empty() {
        return Err(ScriptError::new(ptr, "expected at least one tool call"));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, call)| parse_call(call, &format!("{ptr}/{i}")))
        .collect()
}

fn parse_call(value: &Value, ptr: &str) -> Result<ToolCall, ScriptError> {
    let obj = object(
        value,
        ptr,
        "a tool call {\"name\", \"id\"?, \"arguments\" | \"argumentsText\"}",
    )?;
    only_keys(obj, ptr, &["name", "id", "arguments", "argumentsText"])?;
    let name = non_empty_string(
        required(obj, ptr, "name", "the tool's name (a non-empty string)")?,
        &child(ptr, "name"),
    )?;
    let id = match obj.get("id") {
        Some(id) => Some(non_empty_string(id, &child(ptr, "id"))?),
        None => None,
    };
    let arguments = match (obj.get("arguments"), obj.get("argumentsText")) {
        (Some(value), None) => Arguments::Json(value.clone()),
        (None, Some(text)) => Arguments::Text(string(text, &child(ptr, "argumentsText"))?),
        (Some(_), Some(_)) => {
            return Err(ScriptError::new(
                child(ptr, "argumentsText"),
                "a tool call has either \"arguments\" (a JSON value) or \"argumentsText\" (raw text), not both",
            ));
        }
        (None, None) => {
            return Err(ScriptError::new(
                child(ptr, "arguments"),
                "required: \"arguments\" (any JSON value) or \"argumentsText\" (raw text)",
            ));
        }
    };
    Ok(ToolCall {
        name,
        id,
        arguments,
    })
}

fn parse_error(value: &Value, ptr: &str) -> Result<RoundKind, ScriptError> {
    let obj = object(value, ptr, "an object {\"status\", \"message\"}")?;
    only_keys(obj, ptr, &["status", "message"])?;
    let status_ptr = child(ptr, "status");
    let status_value = required(obj, ptr, "status", "an HTTP status between 400 and 599")?;
    let status = integer_in(
        status_value,
        &status_ptr,
        u64::from(*ERROR_STATUS_RANGE.start()),
        u64::from(*ERROR_STATUS_RANGE.end()),
    )?;
    let status = u16::try_from(status).map_err(|_| {
        ScriptError::new(&status_ptr, "expected an HTTP status between 400 and 599")
    })?;
    let message = string(
        required(obj, ptr, "message", "the error message (a string)")?,
        &child(ptr, "message"),
    )?;
    Ok(RoundKind::Error { status, message })
}

fn parse_provider_tool(value: &Value, ptr: &str) -> Result<ProviderTool, ScriptError> {
    let obj = object(
        value,
        ptr,
        "an object {\"name\", \"input\", \"result\", \"text\"?, \"toolCalls\"?}",
    )?;
    only_keys(obj, ptr, &["name", "input", "result", "text", "toolCalls"])?;
    let name = non_empty_string(
        required(
            obj,
            ptr,
            "name",
            "the server tool's name, e.g. \"web_search\"",
        )?,
        &child(ptr, "name"),
    )?;
    let input = required(obj, ptr, "input", "the tool input (a JSON object)")?;
    if !input.is_object() {
        return Err(ScriptError::new(
            child(ptr, "input"),
            "expected a JSON object (a server_tool_use block's input is an object)",
        ));
    }
    let result = required(
        obj,
        ptr,
        "result",
        "the result block's content (any JSON value)",
    )?;
    Ok(ProviderTool {
        name,
        input: input.clone(),
        result: result.clone(),
        text: optional_string(obj, ptr, "text")?,
        calls: match obj.get("toolCalls") {
            None => Vec::new(),
            Some(v) => parse_calls(v, &child(ptr, "toolCalls"))?,
        },
    })
}

/// Append an object key to a JSON pointer, escaping per RFC 6901.
pub(crate) fn child(ptr: &str, key: &str) -> String {
    format!("{ptr}/{}", key.replace('~', "~0").replace('/', "~1"))
}

fn object<'a>(
    value: &'a Value,
    ptr: &str,
    expected: &str,
) -> Result<&'a Map<String, Value>, ScriptError> {
    value
        .as_object()
        .ok_or_else(|| ScriptError::new(ptr, format!("expected {expected}")))
}

fn only_keys(obj: &Map<String, Value>, ptr: &str, allowed: &[&str]) -> Result<(), ScriptError> {
    match obj.keys().find(|k| !allowed.contains(&k.as_str())) {
        None => Ok(()),
        Some(key) => Err(ScriptError::new(
            child(ptr, key),
            format!(
                "unknown key \"{key}\" (allowed here: {})",
                allowed.join(", ")
            ),
        )),
    }
}

fn required<'a>(
    obj: &'a Map<String, Value>,
    ptr: &str,
    key: &str,
    expected: &str,
) -> Result<&'a Value, ScriptError> {
    obj.get(key)
        .ok_or_else(|| ScriptError::new(child(ptr, key), format!("required: {expected}")))
}

fn string(value: &Value, ptr: &str) -> Result<String, ScriptError> {
    value
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| ScriptError::new(ptr, "expected a string"))
}

fn non_empty_string(value: &Value, ptr: &str) -> Result<String, ScriptError> {
    match value.as_str() {
        Some(s) if !s.is_empty() => Ok(s.to_string()),
        _ => Err(ScriptError::new(ptr, "expected a non-empty string")),
    }
}

fn optional_string(
    obj: &Map<String, Value>,
    ptr: &str,
    key: &str,
) -> Result<Option<String>, ScriptError> {
    obj.get(key)
        .map(|value| string(value, &child(ptr, key)))
        .transpose()
}

fn optional_integer(
    obj: &Map<String, Value>,
    ptr: &str,
    key: &str,
    min: u64,
    max: u64,
) -> Result<Option<u64>, ScriptError> {
    obj.get(key)
        .map(|value| integer_in(value, &child(ptr, key), min, max))
        .transpose()
}

/// An integer in `min..=max`. Accepts `5.0` like JSON Schema's `integer` does, so the
/// validator and the published schema agree on every document.
fn integer_in(value: &Value, ptr: &str, min: u64, max: u64) -> Result<u64, ScriptError> {
    let out_of_range = || ScriptError::new(ptr, format!("expected an integer from {min} to {max}"));
    let number = value.as_number().ok_or_else(out_of_range)?;
    let integer = if let Some(u) = number.as_u64() {
        Some(u)
    } else if number.as_i64().is_some() {
        // Negative integers are simply out of range.
        None
    } else {
        number
            .as_f64()
            .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f <= max as f64)
            .map(|f| f as u64)
    };
    integer
        .filter(|n| (min..=max).contains(n))
        .ok_or_else(out_of_range)
}

/// A JSON Schema (2020-12) for script documents; objects are closed.
///
/// `mock-provider/schemas/script.schema.json` holds the same document (a unit test keeps them
/// equal), so the harness can embed it in its scenario schema.
pub fn script_schema() -> Value {
    let non_empty = json!({"type": "string", "minLength": 1});
    let modifiers = |with_cut: bool| {
        let mut props = Map::new();
        props.insert("delayMs".into(), json!({"$ref": "#/$defs/delayMs"}));
        if with_cut {
            props.insert(
                "cutAfterChunks".into(),
                json!({"$ref": "#/$defs/cutAfterChunks"}),
            );
        }
        props
    };
    let branch = |kind: &str, description: &str, schema: Value, extra: &[(&str, Value)]| {
        let mut props = modifiers(kind != "error");
        props.insert(kind.into(), schema);
        for (key, value) in extra {
            props.insert((*key).into(), value.clone());
        }
        json!({
            "title": kind,
            "description": description,
            "type": "object",
            "additionalProperties": false,
            "required": [kind],
            "properties": props,
        })
    };
    let call_branch = |arguments_key: &str, arguments: Value| {
        json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["name", arguments_key],
            "properties": {
                "name": non_empty,
                "id": non_empty,
                arguments_key: arguments,
            },
        })
    };
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://toolcert.invalid/schemas/mock-provider/script.schema.json",
        "title": "mock-provider script",
        "description": "Scripted answers for one model key: each request naming that model consumes the next round.",
        "type": "object",
        "additionalProperties": false,
        "required": ["model", "rounds"],
        "properties": {
            "model": {
                "description": "The request `model` value this script answers (unique per test run).",
                "type": "string",
                "minLength": 1,
            },
            "rounds": {
                "type": "array",
                "minItems": 1,
                "items": {"$ref": "#/$defs/round"},
            },
        },
        "$defs": {
            "delayMs": {
                "description": "Wait this many milliseconds before answering.",
                "type": "integer",
                "minimum": 0,
                "maximum": MAX_DELAY_MS,
            },
            "cutAfterChunks": {
                "description": "Drop the connection after this many SSE events (streaming) or after a partial body (non-streaming); the answer never terminates cleanly.",
                "type": "integer",
                "minimum": 0,
                "maximum": MAX_CUT_AFTER_CHUNKS,
            },
            "call": {
                "description": "A tool call: `arguments` is any JSON value; `argumentsText` is raw text sent verbatim (may be invalid JSON).",
                "oneOf": [
                    call_branch("arguments", json!({"description": "Any JSON value."})),
                    call_branch("argumentsText", json!({"type": "string"})),
                ],
            },
            "calls": {
                "type": "array",
                "minItems": 1,
                "items": {"$ref": "#/$defs/call"},
            },
            "round": {
                "oneOf": [
                    branch(
                        "toolCalls",
                        "The model calls tools, optionally after preamble `text`.",
                        json!({"$ref": "#/$defs/calls"}),
                        &[("text", json!({"type": "string"}))],
                    ),
                    branch("text", "Plain assistant text.", json!({"type": "string"}), &[]),
                    branch(
                        "structured",
                        "A schema-enforced answer: the value's JSON text is the content.",
                        json!({"description": "Any JSON value."}),
                        &[],
                    ),
                    branch(
                        "truncated",
                        "An emission cut by the token limit.",
                        json!({
                            "type": "object",
                            "additionalProperties": false,
                            "properties": {
                                "text": {"type": "string"},
                                "toolCalls": {"$ref": "#/$defs/calls"},
                            },
                        }),
                        &[],
                    ),
                    branch("refusal", "The model refuses.", json!({"type": "string"}), &[]),
                    branch(
                        "contentFilter",
                        "The provider's content filter stops the answer.",
                        json!({"type": "string"}),
                        &[],
                    ),
                    branch(
                        "error",
                        "A provider-shaped error response with this status.",
                        json!({
                            "type": "object",
                            "additionalProperties": false,
                            "required": ["status", "message"],
                            "properties": {
                                "status": {
                                    "type": "integer",
                                    "minimum": ERROR_STATUS_RANGE.start(),
                                    "maximum": ERROR_STATUS_RANGE.end(),
                                },
                                "message": {"type": "string"},
                            },
                        }),
                        &[],
                    ),
                    branch(
                        "providerTool",
                        "A provider-executed tool (Anthropic server_tool_use and its result block), then optional text and optional host tool calls.",
                        json!({
                            "type": "object",
                            "additionalProperties": false,
                            "required": ["name", "input", "result"],
                            "properties": {
                                "name": non_empty,
                                "input": {"type": "object"},
                                "result": {"description": "Any JSON value."},
                                "text": {"type": "string"},
                                "toolCalls": {
                                    "$ref": "#/$defs/calls",
                                    "description": "Host tools the model calls after the provider's tool ran, in the same answer (stop_reason tool_use).",
                                },
                            },
                        }),
                        &[],
                    ),
                ],
            },
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn err(value: Value) -> ScriptError {
        match Script::from_json(&value) {
            Ok(script) => panic!("expected an error, got {script:?}"),
            Err(e) => e,
        }
    }

    fn ok_round(round: Value) -> Round {
        let script = Script::from_json(&json!({"model": "m", "rounds": [round]}))
            .unwrap_or_else(|e| panic!("expected a valid round: {e}"));
        script.rounds.into_iter().next().expect("one round")
    }

    #[test]
    fn parses_every_kind() {
        let script = Script::from_json(&json!({
            "model": "tc-1",
            "rounds": [
                {"toolCalls": [{"name": "get", "arguments": {"a": 1}}], "text": "pre"},
                {"text": "hi", "delayMs": 5},
                {"structured": {"ok": true}},
                {"truncated": {"text": "cut", "toolCalls": [{"name": "x", "argumentsText": "{\"a\":"}]}},
                {"refusal": "no"},
                {"contentFilter": "filtered"},
                {"error": {"status": 429, "message": "slow down"}, "delayMs": 0},
                {"providerTool": {"name": "web_search", "input": {"query": "q"}, "result": []}, "cutAfterChunks": 3},
            ]
        }))
        .expect("valid");
        let kinds: Vec<&str> = script.rounds.iter().map(|r| r.kind.name()).collect();
        assert_eq!(kinds, KIND_KEYS.to_vec());
        assert_eq!(
            script.rounds[0].kind,
            RoundKind::ToolCalls {
                calls: vec![ToolCall {
                    name: "get".into(),
                    id: None,
                    arguments: Arguments::Json(json!({"a": 1})),
                }],
                text: Some("pre".into()),
            }
        );
        assert_eq!(script.rounds[1].delay_ms, Some(5));
        assert_eq!(script.rounds[7].cut_after_chunks, Some(3));
    }

    #[test]
    fn pointers_name_the_offending_value() {
        let base =
            |round: Value| json!({"model": "m", "rounds": [{"text": "a"}, {"text": "b"}, round]});
        let cases = [
            (
                base(json!({"toolCalls": [{"arguments": {}}]})),
                "/rounds/2/toolCalls/0/name",
            ),
            (
                base(json!({"toolCalls": [{"name": "", "arguments": {}}]})),
                "/rounds/2/toolCalls/0/name",
            ),
            (
                base(json!({"toolCalls": [{"name": 3, "arguments": {}}]})),
                "/rounds/2/toolCalls/0/name",
            ),
            (
                base(json!({"toolCalls": [{"name": "t"}]})),
                "/rounds/2/toolCalls/0/arguments",
            ),
            (
                base(json!({"toolCalls": [{"name": "t", "arguments": 1, "argumentsText": "1"}]})),
                "/rounds/2/toolCalls/0/argumentsText",
            ),
            (
                base(json!({"toolCalls": [{"name": "t", "arguments": 1, "bogus": 1}]})),
                "/rounds/2/toolCalls/0/bogus",
            ),
            (base(json!({"toolCalls": []})), "/rounds/2/toolCalls"),
            (
                base(json!({"toolCalls": [{"name": "t", "id": "", "arguments": 1}]})),
                "/rounds/2/toolCalls/0/id",
            ),
            (base(json!({})), "/rounds/2"),
            (base(json!("text")), "/rounds/2"),
            (
                base(json!({"text": "a", "refusal": "b"})),
                "/rounds/2/refusal",
            ),
            (base(json!({"text": 1})), "/rounds/2/text"),
            (
                base(json!({"toolCalls": [{"name": "t", "arguments": 1}], "text": 5})),
                "/rounds/2/text",
            ),
            (
                base(json!({"text": "a", "delayMs": 30001})),
                "/rounds/2/delayMs",
            ),
            (
                base(json!({"text": "a", "delayMs": -1})),
                "/rounds/2/delayMs",
            ),
            (
                base(json!({"text": "a", "delayMs": 1.5})),
                "/rounds/2/delayMs",
            ),
            (
                base(json!({"text": "a", "cutAfterChunks": "3"})),
                "/rounds/2/cutAfterChunks",
            ),
            (
                base(json!({"text": "a", "weird/key": 1})),
                "/rounds/2/weird~1key",
            ),
            (
                base(json!({"error": {"status": 200, "message": "x"}})),
                "/rounds/2/error/status",
            ),
            (
                base(json!({"error": {"status": 500}})),
                "/rounds/2/error/message",
            ),
            (
                base(json!({"error": {"status": 500, "message": "x"}, "cutAfterChunks": 1})),
                "/rounds/2/cutAfterChunks",
            ),
            (
                base(json!({"truncated": {"text": "a", "more": 1}})),
                "/rounds/2/truncated/more",
            ),
            (
                base(json!({"truncated": {"toolCalls": [{"name": "n"}]}})),
                "/rounds/2/truncated/toolCalls/0/arguments",
            ),
            (
                base(json!({"providerTool": {"name": "web_search", "input": [], "result": 1}})),
                "/rounds/2/providerTool/input",
            ),
            (
                base(json!({"providerTool": {"name": "web_search", "input": {}}})),
                "/rounds/2/providerTool/result",
            ),
            (json!({"model": "", "rounds": [{"text": "a"}]}), "/model"),
            (json!({"rounds": [{"text": "a"}]}), "/model"),
            (json!({"model": "m", "rounds": []}), "/rounds"),
            (json!({"model": "m", "rounds": {}}), "/rounds"),
            (
                json!({"model": "m", "rounds": [{"text": "a"}], "extra": true}),
                "/extra",
            ),
            (json!([]), ""),
        ];
        for (doc, pointer) in cases {
            let e = err(doc.clone());
            assert_eq!(e.pointer, pointer, "for {doc}: {e}");
            assert!(!e.message.is_empty());
        }
    }

    #[test]
    fn display_shows_pointer_and_message() {
        let e = ScriptError::new("/rounds/0", "expected x");
        assert_eq!(e.to_string(), "at \"/rounds/0\": expected x");
    }

    #[test]
    fn whole_number_floats_count_as_integers() {
        let round = ok_round(json!({"text": "a", "delayMs": 10.0}));
        assert_eq!(round.delay_ms, Some(10));
    }

    #[test]
    fn text_beside_tool_calls_is_a_preamble_not_a_second_kind() {
        let round =
            ok_round(json!({"text": "pre", "toolCalls": [{"name": "t", "argumentsText": ""}]}));
        assert!(matches!(round.kind, RoundKind::ToolCalls { text: Some(ref t), .. } if t == "pre"));
    }

    #[test]
    fn serde_uses_the_validator() {
        let parsed: Result<Script, _> =
            serde_json::from_value(json!({"model": "m", "rounds": [{"text": 1}]}));
        let message = parsed.expect_err("invalid").to_string();
        assert!(message.contains("/rounds/0/text"), "{message}");
        let script: Script =
            serde_json::from_value(json!({"model": "m", "rounds": [{"text": "ok"}]}))
                .expect("valid");
        assert_eq!(
            serde_json::to_value(&script).expect("serializes"),
            script.to_json()
        );
    }

    #[test]
    fn validate_catches_code_built_scripts() {
        let mut round = Round::new(RoundKind::Text("a".into()));
        round.delay_ms = Some(MAX_DELAY_MS + 1);
        let script = Script {
            model: "m".into(),
            rounds: vec![round],
        };
        assert_eq!(
            script.validate().expect_err("too long").pointer,
            "/rounds/0/delayMs"
        );
    }

    fn schema_validator() -> jsonschema::Validator {
        jsonschema::validator_for(&script_schema()).expect("the script schema compiles")
    }

    #[test]
    fn schema_file_matches_script_schema() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/schemas/script.schema.json");
        let expected = format!(
            "{}\n",
            serde_json::to_string_pretty(&script_schema()).expect("serializes")
        );
        // MOCK_PROVIDER_WRITE_SCHEMA=1 regenerates the file after an intentional change.
        if std::env::var_os("MOCK_PROVIDER_WRITE_SCHEMA").is_some() {
            std::fs::write(path, &expected).expect("write schema file");
        }
        // Compared as JSON values, so key order (which serde_json features can change) and
        // formatting do not matter.
        let on_disk: Value =
            serde_json::from_str(&std::fs::read_to_string(path).expect("schema file exists"))
                .expect("schema file is JSON");
        assert_eq!(
            on_disk,
            script_schema(),
            "schemas/script.schema.json is stale; rerun with MOCK_PROVIDER_WRITE_SCHEMA=1"
        );
    }

    #[test]
    fn schema_and_validator_agree_on_examples() {
        let validator = schema_validator();
        let valid = [
            json!({"model": "m", "rounds": [{"text": ""}]}),
            json!({"model": "m", "rounds": [{"toolCalls": [{"name": "a", "id": "i", "argumentsText": "{"}], "text": "p", "delayMs": 30000, "cutAfterChunks": 0}]}),
            json!({"model": "m", "rounds": [{"truncated": {}}, {"structured": null}, {"error": {"status": 529, "message": ""}, "delayMs": 1}]}),
            json!({"model": "m", "rounds": [{"providerTool": {"name": "web_search", "input": {}, "result": null, "text": "t"}}]}),
        ];
        for doc in valid {
            assert!(Script::from_json(&doc).is_ok(), "validator rejects {doc}");
            assert!(validator.is_valid(&doc), "schema rejects {doc}");
        }
        let invalid = [
            json!({"model": "m", "rounds": []}),
            json!({"model": "", "rounds": [{"text": "a"}]}),
            json!({"model": "m", "rounds": [{}]}),
            json!({"model": "m", "rounds": [{"text": "a", "refusal": "b"}]}),
            json!({"model": "m", "rounds": [{"toolCalls": []}]}),
            json!({"model": "m", "rounds": [{"toolCalls": [{"name": "a"}]}]}),
            json!({"model": "m", "rounds": [{"toolCalls": [{"name": "a", "arguments": 1, "argumentsText": ""}]}]}),
            json!({"model": "m", "rounds": [{"text": "a", "delayMs": 30001}]}),
            json!({"model": "m", "rounds": [{"text": "a", "cutAfterChunks": -1}]}),
            json!({"model": "m", "rounds": [{"error": {"status": 399, "message": ""}}]}),
            json!({"model": "m", "rounds": [{"error": {"status": 500, "message": ""}, "cutAfterChunks": 1}]}),
            json!({"model": "m", "rounds": [{"providerTool": {"name": "", "input": {}, "result": 1}}]}),
            json!({"model": "m", "rounds": [{"truncated": {"toolCalls": []}}]}),
            json!({"model": "m", "rounds": [{"text": "a"}], "x": 1}),
        ];
        for doc in invalid {
            assert!(Script::from_json(&doc).is_err(), "validator accepts {doc}");
            assert!(!validator.is_valid(&doc), "schema accepts {doc}");
        }
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            "[a-z ]{0,8}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 16, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("[a-z]{1,4}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    fn arb_call() -> impl Strategy<Value = ToolCall> {
        (
            "[a-z_]{1,10}",
            proptest::option::of("[a-z0-9_]{1,10}"),
            prop_oneof![
                arb_json().prop_map(Arguments::Json),
                ".{0,12}".prop_map(Arguments::Text),
            ],
        )
            .prop_map(|(name, id, arguments)| ToolCall {
                name,
                id,
                arguments,
            })
    }

    fn arb_kind() -> impl Strategy<Value = RoundKind> {
        let text = ".{0,16}";
        let calls = prop::collection::vec(arb_call(), 1..4);
        prop_oneof![
            (calls, proptest::option::of(text))
                .prop_map(|(calls, text)| RoundKind::ToolCalls { calls, text }),
            text.prop_map(RoundKind::Text),
            arb_json().prop_map(RoundKind::Structured),
            (
                proptest::option::of(text),
                prop::collection::vec(arb_call(), 0..3)
            )
                .prop_map(|(text, calls)| RoundKind::Truncated { text, calls }),
            text.prop_map(RoundKind::Refusal),
            text.prop_map(RoundKind::ContentFilter),
            (400u16..=599, text).prop_map(|(status, message)| RoundKind::Error { status, message }),
            (
                "[a-z_]{1,10}",
                prop::collection::btree_map("[a-z]{1,4}", arb_json(), 0..3),
                arb_json(),
                proptest::option::of(text)
            )
                .prop_map(|(name, input, result, text)| RoundKind::ProviderTool(
                    ProviderTool {
                        name,
                        input: Value::Object(input.into_iter().collect()),
                        result,
                        text,
                        calls: Vec::new(),
                    }
                )),
        ]
    }

    fn arb_round() -> impl Strategy<Value = Round> {
        (
            arb_kind(),
            proptest::option::of(0..=MAX_DELAY_MS),
            proptest::option::of(0..=MAX_CUT_AFTER_CHUNKS),
        )
            .prop_map(|(kind, delay_ms, cut)| {
                let cut_after_chunks = if matches!(kind, RoundKind::Error { .. }) {
                    None
                } else {
                    cut
                };
                Round {
                    kind,
                    delay_ms,
                    cut_after_chunks,
                }
            })
    }

    fn arb_script() -> impl Strategy<Value = Script> {
        ("[a-z0-9-]{1,16}", prop::collection::vec(arb_round(), 1..6))
            .prop_map(|(model, rounds)| Script { model, rounds })
    }

    proptest! {
        #[test]
        fn valid_scripts_round_trip(script in arb_script()) {
            let doc = script.to_json();
            let parsed = Script::from_json(&doc);
            prop_assert_eq!(parsed.as_ref(), Ok(&script));
            prop_assert_eq!(parsed.map(|s| s.to_json()).ok(), Some(doc));
        }

        #[test]
        fn generated_scripts_satisfy_the_schema(script in arb_script()) {
            let validator = schema_validator();
            prop_assert!(validator.is_valid(&script.to_json()));
        }
    }
}
