//! Shared helpers for the HTTP tests: a client, SSE parsing, and stream reassembly.

use std::time::Duration;

use futures_util::StreamExt;
use mock_provider::{MockProvider, Script};
use serde_json::{Value, json};

/// A client that never goes through a proxy and never waits long.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(20))
        .connect_timeout(Duration::from_secs(5))
        .build()
        .expect("client builds")
}

/// A provider with `rounds` loaded under `model`.
pub async fn provider_with(model: &str, rounds: Value) -> MockProvider {
    let provider = MockProvider::start().await.expect("provider starts");
    let script =
        Script::from_json(&json!({"model": model, "rounds": rounds})).expect("valid script");
    provider.load(script).expect("loads");
    provider
}

/// The status, headers and full body of a response, or how far the body got before failing.
pub struct Raw {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: Vec<u8>,
    /// Whether reading the body failed (the connection was dropped mid-body).
    pub cut: bool,
}

impl Raw {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "body is not JSON ({e}): {}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Send `request` and read its body chunk by chunk, noting a body that breaks off.
pub async fn send(request: reqwest::RequestBuilder) -> Raw {
    let response = request.send().await.expect("request is answered");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let mut body = Vec::new();
    let mut cut = false;
    let mut chunks = response.bytes_stream();
    while let Some(chunk) = chunks.next().await {
        match chunk {
            Ok(bytes) => body.extend_from_slice(&bytes),
            Err(_) => {
                cut = true;
                break;
            }
        }
    }
    Raw {
        status,
        headers,
        body,
        cut,
    }
}

/// POST `body` to the provider's Chat Completions endpoint.
pub async fn openai(provider: &MockProvider, body: &Value) -> Raw {
    send(
        client()
            .post(format!("{}/v1/chat/completions", provider.base_url()))
            .bearer_auth("sk-test-secret")
            .json(body),
    )
    .await
}

/// POST `body` to the provider's Messages endpoint with the usual headers.
pub async fn anthropic(provider: &MockProvider, body: &Value) -> Raw {
    send(
        client()
            .post(format!("{}/v1/messages", provider.base_url()))
            .header("x-api-key", "sk-ant-secret")
            .header("anthropic-version", "2023-06-01")
            .json(body),
    )
    .await
}

/// A minimal valid Chat Completions request.
pub fn openai_request(model: &str, stream: bool) -> Value {
    json!({
        "model": model,
        "messages": [{"role": "user", "content": "hello"}],
        "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}],
        "stream": stream,
    })
}

/// A minimal valid Messages request.
pub fn anthropic_request(model: &str, stream: bool) -> Value {
    json!({
        "model": model,
        "max_tokens": 256,
        "messages": [{"role": "user", "content": "hello"}],
        "tools": [{"name": "get_weather", "input_schema": {"type": "object"}}],
        "stream": stream,
    })
}

/// One parsed server-sent event.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub name: Option<String>,
    pub data: String,
}

/// Parse an SSE body into events (only complete events, ended by a blank line).
pub fn parse_sse(text: &str) -> Vec<Event> {
    let mut events = Vec::new();
    for block in text.split("\n\n") {
        if block.is_empty() {
            continue;
        }
        let mut name = None;
        let mut data = Vec::new();
        for line in block.lines() {
            if let Some(value) = line.strip_prefix("event: ") {
                name = Some(value.to_string());
            } else if let Some(value) = line.strip_prefix("data: ") {
                data.push(value);
            } else {
                panic!("unexpected SSE line {line:?}");
            }
        }
        events.push(Event {
            name,
            data: data.join("\n"),
        });
    }
    // A trailing fragment without its blank line is not an event.
    if !text.ends_with("\n\n")
        && let Some(last) = text.rsplit("\n\n").next()
        && !last.is_empty()
    {
        events.pop();
    }
    events
}

/// A Chat Completions stream put back together.
#[derive(Debug, Default)]
pub struct OpenAiStream {
    pub role: Option<String>,
    pub content: Option<String>,
    pub refusal: Option<String>,
    /// (id, name, arguments) per tool call index.
    pub tool_calls: Vec<(String, String, String)>,
    pub finish_reason: Option<String>,
    pub usage: Option<Value>,
    pub done: bool,
    pub chunks: usize,
    /// Argument deltas seen per tool call index.
    pub argument_deltas: Vec<usize>,
}

