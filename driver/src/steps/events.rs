//! `events`: read a run's events from the host's durable log, in debug stream mode.
//!
//! First over SSE (`GET /runs/{runId}/events?streamMode=debug`), resuming with
//! `Last-Event-ID` when a stream ends or goes quiet before the run has settled (toolcert
//! reconnects itself, so the host's resumption is what gets exercised; a run waiting for
//! approval keeps its stream open, so a quiet stream is a cue to look at the run). The run's
//! status is read before each connection, and the read ends with the first connection opened
//! on a settled run: only that one is sure to hold the whole log. When the host serves no
//! stream, or a stream whose events of the run are not envelopes with a `sequence` (a v1
//! host's compact frames), the log is read by polling
//! `…/events/poll?afterSequence=N&timeout=1` (C-20: never concluding "no events" from one
//! poll), ending with a poll that brings nothing new after one that showed the run settled (a
//! host may read the status after the events). Events are de-duplicated by `sequence`.
//!
//! # Bounds
//!
//! One `events` step reads, across all its SSE connections or polls together, at most
//! [`MAX_EVENTS`] events, [`Budgets::max_body_bytes`](crate::host::Budgets) bytes (4 MiB) and
//! [`MAX_EVENT_BYTES`] for any one event or line, within a time budget of three request
//! budgets (30 s unscaled) and [`MAX_POLLS`] polls. A conformance run logs a few dozen events
//! of a few hundred bytes each, so a conforming host is nowhere near these bounds; a host that
//! streams without end (never quiet, never ending, never settling the run) is stopped by them
//! instead of filling memory and the report.
//!
//! # A read cut short
//!
//! The read is *cut short* when the host sends more than one of those bounds allows, or when
//! the time budget or the polls run out before the run was seen settled: the host was still
//! sending new events (the stream never went quiet, or the last connection or poll brought
//! new events), or it had gone quiet on a run that may still append more.
//! The read then ends at once and the step is recorded as
//!
//! ```json
//! {"$blocked": "<what the host did and which bound stopped it>",
//!  "truncated": {"reason": "…", "cap": "events|bytes|eventSize|budget|polls", "limit": N,
//!                "received": n, "bytes": b},
//!  "partial": {"runId", "status", "settled", "via", "reconnects", "count", "kept", "events"}}
//! ```
//!
//! (a [`NotObserved`] with [`Context::Cut`]), so every check whose pointer reads the step is
//! `blocked` with that reason (the judge propagates the state along a check's pointer). A partial log can be judged neither way:
//! a check that a missing event would fail might `pass` on it, and a check counting events
//! might `fail` on the ones never read. It is not toolcert's `error` (toolcert worked as
//! designed) nor the host's `fail` (an endless log is not itself a rule violation a row
//! names): the host answered with a log toolcert cannot see the end of, so the run's outcome
//! cannot be witnessed, which is what `blocked` means. `partial` keeps the events read first,
//! up to [`PARTIAL_KEPT_BYTES`] of them, for a reader of the report; no check reads under it.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::ctx::{Flow, ScenarioCtx, require_role, transport_failure};
use crate::host::{HostRequest, SseCap, SseEnd, SseLimits, TransportError, WireMajor};
use toolcert_core::observation::{
    Context, EventsObservation, HttpObservation, NotObserved, Observation, Pairing, PartialLog,
    SessionBrackets, Truncation,
};
use toolcert_core::suite::EventsRead;
use toolcert_core::transcript::Exchange;

/// Most polls one `events` step makes.
pub(super) const MAX_POLLS: usize = 40;

/// The pause before the next poll when a host answered at once with nothing new (it does not
/// hold a poll open): 40 polls then span 10 s, within the read budget.
const POLL_PAUSE: Duration = Duration::from_millis(250);

/// Most events one `events` step reads, across its connections or polls: 300, ten times the
/// longest log a scenario reads from the reference host (29 events). A host that never stops
/// sending at 100 events a second costs three seconds per read, so the ~50 reads of a whole
/// run against it stay within a minute; a conforming host that does log more is `blocked`
/// with this cap named, never judged on a partial log.
/// times the longest log a conformance run writes.
pub(super) const MAX_EVENTS: usize = 300;

/// How much of a cut read's events the observation keeps for a reader (serialized): 8 KiB,
/// a few dozen events, enough to see what the host sent; a cut read is never judged.
pub(super) const PARTIAL_KEPT_BYTES: usize = 8 * 1024;

/// Largest single event (or line) read on a stream: 1 MiB.
pub(super) const MAX_EVENT_BYTES: usize = crate::host::DEFAULT_MAX_EVENT_BYTES;

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
        "negotiation.decided" => "negotiationDecided",
        "replay.diverged" => "replayDiverged",
        "replay.divergedAtRefusal" | "replay.diverged-at-refusal" => "replayDivergedAtRefusal",
        _ => return None,
    })
}

/// How the log's `tool.session.*` events bracket calls (CAT-13), or `None` when it has none.
///
/// Walks the log in sequence order: an opened event starts a bracket keyed by its
/// `sessionId`; a call event and then the return of that call inside the bracket make it
/// non-empty; a closed event ends the bracket whose `sessionId` and `toolId` it names.
fn session_brackets(events: &[Value]) -> Option<SessionBrackets> {
    struct Open {
        tool_id: Value,
        calls: Vec<Value>,
        paired: bool,
    }
    let mut open: Vec<(Value, Open)> = Vec::new();
    let mut seen = false;
    let mut out = SessionBrackets::default();
    for e in events {
        let concept = e.get("type").and_then(Value::as_str).and_then(concept_of);
        let payload = &e["payload"];
        match concept {
            Some("toolSessionOpened") => {
                seen = true;
                out.opened += 1;
                let session = payload.get("sessionId").cloned().unwrap_or(Value::Null);
                let bracket = Open {
                    tool_id: payload.get("toolId").cloned().unwrap_or(Value::Null),
                    calls: Vec::new(),
                    paired: false,
                };
                open.push((session, bracket));
            }
            Some("toolCalled") => {
                for (_, bracket) in &mut open {
                    bracket.calls.push(payload["callId"].clone());
                }
            }
            Some("toolReturned") => {
                for (_, bracket) in &mut open {
                    if bracket.calls.contains(&payload["callId"]) {
                        bracket.paired = true;
                    }
                }
            }
            Some("toolSessionClosed") => {
                seen = true;
                out.closed += 1;
                let session = payload.get("sessionId").cloned().unwrap_or(Value::Null);
                let tool_id = payload.get("toolId").cloned().unwrap_or(Value::Null);
                out.outcomes
                    .push(payload.get("outcome").cloned().unwrap_or(Value::Null));
                match open
                    .iter()
                    .position(|(id, b)| *id == session && b.tool_id == tool_id)
                {
                    Some(i) => {
                        let (id, bracket) = open.remove(i);
                        if !bracket.paired {
                            out.empty_brackets.push(id);
                        }
                    }
                    None => out.closes_without_open.push(session),
                }
            }
            _ => {}
        }
    }
    out.unclosed = open.into_iter().map(|(id, _)| id).collect();
    seen.then_some(out)
}

