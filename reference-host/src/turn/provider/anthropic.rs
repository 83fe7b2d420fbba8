//! Anthropic Messages: request body, answer and stream parsing.
//!
//! Non-streaming answers are `content[]` blocks plus `stop_reason`. Streams
//! are typed events (`message_start`, `content_block_start/delta/stop`,
//! `message_delta`, `message_stop`); text and `input_json_delta` pieces are
//! concatenated per block index, and a stream without `message_stop` is cut.
//! Blocks the provider runs itself (`server_tool_use`,
//! `web_search_tool_result`) and any other block type are kept verbatim for
//! the echo and never dispatched by the host.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::event_stream::SseEvent;
use super::types::{
    AssistantBlock, Completion, ModelRequest, ModelResponse, ProviderError, StreamAssembler,
    StreamFlow, ToolEmission, str_member,
};

/// The endpoint path under the base URL.
pub const PATH: &str = "/v1/messages";

/// The `anthropic-version` header value.
pub const API_VERSION: &str = "2023-06-01";

/// The `x-api-key` header value (test providers only; never a real key).
pub const API_KEY: &str = "refhost-test-key";

/// `max_tokens` of every request.
pub const MAX_TOKENS: u32 = 1024;

/// The request body for one round.
pub fn request_body(request: &ModelRequest<'_>) -> Value {
    let transcript = request.transcript;
    let mut messages = vec![json!({"role": "user", "content": transcript.user})];
    for round in &transcript.rounds {
        messages.push(json!({
            "role": "assistant",
            "content": assistant_content(&round.response),
        }));
        if !round.results.is_empty() {
            // All results of a round go back in ONE user message.
            let results: Vec<Value> = round
                .results
                .iter()
                .map(|result| {
                    json!({
                        "type": "tool_result",
                        "tool_use_id": result.call_id,
                        "content": result.result.to_text(),
                        "is_error": result.result.is_error,
                    })
                })
                .collect();
            messages.push(json!({"role": "user", "content": results}));
        }
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(request.spec.model));
    body.insert("max_tokens".into(), json!(MAX_TOKENS));
    body.insert("system".into(), json!(transcript.system));
    body.insert("messages".into(), Value::Array(messages));
    let function = |name: &str, description: &str, input_schema: &Value| json!({"name": name, "description": description, "input_schema": input_schema});
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
        // TTC §F: a provider-executed tool is declared as `{type, name}`;
        // the provider runs it and the host never dispatches it.
        .chain(
            request
                .server_tools
                .iter()
                .map(|tool| json!({"type": tool.tool_type, "name": tool.name})),
        )
        .collect();
    if !tools.is_empty() {
        body.insert("tools".into(), Value::Array(tools));
    }
    // TURN-F4: the request never carries a remote MCP server parameter;
    // MCP tools are function tools like any other. Only the
    // `mcp-delegated-to-provider` mutant (`delegate_mcp`) adds one.
    let connectors: Vec<Value> = request
        .tools
        .iter()
        .filter(|_| request.delegate_mcp)
        .filter_map(|tool| {
            tool.mcp().map(
                |mcp| json!({"type": "url", "url": mcp.server_url.as_str(), "name": tool.tool_id}),
            )
        })
        .collect();
    if !connectors.is_empty() {
        body.insert("mcp_servers".into(), Value::Array(connectors));
    }
    body.insert("stream".into(), json!(request.spec.stream));
    Value::Object(body)
}

/// The assistant content blocks that echo an answer, in provider order.
fn assistant_content(response: &ModelResponse) -> Vec<Value> {
    response
        .blocks
        .iter()
        .filter_map(|block| match block {
            AssistantBlock::Text(text) => Some(json!({"type": "text", "text": text})),
            AssistantBlock::ToolCall(index) => response.tool_calls.get(*index).map(|call| {
                // `input` must be an object; arguments that were not one
                // (the call was answered as invalid) are echoed as `{}`.
                let input = serde_json::from_str::<Value>(&call.arguments_text)
                    .ok()
                    .filter(Value::is_object)
                    .unwrap_or_else(|| json!({}));
                json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input})
            }),
            AssistantBlock::ProviderExecuted(block) => Some(block.clone()),
        })
        .collect()
}

