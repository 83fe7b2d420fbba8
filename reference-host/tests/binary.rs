//! The `reference-host` binary: startup line, mutant listing, CLI errors and
//! SIGTERM shutdown. Every wait is bounded.

use crate::common;

use std::process::Stdio;
use std::time::Duration;

use common::{client, discovery};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_reference-host");
const WAIT: Duration = Duration::from_secs(10);

async fn output(args: &[&str]) -> std::process::Output {
    let run = Command::new(BIN)
        .args(args)
        .env_remove("OPENWOP_TEST_SEAM_ENABLED")
        .stdin(Stdio::null())
        .output();
    tokio::time::timeout(WAIT, run)
        .await
        .expect("exits in time")
        .expect("runs")
}

/// Starts the binary with `args` (seams not enabled by the environment),
/// waits (bounded) for its startup line and returns the child with the
/// lines still to read and the URL it listens on.
async fn serving(
    args: &[&str],
) -> (
    tokio::process::Child,
    tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    String,
) {
    let mut child = Command::new(BIN)
        .args(args)
        .env_remove("OPENWOP_TEST_SEAM_ENABLED")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawns");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let line = tokio::time::timeout(WAIT, lines.next_line())
        .await
        .expect("line in time")
        .expect("readable")
        .expect("a line");
    let url = line
        .strip_prefix("reference-host listening on ")
        .expect("startup line format")
        .to_owned();
    (child, lines, url)
}

#[tokio::test]
async fn list_mutants_prints_name_tab_breaks_in_order() {
    let out = output(&["--list-mutants"]).await;
    assert!(out.status.success());
    let stdout = String::from_utf8(out.stdout).expect("utf-8");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), reference_host::mutants::ALL.len());
    for (line, info) in lines.iter().zip(reference_host::mutants::ALL) {
        assert_eq!(*line, format!("{}\t{}", info.name, info.breaks));
    }
}

#[tokio::test]
async fn unknown_mutant_exits_2_listing_valid_names() {
    let out = output(&["--port", "0", "--mutant", "no-such-bug"]).await;
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no-such-bug"), "{stderr}");
    assert!(stderr.contains("invoke-then-check"), "{stderr}");
}

#[tokio::test]
async fn bad_principals_file_names_the_file_and_problem() {
    let path = std::env::temp_dir().join(format!(
        "refhost-principals-{}.json",
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::write(&path, r#"[{"id": "a", "colour": "red"}]"#).expect("write");
    let shown = path.display().to_string();
    let out = output(&["--port", "0", "--principals", &shown]).await;
    let _ = std::fs::remove_file(&path);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&shown), "{stderr}");
    assert!(stderr.contains("colour"), "{stderr}");
}

#[tokio::test]
async fn serves_after_one_startup_line_and_stops_on_sigterm() {
    let (mut child, mut lines, url) = serving(&["--port", "0", "--enable-seams"]).await;
    let url = url.as_str();
    assert!(
        url.starts_with("http://127.0.0.1:") && !url.ends_with('/'),
        "{url}"
    );

    let doc = discovery(&client(WAIT), url).await;
    assert_eq!(
        doc["conformance"]["seamsProfile"],
        "openwop-conformance-seams-v2"
    );

    let pid = child.id().expect("pid").to_string();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    let status = tokio::time::timeout(WAIT, child.wait())
        .await
        .expect("exits in time")
        .expect("waitable");
    assert!(status.success(), "{status:?}");
    // Nothing but the one startup line was printed.
    let rest = tokio::time::timeout(WAIT, lines.next_line())
        .await
        .expect("eof in time")
        .expect("readable");
    assert_eq!(rest, None);
}

#[tokio::test]
async fn upstream_only_flag_serves_the_v1_host() {
    let (mut child, _lines, url) =
        serving(&["--port", "0", "--enable-seams", "--upstream-only"]).await;
    let client = client(WAIT);
    let doc = discovery(&client, &url).await;
    assert_eq!(doc["protocolVersion"], "1.0", "{doc}");
    assert_eq!(doc["implementation"]["mode"], "upstream-only", "{doc}");
    assert!(doc.get("conformance").is_none(), "{doc}");
    let seam = client
        .post(format!("{url}/v1/host/sample/toolhooks/invoke"))
        .bearer_auth(common::OPERATOR)
        .json(&serde_json::json!({"toolName": "t"}))
        .send()
        .await
        .expect("answers");
    assert_eq!(seam.status(), 200);
    let v2 = client
        .post(format!("{url}/conformance/seams/sample/toolhooks/invoke"))
        .bearer_auth(common::OPERATOR)
        .json(&serde_json::json!({"principal": "alice", "toolName": "t"}))
        .send()
        .await
        .expect("answers");
    assert_eq!(v2.status(), 404);
    child.start_kill().expect("kill");
    let _ = tokio::time::timeout(WAIT, child.wait()).await;
}

#[tokio::test]
async fn upstream_only_v2_flag_serves_the_v2_host_and_a_bad_major_is_a_usage_error() {
    let (mut child, _lines, url) =
        serving(&["--port", "0", "--enable-seams", "--upstream-only=v2"]).await;
    let client = client(WAIT);
    let doc = discovery(&client, &url).await;
    assert_eq!(doc["protocolVersions"], serde_json::json!(["2.0"]), "{doc}");
    assert_eq!(
        doc["conformance"]["seamsProfile"],
        "openwop-conformance-seams-v2"
    );
    let turn = client
        .post(format!("{url}/conformance/seams/sample/turn/run"))
        .bearer_auth(common::OPERATOR)
        .json(&serde_json::json!({}))
        .send()
        .await
        .expect("answers");
    assert_eq!(
        turn.status(),
        404,
        "toolcert's turn seam is no upstream seam"
    );
    child.start_kill().expect("kill");
    let _ = tokio::time::timeout(WAIT, child.wait()).await;

    let refused = Command::new(BIN)
        .args(["--port", "0", "--upstream-only=v3"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .await
        .expect("runs");
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("use v1 or v2"));
}
