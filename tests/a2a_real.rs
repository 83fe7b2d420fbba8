//! The real A2A client: `a2a-sdk` (PyPI, pinned in `scripts/install-mcp-peers.sh`, installed
//! into the `target/mcp-peers/py` venv, which this test runs first) resolves the reference
//! host's agent card with its own resolver and parser and sends one message
//! (`tests/a2a/client.py`).
//!
//! What is asserted: the SDK parses the card, and every interface it read names a version the
//! host advertises in its `a2a` facet. Sending is reported, not asserted: the reference host
//! serves no A2A JSON-RPC endpoint yet, so the SDK's send fails, and the test prints how.
//! When the SDK cannot be installed the test fails saying what to install.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The venv's python once the install script ran, or why not.
fn python() -> Result<PathBuf, String> {
    let script = root().join("scripts/install-mcp-peers.sh");
    let out = Command::new("bash")
        .arg(&script)
        .output()
        .map_err(|e| format!("could not run {}: {e}", script.display()))?;
    let python = root().join("target/mcp-peers/py/bin/python");
    if !out.status.success() || !python.exists() {
        return Err(format!(
            "the pinned a2a-sdk is installed by `scripts/install-mcp-peers.sh` (needs python3 with venv and the PyPI registry); it exited with {}:\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(python)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_a2a_sdk_reads_the_card_and_tries_a_message() {
    let python = python().unwrap_or_else(|why| panic!("{why}"));
    let host = reference_host::start(reference_host::HostConfig::default())
        .await
        .unwrap();
    let base = host.base_url.clone();
    let script = root().join("tests/a2a/client.py");
    let out = tokio::task::spawn_blocking(move || {
        Command::new(python)
            .arg(script)
            .arg(&base)
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
    host.shutdown().await;
    let stdout = String::from_utf8_lossy(&out.stdout);
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
    // Reported, not asserted (see the module docs).
    eprintln!(
        "a2a-sdk send: {}",
        report
            .get("sendError")
            .or(report.get("sent"))
            .unwrap_or(&Value::Null)
    );
}
