//! A host that, after a valid v1 discovery document, answers every event read with a stream
//! that never ends costs bounded time, memory and report size: each `events` step stops at its
//! cap, is recorded as `$blocked` with the reason, and no row reading events passes.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolcert::observation::{Context, NotObserved, Unobserved};

const DISCOVERY: &str = r#"{"protocolVersion":"1.0","toolHooks":{"supported":true,"prePostEvents":true,"perToolAuthorization":true,"perToolRateLimit":true},"idempotency":{"supported":true}}"#;

/// Events written every 10 ms on every stream (500 a second).
const EVENTS_PER_TICK: usize = 5;

/// Roles for every scenario (the hostile host accepts any token).
// Tokens as long as real ones: every token is scrubbed wherever it appears, so a two-letter
// token would also rewrite check ids that happen to contain it.
const PROFILE: &str = r#"{"roles": {
  "operator": {"token": "tok-operator-7f3a9c", "principal": "op"}, "actor": {"token": "tok-actor-2b8e41", "principal": "alice"},
  "peer": {"token": "tok-peer-9d0c55", "principal": "bob"}, "lacking": {"token": "tok-lacking-4e7a13", "principal": "carol"},
  "unevaluable": {"token": "tok-unevaluable-6c2f08", "principal": "dave"}, "foreign": {"token": "tok-foreign-1a9b77", "principal": "erin"}},
  "scopes": {"granted": "tools:write"},
  "facts": {"recordLimitBytes": 65536, "clarificationTool": "ask_user", "mcpServerPath": "/mcp", "rateLimitCapacity": 5}}"#;

