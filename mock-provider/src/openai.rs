//! OpenAI Chat Completions (`POST /v1/chat/completions`): request checks, answers, errors.

use loopback_http::Response;
use serde_json::{Map, Value, json};

use crate::error::ApiError;
use crate::reply::{Reply, error_json, estimate_tokens, fresh_id, unix_now};
use crate::script::{Round, RoundKind, ToolCall};
use crate::shape::{is_tool_name, present, type_name};
use crate::sse::{SseEvent, split_pieces};
use crate::state::RoundContext;

/// An optional field: its key, the type the API expects (for messages), and the test.
type FieldCheck = (&'static str, &'static str, fn(&Value) -> bool);

const ROLES: [&str; 5] = ["system", "developer", "user", "assistant", "tool"];

/// Check a request body against the Chat Completions request shape.
pub(crate) fn validate(body: &Value) -> Result<(), ApiError> {
    let Some(obj) = body.as_object() else {
        return Err(ApiError::invalid(
            None,
            format!(
                "Invalid request body: expected a JSON object, but got {} instead.",
                type_name(body)
            ),
        ));
    };
    match present(obj, "model") {
        None => return Err(missing("model")),
        Some(Value::String(model)) if !model.is_empty() => {}
        Some(other) => return Err(wrong_type("model", "a non-empty string", other)),
    }
    let messages = match present(obj, "messages") {
        None => return Err(missing("messages")),
        Some(Value::Array(items)) if items.is_empty() => return Err(empty_array("messages")),
        Some(Value::Array(items)) => items,
        Some(other) => return Err(wrong_type("messages", "an array of objects", other)),
    };
    for (i, message) in messages.iter().enumerate() {
        validate_message(i, message)?;
    }
    check_tool_responses(messages)?;
    if let Some(tools) = present(obj, "tools") {
        validate_tools(tools)?;
    }
    if let Some(choice) = present(obj, "tool_choice") {
        validate_tool_choice(choice)?;
    }
    if let Some(stream) = present(obj, "stream")
        && !stream.is_boolean()
    {
        return Err(wrong_type("stream", "a boolean", stream));
    }
    if let Some(options) = present(obj, "stream_options") {
        if !options.is_object() {
            return Err(wrong_type("stream_options", "an object", options));
        }
        if present(obj, "stream") != Some(&Value::Bool(true)) {
            return Err(ApiError::invalid(
                Some("stream_options"),
                "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
            ));
        }
    }
    if let Some(format) = present(obj, "response_format") {
        validate_response_format(format)?;
    }
    for key in ["max_tokens", "max_completion_tokens"] {
        if let Some(value) = present(obj, key) {
            match value.as_u64() {
                Some(0) => {
                    return Err(ApiError::invalid(
                        Some(key),
                        format!(
                            "Invalid '{key}': integer below minimum value. Expected a value >= 1, but got 0 instead."
                        ),
                    ));
                }
                Some(_) => {}
                None if value.as_i64().is_some() => {
                    return Err(ApiError::invalid(
                        Some(key),
                        format!(
                            "Invalid '{key}': integer below minimum value. Expected a value >= 1, but got {value} instead."
                        ),
                    ));
                }
                None => return Err(wrong_type(key, "an integer", value)),
            }
        }
    }
    Ok(())
}

fn validate_message(i: usize, message: &Value) -> Result<(), ApiError> {
    let at = format!("messages[{i}]");
    let Some(obj) = message.as_object() else {
        return Err(wrong_type(&at, "an object", message));
    };
    let role = match present(obj, "role") {
        None => return Err(missing(&format!("{at}.role"))),
        Some(Value::String(role)) => role.as_str(),
        Some(other) => return Err(wrong_type(&format!("{at}.role"), "a string", other)),
    };
    if !ROLES.contains(&role) {
        return Err(ApiError::invalid(
            Some(&format!("{at}.role")),
            format!(
                "Invalid value: '{role}'. Supported values are: 'system', 'developer', 'user', 'assistant', and 'tool'."
            ),
        ));
    }
    let content = present(obj, "content");
    let tool_calls = present(obj, "tool_calls");
    let needs_content = match role {
        // An assistant turn may consist of tool calls (or a refusal) alone.
        "assistant" => tool_calls.is_none() && present(obj, "refusal").is_none(),
        _ => true,
    };
    match content {
        None if needs_content => return Err(missing(&format!("{at}.content"))),
        None => {}
        Some(content) => validate_content(&format!("{at}.content"), content)?,
    }
    if let Some(calls) = tool_calls {
        if role != "assistant" {
            return Err(ApiError::invalid(
                Some(&format!("{at}.tool_calls")),
                format!(
                    "Invalid parameter: only messages with role 'assistant' can have 'tool_calls' ('{at}' has role '{role}')."
                ),
            ));
        }
        validate_message_tool_calls(&format!("{at}.tool_calls"), calls)?;
    }
    match (role, present(obj, "tool_call_id")) {
        ("tool", None) => return Err(missing(&format!("{at}.tool_call_id"))),
        (_, Some(id)) if !id.is_string() => {
            return Err(wrong_type(&format!("{at}.tool_call_id"), "a string", id));
        }
        _ => {}
    }
    if let Some(name) = present(obj, "name")
        && !name.is_string()
    {
        return Err(wrong_type(&format!("{at}.name"), "a string", name));
    }
    Ok(())
}

