//! Tool-turn recovery and replay (TTC §D): the durable store, start-up
//! recovery through the real binary (SIGKILL and restart), node attempts,
//! record failures, the replay fork and cancel.
//! Every wait is bounded and everything is loopback.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use common::{
    ALICE, Canned, ERIN, FakeProvider, Loopback, OPERATOR, bounded, client, fed_back, openai_calls,
    openai_text, seam_host,
};
use reference_host::mutants::Mutant;
use reference_host::{HostConfig, HostError, start};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::watch;

const BIN: &str = env!("CARGO_BIN_EXE_reference-host");
const TEST_TIMEOUT: Duration = Duration::from_secs(60);
const WAIT: Duration = Duration::from_secs(10);

// ---------------------------------------------------------------------------
// The tool receiver: counts arrivals per path with their Idempotency-Key.

/// One arrival: the receiver path label and its `Idempotency-Key`.
type Arrival = (String, Option<String>);

#[derive(Clone)]
struct ReceiverState {
    arrivals: Arc<Mutex<Vec<Arrival>>>,
    release: watch::Sender<bool>,
}

impl Default for ReceiverState {
    fn default() -> Self {
        Self {
            arrivals: Arc::default(),
            release: watch::Sender::new(false),
        }
    }
}

type Receiver = Loopback<ReceiverState>;

async fn receiver() -> Receiver {
    async fn answer(
        State(state): State<ReceiverState>,
        axum::extract::Path(label): axum::extract::Path<String>,
        headers: HeaderMap,
    ) -> Response {
        let key = headers
            .get("idempotency-key")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let earlier = {
            let mut arrivals = state.arrivals.lock().expect("lock");
            let earlier = arrivals.iter().filter(|(l, _)| *l == label).count();
            arrivals.push((label.clone(), key));
            earlier
        };
        match label.as_str() {
            "slow" => {
                sleep_ms(60).await;
                axum::Json(json!({"slow": true})).into_response()
            }
            "fail" => (StatusCode::INTERNAL_SERVER_ERROR, "boom").into_response(),
            "flaky" if earlier == 0 => StatusCode::SERVICE_UNAVAILABLE.into_response(),
            "big" => axum::Json(json!({"blob": "x".repeat(2_000)})).into_response(),
            "hold" | "hold-nd" => {
                // Held until the test releases it (bounded).
                let mut release = state.release.subscribe();
                let _ = tokio::time::timeout(
                    Duration::from_secs(20),
                    release.wait_for(|released| *released),
                )
                .await;
                axum::Json(json!({"held": true})).into_response()
            }
            _ => axum::Json(json!({"ok": label, "n": earlier + 1})).into_response(),
        }
    }
    Receiver::serve(Router::new().route("/t/{label}", post(answer))).await
}

/// Sleeps `ms` milliseconds.
async fn sleep_ms(ms: u64) {
    tokio::time::sleep(Duration::from_millis(ms)).await;
}

impl Receiver {
    fn arrivals(&self, label: &str) -> Vec<Option<String>> {
        self.state
            .arrivals
            .lock()
            .expect("lock")
            .iter()
            .filter(|(l, _)| l == label)
            .map(|(_, key)| key.clone())
            .collect()
    }

    fn release(&self) {
        self.state.release.send_replace(true);
    }
}

fn tool(receiver: &Receiver, id: &str, label: &str, policy: &str, tier: &str) -> Value {
    json!({
        "toolId": id,
        "description": "A fixture tool.",
        "inputSchema": {"type": "object"},
        "replayPolicy": policy,
        "safetyTier": tier,
        "receiverUrl": receiver.url(&format!("/t/{label}")),
    })
}

fn turn_body(provider: &FakeProvider, model: &str, tools: Value) -> Value {
    json!({
        "principal": "alice",
        "provider": {"wire": "openai-chat", "baseUrl": provider.base, "model": model},
        "tools": tools,
        "input": "Use the tools."
    })
}

// ---------------------------------------------------------------------------
// Requests against a base URL (an embedded host or a spawned binary).

