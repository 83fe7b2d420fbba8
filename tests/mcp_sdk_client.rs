//! A real MCP client against the reference host's MCP mount: the Python `mcp` SDK (2.3.0,
//! installed pinned into `target/mcp-peers/py` by `scripts/install-mcp-peers.sh`) connects,
//! lists the tools and calls one through `scripts/mcp-sdk-client.py`; and calls a tool as an
//! MCP task (MCP-14), polling `tasks/get` to completion.
//!
//! The mount is stateless (MCP-10 forbids `initialize` and sessions): the SDK's default `auto`
//! mode probes `server/discover` first and adopts the revision it names, so it must connect
//! without ever sending `initialize`. The tests run the install script first; when the SDK
//! cannot be installed they fail saying what to install: a skipped real-client test would look
//! like a pass.

use crate::support::peers;

use std::process::{Command, Output};
use std::time::Duration;

use serde_json::Value;

/// Runs `scripts/mcp-sdk-client.py <mount> <token> [tool]` against the host's `/mcp` mount, off
/// the runtime so the host keeps serving. Bounded: the script gives up after 30 s, this wait
/// after 60 s. Returns what the client printed (one JSON object) and its process output.
async fn run_client(base_url: &str, tool: Option<&str>) -> (Value, Output) {
    let python = peers::python();
    let script = peers::root().join("scripts/mcp-sdk-client.py");
    let mut command = Command::new(python);
    command
        .arg(script)
        .arg(format!("{base_url}/mcp"))
        .arg("refhost-alice-token");
    if let Some(tool) = tool {
        command.arg(tool);
    }
    let run = tokio::task::spawn_blocking(move || command.output());
    let out = tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("the SDK client finishes within 60 s")
        .expect("the blocking task ran")
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let seen = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("the client printed no JSON ({e}):\n{stdout}\n{stderr}"));
    (seen, out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_lists_and_calls_tools_on_the_mount_without_initialize() {
    let host = reference_host::start(reference_host::HostConfig::default())
        .await
        .expect("the reference host starts");
    let (seen, out) = run_client(&host.base_url, None).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(seen["protocolVersion"], "2026-07-28", "{seen}\n{stderr}");
    assert_eq!(
        seen["discovered"], true,
        "the SDK adopted server/discover: {seen}"
    );
    assert_eq!(
        seen["initialized"], false,
        "the SDK never needed initialize: {seen}"
    );
    assert!(
        seen["tools"].is_array(),
        "tools/list answered a list: {seen}"
    );
    // The call reached the host: its own -32602 "Unknown tool" for a name it does not list.
    assert_eq!(seen["unknownCall"]["code"], -32602, "{seen}");
    assert!(out.status.success(), "{seen}\n{stderr}");
}

/// MCP-14 with a real client: the SDK (2.3.0) has no Tasks extension of its own, only the
/// extension hooks (SEP-2133), so `scripts/mcp-sdk-client.py` writes one on them. The SDK
/// advertises `io.modelcontextprotocol/tasks` in the call's client capabilities, the mount
/// answers `CreateTaskResult` for a run whose model takes 1.5 s, and the SDK's claim resolves it
/// by polling `tasks/get` until the task completes with the run's answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_calls_a_tool_as_a_task_and_polls_it_to_completion() {
    let provider = mock_provider::MockProvider::start()
        .await
        .expect("the mock provider starts");
    let script = mock_provider::Script::from_json(&serde_json::json!({
        "model": "sdk-tasks",
        "rounds": [{"text": "Done by the task.", "delayMs": 1500}]
    }))
    .expect("a valid script");
    provider.load(script).expect("the script loads");
    let host = reference_host::start(reference_host::HostConfig {
        seams_enabled: true,
        ..reference_host::HostConfig::default()
    })
    .await
    .expect("the reference host starts");
    let registered = reqwest::Client::new()
        .post(format!(
            "{}/conformance/seams/sample/turn/run",
            host.base_url
        ))
        .bearer_auth("refhost-operator-token")
        .json(&serde_json::json!({
            "principal": "alice",
            "provider": {"wire": "openai-chat", "baseUrl": provider.base_url(), "model": "sdk-tasks"},
            "exposeAsMcpTool": "slow_agent",
        }))
        .send()
        .await
        .expect("the seam answers");
    assert_eq!(registered.status().as_u16(), 201);
    let (seen, out) = run_client(&host.base_url, Some("slow_agent")).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(seen["created"]["resultType"], "task", "{seen}\n{stderr}");
    assert_eq!(seen["created"]["status"], "working", "{seen}");
    let task_id = seen["created"]["taskId"].as_str().unwrap_or_default();
    assert!(
        task_id.starts_with("run_"),
        "the taskId is the run id: {seen}"
    );
    assert_eq!(seen["finalStatus"], "completed", "{seen}");
    assert!(seen["polls"].as_u64().is_some_and(|n| n >= 1), "{seen}");
    assert_eq!(seen["isError"], false, "{seen}");
    assert_eq!(seen["text"], "Done by the task.", "{seen}");
    assert_eq!(
        seen["reread"],
        serde_json::json!({"resultType": "complete", "status": "completed"}),
        "{seen}"
    );
    assert!(out.status.success(), "{seen}\n{stderr}");
    host.shutdown().await;
}
