//! `http`: one request to the host, recorded as `{status, headers, body}`.
//!
//! With `abandon`, toolcert drops the request (and its connection) before the answer once a
//! double has seen the point's requests, so the host is demonstrably working on it: a client
//! that goes away while the host still owes the answer (MCP-14). The step then records an
//! [`AbandonObservation`]; a point not reached within the request budget is `blocked`, since
//! nothing the row is about was put to the test.

use std::time::Duration;

use serde_json::Value;

use super::ctx::{Flow, ScenarioCtx, require_role, transport_failure};
use crate::host::{HostRequest, Sent};
use toolcert_core::observation::{AbandonObservation, HttpObservation, NotObserved, Observation};
use toolcert_core::suite::{AbandonPoint, HttpCall};

/// How often an abandon point is looked at.
const POLL: Duration = Duration::from_millis(10);

pub(super) async fn run(
    ctx: &mut ScenarioCtx<'_>,
    call: &HttpCall,
) -> (Observation<HttpObservation>, Flow) {
    let req = match build(ctx, call) {
        Ok(r) => r,
        Err(obs) => return (obs.into(), Flow::Continue),
    };
    match ctx.send(&call.name, &req).await {
        Ok(resp) => (Observation::Made((&resp).into()), Flow::Continue),
        Err(e) => {
            let (obs, flow) = transport_failure(&e);
            (obs.into(), flow)
        }
    }
}

/// An `http` step with `abandon`: send, and drop the request once the point is reached.
pub(super) async fn run_abandoning(
    ctx: &mut ScenarioCtx<'_>,
    call: &HttpCall,
    point: &AbandonPoint,
) -> (Observation<AbandonObservation>, Flow) {
    let req = match build(ctx, call) {
        Ok(r) => r,
        Err(obs) => return (obs.into(), Flow::Continue),
    };
    let (sent, exchange) = {
        let ctx: &ScenarioCtx<'_> = ctx;
        ctx.client
            .send_abandoning(&call.name, &req, reached(ctx, point))
            .await
    };
    let after_ms = exchange.elapsed_ms;
    ctx.transcript.push(exchange);
    match sent {
        Ok(Sent::Abandoned(seen)) => (
            Observation::Made(AbandonObservation {
                abandoned: true,
                after_ms,
                point: Some(seen),
                answer: None,
            }),
            Flow::Continue,
        ),
        Ok(Sent::Answered(resp)) => (
            Observation::Made(AbandonObservation {
                abandoned: false,
                after_ms,
                point: None,
                answer: Some((&resp).into()),
            }),
            Flow::Continue,
        ),
        Ok(Sent::Unreached) => (
            NotObserved::blocked(format!(
                "the host neither answered nor reached the point ({}) within {after_ms} ms, so no request was dropped while the host worked on it",
                describe(ctx, point).0
            ))
            .into(),
            Flow::Continue,
        ),
        Err(e) => {
            let (obs, flow) = transport_failure(&e);
            (obs.into(), flow)
        }
    }
}

/// Resolves once the point's double has seen `count` requests, with what it saw.
async fn reached(ctx: &ScenarioCtx<'_>, point: &AbandonPoint) -> String {
    loop {
        let (what, seen) = describe(ctx, point);
        if seen >= point.count {
            return format!("{what} saw {seen} request(s)");
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The point's double, named, and how many requests it has seen.
fn describe(ctx: &ScenarioCtx<'_>, point: &AbandonPoint) -> (String, usize) {
    ctx.seen_by(point.receiver.as_deref(), point.provider.as_deref())
}

/// Render a request, or the observation saying why it cannot be made.
pub(super) fn build(ctx: &ScenarioCtx<'_>, call: &HttpCall) -> Result<HostRequest, NotObserved> {
    if let Some(role) = &call.role
        && let Some(obs) = require_role(ctx, role)
    {
        return Err(obs);
    }
    let wire = ctx.client.wire();
    let path =
        match toolcert_core::template::render_path(&call.path, &ctx.doc, &|v| wire.id_segment(v)) {
            Ok(p) => p,
            Err(e) => return Err(ctx.template_failure(&e)),
        };
    // A path can come from the host profile (`{{facts.mcpServerPath}}`): one that is not
    // absolute is the operator's to fix, and nothing is sent.
    if !path.starts_with('/') {
        return Err(NotObserved::blocked(format!(
            "the path {:?} renders to {path:?}, which does not start with /; fix the host profile value it names",
            call.path
        )));
    }
    let path = if call.raw {
        path
    } else {
        ctx.client.wire().api_path(&path)
    };
    let method = match call.method.parse::<reqwest::Method>() {
        Ok(m) => m,
        Err(_) => return Err(NotObserved::error(format!("bad method {}", call.method))),
    };
    let mut req = HostRequest::get(path);
    req.method = method;
    req.role = call.role.clone();
    for (name, value) in &call.headers {
        match ctx.render(value) {
            Ok(Value::String(v)) => req.headers.push((name.clone(), v)),
            Ok(other) => req.headers.push((name.clone(), other.to_string())),
            Err(e) => return Err(ctx.template_failure(&e)),
        }
    }
    if let Some(body) = &call.body {
        match ctx.render(body) {
            Ok(b) => req.body = Some(b),
            Err(e) => return Err(ctx.template_failure(&e)),
        }
    }
    Ok(req)
}