pub fn reassemble_openai(text: &str) -> OpenAiStream {
    let mut out = OpenAiStream::default();
    for event in parse_sse(text) {
        assert!(event.name.is_none(), "OpenAI events are unnamed");
        assert!(!out.done, "nothing may follow [DONE]");
        if event.data == "[DONE]" {
            out.done = true;
            continue;
        }
        out.chunks += 1;
        let chunk: Value = serde_json::from_str(&event.data).expect("chunk is JSON");
        assert_eq!(chunk["object"], "chat.completion.chunk");
        assert!(
            chunk["id"]
                .as_str()
                .is_some_and(|id| id.starts_with("chatcmpl-"))
        );
        if !chunk["usage"].is_null() && chunk.get("usage").is_some() {
            out.usage = Some(chunk["usage"].clone());
        }
        let Some(choice) = chunk["choices"].get(0) else {
            continue;
        };
        let delta = &choice["delta"];
        if let Some(role) = delta["role"].as_str() {
            out.role = Some(role.to_string());
        }
        if let Some(piece) = delta["content"].as_str() {
            out.content.get_or_insert_with(String::new).push_str(piece);
        }
        if let Some(piece) = delta["refusal"].as_str() {
            out.refusal.get_or_insert_with(String::new).push_str(piece);
        }
        for call in delta["tool_calls"].as_array().into_iter().flatten() {
            let index = call["index"].as_u64().expect("index") as usize;
            if index == out.tool_calls.len() {
                out.tool_calls.push((
                    call["id"]
                        .as_str()
                        .expect("first delta has the id")
                        .to_string(),
                    call["function"]["name"]
                        .as_str()
                        .expect("first delta has the name")
                        .to_string(),
                    String::new(),
                ));
                out.argument_deltas.push(0);
            }
            if let Some(piece) = call["function"]["arguments"].as_str()
                && !piece.is_empty()
            {
                out.tool_calls[index].2.push_str(piece);
                out.argument_deltas[index] += 1;
            }
        }
        if let Some(reason) = choice["finish_reason"].as_str() {
            out.finish_reason = Some(reason.to_string());
        }
    }
    out
}

/// An Anthropic stream put back together: the blocks as a non-streamed answer would carry
/// them (tool inputs parsed from the partial JSON, raw text kept in `partial`).
#[derive(Debug, Default)]
pub struct AnthropicStream {
    pub message: Option<Value>,
    pub blocks: Vec<Value>,
    /// The concatenated `partial_json` per block index.
    pub partial: Vec<String>,
    pub deltas: Vec<usize>,
    pub stop_reason: Option<String>,
    pub output_tokens: Option<u64>,
    pub stopped: bool,
    pub event_names: Vec<String>,
}

pub fn reassemble_anthropic(text: &str) -> AnthropicStream {
    let mut out = AnthropicStream::default();
    for event in parse_sse(text) {
        let name = event.name.clone().expect("Anthropic events are named");
        assert!(!out.stopped, "nothing may follow message_stop");
        let data: Value = serde_json::from_str(&event.data).expect("event data is JSON");
        assert_eq!(data["type"], name.as_str(), "event name matches its type");
        out.event_names.push(name.clone());
        match name.as_str() {
            "message_start" => out.message = Some(data["message"].clone()),
            "ping" => {}
            "content_block_start" => {
                let index = data["index"].as_u64().expect("index") as usize;
                assert_eq!(index, out.blocks.len(), "blocks start in order");
                out.blocks.push(data["content_block"].clone());
                out.partial.push(String::new());
                out.deltas.push(0);
            }
            "content_block_delta" => {
                let index = data["index"].as_u64().expect("index") as usize;
                let delta = &data["delta"];
                out.deltas[index] += 1;
                match delta["type"].as_str() {
                    Some("text_delta") => {
                        let text = out.blocks[index]["text"].as_str().unwrap_or("").to_string();
                        out.blocks[index]["text"] =
                            json!(text + delta["text"].as_str().expect("text"));
                    }
                    Some("input_json_delta") => {
                        out.partial[index]
                            .push_str(delta["partial_json"].as_str().expect("partial_json"));
                    }
                    other => panic!("unexpected delta type {other:?}"),
                }
            }
            "content_block_stop" => {
                let index = data["index"].as_u64().expect("index") as usize;
                let block = &mut out.blocks[index];
                if matches!(block["type"].as_str(), Some("tool_use" | "server_tool_use")) {
                    let partial = &out.partial[index];
                    block["input"] = if partial.is_empty() {
                        json!({})
                    } else {
                        serde_json::from_str(partial).unwrap_or(Value::Null)
                    };
                }
            }
            "message_delta" => {
                out.stop_reason = data["delta"]["stop_reason"].as_str().map(str::to_string);
                assert!(data["delta"]["stop_sequence"].is_null());
                out.output_tokens = data["usage"]["output_tokens"].as_u64();
            }
            "message_stop" => out.stopped = true,
            other => panic!("unexpected event {other}"),
        }
    }
    out
}
