//! The embedded reference host as a target (feature `reference`): the clean host or a mutant,
//! its `--repeat` trial hosts, and the runs of the mutation matrix and the benchmarks.

use super::embedded_host::{Embedded, mutant_in_trial};
use super::front::Front;
use super::run::run_selected_after_open;
use super::session::{RunOptions, RunOutcome, Session};
use super::target::{Target, TargetError};
use crate::host::{HostProfile, SpawnCommand, reference_host_exe};
use toolcert_core::suite::{Scenario, Suite};

/// Which variant of the reference host to embed.
#[derive(Debug, Clone, Default)]
pub struct ReferenceVariant {
    /// The known bug switched on, if any.
    pub mutant: Option<reference_host::mutants::Mutant>,
    /// Serve a plain upstream OpenWOP host of this major (`reference-host
    /// --upstream-only=v1|v2`): v1, its discovery without `protocolVersions` and the v1 seams,
    /// which ignore members they do not know; v2, the closed v2 root, the seams profile with
    /// closed bodies and tenant-bound run ids. Either serves only upstream surfaces, seam
    /// fields and fixtures.
    pub upstream_only: Option<reference_host::UpstreamMajor>,
    /// A data mutant of the suite ([`toolcert_core::suite::mutant`]): the clean host runs behind a
    /// front on 127.0.0.1 that applies its rewrites, and the target is the front. A scenario
    /// that kills and restarts a host talks to that host process directly, unrewritten.
    pub front: Option<std::sync::Arc<toolcert_core::suite::DataMutant>>,
}

impl ReferenceVariant {
    /// The clean or mutated default (v2) reference host.
    pub fn with_mutant(mutant: Option<reference_host::mutants::Mutant>) -> Self {
        ReferenceVariant {
            mutant,
            upstream_only: None,
            front: None,
        }
    }
}

/// The file a probe host of probe slot `slot` ([`reference_host::mutants::Mutant::probe`])
/// started as a child process appends its reached mutant sites to: one per toolcert process
/// and slot (the matrix gives each probe window running at once a slot of its own).
pub fn probe_child_file(slot: usize) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "toolcert-probe-{}-{slot}.reach",
        std::process::id()
    ))
}

/// How kill-and-restart scenarios start `variant` as a child process: `toolcert
/// reference-host` with the variant's mutant, or as the probe ([`probe_child_file`]).
fn spawn_command(exe: &std::path::Path, variant: &ReferenceVariant) -> SpawnCommand {
    match variant.mutant.and_then(|m| m.probe_slot()) {
        Some(slot) => SpawnCommand::reference_probe(
            exe,
            &probe_child_file(slot),
            variant.upstream_only.map(|m| m.as_str()),
        ),
        None => SpawnCommand::reference_host(
            exe,
            variant.mutant.map(|m| m.name()),
            variant.upstream_only.map(|m| m.as_str()),
        ),
    }
}

impl Target {
    /// Start the reference host in-process on 127.0.0.1 (seams on), optionally with a mutant.
    pub async fn embedded(
        mutant: Option<reference_host::mutants::Mutant>,
    ) -> Result<Target, TargetError> {
        Target::embedded_variant(ReferenceVariant::with_mutant(mutant)).await
    }

    /// Start a variant of the reference host in-process on 127.0.0.1 (seams on).
    pub async fn embedded_variant(variant: ReferenceVariant) -> Result<Target, TargetError> {
        let ReferenceVariant {
            mutant,
            upstream_only,
            ref front,
        } = variant;
        let config = reference_host::HostConfig {
            mutant: mutant_in_trial(mutant, 1),
            seams_enabled: true,
            upstream_only,
            ..reference_host::HostConfig::default()
        };
        let host = reference_host::start(config.clone())
            .await
            .map_err(|e| TargetError::Embedded(e.to_string()))?;
        // Kill-and-restart scenarios run the same host as a child process (`toolcert
        // reference-host`), so they also run from the one command; see `with_spawner`.
        let spawner = reference_host_exe().map(|exe| spawn_command(&exe, &variant));
        let front = match front {
            Some(data_mutant) => match Front::start(&host.base_url, data_mutant.clone()).await {
                Ok(front) => Some(front),
                Err(e) => {
                    host.shutdown().await;
                    return Err(TargetError::Embedded(format!(
                        "the front of data mutant {} did not start: {e}",
                        data_mutant.name
                    )));
                }
            },
            None => None,
        };
        let base_url = front
            .as_ref()
            .map_or(host.base_url.as_str(), |f| &f.base_url);
        let mut target = Target::remote(base_url, HostProfile::reference());
        target.mutant = match &variant.front {
            Some(data_mutant) => Some(data_mutant.name.clone()),
            None => mutant.map(|m| m.name().to_string()),
        };
        target.upstream_only = upstream_only.is_some();
        target.spawner = spawner;
        target.embedded = Some(Embedded {
            host,
            front,
            config: reference_host::HostConfig { mutant, ..config },
            trial_hosts: Vec::new(),
        });
        Ok(target)
    }
}

/// Start the embedded reference host (optionally with a mutant), run the selected scenarios
/// against it, and stop it: the unit of the mutation matrix and the benchmarks.
pub async fn run_embedded(
    suite: &Suite,
    mutant: Option<reference_host::mutants::Mutant>,
    opts: &RunOptions,
    select: Option<&dyn Fn(&Scenario) -> bool>,
) -> Result<RunOutcome, TargetError> {
    run_reference(suite, ReferenceVariant::with_mutant(mutant), opts, select).await
}

/// Start a variant of the embedded reference host, run the selected scenarios against it,
/// and stop it.
pub async fn run_reference(
    suite: &Suite,
    variant: ReferenceVariant,
    opts: &RunOptions,
    select: Option<&dyn Fn(&Scenario) -> bool>,
) -> Result<RunOutcome, TargetError> {
    run_reference_staged(suite, variant, opts, select, &|| {}, &|_| {}).await
}

/// [`run_reference`], calling `started` once the host has started and `opened` once the
/// session is open (discovery captured), before any scenario: how the mutation matrix's probe
/// tells the sites a host reaches while starting and while serving discovery from those a
/// scenario reaches.
pub async fn run_reference_staged(
    suite: &Suite,
    variant: ReferenceVariant,
    opts: &RunOptions,
    select: Option<&dyn Fn(&Scenario) -> bool>,
    started: &(dyn Fn() + Sync),
    opened: &(dyn Fn(&Session) + Sync),
) -> Result<RunOutcome, TargetError> {
    let mut target = Target::embedded_variant(variant.clone()).await?;
    target.prepare_trials(opts.repeat).await?;
    let target = match &opts.reference_host_exe {
        Some(exe) => target.with_spawner(Some(spawn_command(exe, &variant))),
        None => target,
    };
    started();
    let run = run_selected_after_open(suite, &target, opts, select, opened).await;
    target.shutdown().await;
    run
}
