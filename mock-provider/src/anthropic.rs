//! Anthropic Messages (`POST /v1/messages`): request checks, answers, errors.

use loopback_http::{HeaderMap, Response};
use serde_json::{Map, Value, json};

use crate::error::ApiError;
use crate::reply::{Reply, error_json, estimate_tokens, fresh_id};
use crate::script::{Arguments, Round, RoundKind, ToolCall};
use crate::shape::{is_tool_name, present, type_name};
use crate::sse::{SseEvent, split_pieces};
use crate::state::RoundContext;

/// Check the headers and body against the Messages request shape.
pub(crate) fn validate(headers: &HeaderMap, body: &Value) -> Result<(), ApiError> {
    // The real API refuses requests without a version before looking at the body.
    let has_version = headers
        .get("anthropic-version")
        .is_some_and(|v| !v.as_bytes().is_empty());
    if !has_version {
        return Err(invalid("anthropic-version", "header is required"));
    }
    let Some(obj) = body.as_object() else {
        return Err(ApiError::invalid(
            None,
            format!(
                "The request body must be a JSON object, but got {} instead.",
                type_name(body)
            ),
        ));
    };
    match present(obj, "model") {
        None => return Err(invalid("model", "Field required")),
        Some(Value::String(model)) if !model.is_empty() => {}
        Some(Value::String(_)) => {
            return Err(invalid("model", "String should have at least 1 character"));
        }
        Some(_) => return Err(invalid("model", "Input should be a valid string")),
    }
    match present(obj, "max_tokens") {
        None => return Err(invalid("max_tokens", "Field required")),
        Some(value) => match value.as_u64() {
            Some(n) if n >= 1 => {}
            Some(_) => {
                return Err(invalid(
                    "max_tokens",
                    "Input should be greater than or equal to 1",
                ));
            }
            None if value.as_i64().is_some() => {
                return Err(invalid(
                    "max_tokens",
                    "Input should be greater than or equal to 1",
                ));
            }
            None => return Err(invalid("max_tokens", "Input should be a valid integer")),
        },
    }
    let messages = match present(obj, "messages") {
        None => return Err(invalid("messages", "Field required")),
        Some(Value::Array(items)) if items.is_empty() => {
            return Err(invalid("messages", "at least one message is required"));
        }
        Some(Value::Array(items)) => items,
        Some(_) => return Err(invalid("messages", "Input should be a valid list")),
    };
    for (i, message) in messages.iter().enumerate() {
        validate_message(i, message, i + 1 == messages.len())?;
    }
    check_tool_results(messages)?;
    if let Some(system) = present(obj, "system") {
        validate_system(system)?;
    }
    if let Some(tools) = present(obj, "tools") {
        validate_tools(tools)?;
    }
    if let Some(choice) = present(obj, "tool_choice") {
        validate_tool_choice(choice)?;
    }
    if let Some(stream) = present(obj, "stream")
        && !stream.is_boolean()
    {
        return Err(invalid("stream", "Input should be a valid boolean"));
    }
    Ok(())
}

fn validate_message(i: usize, message: &Value, last: bool) -> Result<(), ApiError> {
    let at = format!("messages.{i}");
    let Some(obj) = message.as_object() else {
        return Err(invalid(&at, "Input should be a valid dictionary or object"));
    };
    let role = match present(obj, "role") {
        None => return Err(invalid(&format!("{at}.role"), "Field required")),
        Some(Value::String(role)) if role == "user" || role == "assistant" => role.as_str(),
        Some(_) => {
            return Err(invalid(
                &format!("{at}.role"),
                "Input should be 'user' or 'assistant'",
            ));
        }
    };
    let content_at = format!("{at}.content");
    let empty = match present(obj, "content") {
        None => return Err(invalid(&content_at, "Field required")),
        Some(Value::String(text)) => text.is_empty(),
        Some(Value::Array(blocks)) => {
            for (j, block) in blocks.iter().enumerate() {
                validate_block(&format!("{content_at}.{j}"), block, Some(role))?;
            }
            blocks.is_empty()
        }
        Some(_) => {
            return Err(invalid(
                &content_at,
                "Input should be a valid string or a list of content blocks",
            ));
        }
    };
    if empty && !(last && role == "assistant") {
        return Err(invalid(
            &at,
            "all messages must have non-empty content except for the optional final assistant message",
        ));
    }
    Ok(())
}

