//! toolcert against hostile hosts: wall time, peak RSS, report size, recheck and leaked secrets.
//!
//! `cargo bench --bench hostile` runs the release `toolcert` binary (a child process, so its
//! peak RSS is its own: `VmHWM` from `/proc/<pid>/status`, polled while it runs) against the
//! loopback hosts of `tests/hostile/mod.rs`, at the default timeout scale (1.0, what a user
//! runs; `TOOLCERT_BENCH_TIMEOUT_SCALE` overrides it), with fresh random role tokens, and
//! prints one line per host behaviour with PASS/FAIL against its goal. The rows are the two
//! rounds of hostile hosts (issue 30 holds the second round's table); every row of the second
//! round has the goals wall ≤ 60 s, peak RSS ≤ 100 MB, `r.json` ≤ 10 MB and rechecked by
//! `toolcert recheck`, and no form of any token in any artifact or on the console.
//!
//! The bench only reports (exit status 0) unless `TOOLCERT_BENCH_ENFORCE=1`, which makes any
//! FAIL exit 1. `TOOLCERT_BENCH_ONLY=silent,echo` runs only the named rows (see `rows()` for
//! the keys), `TOOLCERT_BENCH_FLAGS` adds flags to every run, and `TOOLCERT_BENCH_KEEP=1` keeps
//! each row's reports in `$TMPDIR/toolcert-bench-kept-KEY`. A run is killed after 5 minutes.

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
    /// The report must be accepted by `toolcert recheck` (exit 0).
    rechecks: bool,
    /// The exit statuses expected.
    exits: &'static [i32],
}

/// The second round's goal (issue 30): every bound at once.
const BOUNDED: Goal = Goal {
    wall: Some(Duration::from_secs(60)),
    rss_bytes: Some(100 * MB),
    json_bytes: Some(10 * MB),
    no_leaks: true,
    rechecks: true,
    exits: &[1],
};

/// Where the host comes from.
enum Target {
    /// A loopback hostile host with this behaviour (and discovery document, if not the usual).
    Host(Behaviour, Option<String>),
    /// `--spawn` a command line made from the URL of a plain hostile host.
    Spawn(fn(&str) -> String),
}

