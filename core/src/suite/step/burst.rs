//! `burst`: `count` identical requests sent to the host at the same instant (races on the host's
//! side, such as concurrent Idempotency-Key duplicates).
//!
//! Its specification (the step as a scenario writes it), its observation and its load-time check;
//! its driver is `driver/src/steps/burst.rs`. Documented in `docs/authoring/steps.md`, section
//! `burst`.

use serde::{Deserialize, Serialize};

use super::http::{HttpCall, HttpObservation};

/// `{"step": "burst"}`: `count` identical requests sent concurrently (observation `items`,
/// `statuses`), for races on the host's side such as concurrent Idempotency-Key duplicates.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BurstSpec {
    /// Name of the observation.
    pub name: String,
    /// How many requests (2..=64).
    pub count: u32,
    /// The request (its `name` is ignored).
    pub request: HttpCall,
}

impl BurstSpec {
    /// The load-time check of a `burst` step: `count` is 2..=64. `Err` holds the pointer below
    /// the step and the message.
    pub(crate) fn check(&self) -> Result<(), (String, String)> {
        if !(2..=64).contains(&self.count) {
            return Err(("/count".into(), "burst count must be 2..=64".into()));
        }
        Ok(())
    }
}

/// `burst`: identical requests sent together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BurstObservation {
    /// How many answers.
    pub count: usize,
    /// Their statuses, in send order.
    pub statuses: Vec<u16>,
    /// The answers.
    pub items: Vec<HttpObservation>,
}
