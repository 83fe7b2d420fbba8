//! OpenAI Chat Completions: request body, answer and stream parsing.
//!
//! Non-streaming answers are read from `choices[0].message` (`content`,
//! `refusal`, `tool_calls`) and `choices[0].finish_reason`. Streams are
//! `data:` chunks whose `delta`s are assembled (tool calls by `index`, with
//! `function.arguments` concatenated) until `data: [DONE]`; a stream that
//! ends without `[DONE]` or without a `finish_reason` is cut.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::event_stream::SseEvent;
use super::types::{
    AssistantBlock, Completion, ModelRequest, ModelResponse, ProviderError, StreamAssembler,
    StreamFlow, ToolEmission, str_member,
};

/// The endpoint path under the base URL.
pub const PATH: &str = "/v1/chat/completions";

/// The `json_schema.name` of an enforced answer.
const ANSWER_SCHEMA_NAME: &str = "answer";

/// The request body for one round.
pub fn request_body(request: &ModelRequest<'_>) -> Value {
    let transcript = request.transcript;
    let mut messages = vec![
        json!({"role": "system", "content": transcript.system}),
        json!({"role": "user", "content": transcript.user}),
    ];
    for round in &transcript.rounds {
        messages.push(assistant_message(&round.response));
        // One `tool` message per emission, answering it by id.
        for result in &round.results {
            messages.push(json!({
                "role": "tool",
                "tool_call_id": result.call_id,
                "content": result.result.to_text(),
            }));
        }
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(request.spec.model));
    body.insert("messages".into(), Value::Array(messages));
    let function = |name: &str, description: &str, parameters: &Value| {
        json!({
            "type": "function",
            "function": {"name": name, "description": description, "parameters": parameters}
        })
    };
    let tools: Vec<Value> = request
        .tools
        .iter()
        .map(|tool| function(&tool.tool_id, &tool.description, &tool.input_schema))
        .chain(
            request
                .host_tools
                .iter()
                .map(|tool| function(&tool.name, tool.description, &tool.input_schema)),
        )
        .collect();
    if !tools.is_empty() {
        body.insert("tools".into(), Value::Array(tools));
    }
    body.insert("stream".into(), json!(request.spec.stream));
    if let Some(schema) = request.response_schema {
        // The provider-enforced channel (`structured`, TTC §A).
        body.insert(
            "response_format".into(),
            json!({
                "type": "json_schema",
                "json_schema": {"name": ANSWER_SCHEMA_NAME, "schema": schema, "strict": true}
            }),
        );
    }
    Value::Object(body)
}

/// The assistant message that echoes an answer (content and tool calls).
fn assistant_message(response: &ModelResponse) -> Value {
    let mut message = Map::new();
    message.insert("role".into(), json!("assistant"));
    message.insert(
        "content".into(),
        response.text.as_ref().map_or(Value::Null, |t| json!(t)),
    );
    if !response.tool_calls.is_empty() {
        let calls: Vec<Value> = response
            .tool_calls
            .iter()
            .map(|call| {
                json!({
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments_text},
                })
            })
            .collect();
        message.insert("tool_calls".into(), Value::Array(calls));
    }
    Value::Object(message)
}

/// How the completion ended, from `finish_reason` and `refusal`.
fn completion(finish_reason: Option<&str>, refusal: Option<&str>) -> Completion {
    // A refusal wins over a cut: neither executes anything, and a refusal
    // must not be mistaken for a retryable truncation.
    if refusal.is_some() || finish_reason == Some("content_filter") {
        Completion::Refused
    } else if finish_reason == Some("length") {
        Completion::Truncated
    } else {
        Completion::Clean
    }
}

/// Builds the normalized answer from its parts.
fn response(
    text: Option<String>,
    refusal: Option<String>,
    tool_calls: Vec<ToolEmission>,
    finish_reason: Option<&str>,
) -> ModelResponse {
    let completion = completion(finish_reason, refusal.as_deref());
    let mut blocks = Vec::new();
    if let Some(text) = &text {
        blocks.push(AssistantBlock::Text(text.clone()));
    }
    blocks.extend((0..tool_calls.len()).map(AssistantBlock::ToolCall));
    ModelResponse {
        text,
        refusal,
        tool_calls,
        completion,
        blocks,
    }
}

