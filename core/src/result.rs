//! What a run produced: each scenario's result and the run's outcome, the records every
//! report is written from and the offline re-check reads back. They sit below the runner
//! (which fills them) so the reports and the re-check need no runner.

use serde::Serialize;
use serde_json::Value;

use crate::suite::Suite;
use crate::transcript::Transcript;
use crate::verdict::{CheckOutcome, CheckStatus, Disposition, Evidence, FoldOptions, RowVerdict};

/// What one scenario produced.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScenarioResult {
    /// Scenario id.
    pub scenario_id: String,
    /// Scenario title.
    pub title: String,
    /// The worst disposition among its checks (SHOULD failures as `warn`).
    pub disposition: Disposition,
    /// Every judged check.
    pub checks: Vec<CheckOutcome>,
    /// Redacted exchanges with the host.
    pub transcript: Transcript,
    /// Redacted observation document the checks were judged over.
    pub observations: Value,
    /// Wall time.
    pub elapsed_ms: u64,
    /// Under `--repeat K` (K > 1): which trial this is, 1 to K.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trial: Option<u32>,
    /// Under `--repeat K`: the trial's seed ([`crate::repeat::trial_seed`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

impl ScenarioResult {
    /// A one-paragraph account of every non-pass check, for the console.
    pub fn failure_message(&self) -> String {
        self.checks
            .iter()
            .filter(|c| c.status != CheckStatus::Pass)
            .map(|c| {
                format!(
                    "[{}] {} {}: {}",
                    c.status.as_str(),
                    c.row,
                    c.check_id,
                    c.detail
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Everything a run produced.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunOutcome {
    /// Seed used.
    pub seed: u64,
    /// Strict mode.
    pub strict: bool,
    /// `--require-evidence`, if given.
    pub require_evidence: Option<Evidence>,
    /// The run's certification: the one verdict every output reads.
    pub certification: crate::verdict::Certification,
    /// Host base URL.
    pub base_url: String,
    /// Whether the host is the embedded reference host.
    pub embedded: bool,
    /// The embedded reference host's mutant, if any.
    pub mutant: Option<String>,
    /// Whether the embedded reference host ran in upstream-only mode.
    pub upstream_only: bool,
    /// The discovery document, its digest and wire major, or why discovery failed.
    pub discovery: Value,
    /// Per scenario results, sorted by id (then trial).
    pub scenarios: Vec<ScenarioResult>,
    /// `--repeat K` with K > 1: K and every trial's seed.
    pub repeat: Option<crate::repeat::Repeat>,
    /// One verdict per row the run judged, in registry order.
    pub rows: Vec<RowVerdict>,
    /// Rows that no scenario covers yet (not unwitnessable): listed, never judged as pass.
    pub uncovered: Vec<String>,
    /// Total wall time.
    pub elapsed_ms: u64,
}

impl RunOutcome {
    /// Rows judged on at least one observation (not merely inapplicable or blocked).
    pub fn measured(&self) -> usize {
        self.rows.iter().filter(|r| r.assertions > 0).count()
    }
}

impl RunOutcome {
    /// The same run with only `scenarios` (e.g. the merged shards, or a subset of this run's
    /// results), its rows folded again and its certification computed again with
    /// `certify` and `selection`: the one path by which results become a verdict outside
    /// `runner::conclude`.
    pub fn refold(
        &self,
        suite: &Suite,
        mut scenarios: Vec<ScenarioResult>,
        certify: crate::verdict::CertifyOptions,
        selection: crate::verdict::Selection,
    ) -> RunOutcome {
        scenarios.sort_by(|a, b| (&a.scenario_id, a.trial).cmp(&(&b.scenario_id, b.trial)));
        let seeds = self.repeat.as_ref().map_or(&[][..], |r| r.seeds.as_slice());
        let rows = crate::repeat::fold_trials(
            suite,
            FoldOptions {
                strict: certify.strict,
            },
            scenarios
                .iter()
                .map(|s| (s.scenario_id.as_str(), s.trial, s.checks.as_slice())),
            seeds,
        );
        let ran: std::collections::BTreeSet<&str> =
            scenarios.iter().map(|s| s.scenario_id.as_str()).collect();
        let certification = match self.certification.stopped.as_deref() {
            Some(why) => crate::verdict::Certification::stopped(suite, why, certify, selection),
            None => crate::verdict::Certification::compute(suite, &rows, &ran, certify, selection),
        };
        RunOutcome {
            strict: certify.strict,
            require_evidence: (certify.require_evidence != Evidence::SelfReport)
                .then_some(certify.require_evidence),
            certification,
            scenarios,
            rows,
            ..self.clone()
        }
    }
}
