//! Real MCP servers, installed pinned into `target/mcp-peers` by
//! `scripts/install-mcp-peers.sh`, which these tests run first (so `cargo test` on a fresh
//! clone sets them up; `.ci/run` also runs it up front):
//! `@modelcontextprotocol/server-everything@2026.8.31` (npm) and `mcp-server-time` (PyPI),
//! both on stdio. Each is captured twice (same digest), one tool is reviewed, gated and
//! called, and a snapshot edited by one character is refused before any connection.
//!
//! When the servers cannot be installed these tests fail, with the script's output and how
//! to install them: a silently skipped real-server test would look like a pass.

use crate::support::{everything, peers};

use std::path::PathBuf;

use serde_json::{Value, json};
use toolcert::mcp::call::{self, CallOptions, Outcome};
use toolcert::mcp::cases::acceptable_review;
use toolcert::mcp::gate::{self, GateOptions, ListChangedPolicy, Rule};
use toolcert::mcp::snapshot::{self, CaptureOptions};
use toolcert::mcp::transport::{Endpoint, StdioCommand};
use toolcert::mcp::{review, time as mcp_time};

use peers::installed;

fn everything() -> Endpoint {
    // A scrubbed environment (PATH only) is the transport's default: get-env is never called,
    // and even if it were it could not reveal toolcert's environment.
    Endpoint::Stdio(StdioCommand::argv(everything::stdio_argv()))
}

fn time_server() -> Endpoint {
    Endpoint::Stdio(StdioCommand::argv(vec![
        installed("py/bin/mcp-server-time").display().to_string(),
    ]))
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("toolcert-mcp-real-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Capture twice at one recorded instant; both digests must agree. Returns the document.
async fn capture_twice(endpoint: &Endpoint, key: &str) -> Value {
    let mut opts = CaptureOptions::new(key);
    opts.captured_at = Some(mcp_time::now());
    let a = snapshot::capture(endpoint, &opts).await.unwrap();
    let b = snapshot::capture(endpoint, &opts).await.unwrap();
    let (da, db) = (snapshot::digest(&a), snapshot::digest(&b));
    assert_eq!(
        da,
        db,
        "two captures of an unchanged {key} hash differently:\n{:#?}",
        toolcert::mcp::diff::snapshot_diff(&a, &b)
    );
    let catalog = toolcert::canonical::jcs_sha256_hex(&a["servers"][key]["toolPages"]);
    eprintln!(
        "{key}: manifestSha256 {da} (capturedAt {}), toolPages sha256 {catalog}",
        a["capturedAt"]
    );
    snapshot::check_schema(key, &a).unwrap();
    a
}

fn tool<'a>(doc: &'a Value, key: &str, name: &str) -> &'a Value {
    snapshot::tools_named(&doc["servers"][key], name)
        .first()
        .map(|(_, t)| *t)
        .unwrap_or_else(|| panic!("{name} not captured"))
}

/// Review `name`, write, return (path, digest).
fn reviewed(mut doc: Value, key: &str, name: &str, dir: &std::path::Path) -> (PathBuf, String) {
    let t = tool(&doc, key, name).clone();
    review::apply(&mut doc, key, name, acceptable_review(&t)).unwrap();
    let path = dir.join(format!("{key}.json"));
    let sha = snapshot::write(&path, &doc).unwrap();
    (path, sha)
}

