//! `provider`: a script loaded into toolcert's mock model provider (the model rounds it answers, in
//! order, for the model key `tc-<nonce>-<name>`), and what the provider saw for it
//! (`/providers/<name>`).
//!
//! Its specification (the step as a scenario writes it), its observation and its load-time check;
//! its driver is `driver/src/steps/provider.rs`. Documented in `docs/authoring/steps.md`, section
//! `provider`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `{"step": "provider"}`: the model rounds the mock provider answers, in order, for the
/// model key `tc-<nonce>-<name>` (exposed as `{{providers.<name>.model}}`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProviderScript {
    /// Name (observation at `/providers/<name>`).
    pub name: String,
    /// The rounds (mock-provider script format; templated).
    pub rounds: Vec<Value>,
}

impl ProviderScript {
    /// The load-time check of a `provider` step: its rounds are a valid mock-provider script.
    /// `Err` holds the pointer below the step and the message.
    pub(crate) fn check(&self) -> Result<(), (String, String)> {
        // The provider's own validator gives the precise pointer inside the rounds.
        let script = serde_json::json!({"model": "load-check", "rounds": self.rounds});
        if let Err(e) = mock_provider::Script::from_json(&script) {
            return Err((
                e.pointer,
                format!("not a valid provider round: {}", e.message),
            ));
        }
        Ok(())
    }
}

/// `/providers/NAME`: what the mock provider saw for a script.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderObservation {
    /// The script's key.
    pub model: String,
    /// Requests.
    pub count: usize,
    /// Each request, with wire-independent views.
    pub requests: Vec<Value>,
    /// What the provider found wrong.
    pub problems: Vec<String>,
}
