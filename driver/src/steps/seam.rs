//! `seam`: call a sample test seam and normalize the answer.
//!
//! The tool-hooks seam answers `{runId, toolCalled, toolReturned}` on 200 and the error
//! envelope on 403/429, where hosts put the same objects under `details` (C-21). The
//! observation lifts them to the top so checks read one place: `/http`, `/body`, `/runId`,
//! `/toolCalled`, `/toolReturned`.

use serde_json::Value;

use super::ctx::{Flow, ScenarioCtx, require_role, transport_failure};
use crate::host::{HostRequest, HostResponse};
use toolcert_core::observation::{HttpHead, NotObserved, Observation, SeamObservation};
use toolcert_core::suite::{SeamCall, SeamMethod, SurfaceKind, field_id, seam_id};

pub(super) async fn run(
    ctx: &mut ScenarioCtx<'_>,
    call: &SeamCall,
) -> (Observation<SeamObservation>, Flow) {
    match answer(ctx, call).await {
        Ok(resp) => (Observation::Made(normalize(&resp)), Flow::Continue),
        Err((obs, flow)) => (obs.into(), flow),
    }
}

/// Make the call; the host's answer when it is one to observe, else why there is none.
async fn answer(
    ctx: &mut ScenarioCtx<'_>,
    call: &SeamCall,
) -> Result<HostResponse, (NotObserved, Flow)> {
    let blocked = |reason: String| Err((NotObserved::blocked(reason), Flow::Continue));
    if let Some(obs) = require_role(ctx, &call.role) {
        return Err((obs, Flow::Continue));
    }
    let body = match ctx.render(&call.body) {
        Ok(b) => b,
        Err(e) => return Err((ctx.template_failure(&e), Flow::Continue)),
    };
    let path = ctx.client.wire().seam_path(&call.seam);
    let req = match call.method {
        SeamMethod::Post => HostRequest::post(path.clone(), body.clone()),
        SeamMethod::Get => HostRequest::get(format!("{path}{}", query_of(&body))),
    }
    .role(call.role.clone());
    let resp = match ctx.send(&call.name, &req).await {
        Ok(r) => r,
        Err(e) => return Err(transport_failure(&e)),
    };
    match resp.status {
        404 | 405 | 501 => {
            return blocked(format!(
                "seam {path} is not served on this host (HTTP {}): {}",
                resp.status,
                ctx.surfaces.reason(&seam_id(&call.seam))
            ));
        }
        400 if let Some(field) = refused_extension(ctx, call, &body, &resp.body) => {
            // An upstream host that refuses members it does not know: the extension is what
            // is missing, not a wrong answer.
            return blocked(format!(
                "the host refused toolcert's extension member {field} of seam {path} (HTTP 400: {}): {}",
                resp.body["message"].as_str().unwrap_or("no message"),
                ctx.surfaces.reason(&field_id(&call.seam, &field))
            ));
        }
        401 => {
            return blocked(format!(
                "the host refused role \"{}\"'s credentials at {path} (HTTP 401); check its token",
                call.role
            ));
        }
        422 if refused_as_not_provided(&resp.body) => {
            // The host serves the seam but says it cannot provide what this request asks
            // (e.g. an inbound channel it does not speak): nothing can be witnessed, and that is
            // `blocked` with the host's own words, never a failure of the rows behind it.
            return blocked(format!(
                "the host cannot provide what seam {path} was asked for (HTTP 422 capability_not_provided: {})",
                resp.body["message"].as_str().unwrap_or("no message")
            ));
        }
        _ => {}
    }
    Ok(resp)
}

/// A `GET` seam's query: the body's members, each a string or a number, percent-encoded
/// (`?runId=run%2F1`); an empty body sends none.
fn query_of(body: &Value) -> String {
    let Some(members) = body.as_object().filter(|m| !m.is_empty()) else {
        return String::new();
    };
    let mut url = reqwest::Url::parse("http://127.0.0.1/").expect("a fixed URL parses");
    {
        let mut pairs = url.query_pairs_mut();
        for (name, value) in members {
            match value {
                Value::String(text) => pairs.append_pair(name, text),
                other => pairs.append_pair(name, &other.to_string()),
            };
        }
    }
    format!("?{}", url.query().unwrap_or_default())
}

/// The toolcert extension member of an upstream seam request that a 400 answer names, if any.
fn refused_extension(
    ctx: &ScenarioCtx<'_>,
    call: &SeamCall,
    sent: &Value,
    answer: &Value,
) -> Option<String> {
    let surface = ctx.surfaces.seam(&call.seam)?;
    if surface.kind != SurfaceKind::UpstreamSeam {
        return None;
    }
    let text = answer.to_string();
    sent.as_object()?
        .keys()
        .filter(|member| !surface.fields.contains(member))
        .find(|member| text.contains(member.as_str()))
        .cloned()
}

/// Whether an error body is the `capability_not_provided` envelope (`{error: CODE, message}`,
/// the envelope the `errorEnvelope` matcher judges).
fn refused_as_not_provided(body: &Value) -> bool {
    body["error"].as_str() == Some("capability_not_provided")
}

/// Lift `runId`, `toolCalled`, `toolReturned` from the body or its `details`.
pub(super) fn normalize(resp: &HostResponse) -> SeamObservation {
    let body = &resp.body;
    let lift = |key: &str| {
        body.get(key)
            .or_else(|| body.get("details").and_then(|d| d.get(key)))
            .cloned()
    };
    SeamObservation {
        http: HttpHead {
            status: resp.status,
            headers: resp.headers.clone(),
        },
        run_id: lift("runId"),
        tool_called: lift("toolCalled"),
        tool_returned: lift("toolReturned"),
        body: body.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn answer(status: u16, body: Value) -> Value {
        let resp = HostResponse {
            status,
            headers: Default::default(),
            body,
            body_bytes: 0,
        };
        Observation::Made(normalize(&resp)).to_value()
    }

    #[test]
    fn not_provided_is_read_from_the_envelope() {
        assert!(refused_as_not_provided(
            &json!({"error": "capability_not_provided", "message": "m"})
        ));
        assert!(!refused_as_not_provided(
            &json!({"error": "validation_error", "message": "m"})
        ));
        assert!(!refused_as_not_provided(&json!(null)));
    }

    #[test]
    fn lifts_from_root_or_details() {
        let ok = answer(200, json!({"runId": "r", "toolReturned": {"status": "ok"}}));
        assert_eq!(ok["toolReturned"]["status"], "ok");
        assert_eq!(ok["http"]["status"], 200);
        let denied = answer(
            403,
            json!({"error": "forbidden", "details": {"toolReturned": {"status": "forbidden"}}}),
        );
        assert_eq!(denied["toolReturned"]["status"], "forbidden");
        assert!(denied.get("runId").is_none());
    }
}