/// Check one content block. `role` is the message's role, or `None` for blocks nested in a
/// `tool_result`, where only content-ish blocks appear.
fn validate_block(at: &str, block: &Value, role: Option<&str>) -> Result<(), ApiError> {
    let Some(obj) = block.as_object() else {
        return Err(invalid(at, "Input should be a valid dictionary or object"));
    };
    let block_type = match present(obj, "type") {
        None => return Err(invalid(&format!("{at}.type"), "Field required")),
        Some(Value::String(t)) if !t.is_empty() => t.as_str(),
        Some(_) => {
            return Err(invalid(
                &format!("{at}.type"),
                "Input should be a valid string",
            ));
        }
    };
    let only_in = |allowed: &str| -> Result<(), ApiError> {
        match role {
            Some(role) if role != allowed => Err(invalid(
                at,
                &format!("`{block_type}` blocks can only be sent in `{allowed}` messages"),
            )),
            _ => Ok(()),
        }
    };
    match block_type {
        "text" => {
            let text = required_string(obj, at, "text")?;
            if text.is_empty() {
                return Err(invalid(
                    &format!("{at}.text"),
                    "text content blocks must be non-empty",
                ));
            }
        }
        "image" | "document" => {
            required_object(obj, at, "source")?;
        }
        "tool_use" | "server_tool_use" => {
            only_in("assistant")?;
            required_string(obj, at, "id")?;
            required_string(obj, at, "name")?;
            required_object(obj, at, "input")?;
        }
        "tool_result" => {
            only_in("user")?;
            required_string(obj, at, "tool_use_id")?;
            match present(obj, "content") {
                None | Some(Value::String(_)) => {}
                Some(Value::Array(blocks)) => {
                    for (k, nested) in blocks.iter().enumerate() {
                        validate_block(&format!("{at}.content.{k}"), nested, None)?;
                    }
                }
                Some(_) => {
                    return Err(invalid(
                        &format!("{at}.content"),
                        "Input should be a valid string or a list of content blocks",
                    ));
                }
            }
            if let Some(flag) = present(obj, "is_error")
                && !flag.is_boolean()
            {
                return Err(invalid(
                    &format!("{at}.is_error"),
                    "Input should be a valid boolean",
                ));
            }
        }
        "thinking" => {
            only_in("assistant")?;
            required_string(obj, at, "thinking")?;
            required_string(obj, at, "signature")?;
        }
        "redacted_thinking" => {
            only_in("assistant")?;
            required_string(obj, at, "data")?;
        }
        // Results of provider-executed tools (web_search_tool_result, web_fetch_tool_result,
        // code_execution_tool_result, ...) echo the provider's own blocks back.
        other if other.ends_with("_tool_result") => {
            only_in("assistant")?;
            required_string(obj, at, "tool_use_id")?;
            if present(obj, "content").is_none() {
                return Err(invalid(&format!("{at}.content"), "Field required"));
            }
        }
        // Newer block types (search_result, container_upload, mcp_*) pass unchecked, so a
        // host using them is not failed on the mock's account.
        _ => {}
    }
    Ok(())
}

/// Every `tool_use` in an assistant message needs a `tool_result` in the very next message,
/// and every `tool_result` must answer a `tool_use` of the message before: the real API
/// rejects conversations that break either rule, which is how hosts that drop tool results
/// get caught.
fn check_tool_results(messages: &[Value]) -> Result<(), ApiError> {
    let ids_of = |message: &Value, block_type: &str, key: &str| -> Vec<String> {
        message
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some(block_type))
            .filter_map(|b| b.get(key).and_then(Value::as_str).map(str::to_string))
            .collect()
    };
    for (i, message) in messages.iter().enumerate() {
        if role_of(message) == Some("user") {
            let previous_uses = match i.checked_sub(1).and_then(|p| messages.get(p)) {
                Some(prev) if role_of(prev) == Some("assistant") => ids_of(prev, "tool_use", "id"),
                _ => Vec::new(),
            };
            let blocks = message.get("content").and_then(Value::as_array);
            for (j, block) in blocks.into_iter().flatten().enumerate() {
                if block.get("type").and_then(Value::as_str) != Some("tool_result") {
                    continue;
                }
                let id = block
                    .get("tool_use_id")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if !previous_uses.iter().any(|u| u == id) {
                    return Err(invalid(
                        &format!("messages.{i}.content.{j}"),
                        &format!(
                            "unexpected `tool_use_id` found in `tool_result` blocks: {id}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
                        ),
                    ));
                }
            }
        }
        if role_of(message) == Some("assistant") {
            let uses = ids_of(message, "tool_use", "id");
            if uses.is_empty() {
                continue;
            }
            let results = match messages.get(i + 1) {
                Some(next) if role_of(next) == Some("user") => {
                    ids_of(next, "tool_result", "tool_use_id")
                }
                _ => Vec::new(),
            };
            let missing: Vec<&str> = uses
                .iter()
                .filter(|u| !results.contains(u))
                .map(String::as_str)
                .collect();
            if !missing.is_empty() {
                let at = if i + 1 < messages.len() { i + 1 } else { i };
                return Err(invalid(
                    &format!("messages.{at}"),
                    &format!(
                        "`tool_use` ids were found without `tool_result` blocks immediately after: {}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
                        missing.join(", ")
                    ),
                ));
            }
        }
    }
    Ok(())
}