fn validate_content(at: &str, content: &Value) -> Result<(), ApiError> {
    let parts = match content {
        Value::String(_) => return Ok(()),
        Value::Array(parts) if parts.is_empty() => return Err(empty_array(at)),
        Value::Array(parts) => parts,
        other => {
            return Err(wrong_type(at, "one of a string or array of objects", other));
        }
    };
    for (j, part) in parts.iter().enumerate() {
        let part_at = format!("{at}[{j}]");
        let Some(obj) = part.as_object() else {
            return Err(wrong_type(&part_at, "an object", part));
        };
        let part_type = match present(obj, "type") {
            None => return Err(missing(&format!("{part_at}.type"))),
            Some(Value::String(t)) => t.as_str(),
            Some(other) => return Err(wrong_type(&format!("{part_at}.type"), "a string", other)),
        };
        // Only the common part types are checked field by field; others (audio, files)
        // pass so hosts using them are not failed on the mock's account.
        let (field, expected_string) = match part_type {
            "text" => ("text", true),
            "refusal" => ("refusal", true),
            "image_url" => ("image_url", false),
            _ => continue,
        };
        match present(obj, field) {
            None => return Err(missing(&format!("{part_at}.{field}"))),
            Some(Value::String(_)) if expected_string => {}
            Some(Value::Object(_)) if !expected_string => {}
            Some(other) => {
                let expected = if expected_string {
                    "a string"
                } else {
                    "an object"
                };
                return Err(wrong_type(&format!("{part_at}.{field}"), expected, other));
            }
        }
    }
    Ok(())
}

fn validate_message_tool_calls(at: &str, calls: &Value) -> Result<(), ApiError> {
    let Some(calls) = calls.as_array() else {
        return Err(wrong_type(at, "an array of objects", calls));
    };
    for (k, call) in calls.iter().enumerate() {
        let call_at = format!("{at}[{k}]");
        let Some(obj) = call.as_object() else {
            return Err(wrong_type(&call_at, "an object", call));
        };
        required_string(obj, &call_at, "id")?;
        match present(obj, "type") {
            None => return Err(missing(&format!("{call_at}.type"))),
            Some(Value::String(t)) if t == "function" => {}
            Some(other) => {
                return Err(ApiError::invalid(
                    Some(&format!("{call_at}.type")),
                    format!("Invalid value: {other}. Supported values are: 'function'."),
                ));
            }
        }
        let function_at = format!("{call_at}.function");
        let function = match present(obj, "function") {
            None => return Err(missing(&function_at)),
            Some(Value::Object(function)) => function,
            Some(other) => return Err(wrong_type(&function_at, "an object", other)),
        };
        required_string(function, &function_at, "name")?;
        // The arguments of a previous call are sent back as the JSON *text* the model
        // produced; hosts that send an object here are rejected by the real API too.
        required_string(function, &function_at, "arguments")?;
    }
    Ok(())
}

