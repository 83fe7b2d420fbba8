//! A bounded crash test of a durable host: kill/restart cycles at seeded random points of
//! running tool loops (TTC §D). Used by `cargo bench --bench crash` (50 cycles) and a smaller
//! `cargo test` (`tests/crash_restart.rs`), which include this file; it is no part of the
//! library.
//!
//! Each cycle starts a turn run (four model rounds: an idempotent call, a non-deterministic
//! call, an idempotent call, the answer), kills the host with SIGKILL after a random delay,
//! restarts it on the same data directory and waits for every run to settle. Witnessed at
//! toolcert's own doubles and the host's log, never from the host's word:
//!
//! * no event seen before a kill is missing or changed afterwards (no lost record);
//! * the non-deterministic tool never sees one `Idempotency-Key` twice (no effect fired twice);
//! * every run ends `completed`, or `failed` with a code the TTC defines for a crash.
//!
//! The model double here answers by the conversation's round number, not by arrival order, so
//! a round re-asked after a crash gets the same answer it would have got the first time.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use loopback_http::{Request, Response, Router, Server, StatusCode, response};
use serde_json::{Value, json};

use toolcert::host::{SpawnCommand, SpawnedHost};
use toolcert::witness::Receiver;

/// Failure codes a crash may legitimately end a run with (TTC §D).
pub const CRASH_CODES: &[&str] = &["tool_outcome_unknown", "replay_source_missing"];

/// Longest a run may take to settle after a restart.
const SETTLE_BUDGET: Duration = Duration::from_secs(20);

/// The operator token of the reference host's built-in principals.
const OPERATOR: &str = "refhost-operator-token";

/// What the cycles saw.
#[derive(Debug, Clone, Default)]
pub struct CrashOutcome {
    /// Kill/restart cycles made.
    pub cycles: usize,
    /// Runs that completed.
    pub completed: usize,
    /// Runs that failed, by code.
    pub failed: BTreeMap<String, usize>,
    /// Runs still not terminal after the settle budget, or failed with another code.
    pub bad_endings: Vec<String>,
    /// Events seen before a kill and missing or changed afterwards.
    pub lost_events: usize,
    /// Events recorded in all, at the end.
    pub events: usize,
    /// Non-deterministic calls that arrived twice with one key.
    pub double_fired: usize,
    /// Calls the non-deterministic tool saw.
    pub nondeterministic_calls: usize,
    /// Calls the idempotent tool saw (re-runs of a call in doubt included).
    pub idempotent_calls: usize,
    /// Wall time.
    pub elapsed: Duration,
}

impl CrashOutcome {
    /// Nothing lost, nothing fired twice, every run ended as the TTC allows.
    pub fn clean(&self) -> bool {
        self.bad_endings.is_empty() && self.lost_events == 0 && self.double_fired == 0
    }
}

