//! `repeat`: a seam call repeated (bounded) until a condition holds for one answer. Its
//! observation, `RepeatObservation`, stays in `crate::observation` beside `Observation`: it holds
//! one (`met`), and `observation` imports `suite`, so it cannot live here without an import cycle.
//!
//! Its specification (the step as a scenario writes it) and its load-time check; its driver is
//! `driver/src/steps/repeat.rs`. Documented in `docs/authoring/steps.md`, section `repeat`.

use serde::{Deserialize, Serialize};

use super::seam::SeamCall;
use crate::suite::matcher::Condition;

/// `{"step": "repeat"}`: call a seam up to `max` times until `until` holds for one answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RepeatSpec {
    /// Name of the observation (`first`, `last`, `iterations`, `statuses`, `okCount`).
    pub name: String,
    /// Upper bound on calls (at most 200).
    pub max: u32,
    /// Stop when this holds for an answer (pointer relative to that answer's observation).
    pub until: Condition,
    /// The call to repeat (its `name` is ignored).
    pub call: SeamCall,
}

impl RepeatSpec {
    /// The load-time check of a `repeat` step: `max` is 1..=200. `Err` holds the pointer below
    /// the step and the message.
    pub(crate) fn check(&self) -> Result<(), (String, String)> {
        if !(1..=200).contains(&self.max) {
            return Err(("/max".into(), "repeat max must be 1..=200".into()));
        }
        Ok(())
    }
}
