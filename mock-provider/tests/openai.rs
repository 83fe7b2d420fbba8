//! Chat Completions over real HTTP: every round kind, streamed and not.

use crate::common;

use std::time::{Duration, Instant};

use common::*;
use mock_provider::Endpoint;
use serde_json::{Value, json};

const MODEL: &str = "tc-openai";

fn message(raw: &Raw) -> Value {
    assert_eq!(raw.status, 200, "{}", raw.text());
    let body = raw.json();
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(body["model"], MODEL);
    assert!(
        body["id"]
            .as_str()
            .is_some_and(|id| id.starts_with("chatcmpl-"))
    );
    assert!(body["created"].as_u64().is_some());
    let usage = &body["usage"];
    assert_eq!(
        usage["total_tokens"].as_u64(),
        Some(
            usage["prompt_tokens"].as_u64().unwrap() + usage["completion_tokens"].as_u64().unwrap()
        )
    );
    assert_eq!(body["choices"][0]["index"], 0);
    let mut message = body["choices"][0]["message"].clone();
    message["finish_reason"] = body["choices"][0]["finish_reason"].clone();
    message
}

fn tool_rounds() -> Value {
    json!([{
        "text": "Let me check.",
        "toolCalls": [
            {"name": "get_weather", "arguments": {"city": "Oslo", "units": ["c", "f"], "note": "snø ✓"}},
            {"name": "lookup", "id": "call_custom", "argumentsText": "{\"q\": \"broken"},
            {"name": "ping", "argumentsText": ""},
        ]
    }])
}

#[tokio::test]
async fn tool_calls_unstreamed() {
    let provider = provider_with(MODEL, tool_rounds()).await;
    let message = message(&openai(&provider, &openai_request(MODEL, false)).await);
    assert_eq!(message["role"], "assistant");
    assert_eq!(message["content"], "Let me check.");
    assert_eq!(message["refusal"], Value::Null);
    assert_eq!(message["finish_reason"], "tool_calls");
    let calls = message["tool_calls"].as_array().expect("tool_calls");
    assert_eq!(calls.len(), 3);
    assert_eq!(calls[0]["id"], "call_1");
    assert_eq!(calls[0]["type"], "function");
    assert_eq!(calls[0]["function"]["name"], "get_weather");
    let args: Value =
        serde_json::from_str(calls[0]["function"]["arguments"].as_str().expect("text"))
            .expect("JSON");
    assert_eq!(
        args,
        json!({"city": "Oslo", "units": ["c", "f"], "note": "snø ✓"})
    );
    assert_eq!(calls[1]["id"], "call_custom");
    assert_eq!(calls[1]["function"]["arguments"], "{\"q\": \"broken");
    assert_eq!(calls[2]["id"], "call_3");
    assert_eq!(calls[2]["function"]["arguments"], "");
    provider.shutdown().await;
}