struct Row {
    key: &'static str,
    title: &'static str,
    target: Target,
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

fn absurd_discovery() -> String {
    r#"{"protocolVersion":"1.0","toolHooks":{"supported":true,"prePostEvents":true,"perToolAuthorization":true,"perToolRateLimit":true,"rateLimit":{"capacity":9223372036854775807,"refillPerSecond":1e308}},"idempotency":{"supported":true,"layer1RetentionSeconds":9223372036854775807},"mcp":{"mrtr":{"maxRounds":9223372036854775807}},"limits":{"maxRecordBytes":9223372036854775807,"maxEvents":18446744073709551615,"maxBodyBytes":1e300},"fixtures":["conformance-noop","conformance-idempotent"]}"#.to_string()
}

fn big_discovery() -> String {
    hostile::DISCOVERY.replacen("{", &format!(r#"{{"pad":"{}","#, "d".repeat(4_000_000)), 1)
}

fn rows() -> Vec<Row> {
    let round_one = |key, title, behaviour, filters, exact, goal| Row {
        key,
        title,
        target: Target::Host(behaviour, None),
        filters,
        exact,
        goal,
    };
    let round_two = |key, title, target| Row {
        key,
        title,
        target,
        filters: &[],
        exact: false,
        goal: BOUNDED,
    };
    vec![
        round_one(
            "events100",
            "event streams that never end, 100 events/s, all scenarios",
            Behaviour::EndlessEvents { per_sec: 100 },
            &[],
            false,
            BOUNDED,
        ),
        round_one(
            "events500",
            "event streams that never end, 500 events/s, 4 scenarios",
            Behaviour::EndlessEvents { per_sec: 500 },
            EVENT_READERS,
            true,
            // A filtered run whose rows deny nothing certifies nothing and exits 0.
            Goal {
                wall: Some(Duration::from_secs(30)),
                exits: &[0, 1],
                ..BOUNDED
            },
        ),
        round_one(
            "silent",
            "accepts connections and never answers, all scenarios",
            Behaviour::Silent,
            &[],
            false,
            Goal {
                wall: Some(Duration::from_secs(30)),
                ..BOUNDED
            },
        ),
        round_one(
            "trickle",
            "sends headers, then one byte every 2 s, all scenarios",
            Behaviour::Trickle {
                every: Duration::from_secs(2),
            },
            &[],
            false,
            Goal {
                wall: Some(Duration::from_secs(30)),
                ..BOUNDED
            },
        ),
        round_one(
            "echo",
            "echoes the Authorization value into compared fields, all scenarios",
            Behaviour::EchoAuth,
            &[],
            false,
            BOUNDED,
        ),
        round_two(
            "bigbodies",
            "answers every request with a valid body just under the 4 MiB cap",
            Target::Host(Behaviour::BigBodies, None),
        ),
        round_two(
            "bigdiscovery",
            "a discovery document of 4 MB, then normal answers",
            Target::Host(Behaviour::Plain, Some(big_discovery())),
        ),
        round_two(
            "placeholders",
            "echoes the template placeholders it is sent, so they would expand again",
            Target::Host(Behaviour::EchoPlaceholders, None),
        ),
        Row {
            goal: Goal {
                wall: Some(Duration::from_secs(15)),
                json_bytes: None,
                rechecks: false,
                exits: &[2],
                ..BOUNDED
            },
            ..round_two(
                "spawnline",
                "--spawn command writes an endless stdout line before its URL",
                Target::Spawn(|_| "sh -c 'yes spam | tr -d \"\\n\"'".into()),
            )
        },
        round_two(
            "spawnstdout",
            "--spawn command prints its URL, then writes endlessly to stdout",
            Target::Spawn(|url| format!("sh -c 'echo listening on {url}; exec yes spam'")),
        ),
        round_two(
            "spawnstderr",
            "--spawn command prints its URL, then writes endlessly to stderr",
            Target::Spawn(|url| format!("sh -c 'echo listening on {url}; exec yes spam >&2'")),
        ),
        round_two(
            "neversettles",
            "runs stay `running` forever",
            Target::Host(Behaviour::NeverSettles, None),
        ),
        round_two(
            "absurd",
            "discovery advertises absurd limits (capacities, round ceilings, sizes near 2^63)",
            Target::Host(Behaviour::EchoAuth, Some(absurd_discovery())),
        ),
        round_two(
            "nested",
            "JSON nested 120 deep in every answer",
            Target::Host(Behaviour::Nested { depth: 120 }, None),
        ),
        round_two(
            "markup",
            "strings with markup, RTL override and NUL in every field",
            Target::Host(Behaviour::Markup, None),
        ),
        round_two(
            "encoded",
            "echoes the token split across fields, reversed, upper-cased, hex, base64, Basic",
            Target::Host(Behaviour::EncodedEcho, None),
        ),
        round_two(
            "daemon",
            "--spawn of a command that daemonizes (forks the server and exits)",
            Target::Spawn(|url| {
                format!(
                    "sh -c '(setsid sh -c \"sleep 300; echo toolcert-bench-daemon\" </dev/null >/dev/null 2>&1 &); echo listening on {url}'"
                )
            }),
        ),
        round_two(
            "eventids",
            "SSE event ids with non-ASCII bytes",
            Target::Host(Behaviour::NonAsciiEventIds, None),
        ),
    ]
}

fn main() {
    let exe = Path::new(env!("CARGO_BIN_EXE_toolcert"));
    let scale = std::env::var("TOOLCERT_BENCH_TIMEOUT_SCALE").unwrap_or_else(|_| "1.0".into());
    let only: Option<Vec<String>> = std::env::var("TOOLCERT_BENCH_ONLY")
        .ok()
        .map(|v| v.split(',').map(|s| s.trim().to_string()).collect());
    let enforce = std::env::var("TOOLCERT_BENCH_ENFORCE").is_ok_and(|v| v == "1");
    // More flags for every run (`TOOLCERT_BENCH_FLAGS="--deadline 100"`), to look into a row.
    let more: Vec<String> = std::env::var("TOOLCERT_BENCH_FLAGS")
        .map(|v| v.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default();
    let keep = std::env::var("TOOLCERT_BENCH_KEEP").is_ok_and(|v| v == "1");
    println!(
        "toolcert against hostile hosts ({}, --timeout-scale {scale})",
        exe.display()
    );
    println!(
        "{:<14} {:<84} {:>7} {:>9} {:>9} {:>7} {:>5} {:>4}  verdict",
        "key", "host behaviour", "wall", "peak RSS", "r.json", "recheck", "leaks", "exit"
    );
    let mut failed = 0;
    for row in rows() {
        if only
            .as_ref()
            .is_some_and(|o| !o.iter().any(|k| k == row.key))
        {
            continue;
        }
        let secrets = Secrets::fresh();
        let dir = hostile::scratch(&format!("bench-{}", row.key));
        let mut extra: Vec<&str> = vec!["-q", "--timeout-scale", &scale];
        extra.extend(more.iter().map(String::as_str));
        if row.exact {
            extra.push("--exact");
        }
        extra.extend_from_slice(row.filters);
        let (host, target): (HostileHost, Vec<String>) = match &row.target {
            Target::Host(behaviour, discovery) => {
                let host = match discovery {
                    Some(d) => HostileHost::start_with_discovery(*behaviour, d.clone()),
                    None => HostileHost::start(*behaviour),
                };
                let url = host.url();
                (host, vec!["--host".into(), url])
            }
            Target::Spawn(command) => {
                let host = HostileHost::start(Behaviour::Plain);
                let url = host.url();
                (host, vec!["--spawn".into(), command(&url)])
            }
        };
        let target: Vec<&str> = target.iter().map(String::as_str).collect();
        let a = hostile::run_toolcert_on(
            exe,
            &target,
            &extra,
            &secrets,
            &dir,
            Duration::from_secs(300),
        );
        drop(host);
        let rechecked = recheck(exe, &a);
        if keep {
            // Keep the reports for a look (the scratch directory goes with the artifacts).
            let kept = std::env::temp_dir().join(format!("toolcert-bench-kept-{}", row.key));
            let _ = std::fs::remove_dir_all(&kept);
            let _ = std::fs::create_dir_all(&kept);
            for name in ["r.json", "r.md"] {
                let _ = std::fs::copy(a.dir.join(name), kept.join(name));
            }
        }
        let (verdict, why) = judge(&row.goal, &a, &secrets, rechecked);
        if verdict == "FAIL" {
            failed += 1;
        }
        println!(
            "{:<14} {:<84} {:>6.1}s {:>6.1} MB {:>9} {:>7} {:>5} {:>4}  {verdict}{why}",
            row.key,
            row.title,
            a.wall.as_secs_f64(),
            a.peak_rss_kib as f64 * 1024.0 / MB as f64,
            a.json
                .as_ref()
                .map_or("none".to_string(), |j| human_bytes(j.len() as u64)),
            match rechecked {
                Some(true) => "ok",
                Some(false) => "FAILED",
                None => "-",
            },
            a.leaks(&secrets).len(),
            a.code.map_or("killed".to_string(), |c| c.to_string()),
        );
    }
    // What `--spawn` of a daemonizing command may have left.
    let left = daemons_left();
    if left > 0 {
        println!("daemon: {left} process(es) left alive after toolcert exited: FAIL");
        failed += 1;
    }
    if enforce && failed > 0 {
        std::process::exit(1);
    }
}

/// Whether `toolcert recheck r.json` accepts the report (`None`: no report).
fn recheck(exe: &Path, a: &Artifacts) -> Option<bool> {
    a.json.as_ref()?;
    let out = std::process::Command::new(exe)
        .arg("recheck")
        .arg(a.dir.join("r.json"))
        .output()
        .ok()?;
    Some(out.status.code() == Some(0))
}

/// Processes the daemonizing row's command left (by the marker in their command line).
fn daemons_left() -> usize {
    std::thread::sleep(Duration::from_millis(200));
    hostile::alive_with("toolcert-bench-daemon").len()
}

/// PASS or FAIL against the goal, and the reasons of a FAIL.
fn judge(
    goal: &Goal,
    a: &Artifacts,
    secrets: &Secrets,
    rechecked: Option<bool>,
) -> (&'static str, String) {
    let mut why = Vec::new();
    if !a.code.is_some_and(|c| goal.exits.contains(&c)) {
        why.push(format!(
            "exit {:?}, expected one of {:?}",
            a.code, goal.exits
        ));
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
    if goal.rechecks && rechecked != Some(true) {
        why.push("the report does not recheck".into());
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
