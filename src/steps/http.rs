//! `http`: one request to the host, recorded as `{status, headers, body}`.

use serde_json::Value;

use super::{Flow, ScenarioCtx, require_role, transport_failure};
use crate::host::HostRequest;
use crate::observation::{HttpObservation, NotObserved, Observation};
use crate::suite::HttpCall;

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

/// Render a request, or the observation saying why it cannot be made.
pub(super) fn build(ctx: &ScenarioCtx<'_>, call: &HttpCall) -> Result<HostRequest, NotObserved> {
    if let Some(role) = &call.role
        && let Some(obs) = require_role(ctx, role)
    {
        return Err(obs);
    }
    let path = match crate::template::render_text(&call.path, &ctx.doc) {
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
