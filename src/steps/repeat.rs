//! `repeat`: make the same seam call until a condition holds, at most `max` times.
//!
//! Used to exhaust a rate-limit bucket with real calls (HOOKS-RL-1): the observation keeps
//! the first and last answers, every status, and how many calls the host reported `ok`. The
//! answer that met the condition is `met`; when none did within `max` calls, `met` is a
//! `$blocked` observation, so checks of that answer (a refusal's shape) are never judged
//! against an answer that was not a refusal, while the counts can still be.

use serde_json::{Value, json};

use super::{Flow, ScenarioCtx, seam};
use crate::expect::matches;
use crate::suite::RepeatSpec;

pub(super) async fn run(ctx: &mut ScenarioCtx<'_>, spec: &RepeatSpec) -> (Value, Flow) {
    let mut statuses = Vec::new();
    let mut ok_count = 0u32;
    let mut first = Value::Null;
    let mut last = Value::Null;
    let mut met = false;
    let mut call = spec.call.clone();
    call.name = spec.name.clone();
    for i in 0..spec.max {
        let (obs, flow) = seam::run(ctx, &call).await;
        if obs.get("$blocked").is_some() || obs.get("$error").is_some() {
            return (obs, flow);
        }
        statuses.push(obs["http"]["status"].clone());
        if obs["toolReturned"]["status"] == "ok" {
            ok_count += 1;
        }
        if i == 0 {
            first = obs.clone();
        }
        met = matches(&spec.until.expect, obs.pointer(&spec.until.at), &ctx.doc).is_ok();
        last = obs;
        if met {
            break;
        }
    }
    let met_answer = if met {
        last.clone()
    } else {
        super::blocked(format!(
            "no answer met the condition at {} within {} calls (toolcert's bound)",
            spec.until.at, spec.max
        ))
    };
    (
        json!({
            "iterations": statuses.len(),
            "statuses": statuses,
            "okCount": ok_count,
            "conditionMet": met,
            "first": first,
            "last": last,
            "met": met_answer,
        }),
        Flow::Continue,
    )
}