async fn post_json(
    client: &reqwest::Client,
    url: &str,
    token: Option<&str>,
    body: &Value,
) -> (u16, Value) {
    let mut request = client.post(url).json(body);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.expect("answers");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn create_run(client: &reqwest::Client, base: &str, body: &Value) -> String {
    let (status, answer) = post_json(
        client,
        &format!("{base}/conformance/seams/sample/turn/run"),
        Some(OPERATOR),
        body,
    )
    .await;
    assert_eq!(status, 201, "{answer}");
    answer["runId"].as_str().expect("runId").to_owned()
}

async fn fork(client: &reqwest::Client, base: &str, run_id: &str, body: &Value) -> (u16, Value) {
    post_json(
        client,
        &format!("{base}/runs/{run_id}:fork"),
        Some(OPERATOR),
        body,
    )
    .await
}

/// Every event of the run (debug mode) once it is terminal.
async fn finished(client: &reqwest::Client, base: &str, run_id: &str) -> Vec<Value> {
    let events = until(client, base, run_id, |_| false).await;
    // HOOKS-FAIL-7: every event error code is registered or namespaced.
    let odd = common::nonconformant_codes(&events);
    assert!(odd.is_empty(), "unregistered event error codes {odd:?}");
    events
}

/// Long-polls the run's events until `done` holds or the run is terminal
/// (at most 20 polls of at most 5 s).
async fn until(
    client: &reqwest::Client,
    base: &str,
    run_id: &str,
    done: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    let mut events = Vec::new();
    let mut after = -1i64;
    for _ in 0..20 {
        let page: Value = client
            .get(format!(
                "{base}/runs/{run_id}/events/poll?streamMode=debug&timeout=5&afterSequence={after}"
            ))
            .bearer_auth(OPERATOR)
            .send()
            .await
            .expect("poll answers")
            .json()
            .await
            .expect("json");
        events.extend(page["events"].as_array().cloned().unwrap_or_default());
        after = page["lastSequence"].as_i64().unwrap_or(after);
        if done(&events) || page["isTerminal"] == true {
            return events;
        }
    }
    panic!("run {run_id} did not finish: {events:#?}");
}

fn of_type<'e>(events: &'e [Value], kind: &str) -> Vec<&'e Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

fn terminal(events: &[Value]) -> &Value {
    events.last().expect("events")
}

/// Waits (bounded) until `check` holds.
async fn eventually(what: &str, check: impl Fn() -> bool) {
    for _ in 0..200 {
        if check() {
            return;
        }
        sleep_ms(25).await;
    }
    panic!("timed out waiting for {what}");
}

// ---------------------------------------------------------------------------
// The binary on a data dir.

struct Spawned {
    child: Child,
    base: String,
}

fn data_dir() -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("refhost-durable-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).expect("mkdir");
    dir
}

async fn spawn(dir: &Path, mutant: Option<Mutant>) -> Spawned {
    let mut command = Command::new(BIN);
    command
        .args(["--port", "0", "--enable-seams", "--data-dir"])
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    if let Some(mutant) = mutant {
        command.args(["--mutant", mutant.name()]);
    }
    let mut child = command.spawn().expect("spawns");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let line = tokio::time::timeout(WAIT, lines.next_line())
        .await
        .expect("startup line in time")
        .expect("readable")
        .expect("a line");
    let base = line
        .strip_prefix("reference-host listening on ")
        .expect("startup line")
        .to_owned();
    Spawned { child, base }
}

impl Spawned {
    /// SIGKILL: nothing of the host runs after this.
    async fn kill(mut self) {
        self.child.kill().await.expect("killed");
    }
}

// ---------------------------------------------------------------------------
// Recovery (TURN-D3, TURN-D7) through the real binary.

/// What a kill after the tool returned, before the next model round, led to.
struct AfterKill {
    arrivals: usize,
    status: String,
    /// The first request after the restart fed back the tool's result.
    resumed_with_result: bool,
    calls: usize,
}

