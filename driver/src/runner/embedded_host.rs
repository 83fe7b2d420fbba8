//! The in-process reference host a [`Target`](super::Target) owns (feature `reference`), and
//! its `--repeat` trial hosts. Below the target, which holds it; how one is started as a
//! target is [`super::embedded`].

/// Test-only knob: under `--repeat`, the `--reference-mutant` is switched on only in the
/// embedded hosts of these trials (comma-separated trial numbers, e.g. `2`), the others run
/// clean, so a test can make a row pass in some trials and fail in others, deterministically.
/// It can only make a mutated host less broken, and does nothing without a mutant.
pub const MUTANT_TRIALS_ENV: &str = "TOOLCERT_TEST_MUTANT_TRIALS";

/// The mutant trial `trial`'s embedded host runs ([`MUTANT_TRIALS_ENV`]).
pub(super) fn mutant_in_trial(
    mutant: Option<reference_host::mutants::Mutant>,
    trial: u32,
) -> Option<reference_host::mutants::Mutant> {
    let Ok(list) = std::env::var(MUTANT_TRIALS_ENV) else {
        return mutant;
    };
    let listed = list
        .split(',')
        .any(|t| t.trim().parse::<u32>().is_ok_and(|t| t == trial));
    mutant.filter(|_| listed)
}

/// The in-process reference host a [`Target`](super::Target) owns, and its `--repeat` trial
/// hosts.
pub(crate) struct Embedded {
    pub(super) host: reference_host::RunningHost,
    /// The front a data mutant's rewrites run in, before `host` ([`super::front`]).
    pub(super) front: Option<super::front::Front>,
    /// Its configuration, to start one more per `--repeat` trial.
    pub(super) config: reference_host::HostConfig,
    /// Under `--repeat K`: the hosts of trials 2 to K
    /// ([`Target::prepare_trials`](super::Target::prepare_trials)), each behind a front of
    /// its own when `front` is there.
    pub(super) trial_hosts: Vec<(reference_host::RunningHost, Option<super::front::Front>)>,
}

impl Embedded {
    /// Start hosts of their own for trials 2 to `trials` (see
    /// [`Target::prepare_trials`](super::Target::prepare_trials)); the error says why one did
    /// not start.
    pub(crate) async fn prepare_trials(&mut self, trials: u32) -> Result<(), String> {
        while (self.trial_hosts.len() as u32) + 1 < trials {
            let trial = self.trial_hosts.len() as u32 + 2;
            let config = reference_host::HostConfig {
                mutant: mutant_in_trial(self.config.mutant, trial),
                ..self.config.clone()
            };
            let host = reference_host::start(config)
                .await
                .map_err(|e| e.to_string())?;
            let front = match &self.front {
                Some(front) => {
                    match super::front::Front::start(&host.base_url, front.mutant.clone()).await {
                        Ok(front) => Some(front),
                        Err(e) => {
                            host.shutdown().await;
                            return Err(format!("the front of trial {trial} did not start: {e}"));
                        }
                    }
                }
                None => None,
            };
            self.trial_hosts.push((host, front));
        }
        Ok(())
    }

    /// The base URL of trial `trial`'s own host, when it has one.
    pub(crate) fn trial_base_url(&self, trial: u32) -> Option<&str> {
        trial
            .checked_sub(2)
            .and_then(|i| self.trial_hosts.get(i as usize))
            .map(|(host, front)| {
                front
                    .as_ref()
                    .map_or(host.base_url.as_str(), |f| &f.base_url)
            })
    }

    /// Stop every host.
    pub(crate) async fn shutdown(self) {
        if let Some(front) = self.front {
            front.shutdown().await;
        }
        for (host, front) in self.trial_hosts {
            if let Some(front) = front {
                front.shutdown().await;
            }
            host.shutdown().await;
        }
        self.host.shutdown().await;
    }
}