/// An edited copy (one character of `name`'s description) of a pinned snapshot: refused
/// by the digest rule, before any connection; re-pinned, refused as drift with a diff.
async fn edited_snapshot_is_refused(
    path: &std::path::Path,
    sha: &str,
    endpoint: &Endpoint,
    key: &str,
    name: &str,
) {
    let mut doc = snapshot::read_strict(path).unwrap().doc;
    let (pointer, _) = snapshot::tools_named(&doc["servers"][key], name)[0].clone();
    let d = doc
        .pointer_mut(&format!("/servers/{key}{pointer}/description"))
        .unwrap();
    let mut text = d.as_str().unwrap().to_string();
    let last = text.pop().unwrap();
    text.push(if last == 'x' { 'y' } else { 'x' });
    *d = json!(text);
    let edited = path.with_extension("edited.json");
    let new_sha = snapshot::write(&edited, &doc).unwrap();
    let err = gate::gate(&edited, endpoint, &GateOptions::new(sha, key, name))
        .await
        .unwrap_err();
    assert_eq!(err.refusal.rule, Rule::Digest, "{}", err.refusal);
    assert!(
        !err.evidence.connected,
        "the digest is checked before any connection"
    );
    let mut opts = GateOptions::new(&new_sha, key, name);
    opts.policy = ListChangedPolicy::Settle;
    let report = call::call(&edited, endpoint, &opts, &CallOptions::default()).await;
    assert_eq!(report.outcome, Outcome::Refused, "{report:?}");
    let refusal = report.refusal.unwrap();
    assert_eq!(refusal.rule, Rule::Drift, "{refusal}");
    assert_eq!(refusal.diff.len(), 1);
    assert_eq!(refusal.diff[0].pointer, "/description");
}

#[tokio::test]
async fn server_everything_capture_review_gate_call() {
    let ep = everything();
    let doc = capture_twice(&ep, "everything").await;
    let server = &doc["servers"]["everything"];
    assert_eq!(doc["protocolVersion"], "2025-11-25");
    assert_eq!(
        server["serverInfo"],
        json!({"name": "mcp-servers/everything", "title": "Everything Reference Server", "version": "2.0.0"})
    );
    assert_eq!(server["capabilities"]["tools"]["listChanged"], true);
    let pages = server["toolPages"].as_array().unwrap();
    assert_eq!(pages.len(), 1);
    assert_eq!(pages[0]["tools"].as_array().unwrap().len(), 13);
    assert!(
        server["captureEvidence"]["listChangedWhileSettling"]
            .as_u64()
            .unwrap()
            >= 1,
        "server-everything announces list_changed after initialized"
    );
    // Unprojected: execution and the draft-07 $schema survive.
    assert_eq!(
        tool(&doc, "everything", "simulate-research-query")["execution"]["taskSupport"],
        "required"
    );
    assert!(
        tool(&doc, "everything", "echo")["inputSchema"]["$schema"]
            .as_str()
            .unwrap()
            .contains("draft-07")
    );

    let dir = scratch("everything");
    let name = "get-structured-content";
    let (path, sha) = reviewed(doc.clone(), "everything", name, &dir);
    // Strict: the list_changed it sends right after initialized invalidates the review.
    let strict = gate::gate(&path, &ep, &GateOptions::new(&sha, "everything", name))
        .await
        .unwrap_err();
    assert_eq!(strict.refusal.rule, Rule::ListChanged, "{}", strict.refusal);
    // Settle (explicit, recorded): the startup notification is ignored and counted.
    let mut opts = GateOptions::new(&sha, "everything", name);
    opts.policy = ListChangedPolicy::Settle;
    let copts = CallOptions {
        arguments: Some(json!({"location": "Chicago"})),
        expect_output: true,
        ..Default::default()
    };
    let report = call::call(&path, &ep, &opts, &copts).await;
    assert_eq!(report.outcome, Outcome::Ok, "{report:?}");
    assert!(report.gate.ignored_in_settle_window >= 1);
    let body = report.body.unwrap();
    assert!(
        body["temperature"].is_number() && body["conditions"].is_string(),
        "{body}"
    );
    // Arguments outside the reviewed enum are refused before dispatch.
    let bad = CallOptions {
        arguments: Some(json!({"location": "Paris"})),
        expect_output: true,
        ..Default::default()
    };
    let report = call::call(&path, &ep, &opts, &bad).await;
    assert_eq!(report.outcome, Outcome::NotDispatched, "{report:?}");
    // A task-required tool cannot be reviewed (4.8.1).
    let t = tool(&doc, "everything", "simulate-research-query").clone();
    let mut d2 = doc.clone();
    let err = review::apply(
        &mut d2,
        "everything",
        "simulate-research-query",
        acceptable_review(&t),
    )
    .unwrap_err();
    assert_eq!(err.rule, "4.8.1 task-augmented");

    edited_snapshot_is_refused(&path, &sha, &ep, "everything", name).await;
}

