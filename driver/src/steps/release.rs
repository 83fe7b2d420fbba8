//! `release`: a holding receiver answers the calls it holds (and every later one at once).

use super::ctx::ScenarioCtx;
use toolcert_core::observation::{NotObserved, Observation, ReleaseObservation};
use toolcert_core::suite::ReleaseSpec;

pub(super) fn run(
    ctx: &mut ScenarioCtx<'_>,
    spec: &ReleaseSpec,
) -> Observation<ReleaseObservation> {
    let Some((_, id)) = ctx.receivers.iter().find(|(n, _)| n == &spec.receiver) else {
        return NotObserved::error(format!("no receiver is named {}", spec.receiver)).into();
    };
    match ctx.receiver.release(id) {
        Some(held) => Observation::Made(ReleaseObservation {
            released: true,
            arrived_before: held,
        }),
        None => NotObserved::error(format!("receiver {} is not registered", spec.receiver)).into(),
    }
}
