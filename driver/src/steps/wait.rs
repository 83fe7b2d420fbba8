//! `wait`: wait (bounded) until a point in the run is reached, seen at toolcert's doubles (a
//! receiver or a provider script has seen `count` requests).
//!
//! A `wait` step before a `host` kill chooses the point, so the host dies exactly where the
//! row needs it: while a tool call is held open (TURN-D8) or after a tool returned and the next
//! model request went out (TURN-D3). The wait is bounded; a point never reached makes it
//! `blocked`, and the checks resting on it with it, because what the row is about was never put
//! to the test. Specified in `toolcert_core::suite::step::wait`; documented in
//! `docs/authoring/steps.md`, section `wait`.

use std::time::{Duration, Instant};

use super::ctx::ScenarioCtx;
use toolcert_core::observation::{NotObserved, Observation, WaitObservation};
use toolcert_core::suite::{KillPoint, WaitSpec};

/// How often the kill point is looked at.
const POLL: Duration = Duration::from_millis(10);

/// `wait`: until a double has seen `count` requests (bounded; unmet is `blocked`).
pub(super) async fn run(
    ctx: &mut ScenarioCtx<'_>,
    spec: &WaitSpec,
) -> Observation<WaitObservation> {
    // A double whose driving step was not made will see nothing: say so at once instead of
    // waiting out the budget (a half-finished host must not cost a blocked scenario 20 s).
    let double = match (&spec.until.receiver, &spec.until.provider) {
        (Some(name), _) => format!("receivers.{name}"),
        (None, Some(name)) => format!("providers.{name}"),
        (None, None) => String::new(),
    };
    if let Some((_, state)) = ctx.tainted.iter().find(|(n, _)| *n == double) {
        return state.clone().into();
    }
    let started = Instant::now();
    let budget = ctx.client.budgets().request * 2;
    let deadline = started + budget;
    let mut next_look = started + RUNS_LOOK_AFTER;
    loop {
        let (what, seen) = seen_at(ctx, &spec.until);
        if seen >= spec.until.count {
            return Observation::Made(WaitObservation {
                reached: true,
                waited_ms: started.elapsed().as_millis() as u64,
            });
        }
        let unmet = || format!("{what} saw {seen} of {} request(s)", spec.until.count);
        if Instant::now() >= deadline {
            return NotObserved::blocked(format!(
                "the point was not reached within {} ms: {}",
                budget.as_millis(),
                unmet()
            ))
            .into();
        }
        // A point not reached at once: once the run whose tool loop makes it has ended, it
        // will not come, so the budget need not be waited out. (Only a terminal status counts;
        // a host that does not say keeps waiting.)
        if Instant::now() >= next_look {
            next_look = Instant::now() + RUNS_LOOK_EVERY;
            if let Some(ended) = run_ended(ctx, spec).await {
                let (_, seen) = seen_at(ctx, &spec.until);
                if seen < spec.until.count {
                    return NotObserved::blocked(format!(
                        "the point was not reached: {ended} first, and {}",
                        unmet()
                    ))
                    .into();
                }
            }
        }
        tokio::time::sleep(POLL).await;
    }
}

/// How long a wait goes before it first asks whether its run has ended.
const RUNS_LOOK_AFTER: Duration = Duration::from_millis(1000);
/// How often it asks again.
const RUNS_LOOK_EVERY: Duration = Duration::from_millis(500);

/// Statuses after which a run dispatches nothing more.
const TERMINAL: [&str; 4] = ["completed", "failed", "cancelled", "canceled"];

/// If the run that drives the point (`until.run`) is terminal, how it ended; `None` while
/// it is not, when the wait names no run, or when the host does not say.
async fn run_ended(ctx: &mut ScenarioCtx<'_>, spec: &WaitSpec) -> Option<String> {
    const ROLE: &str = "operator";
    let template = spec.until.run.as_deref()?;
    if !ctx.client.has_role(ROLE) {
        return None;
    }
    let run = match toolcert_core::template::render_str(template, &ctx.doc) {
        Ok(serde_json::Value::String(run)) if !run.is_empty() => run,
        _ => return None,
    };
    let status = super::events::run_status(ctx, &spec.name, ROLE, &run)
        .await
        .ok()?;
    let status = status.as_str().filter(|s| TERMINAL.contains(s))?;
    Some(format!("run {run} ended ({status})"))
}

fn seen_at(ctx: &ScenarioCtx<'_>, point: &KillPoint) -> (String, usize) {
    ctx.seen_by(point.receiver.as_deref(), point.provider.as_deref())
}