/// Whether `frame` is an event of run `run_id` (a string `type` and that `runId`), rather than
/// a heartbeat or other frame a stream may carry.
fn is_run_event(frame: &Value, run_id: &str) -> bool {
    frame.get("type").is_some_and(Value::is_string)
        && frame.get("runId").and_then(Value::as_str) == Some(run_id)
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
    /// Events the host sent (duplicates and unparsable ones included), across connections.
    received: usize,
    /// Body bytes read, across connections or polls.
    bytes: usize,
    /// Why the read was cut short, if it was.
    cut: Option<Cut>,
}

impl Collected {
    fn new(via: &'static str) -> Collected {
        Collected {
            by_sequence: BTreeMap::new(),
            status: Value::Null,
            via,
            reconnects: 0,
            received: 0,
            bytes: 0,
            cut: None,
        }
    }
}

/// A read cut short: which bound stopped it, at what value, and what the host did.
struct Cut {
    cap: &'static str,
    limit: u128,
    reason: String,
}

impl Cut {
    fn events(run_id: &str) -> Cut {
        Cut {
            cap: "events",
            limit: MAX_EVENTS as u128,
            reason: format!(
                "the host sent more than {MAX_EVENTS} events in one read of run {run_id}'s event log"
            ),
        }
    }

    fn bytes(run_id: &str, max: usize) -> Cut {
        Cut {
            cap: "bytes",
            limit: max as u128,
            reason: format!(
                "the host sent more than {max} bytes in one read of run {run_id}'s event log"
            ),
        }
    }

    fn sse(end: &SseEnd, run_id: &str, max_bytes: usize) -> Option<Cut> {
        Some(match end {
            SseEnd::Cap(SseCap::Events) => Cut::events(run_id),
            SseEnd::Cap(SseCap::Bytes) => Cut::bytes(run_id, max_bytes),
            SseEnd::Cap(SseCap::EventSize) => Cut {
                cap: "eventSize",
                limit: MAX_EVENT_BYTES as u128,
                reason: format!(
                    "the host sent an event (or a line) longer than {MAX_EVENT_BYTES} bytes on run {run_id}'s event stream"
                ),
            },
            _ => return None,
        })
    }

    fn budget(run_id: &str, budget: Duration) -> Cut {
        Cut {
            cap: "budget",
            limit: budget.as_millis(),
            reason: format!(
                "the host was still sending events on run {run_id}'s log when the {} ms read budget ran out, and the run had not settled",
                budget.as_millis()
            ),
        }
    }

    /// The read ended with the host quiet but the run never seen settled (`status` is its
    /// last known one), when `bound` (`limit`: ms of the read budget, or polls) ran out: the
    /// host stopped sending, yet the run may still append events, so what was read may not
    /// be its whole log.
    fn unsettled(run_id: &str, status: &Value, bound: &str, limit: u128) -> Cut {
        let status = match status.as_str() {
            Some(s) => format!("`{s}`"),
            None => "unknown".to_string(),
        };
        let spent = if bound == "polls" {
            format!("the {limit} polls")
        } else {
            format!("the {limit} ms {bound}")
        };
        Cut {
            cap: "budget",
            limit,
            reason: format!(
                "run {run_id} had not settled (status {status}) when {spent} ran out; its log had gone quiet, but a run that has not settled may still append events, so the log read may not be whole"
            ),
        }
    }

    fn polls(run_id: &str) -> Cut {
        Cut {
            cap: "polls",
            limit: MAX_POLLS as u128,
            reason: format!(
                "the host was still appending events to run {run_id}'s log after {MAX_POLLS} polls, and the run had not settled"
            ),
        }
    }
}

pub(super) async fn run(
    ctx: &mut ScenarioCtx<'_>,
    read: &EventsRead,
) -> (Observation<EventsObservation>, Flow) {
    let log_reads = ctx.log_reads;
    if let Some(why) = log_reads.stopped() {
        return (NotObserved::blocked(why).into(), Flow::Continue);
    }
    let budget = read_budget(ctx);
    // A read under way when the other reads stop the run's reading stops too: it would only
    // wait out its own budget on the same host.
    let collected = tokio::select! {
        collected = collect(ctx, read) => collected,
        why = log_reads.stopping() => return (NotObserved::blocked(why).into(), Flow::Continue),
    };
    match collected {
        Ok((run_id, collected)) => {
            match &collected.cut {
                Some(cut) => log_reads.cut(&cut.reason, budget),
                None => log_reads.ended(),
            }
            (observation(&run_id, collected), Flow::Continue)
        }
        Err((not_made, flow)) => (not_made.into(), flow),
    }
}

/// Read the log of the run `read` names: over SSE, else by polling.
async fn collect(
    ctx: &mut ScenarioCtx<'_>,
    read: &EventsRead,
) -> Result<(String, Collected), (NotObserved, Flow)> {
    if let Some(obs) = require_role(ctx, &read.role) {
        return Err((obs, Flow::Continue));
    }
    let run_id = match toolcert_core::template::render_str(&read.run, &ctx.doc) {
        Ok(Value::String(s)) if !s.is_empty() => s,
        Ok(other) => {
            return Err((
                NotObserved::blocked(format!("no run id to read events for (got {other})")),
                Flow::Continue,
            ));
        }
        Err(e) => return Err((ctx.template_failure(&e), Flow::Continue)),
    };
    let collected = match via_sse(ctx, read, &run_id).await? {
        Stream::Read(c) => c,
        Stream::NotServed => via_poll(ctx, read, &run_id, None).await?,
        Stream::NotTheLog(frames) => via_poll(ctx, read, &run_id, Some(frames)).await?,
    };
    Ok((run_id, collected))
}

