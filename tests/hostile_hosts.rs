//! toolcert pointed at hosts that misbehave on purpose (the loopback hosts of
//! `tests/hostile/mod.rs`): whatever the host does, the run ends with exit status 1 (never 0,
//! never a panic), no row the host could not have witnessed passes, every report is written
//! and well-formed, and no token or canary reaches a report, stdout or stderr.
//!
//! The bounds here are generous (60 s a run); the speed and memory goals live in
//! `cargo bench --bench hostile`.

use crate::hostile;

use std::path::Path;
use std::time::Duration;

use hostile::{Artifacts, Behaviour, HostileHost, SCRIPT, Secrets, closed_port_url};
use serde_json::Value;

/// A run that takes longer than this is a failure of the timeouts; it is killed at twice it.
const GENEROUS: Duration = Duration::from_secs(60);

/// The scenarios most hostile runs exercise: the hooks and idempotency families, which the
/// hosts advertise, so these scenarios really drive requests at them (and finish quickly).
/// `idem.l1-retention` is skipped: it judges IDEM-L1-9 on the discovery document alone, which
/// these hosts serve correctly (without `layer1RetentionSeconds`), so its `fail` is a real
/// observation, not a consequence of the misbehaviour under test.
const SELECTION: [&str; 4] = ["hooks.", "idem.", "--skip", "idem.l1-retention"];

/// The toolcert under test: this build's, or `TOOLCERT_HOSTILE_EXE` (to show that a test
/// fails against an older toolcert that lacks the bound it checks).
fn exe() -> &'static Path {
    static EXE: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    EXE.get_or_init(|| {
        std::env::var_os("TOOLCERT_HOSTILE_EXE")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| env!("CARGO_BIN_EXE_toolcert").into())
    })
}

/// A run against `url` at `scale`, restricted to `filters`, with two fresh role tokens.
fn run(name: &str, url: &str, scale: &str, filters: &[&str]) -> (Artifacts, Secrets) {
    let secrets = Secrets::fresh();
    let dir = hostile::scratch(name);
    let mut extra = vec!["-q", "--seed", "11", "--timeout-scale", scale];
    extra.extend_from_slice(filters);
    let a = hostile::run_toolcert(exe(), url, &extra, &secrets, &dir, GENEROUS * 2);
    (a, secrets)
}

