//! `burst`: `count` identical requests sent to the host at the same instant.
//!
//! A concurrent duplicate (IDEM-L1-4) must be processed once: the others wait for the same
//! answer or get `409 idempotency_in_flight`. The requests are built once and sent together.

use super::ctx::{Flow, ScenarioCtx, transport_failure};
use super::http;
use toolcert_core::observation::{BurstObservation, HttpObservation, Observation};
use toolcert_core::suite::BurstSpec;

pub(super) async fn run(
    ctx: &mut ScenarioCtx<'_>,
    spec: &BurstSpec,
) -> (Observation<BurstObservation>, Flow) {
    let req = match http::build(ctx, &spec.request) {
        Ok(r) => r,
        Err(obs) => return (obs.into(), Flow::Continue),
    };
    let client = ctx.client;
    let sends = (0..spec.count).map(|_| client.send(&spec.name, &req));
    let answers = futures_util::future::join_all(sends).await;
    let mut items: Vec<HttpObservation> = Vec::new();
    for (result, exchange) in answers {
        ctx.transcript.push(exchange);
        match result {
            Ok(resp) => items.push((&resp).into()),
            Err(e) => {
                let (obs, flow) = transport_failure(&e);
                return (obs.into(), flow);
            }
        }
    }
    let seen = BurstObservation {
        count: items.len(),
        statuses: items.iter().map(|i| i.status).collect(),
        items,
    };
    (Observation::Made(seen), Flow::Continue)
}