/// Every assistant `tool_calls` message must be answered by one `tool` message per call id
/// before the next non-tool message, and every `tool` message must answer such a call:
/// the real API rejects conversations that break either rule, and a host that loses a tool
/// result is exactly what a conformance test wants to see.
fn check_tool_responses(messages: &[Value]) -> Result<(), ApiError> {
    // (index of the assistant message, call ids still waiting for a tool message)
    let mut waiting: Option<(usize, Vec<String>)> = None;
    let unanswered = |at: usize, ids: &[String]| {
        ApiError::invalid(
            Some(&format!("messages.[{at}].role")),
            format!(
                "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {}",
                ids.join(", ")
            ),
        )
    };
    for (i, message) in messages.iter().enumerate() {
        let role = message
            .get("role")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if role == "tool" {
            let id = message
                .get("tool_call_id")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let answered = waiting
                .as_mut()
                .and_then(|(_, ids)| ids.iter().position(|w| w == id).map(|p| ids.remove(p)));
            if answered.is_none() {
                return Err(ApiError::invalid(
                    Some(&format!("messages.[{i}].role")),
                    format!(
                        "Invalid parameter: messages with role 'tool' must be a response to a preceding message with 'tool_calls' (tool_call_id '{id}' answers no pending call)."
                    ),
                ));
            }
            continue;
        }
        if let Some((at, ids)) = waiting.take()
            && !ids.is_empty()
        {
            return Err(unanswered(at, &ids));
        }
        if role == "assistant"
            && let Some(calls) = message.get("tool_calls").and_then(Value::as_array)
            && !calls.is_empty()
        {
            let ids = calls
                .iter()
                .filter_map(|c| c.get("id").and_then(Value::as_str))
                .map(str::to_string)
                .collect();
            waiting = Some((i, ids));
        }
    }
    match waiting {
        Some((at, ids)) if !ids.is_empty() => Err(unanswered(at, &ids)),
        _ => Ok(()),
    }
}

fn validate_tools(tools: &Value) -> Result<(), ApiError> {
    let Some(tools) = tools.as_array() else {
        return Err(wrong_type("tools", "an array of objects", tools));
    };
    for (i, tool) in tools.iter().enumerate() {
        let at = format!("tools[{i}]");
        let Some(obj) = tool.as_object() else {
            return Err(wrong_type(&at, "an object", tool));
        };
        match present(obj, "type") {
            None => return Err(missing(&format!("{at}.type"))),
            Some(Value::String(t)) if t == "function" => {}
            Some(other) => {
                return Err(ApiError::invalid(
                    Some(&format!("{at}.type")),
                    format!("Invalid value: {other}. Supported values are: 'function'."),
                ));
            }
        }
        let function_at = format!("{at}.function");
        let function = match present(obj, "function") {
            None => return Err(missing(&function_at)),
            Some(Value::Object(function)) => function,
            Some(other) => return Err(wrong_type(&function_at, "an object", other)),
        };
        let name = required_string(function, &function_at, "name")?;
        if !is_tool_name(name, 64) {
            return Err(ApiError::invalid(
                Some(&format!("{function_at}.name")),
                format!(
                    "Invalid '{function_at}.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]{{1,64}}$' (got '{name}')."
                ),
            ));
        }
        let optional: [FieldCheck; 3] = [
            ("description", "a string", Value::is_string),
            ("parameters", "an object", Value::is_object),
            ("strict", "a boolean", Value::is_boolean),
        ];
        for (key, expected, fits) in optional {
            if let Some(value) = present(function, key)
                && !fits(value)
            {
                return Err(wrong_type(&format!("{function_at}.{key}"), expected, value));
            }
        }
    }
    Ok(())
}

fn validate_tool_choice(choice: &Value) -> Result<(), ApiError> {
    match choice {
        Value::String(mode) if ["none", "auto", "required"].contains(&mode.as_str()) => Ok(()),
        Value::String(mode) => Err(ApiError::invalid(
            Some("tool_choice"),
            format!(
                "Invalid value: '{mode}'. Supported values are: 'none', 'auto', and 'required'."
            ),
        )),
        Value::Object(obj) => match present(obj, "type") {
            None => Err(missing("tool_choice.type")),
            Some(Value::String(t)) if t == "function" => {
                let function = match present(obj, "function") {
                    None => return Err(missing("tool_choice.function")),
                    Some(Value::Object(function)) => function,
                    Some(other) => {
                        return Err(wrong_type("tool_choice.function", "an object", other));
                    }
                };
                required_string(function, "tool_choice.function", "name").map(|_| ())
            }
            // Newer choice objects (allowed_tools, custom) are accepted as they are.
            Some(Value::String(_)) => Ok(()),
            Some(other) => Err(wrong_type("tool_choice.type", "a string", other)),
        },
        other => Err(wrong_type("tool_choice", "a string or an object", other)),
    }
}

