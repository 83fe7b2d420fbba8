//! `fireEffectSeams`: drive every row of the host's effect-seam manifest, then fork each fired
//! run and look for a re-fire (RPL-11).
//!
//! For each manifest row the step registers a receiver of its own, fires the row
//! (`effect-seams/fire {seam, receiverUrl}`, `fireEffectSeam` of RFC 0173 §C.2), waits for the
//! run to settle, reads its effect ledger, forks it in replay mode, waits for the fork, and
//! reads the fork's ledger. A re-fire is counted two ways, neither of them the host's word:
//! arrivals at toolcert's receiver after the fork, and fork ledger rows that do not
//! multiset-match a parent row on `(nodeId, attempt, at)`.
//!
//! Observation: `manifestRows` (how many rows the manifest lists) and `rows`, one per manifest
//! row: `seam`, `fireStatus`, `parentRunId`, `parentRunStatus`, `deliveredAtFire`,
//! `parentEffects`, `forkStatus`, `forkRunId`, `forkRunStatus`, `deliveredByFork`,
//! `forkEffects`, `reFires`.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::ctx::{Flow, ScenarioCtx, require_role, transport_failure};
use crate::host::HostRequest;
use toolcert_core::observation::{
    EffectSeamRow, FireEffectSeamsObservation, NotObserved, Observation,
};
use toolcert_core::suite::FireEffectSeamsSpec;

/// How often a run's status is read while waiting for it to settle.
const POLL: Duration = Duration::from_millis(50);

pub(super) async fn run(
    ctx: &mut ScenarioCtx<'_>,
    spec: &FireEffectSeamsSpec,
) -> (Observation<FireEffectSeamsObservation>, Flow) {
    match fire_all(ctx, spec).await {
        Ok(seen) => (Observation::Made(seen), Flow::Continue),
        Err((not_made, flow)) => (not_made.into(), flow),
    }
}

async fn fire_all(
    ctx: &mut ScenarioCtx<'_>,
    spec: &FireEffectSeamsSpec,
) -> Result<FireEffectSeamsObservation, (NotObserved, Flow)> {
    if let Some(obs) = require_role(ctx, &spec.role) {
        return Err((obs, Flow::Continue));
    }
    let Some(path) = ctx.discovery.document["replay"]["effectSeamsManifest"]
        .as_str()
        .map(str::to_string)
    else {
        return Err((
            NotObserved::blocked(
                "the host advertises no effect-seam manifest (replay.effectSeamsManifest)",
            ),
            Flow::Continue,
        ));
    };
    let manifest = match send(
        ctx,
        &spec.name,
        HostRequest::get(path.clone()).role(spec.role.clone()),
    )
    .await?
    {
        resp if resp.status == 200 => resp.body,
        resp => {
            return Err((
                NotObserved::error(format!(
                    "GET {path} answered HTTP {}; RPL-1 judges the manifest itself",
                    resp.status
                )),
                Flow::Continue,
            ));
        }
    };
    let seams: Vec<Value> = manifest["seams"].as_array().cloned().unwrap_or_default();
    let mut rows = Vec::with_capacity(seams.len());
    for (index, seam) in seams.iter().enumerate() {
        // replay.md §The effect-seam manifest names a row by `seam`; an older schema by
        // `id` (C-10).
        let seam_id = seam["seam"]
            .as_str()
            .or_else(|| seam["id"].as_str())
            .unwrap_or("")
            .to_string();
        let receiver_id = format!("{}-{}-{index}", ctx.nonce, spec.name);
        let url =
            ctx.receiver
                .register(&receiver_id, 200, json!({"ok": true}), Duration::ZERO, None);
        let fire_path = ctx.client.wire().seam_path("effect-seams/fire");
        let fire = HostRequest::post(
            fire_path.clone(),
            json!({"seam": seam_id, "receiverUrl": url}),
        )
        .role(spec.role.clone());
        let fired = send(ctx, &spec.name, fire).await?;
        if index == 0
            && matches!(fired.status, 404 | 405 | 501)
            && fired.body["error"] != "not_found"
        {
            return Err((
                NotObserved::blocked(format!(
                    "seam {fire_path} is not wired on this host (HTTP {})",
                    fired.status
                )),
                Flow::Continue,
            ));
        }
        let mut row = EffectSeamRow {
            seam: seam_id,
            fire_status: fired.status,
            parent_run_id: None,
            parent_run_status: None,
            delivered_at_fire: None,
            parent_effects: None,
            fork_status: None,
            fork_run_id: None,
            fork_run_status: None,
            fork_effects: None,
            re_fires: None,
            delivered_by_fork: None,
        };
        let Some(parent) = fired.body["runId"].as_str().map(str::to_string) else {
            rows.push(row);
            continue;
        };
        row.parent_run_id = Some(parent.clone());
        row.parent_run_status = Some(settle(ctx, &spec.name, &spec.role, &parent).await);
        let delivered_at_fire = ctx.receiver.count(&receiver_id);
        row.delivered_at_fire = Some(delivered_at_fire);
        let parent_effects = effects(ctx, &spec.name, &spec.role, &parent).await;
        row.parent_effects = Some(parent_effects.len());
        let wire = ctx.client.wire();
        let fork_path = wire.api_path(&format!("/runs/{}:fork", wire.id_segment(&parent)));
        let fork = HostRequest::post(fork_path, json!({"mode": "replay"})).role(spec.role.clone());
        let forked = send(ctx, &spec.name, fork).await?;
        row.fork_status = Some(forked.status);
        if let Some(fork_id) = forked.body["runId"].as_str().map(str::to_string) {
            row.fork_run_status = Some(settle(ctx, &spec.name, &spec.role, &fork_id).await);
            let fork_effects = effects(ctx, &spec.name, &spec.role, &fork_id).await;
            row.fork_effects = Some(fork_effects.len());
            row.re_fires = Some(re_fires(&parent_effects, &fork_effects));
            row.fork_run_id = Some(fork_id);
        }
        let total = ctx.receiver.count(&receiver_id);
        row.delivered_by_fork = Some(total.saturating_sub(delivered_at_fire));
        rows.push(row);
    }
    Ok(FireEffectSeamsObservation {
        manifest_rows: seams.len(),
        rows,
    })
}

