//! A host that does not answer costs `error` rows with a reason, within the timeouts, never
//! the run.

use std::process::Command;
use std::time::{Duration, Instant};

fn run_against(url: &str, dir: &std::path::Path) -> (Option<i32>, serde_json::Value, Duration) {
    let json = dir.join("r.json");
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_toolcert"))
        .args([
            "run",
            "-q",
            "--host",
            url,
            "--timeout-scale",
            "0.2",
            "--report",
            json.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let report = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    (out.status.code(), report, started.elapsed())
}

#[test]
fn a_closed_port_and_a_silent_port_yield_error_rows_quickly() {
    let dir = std::env::temp_dir().join(format!("toolcert-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    // Accepts connections and never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_port = silent.local_addr().unwrap().port();
    let holder = std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in silent.incoming().take(8) {
            held.push(s);
        }
    });
    for url in [
        format!("http://127.0.0.1:{closed}"),
        format!("http://127.0.0.1:{silent_port}"),
    ] {
        let (code, report, elapsed) = run_against(&url, &dir);
        assert_eq!(code, Some(1), "{url}");
        assert!(elapsed < Duration::from_secs(20), "{url} took {elapsed:?}");
        let rows = report["rows"].as_array().unwrap();
        assert!(!rows.is_empty());
        for row in rows {
            assert_eq!(row["disposition"], "error", "{url}: {row}");
            assert!(
                row["detail"]
                    .as_str()
                    .unwrap()
                    .contains("could not observe the host"),
                "{row}"
            );
        }
        assert!(report["host"]["discovery"]["error"].is_string());
    }
    drop(holder);
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_host_that_sends_garbage_is_reported_not_crashed_on() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for mut s in listener.incoming().flatten().take(16) {
            let mut buf = [0u8; 2048];
            let _ = s.read(&mut buf);
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 12\r\n\r\n<html>nope</");
        }
    });
    let dir = std::env::temp_dir().join(format!("toolcert-garbage-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (code, report, _) = run_against(&format!("http://127.0.0.1:{port}"), &dir);
    assert_eq!(code, Some(1));
    let detail = report["host"]["discovery"]["error"].as_str().unwrap();
    assert!(detail.contains("no usable OpenWOP document"), "{detail}");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_host_advertising_nothing_is_not_certified_on_zero_observations() {
    // A minimal v2 host: discovery only, no families, no ETag.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for mut s in listener.incoming().flatten().take(32) {
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let body = br#"{"protocolVersions":["2.0"],"preferredVersion":"2.0"}"#;
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = s.write_all(head.as_bytes());
            let _ = s.write_all(body);
        }
    });
    let dir = std::env::temp_dir().join(format!("toolcert-bare-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (code, report, _) = run_against(&format!("http://127.0.0.1:{port}"), &dir);
    assert_eq!(code, Some(1), "{report}");
    // DISC-1 is measured and passes; DISC-6 fails (no ETag); hooks rows are inapplicable.
    let row = |id: &str| {
        report["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["requirementId"] == id)
            .cloned()
            .unwrap()
    };
    assert_eq!(row("DISC-1")["disposition"], "pass");
    assert_eq!(row("DISC-6")["disposition"], "fail");
    assert_eq!(row("HOOKS-AUTH-1")["disposition"], "inapplicable");
    assert_eq!(row("HOOKS-AUTH-1")["assertions"], 0);
    std::fs::remove_dir_all(dir).ok();
}