/// Serve one connection: discovery, an endless SSE stream on `/v1/runs/…events…`, and
/// `{"runId":"r1","status":"running"}` for everything else.
fn serve(stream: TcpStream, stop: Arc<AtomicBool>, seq: Arc<AtomicI64>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    let mut content_length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            content_length = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0u8; content_length];
    let _ = std::io::Read::read_exact(&mut reader, &mut body);
    let path = request_line
        .split_whitespace()
        .nth(1)
        .unwrap_or("")
        .to_string();
    let mut out = stream;
    let json = |body: &str| {
        format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
    };
    if path.starts_with("/.well-known/openwop") {
        let _ = out.write_all(json(DISCOVERY).as_bytes());
    } else if path.starts_with("/v1/runs/") && path.contains("events") {
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n";
        if out.write_all(head.as_bytes()).is_err() {
            return;
        }
        while !stop.load(Ordering::Relaxed) {
            let mut frames = String::new();
            for _ in 0..EVENTS_PER_TICK {
                let n = seq.fetch_add(1, Ordering::Relaxed);
                let event = json!({"eventId": format!("e{n}"), "runId": "r1", "type": "agent.toolCalled", "payload": {"callId": format!("c{n}")}, "timestamp": "2026-11-29T00:00:00Z", "sequence": n, "schemaVersion": 1});
                frames.push_str(&format!(
                    "id: {n}\nevent: agent.toolCalled\ndata: {event}\n\n"
                ));
            }
            if out.write_all(frames.as_bytes()).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    } else {
        let _ = out.write_all(json(r#"{"runId":"r1","status":"running"}"#).as_bytes());
    }
}

/// A scenario whose id starts with the prefix and has `events` steps: its id, those steps'
/// names, and the (check id, row) of each check that reads one of them.
struct EventsReader {
    id: String,
    steps: Vec<String>,
    checks: Vec<(String, String)>,
}

fn events_readers(prefix: &str) -> Vec<EventsReader> {
    // The suite as it runs: fragments, params and a scenario-level `row` expanded, so every
    // check names its row.
    let suite = toolcert::suite::Suite::embedded().unwrap();
    let mut out = Vec::new();
    for (id, scenario) in &suite.expanded {
        let id = id.clone();
        if !id.starts_with(prefix) {
            continue;
        }
        let steps: Vec<String> = scenario["steps"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|s| s["step"] == "events")
            .filter_map(|s| s["name"].as_str().map(str::to_string))
            .collect();
        if steps.is_empty() {
            continue;
        }
        let checks = scenario["checks"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|c| {
                let text = c.to_string();
                steps.iter().any(|n| {
                    text.contains(&format!("/steps/{n}/")) || text.contains(&format!("steps.{n}."))
                })
            })
            .map(|c| {
                (
                    c["id"].as_str().unwrap_or("").to_string(),
                    c["row"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect();
        out.push(EventsReader { id, steps, checks });
    }
    out
}

#[test]
fn an_endless_event_stream_costs_bounded_time_and_report_size() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let stop = Arc::new(AtomicBool::new(false));
    let seq = Arc::new(AtomicI64::new(0));
    {
        let stop = stop.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let (stop, seq) = (stop.clone(), seq.clone());
                std::thread::spawn(move || serve(stream, stop, seq));
            }
        });
    }
    let dir = std::env::temp_dir().join(format!("toolcert-endless-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let report_path = dir.join("r.json");
    let profile_path = dir.join("profile.json");
    std::fs::write(&profile_path, PROFILE).unwrap();
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_toolcert"))
        .args([
            "run",
            "-q",
            "hooks.",
            "--host",
            &format!("http://127.0.0.1:{port}"),
            "--profile",
            profile_path.to_str().unwrap(),
            "--timeout-scale",
            "0.2",
            "--report",
            report_path.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let elapsed = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.code().is_some(), "toolcert was killed: {stderr}");
    assert!(
        elapsed < Duration::from_secs(20),
        "the run took {elapsed:?}"
    );
    let size = std::fs::metadata(&report_path)
        .unwrap_or_else(|e| panic!("no report ({e}): {stderr}"))
        .len();
    assert!(size < 5 * 1024 * 1024, "the report is {size} bytes");
    let report: Value = serde_json::from_slice(&std::fs::read(&report_path).unwrap()).unwrap();

    // Every events step made was cut at a cap and recorded as blocked; no check reading one
    // passes, and neither does its row.
    let readers = events_readers("hooks.");
    assert!(!readers.is_empty());
    let scenarios = report["scenarios"].as_array().unwrap();
    let (mut cut, mut stopped, mut judged) = (0, 0, 0);
    for reader in &readers {
        let Some(s) = scenarios
            .iter()
            .find(|s| s["scenarioId"] == reader.id.as_str())
        else {
            continue;
        };
        for name in &reader.steps {
            let obs = &s["observations"]["steps"][name];
            if obs.is_null() {
                continue; // not reached: an earlier step stopped the scenario
            }
            // The stored form reads back as the type: a blocked read, cut short.
            let typed: NotObserved = serde_json::from_value(obs.clone())
                .unwrap_or_else(|e| panic!("{} {name}: {e}: {obs}", reader.id));
            assert_eq!(typed.state, Unobserved::Blocked, "{} {name}", reader.id);
            // Once LOG_CUTS_AFTER reads in a row were cut, the rest are not made: blocked at
            // once, naming why.
            let Context::Cut { truncated, .. } = &typed.context else {
                assert!(
                    typed.reason.contains("reads no more of them")
                        && typed.reason.contains("the host sent more than"),
                    "{} {name}: neither cut nor stopped: {obs}",
                    reader.id
                );
                stopped += 1;
                continue;
            };
            assert!(
                truncated.reason.starts_with("the host sent more than"),
                "{} {name}: {obs}",
                reader.id
            );
            cut += 1;
        }
        for (check, row) in &reader.checks {
            let outcome = s["checks"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["checkId"] == check.as_str())
                .unwrap_or_else(|| panic!("{} {check} not judged", reader.id));
            assert_ne!(outcome["status"], "pass", "{outcome}");
            assert_ne!(outcome["status"], "fail", "{outcome}");
            judged += 1;
            let verdict = report["rows"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["requirementId"] == row.as_str())
                .unwrap();
            assert_ne!(verdict["disposition"], "pass", "{verdict}");
        }
    }
    assert!(
        cut >= toolcert::steps::LOG_CUTS_AFTER,
        "only {cut} events reads were cut"
    );
    assert!(stopped > 0, "the reads after the cuts were not made");
    assert!(judged > 0);
    std::fs::remove_dir_all(dir).ok();
}
