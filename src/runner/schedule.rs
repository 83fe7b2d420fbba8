//! The one scheduler: which (scenario, trial) pairs run when. `toolcert run`, the mutation
//! matrix (through [`super::run_selected`]) and the benchmarks all go through
//! [`run_trials`], so every caller honours `--jobs` and the `serial` tag the same way.

use tokio::sync::{RwLock, Semaphore};

use super::{ScenarioResult, Session};
use crate::suite::{Scenario, Suite};

/// The tag of a scenario that must run with nothing else in flight (it measures something
/// other scenarios' traffic would disturb).
pub const SERIAL_TAG: &str = "serial";

/// Whether a scenario carries the [`SERIAL_TAG`].
pub fn is_serial(scenario: &Scenario) -> bool {
    scenario.tags.iter().any(|t| t == SERIAL_TAG)
}

/// What a caller hears as the run goes.
pub trait Progress: Send + Sync {
    /// One trial of one scenario ended.
    fn trial_ended(&self) {}

    /// Every trial of `scenario` ended: its results, trial 1 first.
    fn scenario_ended(&self, scenario: &Scenario, results: Vec<ScenarioResult>);
}

/// Run every trial of `scenarios` against `session`'s host.
///
/// At most `jobs` trials are in flight, whichever scenarios they belong to, so trials of
/// different scenarios overlap (`--repeat`). A `serial` scenario waits until nothing else is in
/// flight, then runs its trials one at a time, alone. Each scenario's results go to
/// [`Progress::scenario_ended`] as soon as its last trial ends.
pub async fn run_trials(
    session: &Session,
    suite: &Suite,
    scenarios: &[&Scenario],
    jobs: usize,
    progress: &dyn Progress,
) {
    let run = Shared {
        session,
        suite,
        progress,
        permits: Semaphore::new(jobs.max(1)),
        alone: RwLock::new(()),
    };
    futures_util::future::join_all(scenarios.iter().map(|s| run.scenario(s))).await;
}

/// What every trial of one [`run_trials`] shares.
struct Shared<'a> {
    session: &'a Session,
    suite: &'a Suite,
    progress: &'a dyn Progress,
    /// One per trial in flight.
    permits: Semaphore,
    /// Readers are the ordinary scenarios, the writer a serial one: tokio's lock is fair, so a
    /// waiting serial scenario holds back new trials until the ones in flight are done.
    alone: RwLock<()>,
}

impl Shared<'_> {
    async fn scenario(&self, scenario: &Scenario) {
        let trials = 1..=self.session.trials();
        let results = if is_serial(scenario) {
            let _alone = self.alone.write().await;
            let mut out = Vec::new();
            for t in trials {
                out.push(self.trial(scenario, t).await);
            }
            out
        } else {
            let _shared = self.alone.read().await;
            futures_util::future::join_all(trials.map(|t| self.trial(scenario, t))).await
        };
        self.progress.scenario_ended(scenario, results);
    }

    async fn trial(&self, scenario: &Scenario, trial: u32) -> ScenarioResult {
        // The semaphore is never closed, so acquiring cannot fail; a permit is held for the
        // whole trial.
        let _permit = self.permits.acquire().await;
        let result = self.session.run_trial(self.suite, scenario, trial).await;
        self.progress.trial_ended();
        result
    }
}

/// A [`Progress`] that only keeps the results.
#[derive(Default)]
pub(super) struct Collect {
    results: std::sync::Mutex<Vec<ScenarioResult>>,
}

impl Collect {
    /// Every result heard, in the order the scenarios ended.
    pub(super) fn into_results(self) -> Vec<ScenarioResult> {
        self.results.into_inner().unwrap_or_else(|p| p.into_inner())
    }
}

impl Progress for Collect {
    fn scenario_ended(&self, _scenario: &Scenario, results: Vec<ScenarioResult>) {
        self.results
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(results);
    }
}