/// How the completion ended, from `stop_reason`.
fn completion(stop_reason: Option<&str>) -> Completion {
    match stop_reason {
        Some("max_tokens") => Completion::Truncated,
        Some("refusal") => Completion::Refused,
        _ => Completion::Clean,
    }
}

/// Collects blocks into the normalized answer.
#[derive(Debug, Default)]
struct Builder {
    text: Option<String>,
    tool_calls: Vec<ToolEmission>,
    blocks: Vec<AssistantBlock>,
}

impl Builder {
    fn text(&mut self, text: String) {
        // An empty text block says nothing, and the Messages API rejects
        // one when it is echoed back, so it is dropped here.
        if text.is_empty() {
            return;
        }
        self.text.get_or_insert_with(String::new).push_str(&text);
        self.blocks.push(AssistantBlock::Text(text));
    }

    fn tool_use(&mut self, id: String, name: String, arguments_text: String) {
        self.blocks
            .push(AssistantBlock::ToolCall(self.tool_calls.len()));
        self.tool_calls.push(ToolEmission {
            id,
            name,
            arguments_text,
        });
    }

    fn kept(&mut self, block: Value) {
        self.blocks.push(AssistantBlock::ProviderExecuted(block));
    }

    fn build(self, stop_reason: Option<&str>) -> ModelResponse {
        let completion = completion(stop_reason);
        ModelResponse {
            text: self.text,
            refusal: None,
            tool_calls: self.tool_calls,
            completion,
            blocks: self.blocks,
        }
    }
}

/// Parses a non-streaming answer.
pub fn parse_response(body: &Value) -> Result<ModelResponse, ProviderError> {
    let content = body
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| ProviderError::Malformed("no content array".into()))?;
    let mut builder = Builder::default();
    for (index, block) in content.iter().enumerate() {
        match str_member(block, "type") {
            Some("text") => builder.text(str_member(block, "text").unwrap_or_default().to_owned()),
            Some("tool_use") => {
                let (Some(id), Some(name)) = (str_member(block, "id"), str_member(block, "name"))
                else {
                    return Err(ProviderError::Malformed(format!(
                        "content[{index}] tool_use lacks id or name"
                    )));
                };
                let input = block.get("input").cloned().unwrap_or_else(|| json!({}));
                builder.tool_use(id.to_owned(), name.to_owned(), input.to_string());
            }
            _ => builder.kept(block.clone()),
        }
    }
    Ok(builder.build(str_member(body, "stop_reason")))
}

/// A content block being assembled from stream events.
#[derive(Debug)]
enum PartialBlock {
    Text(String),
    ToolUse {
        id: String,
        name: String,
        start_input: Value,
        json: String,
    },
    Kept {
        block: Value,
        json: String,
    },
}

/// Assembles a streamed answer.
#[derive(Debug, Default)]
pub struct AnthropicStream {
    blocks: BTreeMap<u64, PartialBlock>,
    stop_reason: Option<String>,
    done: bool,
}

impl AnthropicStream {
    fn index(data: &Value) -> Result<u64, ProviderError> {
        data.get("index")
            .and_then(Value::as_u64)
            .ok_or_else(|| ProviderError::Malformed("content block event lacks index".into()))
    }
}