/// Parses a non-streaming answer.
pub fn parse_response(body: &Value) -> Result<ModelResponse, ProviderError> {
    let choice = body
        .get("choices")
        .and_then(|choices| choices.get(0))
        .ok_or_else(|| ProviderError::Malformed("no choices[0]".into()))?;
    let message = choice
        .get("message")
        .filter(|m| m.is_object())
        .ok_or_else(|| ProviderError::Malformed("no choices[0].message".into()))?;
    let text = str_member(message, "content").map(str::to_owned);
    let refusal = str_member(message, "refusal").map(str::to_owned);
    let mut tool_calls = Vec::new();
    if let Some(calls) = message.get("tool_calls").and_then(Value::as_array) {
        for (index, call) in calls.iter().enumerate() {
            let function = call.get("function");
            let name = function.and_then(|f| str_member(f, "name"));
            let (Some(id), Some(name)) = (str_member(call, "id"), name) else {
                return Err(ProviderError::Malformed(format!(
                    "tool_calls[{index}] lacks id or function.name"
                )));
            };
            let arguments_text = function
                .and_then(|f| str_member(f, "arguments"))
                .unwrap_or_default();
            tool_calls.push(ToolEmission {
                id: id.to_owned(),
                name: name.to_owned(),
                arguments_text: arguments_text.to_owned(),
            });
        }
    }
    let finish_reason = str_member(choice, "finish_reason");
    Ok(response(text, refusal, tool_calls, finish_reason))
}

/// A tool call being assembled from deltas.
#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// Assembles a streamed answer.
#[derive(Debug, Default)]
pub struct OpenAiStream {
    content: Option<String>,
    refusal: Option<String>,
    calls: BTreeMap<u64, PartialCall>,
    finish_reason: Option<String>,
    done: bool,
}

