//! The real A2A client: `a2a-sdk` (PyPI, pinned in `scripts/install-mcp-peers.sh`, installed
//! into the `target/mcp-peers/py` venv, which this test runs first) resolves the reference
//! host's agent card with its own resolver and parser, sends one message twice with the same
//! messageId and reads the task back (`tests/a2a/client.py`).
//!
//! What is asserted: the SDK parses the card, every interface it read names a version the host
//! advertises in its `a2a` facet, each send gets a Task back (item 4: a row toolcert passes
//! must also satisfy the real client), the repeated send names the same task (A2A-7), no state
//! the SDK parsed is `TASK_STATE_AUTH_REQUIRED` (A2A-4), and GetTask and ListTasks return the
//! task to its owner. Then the per-agent card (A2A-8, RFC 0202): the SDK fetches the extended
//! card with the first `a2aTenant` of `GET /agents` as `tenant` and parses the entry's
//! persona, pack version and description in it, with the routing value on every interface;
//! a client the SDK builds from that card sends through the agent (the SDK attaches the
//! interface's `tenant`), the run it made is the caller's (`GET /runs/{taskId}`), and ListTasks
//! through the agent lists that task and not the earlier one sent to the host. When the SDK
//! cannot be installed the test fails saying what to install.

use crate::support::peers;

use std::process::Command;

use serde_json::Value;

use peers::{python, root};

/// The bearer token of `alice` (tenant-a, runs:read and runs:write) among the built-ins.
const TOKEN: &str = "refhost-alice-token";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_a2a_sdk_reads_the_card_sends_and_reads_its_task() {
    let python = python();
    let host = reference_host::start(reference_host::HostConfig::default())
        .await
        .unwrap();
    let base = host.base_url.clone();
    let script = root().join("tests/a2a/client.py");
    let out = tokio::task::spawn_blocking(move || {
        Command::new(python)
            .arg(script)
            .arg(&base)
            .arg(TOKEN)
            .env("NO_PROXY", "127.0.0.1,localhost")
            .output()
    })
    .await
    .unwrap()
    .expect("run tests/a2a/client.py");
    let discovery: Value = reqwest::Client::builder()
        .no_proxy()
        .build()
        .unwrap()
        .get(format!("{}/.well-known/openwop", host.base_url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let agent_run = serde_json::from_str::<Value>(stdout.trim())
        .ok()
        .and_then(|r| r["agentSent"][0]["taskId"].as_str().map(str::to_owned));
    let agent_run_status = match agent_run {
        Some(run) => Some(
            reqwest::Client::builder()
                .no_proxy()
                .build()
                .unwrap()
                .get(format!("{}/runs/{run}", host.base_url))
                .bearer_auth(TOKEN)
                .send()
                .await
                .unwrap()
                .status()
                .as_u16(),
        ),
        None => None,
    };
    host.shutdown().await;
    let report: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|_| {
        panic!(
            "client.py printed no JSON (exit {}):\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert!(
        out.status.success(),
        "the a2a-sdk could not use the card: {report}"
    );
    let advertised = discovery["a2a"]["versions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let interfaces = report["card"]["interfaces"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        !interfaces.is_empty(),
        "the SDK read no interface: {report}"
    );
    for interface in &interfaces {
        assert!(
            advertised.contains(&interface["version"]),
            "the SDK read an interface version the facet does not advertise: {interface} vs {advertised:?}"
        );
        assert_eq!(interface["binding"], "JSONRPC", "{report}");
    }
    assert!(
        report.get("sendError").is_none(),
        "the a2a-sdk's send failed: {report}"
    );
    let sends = report["sent"].as_array().cloned().unwrap_or_default();
    assert_eq!(sends.len(), 2, "two sends: {report}");
    let mut ids = Vec::new();
    for send in &sends {
        let responses = send.as_array().cloned().unwrap_or_default();
        assert_eq!(responses.len(), 1, "one response per send: {report}");
        assert_eq!(responses[0]["kind"], "task", "{report}");
        ids.push(responses[0]["taskId"].clone());
    }
    assert!(ids[0].is_string(), "{report}");
    assert_eq!(
        ids[0], ids[1],
        "a repeated messageId names a second task: {report}"
    );
    assert_eq!(report["got"]["taskId"], ids[0], "{report}");
    let listed = report["listed"].as_array().cloned().unwrap_or_default();
    assert!(
        listed.iter().any(|task| task["taskId"] == ids[0]),
        "ListTasks lacks the caller's task: {report}"
    );
    let states = sends
        .iter()
        .flat_map(|send| send.as_array().cloned().unwrap_or_default())
        .map(|response| response["state"].clone())
        .chain([report["got"]["state"].clone()])
        .chain(listed.iter().map(|task| task["state"].clone()));
    for state in states {
        assert!(state.is_string(), "{report}");
        assert_ne!(state, "TASK_STATE_AUTH_REQUIRED", "{report}");
    }

    // A2A-8: the per-agent card, as the SDK reads and uses it.
    assert!(
        report.get("agentError").is_none(),
        "the a2a-sdk's per-agent leg failed: {report}"
    );
    let entry = &report["agentEntry"];
    let card = &report["agentCard"];
    assert!(entry["a2aTenant"].is_string(), "{report}");
    assert_eq!(card["name"], entry["persona"], "{report}");
    assert_eq!(card["version"], entry["packVersion"], "{report}");
    let tenants = card["tenants"].as_array().cloned().unwrap_or_default();
    assert!(!tenants.is_empty(), "{report}");
    assert!(
        tenants.iter().all(|t| *t == entry["a2aTenant"]),
        "an interface of the agent's card lacks its routing value: {report}"
    );
    assert!(
        !card["skills"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .is_empty(),
        "{report}"
    );
    let sent = report["agentSent"].as_array().cloned().unwrap_or_default();
    assert_eq!(sent.len(), 1, "{report}");
    assert_eq!(sent[0]["kind"], "task", "{report}");
    assert_eq!(
        agent_run_status,
        Some(200),
        "the run sent through the agent is not the caller's: {report}"
    );
    let agent_listed = report["agentListed"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        agent_listed,
        vec![sent[0]["taskId"].clone()],
        "ListTasks through the agent's tenant lists exactly the task sent through it: {report}"
    );
}
