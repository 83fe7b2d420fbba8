//! `release`: a holding receiver answers the calls it holds (and every later one at once).

use serde_json::{Value, json};

use super::{ScenarioCtx, error};
use crate::suite::ReleaseSpec;

pub(super) fn run(ctx: &mut ScenarioCtx<'_>, spec: &ReleaseSpec) -> Value {
    let Some((_, id)) = ctx.receivers.iter().find(|(n, _)| n == &spec.receiver) else {
        return error(format!("no receiver is named {}", spec.receiver));
    };
    match ctx.receiver.release(id) {
        Some(held) => json!({"released": true, "arrivedBefore": held}),
        None => error(format!("receiver {} is not registered", spec.receiver)),
    }
}
