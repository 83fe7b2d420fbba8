//! The tool loop's state: the domain's ([`Domain`], which it derefs to)
//! plus what only the loop uses (the provider client, the loops' cancel
//! signals, the record limit).
//!
//! The app's [`crate::surface::app::AppState`] wraps it and derefs to it, so a loop
//! function takes `&LoopState` and the surface passes its own state.

use std::ops::Deref;
use std::sync::Arc;

use crate::base::config::HostConfig;
use crate::domain::Domain;
use crate::domain::error::HostError;
use crate::turn::control::RunControls;
use crate::turn::provider::ProviderClient;

/// The tool loop's shared state; cheap to clone.
#[derive(Debug, Clone)]
pub struct LoopState {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    domain: Domain,
    provider: ProviderClient,
    /// Largest whole tool record (TURN-D10).
    record_limit_bytes: usize,
    /// Cancel signals of the turn loops running here.
    run_controls: RunControls,
}

impl LoopState {
    /// The loop state for `config` over `domain`.
    pub fn new(config: &HostConfig, domain: Domain) -> Result<Self, HostError> {
        let inner = Inner {
            domain,
            provider: ProviderClient::new().map_err(HostError::HttpClient)?,
            record_limit_bytes: config.record_limit_bytes,
            run_controls: RunControls::new(),
        };
        Ok(Self {
            inner: Arc::new(inner),
        })
    }

    /// The domain state underneath.
    pub fn domain(&self) -> &Domain {
        &self.inner.domain
    }

    /// The model provider client.
    pub fn provider(&self) -> &ProviderClient {
        &self.inner.provider
    }

    /// Largest serialized tool record kept whole (TURN-D10).
    pub fn record_limit_bytes(&self) -> usize {
        self.inner.record_limit_bytes
    }

    /// The cancel signals of the turn loops running in this process.
    pub fn run_controls(&self) -> &RunControls {
        &self.inner.run_controls
    }
}

impl Deref for LoopState {
    type Target = Domain;

    fn deref(&self) -> &Domain {
        &self.inner.domain
    }
}
