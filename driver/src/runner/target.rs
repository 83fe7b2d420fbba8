//! What toolcert certifies: the embedded reference host (default) or a host at a URL.

use super::embedded_host::Embedded;
use crate::host::{HostProfile, STARTUP_BUDGET, SpawnCommand, SpawnedHost};

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
    /// The embedded reference host and its `--repeat` trial hosts, when it is the target.
    pub(super) embedded: Option<Embedded>,
    spawned: Option<SpawnedHost>,
}

impl Target {
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
        match &mut self.embedded {
            Some(embedded) => embedded
                .prepare_trials(trials)
                .await
                .map_err(TargetError::Embedded),
            None => Ok(()),
        }
    }

    /// The base URL trial `trial` (1-based) drives: the target's, or under `--repeat` the
    /// embedded trial host of its own ([`Target::prepare_trials`]).
    pub fn trial_base_url(&self, trial: u32) -> &str {
        self.embedded
            .as_ref()
            .and_then(|embedded| embedded.trial_base_url(trial))
            .unwrap_or(self.base_url.as_str())
    }

    /// Stop the embedded or spawned host, if any.
    pub async fn shutdown(self) {
        if let Some(embedded) = self.embedded {
            embedded.shutdown().await;
        }
        if let Some(mut host) = self.spawned {
            host.kill().await;
        }
    }
}
