//! `discovery`: re-fetch discovery with `If-None-Match` (DISC-6) and record both answers.

use super::ctx::{Flow, ScenarioCtx, transport_failure};
use crate::host::HostRequest;
use toolcert_core::observation::{DiscoveryObservation, Observation};

pub(super) async fn run(
    ctx: &mut ScenarioCtx<'_>,
    name: &str,
) -> (Observation<DiscoveryObservation>, Flow) {
    let failed = |e| {
        let (obs, flow) = transport_failure(e);
        (obs.into(), flow)
    };
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
        Err(e) => return failed(&e),
    };
    let etag = first.headers.get("etag").cloned();
    let mut seen = DiscoveryObservation {
        first: (&first).into(),
        etag: etag.clone(),
        conditional: None,
    };
    if let Some(tag) = etag {
        let conditional = plain.clone().header("If-None-Match", tag);
        match ctx.send(name, &conditional).await {
            Ok(r) => seen.conditional = Some((&r).into()),
            Err(e) => return failed(&e),
        }
    }
    (Observation::Made(seen), Flow::Continue)
}