/// What every run against a hostile host must show, whatever the host did. `allowed`: the
/// dispositions a row may take (a host that answers, however wrongly, may earn `fail`).
/// Returns the parsed JSON report.
fn assert_contained(a: &Artifacts, secrets: &Secrets, allowed: &[&str]) -> Value {
    let ctx = || {
        format!(
            "exit {:?} after {:?}; reports in {}\n--- stdout (tail)\n{}\n--- stderr (tail)\n{}",
            a.code,
            a.wall,
            a.dir.display(),
            tail(&a.stdout),
            tail(&a.stderr)
        )
    };
    // The run ends: denied, not certified, not crashed, not killed.
    assert_eq!(
        a.code,
        Some(1),
        "the run must end with exit status 1\n{}",
        ctx()
    );
    assert!(
        !a.stderr.contains("panicked"),
        "toolcert panicked\n{}",
        ctx()
    );
    assert!(a.wall < GENEROUS, "the run took {:?}\n{}", a.wall, ctx());
    // The runs here select families (a partial run): it says so, and that rows deny.
    assert!(
        a.stdout.contains("toolcert: NOT CERTIFIED")
            || (a.stdout.contains("toolcert: partial: ") && a.stdout.contains("denying")),
        "the summary says so\n{}",
        ctx()
    );

    // Every report is written and well-formed.
    let json = a
        .json
        .as_deref()
        .unwrap_or_else(|| panic!("no r.json\n{}", ctx()));
    let report: Value = serde_json::from_str(json).expect("r.json is JSON");
    let suite = toolcert::suite::Suite::embedded().expect("the embedded suite loads");
    let violations = suite
        .schemas
        .violations("schemas/report.schema.json", &report)
        .expect("the report schema is known");
    assert!(
        violations.is_empty(),
        "r.json violates the schema: {violations:?}"
    );
    assert_eq!(report["summary"]["certified"], false);

    let rows = report["rows"].as_array().expect("rows");
    // A host whose discovery fails stops the run there: no row is judged, and it says why.
    let stopped = report["certification"]["stopped"].is_string();
    assert!(stopped || !rows.is_empty(), "no row was judged\n{}", ctx());
    for row in rows {
        let d = row["disposition"].as_str().unwrap_or("");
        assert!(
            allowed.contains(&d),
            "row {} is {d}, expected one of {allowed:?}: {row}",
            row["requirementId"]
        );
        assert!(
            d == "pass" || row["detail"].as_str().is_some_and(|s| !s.trim().is_empty()),
            "row {} is {d} without a reason: {row}",
            row["requirementId"]
        );
    }

    let junit = a
        .junit
        .as_deref()
        .unwrap_or_else(|| panic!("no r.xml\n{}", ctx()));
    if let Some(bad) = junit.chars().find(|c| !xml_char(*c)) {
        panic!("r.xml carries {bad:?}, which XML 1.0 forbids");
    }
    let parsed = quick_junit::Report::deserialize_from_str(junit)
        .unwrap_or_else(|e| panic!("r.xml does not parse: {e}\n{junit}"));
    let cases: usize = parsed
        .test_suites
        .iter()
        .filter(|s| s.name.as_str() != "certification")
        .map(|s| s.test_cases.len())
        .sum();
    assert_eq!(cases, rows.len(), "one JUnit case per row");

    let md = a
        .markdown
        .as_deref()
        .unwrap_or_else(|| panic!("no r.md\n{}", ctx()));
    assert!(md.contains("# toolcert certification report"));
    assert!(
        md.contains("NOT CERTIFIED") || md.contains("partial:"),
        "{md}"
    );
    let lower = md.to_ascii_lowercase();
    for raw in ["<script", "<img", "<a href", "<!--"] {
        assert!(!lower.contains(raw), "r.md carries raw {raw}:\n{md}");
    }

    // The HTML page carries the host's markup as text only: its own script is the one
    // script element, and no host tag or comment opens (tests/html_report.rs renders it).
    let html = a
        .html
        .as_deref()
        .unwrap_or_else(|| panic!("no r.html\n{}", ctx()));
    let lower_html = html.to_ascii_lowercase();
    assert_eq!(lower_html.matches("<script").count(), 1, "r.html scripts");
    for raw in ["<img", "<!--", "<iframe", "<object"] {
        assert!(!lower_html.contains(raw), "r.html carries raw {raw}");
    }

    // Nothing a host sent reaches a terminal or a report as a raw control character.
    for (name, text) in [
        ("stdout", a.stdout.as_str()),
        ("stderr", a.stderr.as_str()),
        ("r.md", md),
        ("r.html", html),
    ] {
        if let Some(c) = text
            .chars()
            .find(|c| c.is_control() && *c != '\n' && *c != '\t')
        {
            panic!("{name} carries a raw {c:?}\n{}", ctx());
        }
    }

    // No secret anywhere.
    let leaks = a.leaks(secrets);
    assert!(leaks.is_empty(), "secrets leaked: {leaks:#?}");
    report
}

/// XML 1.0 `Char`.
fn xml_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..)
}

fn tail(s: &str) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}

/// Every exchange of every scenario's transcript.
fn exchanges(report: &Value) -> Vec<&Value> {
    report["scenarios"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|s| {
            s["transcript"]["exchanges"]
                .as_array()
                .into_iter()
                .flatten()
        })
        .collect()
}

fn details(report: &Value) -> Vec<&str> {
    report["rows"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["detail"].as_str())
        .collect()
}

const UNWITNESSED: &[&str] = &["error", "blocked", "inapplicable"];