fn role_of(message: &Value) -> Option<&str> {
    message.get("role").and_then(Value::as_str)
}

fn validate_system(system: &Value) -> Result<(), ApiError> {
    match system {
        Value::String(_) => Ok(()),
        Value::Array(blocks) => {
            for (i, block) in blocks.iter().enumerate() {
                let at = format!("system.{i}");
                let Some(obj) = block.as_object() else {
                    return Err(invalid(&at, "Input should be a valid dictionary or object"));
                };
                match present(obj, "type") {
                    Some(Value::String(t)) if t == "text" => {}
                    _ => {
                        return Err(invalid(&format!("{at}.type"), "Input should be 'text'"));
                    }
                }
                required_string(obj, &at, "text")?;
            }
            Ok(())
        }
        _ => Err(invalid(
            "system",
            "Input should be a valid string or a list of text blocks",
        )),
    }
}

fn validate_tools(tools: &Value) -> Result<(), ApiError> {
    let Some(tools) = tools.as_array() else {
        return Err(invalid("tools", "Input should be a valid list"));
    };
    for (i, tool) in tools.iter().enumerate() {
        let at = format!("tools.{i}");
        let Some(obj) = tool.as_object() else {
            return Err(invalid(&at, "Input should be a valid dictionary or object"));
        };
        let custom = match present(obj, "type") {
            None => true,
            Some(Value::String(t)) => t == "custom",
            Some(_) => {
                return Err(invalid(
                    &format!("{at}.type"),
                    "Input should be a valid string",
                ));
            }
        };
        let name = required_string(obj, &at, "name")?;
        if custom {
            if !is_tool_name(name, 128) {
                return Err(invalid(
                    &format!("{at}.name"),
                    "String should match pattern '^[a-zA-Z0-9_-]{1,128}$'",
                ));
            }
            required_object(obj, &at, "input_schema")?;
            if let Some(description) = present(obj, "description")
                && !description.is_string()
            {
                return Err(invalid(
                    &format!("{at}.description"),
                    "Input should be a valid string",
                ));
            }
        }
        // Server tools (web_search_20250305, ...) carry their own options; the versioned
        // `type` and the `name` are what every one of them has.
    }
    Ok(())
}

fn validate_tool_choice(choice: &Value) -> Result<(), ApiError> {
    let Some(obj) = choice.as_object() else {
        return Err(invalid(
            "tool_choice",
            "Input should be a valid dictionary or object",
        ));
    };
    match present(obj, "type") {
        Some(Value::String(t)) if t == "tool" => {
            required_string(obj, "tool_choice", "name")?;
            Ok(())
        }
        Some(Value::String(t)) if ["auto", "any", "none"].contains(&t.as_str()) => Ok(()),
        Some(_) => Err(invalid(
            "tool_choice.type",
            "Input should be 'auto', 'any', 'tool' or 'none'",
        )),
        None => Err(invalid("tool_choice.type", "Field required")),
    }
}

fn required_string<'a>(
    obj: &'a Map<String, Value>,
    at: &str,
    key: &str,
) -> Result<&'a str, ApiError> {
    match present(obj, key) {
        None => Err(invalid(&format!("{at}.{key}"), "Field required")),
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(invalid(
            &format!("{at}.{key}"),
            "Input should be a valid string",
        )),
    }
}

