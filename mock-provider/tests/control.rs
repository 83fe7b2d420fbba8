//! Recording, the control API, the standalone server, and lifecycle.

use crate::common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::*;
use mock_provider::{Endpoint, MockProvider, ProviderState, RecordedRequest, Script, router};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

#[tokio::test]
async fn records_every_request_in_order_with_redacted_credentials() {
    let model = "tc-record";
    let provider = provider_with(
        model,
        json!([{"toolCalls": [{"name": "f", "arguments": {}}]}, {"text": "done"}]),
    )
    .await;
    assert!(provider.base_url().starts_with("http://127.0.0.1:"));
    assert!(!provider.base_url().ends_with('/'));
    openai(&provider, &openai_request(model, true)).await;
    let second = json!({"model": model, "messages": [
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "result text"},
    ]});
    openai(&provider, &second).await;

    let recorded = provider.requests(model);
    assert_eq!(recorded.len(), 2);
    assert_eq!(recorded[0].index, 0);
    assert_eq!(recorded[0].endpoint, Endpoint::OpenAiChat);
    assert!(recorded[0].stream);
    assert_eq!(recorded[0].round, Some(0));
    assert_eq!(recorded[0].answered, "round 0 (toolCalls)");
    assert_eq!(recorded[0].headers["authorization"], "[redacted]");
    assert!(recorded[0].headers.contains_key("content-type"));
    // The harness asserts on what the host fed back.
    assert_eq!(recorded[1].body["messages"][2]["content"], "result text");
    assert!(!recorded[1].stream);
    assert_eq!(recorded[1].answered, "round 1 (text)");

    let json = serde_json::to_value(&recorded[1]).expect("serializes");
    for key in [
        "index", "endpoint", "headers", "body", "stream", "round", "answered",
    ] {
        assert!(json.get(key).is_some(), "missing {key} in {json}");
    }
    assert_eq!(json["endpoint"], "openai-chat");
    provider.shutdown().await;
}

#[tokio::test]
async fn load_replaces_and_forget_clears() {
    let model = "tc-reload";
    let provider = provider_with(model, json!([{"text": "first"}])).await;
    openai(&provider, &openai_request(model, false)).await;
    assert_eq!(provider.requests(model).len(), 1);

    let script =
        Script::from_json(&json!({"model": model, "rounds": [{"text": "second"}]})).unwrap();
    provider.load(script).unwrap();
    assert!(
        provider.requests(model).is_empty(),
        "loading clears the record"
    );
    let raw = openai(&provider, &openai_request(model, false)).await;
    assert_eq!(raw.json()["choices"][0]["message"]["content"], "second");

    provider.forget(model);
    assert!(provider.requests(model).is_empty());
    assert_eq!(
        openai(&provider, &openai_request(model, false))
            .await
            .status,
        404
    );
    provider.shutdown().await;
}

#[tokio::test]
async fn a_replay_sends_nothing_and_that_is_visible() {
    let provider = provider_with("tc-replay", json!([{"text": "unused"}])).await;
    // The host never called: no requests, no problems.
    assert!(provider.requests("tc-replay").is_empty());
    assert!(provider.problems("tc-replay").is_empty());
    provider.shutdown().await;
}

#[tokio::test]
async fn concurrent_requests_each_get_their_own_round() {
    let model = "tc-concurrent";
    let rounds: Vec<Value> = (0..20).map(|i| json!({"text": format!("r{i}")})).collect();
    let provider = provider_with(model, Value::Array(rounds)).await;
    let client = client();
    let url = format!("{}/v1/chat/completions", provider.base_url());
    let mut tasks = Vec::new();
    for _ in 0..20 {
        let request = client.post(&url).json(&openai_request(model, false));
        tasks.push(tokio::spawn(async move {
            let body: Value = request.send().await.unwrap().json().await.unwrap();
            body["choices"][0]["message"]["content"]
                .as_str()
                .unwrap()
                .to_string()
        }));
    }
    let mut answers = Vec::new();
    for task in tasks {
        answers.push(task.await.unwrap());
    }
    answers.sort();
    let mut expected: Vec<String> = (0..20).map(|i| format!("r{i}")).collect();
    expected.sort();
    assert_eq!(answers, expected);
    let recorded = provider.requests(model);
    let rounds: Vec<Option<usize>> = recorded.iter().map(|r| r.round).collect();
    assert_eq!(
        rounds,
        (0..20).map(Some).collect::<Vec<_>>(),
        "recorded in round order"
    );
    provider.shutdown().await;
}