#[test]
fn a_closed_port_fails_discovery_and_the_run_stops_there() {
    let url = closed_port_url();
    // Every scenario: nothing waits on a refused connection.
    let (a, secrets) = run("closed", &url, "0.2", &[]);
    let report = assert_contained(&a, &secrets, &["error"]);
    let why = report["host"]["discovery"]["error"]
        .as_str()
        .expect("the discovery failure is reported");
    assert!(why.contains("could not connect"), "{why}");
    assert!(details(&report).is_empty(), "no row is judged");
    assert!(report["scenarios"].as_array().is_some_and(Vec::is_empty));
    // One clear error, not a line per scenario.
    assert!(
        a.stdout.contains("discovery failed, no scenario was run"),
        "{}",
        a.stdout
    );
    assert!(a.stdout.lines().count() < 20, "{}", a.stdout);
    assert!(a.stdout.contains("NOT CERTIFIED"));
}

#[test]
fn a_host_that_accepts_and_never_answers_costs_error_rows_and_trips_the_breaker() {
    let host = HostileHost::start(Behaviour::Silent);
    let (a, secrets) = run("silent", &host.url(), "0.2", &SELECTION);
    let report = assert_contained(&a, &secrets, UNWITNESSED);
    assert!(
        report["host"]["discovery"]["sha256"].is_string(),
        "discovery was served"
    );
    assert!(host.seen().other.load(std::sync::atomic::Ordering::SeqCst) > 0);
    // Each request waited out its budget (10 s × 0.2) ...
    assert!(
        exchanges(&report).iter().any(|e| e["transportError"]
            .as_str()
            .is_some_and(|t| t.contains("no complete answer"))),
        "a request timed out"
    );
    // ... and after HOST_LOST_AFTER scenarios in a row lost the host, the rest were not run.
    assert!(
        details(&report)
            .iter()
            .any(|d| d.contains("the host stopped answering earlier in this run")),
        "the host-lost breaker tripped: {:#?}",
        details(&report)
    );
}

#[test]
fn a_host_that_trickles_one_byte_every_second_is_cut_off_by_the_request_budget() {
    // Scale 0.3: the read gap (1.5 s) outlasts the 1 s trickle by half a second, so only the
    // whole-request budget (3 s) can end each request.
    let host = HostileHost::start(Behaviour::Trickle {
        every: Duration::from_secs(1),
    });
    let (a, secrets) = run("trickle", &host.url(), "0.3", &SELECTION);
    let report = assert_contained(&a, &secrets, UNWITNESSED);
    let timed_out = exchanges(&report)
        .into_iter()
        .filter_map(|e| e["transportError"].as_str())
        .filter(|t| t.contains("no complete answer") && t.contains("within 3000 ms"))
        .count();
    assert!(
        timed_out > 0,
        "the request budget (3000 ms), not the read gap, cut the trickle off"
    );
    assert!(
        details(&report)
            .iter()
            .any(|d| d.contains("the host stopped answering earlier in this run")),
        "the host-lost breaker tripped"
    );
}

#[test]
fn a_host_that_echoes_the_authorization_value_into_compared_fields_leaks_nothing() {
    let host = HostileHost::start(Behaviour::EchoAuth);
    // Full budgets: this host answers every request at once, so they cost nothing, and a
    // loaded machine cannot turn the checks that quote its 403 into timeouts.
    let (a, secrets) = run("echo", &host.url(), "1", &SELECTION);
    // The host answers (wrongly): a row may fail, none may pass.
    let report = assert_contained(
        &a,
        &secrets,
        &["error", "blocked", "inapplicable", "fail", "warn"],
    );
    // The echo reached the report (scrubbed): otherwise this test would prove nothing.
    let whole = report.to_string();
    assert!(
        whole.contains("Bearer [redacted]\"") && whole.contains("\"[redacted]\""),
        "the echoed token shows as redacted in the report"
    );
    assert!(
        exchanges(&report)
            .iter()
            .any(|e| e["responseHeaders"]["x-echo-token"] == "[redacted]"),
        "the echoed header is redacted in the transcript"
    );
    assert!(
        details(&report).iter().any(|d| d.contains("[redacted]")),
        "a check compared the echoed value and says so, redacted"
    );
    assert!(
        report["scenarios"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|s| s["checks"].as_array().into_iter().flatten())
            .filter_map(|c| c["detail"].as_str())
            .any(|d| d.contains("x[redacted]…")),
        "a check quoted a 403's status up to its excerpt's end, the token's head scrubbed"
    );
    // A row quotes the 403's status, `<script>` and all: the Markdown escaped it
    // (assert_contained: no raw `<script`).
    let md = a.markdown.as_deref().unwrap_or("");
    assert!(
        md.contains("&lt;script&gt;"),
        "the Markdown quotes the host's script, escaped"
    );
    assert!(
        whole.contains(hostile::CANARY_MARK),
        "a canary the host echoed back shows as {}",
        hostile::CANARY_MARK
    );
}

