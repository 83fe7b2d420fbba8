//! The one scheduler: which (scenario, trial) pairs run when. `toolcert run`, the mutation
//! matrix (through [`super::run_selected`]) and the benchmarks all go through
//! [`run_trials`], so every caller honours `--jobs` and the `serial` tag the same way.

use std::collections::HashMap;

use tokio::sync::{RwLock, Semaphore};

use super::session::{ScenarioResult, Session};
use toolcert_core::suite::{Scenario, Suite};

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
/// At most `jobs` trials are in flight per host, whichever scenarios they belong to, so trials
/// of different scenarios overlap. `jobs` bounds the load on one host: trials of the embedded
/// host under `--repeat` each have a host of their own, so K trials may have `K × jobs` in
/// flight in all (they wait on their hosts' timeouts, not on the CPU), while a host at a URL
/// shared by every trial never sees more than `jobs`. A trial of a `serial` scenario runs with
/// nothing else in flight on its host: after the ordinary trials that host started with, and
/// before any other, so one trial's serial scenario does not stop the other trials' hosts.
/// Each scenario's results go to [`Progress::scenario_ended`] as soon as its last trial ends.
pub async fn run_trials(
    session: &Session,
    suite: &Suite,
    scenarios: &[&Scenario],
    jobs: usize,
    progress: &dyn Progress,
) {
    schedule(&SessionTrials { session, suite }, scenarios, jobs, progress).await;
}

/// What the scheduler drives: a session's trials (in the tests, a fake that records what ran
/// together).
trait Trials: Sync {
    /// K, the number of trials of every scenario.
    fn trials(&self) -> u32;
    /// The host trial `trial` runs against (its base URL): trials with one host share its
    /// limits.
    fn trial_host(&self, trial: u32) -> &str;
    /// Run trial `trial` of `scenario` to its result.
    fn run_trial(
        &self,
        scenario: &Scenario,
        trial: u32,
    ) -> impl std::future::Future<Output = ScenarioResult> + Send;
}

/// A [`Session`] and the suite its scenarios come from.
struct SessionTrials<'a> {
    session: &'a Session,
    suite: &'a Suite,
}

impl Trials for SessionTrials<'_> {
    fn trials(&self) -> u32 {
        self.session.trials()
    }

    fn trial_host(&self, trial: u32) -> &str {
        self.session.trial_host(trial)
    }

    async fn run_trial(&self, scenario: &Scenario, trial: u32) -> ScenarioResult {
        self.session.run_trial(self.suite, scenario, trial).await
    }
}

/// [`run_trials`] over any [`Trials`].
async fn schedule<T: Trials>(
    trials: &T,
    scenarios: &[&Scenario],
    jobs: usize,
    progress: &dyn Progress,
) {
    let hosts: HashMap<&str, Host> = (1..=trials.trials())
        .map(|t| {
            let host = Host {
                permits: Semaphore::new(jobs.max(1)),
                alone: RwLock::new(()),
            };
            (trials.trial_host(t), host)
        })
        .collect();
    let run = Shared {
        trials,
        progress,
        hosts,
    };
    // Ordinary scenarios first: their trials take their hosts' read locks on the first poll,
    // so a serial trial queues behind them instead of holding back everything listed after it.
    let (serial, ordinary): (Vec<&Scenario>, Vec<&Scenario>) =
        scenarios.iter().copied().partition(|s| is_serial(s));
    let all = ordinary.into_iter().chain(serial);
    futures_util::future::join_all(all.map(|s| run.scenario(s))).await;
}

/// What every trial of one [`schedule`] shares.
struct Shared<'a, T> {
    trials: &'a T,
    progress: &'a dyn Progress,
    /// Per host (its base URL): trials sharing one URL share its limits.
    hosts: HashMap<&'a str, Host>,
}

/// The limits of one host's trials.
struct Host {
    /// One per trial in flight on this host.
    permits: Semaphore,
    /// Ordinary trials read, a serial trial writes. tokio's lock is fair, so a waiting serial
    /// trial holds back later trials on its host until the ones in flight end.
    alone: RwLock<()>,
}