/// Why the crash test could not be run at all.
#[derive(Debug, thiserror::Error)]
pub enum CrashError {
    /// A double could not bind 127.0.0.1.
    #[error("a double could not bind 127.0.0.1: {0}")]
    Bind(#[from] std::io::Error),
    /// The host process could not be started or restarted.
    #[error("{0}")]
    Spawn(#[from] toolcert::host::SpawnError),
    /// The host answered something unusable.
    #[error("the host: {0}")]
    Host(String),
}

/// Run `cycles` kill/restart cycles against `command` (a durable host: `{port}`, `{data_dir}`).
pub async fn crash_cycles(
    command: &SpawnCommand,
    cycles: usize,
    seed: u64,
) -> Result<CrashOutcome, CrashError> {
    let started = Instant::now();
    let receiver = Receiver::start().await?;
    let idem = receiver.register(
        "crash-idem",
        200,
        json!({"ok": true}),
        Duration::from_millis(15),
        None,
    );
    let nondet = receiver.register(
        "crash-nondet",
        200,
        json!({"charged": true}),
        Duration::from_millis(15),
        None,
    );
    let model = RoundModel::start().await?;
    let mut host = SpawnedHost::start(command, "crash", toolcert::host::STARTUP_BUDGET).await?;
    let http = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| CrashError::Host(e.to_string()))?;
    let mut rng = seed ^ 0x9e37_79b9_7f4a_7c15;
    // Each run's log and status as last read. Earlier runs were settled after the previous
    // restart, so only the new run needs reading before a kill.
    let mut seen: BTreeMap<String, (Vec<Value>, String)> = BTreeMap::new();
    let mut outcome = CrashOutcome::default();
    for cycle in 0..cycles {
        let run_id = start_run(&http, host.base_url(), &model.url, &idem, &nondet, cycle).await?;
        // A random point within the loop's lifetime (~4 model rounds and 3 tool calls).
        let delay = Duration::from_millis(next(&mut rng) % 120);
        tokio::time::sleep(delay).await;
        let before_kill = poll(&http, host.base_url(), &run_id).await?;
        seen.insert(run_id, before_kill);
        host.kill().await;
        host.restart().await?;
        outcome.cycles += 1;
        // Every run so far must still hold what was seen before this kill (and every earlier one).
        for (id, last) in seen.iter_mut() {
            let after = settle(&http, host.base_url(), id).await?;
            outcome.lost_events += last.0.iter().filter(|e| !after.0.contains(e)).count();
            *last = after;
        }
    }
    for (id, (events, status)) in &seen {
        outcome.events += events.len();
        match status.as_str() {
            "completed" => outcome.completed += 1,
            "failed" => {
                let code = events
                    .iter()
                    .rev()
                    .find(|e| e["type"] == "run.failed")
                    .and_then(|e| e.pointer("/payload/error/code"))
                    .and_then(Value::as_str)
                    .unwrap_or("(none)")
                    .to_string();
                if !CRASH_CODES.contains(&code.as_str()) {
                    outcome
                        .bad_endings
                        .push(format!("{id}: failed with {code}"));
                }
                *outcome.failed.entry(code).or_default() += 1;
            }
            other => outcome.bad_endings.push(format!("{id}: still {other}")),
        }
    }
    let arrivals = receiver.arrivals("crash-nondet");
    outcome.nondeterministic_calls = arrivals.len();
    outcome.idempotent_calls = receiver.arrivals("crash-idem").len();
    let mut per_key: BTreeMap<String, usize> = BTreeMap::new();
    for a in &arrivals {
        let key = a
            .headers
            .get("idempotency-key")
            .and_then(Value::as_str)
            .unwrap_or("(no key)")
            .to_string();
        *per_key.entry(key).or_default() += 1;
    }
    outcome.double_fired = per_key.values().filter(|n| **n > 1).map(|n| n - 1).sum();
    host.kill().await;
    outcome.elapsed = started.elapsed();
    Ok(outcome)
}

fn next(state: &mut u64) -> u64 {
    // xorshift64*: reproducible from the seed, no dependency.
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    state.wrapping_mul(0x2545_f491_4f6c_dd1d)
}

async fn start_run(
    http: &reqwest::Client,
    base: &str,
    provider: &str,
    idem: &str,
    nondet: &str,
    cycle: usize,
) -> Result<String, CrashError> {
    let tool = |id: &str, policy: &str, url: &str| {
        json!({"toolId": id, "description": "crash-test tool", "inputSchema": {"type": "object"},
               "replayPolicy": policy, "safetyTier": "write", "approval": "never", "receiverUrl": url})
    };
    let body = json!({
        "principal": "alice",
        "provider": {"wire": "openai-chat", "baseUrl": provider, "model": format!("crash-{cycle}"), "stream": false},
        "tools": [tool("note", "idempotent", idem), tool("charge", "non-deterministic", nondet)],
        "input": "crash test",
        "limits": {"repeatedCall": "allow"},
    });
    let resp = http
        .post(format!("{base}/conformance/seams/sample/turn/run"))
        .bearer_auth(OPERATOR)
        .json(&body)
        .send()
        .await
        .map_err(|e| CrashError::Host(format!("turn/run: {e}")))?;
    let status = resp.status();
    let v: Value = resp
        .json()
        .await
        .map_err(|e| CrashError::Host(format!("turn/run answer: {e}")))?;
    v["runId"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| CrashError::Host(format!("turn/run answered {status}: {v}")))
}

/// Every event of a run and its status.
async fn poll(
    http: &reqwest::Client,
    base: &str,
    run_id: &str,
) -> Result<(Vec<Value>, String), CrashError> {
    let resp = http
        .get(format!(
            "{base}/runs/{run_id}/events/poll?afterSequence=-1&streamMode=debug"
        ))
        .bearer_auth(OPERATOR)
        .send()
        .await
        .map_err(|e| CrashError::Host(format!("poll {run_id}: {e}")))?;
    let v: Value = resp
        .json()
        .await
        .map_err(|e| CrashError::Host(format!("poll {run_id}: {e}")))?;
    let events = v["events"].as_array().cloned().unwrap_or_default();
    let status = v["status"].as_str().unwrap_or("").to_string();
    Ok((events, status))
}

/// Polls until the run is terminal (bounded); returns what it saw last.
async fn settle(
    http: &reqwest::Client,
    base: &str,
    run_id: &str,
) -> Result<(Vec<Value>, String), CrashError> {
    let deadline = Instant::now() + SETTLE_BUDGET;
    loop {
        let (events, status) = poll(http, base, run_id).await?;
        let terminal = matches!(status.as_str(), "completed" | "failed" | "cancelled");
        if terminal || Instant::now() >= deadline {
            return Ok((events, status));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A model double answering OpenAI Chat requests by round number (assistant messages so far).
struct RoundModel {
    url: String,
    /// Serves until the model is dropped.
    _server: Server,
}

impl RoundModel {
    async fn start() -> std::io::Result<RoundModel> {
        let router = Router::new(()).post("/v1/chat/completions", answer);
        let server = Server::bind(([127, 0, 0, 1], 0).into(), router).await?;
        let url = format!("http://{}", server.local_addr());
        Ok(RoundModel {
            url,
            _server: server,
        })
    }
}

async fn answer((): (), request: Request) -> Response {
    let body = match request.body.read_or_reject().await {
        Ok(body) => body,
        Err(rejected) => return rejected,
    };
    let Ok(request) = serde_json::from_slice::<Value>(&body) else {
        return response::text(StatusCode::BAD_REQUEST, "the body is not JSON");
    };
    let round = request["messages"]
        .as_array()
        .map_or(0, |m| m.iter().filter(|m| m["role"] == "assistant").count());
    // A short think time so kills also land while the host waits for the model.
    tokio::time::sleep(Duration::from_millis(10)).await;
    let call = |name: &str| {
        json!({"role": "assistant", "content": null, "tool_calls": [{
            "id": format!("call_{round}"), "type": "function",
            "function": {"name": name, "arguments": format!("{{\"round\":{round}}}")}}]})
    };
    let (message, finish) = match round {
        0 | 2 => (call("note"), "tool_calls"),
        1 => (call("charge"), "tool_calls"),
        _ => (json!({"role": "assistant", "content": "done"}), "stop"),
    };
    response::json(
        StatusCode::OK,
        &json!({
            "id": format!("chatcmpl-crash-{round}"),
            "object": "chat.completion",
            "created": 0,
            "model": request["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }),
    )
}