#[test]
fn a_host_that_sends_truncated_json_is_judged_on_what_it_sent() {
    let host = HostileHost::start(Behaviour::TruncatedJson);
    let (a, secrets) = run("truncated", &host.url(), "0.2", &SELECTION);
    let report = assert_contained(&a, &secrets, UNWITNESSED);
    assert!(
        exchanges(&report)
            .iter()
            .any(|e| e["responseBody"]["$nonJson"].is_string()),
        "the transcript keeps what was sent"
    );
}

#[test]
fn a_host_that_sends_a_binary_body_leaves_every_report_well_formed() {
    let host = HostileHost::start(Behaviour::BinaryBody);
    let (a, secrets) = run("binary", &host.url(), "0.2", &SELECTION);
    let report = assert_contained(&a, &secrets, UNWITNESSED);
    assert!(
        exchanges(&report)
            .iter()
            .any(|e| e["responseBody"]["$nonJson"].is_string()),
        "the transcript keeps what was sent"
    );
    for (name, text) in a.texts() {
        assert!(
            !text.contains('\u{1b}') && !text.contains('\0'),
            "{name} carries a raw control byte the host sent"
        );
    }
}

#[test]
fn a_host_that_promises_more_body_than_it_sends_costs_error_rows() {
    let host = HostileHost::start(Behaviour::ShortBody);
    let (a, secrets) = run("short", &host.url(), "0.2", &SELECTION);
    let report = assert_contained(&a, &secrets, UNWITNESSED);
    assert!(
        exchanges(&report)
            .iter()
            .any(|e| e["transportError"].is_string() && e["status"].is_null()),
        "the cut-off body is a transport error, not an answer"
    );
}

#[test]
fn a_host_that_answers_html_500_pages_is_escaped_in_every_report() {
    let host = HostileHost::start(Behaviour::Html500);
    let (a, secrets) = run("html", &host.url(), "0.2", &SELECTION);
    let report = assert_contained(&a, &secrets, UNWITNESSED);
    assert!(
        exchanges(&report).iter().any(|e| e["status"] == 500),
        "the 500 is in the transcript"
    );
    // The page reached the JSON report as data (where it is inert), the token the page
    // prints where toolcert's excerpt ends cut off and scrubbed ...
    let whole = report.to_string();
    assert!(whole.contains(SCRIPT));
    assert!(
        whole.contains("<p>session [redacted]\""),
        "the excerpt ends in the scrubbed head of the token"
    );
    // ... and never raw in the Markdown (assert_contained; the echo test has a row quote one).
}

/// A redirect is never followed: the host saw exactly the requests the transcripts record.
fn assert_not_followed(host: &HostileHost, report: &Value) {
    let recorded = exchanges(report)
        .iter()
        .filter(|e| e["step"] != "discovery")
        .count();
    let seen = host.seen().other.load(std::sync::atomic::Ordering::SeqCst);
    assert!(seen > 0);
    assert_eq!(
        seen, recorded,
        "the host saw {seen} requests, the transcripts record {recorded}: a redirect was followed"
    );
    let base = report["host"]["baseUrl"].as_str().unwrap_or("");
    for e in exchanges(report) {
        let url = e["url"].as_str().unwrap_or("");
        assert!(url.starts_with(base), "{url} is off the host");
        if e["step"] != "discovery" {
            assert_eq!(e["status"], 302, "{e}");
        }
    }
}

