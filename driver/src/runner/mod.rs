//! Running scenarios against a target and collecting verdicts.
//!
//! A [`Session`] holds what every scenario shares (the host client, toolcert's receiver, the
//! captured discovery document); each scenario gets its own nonce, canary, receiver ids and
//! tool names, so scenarios run in parallel without sharing mock or double state.

#[cfg(feature = "reference")]
mod embedded;
#[cfg(feature = "reference")]
mod embedded_host;
#[cfg(feature = "reference")]
mod front;
/// Without the reference host built in there is nothing to embed: a target never owns one.
#[cfg(not(feature = "reference"))]
mod embedded_host {
    /// Uninhabited: no [`super::Target`] owns an embedded host in this build.
    pub(crate) enum Embedded {}

    impl Embedded {
        pub(crate) async fn prepare_trials(&mut self, _: u32) -> Result<(), String> {
            match *self {}
        }

        pub(crate) fn trial_base_url(&self, _: u32) -> Option<&str> {
            match *self {}
        }

        pub(crate) async fn shutdown(self) {
            match self {}
        }
    }
}
pub mod interrupt;
mod run;
pub mod schedule;
mod session;
mod target;

#[cfg(feature = "reference")]
pub use embedded::{
    ReferenceVariant, probe_child_file, run_embedded, run_reference, run_reference_staged,
};
pub use run::{run_all, run_selected, run_selected_after_open};
pub use session::{
    EMBEDDED_JOBS, HOST_JOBS, HOST_LOST_AFTER, RunOptions, RunOutcome, SCENARIO_BUDGET,
    ScenarioResult, Session, conclude, uncovered_rows,
};
pub use target::{Target, TargetError};
