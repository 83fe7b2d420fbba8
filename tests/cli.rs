//! End-to-end: the `toolcert` binary against the embedded reference host and its mutants.

use crate::support::rows;

use std::path::PathBuf;
use std::process::{Command, Output};

fn toolcert(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolcert"))
        .args(args)
        .output()
        .expect("toolcert runs")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("toolcert-cli-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn run_writes_three_reports_and_the_json_validates() {
    let dir = scratch("reports");
    let (json, xml, md) = (dir.join("r.json"), dir.join("r.xml"), dir.join("r.md"));
    let out = toolcert(&[
        "run",
        "--seed",
        "7",
        "--report",
        json.to_str().unwrap(),
        "--junit",
        xml.to_str().unwrap(),
        "--markdown",
        md.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("  tool-hooks       certified"),
        "the profile table expected:\n{stdout}"
    );
    assert!(stdout.contains("toolcert: certified: "), "{stdout}");

    let suite = toolcert::suite::Suite::embedded().unwrap();
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let violations = suite
        .schemas
        .violations("schemas/report.schema.json", &report)
        .unwrap();
    assert!(violations.is_empty(), "{violations:?}");
    assert_eq!(report["seed"], 7);
    assert_eq!(report["summary"]["certified"], true);
    let rows = report["rows"].as_array().unwrap();
    // Every row passes, but one whose only leg belongs to the other wire major.
    assert!(
        rows.iter().all(|r| rows::other_major(r)
            || (r["disposition"] == "pass" && r["assertions"].as_u64().unwrap() >= 1)),
        "{:#?}",
        rows.iter()
            .filter(|r| r["disposition"] != "pass")
            .collect::<Vec<_>>()
    );
    // Tokens and canaries never reach the report.
    let whole = report.to_string();
    assert!(
        !whole.contains("refhost-operator-token") && !whole.contains("tc-canary-"),
        "secret leaked into the report"
    );
    assert!(
        report["host"]["discovery"]["sha256"]
            .as_str()
            .unwrap()
            .len()
            == 64
    );

    let junit = std::fs::read_to_string(&xml).unwrap();
    let parsed = quick_junit::Report::deserialize_from_str(&junit).expect("JUnit XML parses");
    let cases: usize = parsed
        .test_suites
        .iter()
        .filter(|s| s.name.as_str() != "certification")
        .map(|s| s.test_cases.len())
        .sum();
    assert_eq!(cases, rows.len());
    let markdown = std::fs::read_to_string(&md).unwrap();
    assert!(
        markdown.contains("**certified: ") && markdown.contains("| HOOKS-RL |"),
        "{markdown}"
    );
    std::fs::remove_dir_all(dir).ok();
}

/// The CLI path of a mutant: `toolcert mutants` lists the mutants the suite names (the
/// reference host's, then the suite's data mutants), and `toolcert run --reference-mutant
/// NAME` turns a kill into `fail` rows and exit code 1, with the mutant recorded in the
/// report, for a reference host mutant and a data mutant alike. Which mutant each check kills is the mutation matrix's
/// job (`tests/mutation_matrix.rs` runs every mutant against every scenario in-process); one
/// process per mutant here proved the same kills again and took minutes of `cargo test`.
#[test]
fn a_mutant_makes_the_run_exit_non_zero_with_fail_rows() {
    let list = toolcert(&["mutants"]);
    assert!(list.status.success());
    let names: Vec<String> = String::from_utf8_lossy(&list.stdout)
        .lines()
        .map(|l| l.split('\t').next().unwrap().to_string())
        .collect();
    let suite = toolcert::suite::Suite::embedded().unwrap();
    let killers_of = |name: &str| -> Vec<&str> {
        suite
            .scenarios
            .iter()
            .filter(|s| s.kills.iter().any(|k| k == name))
            .map(|s| s.id.as_str())
            .collect()
    };
    assert_eq!(
        names.len(),
        reference_host::mutants::ALL.len() + suite.data_mutants.len(),
        "{names:?}"
    );
    for name in &names {
        assert!(
            !killers_of(name).is_empty(),
            "no scenario names mutant {name}"
        );
    }
    // A reference host mutant, and a data mutant of the suite (listed last), which runs the
    // clean host behind a front that rewrites its answers.
    let data = suite
        .data_mutants
        .keys()
        .next()
        .expect("the suite has a data mutant");
    assert_eq!(names.last(), Some(data));
    let dir = scratch("mutants");
    for name in [names.first().expect("at least one mutant"), data] {
        let json = dir.join(format!("{name}.json"));
        let mut args = vec![
            "run",
            "-q",
            "--reference-mutant",
            name,
            "--report",
            json.to_str().unwrap(),
            "--exact",
        ];
        let killers = killers_of(name);
        args.extend(&killers);
        let out = toolcert(&args);
        assert_eq!(
            out.status.code(),
            Some(1),
            "mutant {name} survived {killers:?}:\n{}",
            text(&out)
        );
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(report["host"]["mutant"], name.as_str());
        assert!(
            report["rows"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r["disposition"] == "fail"),
            "mutant {name}: no fail row:\n{}",
            text(&out)
        );
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn list_filter_and_exact_behave_like_cargo_test() {
    let out = toolcert(&["run", "--list"]);
    assert!(out.status.success());
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(listed.contains("hooks.rate-limit: test"), "{listed}");
    let out = toolcert(&["run", "--list", "--exact", "hooks.rate-limit"]);
    let listed = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        listed.lines().filter(|l| l.ends_with(": test")).count(),
        1,
        "{listed}"
    );
    let out = toolcert(&[
        "run",
        "-q",
        "rate-limit",
        "--jobs",
        "1",
        "--timeout-scale",
        "2",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    // `rate-limit` matches the receiver leg and the upstream leg: a partial run, which never
    // says "certified", and exits 0 because no row it judged denies.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("in 2 scenarios"), "{stdout}");
    assert!(
        stdout.contains("toolcert: partial: ") && stdout.contains("no judged row denies"),
        "{stdout}"
    );
    assert!(!stdout.contains("certified:"), "{stdout}");
}

#[test]
fn bad_input_gets_a_clear_error_and_exit_2() {
    let cases: [(&[&str], &str); 5] = [
        (&["run", "--reference-mutant", "no-such"], "no-such"),
        (
            &["run", "--host", "http://127.0.0.1:9", "--token", "operator"],
            "ROLE=TOKEN",
        ),
        (&["run", "--timeout-scale", "0"], "--timeout-scale"),
        (&["run", "--host", "ftp://x"], "http://"),
        (
            &["run", "--profile", "/nonexistent/profile.json"],
            "/nonexistent/profile.json",
        ),
    ];
    for (args, needle) in cases {
        let out = toolcert(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(
            text(&out).contains(needle),
            "{args:?} should mention {needle}: {}",
            text(&out)
        );
    }
}

#[test]
fn coverage_lists_every_family() {
    let out = toolcert(&["coverage"]);
    assert!(out.status.success());
    insta::assert_snapshot!("coverage", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn the_standalone_mock_provider_serves_both_wire_formats() {
    use std::io::{BufRead, BufReader};
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolcert"))
        .args(["mock-provider", "--port", "0"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let base = line.trim().rsplit(' ').next().unwrap().to_string();
    assert!(base.starts_with("http://127.0.0.1:"), "{line}");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let http = reqwest::Client::builder().no_proxy().timeout(std::time::Duration::from_secs(5)).build().unwrap();
        let script = serde_json::json!({"model": "demo", "rounds": [
            {"toolCalls": [{"name": "get_weather", "arguments": {"city": "Lyon"}}]},
            {"text": "It is sunny."}
        ]});
        let r = http.post(format!("{base}/_toolcert/scripts")).json(&script).send().await.unwrap();
        assert_eq!(r.status().as_u16(), 201);
        let openai: serde_json::Value = http
            .post(format!("{base}/v1/chat/completions"))
            .json(&serde_json::json!({"model": "demo", "messages": [{"role": "user", "content": "Weather?"}]}))
            .send().await.unwrap().json().await.unwrap();
        assert_eq!(openai["choices"][0]["finish_reason"], "tool_calls");
        let sse = http
            .post(format!("{base}/v1/messages"))
            .header("anthropic-version", "2023-06-01")
            .json(&serde_json::json!({"model": "demo", "max_tokens": 64, "stream": true, "messages": [{"role": "user", "content": "Weather?"}]}))
            .send().await.unwrap().text().await.unwrap();
        assert!(sse.contains("event: message_stop") && sse.contains("sunny"), "{sse}");
        let log: serde_json::Value = http.get(format!("{base}/_toolcert/scripts/demo/requests")).send().await.unwrap().json().await.unwrap();
        assert_eq!(log["requests"].as_array().unwrap().len(), 2);
        let bad = http.post(format!("{base}/_toolcert/scripts"))
            .json(&serde_json::json!({"model": "x", "rounds": [{"text": "a", "refusal": "b"}]}))
            .send().await.unwrap();
        assert_eq!(bad.status().as_u16(), 400);
        let body: serde_json::Value = bad.json().await.unwrap();
        assert_eq!(body["error"]["pointer"], "/rounds/0/refusal");
    });
    child.kill().ok();
    child.wait().ok();
}

/// Flags and profiles that cannot work are refused with exit status 2 and a message naming the
/// problem, before any host is started or contacted: the remote cases point at
/// `127.0.0.1:1`, so a request would have surfaced as a transport error or a libtest run.
#[test]
fn nonsense_input_is_refused_up_front_with_exit_2() {
    let dir = scratch("nonsense");
    let host = "http://127.0.0.1:1";
    let profile = |name: &str, json: &str| {
        let path = dir.join(name);
        std::fs::write(&path, json).unwrap();
        path.to_str().unwrap().to_string()
    };
    let wizard = profile(
        "wizard.json",
        r#"{"roles": {"wizard": {"token": "s3cret"}}}"#,
    );
    let roles_list = profile("roles-list.json", r#"{"roles": []}"#);
    let token_number = profile("token-number.json", r#"{"roles": {"actor": {"token": 5}}}"#);
    let ftp = profile("ftp.json", r#"{"baseUrl": "ftp://x"}"#);
    let remote = profile("remote.json", r#"{"baseUrl": "http://127.0.0.1:1"}"#);
    let dir_str = dir.to_str().unwrap().to_string();
    let r_json = dir.join("same.json").to_str().unwrap().to_string();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["--host", host, "--jobs", "0"],
            "--jobs 0: expected from 1 to 256",
        ),
        (vec!["--jobs", "0"], "--jobs 0: expected from 1 to 256"),
        (
            vec!["--host", host, "--timeout-scale", "-1"],
            "--timeout-scale -1: expected a factor from 0.1 to 20",
        ),
        (
            vec!["--host", host, "--timeout-scale", "1e300"],
            "--timeout-scale 1e300: expected a factor from 0.1 to 20",
        ),
        (
            vec!["--host", host, "--timeout-scale", "1e-300"],
            "--timeout-scale 1e-300: expected a factor from 0.1 to 20",
        ),
        (
            vec!["--host", host, "--timeout-scale", "NaN"],
            "--timeout-scale NaN: expected a factor",
        ),
        (
            vec!["--host", host, "--token", "wizard=s3cret"],
            "unknown role \"wizard\"; the roles are operator, actor, peer, lacking, unevaluable, foreign",
        ),
        (vec!["--token", "wizard=s3cret"], "unknown role \"wizard\""),
        (
            vec!["--host", host, "--profile", &wizard],
            "at JSON pointer \"/roles/wizard\": unknown role \"wizard\"; the roles are operator, actor, peer, lacking, unevaluable, foreign",
        ),
        (
            vec!["--host", host, "--report", "/nonexistent/r.json"],
            "--report /nonexistent/r.json: /nonexistent does not exist",
        ),
        (
            vec!["--host", host, "--junit", "/nonexistent/r.xml"],
            "--junit /nonexistent/r.xml: /nonexistent does not exist",
        ),
        (
            vec!["--host", host, "--markdown", "/nonexistent/r.md"],
            "--markdown /nonexistent/r.md: /nonexistent does not exist",
        ),
        (
            vec!["--host", host, "--report", &dir_str],
            "is a directory; expected a file path",
        ),
        (
            vec!["--host", host, "--report", &r_json, "--junit", &r_json],
            "--junit",
        ),
        (
            vec!["--host", host, "--profile", &ftp, "--report", &ftp],
            "that is also the --profile file",
        ),
        (
            vec!["--host", host, "--profile", "/nonexistent/profile.json"],
            "host profile /nonexistent/profile.json: cannot read",
        ),
        (
            vec!["--host", host, "--profile", &roles_list],
            "at JSON pointer \"/roles\": [] is not of type \"object\"",
        ),
        (
            vec!["--host", host, "--profile", &token_number],
            "at JSON pointer \"/roles/actor/token\": 5 is not of type \"string\"",
        ),
        (vec!["--profile", &ftp], "at JSON pointer \"/baseUrl\""),
        (
            vec![
                "--profile",
                &remote,
                "--reference-mutant",
                "authz-always-deny",
            ],
            "--reference-mutant: the profile",
        ),
        (
            vec!["--profile", &remote, "--reference-upstream-only"],
            "--reference-upstream-only: the profile",
        ),
        (
            vec!["--host", host, "--suite", "/nonexistent/suite"],
            "--suite /nonexistent/suite: no such directory",
        ),
        (
            vec!["--host", host, "no-such-scenario"],
            "no scenario matches the filters [\"no-such-scenario\"]",
        ),
        (vec!["--spawn", " "], "--spawn: expected a command"),
    ];
    for (args, needle) in cases {
        let mut argv = vec!["run"];
        argv.extend(&args);
        let started = std::time::Instant::now();
        let out = toolcert(&argv);
        let elapsed = started.elapsed();
        let all = text(&out);
        assert_eq!(out.status.code(), Some(2), "{argv:?}: {all}");
        assert!(
            all.contains(needle),
            "{argv:?} should say {needle:?}: {all}"
        );
        assert!(
            elapsed < std::time::Duration::from_secs(10),
            "{argv:?} took {elapsed:?}"
        );
        // Nothing ran: no banner, no discovery, no libtest lines, no transport error.
        for sign in [
            "certifying",
            "discovery",
            "running ",
            "test result",
            "transport",
            "Connection refused",
            "s3cret",
        ] {
            assert!(!all.contains(sign), "{argv:?} printed {sign:?}: {all}");
        }
        assert!(
            all.matches("os error").count() <= 1,
            "{argv:?}: the OS error twice: {all}"
        );
    }

    // A refused run leaves an earlier report at the same path as it was.
    let previous = dir.join("previous.json");
    std::fs::write(&previous, "previous report").unwrap();
    let out = toolcert(&[
        "run",
        "--host",
        host,
        "--report",
        previous.to_str().unwrap(),
        "--token",
        "wizard=s3cret",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string(&previous).unwrap(),
        "previous report"
    );
    // A report path that does not exist yet is probed, not left behind.
    let fresh = dir.join("fresh.json");
    let out = toolcert(&[
        "run",
        "--host",
        host,
        "--report",
        fresh.to_str().unwrap(),
        "--jobs",
        "0",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let out = toolcert(&[
        "run",
        "--host",
        host,
        "--report",
        fresh.to_str().unwrap(),
        "--token",
        "wizard=s3cret",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(!fresh.exists(), "the probe file was left behind");
    std::fs::remove_dir_all(dir).ok();
}
