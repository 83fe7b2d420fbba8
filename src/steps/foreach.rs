//! `foreach`: the same seam call made `count` times in a row, `{{loop.index}}` counting from 0.
//!
//! Used to repeat a race over many fresh effect ids within one scenario (EFF-4): a race that
//! is won by luck once is rarely won by luck sixteen times.

use serde_json::{Value, json};

use super::{Flow, ScenarioCtx, seam};
use crate::suite::ForeachSpec;

pub(super) async fn run(ctx: &mut ScenarioCtx<'_>, spec: &ForeachSpec) -> (Value, Flow) {
    let mut items = Vec::with_capacity(spec.count as usize);
    let mut call = spec.call.clone();
    call.name = spec.name.clone();
    for index in 0..spec.count {
        ctx.doc["loop"] = json!({"index": index});
        let (obs, flow) = seam::run(ctx, &call).await;
        if obs.get("$blocked").is_some() || obs.get("$error").is_some() {
            ctx.doc["loop"] = Value::Null;
            return (obs, flow);
        }
        items.push(obs);
    }
    ctx.doc["loop"] = Value::Null;
    (
        json!({"count": items.len(), "items": items}),
        Flow::Continue,
    )
}