#[tokio::test]
async fn tool_calls_streamed_reassemble_to_the_script() {
    let provider = provider_with(MODEL, tool_rounds()).await;
    let raw = openai(&provider, &openai_request(MODEL, true)).await;
    assert_eq!(raw.status, 200);
    assert_eq!(
        raw.headers["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    assert!(!raw.cut);
    let stream = reassemble_openai(&raw.text());
    assert!(stream.done, "ends with [DONE]");
    assert_eq!(stream.role.as_deref(), Some("assistant"));
    assert_eq!(stream.content.as_deref(), Some("Let me check."));
    assert_eq!(stream.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(stream.tool_calls.len(), 3);
    let (id, name, arguments) = &stream.tool_calls[0];
    assert_eq!((id.as_str(), name.as_str()), ("call_1", "get_weather"));
    assert_eq!(
        serde_json::from_str::<Value>(arguments).expect("JSON"),
        json!({"city": "Oslo", "units": ["c", "f"], "note": "snø ✓"})
    );
    assert_eq!(stream.tool_calls[1].2, "{\"q\": \"broken");
    assert_eq!(stream.tool_calls[2].2, "");
    assert!(stream.argument_deltas[0] >= 2, "arguments arrive in pieces");
    assert!(stream.argument_deltas[1] >= 2);
    assert_eq!(stream.argument_deltas[2], 0);
    // The 13-char preamble arrives in at least two content deltas.
    assert!(raw.text().matches("\"content\":").count() >= 2);
    provider.shutdown().await;
}

#[tokio::test]
async fn text_structured_and_truncated() {
    let rounds = json!([
        {"text": "Hello there, this is a longer answer."},
        {"structured": {"answer": 42, "items": ["a"]}},
        {"truncated": {"text": "The answer is", "toolCalls": [{"name": "f", "argumentsText": "{\"a\": [1, 2"}]}},
        {"truncated": {}},
        {"text": "Hello there, this is a longer answer."},
        {"structured": {"answer": 42, "items": ["a"]}},
        {"truncated": {"text": "The answer is", "toolCalls": [{"name": "f", "argumentsText": "{\"a\": [1, 2"}]}},
    ]);
    let provider = provider_with(MODEL, rounds).await;

    let text = message(&openai(&provider, &openai_request(MODEL, false)).await);
    assert_eq!(text["content"], "Hello there, this is a longer answer.");
    assert_eq!(text["finish_reason"], "stop");
    assert!(text.get("tool_calls").is_none());

    let structured = message(&openai(&provider, &openai_request(MODEL, false)).await);
    let parsed: Value = serde_json::from_str(structured["content"].as_str().unwrap()).unwrap();
    assert_eq!(parsed, json!({"answer": 42, "items": ["a"]}));
    assert_eq!(structured["finish_reason"], "stop");

    let truncated = message(&openai(&provider, &openai_request(MODEL, false)).await);
    assert_eq!(truncated["finish_reason"], "length");
    assert_eq!(truncated["content"], "The answer is");
    assert_eq!(truncated["tool_calls"][0]["id"], "call_1");
    assert_eq!(
        truncated["tool_calls"][0]["function"]["arguments"],
        "{\"a\": [1, 2"
    );

    let empty = message(&openai(&provider, &openai_request(MODEL, false)).await);
    assert_eq!(empty["finish_reason"], "length");
    assert_eq!(empty["content"], "");

    let stream = reassemble_openai(&openai(&provider, &openai_request(MODEL, true)).await.text());
    assert_eq!(
        stream.content.as_deref(),
        Some("Hello there, this is a longer answer.")
    );
    assert_eq!(stream.finish_reason.as_deref(), Some("stop"));
    assert!(stream.done);

    let stream = reassemble_openai(&openai(&provider, &openai_request(MODEL, true)).await.text());
    let parsed: Value = serde_json::from_str(stream.content.as_deref().unwrap()).unwrap();
    assert_eq!(parsed, json!({"answer": 42, "items": ["a"]}));

    let stream = reassemble_openai(&openai(&provider, &openai_request(MODEL, true)).await.text());
    assert_eq!(stream.finish_reason.as_deref(), Some("length"));
    assert_eq!(stream.content.as_deref(), Some("The answer is"));
    // Ids continue across the script: the second truncated round's call is the script's 2nd.
    assert_eq!(stream.tool_calls[0].0, "call_2");
    assert_eq!(stream.tool_calls[0].2, "{\"a\": [1, 2");
    assert!(
        provider.problems(MODEL).is_empty(),
        "{:?}",
        provider.problems(MODEL)
    );
    provider.shutdown().await;
}

#[tokio::test]
async fn refusal_and_content_filter() {
    let rounds = json!([
        {"refusal": "I can't help with that request."},
        {"contentFilter": "blocked"},
        {"refusal": "I can't help with that request."},
        {"contentFilter": "blocked"},
    ]);
    let provider = provider_with(MODEL, rounds).await;
    let refusal = message(&openai(&provider, &openai_request(MODEL, false)).await);
    assert_eq!(refusal["content"], Value::Null);
    assert_eq!(refusal["refusal"], "I can't help with that request.");
    assert_eq!(refusal["finish_reason"], "stop");

    let filtered = message(&openai(&provider, &openai_request(MODEL, false)).await);
    assert_eq!(filtered["content"], Value::Null);
    assert_eq!(filtered["finish_reason"], "content_filter");

    let stream = reassemble_openai(&openai(&provider, &openai_request(MODEL, true)).await.text());
    assert_eq!(
        stream.refusal.as_deref(),
        Some("I can't help with that request.")
    );
    assert_eq!(stream.content, None);
    assert_eq!(stream.finish_reason.as_deref(), Some("stop"));

    let stream = reassemble_openai(&openai(&provider, &openai_request(MODEL, true)).await.text());
    assert_eq!(stream.finish_reason.as_deref(), Some("content_filter"));
    assert_eq!(stream.content, None);
    assert!(stream.done);
    provider.shutdown().await;
}

#[tokio::test]
async fn scripted_errors_are_provider_shaped() {
    let rounds = json!([
        {"error": {"status": 429, "message": "Rate limit reached"}},
        {"error": {"status": 503, "message": "overloaded"}},
        {"error": {"status": 500, "message": "boom"}},
    ]);
    let provider = provider_with(MODEL, rounds).await;
    let limited = openai(&provider, &openai_request(MODEL, true)).await;
    assert_eq!(limited.status, 429);
    assert_eq!(limited.headers["retry-after"], "1");
    let body = limited.json();
    assert_eq!(body["error"]["message"], "Rate limit reached");
    assert_eq!(body["error"]["code"], "rate_limit_exceeded");
    assert!(body["error"].get("param").is_some());

    let overloaded = openai(&provider, &openai_request(MODEL, false)).await;
    assert_eq!(overloaded.status, 503);
    assert_eq!(overloaded.json()["error"]["type"], "server_error");
    assert!(overloaded.headers.get("retry-after").is_none());

    let failed = openai(&provider, &openai_request(MODEL, false)).await;
    assert_eq!(failed.status, 500);
    assert_eq!(failed.json()["error"]["message"], "boom");
    // Scripted errors are what the test asked for, not problems.
    assert!(provider.problems(MODEL).is_empty());
    let recorded = provider.requests(MODEL);
    assert_eq!(recorded[0].round, Some(0));
    assert_eq!(recorded[0].answered, "round 0 (error 429)");
    provider.shutdown().await;
}

#[tokio::test]
async fn provider_tools_are_anthropic_only() {
    let rounds =
        json!([{"providerTool": {"name": "web_search", "input": {"query": "q"}, "result": []}}]);
    let provider = provider_with(MODEL, rounds).await;
    let raw = openai(&provider, &openai_request(MODEL, false)).await;
    assert_eq!(raw.status, 400);
    let body = raw.json();
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Anthropic Messages")
    );
    assert_eq!(body["error"]["code"], Value::Null);
    let problems = provider.problems(MODEL);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].contains("provider-executed"), "{problems:?}");
    assert_eq!(provider.requests(MODEL)[0].round, Some(0));
    provider.shutdown().await;
}