fn validate_response_format(format: &Value) -> Result<(), ApiError> {
    let Some(obj) = format.as_object() else {
        return Err(wrong_type("response_format", "an object", format));
    };
    match present(obj, "type") {
        None => Err(missing("response_format.type")),
        Some(Value::String(t)) if t == "text" || t == "json_object" => Ok(()),
        Some(Value::String(t)) if t == "json_schema" => {
            let schema = match present(obj, "json_schema") {
                None => return Err(missing("response_format.json_schema")),
                Some(Value::Object(schema)) => schema,
                Some(other) => {
                    return Err(wrong_type(
                        "response_format.json_schema",
                        "an object",
                        other,
                    ));
                }
            };
            let name = required_string(schema, "response_format.json_schema", "name")?;
            if !is_tool_name(name, 64) {
                return Err(ApiError::invalid(
                    Some("response_format.json_schema.name"),
                    format!(
                        "Invalid 'response_format.json_schema.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]{{1,64}}$' (got '{name}')."
                    ),
                ));
            }
            if let Some(value) = present(schema, "schema")
                && !value.is_object()
            {
                return Err(wrong_type(
                    "response_format.json_schema.schema",
                    "an object",
                    value,
                ));
            }
            if let Some(value) = present(schema, "strict")
                && !value.is_boolean()
            {
                return Err(wrong_type(
                    "response_format.json_schema.strict",
                    "a boolean",
                    value,
                ));
            }
            Ok(())
        }
        Some(other) => Err(ApiError::invalid(
            Some("response_format.type"),
            format!(
                "Invalid value: {other}. Supported values are: 'text', 'json_object', and 'json_schema'."
            ),
        )),
    }
}

fn required_string<'a>(
    obj: &'a Map<String, Value>,
    at: &str,
    key: &str,
) -> Result<&'a str, ApiError> {
    let param = format!("{at}.{key}");
    match present(obj, key) {
        None => Err(missing(&param)),
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(wrong_type(&param, "a string", other)),
    }
}

fn missing(param: &str) -> ApiError {
    ApiError::invalid(
        Some(param),
        format!("Missing required parameter: '{param}'."),
    )
}

fn wrong_type(param: &str, expected: &str, got: &Value) -> ApiError {
    ApiError::invalid(
        Some(param),
        format!(
            "Invalid type for '{param}': expected {expected}, but got {} instead.",
            type_name(got)
        ),
    )
}

fn empty_array(param: &str) -> ApiError {
    ApiError::invalid(
        Some(param),
        format!(
            "Invalid '{param}': empty array. Expected an array with minimum length 1, but got an empty array instead."
        ),
    )
}

/// The provider's error body for `error`.
pub(crate) fn error_response(error: &ApiError) -> Response {
    let (kind, default_code) = match error.status {
        429 => ("requests", Some("rate_limit_exceeded")),
        401 => ("invalid_request_error", Some("invalid_api_key")),
        500..=599 => ("server_error", None),
        _ => ("invalid_request_error", None),
    };
    error_json(
        error.status,
        json!({
            "error": {
                "message": error.message,
                "type": kind,
                "param": error.param,
                "code": error.code.or(default_code),
            }
        }),
    )
}

/// The assistant message a round produces, independent of streaming.
struct Answer<'a> {
    content: Option<&'a str>,
    refusal: Option<&'a str>,
    calls: Vec<RenderedCall<'a>>,
    finish: &'static str,
}

struct RenderedCall<'a> {
    id: String,
    name: &'a str,
    arguments: String,
}

fn rendered_calls(calls: &[ToolCall], first_id: usize) -> Vec<RenderedCall<'_>> {
    calls
        .iter()
        .enumerate()
        .map(|(k, call)| RenderedCall {
            id: call
                .id
                .clone()
                .unwrap_or_else(|| format!("call_{}", first_id + k)),
            name: &call.name,
            arguments: call.arguments.to_text(),
        })
        .collect()
}