impl<T: Trials> Shared<'_, T> {
    async fn scenario(&self, scenario: &Scenario) {
        let serial = is_serial(scenario);
        let trials = 1..=self.trials.trials();
        let results =
            futures_util::future::join_all(trials.map(|t| self.trial(scenario, t, serial))).await;
        self.progress.scenario_ended(scenario, results);
    }

    async fn trial(&self, scenario: &Scenario, trial: u32, serial: bool) -> ScenarioResult {
        // Every trial's host is in the map (`schedule` put it there).
        let Some(host) = self.hosts.get(self.trials.trial_host(trial)) else {
            return self.trials.run_trial(scenario, trial).await;
        };
        // The lock first, on the first poll (see `schedule`).
        let (_shared, _alone) = if serial {
            (None, Some(host.alone.write().await))
        } else {
            (Some(host.alone.read().await), None)
        };
        // The semaphore is never closed, so acquiring cannot fail; a permit is held for the
        // whole trial.
        let _permit = host.permits.acquire().await;
        let result = self.trials.run_trial(scenario, trial).await;
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

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::time::Duration;

    use serde_json::Value;

    use super::*;

    /// Trials that record, per host, how many were in flight at once and what a serial
    /// trial shared its host with.
    struct Fake {
        hosts: Vec<String>,
        state: Mutex<FakeState>,
    }

    #[derive(Default)]
    struct FakeState {
        in_flight: HashMap<String, usize>,
        peak_per_host: HashMap<String, usize>,
        peak_total: usize,
        serial_shared: bool,
    }

    impl Trials for Fake {
        fn trials(&self) -> u32 {
            self.hosts.len() as u32
        }

        fn trial_host(&self, trial: u32) -> &str {
            &self.hosts[trial as usize - 1]
        }

        async fn run_trial(&self, scenario: &Scenario, trial: u32) -> ScenarioResult {
            let host = self.trial_host(trial).to_owned();
            {
                let mut st = self.state.lock().unwrap();
                let now = {
                    let n = st.in_flight.entry(host.clone()).or_default();
                    *n += 1;
                    *n
                };
                if is_serial(scenario) && now > 1 {
                    st.serial_shared = true;
                }
                let peak = st.peak_per_host.entry(host.clone()).or_default();
                *peak = (*peak).max(now);
                let total: usize = st.in_flight.values().sum();
                st.peak_total = st.peak_total.max(total);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
            let mut st = self.state.lock().unwrap();
            *st.in_flight.get_mut(&host).unwrap() -= 1;
            if is_serial(scenario) && st.in_flight[&host] > 0 {
                st.serial_shared = true;
            }
            result_of(scenario)
        }
    }

    fn result_of(scenario: &Scenario) -> ScenarioResult {
        ScenarioResult {
            scenario_id: scenario.id.clone(),
            title: scenario.title.clone(),
            disposition: toolcert_core::verdict::Disposition::Pass,
            checks: Vec::new(),
            transcript: Default::default(),
            observations: Value::Null,
            elapsed_ms: 0,
            trial: None,
            seed: None,
        }
    }

    fn scenario(id: &str, serial: bool) -> Scenario {
        let tags: Vec<&str> = if serial { vec![SERIAL_TAG] } else { vec![] };
        serde_json::from_value(serde_json::json!({
            "id": id, "title": id, "rows": [], "gate": null, "kills": [], "tags": tags,
            "steps": [], "checks": []
        }))
        .expect("a minimal scenario")
    }

    fn run(hosts: &[&str], scenarios: &[Scenario], jobs: usize) -> (FakeState, usize) {
        let fake = Fake {
            hosts: hosts.iter().map(|h| h.to_string()).collect(),
            state: Mutex::default(),
        };
        let refs: Vec<&Scenario> = scenarios.iter().collect();
        let collect = Collect::default();
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap()
            .block_on(schedule(&fake, &refs, jobs, &collect));
        (
            fake.state.into_inner().unwrap(),
            collect.into_results().len(),
        )
    }

    #[test]
    fn jobs_bound_each_host_not_all_hosts() {
        let scenarios: Vec<Scenario> = (0..6).map(|i| scenario(&format!("s{i}"), false)).collect();
        // Three trials, each on a host of its own (the embedded host under --repeat).
        let (st, results) = run(&["a", "b", "c"], &scenarios, 2);
        assert_eq!(results, 18);
        assert!(
            st.peak_per_host.values().all(|&p| p <= 2),
            "{:?}",
            st.peak_per_host
        );
        assert!(
            st.peak_total > 2,
            "trials of different hosts overlap: {}",
            st.peak_total
        );
        // Three trials of one host at a URL: never more than `jobs` on it.
        let (st, results) = run(&["u", "u", "u"], &scenarios, 2);
        assert_eq!(results, 18);
        assert_eq!(st.peak_per_host["u"], 2);
        assert_eq!(st.peak_total, 2);
    }

    #[test]
    fn a_serial_trial_has_its_host_to_itself() {
        let mut scenarios: Vec<Scenario> =
            (0..5).map(|i| scenario(&format!("s{i}"), false)).collect();
        scenarios.insert(2, scenario("lonely", true));
        let (st, results) = run(&["a", "b"], &scenarios, 4);
        assert_eq!(results, 12);
        assert!(
            !st.serial_shared,
            "a serial trial ran beside another on its host"
        );
        assert!(st.peak_total > 1);
    }
}