#[tokio::test]
async fn control_api_loads_reports_and_forgets() {
    let provider = MockProvider::start().await.unwrap();
    let base = provider.base_url().to_string();
    let client = client();

    let created = send(
        client
            .post(format!("{base}/_toolcert/scripts"))
            .json(&json!({
                "model": "tc-control", "rounds": [{"text": "hi"}, {"text": "again"}]
            })),
    )
    .await;
    assert_eq!(created.status, 201);
    assert_eq!(created.json(), json!({"model": "tc-control", "rounds": 2}));

    let rejected = send(
        client
            .post(format!("{base}/_toolcert/scripts"))
            .json(&json!({
                "model": "tc-control", "rounds": [{"text": "a"}, {"toolCalls": [{"arguments": {}}]}]
            })),
    )
    .await;
    assert_eq!(rejected.status, 400);
    let error = rejected.json();
    assert_eq!(error["error"]["pointer"], "/rounds/1/toolCalls/0/name");
    assert!(error["error"]["message"].as_str().is_some());

    let not_json = send(
        client
            .post(format!("{base}/_toolcert/scripts"))
            .body("nope"),
    )
    .await;
    assert_eq!(not_json.status, 400);
    assert_eq!(not_json.json()["error"]["pointer"], "");

    openai(&provider, &openai_request("tc-control", false)).await;
    openai(&provider, &openai_request("tc-control", false)).await;
    openai(&provider, &openai_request("tc-control", false)).await;
    let report = send(client.get(format!("{base}/_toolcert/scripts/tc-control/requests"))).await;
    assert_eq!(report.status, 200);
    let report = report.json();
    assert_eq!(report["model"], "tc-control");
    let requests: Vec<RecordedRequest> =
        serde_json::from_value(report["requests"].clone()).unwrap();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[2].round, None);
    assert_eq!(
        report["problems"].as_array().unwrap().len(),
        1,
        "past the end"
    );

    // Keys are path segments; a key with a slash is percent-encoded.
    let slashed = send(
        client
            .post(format!("{base}/_toolcert/scripts"))
            .json(&json!({
                "model": "org/model", "rounds": [{"text": "x"}]
            })),
    )
    .await;
    assert_eq!(slashed.status, 201);
    openai(&provider, &openai_request("org/model", false)).await;
    let report = send(client.get(format!("{base}/_toolcert/scripts/org%2Fmodel/requests"))).await;
    assert_eq!(report.json()["requests"].as_array().unwrap().len(), 1);

    let deleted = send(client.delete(format!("{base}/_toolcert/scripts/tc-control"))).await;
    assert_eq!(deleted.status, 204);
    let report = send(client.get(format!("{base}/_toolcert/scripts/tc-control/requests"))).await;
    assert_eq!(report.json()["requests"], json!([]));
    assert_eq!(
        openai(&provider, &openai_request("tc-control", false))
            .await
            .status,
        404
    );

    let elsewhere = send(client.get(format!("{base}/v1/models"))).await;
    assert_eq!(elsewhere.status, 404);
    assert!(
        elsewhere.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("/v1/models")
    );
    provider.shutdown().await;
}

#[tokio::test]
async fn router_serves_a_caller_owned_state() {
    let state = ProviderState::new();
    state
        .load(
            Script::from_json(&json!({"model": "tc-router", "rounds": [{"text": "ok"}]})).unwrap(),
        )
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = loopback_http::Server::start(listener, router(state.clone())).unwrap();
    let raw = send(
        client()
            .post(format!("http://{addr}/v1/chat/completions"))
            .json(&openai_request("tc-router", false)),
    )
    .await;
    assert_eq!(raw.status, 200);
    assert_eq!(state.requests("tc-router").len(), 1);
    server.shutdown(Duration::from_secs(2)).await;
}

#[tokio::test]
async fn shutdown_is_bounded_even_with_a_delayed_answer_in_flight() {
    let provider = provider_with("tc-slow", json!([{"text": "late", "delayMs": 30000}])).await;
    let url = format!("{}/v1/chat/completions", provider.base_url());
    let pending = tokio::spawn(async move {
        let _ = client()
            .post(url)
            .json(&openai_request("tc-slow", false))
            .send()
            .await;
    });
    // Let the request arrive and start its delay.
    let deadline = Instant::now() + Duration::from_secs(5);
    while provider.requests("tc-slow").is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(provider.requests("tc-slow").len(), 1, "recorded on arrival");
    let started = Instant::now();
    provider.shutdown().await;
    assert!(started.elapsed() < Duration::from_secs(5));
    pending.abort();
}

#[tokio::test]
async fn binds_loopback_only() {
    let public: SocketAddr = "0.0.0.0:0".parse().unwrap();
    let error = MockProvider::bind(public).await.expect_err("not loopback");
    assert_eq!(error.kind(), std::io::ErrorKind::InvalidInput);
    let provider = MockProvider::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    assert_eq!(provider.local_addr().ip().to_string(), "127.0.0.1");
    provider.shutdown().await;
}

#[tokio::test]
async fn standalone_binary_prints_its_url_and_serves() {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_mock-provider"))
        .arg("127.0.0.1:0")
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("binary starts");
    let stdout = child.stdout.take().expect("stdout");
    let mut line = String::new();
    tokio::time::timeout(
        Duration::from_secs(10),
        BufReader::new(stdout).read_line(&mut line),
    )
    .await
    .expect("prints within 10 s")
    .expect("reads stdout");
    let url = line
        .trim_end()
        .strip_prefix("mock-provider listening on ")
        .unwrap_or_else(|| panic!("unexpected line {line:?}"))
        .to_string();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");

    let created = send(
        client()
            .post(format!("{url}/_toolcert/scripts"))
            .json(&json!({
                "model": "tc-standalone", "rounds": [{"text": "from the binary"}]
            })),
    )
    .await;
    assert_eq!(created.status, 201);
    let raw = send(
        client()
            .post(format!("{url}/v1/messages"))
            .header("anthropic-version", "2023-06-01")
            .json(&anthropic_request("tc-standalone", false)),
    )
    .await;
    assert_eq!(raw.json()["content"][0]["text"], "from the binary");
    child.kill().await.expect("stops");

    let refused = tokio::process::Command::new(env!("CARGO_BIN_EXE_mock-provider"))
        .arg("0.0.0.0:0")
        .output()
        .await
        .expect("runs");
    assert!(
        !refused.status.success(),
        "non-loopback addresses are refused"
    );
}