#[test]
fn a_redirect_loop_is_never_followed() {
    let host = HostileHost::start(Behaviour::RedirectLoop);
    let (a, secrets) = run("loop", &host.url(), "0.2", &SELECTION);
    let report = assert_contained(&a, &secrets, UNWITNESSED);
    assert_not_followed(&host, &report);
}

#[test]
fn a_redirect_off_loopback_is_never_followed() {
    let host = HostileHost::start(Behaviour::RedirectOffLoopback);
    let (a, secrets) = run("offhost", &host.url(), "0.2", &SELECTION);
    let report = assert_contained(&a, &secrets, UNWITNESSED);
    assert_not_followed(&host, &report);
    assert!(report.to_string().contains("http://example.com/"));
}

#[test]
fn a_host_advertising_nothing_is_not_certified_on_zero_observations() {
    // A minimal v2 host: discovery only, no families, no ETag.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for mut s in listener.incoming().flatten().take(1024) {
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
    let (a, secrets) = run("bare", &format!("http://127.0.0.1:{port}"), "0.2", &[]);
    // DISC-1 is measured and passes; DISC-6 fails (no ETag); hooks rows are inapplicable.
    let report = assert_contained(
        &a,
        &secrets,
        &["pass", "fail", "inapplicable", "warn", "blocked"],
    );
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
}

#[test]
fn control_characters_a_host_puts_in_its_discovery_document_reach_no_console_or_markdown_raw() {
    let host =
        HostileHost::start_with_discovery(Behaviour::EchoAuth, hostile::DISCOVERY_WITH_CONTROLS);
    // Not quiet: the console prints the wire major and why.
    let secrets = Secrets::fresh();
    let dir = hostile::scratch("controls");
    let mut extra = vec!["--seed", "11", "--timeout-scale", "0.2"];
    extra.extend_from_slice(&SELECTION);
    let a = hostile::run_toolcert(exe(), &host.url(), &extra, &secrets, &dir, GENEROUS * 2);
    let report = assert_contained(
        &a,
        &secrets,
        &["error", "blocked", "inapplicable", "fail", "warn"],
    );
    assert_eq!(report["host"]["discovery"]["wireMajor"], 1);
    assert!(a.stdout.contains("discovery: wire major 1"), "{}", a.stdout);
    for (name, text) in [
        ("stdout", a.stdout.as_str()),
        ("r.md", a.markdown.as_deref().unwrap_or("")),
    ] {
        for c in ['\u{1b}', '\u{7}', '\r'] {
            assert!(
                !text.contains(c),
                "{name} carries a raw {c:?} from the discovery document"
            );
        }
    }
    assert!(
        !a.markdown.as_deref().unwrap_or("").contains("\n# injected"),
        "a host's newline starts no heading in r.md"
    );
}

// ---------------------------------------------------------------------------------------------
// Round two: memory bounded per run, every wait bounded, spawned hosts reaped, no secret in any
// form. Each test is one row of issue 30's table; the same hosts run at full scale in
// `cargo bench --bench hostile`.
// ---------------------------------------------------------------------------------------------

/// The most a run may hold: the peak resident set of the toolcert process, as `VmHWM`.
const PEAK_RSS: u64 = 100 * 1000 * 1000;

/// The largest report a run against a hostile host may write.
const REPORT_MAX: usize = 10 * 1000 * 1000;