impl StreamAssembler for AnthropicStream {
    fn push(&mut self, event: &SseEvent) -> Result<StreamFlow, ProviderError> {
        let data: Value = serde_json::from_str(&event.data)
            .map_err(|err| ProviderError::Malformed(format!("stream event is not JSON ({err})")))?;
        let kind = str_member(&data, "type").or(event.event.as_deref());
        match kind {
            Some("content_block_start") => {
                let index = Self::index(&data)?;
                let block = data.get("content_block").cloned().unwrap_or(Value::Null);
                let partial = match str_member(&block, "type") {
                    Some("text") => PartialBlock::Text(
                        str_member(&block, "text").unwrap_or_default().to_owned(),
                    ),
                    Some("tool_use") => PartialBlock::ToolUse {
                        id: str_member(&block, "id").unwrap_or_default().to_owned(),
                        name: str_member(&block, "name").unwrap_or_default().to_owned(),
                        start_input: block.get("input").cloned().unwrap_or_else(|| json!({})),
                        json: String::new(),
                    },
                    _ => PartialBlock::Kept {
                        block,
                        json: String::new(),
                    },
                };
                self.blocks.insert(index, partial);
            }
            Some("content_block_delta") => {
                let index = Self::index(&data)?;
                let delta = data.get("delta").unwrap_or(&Value::Null);
                match (self.blocks.get_mut(&index), str_member(delta, "type")) {
                    (Some(PartialBlock::Text(text)), Some("text_delta")) => {
                        text.push_str(str_member(delta, "text").unwrap_or_default());
                    }
                    (
                        Some(PartialBlock::ToolUse { json, .. } | PartialBlock::Kept { json, .. }),
                        Some("input_json_delta"),
                    ) => json.push_str(str_member(delta, "partial_json").unwrap_or_default()),
                    (None, _) => {
                        return Err(ProviderError::Malformed(format!(
                            "delta for block {index} before its content_block_start"
                        )));
                    }
                    // Other deltas (thinking, citations, …) change nothing
                    // the loop uses.
                    _ => {}
                }
            }
            Some("message_delta") => {
                if let Some(reason) = data.get("delta").and_then(|d| str_member(d, "stop_reason")) {
                    self.stop_reason = Some(reason.to_owned());
                }
            }
            Some("message_stop") => {
                self.done = true;
                return Ok(StreamFlow::Done);
            }
            Some("error") => return Err(ProviderError::StreamErrorEvent),
            // message_start, content_block_stop, ping and unknown events.
            _ => {}
        }
        Ok(StreamFlow::More)
    }

