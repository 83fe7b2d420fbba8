//! Anthropic Messages over real HTTP: every round kind, streamed and not.

use crate::common;

use std::time::{Duration, Instant};

use common::*;
use mock_provider::Endpoint;
use serde_json::{Value, json};

const MODEL: &str = "tc-anthropic";

fn message(raw: &Raw) -> Value {
    assert_eq!(raw.status, 200, "{}", raw.text());
    let body = raw.json();
    assert_eq!(body["type"], "message");
    assert_eq!(body["role"], "assistant");
    assert_eq!(body["model"], MODEL);
    assert!(body["id"].as_str().is_some_and(|id| id.starts_with("msg_")));
    assert_eq!(body["stop_sequence"], Value::Null);
    assert!(body["usage"]["input_tokens"].as_u64().is_some());
    assert!(body["usage"]["output_tokens"].as_u64().is_some());
    body
}

fn streamed(raw: &Raw) -> AnthropicStream {
    assert_eq!(raw.status, 200, "{}", raw.text());
    assert_eq!(
        raw.headers["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    let stream = reassemble_anthropic(&raw.text());
    let start = stream.message.as_ref().expect("message_start");
    assert_eq!(start["content"], json!([]));
    assert_eq!(start["model"], MODEL);
    stream
}

const ARGS: &str = r#"{"city": "Oslo", "days": [1, 2, 3], "note": "snø ✓"}"#;

fn tool_rounds() -> Value {
    let args: Value = serde_json::from_str(ARGS).unwrap();
    json!([{
        "text": "Let me check.",
        "toolCalls": [
            {"name": "get_weather", "arguments": args},
            {"name": "lookup", "id": "toolu_custom", "argumentsText": "{\"q\": 1}"},
            {"name": "ping", "argumentsText": ""},
        ]
    }])
}

#[tokio::test]
async fn tool_use_unstreamed() {
    let provider = provider_with(MODEL, tool_rounds()).await;
    let body = message(&anthropic(&provider, &anthropic_request(MODEL, false)).await);
    assert_eq!(body["stop_reason"], "tool_use");
    let content = body["content"].as_array().unwrap();
    assert_eq!(content[0], json!({"type": "text", "text": "Let me check."}));
    assert_eq!(content[1]["type"], "tool_use");
    assert_eq!(content[1]["id"], "toolu_1");
    assert_eq!(content[1]["name"], "get_weather");
    assert_eq!(
        content[1]["input"],
        serde_json::from_str::<Value>(ARGS).unwrap()
    );
    assert_eq!(content[2]["id"], "toolu_custom");
    assert_eq!(content[2]["input"], json!({"q": 1}));
    assert_eq!(content[3]["id"], "toolu_3");
    assert_eq!(content[3]["input"], json!({}));
    provider.shutdown().await;
}

#[tokio::test]
async fn tool_use_streamed_reassembles_to_the_script() {
    let provider = provider_with(MODEL, tool_rounds()).await;
    let stream = streamed(&anthropic(&provider, &anthropic_request(MODEL, true)).await);
    assert!(stream.stopped, "ends with message_stop");
    assert_eq!(stream.event_names[..2], ["message_start", "ping"]);
    assert_eq!(stream.stop_reason.as_deref(), Some("tool_use"));
    assert!(stream.output_tokens.is_some());
    assert_eq!(
        stream.blocks[0],
        json!({"type": "text", "text": "Let me check."})
    );
    assert!(stream.deltas[0] >= 2, "text arrives in pieces");
    let tool = &stream.blocks[1];
    assert_eq!(tool["type"], "tool_use");
    assert_eq!(tool["id"], "toolu_1");
    assert_eq!(tool["name"], "get_weather");
    assert_eq!(tool["input"], serde_json::from_str::<Value>(ARGS).unwrap());
    assert!(stream.deltas[1] >= 2, "input_json_delta arrives in pieces");
    assert_eq!(stream.partial[2], "{\"q\": 1}");
    assert_eq!(stream.blocks[3]["input"], json!({}));
    assert_eq!(stream.deltas[3], 0);
    provider.shutdown().await;
}

#[tokio::test]
async fn invalid_arguments_text_streams_verbatim_but_cannot_be_unstreamed() {
    let call = json!([{"toolCalls": [{"name": "f", "argumentsText": "{\"path\": \"/tm"}]}]);
    let provider = provider_with(MODEL, json!([call[0].clone(), call[0].clone()])).await;
    let stream = streamed(&anthropic(&provider, &anthropic_request(MODEL, true)).await);
    assert_eq!(stream.partial[0], "{\"path\": \"/tm");
    assert!(stream.deltas[0] >= 2);
    assert!(stream.stopped);

    let raw = anthropic(&provider, &anthropic_request(MODEL, false)).await;
    assert_eq!(raw.status, 500);
    let body = raw.json();
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["type"], "api_error");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("argumentsText")
    );
    assert_eq!(provider.problems(MODEL).len(), 1);
    provider.shutdown().await;
}