#[tokio::test]
async fn mcp_server_time_capture_review_gate_call() {
    let ep = time_server();
    let doc = capture_twice(&ep, "time").await;
    let server = &doc["servers"]["time"];
    assert_eq!(doc["protocolVersion"], "2025-11-25");
    assert_eq!(server["capabilities"]["tools"]["listChanged"], false);
    let names: Vec<&str> = server["toolPages"][0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["get_current_time", "convert_time"]);
    assert_eq!(server["captureEvidence"]["listChangedWhileSettling"], 0);

    let dir = scratch("time");
    let name = "get_current_time";
    let (path, sha) = reviewed(doc, "time", name, &dir);
    // No list_changed from this server: the strict gate passes.
    let copts = CallOptions {
        arguments: Some(json!({"timezone": "Etc/UTC"})),
        expect_output: true,
        ..Default::default()
    };
    let report = call::call(&path, &ep, &GateOptions::new(&sha, "time", name), &copts).await;
    assert_eq!(report.outcome, Outcome::Ok, "{report:?}");
    let body = report.body.unwrap();
    assert_eq!(body["timezone"], "Etc/UTC", "{body}");
    assert!(body["is_dst"].is_boolean());
    // A bad timezone is the tool's own error: isError fails the call.
    let bad = CallOptions {
        arguments: Some(json!({"timezone": "Not/AZone"})),
        expect_output: true,
        ..Default::default()
    };
    let report = call::call(&path, &ep, &GateOptions::new(&sha, "time", name), &bad).await;
    assert_eq!(report.outcome, Outcome::Failed, "{report:?}");

    edited_snapshot_is_refused(&path, &sha, &ep, "time", name).await;
}

#[tokio::test]
async fn server_everything_over_streamable_http_on_loopback_only() {
    let server = everything::over_http();
    let ep = Endpoint::Http(server.url.clone());
    let doc = capture_twice(&ep, "everything").await;
    let entry = &doc["servers"]["everything"];
    assert_eq!(doc["protocolVersion"], "2025-11-25");
    assert_eq!(entry["serverInfo"]["name"], "mcp-servers/everything");
    // The same catalog as over stdio, page for page.
    let stdio = snapshot::capture(&everything(), &CaptureOptions::new("everything"))
        .await
        .unwrap();
    assert_eq!(
        entry["toolPages"], stdio["servers"]["everything"]["toolPages"],
        "the catalog differs between HTTP and stdio"
    );
    eprintln!("over HTTP, captureEvidence: {}", entry["captureEvidence"]);

    let dir = scratch("everything-http");
    let name = "get-structured-content";
    let (path, sha) = reviewed(doc, "everything", name, &dir);
    // Strict: the start-up list_changed comes on the GET stream the client opened; refused.
    let strict = gate::gate(&path, &ep, &GateOptions::new(&sha, "everything", name))
        .await
        .unwrap_err();
    assert_eq!(strict.refusal.rule, Rule::ListChanged, "{}", strict.refusal);
    assert!(
        strict.evidence.server_stream,
        "server-everything offers the GET stream"
    );
    // Settle: on loopback the GET stream's start-up notification arrives well before the
    // answer to the ping that follows `initialized` (it is written while `initialized` is
    // handled); the call passes, with it counted.
    let mut opts = GateOptions::new(&sha, "everything", name);
    opts.policy = ListChangedPolicy::Settle;
    let copts = CallOptions {
        arguments: Some(json!({"location": "Chicago"})),
        expect_output: true,
        ..Default::default()
    };
    let report = call::call(&path, &ep, &opts, &copts).await;
    assert_eq!(report.outcome, Outcome::Ok, "{report:?}");
    assert!(
        report.gate.ignored_in_settle_window >= 1,
        "{:?}",
        report.gate
    );
    assert!(report.body.unwrap()["temperature"].is_number());
    drop(server);
}