async fn kill_after_tool_returned(mutant: Option<Mutant>) -> AfterKill {
    let provider = FakeProvider::start().await;
    let receiver = receiver().await;
    let client = client(WAIT);
    let model = provider.script(vec![
        openai_calls(&[("c1", "w", "{}")], "tool_calls"),
        // Round 2 is held by the provider until the host is killed.
        Canned::Delayed(Duration::from_secs(30), Box::new(openai_text("late"))),
        openai_text("done"),
        openai_text("spare"),
    ]);
    let dir = data_dir();
    let host = spawn(&dir, mutant).await;
    let tools = json!([tool(&receiver, "w", "ok", "idempotent", "write")]);
    let run_id = create_run(&client, &host.base, &turn_body(&provider, &model, tools)).await;
    eventually("the second model request", || {
        provider.requests(&model).len() == 2
    })
    .await;
    host.kill().await;

    let host = spawn(&dir, mutant).await;
    let events = finished(&client, &host.base, &run_id).await;
    let requests = provider.requests(&model);
    let resumed_with_result = requests
        .get(2)
        .is_some_and(|r| !fed_back(&r.body).is_empty());
    let observed = AfterKill {
        arrivals: receiver.arrivals("ok").len(),
        status: terminal(&events)["type"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        resumed_with_result,
        calls: of_type(&events, "agent.tool-called").len(),
    };
    host.kill().await;
    let _ = std::fs::remove_dir_all(&dir);
    observed
}

#[tokio::test]
async fn a_kill_after_a_tool_returned_resumes_without_re_executing_it() {
    bounded(TEST_TIMEOUT, async {
        let correct = kill_after_tool_returned(None).await;
        assert_eq!(correct.arrivals, 1, "TURN-D3/D7: no re-execution");
        assert_eq!(correct.status, "run.completed");
        assert!(
            correct.resumed_with_result,
            "round 1 is served, not re-asked"
        );
        assert_eq!(correct.calls, 1, "no event duplicated");

        // recovery-from-scratch re-asks round 1 (no tool result fed back).
        let scratch = kill_after_tool_returned(Some(Mutant::RecoveryFromScratch)).await;
        assert!(!scratch.resumed_with_result);
        // record-after-next-round lost the record: the call is re-run.
        let late = kill_after_tool_returned(Some(Mutant::RecordAfterNextRound)).await;
        assert_eq!(late.arrivals, 2);
    })
    .await;
}

/// A receiver holds the call; the host is killed, the call released, the
/// host restarted.
async fn kill_while_held(
    policy: &str,
    mutant: Option<Mutant>,
) -> (Vec<Option<String>>, Vec<Value>) {
    let provider = FakeProvider::start().await;
    let receiver = receiver().await;
    let client = client(WAIT);
    let model = provider.script(vec![
        openai_calls(&[("c1", "h", "{}")], "tool_calls"),
        openai_text("done"),
    ]);
    let dir = data_dir();
    let host = spawn(&dir, mutant).await;
    let label = if policy == "non-deterministic" {
        "hold-nd"
    } else {
        "hold"
    };
    let tools = json!([tool(&receiver, "h", label, policy, "write")]);
    let run_id = create_run(&client, &host.base, &turn_body(&provider, &model, tools)).await;
    eventually("the held arrival", || receiver.arrivals(label).len() == 1).await;
    host.kill().await;
    receiver.release();
    let host = spawn(&dir, mutant).await;
    let events = finished(&client, &host.base, &run_id).await;
    host.kill().await;
    let _ = std::fs::remove_dir_all(&dir);
    (receiver.arrivals(label), events)
}

#[tokio::test]
async fn the_call_in_doubt_is_re_run_only_when_its_replay_policy_permits() {
    bounded(TEST_TIMEOUT, async {
        // idempotent: a second arrival with the same Idempotency-Key.
        let (arrivals, events) = kill_while_held("idempotent", None).await;
        assert_eq!(arrivals.len(), 2, "TURN-D8: re-run once");
        assert!(arrivals[0].as_ref().is_some_and(|k| k.len() == 64));
        assert_eq!(arrivals[0], arrivals[1], "same Idempotency-Key");
        assert_eq!(terminal(&events)["type"], "run.completed");
        let called = of_type(&events, "agent.tool-called");
        let returned = of_type(&events, "agent.tool-returned");
        assert_eq!((called.len(), returned.len()), (1, 1));
        assert_eq!(returned[0]["causationId"], called[0]["eventId"]);
        assert_eq!(returned[0]["payload"]["status"], "ok");

        // non-deterministic: no second arrival, tool_outcome_unknown.
        let (arrivals, events) = kill_while_held("non-deterministic", None).await;
        assert_eq!(arrivals.len(), 1);
        let returned = of_type(&events, "agent.tool-returned");
        assert_eq!(returned.len(), 1);
        assert_eq!(returned[0]["payload"]["status"], "error");
        assert_eq!(
            returned[0]["payload"]["error"]["code"],
            "tool_outcome_unknown"
        );
        assert!(returned[0]["payload"].get("durationMs").is_none());
        let failed = of_type(&events, "node.failed");
        assert_eq!(failed.len(), 1);
        assert_eq!(failed[0]["payload"]["nodeId"], "agent");
        assert_eq!(
            failed[0]["payload"]["error"]["code"],
            "tool_outcome_unknown"
        );
        assert_eq!(terminal(&events)["type"], "run.failed");
        assert_eq!(
            terminal(&events)["payload"]["error"]["code"],
            "tool_outcome_unknown"
        );

        // recovery-reruns-in-doubt re-runs the non-deterministic call.
        let (arrivals, _) =
            kill_while_held("non-deterministic", Some(Mutant::RecoveryRerunsInDoubt)).await;
        assert_eq!(arrivals.len(), 2);
    })
    .await;
}

#[tokio::test]
async fn a_graceful_stop_on_a_data_dir_leaves_the_run_recoverable() {
    bounded(TEST_TIMEOUT, async {
        let provider = FakeProvider::start().await;
        let client = client(WAIT);
        let model = provider.script(vec![
            Canned::Delayed(Duration::from_secs(30), Box::new(openai_text("late"))),
            openai_text("done"),
        ]);
        let dir = data_dir();
        let host = spawn(&dir, None).await;
        let run_id = create_run(
            &client,
            &host.base,
            &turn_body(&provider, &model, json!([])),
        )
        .await;
        eventually("the first model request", || {
            provider.requests(&model).len() == 1
        })
        .await;
        let pid = host.child.id().expect("pid").to_string();
        let status = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill runs");
        assert!(status.success());
        let mut child = host.child;
        let exited = tokio::time::timeout(WAIT, child.wait())
            .await
            .expect("exits in time")
            .expect("waitable");
        assert!(exited.success());

        let host = spawn(&dir, None).await;
        let events = finished(&client, &host.base, &run_id).await;
        assert!(
            of_type(&events, "run.failed").is_empty(),
            "no host_shutdown"
        );
        assert_eq!(terminal(&events)["type"], "run.completed");
        assert_eq!(terminal(&events)["payload"]["result"], "done");
        assert_eq!(
            of_type(&events, "prompt.composed").len(),
            1,
            "not written twice"
        );
        host.kill().await;
        let _ = std::fs::remove_dir_all(&dir);
    })
    .await;
}

// ---------------------------------------------------------------------------
// Start-up errors.

#[tokio::test]
async fn a_bad_data_dir_is_a_startup_error_naming_the_path() {
    bounded(TEST_TIMEOUT, async {
        // Missing directory.
        let missing =
            std::env::temp_dir().join(format!("refhost-missing-{}", uuid::Uuid::new_v4().simple()));
        let err = start(HostConfig {
            data_dir: Some(missing.clone()),
            ..HostConfig::default()
        })
        .await
        .expect_err("refused");
        assert!(matches!(err, HostError::Store(_)));
        assert!(
            err.to_string().contains(&missing.display().to_string()),
            "{err}"
        );
        assert!(!missing.exists(), "nothing created");

        // A file that is not SQLite.
        let dir = data_dir();
        let file = dir.join("reference-host.sqlite3");
        let junk = "this is not a database, it is a text file. ".repeat(40);
        std::fs::write(&file, &junk).expect("write");
        let err = start(HostConfig {
            data_dir: Some(dir.clone()),
            ..HostConfig::default()
        })
        .await
        .expect_err("refused");
        assert!(
            err.to_string().contains(&file.display().to_string()),
            "{err}"
        );
        assert!(err.to_string().contains("not a SQLite database"), "{err}");
        assert_eq!(
            std::fs::read_to_string(&file).expect("read"),
            junk,
            "never overwritten"
        );

        // The binary: non-zero exit, stderr names the file / the dir.
        for (path, named) in [(&dir, &file), (&missing, &missing)] {
            let run = Command::new(BIN)
                .args(["--port", "0", "--data-dir"])
                .arg(path)
                .stdin(Stdio::null())
                .output();
            let out = tokio::time::timeout(WAIT, run)
                .await
                .expect("exits")
                .expect("runs");
            assert!(!out.status.success());
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(stderr.contains(&named.display().to_string()), "{stderr}");
        }
        let _ = std::fs::remove_dir_all(&dir);

        // A SQLite database of another schema version.
        let dir = data_dir();
        let file = dir.join("reference-host.sqlite3");
        {
            let conn = rusqlite::Connection::open(&file).expect("open");
            conn.execute_batch("CREATE TABLE other (x); PRAGMA user_version = 7;")
                .expect("foreign");
        }
        let err = start(HostConfig {
            data_dir: Some(dir.clone()),
            ..HostConfig::default()
        })
        .await
        .expect_err("refused");
        assert!(
            err.to_string().contains(&file.display().to_string()),
            "{err}"
        );
        assert!(err.to_string().contains("schema version 7"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);

        // A fresh empty dir creates the store, and it opens again.
        let dir = data_dir();
        let host = start(HostConfig {
            data_dir: Some(dir.clone()),
            ..HostConfig::default()
        })
        .await
        .expect("fresh dir");
        host.shutdown().await;
        assert!(dir.join("reference-host.sqlite3").exists());
        let host = start(HostConfig {
            data_dir: Some(dir.clone()),
            ..HostConfig::default()
        })
        .await
        .expect("reopens");
        host.shutdown().await;
        let _ = std::fs::remove_dir_all(&dir);
    })
    .await;
}

// ---------------------------------------------------------------------------
// Embedded hosts: replay forks, attempts, record failures.

async fn host(mutant: Option<Mutant>) -> reference_host::RunningHost {
    seam_host(
        mutant,
        HostConfig {
            record_limit_bytes: 1_000,
            ..HostConfig::default()
        },
    )
    .await
}

/// A source run with a slow success and a failing call, then a replay fork.
struct Replayed {
    source: Vec<Value>,
    fork: Vec<Value>,
    fork_answer: Value,
    arrivals_before: usize,
    arrivals_after: usize,
    source_fed_back: Vec<(String, Value)>,
    fork_fed_back: Vec<(String, Value)>,
}

async fn replay(mutant: Option<Mutant>) -> Replayed {
    let host = host(mutant).await;
    let provider = FakeProvider::start().await;
    let receiver = receiver().await;
    let client = client(WAIT);
    let calls = || openai_calls(&[("c1", "s", "{}"), ("c2", "f", "{}")], "tool_calls");
    let model = provider.script(vec![
        calls(),
        openai_text("done"),
        calls(),
        openai_text("done"),
    ]);
    let tools = json!([
        tool(&receiver, "s", "slow", "idempotent", "write"),
        tool(&receiver, "f", "fail", "idempotent", "write"),
    ]);
    let run_id = create_run(
        &client,
        &host.base_url,
        &turn_body(&provider, &model, tools),
    )
    .await;
    let source = finished(&client, &host.base_url, &run_id).await;
    let before = receiver.arrivals("slow").len() + receiver.arrivals("fail").len();
    let (status, fork_answer) =
        fork(&client, &host.base_url, &run_id, &json!({"mode": "replay"})).await;
    assert_eq!(status, 201, "{fork_answer}");
    let fork_id = fork_answer["runId"].as_str().expect("runId").to_owned();
    let fork_events = finished(&client, &host.base_url, &fork_id).await;
    let after = receiver.arrivals("slow").len() + receiver.arrivals("fail").len();
    let requests = provider.requests(&model);
    let replayed = Replayed {
        source,
        fork: fork_events,
        fork_answer,
        arrivals_before: before,
        arrivals_after: after,
        source_fed_back: requests
            .get(1)
            .map(|r| fed_back(&r.body))
            .unwrap_or_default(),
        fork_fed_back: requests
            .get(3)
            .map(|r| fed_back(&r.body))
            .unwrap_or_default(),
    };
    host.shutdown().await;
    replayed
}

fn returns(events: &[Value]) -> Vec<Value> {
    of_type(events, "agent.tool-returned")
        .into_iter()
        .map(|e| {
            let p = &e["payload"];
            json!({"status": p["status"], "durationMs": p["durationMs"], "error": p["error"]})
        })
        .collect()
}

#[tokio::test]
async fn a_replay_fork_serves_the_recorded_results_and_never_dispatches() {
    bounded(TEST_TIMEOUT, async {
        let r = replay(None).await;
        assert_eq!(r.arrivals_before, 2);
        assert_eq!(r.arrivals_after, 2, "TURN-D5: receiver unchanged");
        let answer = &r.fork_answer;
        let source_id = r.source[0]["runId"].as_str().expect("runId");
        assert_eq!(answer["sourceRunId"], source_id);
        assert_eq!(answer["mode"], "replay");
        assert_eq!(answer["status"], "running");
        assert_eq!(answer["fromSeq"], terminal(&r.source)["sequence"]);
        assert_eq!(
            answer["eventsUrl"],
            format!("/runs/{}/events", answer["runId"].as_str().expect("id"))
        );
        assert_eq!(terminal(&r.fork)["type"], "run.completed");
        // Byte-equal durationMs, status and error (HOOKS-AUDIT-4, FAIL-6).
        let source = returns(&r.source);
        assert_eq!(source.len(), 2);
        assert!(source[0]["durationMs"].as_u64().is_some_and(|ms| ms >= 50));
        assert_eq!(
            source[1]["error"]["message"],
            "tool receiver answered HTTP 500"
        );
        assert_eq!(returns(&r.fork), source);
        // The fork's next model request carries the same tool results.
        assert_eq!(r.source_fed_back.len(), 2);
        assert_eq!(r.fork_fed_back, r.source_fed_back);
        // The fork's own node started.
        assert_eq!(of_type(&r.fork, "node.started")[0]["payload"]["attempt"], 1);

        let executed = replay(Some(Mutant::ReplayExecutesTool)).await;
        assert!(executed.arrivals_after > executed.arrivals_before);
        let timed = replay(Some(Mutant::ReplayDurationRecomputed)).await;
        assert_ne!(returns(&timed.fork), returns(&timed.source));
        let reworded = replay(Some(Mutant::ReplayErrorReworded)).await;
        assert_ne!(returns(&reworded.fork), returns(&reworded.source));
    })
    .await;
}

/// A source cancelled while its call is held, then forked.
async fn miss_after_cancel(mutant: Option<Mutant>) -> (Value, Vec<Value>, usize) {
    let host = host(mutant).await;
    let provider = FakeProvider::start().await;
    let receiver = receiver().await;
    let client = client(WAIT);
    let model = provider.script(vec![
        openai_calls(&[("c1", "h", "{}")], "tool_calls"),
        openai_calls(&[("c1", "h", "{}")], "tool_calls"),
        openai_text("done"),
    ]);
    let tools = json!([tool(&receiver, "h", "hold", "idempotent", "write")]);
    let run_id = create_run(
        &client,
        &host.base_url,
        &turn_body(&provider, &model, tools),
    )
    .await;
    eventually("the held arrival", || receiver.arrivals("hold").len() == 1).await;
    let (status, cancelled) = post_json(
        &client,
        &format!("{}/runs/{run_id}:cancel", host.base_url),
        Some(OPERATOR),
        &json!({}),
    )
    .await;
    assert_eq!(status, 200, "{cancelled}");
    assert_eq!(cancelled, json!({"runId": run_id, "status": "cancelled"}));
    let source = finished(&client, &host.base_url, &run_id).await;
    assert_eq!(terminal(&source)["type"], "run.cancelled");
    assert_eq!(
        terminal(&source)["payload"]["reason"],
        "cancelled by toolcert-operator"
    );
    assert!(
        of_type(&source, "agent.tool-returned").is_empty(),
        "abandoned"
    );
    // Cancelling again: 409 with the vendor code (not an idempotency code).
    let (status, again) = post_json(
        &client,
        &format!("{}/runs/{run_id}:cancel", host.base_url),
        Some(OPERATOR),
        &json!({}),
    )
    .await;
    assert_eq!(status, 409, "{again}");
    assert_eq!(again["error"], "refhost.run_already_terminal", "{again}");
    assert!(
        again["message"]
            .as_str()
            .is_some_and(|m| m.contains("already cancelled"))
    );

    let (status, answer) = fork(&client, &host.base_url, &run_id, &json!({"mode": "replay"})).await;
    assert_eq!(status, 201, "C-13: the fork itself is accepted");
    let fork_id = answer["runId"].as_str().expect("runId");
    let events = finished(&client, &host.base_url, fork_id).await;
    let arrivals = receiver.arrivals("hold").len();
    receiver.release();
    host.shutdown().await;
    (answer, events, arrivals)
}

#[tokio::test]
async fn a_replay_miss_fails_the_node_with_replay_source_missing() {
    bounded(TEST_TIMEOUT, async {
        let (_, events, arrivals) = miss_after_cancel(None).await;
        assert_eq!(arrivals, 1, "nothing dispatched by the fork");
        let returned = of_type(&events, "agent.tool-returned");
        assert_eq!(returned.len(), 1);
        assert_eq!(returned[0]["payload"]["status"], "error");
        assert_eq!(
            returned[0]["payload"]["error"]["code"],
            "replay_source_missing"
        );
        assert!(returned[0]["payload"].get("durationMs").is_none());
        let failed = of_type(&events, "node.failed");
        assert_eq!(
            failed[0]["payload"]["error"]["code"],
            "replay_source_missing"
        );
        assert_eq!(terminal(&events)["type"], "run.failed");
        assert_eq!(
            terminal(&events)["payload"]["error"]["code"],
            "replay_source_missing"
        );

        let (_, events, _) = miss_after_cancel(Some(Mutant::ReplayMissEmptySuccess)).await;
        assert_eq!(terminal(&events)["type"], "run.completed");
    })
    .await;
}

/// A source whose one result is over the record limit, then a fork.
async fn oversized(mutant: Option<Mutant>) -> Vec<Value> {
    let host = host(mutant).await;
    let provider = FakeProvider::start().await;
    let receiver = receiver().await;
    let client = client(WAIT);
    let calls = || openai_calls(&[("c1", "b", "{}")], "tool_calls");
    let model = provider.script(vec![
        calls(),
        openai_text("done"),
        calls(),
        openai_text("done"),
    ]);
    let tools = json!([tool(&receiver, "b", "big", "idempotent", "read")]);
    let run_id = create_run(
        &client,
        &host.base_url,
        &turn_body(&provider, &model, tools),
    )
    .await;
    let source = finished(&client, &host.base_url, &run_id).await;
    assert_eq!(
        terminal(&source)["type"],
        "run.completed",
        "the live loop is unaffected"
    );
    // The live loop fed the full result back.
    let full = fed_back(&provider.requests(&model)[1].body);
    assert!(full[0].1.to_string().contains(&"x".repeat(2_000)));
    let (status, answer) = fork(&client, &host.base_url, &run_id, &json!({"mode": "replay"})).await;
    assert_eq!(status, 201);
    let events = finished(
        &client,
        &host.base_url,
        answer["runId"].as_str().expect("id"),
    )
    .await;
    host.shutdown().await;
    events
}

#[tokio::test]
async fn an_oversized_record_is_a_digest_and_a_replay_miss() {
    bounded(TEST_TIMEOUT, async {
        let events = oversized(None).await;
        assert_eq!(
            terminal(&events)["payload"]["error"]["code"],
            "replay_source_missing"
        );
        let events = oversized(Some(Mutant::OversizedServedOnReplay)).await;
        assert_eq!(terminal(&events)["type"], "run.completed");
    })
    .await;
}

async fn flaky(mutant: Option<Mutant>) -> (Vec<Option<String>>, Vec<Value>) {
    let host = host(mutant).await;
    let provider = FakeProvider::start().await;
    let receiver = receiver().await;
    let client = client(WAIT);
    let call = || openai_calls(&[("c1", "f", "{}")], "tool_calls");
    let model = provider.script(vec![
        call(),
        call(),
        openai_text("done"),
        openai_text("spare"),
    ]);
    let mut body = turn_body(
        &provider,
        &model,
        json!([tool(&receiver, "f", "flaky", "idempotent", "write")]),
    );
    body["limits"] = json!({"nodeAttempts": 2});
    let run_id = create_run(&client, &host.base_url, &body).await;
    let events = finished(&client, &host.base_url, &run_id).await;
    host.shutdown().await;
    (receiver.arrivals("flaky"), events)
}

#[tokio::test]
async fn a_transient_failure_starts_a_new_attempt_that_executes_again() {
    bounded(TEST_TIMEOUT, async {
        let (arrivals, events) = flaky(None).await;
        assert_eq!(arrivals.len(), 2, "TURN-D9: a second arrival");
        assert_eq!(
            arrivals[0], arrivals[1],
            "one tool identity across attempts"
        );
        let started: Vec<&Value> = of_type(&events, "node.started")
            .into_iter()
            .map(|e| &e["payload"]["attempt"])
            .collect();
        assert_eq!(started, [&json!(1), &json!(2)]);
        let retrying = of_type(&events, "node.retrying");
        assert_eq!(retrying.len(), 1);
        assert_eq!(retrying[0]["payload"]["nodeId"], "agent");
        assert_eq!(retrying[0]["payload"]["attempt"], 1);
        assert!(
            retrying[0]["payload"]["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("503"))
        );
        assert_eq!(terminal(&events)["type"], "run.completed");

        let (arrivals, _) = flaky(Some(Mutant::RetryServedRecords)).await;
        assert_eq!(
            arrivals.len(),
            1,
            "the retry was handed the recorded failure"
        );
    })
    .await;
}

async fn record_failure(tier: &str, mutant: Option<Mutant>) -> Vec<Value> {
    let host = host(mutant).await;
    let provider = FakeProvider::start().await;
    let receiver = receiver().await;
    let client = client(WAIT);
    let model = provider.script(vec![
        openai_calls(&[("c1", "t", "{}")], "tool_calls"),
        openai_text("done"),
    ]);
    let mut body = turn_body(
        &provider,
        &model,
        json!([tool(&receiver, "t", "ok", "idempotent", tier)]),
    );
    body["faults"] = json!({"recordFailureAtOrdinal": 1});
    let run_id = create_run(&client, &host.base_url, &body).await;
    let events = finished(&client, &host.base_url, &run_id).await;
    host.shutdown().await;
    events
}

#[tokio::test]
async fn a_record_failure_fails_the_node_unless_the_tool_is_read_only() {
    bounded(TEST_TIMEOUT, async {
        let events = record_failure("write", None).await;
        assert_eq!(
            of_type(&events, "node.failed")[0]["payload"]["error"]["code"],
            "refhost.record_failed"
        );
        assert_eq!(
            terminal(&events)["payload"]["error"]["code"],
            "refhost.record_failed"
        );
        let events = record_failure("read", None).await;
        assert_eq!(terminal(&events)["type"], "run.completed");
        let events = record_failure("write", Some(Mutant::RecordFailureIgnored)).await;
        assert_eq!(terminal(&events)["type"], "run.completed");
    })
    .await;
}

// ---------------------------------------------------------------------------
// The fork request, discovery and the manifest.

#[tokio::test]
async fn fork_requests_are_checked() {
    bounded(TEST_TIMEOUT, async {
        let host = host(None).await;
        let provider = FakeProvider::start().await;
        let client = client(WAIT);
        let base = host.base_url.clone();
        let model = provider.script(vec![openai_text("done")]);
        let run_id = create_run(&client, &base, &turn_body(&provider, &model, json!([]))).await;
        let source = finished(&client, &base, &run_id).await;
        let last = terminal(&source)["sequence"].as_i64().expect("seq");

        let cases = [
            (json!({}), 400, "validation_error"),
            (json!({"mode": "rewind"}), 400, "validation_error"),
            (json!({"mode": "replay", "x": 1}), 400, "validation_error"),
            // runs.md §Fork: a fromSeq not in the source log.
            (
                json!({"mode": "replay", "fromSeq": last + 1}),
                422,
                "fork_point_invalid",
            ),
            (
                json!({"mode": "replay", "fromSeq": -1}),
                400,
                "validation_error",
            ),
            (
                json!({"mode": "replay", "runOptionsOverlay": {"a": 1}}),
                400,
                "validation_error",
            ),
            (
                json!({"mode": "branch", "fromSeq": 0}),
                422,
                "capability_not_provided",
            ),
        ];
        for (body, status, code) in cases {
            let (got, answer) = fork(&client, &base, &run_id, &body).await;
            assert_eq!(
                (got, answer["error"].as_str()),
                (status, Some(code)),
                "{body}: {answer}"
            );
            assert!(answer["message"].as_str().is_some_and(|m| !m.is_empty()));
            if body["mode"] == "branch" {
                // EFF-10: branches are served for effect-seam fire runs only.
                assert_eq!(
                    answer["message"],
                    reference_host::surface::seams::effect_fire::BRANCH_SOURCE_UNSUPPORTED
                );
            }
        }
        let (status, ok) = fork(
            &client,
            &base,
            &run_id,
            &json!({"mode": "replay", "fromSeq": 0, "runOptionsOverlay": {}}),
        )
        .await;
        assert_eq!(status, 201, "{ok}");
        assert_eq!(ok["fromSeq"], 0);

        // Unknown, and another tenant's: the same 404.
        let (status, answer) = fork(&client, &base, "run_nope", &json!({"mode": "replay"})).await;
        assert_eq!((status, answer["error"].as_str()), (404, Some("not_found")));
        let (status, _) = post_json(
            &client,
            &format!("{base}/runs/{run_id}:fork"),
            Some(ERIN),
            &json!({"mode": "replay"}),
        )
        .await;
        assert_eq!(status, 404);
        // An instant fixture run forks (its prefix copied, the rest re-run);
        // another workflow's run is no turn run and cannot be replayed here.
        let start = async |body: Value| {
            let (status, workflow) =
                post_json(&client, &format!("{base}/runs"), Some(ALICE), &body).await;
            assert_eq!(status, 201, "{workflow}");
            workflow["runId"].as_str().expect("runId").to_owned()
        };
        let noop = start(json!({"workflowId": "conformance-noop"})).await;
        let (status, answer) = post_json(
            &client,
            &format!("{base}/runs/{noop}:fork"),
            Some(ALICE),
            &json!({"mode": "replay", "fromSeq": 1}),
        )
        .await;
        assert_eq!(status, 201, "{answer}");
        assert_eq!(
            (&answer["sourceRunId"], &answer["fromSeq"], &answer["status"]),
            (&json!(noop), &json!(1), &json!("completed"))
        );
        let flaky = start(json!({"workflowId": "conformance-flaky",
                                 "inputs": {"nonce": format!("flaky-{}", uuid::Uuid::new_v4().simple()),
                                            "failTimes": 0}}))
        .await;
        let (status, answer) = post_json(
            &client,
            &format!("{base}/runs/{flaky}:fork"),
            Some(ALICE),
            &json!({"mode": "replay"}),
        )
        .await;
        assert_eq!(
            (status, answer["error"].as_str()),
            (422, Some("capability_not_provided")),
            "{answer}"
        );
        // Unknown action, and no token.
        let (status, answer) = post_json(
            &client,
            &format!("{base}/runs/{run_id}:rewind"),
            Some(OPERATOR),
            &json!({}),
        )
        .await;
        assert_eq!((status, answer["error"].as_str()), (404, Some("not_found")));
        let (status, _) = post_json(
            &client,
            &format!("{base}/runs/{run_id}:fork"),
            None,
            &json!({"mode": "replay"}),
        )
        .await;
        assert_eq!(status, 401);

        // Discovery and the manifest (RPL-1, TURN-D11).
        let doc = common::discovery(&client, &base).await;
        assert_eq!(doc["toolHooks"]["turnReplay"], true);
        assert_eq!(doc["replay"]["modes"], json!(["replay", "branch"]));
        assert_eq!(doc["replay"]["retention"], json!({"days": 14}));
        assert_eq!(doc["replay"]["effectSeamsManifest"], "/host/effect-seams");
        let (status, manifest) =
            common::get_json(&client, &format!("{base}/host/effect-seams"), ALICE).await;
        assert_eq!(status, 200);
        assert_eq!(manifest["manifestVersion"], "1");
        assert_eq!(manifest["host"]["name"], "toolcert-reference-host");
        assert_eq!(manifest["seams"][0]["seam"], "tool-receiver");
        assert_eq!(manifest["seams"][0]["guarded"], true);
        let anonymous = client
            .get(format!("{base}/host/effect-seams"))
            .send()
            .await
            .expect("answers");
        assert_eq!(anonymous.status(), 401);
        host.shutdown().await;
    })
    .await;
}
