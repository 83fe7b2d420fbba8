//! toolcert against hostile hosts: wall time, peak RSS, report size and leaked secrets.
//!
//! `cargo bench --bench hostile` runs the release `toolcert` binary (a child process, so its
//! peak RSS is its own: `VmHWM` from `/proc/<pid>/status`, polled while it runs) against the
//! loopback hosts of `tests/hostile/mod.rs`, at the default timeout scale (1.0, what a user
//! runs; `TOOLCERT_BENCH_TIMEOUT_SCALE` overrides it), with two random role tokens, and
//! prints one line per host behaviour with PASS/FAIL against its goal:
//!
//! | Host behaviour | Goal |
//! |---|---|
//! | Event streams that never end (100 events/s on every `/events`), all scenarios | ≤ 60 s, peak RSS ≤ 100 MB, r.json ≤ 5 MB |
//! | The same at 500 events/s, 4 scenarios | ≤ 30 s, ≤ 100 MB |
//! | Accepts connections and never answers | ≤ 30 s |
//! | Sends headers, then one byte every 2 s | ≤ 30 s |
//! | Echoes the request's Authorization value into compared fields | 0 tokens, canaries or `Bearer <value>` in any artifact or on stdout/stderr |
//!
//! The bench only reports (exit status 0) unless `TOOLCERT_BENCH_ENFORCE=1`, which makes any
//! FAIL exit 1. `TOOLCERT_BENCH_ONLY=silent,echo` runs only the named rows (`events100`,
//! `events500`, `silent`, `trickle`, `echo`). A run is killed after 5 minutes.

#[path = "../tests/hostile/mod.rs"]
mod hostile;

use std::path::Path;
use std::time::Duration;

use hostile::{Artifacts, Behaviour, HostileHost, Secrets};

const MB: u64 = 1000 * 1000;

struct Goal {
    wall: Option<Duration>,
    rss_bytes: Option<u64>,
    json_bytes: Option<u64>,
    no_leaks: bool,
}

struct Row {
    key: &'static str,
    title: &'static str,
    behaviour: Behaviour,
    /// Scenario filters (`--exact` when `exact`).
    filters: &'static [&'static str],
    exact: bool,
    goal: Goal,
}

/// The four hooks scenarios that read a run's events.
const EVENT_READERS: &[&str] = &[
    "hooks.authorization-fail-closed",
    "hooks.content-free-audit",
    "hooks.event-error-codes",
    "hooks.secret-redaction",
];

fn rows() -> Vec<Row> {
    vec![
        Row {
            key: "events100",
            title: "event streams that never end, 100 events/s, all scenarios",
            behaviour: Behaviour::EndlessEvents { per_sec: 100 },
            filters: &[],
            exact: false,
            goal: Goal {
                wall: Some(Duration::from_secs(60)),
                rss_bytes: Some(100 * MB),
                json_bytes: Some(5 * MB),
                no_leaks: false,
            },
        },
        Row {
            key: "events500",
            title: "event streams that never end, 500 events/s, 4 scenarios",
            behaviour: Behaviour::EndlessEvents { per_sec: 500 },
            filters: EVENT_READERS,
            exact: true,
            goal: Goal {
                wall: Some(Duration::from_secs(30)),
                rss_bytes: Some(100 * MB),
                json_bytes: None,
                no_leaks: false,
            },
        },
        Row {
            key: "silent",
            title: "accepts connections and never answers, all scenarios",
            behaviour: Behaviour::Silent,
            filters: &[],
            exact: false,
            goal: Goal {
                wall: Some(Duration::from_secs(30)),
                rss_bytes: None,
                json_bytes: None,
                no_leaks: false,
            },
        },
        Row {
            key: "trickle",
            title: "sends headers, then one byte every 2 s, all scenarios",
            behaviour: Behaviour::Trickle {
                every: Duration::from_secs(2),
            },
            filters: &[],
            exact: false,
            goal: Goal {
                wall: Some(Duration::from_secs(30)),
                rss_bytes: None,
                json_bytes: None,
                no_leaks: false,
            },
        },
        Row {
            key: "echo",
            title: "echoes the Authorization value into compared fields, all scenarios",
            behaviour: Behaviour::EchoAuth,
            filters: &[],
            exact: false,
            goal: Goal {
                wall: None,
                rss_bytes: None,
                json_bytes: None,
                no_leaks: true,
            },
        },
    ]
}

