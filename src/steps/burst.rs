//! `burst`: `count` identical requests sent to the host at the same instant.
//!
//! A concurrent duplicate (IDEM-L1-4) must be processed once: the others wait for the same
//! answer or get `409 idempotency_in_flight`. The requests are built once and sent together.

use serde_json::{Value, json};

use super::{Flow, ScenarioCtx, http, transport_failure};
use crate::suite::BurstSpec;

pub(super) async fn run(ctx: &mut ScenarioCtx<'_>, spec: &BurstSpec) -> (Value, Flow) {
    let req = match http::build(ctx, &spec.request) {
        Ok(r) => r,
        Err(obs) => return (obs, Flow::Continue),
    };
    let client = ctx.client;
    let sends = (0..spec.count).map(|_| client.send(&spec.name, &req));
    let answers = futures_util::future::join_all(sends).await;
    let mut items = Vec::new();
    for (result, exchange) in answers {
        ctx.transcript.push(exchange);
        match result {
            Ok(resp) => items.push(resp.observation()),
            Err(e) => return transport_failure(&e),
        }
    }
    let statuses: Vec<Value> = items.iter().map(|i| i["status"].clone()).collect();
    (
        json!({"count": items.len(), "statuses": statuses, "items": items}),
        Flow::Continue,
    )
}