#[tokio::test]
async fn cut_stream_ends_without_done() {
    let rounds = json!([
        {"text": "a fairly long answer that is cut", "cutAfterChunks": 2},
        {"text": "short", "cutAfterChunks": 1000},
        {"text": "not streamed", "cutAfterChunks": 0},
    ]);
    let provider = provider_with(MODEL, rounds).await;
    let raw = openai(&provider, &openai_request(MODEL, true)).await;
    assert_eq!(raw.status, 200);
    assert!(raw.cut, "the connection is dropped");
    let stream = reassemble_openai(&raw.text());
    assert_eq!(stream.chunks, 2);
    assert!(!stream.done);
    assert_eq!(stream.finish_reason, None);

    // A count past the answer still never reaches [DONE].
    let raw = openai(&provider, &openai_request(MODEL, true)).await;
    assert!(raw.cut);
    let stream = reassemble_openai(&raw.text());
    assert!(!stream.done);
    assert_eq!(stream.finish_reason.as_deref(), Some("stop"));

    let raw = openai(&provider, &openai_request(MODEL, false)).await;
    assert_eq!(raw.status, 200);
    assert!(raw.cut, "the body breaks off");
    assert!(
        serde_json::from_slice::<Value>(&raw.body).is_err(),
        "partial JSON"
    );
    assert!(!raw.body.is_empty());
    provider.shutdown().await;
}

