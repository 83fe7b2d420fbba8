//! `discovery`: re-fetch discovery with `If-None-Match` (DISC-6) and record both answers.

use serde_json::{Value, json};

use super::{Flow, ScenarioCtx, transport_failure};
use crate::host::HostRequest;

pub(super) async fn run(ctx: &mut ScenarioCtx<'_>, name: &str) -> (Value, Flow) {
    let version = match ctx.client.wire() {
        crate::host::WireMajor::V2 => Some("2.0"),
        crate::host::WireMajor::V1 => None,
    };
    let mut plain = HostRequest::get("/.well-known/openwop");
    if let Some(v) = version {
        plain = plain.header("OpenWOP-Version", v);
    }
    let first = match ctx.send(name, &plain).await {
        Ok(r) => r,
        Err(e) => return transport_failure(&e),
    };
    let etag = first.headers.get("etag").cloned();
    let mut obs = json!({"first": first.observation(), "etag": etag});
    if let Some(tag) = etag {
        let conditional = plain.clone().header("If-None-Match", tag);
        match ctx.send(name, &conditional).await {
            Ok(r) => obs["conditional"] = r.observation(),
            Err(e) => return transport_failure(&e),
        }
    }
    (obs, Flow::Continue)
}