fn required_object(obj: &Map<String, Value>, at: &str, key: &str) -> Result<(), ApiError> {
    match present(obj, key) {
        None => Err(invalid(&format!("{at}.{key}"), "Field required")),
        Some(Value::Object(_)) => Ok(()),
        Some(_) => Err(invalid(
            &format!("{at}.{key}"),
            "Input should be a valid dictionary or object",
        )),
    }
}

/// An invalid-request error in the API's `<field path>: <what is wrong>` style.
fn invalid(param: &str, message: &str) -> ApiError {
    ApiError::invalid(Some(param), format!("{param}: {message}"))
}

/// The provider's error body for `error`.
pub(crate) fn error_response(error: &ApiError) -> Response {
    let kind = match error.status {
        401 => "authentication_error",
        402 => "billing_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        504 => "timeout_error",
        529 => "overloaded_error",
        500..=599 => "api_error",
        _ => "invalid_request_error",
    };
    error_json(
        error.status,
        json!({"type": "error", "error": {"type": kind, "message": error.message}}),
    )
}

/// One content block of an answer.
enum Block<'a> {
    Text(String),
    /// `tool_use` or `server_tool_use`.
    Use {
        block_type: &'static str,
        id: String,
        name: &'a str,
        arguments: Arguments,
    },
    /// A provider-executed tool's result block, sent whole.
    ToolResult(Value),
}

fn use_blocks<'a>(calls: &'a [ToolCall], first_id: usize) -> impl Iterator<Item = Block<'a>> {
    calls.iter().enumerate().map(move |(k, call)| Block::Use {
        block_type: "tool_use",
        id: call
            .id
            .clone()
            .unwrap_or_else(|| format!("toolu_{}", first_id + k)),
        name: &call.name,
        arguments: call.arguments.clone(),
    })
}

/// Render `round` as a Messages answer.
pub(crate) fn render(
    round: &Round,
    context: RoundContext<'_>,
    model: &str,
    stream: bool,
) -> Result<Reply, ApiError> {
    let text_block = |text: &Option<String>| text.iter().map(|t| Block::Text(t.clone())).collect();
    let (blocks, stop_reason): (Vec<Block<'_>>, &str) = match &round.kind {
        RoundKind::ToolCalls { calls, text } => {
            let mut blocks: Vec<Block<'_>> = text_block(text);
            blocks.extend(use_blocks(calls, context.first_id));
            (blocks, "tool_use")
        }
        RoundKind::Text(text) => (vec![Block::Text(text.clone())], "end_turn"),
        RoundKind::Structured(value) => (vec![Block::Text(value.to_string())], "end_turn"),
        RoundKind::Truncated { text, calls } => {
            let mut blocks: Vec<Block<'_>> = text_block(text);
            blocks.extend(use_blocks(calls, context.first_id));
            (blocks, "max_tokens")
        }
        // Messages reports both a refusal and a safety stop as stop_reason "refusal", with
        // whatever the model said as text.
        RoundKind::Refusal(text) | RoundKind::ContentFilter(text) => {
            (vec![Block::Text(text.clone())], "refusal")
        }
        RoundKind::Error { status, message } => {
            return Err(ApiError::status(*status, message.clone()));
        }
        RoundKind::ProviderTool(tool) => {
            let id = format!("srvtoolu_{}", context.first_id);
            let mut blocks = vec![
                Block::Use {
                    block_type: "server_tool_use",
                    id: id.clone(),
                    name: &tool.name,
                    arguments: Arguments::Json(tool.input.clone()),
                },
                Block::ToolResult(json!({
                    "type": format!("{}_tool_result", tool.name),
                    "tool_use_id": id,
                    "content": tool.result,
                })),
            ];
            blocks.extend(tool.text.iter().map(|t| Block::Text(t.clone())));
            if tool.calls.is_empty() {
                (blocks, "end_turn")
            } else {
                // The model goes on to call host tools in the same answer.
                blocks.extend(use_blocks(&tool.calls, context.first_id + 1));
                (blocks, "tool_use")
            }
        }
    };

    let input_tokens = estimate_tokens(context.request.to_string().len());
    let emitted: usize = blocks
        .iter()
        .map(|block| match block {
            Block::Text(text) => text.len(),
            Block::Use {
                name, arguments, ..
            } => name.len() + arguments.to_text().len(),
            Block::ToolResult(value) => value.to_string().len(),
        })
        .sum();
    let output_tokens = estimate_tokens(emitted);
    let id = format!("msg_{}", fresh_id());

    if !stream {
        let content = blocks
            .iter()
            .enumerate()
            .map(|(k, block)| block_json(block, context.index, k))
            .collect::<Result<Vec<_>, _>>()?;
        return Ok(Reply::Json {
            body: json!({
                "id": id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": content,
                "stop_reason": stop_reason,
                "stop_sequence": null,
                "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
            }),
            cut: round.cut_after_chunks.is_some(),
        });
    }

    let mut events = vec![
        SseEvent::named(
            "message_start",
            &json!({
                "type": "message_start",
                "message": {
                    "id": id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": null,
                    "stop_sequence": null,
                    "usage": {"input_tokens": input_tokens, "output_tokens": 1},
                },
            }),
        ),
        // The real API sends pings; hosts must ignore event types they do not use.
        SseEvent::named("ping", &json!({"type": "ping"})),
    ];
    for (index, block) in blocks.iter().enumerate() {
        let (start, deltas): (Value, Vec<Value>) = match block {
            Block::Text(text) => (
                json!({"type": "text", "text": ""}),
                split_pieces(text)
                    .into_iter()
                    .map(|piece| json!({"type": "text_delta", "text": piece}))
                    .collect(),
            ),
            Block::Use {
                block_type,
                id,
                name,
                arguments,
            } => {
                // Raw `argumentsText` goes out verbatim, valid JSON or not: that is how a
                // streamed tool call with broken arguments reaches a host.
                let partial = arguments.to_text();
                (
                    json!({"type": block_type, "id": id, "name": name, "input": {}}),
                    split_pieces(&partial)
                        .into_iter()
                        .map(|piece| json!({"type": "input_json_delta", "partial_json": piece}))
                        .collect(),
                )
            }
            Block::ToolResult(value) => (value.clone(), Vec::new()),
        };
        events.push(SseEvent::named(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": start}),
        ));
        events.extend(deltas.into_iter().map(|delta| {
            SseEvent::named(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": index, "delta": delta}),
            )
        }));
        events.push(SseEvent::named(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        ));
    }
    events.push(SseEvent::named(
        "message_delta",
        &json!({
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": null},
            "usage": {"output_tokens": output_tokens},
        }),
    ));
    events.push(SseEvent::named(
        "message_stop",
        &json!({"type": "message_stop"}),
    ));
    Ok(Reply::Events {
        events,
        cut: round.cut_after_chunks,
    })
}

