//! `repeat`: make the same seam call until a condition holds, at most `max` times.
//!
//! Used to exhaust a rate-limit bucket with real calls (HOOKS-RL-1): the observation keeps
//! the first and last answers, every status, and how many calls the host reported `ok`. The
//! answer that met the condition is `met`; when none did within `max` calls, `met` is a
//! `blocked` observation, so checks of that answer (a refusal's shape) are never judged
//! against an answer that was not a refusal, while the counts can still be.

use serde_json::Value;

use super::ctx::{Flow, ScenarioCtx};
use super::seam;
use toolcert_core::expect::matches;
use toolcert_core::observation::{NotObserved, Observation, RepeatObservation, SeamObservation};
use toolcert_core::suite::RepeatSpec;

pub(super) async fn run(
    ctx: &mut ScenarioCtx<'_>,
    spec: &RepeatSpec,
) -> (Observation<RepeatObservation>, Flow) {
    let mut statuses = Vec::new();
    let mut ok_count = 0u32;
    let mut first: Option<SeamObservation> = None;
    let mut last: Option<SeamObservation> = None;
    let mut met = false;
    let mut call = spec.call.clone();
    call.name = spec.name.clone();
    for i in 0..spec.max {
        let obs = match seam::run(ctx, &call).await {
            (Observation::Made(obs), _) => obs,
            (Observation::NotMade(not_made), flow) => return (not_made.into(), flow),
        };
        statuses.push(obs.http.status);
        if obs
            .tool_returned
            .as_ref()
            .is_some_and(|r| r["status"] == "ok")
        {
            ok_count += 1;
        }
        if i == 0 {
            first = Some(obs.clone());
        }
        // The condition is a matcher over the answer's JSON form, as checks see it.
        let seen = serde_json::to_value(&obs).unwrap_or(Value::Null);
        met = matches(&spec.until.expect, seen.pointer(&spec.until.at), &ctx.doc).is_ok();
        last = Some(obs);
        if met {
            break;
        }
    }
    let met_answer = match (&last, met) {
        (Some(answer), true) => Observation::Made(answer.clone()),
        _ => NotObserved::blocked(format!(
            "no answer met the condition at {} within {} calls (toolcert's bound)",
            spec.until.at, spec.max
        ))
        .into(),
    };
    let seen = RepeatObservation {
        iterations: statuses.len(),
        statuses,
        ok_count,
        condition_met: met,
        first,
        last,
        met: met_answer,
    };
    (Observation::Made(seen), Flow::Continue)
}
