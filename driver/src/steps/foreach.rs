//! `foreach`: the same seam call made `count` times in a row, `{{loop.index}}` counting from 0.
//!
//! Used to repeat a race over many fresh effect ids within one scenario (EFF-4): a race that
//! is won by luck once is rarely won by luck sixteen times.

use serde_json::{Value, json};

use super::ctx::{Flow, ScenarioCtx};
use super::seam;
use toolcert_core::observation::{ForeachObservation, Observation};
use toolcert_core::suite::ForeachSpec;

pub(super) async fn run(
    ctx: &mut ScenarioCtx<'_>,
    spec: &ForeachSpec,
) -> (Observation<ForeachObservation>, Flow) {
    let mut items = Vec::with_capacity(spec.count as usize);
    let mut call = spec.call.clone();
    call.name = spec.name.clone();
    for index in 0..spec.count {
        ctx.doc["loop"] = json!({"index": index});
        match seam::run(ctx, &call).await {
            (Observation::Made(obs), _) => items.push(obs),
            (Observation::NotMade(not_made), flow) => {
                ctx.doc["loop"] = Value::Null;
                return (not_made.into(), flow);
            }
        }
    }
    ctx.doc["loop"] = Value::Null;
    let seen = ForeachObservation {
        count: items.len(),
        items,
    };
    (Observation::Made(seen), Flow::Continue)
}
