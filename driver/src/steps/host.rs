//! `host`: kill (SIGKILL) or restart the scenario's own spawned host (TTC §D recovery). A
//! `wait` step before a kill chooses the point in the run (see `wait.rs`).

use std::time::Instant;

use super::ctx::{Flow, Recorded, ScenarioCtx, record};
use toolcert_core::observation::{KillObservation, NotObserved, Observation, RestartObservation};
use toolcert_core::suite::{HostAction, HostActionKind};

/// A kill or a restart, recorded (the two actions observe different things).
pub(super) async fn run(ctx: &mut ScenarioCtx<'_>, spec: &HostAction) -> (Recorded, Flow) {
    let why = ctx.spawn_unavailable.clone();
    let Some(host) = ctx.spawned.as_mut() else {
        let why =
            why.unwrap_or_else(|| "toolcert did not start this host, so it cannot kill it".into());
        let not_made: Observation<KillObservation> = NotObserved::blocked(why).into();
        return record((not_made, Flow::Continue));
    };
    let started = Instant::now();
    let took = |started: Instant| started.elapsed().as_millis() as u64;
    match spec.action {
        HostActionKind::Kill => {
            host.kill().await;
            let seen = KillObservation {
                killed: true,
                signal: "SIGKILL".into(),
                took_ms: took(started),
            };
            record((Observation::Made(seen), Flow::Continue))
        }
        HostActionKind::Restart => match host.restart().await {
            Ok(()) => {
                let seen = RestartObservation {
                    restarted: true,
                    base_url: host.base_url().to_string(),
                    starts: host.starts(),
                    took_ms: took(started),
                };
                record((Observation::Made(seen), Flow::Continue))
            }
            // The host not coming back is the host's failure to recover, said plainly.
            Err(e) => {
                let not_made: Observation<RestartObservation> =
                    NotObserved::fail(format!("the host did not come back after a restart: {e}"))
                        .into();
                record((not_made, Flow::HostLost(e.to_string())))
            }
        },
    }
}
