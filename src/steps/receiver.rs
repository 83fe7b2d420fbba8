//! `receiver`: register a tool receiver endpoint for this scenario.

use std::time::Duration;

use serde_json::{Value, json};

use super::{ScenarioCtx, template_failure};
use crate::suite::ReceiverSpec;

pub(super) fn run(ctx: &mut ScenarioCtx<'_>, spec: &ReceiverSpec) -> Value {
    let body = match spec.body.as_ref().map(|b| ctx.render(b)) {
        None => json!({"ok": true}),
        Some(Ok(b)) => b,
        Some(Err(e)) => {
            let obs = template_failure(&e, &ctx.doc);
            ctx.doc["receivers"][&spec.name] = obs.clone();
            return obs;
        }
    };
    let id = format!("{}-{}", ctx.nonce, spec.name);
    let url = ctx.receiver.register(
        &id,
        spec.status,
        body,
        Duration::from_millis(spec.delay_ms),
        spec.fail_first.map(|f| (f.count, f.status)),
    );
    ctx.receivers.push((spec.name.clone(), id));
    let obs = json!({"url": url, "count": 0, "arrivals": []});
    ctx.doc["receivers"][&spec.name] = obs.clone();
    obs
}