#[tokio::test]
async fn text_structured_truncated_refusal_filter() {
    let rounds = json!([
        {"text": "Hello there, this is a longer answer."},
        {"structured": {"answer": 42}},
        {"truncated": {"text": "The answer", "toolCalls": [{"name": "f", "argumentsText": "{\"a\": [1,"}]}},
        {"refusal": "I won't do that."},
        {"contentFilter": "Filtered."},
    ]);
    // Every round twice: once answered unstreamed, once streamed.
    let mut all = rounds.as_array().unwrap().clone();
    all.extend(rounds.as_array().unwrap().iter().cloned());
    let provider = provider_with(MODEL, Value::Array(all)).await;

    let text = message(&anthropic(&provider, &anthropic_request(MODEL, false)).await);
    assert_eq!(
        text["content"],
        json!([{"type": "text", "text": "Hello there, this is a longer answer."}])
    );
    assert_eq!(text["stop_reason"], "end_turn");
    let structured = message(&anthropic(&provider, &anthropic_request(MODEL, false)).await);
    let parsed: Value =
        serde_json::from_str(structured["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(parsed, json!({"answer": 42}));
    // A truncated call whose text is cut JSON cannot be unstreamed either: it is a 500.
    let truncated = anthropic(&provider, &anthropic_request(MODEL, false)).await;
    assert_eq!(truncated.status, 500);
    let refusal = message(&anthropic(&provider, &anthropic_request(MODEL, false)).await);
    assert_eq!(refusal["stop_reason"], "refusal");
    assert_eq!(refusal["content"][0]["text"], "I won't do that.");
    let filtered = message(&anthropic(&provider, &anthropic_request(MODEL, false)).await);
    assert_eq!(filtered["stop_reason"], "refusal");
    assert_eq!(filtered["content"][0]["text"], "Filtered.");

    let text = streamed(&anthropic(&provider, &anthropic_request(MODEL, true)).await);
    assert_eq!(
        text.blocks,
        vec![json!({"type": "text", "text": "Hello there, this is a longer answer."})]
    );
    assert_eq!(text.stop_reason.as_deref(), Some("end_turn"));
    let structured = streamed(&anthropic(&provider, &anthropic_request(MODEL, true)).await);
    let parsed: Value =
        serde_json::from_str(structured.blocks[0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(parsed, json!({"answer": 42}));
    let truncated = streamed(&anthropic(&provider, &anthropic_request(MODEL, true)).await);
    assert_eq!(truncated.stop_reason.as_deref(), Some("max_tokens"));
    assert_eq!(truncated.blocks[0]["text"], "The answer");
    assert_eq!(truncated.partial[1], "{\"a\": [1,");
    assert_eq!(
        truncated.blocks[1]["id"], "toolu_2",
        "ids count across the script"
    );
    let refusal = streamed(&anthropic(&provider, &anthropic_request(MODEL, true)).await);
    assert_eq!(refusal.stop_reason.as_deref(), Some("refusal"));
    assert_eq!(refusal.blocks[0]["text"], "I won't do that.");
    let filtered = streamed(&anthropic(&provider, &anthropic_request(MODEL, true)).await);
    assert_eq!(filtered.stop_reason.as_deref(), Some("refusal"));
    assert!(filtered.stopped);
    provider.shutdown().await;
}

#[tokio::test]
async fn provider_tool_blocks() {
    let round = json!({"providerTool": {
        "name": "web_search",
        "input": {"query": "rust async"},
        "result": [{"type": "web_search_result", "url": "https://example.invalid", "title": "t", "encrypted_content": "x"}],
        "text": "Here is what I found."
    }});
    let provider = provider_with(MODEL, json!([round.clone(), round])).await;
    let body = message(&anthropic(&provider, &anthropic_request(MODEL, false)).await);
    assert_eq!(body["stop_reason"], "end_turn");
    let content = body["content"].as_array().unwrap();
    assert_eq!(content[0]["type"], "server_tool_use");
    assert_eq!(content[0]["id"], "srvtoolu_1");
    assert_eq!(content[0]["name"], "web_search");
    assert_eq!(content[0]["input"], json!({"query": "rust async"}));
    assert_eq!(content[1]["type"], "web_search_tool_result");
    assert_eq!(content[1]["tool_use_id"], "srvtoolu_1");
    assert_eq!(content[1]["content"][0]["url"], "https://example.invalid");
    assert_eq!(
        content[2],
        json!({"type": "text", "text": "Here is what I found."})
    );

    let stream = streamed(&anthropic(&provider, &anthropic_request(MODEL, true)).await);
    assert_eq!(stream.blocks[0]["type"], "server_tool_use");
    assert_eq!(stream.blocks[0]["id"], "srvtoolu_2");
    assert_eq!(stream.blocks[0]["input"], json!({"query": "rust async"}));
    assert_eq!(stream.blocks[1]["type"], "web_search_tool_result");
    assert_eq!(stream.blocks[1]["tool_use_id"], "srvtoolu_2");
    assert_eq!(stream.blocks[2]["text"], "Here is what I found.");
    assert_eq!(stream.stop_reason.as_deref(), Some("end_turn"));
    provider.shutdown().await;
}

#[tokio::test]
async fn scripted_errors_are_provider_shaped() {
    let rounds = json!([
        {"error": {"status": 429, "message": "slow down"}},
        {"error": {"status": 529, "message": "Overloaded"}},
        {"error": {"status": 500, "message": "boom"}},
    ]);
    let provider = provider_with(MODEL, rounds).await;
    let limited = anthropic(&provider, &anthropic_request(MODEL, true)).await;
    assert_eq!(limited.status, 429);
    assert_eq!(limited.headers["retry-after"], "1");
    assert_eq!(
        limited.json(),
        json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}})
    );
    let overloaded = anthropic(&provider, &anthropic_request(MODEL, false)).await;
    assert_eq!(overloaded.status, 529);
    assert_eq!(overloaded.json()["error"]["type"], "overloaded_error");
    let failed = anthropic(&provider, &anthropic_request(MODEL, false)).await;
    assert_eq!(failed.status, 500);
    assert_eq!(failed.json()["error"]["type"], "api_error");
    assert!(provider.problems(MODEL).is_empty());
    provider.shutdown().await;
}

#[tokio::test]
async fn cut_stream_ends_without_message_stop() {
    let rounds = json!([
        {"toolCalls": [{"name": "f", "arguments": {"long": "value that takes several deltas"}}], "cutAfterChunks": 4},
        {"text": "short", "cutAfterChunks": 1000},
        {"text": "not streamed", "cutAfterChunks": 3},
    ]);
    let provider = provider_with(MODEL, rounds).await;
    let raw = anthropic(&provider, &anthropic_request(MODEL, true)).await;
    assert!(raw.cut, "the connection is dropped");
    let stream = streamed(&raw);
    assert_eq!(stream.event_names.len(), 4);
    assert!(!stream.stopped);
    assert_eq!(stream.stop_reason, None);

    let raw = anthropic(&provider, &anthropic_request(MODEL, true)).await;
    assert!(raw.cut);
    let stream = streamed(&raw);
    assert!(
        !stream.stopped,
        "never message_stop, however large the count"
    );
    assert_eq!(stream.stop_reason.as_deref(), Some("end_turn"));

    let raw = anthropic(&provider, &anthropic_request(MODEL, false)).await;
    assert!(raw.cut);
    assert!(serde_json::from_slice::<Value>(&raw.body).is_err());
    provider.shutdown().await;
}

#[tokio::test]
async fn delays_are_honoured() {
    let provider = provider_with(MODEL, json!([{"text": "late", "delayMs": 250}])).await;
    let started = Instant::now();
    let stream = streamed(&anthropic(&provider, &anthropic_request(MODEL, true)).await);
    assert!(started.elapsed() >= Duration::from_millis(250));
    assert_eq!(stream.blocks[0]["text"], "late");
    provider.shutdown().await;
}

#[tokio::test]
async fn unknown_key_and_past_the_end() {
    let provider = provider_with(MODEL, json!([{"text": "one"}, {"text": "two"}])).await;
    let unknown = anthropic(&provider, &anthropic_request("tc-missing", false)).await;
    assert_eq!(unknown.status, 404);
    let body = unknown.json();
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["type"], "not_found_error");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("tc-missing")
    );
    assert_eq!(provider.problems("tc-missing").len(), 1);

    for _ in 0..2 {
        message(&anthropic(&provider, &anthropic_request(MODEL, false)).await);
    }
    let past = anthropic(&provider, &anthropic_request(MODEL, true)).await;
    assert_eq!(past.status, 400);
    let body = past.json();
    assert_eq!(body["error"]["type"], "invalid_request_error");
    let text = body["error"]["message"].as_str().unwrap();
    assert!(text.contains(MODEL) && text.contains("2 rounds"), "{text}");
    assert_eq!(provider.problems(MODEL).len(), 1);
    provider.shutdown().await;
}

