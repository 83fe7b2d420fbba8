//! `http`: one request to the host, recorded as `{status, headers, body}`.

use serde_json::Value;

use super::{Flow, ScenarioCtx, require_role, template_failure, transport_failure};
use crate::host::HostRequest;
use crate::suite::HttpCall;

pub(super) async fn run(ctx: &mut ScenarioCtx<'_>, call: &HttpCall) -> (Value, Flow) {
    if let Some(role) = &call.role
        && let Some(obs) = require_role(ctx, role)
    {
        return (obs, Flow::Continue);
    }
    let path = match crate::template::render_text(&call.path, &ctx.doc) {
        Ok(p) => p,
        Err(e) => return (template_failure(&e, &ctx.doc), Flow::Continue),
    };
    let path = if call.raw {
        path
    } else {
        ctx.client.wire().api_path(&path)
    };
    let method = match call.method.parse::<reqwest::Method>() {
        Ok(m) => m,
        Err(_) => {
            return (
                super::error(format!("bad method {}", call.method)),
                Flow::Continue,
            );
        }
    };
    let mut req = HostRequest::get(path);
    req.method = method;
    req.role = call.role.clone();
    for (name, value) in &call.headers {
        match ctx.render(value) {
            Ok(Value::String(v)) => req.headers.push((name.clone(), v)),
            Ok(other) => req.headers.push((name.clone(), other.to_string())),
            Err(e) => return (template_failure(&e, &ctx.doc), Flow::Continue),
        }
    }
    if let Some(body) = &call.body {
        match ctx.render(body) {
            Ok(b) => req.body = Some(b),
            Err(e) => return (template_failure(&e, &ctx.doc), Flow::Continue),
        }
    }
    match ctx.send(&call.name, &req).await {
        Ok(resp) => (resp.observation(), Flow::Continue),
        Err(e) => transport_failure(&e),
    }
}
