//! `events`: read a run's events from the host's durable log, in debug stream mode.
//!
//! First over SSE (`GET /runs/{runId}/events?streamMode=debug`), resuming with
//! `Last-Event-ID` when a stream ends or goes quiet before the run has settled (toolcert
//! reconnects itself, so the host's resumption is what gets exercised; a run waiting for
//! approval keeps its stream open, so a quiet stream is a cue to look at the run); when the host
//! serves no stream, by polling `…/events/poll?afterSequence=N&timeout=1` (C-20: never
//! concluding "no events" from one poll). Events are de-duplicated by `sequence`. Bounded
//! throughout by the request budget.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};

use super::{Flow, ScenarioCtx, blocked, require_role, transport_failure};
use crate::host::{HostRequest, WireMajor};
use crate::suite::EventsRead;
use crate::transcript::Exchange;

const MAX_POLLS: usize = 40;

/// The concept behind a wire event name, for both majors (v2 names per the event codemap).
fn concept_of(wire_name: &str) -> Option<&'static str> {
    Some(match wire_name {
        "agent.toolCalled" | "agent.tool-called" => "toolCalled",
        "agent.toolReturned" | "agent.tool-returned" => "toolReturned",
        "authorization.decided" => "authorizationDecided",
        "tool.session.opened" | "tool.session-opened" => "toolSessionOpened",
        "tool.session.closed" | "tool.session-closed" => "toolSessionClosed",
        "run.started" => "runStarted",
        "run.completed" => "runCompleted",
        "run.failed" => "runFailed",
        "prompt.composed" => "promptComposed",
        "interrupt.requested" => "interruptRequested",
        "interrupt.resolved" => "interruptResolved",
        "run.cancelled" => "runCancelled",
        "node.started" => "nodeStarted",
        "node.retrying" => "nodeRetrying",
        "node.failed" => "nodeFailed",
        "node.completed" => "nodeCompleted",
        "voice.transcript" => "voiceTranscript",
        "replay.diverged" => "replayDiverged",
        "replay.divergedAtRefusal" | "replay.diverged-at-refusal" => "replayDivergedAtRefusal",
        _ => return None,
    })
}

/// Whether a run status means the run will not append more events without outside help.
pub(super) fn settled(status: &Value) -> bool {
    !matches!(
        status.as_str(),
        None | Some("running" | "pending" | "queued" | "created")
    )
}

struct Collected {
    by_sequence: BTreeMap<i64, Value>,
    status: Value,
    via: &'static str,
    reconnects: usize,
}

pub(super) async fn run(ctx: &mut ScenarioCtx<'_>, read: &EventsRead) -> (Value, Flow) {
    if let Some(obs) = require_role(ctx, &read.role) {
        return (obs, Flow::Continue);
    }
    let run_id = match crate::template::render_str(&read.run, &ctx.doc) {
        Ok(Value::String(s)) if !s.is_empty() => s,
        Ok(other) => {
            return (
                blocked(format!("no run id to read events for (got {other})")),
                Flow::Continue,
            );
        }
        Err(e) => return (ctx.template_failure(&e), Flow::Continue),
    };
    let collected = match via_sse(ctx, read, &run_id).await {
        Ok(Some(c)) => c,
        Ok(None) => match via_poll(ctx, read, &run_id).await {
            Ok(c) => c,
            Err(obs) => return obs,
        },
        Err(obs) => return obs,
    };
    (observation(&run_id, collected), Flow::Continue)
}

