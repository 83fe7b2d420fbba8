//! `events`: read a run's events from the host's durable log (debug stream mode, poll read).
//!
//! Polls `GET /runs/{runId}/events/poll?afterSequence=N&streamMode=debug&timeout=1` until the
//! run is terminal, de-duplicating by `sequence` and never concluding "no events" from one
//! poll (C-20). Bounded by a number of polls and the request budget.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{Flow, ScenarioCtx, blocked, require_role, template_failure, transport_failure};
use crate::host::{HostRequest, WireMajor};
use crate::suite::EventsRead;

const MAX_POLLS: usize = 20;

/// The concept behind a wire event name, for both majors (v2 names per the event codemap).
fn concept_of(wire_name: &str) -> Option<&'static str> {
    Some(match wire_name {
        "agent.toolCalled" | "agent.tool-called" => "toolCalled",
        "agent.toolReturned" | "agent.tool-returned" => "toolReturned",
        "authorization.decided" => "authorizationDecided",
        "tool.session.opened" | "tool.session-opened" => "toolSessionOpened",
        "tool.session.closed" | "tool.session-closed" => "toolSessionClosed",
        _ => return None,
    })
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
        Err(e) => return (template_failure(&e, &ctx.doc), Flow::Continue),
    };
    let cursor = match ctx.client.wire() {
        WireMajor::V2 => "afterSequence",
        WireMajor::V1 => "lastSequence",
    };
    let mut by_sequence: BTreeMap<i64, Value> = BTreeMap::new();
    let mut after: i64 = -1;
    let mut status = Value::Null;
    let mut terminal = false;
    for _ in 0..MAX_POLLS {
        let path = ctx.client.wire().api_path(&format!(
            "/runs/{run_id}/events/poll?{cursor}={after}&streamMode=debug&timeout=1"
        ));
        let resp = match ctx
            .send(&read.name, &HostRequest::get(path).role(read.role.clone()))
            .await
        {
            Ok(r) => r,
            Err(e) => return transport_failure(&e),
        };
        if resp.status == 404 || resp.status == 405 {
            return (
                blocked(format!(
                    "the host serves no event poll for run {run_id} (HTTP {})",
                    resp.status
                )),
                Flow::Continue,
            );
        }
        if resp.status != 200 {
            // An answer that is neither the log nor "not served" is a wrong answer.
            return (
                json!({"$fail": format!("the event poll for run {run_id} answered HTTP {}", resp.status), "poll": resp.observation()}),
                Flow::Continue,
            );
        }
        let events = resp
            .body
            .get("events")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for e in events {
            if let Some(seq) = e.get("sequence").and_then(Value::as_i64) {
                after = after.max(seq);
                by_sequence.entry(seq).or_insert(e);
            }
        }
        status = resp.body.get("status").cloned().unwrap_or(Value::Null);
        terminal = resp.body.get("isTerminal") == Some(&Value::Bool(true));
        if terminal {
            break;
        }
    }
    let events: Vec<Value> = by_sequence.into_values().collect();
    let mut by_type: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for e in &events {
        let t = e
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        by_type.entry(t).or_default().push(e.clone());
    }
    let types: Vec<&Value> = events.iter().map(|e| &e["type"]).collect();
    // Concept names read the same on both majors (C-22): the wire names differ per major.
    let mut by_concept: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
    for e in &events {
        if let Some(concept) = e.get("type").and_then(Value::as_str).and_then(concept_of) {
            by_concept.entry(concept).or_default().push(e.clone());
        }
    }
    (
        json!({
            "runId": run_id,
            "status": status,
            "isTerminal": terminal,
            "count": events.len(),
            "types": types,
            "byType": by_type,
            "byConcept": by_concept,
            "events": events,
        }),
        Flow::Continue,
    )
}