/// What every round-two run must also show: a report under [`REPORT_MAX`] that `toolcert
/// recheck` accepts (exit 0: every row re-judges as stored), and a peak RSS under
/// [`PEAK_RSS`].
fn assert_bounded(a: &Artifacts) {
    let json = a.json.as_deref().expect("r.json");
    assert!(
        json.len() < REPORT_MAX,
        "r.json is {} bytes, over {REPORT_MAX}",
        json.len()
    );
    assert!(
        a.peak_rss_kib * 1024 < PEAK_RSS,
        "peak RSS {} KiB, over {PEAK_RSS} bytes",
        a.peak_rss_kib
    );
    let out = std::process::Command::new(exe())
        .arg("recheck")
        .arg(a.dir.join("r.json"))
        .output()
        .expect("recheck runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0), "recheck of r.json: {text}");
}

/// Dispositions a host that answers (however wrongly) may earn; none passes.
const ANSWERED: &[&str] = &["error", "blocked", "inapplicable", "fail", "warn"];

/// A round-two run against `host`: contained ([`assert_contained`], rows only in `allowed`)
/// and bounded ([`assert_bounded`]). Returns the artifacts and the parsed report.
fn run_bounded(
    name: &str,
    host: &HostileHost,
    scale: &str,
    filters: &[&str],
    allowed: &[&str],
) -> (Artifacts, Value) {
    let (a, secrets) = run(name, &host.url(), scale, filters);
    let report = assert_contained(&a, &secrets, allowed);
    assert_bounded(&a);
    (a, report)
}

/// Rows whose detail says `needle`.
fn rows_saying<'r>(report: &'r Value, needle: &str) -> Vec<&'r str> {
    details(report)
        .into_iter()
        .filter(|d| d.contains(needle))
        .collect()
}

#[test]
fn a_host_answering_every_request_just_under_the_body_cap_exhausts_the_memory_budget() {
    let host = HostileHost::start(Behaviour::BigBodies);
    let (_, report) = run_bounded(
        "big-bodies",
        &host,
        "0.5",
        &SELECTION,
        &["error", "blocked", "inapplicable", "fail"],
    );
    let spent = rows_saying(&report, "exceeded toolcert's memory budget of 8 MiB");
    assert!(
        !spent.is_empty(),
        "rows name the budget: {:#?}",
        details(&report)
    );
}