/// Send one request; a transport failure ends the step with its observation and flow.
async fn send(
    ctx: &mut ScenarioCtx<'_>,
    step: &str,
    req: HostRequest,
) -> Result<crate::host::HostResponse, (NotObserved, Flow)> {
    ctx.send(step, &req)
        .await
        .map_err(|e| transport_failure(&e))
}

/// Read the run's status until it settles or the request budget runs out; its last status.
async fn settle(ctx: &mut ScenarioCtx<'_>, step: &str, role: &str, run_id: &str) -> Value {
    let deadline = Instant::now() + ctx.client.budgets().request;
    loop {
        let status = super::events::run_status(ctx, step, role, run_id)
            .await
            .unwrap_or(Value::Null);
        if super::events::settled(&status) || Instant::now() >= deadline {
            return status;
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The run's effect ledger rows (`GET /runs/{runId}/effects`), empty when unreadable.
async fn effects(ctx: &mut ScenarioCtx<'_>, step: &str, role: &str, run_id: &str) -> Vec<Value> {
    let wire = ctx.client.wire();
    let path = wire.api_path(&format!("/runs/{}/effects", wire.id_segment(run_id)));
    match ctx
        .send(step, &HostRequest::get(path).role(role.to_string()))
        .await
    {
        Ok(resp) => resp.body["effects"].as_array().cloned().unwrap_or_default(),
        Err(_) => Vec::new(),
    }
}

/// Fork rows that do not multiset-match a parent row on `(nodeId, attempt, at)` (RPL-11).
fn re_fires(parent: &[Value], fork: &[Value]) -> Vec<Value> {
    let key = |row: &Value| {
        (
            row["nodeId"].clone(),
            row["attempt"].clone(),
            row["at"].clone(),
        )
    };
    let mut unmatched: Vec<_> = parent.iter().map(key).collect();
    fork.iter()
        .filter(|row| {
            let k = key(row);
            match unmatched.iter().position(|p| *p == k) {
                Some(i) => {
                    unmatched.swap_remove(i);
                    false
                }
                None => true,
            }
        })
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_re_fire_is_a_fork_row_without_a_parent_twin() {
        let row = |at: &str| json!({"nodeId": "agent", "attempt": 1, "at": at, "effectId": "e"});
        let parent = [row("t1"), row("t1")];
        assert!(re_fires(&parent, &[row("t1"), row("t1")]).is_empty());
        assert_eq!(re_fires(&parent, &[row("t1"), row("t2")]), vec![row("t2")]);
        // Multiset: one parent row matches one fork row only.
        assert_eq!(re_fires(&[row("t1")], &[row("t1"), row("t1")]).len(), 1);
        assert!(re_fires(&parent, &[]).is_empty());
    }
}
