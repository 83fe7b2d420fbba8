//! What toolcert certifies: the embedded reference host (default) or a host at a URL.

use crate::host::HostProfile;

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
}

/// A host to certify.
pub struct Target {
    /// Base URL.
    pub base_url: String,
    /// Tokens and principals per role.
    pub profile: HostProfile,
    /// The mutant switched on in the embedded host, if any.
    pub mutant: Option<String>,
    embedded: Option<reference_host::RunningHost>,
}

impl Target {
    /// Start the reference host in-process on 127.0.0.1 (seams on), optionally with a mutant.
    pub async fn embedded(
        mutant: Option<reference_host::mutants::Mutant>,
    ) -> Result<Target, TargetError> {
        let config = reference_host::HostConfig {
            mutant,
            seams_enabled: true,
            ..reference_host::HostConfig::default()
        };
        let host = reference_host::start(config)
            .await
            .map_err(|e| TargetError::Embedded(e.to_string()))?;
        Ok(Target {
            base_url: host.base_url.clone(),
            profile: HostProfile::reference(),
            mutant: mutant.map(|m| m.name().to_string()),
            embedded: Some(host),
        })
    }

    /// A host toolcert did not start.
    pub fn remote(base_url: &str, profile: HostProfile) -> Target {
        Target {
            base_url: base_url.trim_end_matches('/').to_string(),
            profile,
            mutant: None,
            embedded: None,
        }
    }

    /// Whether this is the embedded reference host.
    pub fn is_embedded(&self) -> bool {
        self.embedded.is_some()
    }

    /// Stop the embedded host, if any.
    pub async fn shutdown(self) {
        if let Some(host) = self.embedded {
            host.shutdown().await;
        }
    }
}