#[test]
fn a_discovery_document_of_4_mb_is_refused_and_nothing_multiplies_it() {
    let discovery =
        hostile::DISCOVERY.replacen("{", &format!(r#"{{"pad":"{}","#, "d".repeat(4_000_000)), 1);
    let host = HostileHost::start_with_discovery(Behaviour::Plain, discovery);
    let (_, report) = run_bounded("big-discovery", &host, "0.5", &SELECTION, &["error"]);
    let why = report["host"]["discovery"]["error"].as_str().unwrap_or("");
    assert!(why.contains("more than the 1 MiB toolcert takes"), "{why}");
}

#[test]
fn template_placeholders_a_host_echoes_are_kept_as_data_never_expanded() {
    let host = HostileHost::start(Behaviour::EchoPlaceholders);
    let (_, report) = run_bounded("placeholders", &host, "0.5", &SELECTION, ANSWERED);
    assert!(
        report.to_string().contains("{{steps.call.body}}"),
        "the host's placeholders are in the report as the host sent them"
    );
}

/// `--spawn` a shell command line against the host at `url` (a loopback hostile host): the
/// command only prints that URL and then does what `then` says.
fn spawn_printing(url: &str, then: &str) -> String {
    format!("sh -c 'echo listening on {url}; {then}'")
}

fn run_spawned(name: &str, spawn: &str, filters: &[&str]) -> (Artifacts, Secrets) {
    let secrets = Secrets::fresh();
    let dir = hostile::scratch(name);
    let mut extra = vec!["-q", "--seed", "11", "--timeout-scale", "0.5"];
    extra.extend_from_slice(filters);
    let a = hostile::run_toolcert_on(
        exe(),
        &["--spawn", spawn],
        &extra,
        &secrets,
        &dir,
        GENEROUS * 2,
    );
    (a, secrets)
}

#[test]
fn a_spawned_command_writing_an_endless_line_before_its_url_is_refused_within_bounds() {
    let (a, _) = run_spawned(
        "spawn-endless-line",
        "sh -c 'yes spam | tr -d \"\\n\"'",
        &SELECTION,
    );
    assert_eq!(a.code, Some(2), "{}", a.stderr);
    assert!(a.wall < Duration::from_secs(15), "{:?}", a.wall);
    assert!(a.peak_rss_kib * 1024 < PEAK_RSS, "{} KiB", a.peak_rss_kib);
    assert!(
        a.stderr.contains("without printing its URL"),
        "{}",
        a.stderr
    );
    assert!(!a.stderr.contains("panicked"));
}

#[test]
fn a_spawned_host_that_writes_endlessly_after_its_url_costs_no_memory() {
    let host = HostileHost::start(Behaviour::Plain);
    for (name, then) in [
        ("spawn-chatty-out", "exec yes stdout-spam"),
        ("spawn-chatty-err", "exec yes stderr-spam >&2"),
    ] {
        let (a, secrets) = run_spawned(
            name,
            &spawn_printing(&host.url(), then),
            &["hooks.authorization"],
        );
        assert_contained(&a, &secrets, &["error", "blocked", "inapplicable", "fail"]);
        assert_bounded(&a);
    }
}

#[test]
fn a_spawned_command_that_daemonizes_leaves_no_process_behind() {
    let host = HostileHost::start(Behaviour::Plain);
    let marker = format!("toolcert-daemon-{}", uuid::Uuid::new_v4().simple());
    // The command forks a server into a new session, prints the URL, and exits.
    let daemon = format!(
        "(setsid sh -c \"sleep 300; echo {marker}\" </dev/null >/dev/null 2>&1 &); echo listening on {}",
        host.url()
    );
    let (a, secrets) = run_spawned(
        "spawn-daemon",
        &format!("sh -c '{daemon}'"),
        &["hooks.authorization"],
    );
    assert_contained(&a, &secrets, &["error", "blocked", "inapplicable", "fail"]);
    let alive = hostile::alive_with(&marker);
    assert!(alive.is_empty(), "left alive: {alive:?}");
}

#[test]
fn a_host_whose_runs_never_settle_is_cut_by_the_caps_and_reads_blocked() {
    let host = HostileHost::start(Behaviour::NeverSettles);
    // Answers that need no settled run (a replayed `runId`) may pass.
    let allowed = ["error", "blocked", "inapplicable", "fail", "pass"];
    let (a, report) = run_bounded("never-settles", &host, "0.3", &SELECTION, &allowed);
    assert!(a.wall < Duration::from_secs(60), "{:?}", a.wall);
    // The event reads were cut at their cap and say so (the rows reading them are blocked,
    // by this or by a positive control this host does not meet).
    let cut = report["scenarios"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|s| s["observations"]["steps"].as_object().into_iter().flatten())
        .filter_map(|(_, o)| o["$blocked"].as_str())
        .filter(|why| why.contains("toolcert cannot witness the end of the run"))
        .count();
    assert!(cut > 0, "an events read names its cap");
}

#[test]
fn absurd_advertised_limits_cost_no_memory() {
    let absurd = r#"{"protocolVersion":"1.0","toolHooks":{"supported":true,"prePostEvents":true,"perToolAuthorization":true,"perToolRateLimit":true,"rateLimit":{"capacity":9223372036854775807,"refillPerSecond":1e308}},"idempotency":{"supported":true,"layer1RetentionSeconds":9223372036854775807},"mcp":{"mrtr":{"maxRounds":9223372036854775807}},"limits":{"maxRecordBytes":9223372036854775807,"maxEvents":18446744073709551615,"maxBodyBytes":1e300},"fixtures":["conformance-noop","conformance-idempotent"]}"#;
    let host = HostileHost::start_with_discovery(Behaviour::EchoAuth, absurd);
    run_bounded("absurd", &host, "0.5", &SELECTION, ANSWERED);
}

#[test]
fn json_nested_120_deep_in_every_answer_leaves_a_report_that_rechecks() {
    let host = HostileHost::start(Behaviour::Nested { depth: 120 });
    // The answers are well-formed beside their deep member: a rule they meet may pass.
    let allowed = ["error", "blocked", "inapplicable", "fail", "warn", "pass"];
    let (_, report) = run_bounded("nested", &host, "0.5", &SELECTION, &allowed);
    assert!(
        report.to_string().contains("\"$tooDeep\":32"),
        "the deep parts are cut where kept"
    );
}

/// Bidirectional overrides and other invisible characters a host sent.
fn invisible_in(text: &str) -> Option<char> {
    text.chars().find(|c| {
        (c.is_control() && *c != '\n' && *c != '\t')
            || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    })
}

#[test]
fn markup_rtl_overrides_and_nuls_in_every_field_reach_no_output_raw() {
    let host = HostileHost::start(Behaviour::Markup);
    let (a, _) = run_bounded("markup", &host, "0.5", &SELECTION, ANSWERED);
    for (name, text) in a.texts() {
        if let Some(c) = invisible_in(text) {
            panic!("{name} carries a raw {c:?}");
        }
    }
    // The JSON report keeps the host's text as data, escaped.
    let json = a.json.as_deref().unwrap_or("");
    assert!(
        json.contains("\\u202e"),
        "r.json keeps the override escaped"
    );
}

#[test]
fn a_token_echoed_in_pieces_and_encodings_reaches_no_output() {
    let host = HostileHost::start(Behaviour::EncodedEcho);
    // assert_contained also looks for every form of every token in every artifact.
    let (a, report) = run_bounded("encoded", &host, "1", &SELECTION, ANSWERED);
    assert!(
        report.to_string().contains("[redacted]"),
        "the echoed forms reached the report, scrubbed"
    );
    assert!(
        a.stdout.contains("[redacted]"),
        "the console quoted an echoed form, scrubbed"
    );
}

#[test]
fn event_ids_with_non_ascii_bytes_are_refused_and_the_host_is_not_lost() {
    let host = HostileHost::start(Behaviour::NonAsciiEventIds);
    let (_, report) = run_bounded("event-ids", &host, "0.5", &SELECTION, ANSWERED);
    assert!(
        rows_saying(&report, "stopped answering").is_empty(),
        "the host answered every request: {:#?}",
        details(&report)
    );
    assert!(
        exchanges(&report)
            .iter()
            .any(|e| e["responseBody"]["refusedEventIds"].as_u64() > Some(0)),
        "the refused ids are in the transcript"
    );
}

/// The leak check itself can fail: every form the encoding host sends, and the same forms in a
/// JSON report's escapes, is found when it is not scrubbed.
#[test]
fn the_leak_check_finds_every_form_the_encoding_host_sends() {
    let secrets = Secrets::fresh();
    let token = &secrets.operator;
    let mut forms = hostile::encoded_forms(token);
    forms.push(serde_json::to_string(&format!("{}\u{7f}{}", &token[..20], &token[20..])).unwrap());
    for form in forms {
        let a = Artifacts {
            code: Some(1),
            wall: Duration::ZERO,
            peak_rss_kib: 0,
            stdout: format!("quoted: {form} here"),
            stderr: String::new(),
            json: None,
            junit: None,
            markdown: None,
            html: None,
            dir: std::env::temp_dir().join("toolcert-hostile-leak-check-none"),
        };
        assert!(!a.leaks(&secrets).is_empty(), "{form:?} was not found");
    }
}

#[test]
fn an_endless_event_stream_costs_bounded_time_memory_and_report() {
    let host = HostileHost::start(Behaviour::EndlessEvents { per_sec: 100 });
    let (a, report) = run_bounded("endless-events", &host, "0.3", &SELECTION, UNWITNESSED);
    assert!(a.wall < Duration::from_secs(60), "{:?}", a.wall);
    assert!(
        report
            .to_string()
            .contains("toolcert cannot witness the end of the run"),
        "the cut reads name their cap"
    );
}