impl StreamAssembler for OpenAiStream {
    fn push(&mut self, event: &SseEvent) -> Result<StreamFlow, ProviderError> {
        if event.data.trim() == "[DONE]" {
            self.done = true;
            return Ok(StreamFlow::Done);
        }
        let chunk: Value = serde_json::from_str(&event.data)
            .map_err(|err| ProviderError::Malformed(format!("stream chunk is not JSON ({err})")))?;
        let Some(choice) = chunk.get("choices").and_then(|c| c.get(0)) else {
            // Usage-only chunks carry no choice.
            return Ok(StreamFlow::More);
        };
        if let Some(reason) = str_member(choice, "finish_reason") {
            self.finish_reason = Some(reason.to_owned());
        }
        let Some(delta) = choice.get("delta") else {
            return Ok(StreamFlow::More);
        };
        if let Some(piece) = str_member(delta, "content") {
            self.content.get_or_insert_with(String::new).push_str(piece);
        }
        if let Some(piece) = str_member(delta, "refusal") {
            self.refusal.get_or_insert_with(String::new).push_str(piece);
        }
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            for call in calls {
                let index = call.get("index").and_then(Value::as_u64).ok_or_else(|| {
                    ProviderError::Malformed("tool call delta lacks index".into())
                })?;
                let partial = self.calls.entry(index).or_default();
                if let Some(id) = str_member(call, "id") {
                    partial.id = id.to_owned();
                }
                if let Some(function) = call.get("function") {
                    if let Some(name) = str_member(function, "name") {
                        partial.name.push_str(name);
                    }
                    if let Some(piece) = str_member(function, "arguments") {
                        partial.arguments.push_str(piece);
                    }
                }
            }
        }
        Ok(StreamFlow::More)
    }

    fn finish(self: Box<Self>) -> Result<ModelResponse, ProviderError> {
        if !self.done {
            return Err(ProviderError::CutStream("it ended without data: [DONE]"));
        }
        let Some(finish_reason) = self.finish_reason else {
            return Err(ProviderError::CutStream("no chunk carried a finish_reason"));
        };
        let tool_calls = self
            .calls
            .into_values()
            .map(|call| ToolEmission {
                id: call.id,
                name: call.name,
                arguments_text: call.arguments,
            })
            .collect();
        Ok(response(
            self.content,
            self.refusal,
            tool_calls,
            Some(&finish_reason),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::turn::feedback::{CallToolResult, ToolResult};
    use crate::turn::provider::{ProviderSpec, Round, Transcript, Wire};
    use reqwest::Url;

    fn spec(stream: bool) -> ProviderSpec {
        ProviderSpec {
            wire: Wire::OpenAiChat,
            base_url: Url::parse("http://127.0.0.1:9").expect("url"),
            model: "tc-model".into(),
            stream,
        }
    }

    fn sse(data: &str) -> SseEvent {
        SseEvent {
            event: None,
            data: data.to_owned(),
        }
    }

    #[test]
    fn non_streaming_answers_normalize() {
        let answer = json!({"choices": [{"message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": "call_1", "type": "function",
                "function": {"name": "w", "arguments": "{\"a\":1}"}}]},
            "finish_reason": "tool_calls"}]});
        let response = parse_response(&answer).expect("parses");
        assert_eq!(response.completion, Completion::Clean);
        assert_eq!(response.text, None);
        assert_eq!(response.tool_calls[0].arguments_text, "{\"a\":1}");

        let cut = json!({"choices": [{"message": {"content": "x"}, "finish_reason": "length"}]});
        assert_eq!(
            parse_response(&cut).expect("parses").completion,
            Completion::Truncated
        );
        let refused = json!({"choices": [{"message": {"content": null, "refusal": "no"}, "finish_reason": "stop"}]});
        assert_eq!(
            parse_response(&refused).expect("parses").completion,
            Completion::Refused
        );
        let filtered =
            json!({"choices": [{"message": {"content": ""}, "finish_reason": "content_filter"}]});
        assert_eq!(
            parse_response(&filtered).expect("parses").completion,
            Completion::Refused
        );
        assert!(parse_response(&json!({"choices": []})).is_err());
    }

    #[test]
    fn streams_assemble_tool_calls_by_index() {
        let mut stream: Box<OpenAiStream> = Box::default();
        for data in [
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"Let me "}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"write."}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"w","arguments":"{\"pa"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","function":{"name":"r","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"th\":\"x\"}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
        ] {
            assert_eq!(stream.push(&sse(data)).expect("chunk"), StreamFlow::More);
        }
        assert_eq!(stream.push(&sse("[DONE]")).expect("done"), StreamFlow::Done);
        let response = stream.finish().expect("complete");
        assert_eq!(response.text.as_deref(), Some("Let me write."));
        assert_eq!(response.tool_calls.len(), 2);
        assert_eq!(response.tool_calls[0].id, "call_a");
        assert_eq!(response.tool_calls[0].arguments_text, r#"{"path":"x"}"#);
        assert_eq!(response.tool_calls[1].name, "r");
        assert_eq!(response.completion, Completion::Clean);
    }

    #[test]
    fn streams_without_done_or_finish_reason_are_cut() {
        let mut stream: Box<OpenAiStream> = Box::default();
        stream
            .push(&sse(
                r#"{"choices":[{"delta":{"content":"hi"},"finish_reason":"stop"}]}"#,
            ))
            .expect("chunk");
        assert!(matches!(stream.finish(), Err(ProviderError::CutStream(_))));
        let mut stream: Box<OpenAiStream> = Box::default();
        stream
            .push(&sse(r#"{"choices":[{"delta":{"content":"hi"}}]}"#))
            .expect("chunk");
        stream.push(&sse("[DONE]")).expect("done");
        assert!(matches!(stream.finish(), Err(ProviderError::CutStream(_))));
    }

    #[test]
    fn request_echoes_rounds_and_enforces_schema_when_asked() {
        let response = parse_response(&json!({"choices": [{"message": {"content": null,
            "tool_calls": [{"id": "call_1", "function": {"name": "w", "arguments": "{}"}}]},
            "finish_reason": "tool_calls"}]}))
        .expect("parses");
        let transcript = Transcript {
            system: "sys".into(),
            user: "do it".into(),
            rounds: vec![Round {
                response,
                results: vec![ToolResult {
                    call_id: "call_1".into(),
                    result: CallToolResult::success(&json!({"ok": true})),
                }],
            }],
        };
        let spec = spec(false);
        let schema = json!({"type": "object"});
        let body = request_body(&ModelRequest {
            spec: &spec,
            tools: &[],
            host_tools: &[],
            server_tools: &[],
            transcript: &transcript,
            response_schema: Some(&schema),
            delegate_mcp: false,
        });
        assert!(body.get("tools").is_none(), "no tools ⇒ no tools member");
        assert_eq!(body["stream"], false);
        assert_eq!(body["response_format"]["type"], "json_schema");
        assert_eq!(body["response_format"]["json_schema"]["strict"], true);
        assert_eq!(body["response_format"]["json_schema"]["schema"], schema);
        let messages = body["messages"].as_array().expect("messages");
        assert_eq!(messages.len(), 4);
        assert_eq!(messages[2]["tool_calls"][0]["id"], "call_1");
        assert_eq!(messages[3]["role"], "tool");
        assert_eq!(messages[3]["tool_call_id"], "call_1");
        let fed: Value =
            serde_json::from_str(messages[3]["content"].as_str().expect("text")).expect("json");
        assert_eq!(fed["structuredContent"], json!({"ok": true}));
    }
}