    fn finish(self: Box<Self>) -> Result<ModelResponse, ProviderError> {
        if !self.done {
            return Err(ProviderError::CutStream("it ended without message_stop"));
        }
        let mut builder = Builder::default();
        for block in self.blocks.into_values() {
            match block {
                PartialBlock::Text(text) => builder.text(text),
                PartialBlock::ToolUse {
                    id,
                    name,
                    start_input,
                    json,
                } => {
                    // The deltas are the arguments; a block without deltas
                    // has its whole input in the start event.
                    let arguments_text = if json.is_empty() {
                        start_input.to_string()
                    } else {
                        json
                    };
                    builder.tool_use(id, name, arguments_text);
                }
                PartialBlock::Kept { mut block, json } => {
                    if let (Ok(input), Some(object)) =
                        (serde_json::from_str::<Value>(&json), block.as_object_mut())
                    {
                        object.insert("input".to_owned(), input);
                    }
                    builder.kept(block);
                }
            }
        }
        Ok(builder.build(self.stop_reason.as_deref()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::turn::feedback::{CallToolResult, ToolResult};
    use crate::turn::provider::{ProviderSpec, Round, Transcript, Wire};
    use reqwest::Url;

    fn event(name: &str, data: Value) -> SseEvent {
        SseEvent {
            event: Some(name.to_owned()),
            data: data.to_string(),
        }
    }

    #[test]
    fn non_streaming_blocks_normalize_and_server_tools_are_kept() {
        let answer = json!({
            "content": [
                {"type": "text", "text": "Searching."},
                {"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {"query": "x"}},
                {"type": "web_search_tool_result", "tool_use_id": "srv_1", "content": []},
                {"type": "tool_use", "id": "toolu_1", "name": "w", "input": {"path": "a"}}
            ],
            "stop_reason": "tool_use"
        });
        let response = parse_response(&answer).expect("parses");
        assert_eq!(response.completion, Completion::Clean);
        assert_eq!(response.text.as_deref(), Some("Searching."));
        assert_eq!(
            response.tool_calls.len(),
            1,
            "server tools are not emissions"
        );
        assert_eq!(response.tool_calls[0].arguments_text, r#"{"path":"a"}"#);
        assert_eq!(response.blocks.len(), 4);
        let echoed = assistant_content(&response);
        assert_eq!(echoed[1]["type"], "server_tool_use");
        assert_eq!(echoed[3]["input"], json!({"path": "a"}));

        for (reason, completion) in [
            ("max_tokens", Completion::Truncated),
            ("refusal", Completion::Refused),
            ("end_turn", Completion::Clean),
        ] {
            let answer = json!({"content": [], "stop_reason": reason});
            assert_eq!(
                parse_response(&answer).expect("parses").completion,
                completion
            );
        }
        assert!(parse_response(&json!({"stop_reason": "end_turn"})).is_err());
    }

    #[test]
    fn streams_concatenate_partial_json_per_block() {
        let mut stream: Box<AnthropicStream> = Box::default();
        let events = [
            event(
                "message_start",
                json!({"type": "message_start", "message": {"content": []}}),
            ),
            event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            ),
            event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "On it"}}),
            ),
            event(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 0}),
            ),
            event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "w", "input": {}}}),
            ),
            event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"pa"}}),
            ),
            event("ping", json!({"type": "ping"})),
            event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "th\": \"a\"}"}}),
            ),
            event(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 1}),
            ),
            event(
                "message_delta",
                json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}}),
            ),
        ];
        for e in &events {
            assert_eq!(stream.push(e).expect("event"), StreamFlow::More);
        }
        let stop = event("message_stop", json!({"type": "message_stop"}));
        assert_eq!(stream.push(&stop).expect("stop"), StreamFlow::Done);
        let response = stream.finish().expect("complete");
        assert_eq!(response.text.as_deref(), Some("On it"));
        assert_eq!(response.tool_calls[0].arguments_text, "{\"path\": \"a\"}");
        assert_eq!(response.completion, Completion::Clean);
    }

    #[test]
    fn empty_text_blocks_are_not_echoed() {
        let response = parse_response(&json!({"content": [
            {"type": "text", "text": ""},
            {"type": "tool_use", "id": "toolu_1", "name": "w", "input": {}}
        ], "stop_reason": "tool_use"}))
        .expect("parses");
        assert_eq!(response.text, None);
        let echoed = assistant_content(&response);
        assert_eq!(echoed.len(), 1);
        assert_eq!(echoed[0]["type"], "tool_use");
    }

    #[test]
    fn streams_without_message_stop_are_cut_and_error_events_fail() {
        let mut stream: Box<AnthropicStream> = Box::default();
        stream
            .push(&event("message_start", json!({"type": "message_start"})))
            .expect("event");
        assert!(matches!(stream.finish(), Err(ProviderError::CutStream(_))));
        let mut stream: Box<AnthropicStream> = Box::default();
        let failed = stream.push(&event(
            "error",
            json!({"type": "error", "error": {"type": "overloaded_error"}}),
        ));
        assert_eq!(failed, Err(ProviderError::StreamErrorEvent));
    }

    #[test]
    fn request_carries_headers_fields_and_tool_results() {
        let response = parse_response(&json!({"content": [
            {"type": "tool_use", "id": "toolu_1", "name": "w", "input": {}}
        ], "stop_reason": "tool_use"}))
        .expect("parses");
        let transcript = Transcript {
            system: "sys".into(),
            user: "task".into(),
            rounds: vec![Round {
                response,
                results: vec![ToolResult {
                    call_id: "toolu_1".into(),
                    result: CallToolResult::failure("Tool w failed: x.", None),
                }],
            }],
        };
        let spec = ProviderSpec {
            wire: Wire::AnthropicMessages,
            base_url: Url::parse("http://127.0.0.1:9").expect("url"),
            model: "tc-model".into(),
            stream: true,
        };
        let body = request_body(&ModelRequest {
            spec: &spec,
            tools: &[],
            host_tools: &[],
            server_tools: &[],
            transcript: &transcript,
            response_schema: None,
            delegate_mcp: false,
        });
        assert_eq!(body["max_tokens"], 1024);
        assert_eq!(body["system"], "sys");
        assert_eq!(body["stream"], true);
        assert!(body.get("tools").is_none());
        let messages = body["messages"].as_array().expect("messages");
        assert_eq!(messages.len(), 3);
        assert_eq!(messages[1]["content"][0]["type"], "tool_use");
        let result = &messages[2]["content"][0];
        assert_eq!(result["type"], "tool_result");
        assert_eq!(result["tool_use_id"], "toolu_1");
        assert_eq!(result["is_error"], true);
    }

    /// A run tool played by an MCP server.
    fn mcp_tool() -> std::sync::Arc<crate::domain::catalog::FixtureTool> {
        use crate::domain::catalog::{
            Approval, FixtureTool, McpEndpoint, ReplayPolicy, SafetyTier, ToolEndpoint,
        };
        let input_schema = json!({"type": "object"});
        std::sync::Arc::new(FixtureTool {
            tool_id: "weather".into(),
            description: "weather".into(),
            input_validator: crate::base::args_schema::ArgsSchema::compile(&input_schema)
                .expect("compiles"),
            input_schema,
            output_schema: None,
            replay_policy: ReplayPolicy::Idempotent,
            safety_tier: SafetyTier::Read,
            required_scopes: Vec::new(),
            approval: Approval::Never,
            endpoint: ToolEndpoint::Mcp(McpEndpoint {
                server_url: Url::parse("http://127.0.0.1:9/mcp/a").expect("url"),
                name: "get_weather".into(),
                mounted: false,
            }),
        })
    }

    #[test]
    fn mcp_tools_are_function_tools_never_provider_connectors() {
        // TURN-F4: the host calls the MCP server itself, so the request has
        // no remote MCP server parameter, only a function tool; the tool's
        // result goes back wrapped as untrusted (TRUST-3).
        let response = parse_response(&json!({"content": [
            {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {}}
        ], "stop_reason": "tool_use"}))
        .expect("parses");
        let transcript = Transcript {
            system: "sys".into(),
            user: "task".into(),
            rounds: vec![Round {
                response,
                results: vec![ToolResult {
                    call_id: "toolu_1".into(),
                    result: CallToolResult::success(&json!("sunny")).from_mcp_tool("weather"),
                }],
            }],
        };
        let spec = ProviderSpec {
            wire: Wire::AnthropicMessages,
            base_url: Url::parse("http://127.0.0.1:9").expect("url"),
            model: "tc-model".into(),
            stream: false,
        };
        let tools = [mcp_tool()];
        let mut request = ModelRequest {
            spec: &spec,
            tools: &tools,
            host_tools: &[],
            server_tools: &[],
            transcript: &transcript,
            response_schema: None,
            delegate_mcp: false,
        };
        let body = request_body(&request);
        assert!(body.get("mcp_servers").is_none());
        assert!(!body.to_string().contains("/mcp/a"), "{body}");
        assert_eq!(
            body["tools"],
            json!([{"name": "weather", "description": "weather", "input_schema": {"type": "object"}}])
        );
        let fed = &body["messages"][2]["content"][0]["content"];
        assert_eq!(
            fed.as_str().expect("text"),
            r#"<UNTRUSTED tool="weather">{"content":[{"text":"\"sunny\"","type":"text"}],"isError":false}</UNTRUSTED>"#
        );
        request.delegate_mcp = true;
        let delegated = request_body(&request);
        assert_eq!(
            delegated["mcp_servers"],
            json!([{"type": "url", "url": "http://127.0.0.1:9/mcp/a", "name": "weather"}])
        );
        assert_eq!(delegated["tools"], body["tools"]);
        // OpenAI Chat has no such parameter at all, mutant or not.
        let openai = super::super::openai::request_body(&request);
        assert!(openai.get("mcp_servers").is_none());
        assert!(!openai.to_string().contains("/mcp/a"));
    }
}
