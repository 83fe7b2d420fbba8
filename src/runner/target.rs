//! What toolcert certifies: the embedded reference host (default) or a host at a URL.

use crate::host::{HostProfile, STARTUP_BUDGET, SpawnCommand, SpawnedHost, reference_host_exe};

/// Why a target could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// The embedded reference host did not start.
    #[error("the embedded reference host did not start: {0}")]
    Embedded(String),
    /// toolcert's receiver could not bind 127.0.0.1.
    #[error("toolcert's tool receiver could not bind 127.0.0.1: {0}")]
    Receiver(std::io::Error),
    /// toolcert's mock model provider could not bind 127.0.0.1.
    #[error("toolcert's mock model provider could not bind 127.0.0.1: {0}")]
    Provider(std::io::Error),
    /// The HTTP client could not be built.
    #[error("could not build the HTTP client: {0}")]
    Client(String),
    /// The `--spawn` command did not bring a host up.
    #[error("--spawn: {0}")]
    Spawn(String),
}

/// Which variant of the reference host to embed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReferenceVariant {
    /// The known bug switched on, if any.
    pub mutant: Option<reference_host::mutants::Mutant>,
    /// Serve a plain upstream OpenWOP v1 host: v1 discovery without `protocolVersions`, only
    /// upstream seams, seam fields and fixtures (`reference-host --upstream-only`).
    pub upstream_only: bool,
}

impl ReferenceVariant {
    /// The clean or mutated default (v2) reference host.
    pub fn with_mutant(mutant: Option<reference_host::mutants::Mutant>) -> Self {
        ReferenceVariant {
            mutant,
            upstream_only: false,
        }
    }
}

/// Test-only knob: under `--repeat`, the `--reference-mutant` is switched on only in the
/// embedded hosts of these trials (comma-separated trial numbers, e.g. `2`), the others run
/// clean, so a test can make a row pass in some trials and fail in others, deterministically.
/// It can only make a mutated host less broken, and does nothing without a mutant.
pub const MUTANT_TRIALS_ENV: &str = "TOOLCERT_TEST_MUTANT_TRIALS";

/// The mutant trial `trial`'s embedded host runs ([`MUTANT_TRIALS_ENV`]).
fn mutant_in_trial(
    mutant: Option<reference_host::mutants::Mutant>,
    trial: u32,
) -> Option<reference_host::mutants::Mutant> {
    let Ok(list) = std::env::var(MUTANT_TRIALS_ENV) else {
        return mutant;
    };
    let listed = list
        .split(',')
        .any(|t| t.trim().parse::<u32>().is_ok_and(|t| t == trial));
    mutant.filter(|_| listed)
}

/// A host to certify.
pub struct Target {
    /// Base URL.
    pub base_url: String,
    /// Tokens and principals per role.
    pub profile: HostProfile,
    /// The mutant switched on in the embedded host, if any.
    pub mutant: Option<String>,
    /// Whether the embedded host runs in upstream-only mode.
    pub upstream_only: bool,
    /// How to start a host process of its own for each scenario that kills and restarts one;
    /// `None` makes those scenarios `blocked`.
    pub spawner: Option<SpawnCommand>,
    embedded: Option<reference_host::RunningHost>,
    spawned: Option<SpawnedHost>,
    /// The embedded host's configuration, to start one more per `--repeat` trial.
    embedded_config: Option<reference_host::HostConfig>,
    /// Under `--repeat K`: the embedded hosts of trials 2 to K ([`Target::prepare_trials`]).
    trial_hosts: Vec<reference_host::RunningHost>,
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
        let spawner = reference_host_exe()
            .map(|exe| SpawnCommand::reference_host(&exe, mutant.map(|m| m.name()), upstream_only));
        Ok(Target {
            base_url: host.base_url.clone(),
            profile: HostProfile::reference(),
            mutant: mutant.map(|m| m.name().to_string()),
            upstream_only,
            spawner,
            embedded: Some(host),
            spawned: None,
            embedded_config: Some(reference_host::HostConfig { mutant, ..config }),
            trial_hosts: Vec::new(),
        })
    }

    /// Start a host with `command` (`--spawn`): it is the target, and each kill-and-restart
    /// scenario starts another instance of it on its own port and data directory.
    pub async fn spawned(
        command: SpawnCommand,
        profile: HostProfile,
    ) -> Result<Target, TargetError> {
        let host = SpawnedHost::start(&command, "main", STARTUP_BUDGET)
            .await
            .map_err(|e| TargetError::Spawn(e.to_string()))?;
        Ok(Target {
            base_url: host.base_url().to_string(),
            profile,
            mutant: None,
            upstream_only: false,
            spawner: Some(command),
            embedded: None,
            spawned: Some(host),
            embedded_config: None,
            trial_hosts: Vec::new(),
        })
    }

    /// Use `command` to start hosts for kill-and-restart scenarios.
    pub fn with_spawner(mut self, command: Option<SpawnCommand>) -> Target {
        self.spawner = command;
        self
    }

    /// A host toolcert did not start.
    pub fn remote(base_url: &str, profile: HostProfile) -> Target {
        Target {
            base_url: base_url.trim_end_matches('/').to_string(),
            profile,
            mutant: None,
            upstream_only: false,
            spawner: None,
            embedded: None,
            spawned: None,
            embedded_config: None,
            trial_hosts: Vec::new(),
        }
    }

    /// Whether this is the embedded reference host.
    pub fn is_embedded(&self) -> bool {
        self.embedded.is_some()
    }

    /// Under `--repeat K`, give every trial of the embedded reference host a host of its own
    /// (the same variant, fresh state), so trials share no host state: its per-(principal,
    /// tool) rate-limit buckets above all, which a fixed-name tool (the effect-seam fire's
    /// `tool-receiver`) would drain across trials. A host toolcert did not start serves
    /// every trial itself. Does nothing for K = 1 or when already prepared.
    pub async fn prepare_trials(&mut self, trials: u32) -> Result<(), TargetError> {
        let Some(config) = &self.embedded_config else {
            return Ok(());
        };
        while (self.trial_hosts.len() as u32) + 1 < trials {
            let trial = self.trial_hosts.len() as u32 + 2;
            let config = reference_host::HostConfig {
                mutant: mutant_in_trial(config.mutant, trial),
                ..config.clone()
            };
            let host = reference_host::start(config)
                .await
                .map_err(|e| TargetError::Embedded(e.to_string()))?;
            self.trial_hosts.push(host);
        }
        Ok(())
    }

    /// The base URL trial `trial` (1-based) drives: the target's, or under `--repeat` the
    /// embedded trial host of its own ([`Target::prepare_trials`]).
    pub fn trial_base_url(&self, trial: u32) -> &str {
        trial
            .checked_sub(2)
            .and_then(|i| self.trial_hosts.get(i as usize))
            .map_or(self.base_url.as_str(), |h| h.base_url.as_str())
    }

    /// Stop the embedded or spawned host, if any.
    pub async fn shutdown(self) {
        for host in self.trial_hosts {
            host.shutdown().await;
        }
        if let Some(host) = self.embedded {
            host.shutdown().await;
        }
        if let Some(mut host) = self.spawned {
            host.kill().await;
        }
    }
}