/// Render `round` as a Chat Completions answer.
pub(crate) fn render(
    round: &Round,
    context: RoundContext<'_>,
    model: &str,
    stream: bool,
) -> Result<Reply, ApiError> {
    let answer = match &round.kind {
        RoundKind::ToolCalls { calls, text } => Answer {
            content: text.as_deref(),
            refusal: None,
            calls: rendered_calls(calls, context.first_id),
            finish: "tool_calls",
        },
        RoundKind::Text(text) => Answer {
            content: Some(text),
            refusal: None,
            calls: Vec::new(),
            finish: "stop",
        },
        RoundKind::Structured(value) => {
            return Ok(render_answer(
                Answer {
                    content: Some(&value.to_string()),
                    refusal: None,
                    calls: Vec::new(),
                    finish: "stop",
                },
                round,
                context,
                model,
                stream,
            ));
        }
        RoundKind::Truncated { text, calls } => Answer {
            // Cut before anything was emitted still leaves an (empty) text answer.
            content: text
                .as_deref()
                .or(if calls.is_empty() { Some("") } else { None }),
            refusal: None,
            calls: rendered_calls(calls, context.first_id),
            finish: "length",
        },
        RoundKind::Refusal(text) => Answer {
            content: None,
            refusal: Some(text),
            calls: Vec::new(),
            finish: "stop",
        },
        // Chat Completions has no place for the filter's explanation: the answer is just
        // stopped, with no content.
        RoundKind::ContentFilter(_) => Answer {
            content: None,
            refusal: None,
            calls: Vec::new(),
            finish: "content_filter",
        },
        RoundKind::Error { status, message } => {
            return Err(ApiError::status(*status, message.clone()));
        }
        RoundKind::ProviderTool(tool) => {
            return Err(ApiError::invalid(
                None,
                format!(
                    "mock-provider: round {} scripts the provider-executed tool `{}`; provider-executed tools are scripted only for Anthropic Messages (POST /v1/messages), not for Chat Completions",
                    context.index, tool.name
                ),
            ));
        }
    };
    Ok(render_answer(answer, round, context, model, stream))
}