fn observation(run_id: &str, mut c: Collected) -> Observation<EventsObservation> {
    if let Some(cut) = c.cut.take() {
        return cut_observation(run_id, c, cut).into();
    }
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
    let types: Vec<Value> = events.iter().map(|e| e["type"].clone()).collect();
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
    // ERR-4: every error object inside an event, whatever its shape.
    let error_objects: Vec<Value> = events
        .iter()
        .filter_map(|e| e["payload"].get("error").cloned())
        .collect();
    let owned = |ids: Vec<&Value>| ids.into_iter().cloned().collect::<Vec<Value>>();
    let pairing = Pairing {
        calls: call_ids.len(),
        returns: return_ids.len(),
        calls_without_return: owned(unpaired),
        calls_with_several_returns: owned(repeated),
        returns_without_call: owned(orphans),
        status_counts,
    };
    let error_codes = owned(error_codes);
    let by_concept = by_concept
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    Observation::Made(EventsObservation {
        error_codes,
        error_objects,
        pairing,
        run_id: run_id.to_string(),
        settled: settled(&c.status),
        status: c.status,
        via: c.via.to_string(),
        reconnects: c.reconnects,
        count: events.len(),
        types,
        by_type,
        sessions: session_brackets(&events),
        by_concept,
        events,
    })
}

/// Read the run's status (`GET /runs/{runId}`); `Null` when the host does not say.
/// The run's status (`GET /runs/{runId}` as `role`, recorded under `step`).
pub(super) async fn run_status(
    ctx: &mut ScenarioCtx<'_>,
    step: &str,
    role: &str,
    run_id: &str,
) -> Result<Value, (NotObserved, Flow)> {
    let wire = ctx.client.wire();
    let path = wire.api_path(&format!("/runs/{}", wire.id_segment(run_id)));
    match ctx
        .send(step, &HostRequest::get(path).role(role.to_string()))
        .await
    {
        Ok(resp) => Ok(resp.body.get("status").cloned().unwrap_or(Value::Null)),
        Err(e) => Err(transport_failure(&e)),
    }
}