fn observation(run_id: &str, c: Collected) -> Value {
    let events: Vec<Value> = c.by_sequence.into_values().collect();
    let mut by_type: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    let mut by_concept: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
    for e in &events {
        let t = e.get("type").and_then(Value::as_str).unwrap_or("");
        by_type.entry(t.to_string()).or_default().push(e.clone());
        if let Some(concept) = concept_of(t) {
            by_concept.entry(concept).or_default().push(e.clone());
        }
    }
    let types: Vec<&Value> = events.iter().map(|e| &e["type"]).collect();
    // Pairing (TURN-B6): how many returns each call got, and returns with no call.
    let call_ids: Vec<&Value> = by_concept
        .get("toolCalled")
        .into_iter()
        .flatten()
        .map(|e| &e["payload"]["callId"])
        .collect();
    let return_ids: Vec<&Value> = by_concept
        .get("toolReturned")
        .into_iter()
        .flatten()
        .map(|e| &e["payload"]["callId"])
        .collect();
    let unpaired: Vec<&Value> = call_ids
        .iter()
        .copied()
        .filter(|id| !return_ids.contains(id))
        .collect();
    let repeated: Vec<&Value> = call_ids
        .iter()
        .copied()
        .filter(|id| return_ids.iter().filter(|r| r == &id).count() > 1)
        .collect();
    let orphans: Vec<&Value> = return_ids
        .iter()
        .copied()
        .filter(|id| !call_ids.contains(id))
        .collect();
    let mut status_counts: BTreeMap<String, usize> = BTreeMap::new();
    for e in by_concept.get("toolReturned").into_iter().flatten() {
        let status = e["payload"]["status"]
            .as_str()
            .unwrap_or("absent")
            .to_string();
        *status_counts.entry(status).or_default() += 1;
    }
    // HOOKS-FAIL-7: every error code the log carries, once each, in order of first appearance.
    let mut error_codes: Vec<&Value> = Vec::new();
    for e in &events {
        if let Some(code) = e["payload"]["error"].get("code")
            && !error_codes.contains(&code)
        {
            error_codes.push(code);
        }
    }
    json!({
        "errorCodes": error_codes,
        "pairing": {
            "calls": call_ids.len(),
            "returns": return_ids.len(),
            "callsWithoutReturn": unpaired,
            "callsWithSeveralReturns": repeated,
            "returnsWithoutCall": orphans,
            "statusCounts": status_counts,
        },
        "runId": run_id,
        "status": c.status,
        "settled": settled(&c.status),
        "via": c.via,
        "reconnects": c.reconnects,
        "count": events.len(),
        "types": types,
        "byType": by_type,
        "byConcept": by_concept,
        "events": events,
    })
}

/// Read the run's status (`GET /runs/{runId}`); `Null` when the host does not say.
/// The run's status (`GET /runs/{runId}` as `role`, recorded under `step`).
pub(super) async fn run_status(
    ctx: &mut ScenarioCtx<'_>,
    step: &str,
    role: &str,
    run_id: &str,
) -> Result<Value, (Value, Flow)> {
    let path = ctx.client.wire().api_path(&format!("/runs/{run_id}"));
    match ctx
        .send(step, &HostRequest::get(path).role(role.to_string()))
        .await
    {
        Ok(resp) => Ok(resp.body.get("status").cloned().unwrap_or(Value::Null)),
        Err(e) => Err(transport_failure(&e)),
    }
}