fn render_answer(
    answer: Answer<'_>,
    round: &Round,
    context: RoundContext<'_>,
    model: &str,
    stream: bool,
) -> Reply {
    let prompt_tokens = estimate_tokens(context.request.to_string().len());
    let emitted = answer.content.map_or(0, str::len)
        + answer.refusal.map_or(0, str::len)
        + answer
            .calls
            .iter()
            .map(|c| c.name.len() + c.arguments.len())
            .sum::<usize>();
    let completion_tokens = estimate_tokens(emitted);
    let usage = json!({
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    });
    let id = format!("chatcmpl-{}", fresh_id());
    let created = unix_now();
    if !stream {
        let mut message = json!({
            "role": "assistant",
            "content": answer.content,
            "refusal": answer.refusal,
        });
        if !answer.calls.is_empty() {
            message["tool_calls"] = answer
                .calls
                .iter()
                .map(|call| {
                    json!({
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": call.arguments},
                    })
                })
                .collect();
        }
        return Reply::Json {
            body: json!({
                "id": id,
                "object": "chat.completion",
                "created": created,
                "model": model,
                "choices": [{
                    "index": 0,
                    "message": message,
                    "logprobs": null,
                    "finish_reason": answer.finish,
                }],
                "usage": usage,
            }),
            cut: round.cut_after_chunks.is_some(),
        };
    }

    let include_usage =
        context.request.pointer("/stream_options/include_usage") == Some(&Value::Bool(true));
    let chunk = |choices: Value| {
        let mut chunk = json!({
            "id": id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": choices,
        });
        // With include_usage every chunk carries `usage: null` except the final usage chunk.
        if include_usage {
            chunk["usage"] = Value::Null;
        }
        SseEvent::data(&chunk)
    };
    let delta = |delta: Value, finish: Option<&str>| {
        chunk(json!([{
            "index": 0,
            "delta": delta,
            "logprobs": null,
            "finish_reason": finish,
        }]))
    };

    let mut events = vec![delta(json!({"role": "assistant"}), None)];
    if let Some(content) = answer.content {
        events.extend(
            split_pieces(content)
                .into_iter()
                .map(|piece| delta(json!({"content": piece}), None)),
        );
    }
    if let Some(refusal) = answer.refusal {
        events.extend(
            split_pieces(refusal)
                .into_iter()
                .map(|piece| delta(json!({"refusal": piece}), None)),
        );
    }
    for (index, call) in answer.calls.iter().enumerate() {
        events.push(delta(
            json!({"tool_calls": [{
                "index": index,
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": ""},
            }]}),
            None,
        ));
        events.extend(split_pieces(&call.arguments).into_iter().map(|piece| {
            delta(
                json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                None,
            )
        }));
    }
    events.push(delta(json!({}), Some(answer.finish)));
    if include_usage {
        let mut last = json!({
            "id": id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [],
        });
        last["usage"] = usage;
        events.push(SseEvent::data(&last));
    }
    events.push(SseEvent::done());
    Reply::Events {
        events,
        cut: round.cut_after_chunks,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(body: Value) -> Result<(), ApiError> {
        validate(&body)
    }

    fn param_of(body: Value) -> Option<String> {
        check(body).expect_err("invalid").param
    }

    #[test]
    fn accepts_a_tool_loop_conversation() {
        let body = json!({
            "model": "m",
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": [{"type": "text", "text": "hi"}]},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                ]},
                {"role": "tool", "tool_call_id": "call_1", "content": "42"},
                {"role": "assistant", "content": "done"},
                {"role": "user", "content": "thanks"},
            ],
            "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}, "strict": true}}],
            "tool_choice": "auto",
            "stream": false,
            "response_format": {"type": "json_schema", "json_schema": {"name": "out", "schema": {}, "strict": true}},
            "max_completion_tokens": 100,
            "temperature": 0.2,
        });
        assert_eq!(check(body), Ok(()));
    }

    #[test]
    fn names_the_field_at_fault() {
        let msgs = json!([{"role": "user", "content": "hi"}]);
        assert_eq!(
            param_of(json!({"messages": msgs})).as_deref(),
            Some("model")
        );
        assert_eq!(param_of(json!({"model": "m"})).as_deref(), Some("messages"));
        assert_eq!(
            param_of(json!({"model": "m", "messages": []})).as_deref(),
            Some("messages")
        );
        assert_eq!(
            param_of(json!({"model": "m", "messages": [{"role": "bot", "content": "x"}]}))
                .as_deref(),
            Some("messages[0].role")
        );
        assert_eq!(
            param_of(json!({"model": "m", "messages": [{"role": "user"}]})).as_deref(),
            Some("messages[0].content")
        );
        assert_eq!(
            param_of(json!({"model": "m", "messages": [{"role": "tool", "content": "x"}]}))
                .as_deref(),
            Some("messages[0].tool_call_id")
        );
        assert_eq!(
            param_of(json!({"model": "m", "messages": msgs, "tools": [{"type": "function", "function": {"name": "a b"}}]})).as_deref(),
            Some("tools[0].function.name")
        );
        assert_eq!(
            param_of(json!({"model": "m", "messages": msgs, "stream": "yes"})).as_deref(),
            Some("stream")
        );
        assert_eq!(
            param_of(
                json!({"model": "m", "messages": msgs, "stream_options": {"include_usage": true}})
            )
            .as_deref(),
            Some("stream_options")
        );
        assert_eq!(
            param_of(json!({"model": "m", "messages": msgs, "max_tokens": 0})).as_deref(),
            Some("max_tokens")
        );
        assert_eq!(
            param_of(json!({"model": "m", "messages": msgs, "response_format": {"type": "xml"}}))
                .as_deref(),
            Some("response_format.type")
        );
        assert_eq!(
            param_of(json!({"model": "m", "messages": msgs, "response_format": {"type": "json_schema", "json_schema": {"schema": {}}}})).as_deref(),
            Some("response_format.json_schema.name")
        );
        assert_eq!(
            param_of(json!({"model": "m", "messages": msgs, "tool_choice": "sometimes"}))
                .as_deref(),
            Some("tool_choice")
        );
    }

    #[test]
    fn tool_messages_must_answer_pending_calls() {
        let call = |id: &str| json!({"id": id, "type": "function", "function": {"name": "f", "arguments": "{}"}});
        let lost_result = json!({"model": "m", "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "tool_calls": [call("a"), call("b")]},
            {"role": "tool", "tool_call_id": "a", "content": "1"},
            {"role": "user", "content": "next"},
        ]});
        let e = check(lost_result).expect_err("b is unanswered");
        assert_eq!(e.param.as_deref(), Some("messages.[1].role"));
        assert!(e.message.contains('b'), "{}", e.message);

        let stray = json!({"model": "m", "messages": [
            {"role": "user", "content": "hi"},
            {"role": "tool", "tool_call_id": "x", "content": "1"},
        ]});
        assert_eq!(
            check(stray).expect_err("stray").param.as_deref(),
            Some("messages.[1].role")
        );
    }
}