fn main() {
    let exe = Path::new(env!("CARGO_BIN_EXE_toolcert"));
    let scale = std::env::var("TOOLCERT_BENCH_TIMEOUT_SCALE").unwrap_or_else(|_| "1.0".into());
    let only: Option<Vec<String>> = std::env::var("TOOLCERT_BENCH_ONLY")
        .ok()
        .map(|v| v.split(',').map(|s| s.trim().to_string()).collect());
    let enforce = std::env::var("TOOLCERT_BENCH_ENFORCE").is_ok_and(|v| v == "1");
    println!(
        "toolcert against hostile hosts ({}, --timeout-scale {scale})",
        exe.display()
    );
    println!(
        "{:<66} {:>8} {:>9} {:>10} {:>6} {:>5}  verdict",
        "host behaviour", "wall", "peak RSS", "r.json", "leaks", "exit"
    );
    let mut failed = 0;
    for row in rows() {
        if only
            .as_ref()
            .is_some_and(|o| !o.iter().any(|k| k == row.key))
        {
            continue;
        }
        let host = HostileHost::start(row.behaviour);
        let secrets = Secrets::fresh();
        let dir = hostile::scratch(&format!("bench-{}", row.key));
        let mut extra: Vec<&str> = vec!["-q", "--timeout-scale", &scale];
        if row.exact {
            extra.push("--exact");
        }
        extra.extend_from_slice(row.filters);
        let a = hostile::run_toolcert(
            exe,
            &host.url(),
            &extra,
            &secrets,
            &dir,
            Duration::from_secs(300),
        );
        drop(host);
        let (verdict, why) = judge(&row.goal, &a, &secrets);
        if verdict == "FAIL" {
            failed += 1;
        }
        println!(
            "{:<66} {:>7.1}s {:>6.1} MB {:>10} {:>6} {:>5}  {verdict}{why}",
            row.title,
            a.wall.as_secs_f64(),
            a.peak_rss_kib as f64 * 1024.0 / MB as f64,
            a.json
                .as_ref()
                .map_or("none".to_string(), |j| human_bytes(j.len() as u64)),
            a.leaks(&secrets).len(),
            a.code.map_or("killed".to_string(), |c| c.to_string()),
        );
    }
    if enforce && failed > 0 {
        std::process::exit(1);
    }
}

/// PASS or FAIL against the goal, and the reasons of a FAIL.
fn judge(goal: &Goal, a: &Artifacts, secrets: &Secrets) -> (&'static str, String) {
    let mut why = Vec::new();
    if a.code != Some(1) {
        why.push(format!("exit {:?}, expected 1", a.code));
    }
    if let Some(w) = goal.wall
        && a.wall > w
    {
        why.push(format!("wall > {} s", w.as_secs()));
    }
    if let Some(r) = goal.rss_bytes
        && a.peak_rss_kib * 1024 > r
    {
        why.push(format!("peak RSS > {} MB", r / MB));
    }
    if let Some(j) = goal.json_bytes {
        match &a.json {
            Some(json) if json.len() as u64 > j => why.push(format!("r.json > {} MB", j / MB)),
            Some(_) => {}
            None => why.push("no r.json".into()),
        }
    }
    if goal.no_leaks {
        let leaks = a.leaks(secrets);
        if !leaks.is_empty() {
            why.push(format!("leaked: {}", leaks.join("; ")));
        }
    }
    if why.is_empty() {
        ("PASS", String::new())
    } else {
        ("FAIL", format!(" ({})", why.join(", ")))
    }
}

fn human_bytes(n: u64) -> String {
    if n >= MB {
        format!("{:.1} MB", n as f64 / MB as f64)
    } else {
        format!("{:.1} kB", n as f64 / 1000.0)
    }
}