async fn via_sse(
    ctx: &mut ScenarioCtx<'_>,
    read: &EventsRead,
    run_id: &str,
) -> Result<Option<Collected>, (Value, Flow)> {
    let path = ctx
        .client
        .wire()
        .api_path(&format!("/runs/{run_id}/events?streamMode=debug"));
    let mut collected = Collected {
        by_sequence: BTreeMap::new(),
        status: Value::Null,
        via: "sse",
        reconnects: 0,
    };
    let budgets = ctx.client.budgets();
    let deadline = std::time::Instant::now() + budgets.request * 3;
    // A quiet gap this long ends one read; the run's status then says whether to go on.
    let quiet = (budgets.read / 25).max(Duration::from_millis(50));
    let mut last_id: Option<String> = None;
    for attempt in 0.. {
        let remaining = deadline.saturating_duration_since(std::time::Instant::now());
        if remaining.is_zero() {
            break;
        }
        let result = ctx
            .client
            .read_sse(
                &path,
                Some(&read.role),
                last_id.as_deref(),
                quiet,
                remaining,
            )
            .await;
        let url = format!("{}{}", ctx.client.base_url(), path);
        let sse = match result {
            Ok(sse) => sse,
            Err(e) => return Err(transport_failure(&e)),
        };
        ctx.transcript.exchanges.push(Exchange {
            step: read.name.clone(),
            method: "GET".into(),
            url,
            status: Some(sse.status),
            response_body: Some(json!({"sseEvents": sse.events.len(), "endedByServer": sse.ended_by_server, "lastEventId": last_id})),
            curl: format!("curl -N -H 'accept: text/event-stream' -H \"Authorization: Bearer $TOKEN\" '{}{}'", ctx.client.base_url(), path),
            ..Exchange::default()
        });
        if attempt == 0 && (sse.status != 200 || !sse.content_type.starts_with("text/event-stream"))
        {
            // No stream served here: fall back to the poll read.
            return Ok(None);
        }
        for event in sse.events {
            let Ok(envelope) = crate::canonical::parse_strict(&event.data) else {
                continue;
            };
            if let Some(seq) = envelope.get("sequence").and_then(Value::as_i64) {
                collected.by_sequence.entry(seq).or_insert(envelope);
            }
            if event.id.is_some() {
                last_id = event.id;
            }
        }
        collected.status = run_status(ctx, &read.name, &read.role, run_id).await?;
        if settled(&collected.status) {
            break;
        }
        collected.reconnects = attempt + 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(Some(collected))
}

async fn via_poll(
    ctx: &mut ScenarioCtx<'_>,
    read: &EventsRead,
    run_id: &str,
) -> Result<Collected, (Value, Flow)> {
    let cursor = match ctx.client.wire() {
        WireMajor::V2 => "afterSequence",
        WireMajor::V1 => "lastSequence",
    };
    let mut collected = Collected {
        by_sequence: BTreeMap::new(),
        status: Value::Null,
        via: "poll",
        reconnects: 0,
    };
    let mut after: i64 = -1;
    for _ in 0..MAX_POLLS {
        let path = ctx.client.wire().api_path(&format!(
            "/runs/{run_id}/events/poll?{cursor}={after}&streamMode=debug&timeout=1"
        ));
        let resp = match ctx
            .send(&read.name, &HostRequest::get(path).role(read.role.clone()))
            .await
        {
            Ok(r) => r,
            Err(e) => return Err(transport_failure(&e)),
        };
        if resp.status == 404 || resp.status == 405 {
            return Err((
                blocked(format!(
                    "the host serves neither an event stream nor an event poll for run {run_id} (HTTP {})",
                    resp.status
                )),
                Flow::Continue,
            ));
        }
        if resp.status != 200 {
            // An answer that is neither the log nor "not served" is a wrong answer.
            return Err((
                json!({"$fail": format!("the event poll for run {run_id} answered HTTP {}", resp.status), "poll": resp.observation()}),
                Flow::Continue,
            ));
        }
        for e in resp
            .body
            .get("events")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
        {
            if let Some(seq) = e.get("sequence").and_then(Value::as_i64) {
                after = after.max(seq);
                collected.by_sequence.entry(seq).or_insert(e);
            }
        }
        collected.status = resp.body.get("status").cloned().unwrap_or(Value::Null);
        if resp.body.get("isTerminal") == Some(&Value::Bool(true)) || settled(&collected.status) {
            break;
        }
    }
    Ok(collected)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::{Arc, Mutex};

    use axum::Router;
    use axum::extract::State;
    use axum::http::HeaderMap;
    use axum::routing::get;
    use serde_json::{Value, json};

    use super::{Collected, observation};
    use crate::host::{Budgets, Discovery, HostClient, WireMajor};
    use crate::steps::ScenarioCtx;
    use crate::suite::{EventsRead, Step};
    use crate::transcript::Transcript;
    use crate::witness::Receiver;

    fn envelope(seq: i64, ty: &str) -> Value {
        json!({"eventId": format!("e{seq}"), "runId": "r1", "type": ty, "payload": {}, "timestamp": "2026-11-29T00:00:00Z", "sequence": seq, "schemaVersion": 1})
    }

    /// A fake host: its SSE stream first ends after two events while the run still runs, and
    /// serves the rest only to a reconnect carrying `Last-Event-ID: 1`; `sse: false` serves no
    /// stream at all, only the poll read.
    async fn fake_host(sse: bool) -> (String, Arc<Mutex<Vec<Option<String>>>>) {
        let seen: Arc<Mutex<Vec<Option<String>>>> = Arc::default();
        let stream = |State(seen): State<Arc<Mutex<Vec<Option<String>>>>>, headers: HeaderMap| async move {
            let last = headers
                .get("last-event-id")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            seen.lock().unwrap().push(last.clone());
            let events = match last.as_deref() {
                None => vec![envelope(0, "run.started"), envelope(1, "agent.tool-called")],
                Some("1") => vec![
                    envelope(2, "agent.tool-returned"),
                    envelope(3, "run.completed"),
                ],
                Some(_) => vec![],
            };
            let body: String = events
                .iter()
                .map(|e| {
                    format!(
                        "id: {}\nevent: {}\ndata: {}\n\n",
                        e["sequence"], e["type"], e
                    )
                })
                .collect();
            ([("content-type", "text/event-stream")], body)
        };
        let run = |State(seen): State<Arc<Mutex<Vec<Option<String>>>>>| async move {
            let done = seen.lock().unwrap().len() >= 2;
            axum::Json(json!({"runId": "r1", "status": if done { "completed" } else { "running" }}))
        };
        let poll = || async {
            axum::Json(
                json!({"runId": "r1", "events": [envelope(0, "run.started"), envelope(1, "run.completed")], "lastSequence": 1, "status": "completed", "isTerminal": true}),
            )
        };
        let mut app = Router::new()
            .route("/runs/r1", get(run))
            .route("/runs/r1/events/poll", get(poll));
        if sse {
            app = app.route("/runs/r1/events", get(stream));
        }
        let app = app.with_state(seen.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        (url, seen)
    }

    async fn read_events(url: &str) -> Value {
        let client = HostClient::new(
            url,
            BTreeMap::from([("operator".to_string(), "t".to_string())]),
            Budgets::scaled(0.3),
        )
        .unwrap();
        let receiver = Receiver::start().await.unwrap();
        let provider = mock_provider::MockProvider::start().await.unwrap();
        let mcp = crate::witness::McpServer::start().await.unwrap();
        let discovery = Discovery {
            document: json!({}),
            wire: WireMajor::V2,
            wire_reason: String::new(),
            etag: None,
            sha256: String::new(),
            exchanges: vec![],
        };
        let surfaces = crate::suite::Surfaces::default();
        let mut ctx = ScenarioCtx {
            client: &client,
            surfaces: &surfaces,
            receiver: &receiver,
            provider: &provider,
            mcp: &mcp,
            mcp_servers: Vec::new(),
            providers: Vec::new(),
            discovery: &discovery,
            doc: json!({"steps": {}}),
            transcript: Transcript::default(),
            nonce: "p".into(),
            receivers: Vec::new(),
            tainted: Vec::new(),
            spawned: None,
            spawn_unavailable: None,
        };
        let step = Step::Events(EventsRead {
            name: "log".into(),
            run: "r1".into(),
            role: "operator".into(),
        });
        ctx.run(&step).await;
        ctx.doc["steps"]["log"].clone()
    }

    #[test]
    fn error_codes_are_listed_once_in_log_order() {
        let mut by_sequence = BTreeMap::new();
        let with_error = |seq: i64, code: Value| {
            let mut e = envelope(seq, "agent.tool-returned");
            e["payload"] = json!({"error": {"code": code}});
            e
        };
        by_sequence.insert(0, envelope(0, "run.started"));
        by_sequence.insert(1, with_error(1, json!("b.x")));
        by_sequence.insert(2, with_error(2, json!("forbidden")));
        by_sequence.insert(3, with_error(3, json!("b.x")));
        let obs = observation(
            "r1",
            Collected {
                by_sequence,
                status: json!("completed"),
                via: "poll",
                reconnects: 0,
            },
        );
        assert_eq!(obs["errorCodes"], json!(["b.x", "forbidden"]));
    }

    #[tokio::test]
    async fn a_stream_that_ends_early_is_resumed_with_last_event_id() {
        let (url, seen) = fake_host(true).await;
        let obs = read_events(&url).await;
        assert_eq!(obs["via"], "sse");
        assert_eq!(obs["reconnects"], 1);
        assert_eq!(obs["count"], 4, "{obs}");
        assert_eq!(obs["status"], "completed");
        assert_eq!(*seen.lock().unwrap(), vec![None, Some("1".to_string())]);
        assert_eq!(obs["pairing"]["calls"], 1);
    }

    #[tokio::test]
    async fn a_host_without_a_stream_is_read_by_polling() {
        let (url, _) = fake_host(false).await;
        let obs = read_events(&url).await;
        assert_eq!(obs["via"], "poll");
        assert_eq!(obs["types"], json!(["run.started", "run.completed"]));
        assert_eq!(obs["settled"], true);
    }
}