/// A block as it appears in a non-streamed answer.
fn block_json(block: &Block<'_>, round: usize, position: usize) -> Result<Value, ApiError> {
    Ok(match block {
        Block::Text(text) => json!({"type": "text", "text": text}),
        Block::Use {
            block_type,
            id,
            name,
            arguments,
        } => json!({
            "type": block_type,
            "id": id,
            "name": name,
            "input": tool_input(arguments, round, position, name)?,
        }),
        Block::ToolResult(value) => value.clone(),
    })
}

/// A non-streamed `tool_use` carries its input as a JSON value, so `argumentsText` must be
/// empty (sent as `{}`, what the API reports for a call without arguments) or parse as
/// JSON. Invalid JSON has no faithful non-streaming form, so it is a script error (500
/// `api_error`) rather than silently becoming some other value.
fn tool_input(
    arguments: &Arguments,
    round: usize,
    position: usize,
    name: &str,
) -> Result<Value, ApiError> {
    match arguments {
        Arguments::Json(value) => Ok(value.clone()),
        Arguments::Text(text) if text.is_empty() => Ok(json!({})),
        Arguments::Text(text) => serde_json::from_str(text).map_err(|e| {
            ApiError::status(
                500,
                format!(
                    "mock-provider: round {round}, content block {position} (tool `{name}`): argumentsText is not valid JSON ({e}); a non-streaming Anthropic tool_use block carries `input` as JSON, so the script cannot express invalid arguments here (request with \"stream\": true to receive them verbatim as input_json_delta pieces)"
                ),
            )
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loopback_http::HeaderValue;

    fn versioned() -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert("anthropic-version", HeaderValue::from_static("2023-06-01"));
        headers
    }

    fn param_of(body: Value) -> Option<String> {
        validate(&versioned(), &body).expect_err("invalid").param
    }

    #[test]
    fn accepts_a_tool_loop_conversation() {
        let body = json!({
            "model": "m",
            "max_tokens": 1024,
            "system": [{"type": "text", "text": "be brief"}],
            "messages": [
                {"role": "user", "content": "weather?"},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "checking"},
                    {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "cold"}], "is_error": false},
                ]},
                {"role": "assistant", "content": [
                    {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "q"}},
                    {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
                    {"type": "text", "text": "found"},
                ]},
                {"role": "user", "content": "thanks"},
                {"role": "assistant", "content": ""},
            ],
            "tools": [
                {"name": "get_weather", "input_schema": {"type": "object"}},
                {"type": "web_search_20250305", "name": "web_search", "max_uses": 3},
            ],
            "tool_choice": {"type": "auto"},
            "stream": true,
        });
        assert_eq!(validate(&versioned(), &body), Ok(()));
    }

    #[test]
    fn requires_the_version_header() {
        let body =
            json!({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "hi"}]});
        let e = validate(&HeaderMap::new(), &body).expect_err("no version");
        assert_eq!(e.param.as_deref(), Some("anthropic-version"));
        assert_eq!(e.message, "anthropic-version: header is required");
    }

    #[test]
    fn names_the_field_at_fault() {
        let msgs = json!([{"role": "user", "content": "hi"}]);
        assert_eq!(
            param_of(json!({"model": "m", "messages": msgs})).as_deref(),
            Some("max_tokens")
        );
        assert_eq!(
            param_of(json!({"model": "m", "max_tokens": 0, "messages": msgs})).as_deref(),
            Some("max_tokens")
        );
        assert_eq!(
            param_of(json!({"model": "m", "max_tokens": "5", "messages": msgs})).as_deref(),
            Some("max_tokens")
        );
        assert_eq!(
            param_of(json!({"max_tokens": 5, "messages": msgs})).as_deref(),
            Some("model")
        );
        assert_eq!(
            param_of(json!({"model": "m", "max_tokens": 5, "messages": []})).as_deref(),
            Some("messages")
        );
        assert_eq!(
            param_of(json!({"model": "m", "max_tokens": 5, "messages": [{"role": "system", "content": "x"}]})).as_deref(),
            Some("messages.0.role")
        );
        assert_eq!(
            param_of(json!({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "tool_result"}]}]})).as_deref(),
            Some("messages.0.content.0.tool_use_id")
        );
        assert_eq!(
            param_of(json!({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "tool_use", "id": "a", "name": "b", "input": {}}]}]})).as_deref(),
            Some("messages.0.content.0")
        );
        assert_eq!(
            param_of(
                json!({"model": "m", "max_tokens": 5, "messages": msgs, "tools": [{"name": "t"}]})
            )
            .as_deref(),
            Some("tools.0.input_schema")
        );
        assert_eq!(
            param_of(json!({"model": "m", "max_tokens": 5, "messages": msgs, "tool_choice": {"type": "tool"}})).as_deref(),
            Some("tool_choice.name")
        );
        assert_eq!(
            param_of(json!({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": ""}]})).as_deref(),
            Some("messages.0")
        );
    }

    #[test]
    fn tool_results_must_follow_their_tool_use() {
        let body = |messages: Value| json!({"model": "m", "max_tokens": 5, "messages": messages});
        let lost = body(json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}]},
            {"role": "user", "content": "what happened?"},
        ]));
        let e = validate(&versioned(), &lost).expect_err("result missing");
        assert_eq!(e.param.as_deref(), Some("messages.2"));
        assert!(e.message.contains("toolu_1"), "{}", e.message);

        let stray = body(json!([
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_9", "content": "x"}]},
        ]));
        assert_eq!(
            validate(&versioned(), &stray)
                .expect_err("stray")
                .param
                .as_deref(),
            Some("messages.0.content.0")
        );
    }

    #[test]
    fn invalid_arguments_text_cannot_be_sent_unstreamed() {
        let broken = Arguments::Text("{\"a\":".into());
        let e = tool_input(&broken, 2, 0, "f").expect_err("not JSON");
        assert_eq!(e.status, 500);
        assert_eq!(
            tool_input(&Arguments::Text(String::new()), 0, 0, "f"),
            Ok(json!({}))
        );
        assert_eq!(
            tool_input(&Arguments::Text("[1]".into()), 0, 0, "f"),
            Ok(json!([1]))
        );
    }
}