#[tokio::test]
async fn include_usage_adds_a_usage_chunk() {
    let provider = provider_with(MODEL, json!([{"text": "hi"}])).await;
    let mut request = openai_request(MODEL, true);
    request["stream_options"] = json!({"include_usage": true});
    let stream = reassemble_openai(&openai(&provider, &request).await.text());
    let usage = stream.usage.expect("usage chunk");
    assert!(usage["prompt_tokens"].as_u64().unwrap() >= 1);
    assert!(stream.done);
    provider.shutdown().await;
}

#[tokio::test]
async fn delays_are_honoured() {
    let provider = provider_with(
        MODEL,
        json!([{"text": "late", "delayMs": 300}, {"text": "late", "delayMs": 300}]),
    )
    .await;
    let started = Instant::now();
    let raw = openai(&provider, &openai_request(MODEL, false)).await;
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(raw.status, 200);
    let started = Instant::now();
    let stream = reassemble_openai(&openai(&provider, &openai_request(MODEL, true)).await.text());
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(stream.content.as_deref(), Some("late"));
    provider.shutdown().await;
}

#[tokio::test]
async fn unknown_key_and_past_the_end() {
    let provider = provider_with(MODEL, json!([{"text": "only"}])).await;
    let unknown = openai(&provider, &openai_request("tc-nobody", false)).await;
    assert_eq!(unknown.status, 404);
    let body = unknown.json();
    assert_eq!(body["error"]["code"], "model_not_found");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("tc-nobody")
    );
    assert_eq!(provider.problems("tc-nobody").len(), 1);
    assert_eq!(provider.requests("tc-nobody").len(), 1);

    assert_eq!(
        openai(&provider, &openai_request(MODEL, false))
            .await
            .status,
        200
    );
    let past = openai(&provider, &openai_request(MODEL, false)).await;
    assert_eq!(past.status, 400);
    let message = past.json()["error"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        message.contains(MODEL) && message.contains("1 round"),
        "{message}"
    );
    assert_eq!(past.json()["error"]["type"], "invalid_request_error");
    let problems = provider.problems(MODEL);
    assert_eq!(problems.len(), 1);
    let recorded = provider.requests(MODEL);
    assert_eq!(recorded.len(), 2);
    assert_eq!(recorded[1].round, None);
    assert!(
        recorded[1].answered.starts_with("error: 400"),
        "{}",
        recorded[1].answered
    );
    provider.shutdown().await;
}

#[tokio::test]
async fn malformed_requests_are_400_and_recorded() {
    let provider = provider_with(MODEL, json!([{"text": "never consumed by bad requests"}])).await;
    let missing_messages = openai(&provider, &json!({"model": MODEL})).await;
    assert_eq!(missing_messages.status, 400);
    let body = missing_messages.json();
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert_eq!(body["error"]["param"], "messages");
    assert_eq!(body["error"]["code"], Value::Null);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("messages")
    );

    let lost_result = json!({"model": MODEL, "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "user", "content": "and?"},
    ]});
    let raw = openai(&provider, &lost_result).await;
    assert_eq!(raw.status, 400);
    assert!(
        raw.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("call_1")
    );

    // Bad requests consume no round: the script's only round is still there.
    let ok = message(&openai(&provider, &openai_request(MODEL, false)).await);
    assert_eq!(ok["content"], "never consumed by bad requests");
    let problems = provider.problems(MODEL);
    assert_eq!(problems.len(), 2, "{problems:?}");
    let recorded = provider.requests(MODEL);
    assert_eq!(recorded.len(), 3);
    assert_eq!(recorded[0].round, None);
    assert_eq!(recorded[2].round, Some(0));
    assert!(recorded.iter().all(|r| r.endpoint == Endpoint::OpenAiChat));

    // Not JSON at all: filed under "".
    let raw = send(
        client()
            .post(format!("{}/v1/chat/completions", provider.base_url()))
            .header("content-type", "application/json")
            .body("{not json"),
    )
    .await;
    assert_eq!(raw.status, 400);
    let nobody = provider.requests("");
    assert_eq!(nobody.len(), 1);
    assert_eq!(nobody[0].body, json!({"$nonJson": "{not json"}));
    assert_eq!(provider.problems("").len(), 1);
    provider.shutdown().await;
}