/// The observation of a read cut short: `blocked` with the reason, the bound, and the first
/// events read (see the module doc).
fn cut_observation(run_id: &str, c: Collected, cut: Cut) -> NotObserved {
    let count = c.by_sequence.len();
    let mut kept = Vec::new();
    let mut size = 0usize;
    for e in c.by_sequence.into_values() {
        size += serde_json::to_vec(&e).map_or(usize::MAX, |v| v.len() + 1);
        if size > PARTIAL_KEPT_BYTES {
            break;
        }
        kept.push(e);
    }
    let status = match &c.status {
        Value::Null => "unknown".to_string(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let reason = format!(
        "{} (run status {status}; {count} distinct events read before toolcert stopped): toolcert cannot witness the end of the run, so no check is judged on the partial log",
        cut.reason
    );
    NotObserved::blocked(reason).with(Context::Cut {
        truncated: Box::new(Truncation {
            reason: cut.reason,
            cap: cut.cap.to_string(),
            limit: cut.limit,
            received: c.received,
            bytes: c.bytes,
        }),
        partial: Box::new(PartialLog {
            run_id: run_id.to_string(),
            settled: settled(&c.status),
            status: c.status,
            via: c.via.to_string(),
            reconnects: c.reconnects,
            count,
            kept: kept.len(),
            events: kept,
        }),
    })
}

/// How long one `events` step may read, all connections or polls together.
fn read_budget(ctx: &ScenarioCtx<'_>) -> Duration {
    ctx.client.budgets().request * 3
}

/// What the stream read came to.
enum Stream {
    /// The log, read over the stream (possibly cut short).
    Read(Collected),
    /// No event stream is served for the run.
    NotServed,
    /// A stream is served, but this many of its events of the run carried no `sequence`: it
    /// is not the log.
    NotTheLog(usize),
}

async fn via_sse(
    ctx: &mut ScenarioCtx<'_>,
    read: &EventsRead,
    run_id: &str,
) -> Result<Stream, (NotObserved, Flow)> {
    let wire = ctx.client.wire();
    let path = wire.api_path(&format!(
        "/runs/{}/events?streamMode=debug",
        wire.id_segment(run_id)
    ));
    let mut collected = Collected::new("sse");
    let budgets = ctx.client.budgets();
    let max_bytes = budgets.max_body_bytes;
    let budget = read_budget(ctx);
    let deadline = Instant::now() + budget;
    // A quiet gap this long ends one read; the run's status then says whether to go on.
    let quiet = (budgets.read / 25).max(Duration::from_millis(50));
    let mut last_id: Option<String> = None;
    // Whether the host was still sending when toolcert last stopped reading.
    let mut still_sending = false;
    for attempt in 0.. {
        let remaining = deadline.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            break;
        }
        // The run's status is read BEFORE each connection: a connection opened after the run
        // was seen settled reads every event the run will have without outside help. Read
        // after the connection instead, the status could show the run settling on events
        // appended once the stream had gone quiet, which this read never saw (a log cut
        // short, judged as if whole).
        let status = run_status(ctx, &read.name, &read.role, run_id).await?;
        let settled_before = settled(&status);
        let limits = SseLimits {
            max_events: MAX_EVENTS - collected.received,
            max_bytes: max_bytes - collected.bytes,
            max_event_bytes: MAX_EVENT_BYTES,
        };
        let result = ctx
            .client
            .read_sse(
                &path,
                Some(&read.role),
                last_id.as_deref(),
                quiet,
                remaining,
                limits,
            )
            .await;
        let url = format!("{}{}", ctx.client.base_url(), path);
        let sse = match result {
            Ok(sse) => sse,
            Err(e) => return Err(transport_failure(&e)),
        };
        ctx.transcript.push(Exchange {
            step: read.name.clone(),
            method: "GET".into(),
            url,
            status: Some(sse.status),
            response_body: Some(json!({
                "sseEvents": sse.events.len(),
                "bytes": sse.bytes,
                "ended": sse.end.word(),
                "endedByServer": sse.ended_by_server(),
                "lastEventId": last_id,
            })),
            curl: format!(
                "curl -N -H 'accept: text/event-stream' -H \"Authorization: Bearer $TOKEN\" '{}{}'",
                ctx.client.base_url(),
                path
            ),
            ..Exchange::default()
        });
        if attempt == 0 && (sse.status != 200 || !sse.content_type.starts_with("text/event-stream"))
        {
            // No stream served here: fall back to the poll read.
            return Ok(Stream::NotServed);
        }
        collected.received += sse.events.len();
        collected.bytes += sse.bytes;
        let mut fresh = 0usize;
        // Events of this run the stream framed without a `sequence` (a v1 host may send a
        // compact frame, `seq` and no `payload`, on its stream and the envelope only on its
        // poll): they cannot be placed in the log, and dropping them would leave a log that
        // looks short.
        let mut not_envelopes = 0usize;
        // Ids a header cannot carry back (non-ASCII, control characters) are not resumed
        // from: the host is not lost for an odd id, the read goes on without it.
        let mut refused_ids = 0usize;
        for event in sse.events {
            match event.id {
                Some(id) if crate::host::resumable_id(&id) => last_id = Some(id),
                Some(_) => refused_ids += 1,
                None => {}
            }
            let Ok(envelope) = toolcert_base::canonical::parse_strict(&event.data) else {
                continue;
            };
            match envelope.get("sequence").and_then(Value::as_i64) {
                Some(seq) => {
                    if let std::collections::btree_map::Entry::Vacant(slot) =
                        collected.by_sequence.entry(seq)
                    {
                        slot.insert(envelope);
                        fresh += 1;
                    }
                }
                None if is_run_event(&envelope, run_id) => not_envelopes += 1,
                None => {}
            }
        }
        if refused_ids > 0
            && let Some(Exchange {
                response_body: Some(Value::Object(body)),
                ..
            }) = ctx.transcript.exchanges.last_mut()
        {
            body.insert("refusedEventIds".into(), json!(refused_ids));
        }
        if let Some(cut) = Cut::sse(&sse.end, run_id, max_bytes) {
            // A bound reached: stop at once.
            collected.cut = Some(cut);
            return Ok(Stream::Read(collected));
        }
        if not_envelopes > 0 {
            // The stream is not the log: read the log by polling instead, and say why in the
            // transcript.
            if let Some(Exchange {
                response_body: Some(Value::Object(body)),
                ..
            }) = ctx.transcript.exchanges.last_mut()
            {
                body.insert("notEnvelopes".into(), json!(not_envelopes));
            }
            return Ok(Stream::NotTheLog(not_envelopes));
        }
        still_sending = sse.end == SseEnd::Budget || fresh > 0;
        collected.status = status;
        if settled_before {
            return Ok(Stream::Read(collected));
        }
        collected.reconnects = attempt + 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The budget ran out before a connection was opened on a settled run: the end of the log
    // was never seen.
    collected.cut = Some(if still_sending {
        Cut::budget(run_id, budget)
    } else {
        Cut::unsettled(run_id, &collected.status, "read budget", budget.as_millis())
    });
    Ok(Stream::Read(collected))
}

async fn via_poll(
    ctx: &mut ScenarioCtx<'_>,
    read: &EventsRead,
    run_id: &str,
    frames_without_sequence: Option<usize>,
) -> Result<Collected, (NotObserved, Flow)> {
    let mut cursor = match ctx.client.wire() {
        WireMajor::V2 => "afterSequence",
        WireMajor::V1 => "lastSequence",
    };
    let mut collected = Collected::new("poll");
    let max_bytes = ctx.client.budgets().max_body_bytes;
    let budget = read_budget(ctx);
    let deadline = Instant::now() + budget;
    let mut after: i64 = -1;
    let mut still_sending = false;
    let mut polls = 0;
    // Whether the last poll showed the run settled. The read ends only with a poll made after
    // that one, bringing nothing new: a host may read a run's status after its events, so the
    // answer that first shows the run settled can lack events appended in between.
    let mut seen_settled = false;
    while polls < MAX_POLLS && Instant::now() < deadline {
        polls += 1;
        // A confirming poll does not long-poll: a settled run has nothing more to wait for.
        let wait = if seen_settled { "" } else { "&timeout=1" };
        let wire = ctx.client.wire();
        let path = wire.api_path(&format!(
            "/runs/{}/events/poll?{cursor}={after}&streamMode=debug{wait}",
            wire.id_segment(run_id)
        ));
        let asked_after = after;
        let asked_at = Instant::now();
        let resp = match ctx
            .send(&read.name, &HostRequest::get(path).role(read.role.clone()))
            .await
        {
            Ok(r) => r,
            Err(TransportError::TooLarge { cap, .. }) => {
                // One poll answer past the client's body cap: the same bound as the stream's.
                collected.cut = Some(Cut::bytes(run_id, cap));
                return Ok(collected);
            }
            Err(e) => return Err(transport_failure(&e)),
        };
        if resp.status == 404 || resp.status == 405 {
            let stream = match frames_without_sequence {
                None => "an event stream".to_string(),
                Some(n) => format!(
                    "an event stream whose events carry a `sequence` ({n} of its events of the run had none)"
                ),
            };
            return Err((
                NotObserved::blocked(format!(
                    "the host serves neither {stream} nor an event poll for run {run_id} (HTTP {})",
                    resp.status
                )),
                Flow::Continue,
            ));
        }
        if resp.status != 200 {
            // An answer that is neither the log nor "not served" is a wrong answer.
            let reason = format!(
                "the event poll for run {run_id} answered HTTP {}",
                resp.status
            );
            let poll = Box::new(HttpObservation::from(&resp));
            return Err((
                NotObserved::fail(reason).with(Context::Poll { poll }),
                Flow::Continue,
            ));
        }
        collected.bytes += resp.body_bytes;
        let mut fresh = 0usize;
        // Whether the answer repeats events at or before the cursor: the host ignored it.
        let mut cursor_ignored = false;
        if let Some(events) = resp.body.get("events").and_then(Value::as_array) {
            for e in events {
                if collected.received == MAX_EVENTS {
                    collected.cut = Some(Cut::events(run_id));
                    return Ok(collected);
                }
                collected.received += 1;
                if let Some(seq) = e.get("sequence").and_then(Value::as_i64) {
                    cursor_ignored |= asked_after >= 0 && seq <= asked_after;
                    after = after.max(seq);
                    if let std::collections::btree_map::Entry::Vacant(slot) =
                        collected.by_sequence.entry(seq)
                    {
                        slot.insert(e.clone());
                        fresh += 1;
                    }
                }
            }
        }
        if collected.bytes > max_bytes {
            collected.cut = Some(Cut::bytes(run_id, max_bytes));
            return Ok(collected);
        }
        // C-20: a v1 host that ignores `lastSequence` may take `since` (the example hosts do).
        if cursor_ignored && cursor == "lastSequence" {
            cursor = "since";
        }
        // `runStatus`: the v1 example hosts' name for the status on a poll answer.
        collected.status = resp
            .body
            .get("status")
            .or_else(|| resp.body.get("runStatus"))
            .cloned()
            .unwrap_or(Value::Null);
        let settled_now =
            resp.body.get("isTerminal") == Some(&Value::Bool(true)) || settled(&collected.status);
        if settled_now && seen_settled && fresh == 0 {
            return Ok(collected);
        }
        seen_settled = settled_now;
        still_sending = fresh > 0;
        if fresh == 0 && !settled_now && asked_at.elapsed() < POLL_PAUSE {
            // Nothing new, at once: the host did not hold the poll (`timeout` ignored). Pause,
            // so the polls span the run's time rather than a few milliseconds of it.
            tokio::time::sleep(POLL_PAUSE).await;
        }
    }
    // The polls or the budget ran out before a poll showed the run settled: the end of the
    // log was never seen.
    collected.cut = Some(match (still_sending, polls == MAX_POLLS) {
        (true, true) => Cut::polls(run_id),
        (true, false) => Cut::budget(run_id, budget),
        (false, true) => Cut {
            cap: "polls",
            ..Cut::unsettled(run_id, &collected.status, "polls", MAX_POLLS as u128)
        },
        (false, false) => {
            Cut::unsettled(run_id, &collected.status, "read budget", budget.as_millis())
        }
    });
    Ok(collected)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::{Arc, Mutex};

    use loopback_http::{Request, Router, Server, StatusCode, response};
    use serde_json::{Value, json};

    use std::time::Duration;

    use super::{Collected, MAX_EVENTS, PARTIAL_KEPT_BYTES, observation, session_brackets};
    use crate::host::{Budgets, Discovery, HostClient, WireMajor};
    use crate::steps::ScenarioCtx;
    use crate::steps::{LOG_CUTS_AFTER, LogReads};
    use crate::witness::Receiver;
    use toolcert_core::observation::{Context, NotObserved, Unobserved};
    use toolcert_core::suite::{EventsRead, Step};
    use toolcert_core::transcript::Transcript;

    fn session_event(seq: i64, ty: &str, payload: Value) -> Value {
        let mut e = envelope(seq, ty);
        e["payload"] = payload;
        e
    }

    #[test]
    fn session_brackets_pair_opens_closes_and_calls() {
        let open = |seq, id: &str| {
            session_event(
                seq,
                "tool.session-opened",
                json!({"sessionId": id, "toolId": "t"}),
            )
        };
        let close = |seq, id: &str| {
            session_event(
                seq,
                "tool.session-closed",
                json!({"sessionId": id, "toolId": "t", "outcome": "completed"}),
            )
        };
        let call = |seq, ty: &str, id: &str| session_event(seq, ty, json!({"callId": id}));
        assert_eq!(session_brackets(&[envelope(0, "run.started")]), None);
        let good = session_brackets(&[
            open(0, "s1"),
            call(1, "agent.tool-called", "c1"),
            call(2, "agent.tool-returned", "c1"),
            close(3, "s1"),
        ])
        .expect("sessions seen");
        assert_eq!((good.opened, good.closed), (1, 1));
        assert!(good.closes_without_open.is_empty() && good.empty_brackets.is_empty());
        assert!(good.unclosed.is_empty());
        assert_eq!(good.outcomes, vec![json!("completed")]);
        // A close before the call leaves the bracket empty; a second close and a close of
        // another id match no open; a call returned only after the close does not count.
        let bad = session_brackets(&[
            open(0, "s1"),
            close(1, "s1"),
            close(2, "s1"),
            call(3, "agent.tool-called", "c1"),
            call(4, "agent.tool-returned", "c1"),
            open(5, "s2"),
            call(6, "agent.tool-called", "c2"),
            close(7, "s2"),
            call(8, "agent.tool-returned", "c2"),
            open(9, "s3"),
        ])
        .expect("sessions seen");
        assert_eq!(bad.empty_brackets, vec![json!("s1"), json!("s2")]);
        assert_eq!(bad.closes_without_open, vec![json!("s1")]);
        assert_eq!(bad.unclosed, vec![json!("s3")]);
    }

    fn envelope(seq: i64, ty: &str) -> Value {
        json!({"eventId": format!("e{seq}"), "runId": "r1", "type": ty, "payload": {}, "timestamp": "2026-11-29T00:00:00Z", "sequence": seq, "schemaVersion": 1})
    }

    /// A fake host: its SSE stream first ends after two events while the run still runs, and
    /// serves the rest only to a reconnect carrying `Last-Event-ID: 1`; `sse: false` serves no
    /// stream at all, only the poll read.
    async fn fake_host(sse: bool) -> (Server, String, Arc<Mutex<Vec<Option<String>>>>) {
        fake_host_settling(sse, 2).await
    }

    /// [`fake_host`] whose run reads `completed` once `settled_after` stream connections
    /// were opened.
    async fn fake_host_settling(
        sse: bool,
        settled_after: usize,
    ) -> (Server, String, Arc<Mutex<Vec<Option<String>>>>) {
        type Seen = Arc<Mutex<Vec<Option<String>>>>;
        let seen: Seen = Arc::default();
        let stream = |seen: Seen, request: Request| async move {
            let last = request
                .headers
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
            response::with_type(StatusCode::OK, "text/event-stream", body.into())
        };
        let run = move |seen: Seen, _: Request| async move {
            let done = seen.lock().unwrap().len() >= settled_after;
            response::json(
                StatusCode::OK,
                &json!({"runId": "r1", "status": if done { "completed" } else { "running" }}),
            )
        };
        let poll = |_: Seen, _: Request| async {
            response::json(
                StatusCode::OK,
                &json!({"runId": "r1", "events": [envelope(0, "run.started"), envelope(1, "run.completed")], "lastSequence": 1, "status": "completed", "isTerminal": true}),
            )
        };
        let mut router = Router::new(seen.clone())
            .get("/runs/r1", run)
            .get("/runs/r1/events/poll", poll);
        if sse {
            router = router.get("/runs/r1/events", stream);
        }
        let (server, url) = serve(router).await;
        (server, url, seen)
    }

    /// Serves `router` on 127.0.0.1: the server (alive while the caller holds it) and its URL.
    async fn serve<S: Clone + Send + Sync + 'static>(router: Router<S>) -> (Server, String) {
        let server = Server::bind(([127, 0, 0, 1], 0).into(), router)
            .await
            .unwrap();
        let url = format!("http://{}", server.local_addr());
        (server, url)
    }

    /// `GET /runs/r1` (or `/v1/runs/r1`) of a run that reads `status`.
    async fn run_reads(status: &'static str) -> loopback_http::Response {
        response::json(StatusCode::OK, &json!({"runId": "r1", "status": status}))
    }

    async fn read_events(url: &str) -> Value {
        read_events_scaled(url, 0.3).await.0
    }

    /// The `events` step's observation and transcript, with budgets scaled by `scale`.
    async fn read_events_scaled(url: &str, scale: f64) -> (Value, Transcript) {
        read_events_on(url, scale, WireMajor::V2).await
    }

    /// [`read_events_scaled`] against a host of wire major `wire`.
    async fn read_events_on(url: &str, scale: f64, wire: WireMajor) -> (Value, Transcript) {
        let mut client = HostClient::new(
            url,
            BTreeMap::from([("operator".to_string(), "t".to_string())]),
            Budgets::scaled(scale),
        )
        .unwrap();
        client.set_wire(wire);
        let receiver = Receiver::start().await.unwrap();
        let provider = mock_provider::MockProvider::start().await.unwrap();
        let mcp = crate::witness::McpServer::start().await.unwrap();
        let discovery = Discovery {
            document: json!({}),
            wire,
            wire_reason: String::new(),
            etag: None,
            sha256: String::new(),
            exchanges: vec![],
        };
        let surfaces = toolcert_core::suite::Surfaces::default();
        let log_reads = LogReads::default();
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
            log_reads: &log_reads,
        };
        let step = Step::Events(EventsRead {
            name: "log".into(),
            run: "r1".into(),
            role: "operator".into(),
        });
        ctx.run(&step).await;
        (ctx.doc["steps"]["log"].clone(), ctx.transcript)
    }

    #[test]
    fn reads_cut_in_a_row_stop_the_rest_and_one_that_ends_resets_the_count() {
        let reads = LogReads::default();
        let budget = Duration::from_secs(30);
        reads.cut("cut one", budget);
        reads.ended();
        for _ in 1..LOG_CUTS_AFTER {
            reads.cut("cut again", budget);
        }
        assert_eq!(reads.stopped(), None, "a read that ended broke the streak");
        reads.cut("the last cut", budget);
        let why = reads.stopped().unwrap();
        assert!(
            why.contains("the last cut") && why.contains("30000 ms"),
            "{why}"
        );
        assert!(
            why.contains("toolcert cannot witness the end of the run"),
            "{why}"
        );
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
                ..Collected::new("poll")
            },
        )
        .to_value();
        assert_eq!(obs["errorCodes"], json!(["b.x", "forbidden"]));
    }

    #[tokio::test]
    async fn a_stream_that_ends_early_is_resumed_with_last_event_id() {
        let (_host, url, seen) = fake_host(true).await;
        let obs = read_events(&url).await;
        assert_eq!(obs["via"], "sse");
        assert_eq!(obs["count"], 4, "{obs}");
        assert_eq!(obs["status"], "completed");
        // The run settles after the second connection, so a third, opened on the settled
        // run, is the one that ends the read.
        assert_eq!(obs["reconnects"], 2);
        assert_eq!(
            *seen.lock().unwrap(),
            vec![None, Some("1".to_string()), Some("3".to_string())]
        );
        assert_eq!(obs["pairing"]["calls"], 1);
    }

    #[tokio::test]
    async fn a_run_that_settles_after_its_stream_went_quiet_is_read_to_its_end() {
        // The first connection ends after two events while the run still runs; by the time
        // toolcert looks, the run has completed with two more events. A status read after the
        // connection would take that log of two for the whole one.
        let (_host, url, seen) = fake_host_settling(true, 1).await;
        let obs = read_events(&url).await;
        assert_eq!(obs["count"], 4, "{obs}");
        assert_eq!(
            obs["types"],
            json!([
                "run.started",
                "agent.tool-called",
                "agent.tool-returned",
                "run.completed"
            ])
        );
        assert_eq!(obs["pairing"]["callsWithoutReturn"], json!([]));
        assert_eq!(*seen.lock().unwrap(), vec![None, Some("1".to_string())]);
    }

    #[tokio::test]
    async fn a_poll_that_shows_the_run_settled_is_confirmed_by_one_more() {
        // A host that reads the run's status after its events: the first answer says
        // `completed` but holds only the events read before the run went on; the rest come
        // to the next poll. Judged on the first answer alone, the call would have no return.
        type Polls = Arc<Mutex<Vec<String>>>;
        let polls: Polls = Arc::default();
        let poll = |polls: Polls, request: Request| async move {
            let query = request.uri.query().unwrap_or_default().to_string();
            polls.lock().unwrap().push(query.clone());
            let events = if query.contains("afterSequence=-1") {
                vec![envelope(0, "run.started"), envelope(1, "agent.tool-called")]
            } else if query.contains("afterSequence=1&") || query.ends_with("afterSequence=1") {
                vec![
                    envelope(2, "agent.tool-returned"),
                    envelope(3, "run.completed"),
                ]
            } else {
                vec![]
            };
            response::json(
                StatusCode::OK,
                &json!({"runId": "r1", "events": events, "status": "completed", "isTerminal": true}),
            )
        };
        let router = Router::new(polls.clone())
            .get("/runs/r1", |_: Polls, _: Request| run_reads("completed"))
            .get("/runs/r1/events/poll", poll);
        let (_server, url) = serve(router).await;
        let obs = read_events(&url).await;
        assert_eq!(obs["via"], "poll");
        assert_eq!(obs["count"], 4, "{obs}");
        assert_eq!(obs["pairing"]["callsWithoutReturn"], json!([]));
        let polls = polls.lock().unwrap().clone();
        assert_eq!(polls.len(), 3, "{polls:?}");
        // Only the first poll long-polls; the confirming ones do not wait.
        assert!(polls[0].contains("timeout=1") && !polls[1].contains("timeout"));
    }

    #[tokio::test]
    async fn a_stream_of_compact_v1_frames_is_not_taken_for_the_log() {
        // The openwop-examples in-memory host frames its stream `{seq, runId, type, …}`, no
        // `sequence` and no `payload`, and serves the envelopes on its poll. Dropping the
        // frames would read as an empty log of a completed run.
        let stream = |_: (), _: Request| async {
            let body: String = ["run.started", "run.completed"]
                .iter()
                .enumerate()
                .map(|(i, ty)| {
                    let frame = json!({"seq": i, "runId": "r1", "type": ty});
                    format!("id: {i}\nevent: {ty}\ndata: {frame}\n\n")
                })
                .collect();
            response::with_type(StatusCode::OK, "text/event-stream", body.into())
        };
        let poll = |_: (), _: Request| async {
            response::json(
                StatusCode::OK,
                &json!({"runId": "r1", "events": [envelope(0, "run.started"), envelope(1, "run.completed")], "status": "completed", "isTerminal": true}),
            )
        };
        let router = Router::new(())
            .get("/runs/r1", |_: (), _: Request| run_reads("completed"))
            .get("/runs/r1/events", stream)
            .get("/runs/r1/events/poll", poll);
        let (_server, url) = serve(router).await;
        let (obs, transcript) = read_events_scaled(&url, 0.3).await;
        assert_eq!(obs["via"], "poll", "{obs}");
        assert_eq!(obs["types"], json!(["run.started", "run.completed"]));
        let streamed = transcript
            .exchanges
            .iter()
            .find_map(|e| {
                e.response_body
                    .as_ref()
                    .filter(|b| b.get("sseEvents").is_some())
            })
            .unwrap();
        assert_eq!(streamed["notEnvelopes"], 2, "{streamed}");
    }

    #[tokio::test]
    async fn compact_frames_and_no_poll_block_the_read_and_say_why() {
        let stream = |_: (), _: Request| async {
            let frame = json!({"seq": 0, "runId": "r1", "type": "run.started"});
            let body = format!("id: 0\ndata: {frame}\n\n");
            response::with_type(StatusCode::OK, "text/event-stream", body.into())
        };
        let router = Router::new(())
            .get("/runs/r1", |_: (), _: Request| run_reads("completed"))
            .get("/runs/r1/events", stream);
        let (_server, url) = serve(router).await;
        let obs = read_events(&url).await;
        let reason = blocked_reason(&obs);
        assert!(
            reason
                .contains("whose events carry a `sequence` (1 of its events of the run had none)"),
            "{reason}"
        );
    }

    #[tokio::test]
    async fn a_v1_poll_that_ignores_last_sequence_is_read_with_since() {
        // The v1 example hosts: `lastSequence` is ignored (every answer starts at sequence 0),
        // `since` is honoured, the status is `runStatus`, and a poll is answered at once. The
        // run completes at the fourth poll.
        type Polls = Arc<Mutex<Vec<String>>>;
        let polls: Polls = Arc::default();
        let poll = |polls: Polls, request: Request| async move {
            let query = request.uri.query().unwrap_or_default().to_string();
            let n = {
                let mut polls = polls.lock().unwrap();
                polls.push(query.clone());
                polls.len()
            };
            let done = n >= 4;
            let log: Vec<Value> = [
                "run.started",
                "node.started",
                "node.completed",
                "run.completed",
            ]
            .iter()
            .enumerate()
            .take(if done { 4 } else { 2 })
            .map(|(i, ty)| envelope(i as i64, ty))
            .collect();
            let since = query
                .split('&')
                .find_map(|kv| kv.strip_prefix("since="))
                .and_then(|v| v.parse::<i64>().ok());
            let events: Vec<Value> = log
                .into_iter()
                .filter(|e| since.is_none_or(|s| e["sequence"].as_i64().unwrap() > s))
                .collect();
            response::json(
                StatusCode::OK,
                &json!({"runId": "r1", "events": events, "runStatus": if done { "completed" } else { "running" }, "isTerminal": done}),
            )
        };
        let router = Router::new(polls.clone())
            .get("/v1/runs/r1", |_: Polls, _: Request| run_reads("running"))
            .get("/v1/runs/r1/events/poll", poll);
        let (_server, url) = serve(router).await;
        let started = std::time::Instant::now();
        let (obs, _) = read_events_on(&url, 0.3, WireMajor::V1).await;
        assert_eq!(obs["via"], "poll", "{obs}");
        assert_eq!(obs["count"], 4, "{obs}");
        assert_eq!(obs["status"], "completed");
        let polls = polls.lock().unwrap().clone();
        assert!(polls[0].contains("lastSequence=-1"), "{polls:?}");
        assert!(polls[2].contains("since=1"), "{polls:?}");
        // Answers that brought nothing new at once were followed by a pause, not a busy loop.
        assert!(
            started.elapsed() >= super::POLL_PAUSE,
            "{:?}",
            started.elapsed()
        );
    }

    #[tokio::test]
    async fn a_host_without_a_stream_is_read_by_polling() {
        let (_host, url, _) = fake_host(false).await;
        let obs = read_events(&url).await;
        assert_eq!(obs["via"], "poll");
        assert_eq!(obs["types"], json!(["run.started", "run.completed"]));
        assert_eq!(obs["settled"], true);
    }

    /// What the hostile loopback host does on `/runs/r1/events` (SSE) and its poll.
    #[derive(Clone, Copy)]
    enum Endless {
        /// An endless stream: events of about `size` bytes, `pause` between them.
        Stream { size: usize, pause: Duration },
        /// No stream; every poll answers `per_poll` new events and a run still running.
        Poll { per_poll: usize },
        /// A stream that sends the same one event and ends at once: quiet, never settled.
        Quiet,
    }

    /// A raw-socket host that never lets run r1 settle: `GET /runs/r1` answers `running`, and
    /// the event log is endless as `mode` says.
    async fn endless_host(mode: Endless) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let next_seq = Arc::new(std::sync::atomic::AtomicI64::new(0));
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                let next_seq = next_seq.clone();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 8192];
                    let n = s.read(&mut buf).await.unwrap_or(0);
                    let head = String::from_utf8_lossy(&buf[..n]).to_string();
                    let path = head.split_whitespace().nth(1).unwrap_or("").to_string();
                    let seq = || next_seq.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let json = |body: String| {
                        format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                            body.len()
                        )
                    };
                    match mode {
                        Endless::Stream { size, pause }
                            if path.starts_with("/runs/r1/events") && !path.contains("/poll") =>
                        {
                            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n";
                            if s.write_all(head.as_bytes()).await.is_err() {
                                return;
                            }
                            loop {
                                let n = seq();
                                let mut e = envelope(n, "agent.tool-called");
                                e["payload"] = json!({"pad": "p".repeat(size)});
                                let frame = format!("id: {n}\ndata: {e}\n\n");
                                if s.write_all(frame.as_bytes()).await.is_err() {
                                    return;
                                }
                                if !pause.is_zero() {
                                    tokio::time::sleep(pause).await;
                                }
                            }
                        }
                        Endless::Quiet
                            if path.starts_with("/runs/r1/events") && !path.contains("/poll") =>
                        {
                            let frame = format!("id: 0\ndata: {}\n\n", envelope(0, "run.started"));
                            let _ = s
                                .write_all(
                                    format!(
                                        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{frame}",
                                        frame.len()
                                    )
                                    .as_bytes(),
                                )
                                .await;
                        }
                        Endless::Poll { per_poll } if path.starts_with("/runs/r1/events/poll") => {
                            let events: Vec<Value> = (0..per_poll)
                                .map(|_| envelope(seq(), "agent.tool-called"))
                                .collect();
                            let body = json!({"runId": "r1", "events": events, "status": "running", "isTerminal": false});
                            let _ = s.write_all(json(body.to_string()).as_bytes()).await;
                        }
                        _ if path.starts_with("/runs/r1/events") => {
                            let _ = s.write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n").await;
                        }
                        _ => {
                            let body = json!({"runId": "r1", "status": "running"}).to_string();
                            let _ = s.write_all(json(body).as_bytes()).await;
                        }
                    }
                });
            }
        });
        url
    }

    /// The reason of a `blocked` observation.
    fn blocked_reason(obs: &Value) -> String {
        match NotObserved::state_of(obs) {
            Some((Unobserved::Blocked, reason)) => reason,
            _ => panic!("not blocked: {obs}"),
        }
    }

    fn assert_cut(obs: &Value, cap: &str) {
        let reason = blocked_reason(obs);
        let typed: NotObserved = serde_json::from_value(obs.clone()).unwrap();
        assert!(matches!(typed.context, Context::Cut { .. }), "{typed:?}");
        assert_eq!(&typed.to_value(), obs, "the typed form round-trips");
        assert!(
            reason.contains("cannot witness the end of the run"),
            "{reason}"
        );
        assert_eq!(obs["truncated"]["cap"], cap, "{obs}");
        assert_eq!(
            obs["truncated"]["reason"]
                .as_str()
                .map(|r| reason.starts_with(r)),
            Some(true)
        );
        // Nothing a check reads is there outside the blocked marker.
        assert!(obs.get("events").is_none() && obs.get("count").is_none());
        let kept = obs["partial"]["events"].as_array().unwrap();
        assert_eq!(obs["partial"]["kept"], kept.len());
        assert!(serde_json::to_vec(obs).unwrap().len() < 2 * PARTIAL_KEPT_BYTES);
    }

    #[tokio::test]
    async fn an_endless_stream_is_cut_at_the_event_cap_and_recorded_as_blocked() {
        let url = endless_host(Endless::Stream {
            size: 10,
            pause: Duration::ZERO,
        })
        .await;
        let started = std::time::Instant::now();
        let (obs, transcript) = read_events_scaled(&url, 0.3).await;
        assert_cut(&obs, "events");
        assert_eq!(obs["truncated"]["received"], MAX_EVENTS);
        assert_eq!(obs["partial"]["count"], MAX_EVENTS);
        assert!(blocked_reason(&obs).contains(&format!("more than {MAX_EVENTS} events")));
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(
            transcript
                .exchanges
                .last()
                .unwrap()
                .response_body
                .as_ref()
                .unwrap()["ended"],
            "cap:events"
        );
    }

    #[tokio::test]
    async fn an_endless_stream_of_large_events_is_cut_at_the_byte_cap() {
        let url = endless_host(Endless::Stream {
            size: 64 * 1024,
            pause: Duration::ZERO,
        })
        .await;
        let (obs, _) = read_events_scaled(&url, 0.3).await;
        assert_cut(&obs, "bytes");
        let cap = Budgets::default().max_body_bytes;
        assert_eq!(obs["truncated"]["bytes"], cap);
        assert_eq!(obs["truncated"]["limit"], cap);
    }

    #[tokio::test]
    async fn a_stream_that_is_never_quiet_is_cut_at_the_time_budget() {
        // 40 ms between events: never the 50 ms quiet gap, far below the event cap.
        let url = endless_host(Endless::Stream {
            size: 10,
            pause: Duration::from_millis(40),
        })
        .await;
        let started = std::time::Instant::now();
        let (obs, _) = read_events_scaled(&url, 0.05).await;
        let elapsed = started.elapsed();
        assert_cut(&obs, "budget");
        assert_eq!(obs["truncated"]["limit"], 1_500);
        assert_eq!(obs["partial"]["status"], "running");
        assert!(elapsed < Duration::from_secs(4), "{elapsed:?}");
    }

    #[tokio::test]
    async fn a_quiet_log_of_a_run_that_never_settles_is_cut_not_judged() {
        // The host stops sending, but its run stays `running`: what was read may not be the
        // whole log, so a check counting its events could convict on events never sent yet.
        let url = endless_host(Endless::Quiet).await;
        let (obs, _) = read_events_scaled(&url, 0.05).await;
        assert_cut(&obs, "budget");
        assert_eq!(obs["truncated"]["limit"], 1_500);
        assert!(
            blocked_reason(&obs).contains("had not settled (status `running`)"),
            "{obs}"
        );
        assert_eq!(obs["partial"]["count"], 1);
    }

    #[tokio::test]
    async fn an_endless_poll_is_cut_at_the_event_cap_or_the_polls() {
        let url = endless_host(Endless::Poll { per_poll: 120 }).await;
        let (obs, _) = read_events_scaled(&url, 0.3).await;
        assert_cut(&obs, "events");
        assert_eq!(obs["partial"]["via"], "poll");
        assert_eq!(obs["partial"]["count"], MAX_EVENTS);
        let url = endless_host(Endless::Poll { per_poll: 1 }).await;
        let (obs, transcript) = read_events_scaled(&url, 0.3).await;
        assert_cut(&obs, "polls");
        assert_eq!(obs["partial"]["count"], super::MAX_POLLS);
        // The polls, plus the run status and the stream attempt made before falling back.
        assert!(transcript.exchanges.len() <= super::MAX_POLLS + 2);
    }

    #[tokio::test]
    async fn checks_on_a_cut_read_are_blocked_with_its_reason_never_judged() {
        let url = endless_host(Endless::Stream {
            size: 10,
            pause: Duration::ZERO,
        })
        .await;
        let (obs, _) = read_events_scaled(&url, 0.3).await;
        let reason = blocked_reason(&obs);
        // HOOKS-FAIL-7 over a log whose controls hold: the tool ran, and the partial log's
        // events would otherwise be read as "no error codes" (a fail) or as all registered.
        let suite = toolcert_core::suite::Suite::embedded().unwrap();
        let scenario = suite.scenario("hooks.event-error-codes").unwrap();
        let doc = json!({
            "receivers": {"ledger": {"count": 1}, "broken": {"count": 1}},
            "steps": {"log": obs},
        });
        let checks = toolcert_core::expect::evaluate(&suite, scenario, &doc, Some(2));
        let on_log: Vec<_> = checks
            .iter()
            .filter(|c| c.check_id != "tool-reached")
            .collect();
        assert_eq!(on_log.len(), 2, "{checks:?}");
        for c in on_log {
            assert_eq!(
                c.status,
                toolcert_core::verdict::CheckStatus::Blocked,
                "{c:?}"
            );
            assert!(c.detail.contains(&reason), "{c:?}");
        }
    }
}
