//! `foreach`: the same seam call made `count` times in a row, `{{loop.index}}` counting from 0.
//!
//! Its specification (the step as a scenario writes it), its observation and its load-time check;
//! its driver is `driver/src/steps/foreach.rs`. Documented in `docs/authoring/steps.md`, section
//! `foreach`.

use serde::{Deserialize, Serialize};

use super::seam::{SeamCall, SeamObservation};

/// `{"step": "foreach"}`: a seam call made `count` times (observation `items`, in order).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ForeachSpec {
    /// Name of the observation.
    pub name: String,
    /// How many calls (1..=200).
    pub count: u32,
    /// The call; `{{loop.index}}` is its 0-based index (its `name` is ignored).
    pub call: SeamCall,
}

impl ForeachSpec {
    /// The load-time check of a `foreach` step: `count` is 1..=200. `Err` holds the pointer
    /// below the step and the message.
    pub(crate) fn check(&self) -> Result<(), (String, String)> {
        if !(1..=200).contains(&self.count) {
            return Err(("/count".into(), "foreach count must be 1..=200".into()));
        }
        Ok(())
    }
}

/// `foreach`: the same seam call made `count` times.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ForeachObservation {
    /// Calls made.
    pub count: usize,
    /// Their answers.
    pub items: Vec<SeamObservation>,
}
