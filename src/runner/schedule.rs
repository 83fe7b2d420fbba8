//! The one scheduler: which (scenario, trial) pairs run when. `toolcert run`, the mutation
//! matrix (through [`super::run_selected`]) and the benchmarks all go through
//! [`run_trials`], so every caller honours `--jobs` and the `serial` tag the same way.

use std::collections::HashMap;

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
/// different scenarios overlap (`--repeat`). A trial of a `serial` scenario runs with nothing
/// else in flight on its host: after the ordinary trials that host started with, and before
/// any other. Trials of the embedded host under `--repeat` each have a host of their own, so
/// one trial's serial scenario does not stop the other trials. Each scenario's results go to
/// [`Progress::scenario_ended`] as soon as its last trial ends.
pub async fn run_trials(
    session: &Session,
    suite: &Suite,
    scenarios: &[&Scenario],
    jobs: usize,
    progress: &dyn Progress,
) {
    let hosts: HashMap<&str, RwLock<()>> = (1..=session.trials())
        .map(|t| (session.trial_host(t), RwLock::new(())))
        .collect();
    let run = Shared {
        session,
        suite,
        progress,
        permits: Semaphore::new(jobs.max(1)),
        hosts,
    };
    // Ordinary scenarios first: their trials take their hosts' read locks on the first poll,
    // so a serial trial queues behind them instead of holding back everything listed after it.
    let (serial, ordinary): (Vec<&Scenario>, Vec<&Scenario>) =
        scenarios.iter().copied().partition(|s| is_serial(s));
    let all = ordinary.into_iter().chain(serial);
    futures_util::future::join_all(all.map(|s| run.scenario(s))).await;
}

/// What every trial of one [`run_trials`] shares.
struct Shared<'a> {
    session: &'a Session,
    suite: &'a Suite,
    progress: &'a dyn Progress,
    /// One per trial in flight.
    permits: Semaphore,
    /// Per host: ordinary trials read, a serial trial writes. tokio's lock is fair, so a
    /// waiting serial trial holds back later trials on its host until the ones in flight end.
    hosts: HashMap<&'a str, RwLock<()>>,
}

impl Shared<'_> {
    async fn scenario(&self, scenario: &Scenario) {
        let serial = is_serial(scenario);
        let trials = 1..=self.session.trials();
        let results =
            futures_util::future::join_all(trials.map(|t| self.trial(scenario, t, serial))).await;
        self.progress.scenario_ended(scenario, results);
    }

    async fn trial(&self, scenario: &Scenario, trial: u32, serial: bool) -> ScenarioResult {
        let host = self.hosts.get(self.session.trial_host(trial));
        // The lock first, on the first poll (see `run_trials`); every host is in the map.
        let (_shared, _alone) = match (host, serial) {
            (Some(lock), false) => (Some(lock.read().await), None),
            (Some(lock), true) => (None, Some(lock.write().await)),
            (None, _) => (None, None),
        };
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