#[tokio::test]
async fn malformed_requests_are_400_and_recorded() {
    let provider = provider_with(MODEL, json!([{"text": "kept"}])).await;
    let mut no_max = anthropic_request(MODEL, false);
    no_max.as_object_mut().unwrap().remove("max_tokens");
    let raw = anthropic(&provider, &no_max).await;
    assert_eq!(raw.status, 400);
    let body = raw.json();
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("max_tokens")
    );

    let raw = send(
        client()
            .post(format!("{}/v1/messages", provider.base_url()))
            .header("x-api-key", "sk-ant-secret")
            .json(&anthropic_request(MODEL, false)),
    )
    .await;
    assert_eq!(raw.status, 400);
    assert!(
        raw.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("anthropic-version")
    );

    let lost_result = json!({"model": MODEL, "max_tokens": 10, "messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}]},
        {"role": "user", "content": [{"type": "text", "text": "no result"}]},
    ]});
    let raw = anthropic(&provider, &lost_result).await;
    assert_eq!(raw.status, 400);
    assert!(
        raw.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("toolu_1")
    );

    let ok = message(&anthropic(&provider, &anthropic_request(MODEL, false)).await);
    assert_eq!(ok["content"][0]["text"], "kept");
    let problems = provider.problems(MODEL);
    assert_eq!(problems.len(), 3, "{problems:?}");
    let recorded = provider.requests(MODEL);
    assert_eq!(recorded.len(), 4);
    assert!(
        recorded
            .iter()
            .all(|r| r.endpoint == Endpoint::AnthropicMessages)
    );
    assert_eq!(recorded[3].round, Some(0));
    assert_eq!(recorded[0].headers["x-api-key"], "[redacted]");
    assert_eq!(recorded[0].headers["anthropic-version"], "2023-06-01");
    provider.shutdown().await;
}
