//! A run's session (what every scenario of a run shares: the host client, the witnesses, the
//! captured discovery document), its options, each trial's result, and how the results of a
//! run conclude into its outcome. Below the scheduler and the entry points, which use it.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::interrupt;
use super::target::{Target, TargetError};
use crate::host::{
    Budgets, Discovery, HostClient, HostProfile, STARTUP_BUDGET, SpawnCommand, SpawnedHost,
    discover,
};
use crate::steps::{Flow, ScenarioCtx};
use crate::witness::{McpServer, Receiver};
use toolcert_base::redact::Redactor;
use toolcert_core::budget::{MAX_DEPTH, MAX_DISCOVERY_BYTES, MemoryBudget, bound_depth, json_len};
pub use toolcert_core::result::{RunOutcome, ScenarioResult};
use toolcert_core::suite::{Scenario, Suite};
use toolcert_core::template;
use toolcert_core::transcript::Transcript;
use toolcert_core::verdict::{CheckOutcome, CheckStatus, Disposition, Evidence, FoldOptions};

/// Default wall budget of one scenario (scaled by `--timeout-scale` at the CLI): the longest
/// legitimate scenario (a recovery after a kill, an approval that expires) takes a fraction of
/// it on a live host.
pub const SCENARIO_BUDGET: Duration = Duration::from_secs(90);

/// After this many scenarios in a row lost the host (connect refused, request budget spent),
/// the host is taken to have stopped answering: the rest of the run is `error` at once
/// instead of each scenario waiting out its own timeouts.
pub const HOST_LOST_AFTER: usize = 3;

/// Scenarios in flight at once against a host toolcert did not start (`--jobs`' default):
/// gentle with a host that may be a staging server.
pub const HOST_JOBS: usize = 4;

/// Scenarios in flight at once against an embedded reference host (`--jobs`' default there,
/// and each mutation-matrix column's): the host is toolcert's own, and its scenarios mostly
/// wait on timers, not on the CPU.
pub const EMBEDDED_JOBS: usize = 16;

/// Options of one run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Seed for every random choice (nonces and canaries mix in a per-process salt so a rerun
    /// against a stateful host never collides with the last run's tool names).
    pub seed: u64,
    /// Time and size budgets.
    pub budgets: Budgets,
    /// Scenarios in flight at once.
    pub jobs: usize,
    /// Strict mode: `warn` and `inapplicable` deny certification too.
    pub strict: bool,
    /// `--require-evidence`: the weakest evidence tier a profile may certify at.
    pub require_evidence: Option<Evidence>,
    /// `--include-tentative`: rows from drafts are scored like accepted ones.
    pub include_tentative: bool,
    /// How the scenarios were selected (filters, `--partition`), recorded in the
    /// certification: a run that did not cover the suite is partial.
    pub selection: toolcert_core::verdict::Selection,
    /// Wall budget of one scenario; past it the scenario's remaining steps are `error`.
    pub scenario_budget: Duration,
    /// `--deadline`: the whole run's wall budget, from the moment the session opens;
    /// scenarios not started by then are `error`, running ones stop at it.
    pub deadline: Option<Duration>,
    /// toolcert's binary, to run the embedded reference host as a child process for
    /// kill-and-restart scenarios (default: [`crate::host::reference_host_exe`]).
    pub reference_host_exe: Option<std::path::PathBuf>,
    /// `--ca-cert`: the only roots trusted for an https host (empty: the system's).
    pub ca_certs: crate::host::CaCerts,
    /// `--repeat K`: trials per scenario, 1 to [`toolcert_core::repeat::MAX_REPEAT`] (see
    /// [`toolcert_core::repeat`]).
    pub repeat: u32,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            seed: 0,
            budgets: Budgets::default(),
            jobs: HOST_JOBS,
            strict: false,
            require_evidence: None,
            include_tentative: false,
            selection: toolcert_core::verdict::Selection::default(),
            scenario_budget: SCENARIO_BUDGET,
            deadline: None,
            reference_host_exe: crate::host::reference_host_exe(),
            ca_certs: crate::host::CaCerts::default(),
            repeat: 1,
        }
    }
}

/// State shared by the scenarios of one run.
pub struct Session {
    client: HostClient,
    /// Under `--repeat K`: the clients of trials 2 to K (each its own embedded host, or the
    /// target's for any other host).
    trial_clients: Vec<HostClient>,
    receiver: Receiver,
    provider: mock_provider::MockProvider,
    mcp: McpServer,
    discovery: Result<Discovery, String>,
    profile: HostProfile,
    spawner: Option<SpawnCommand>,
    /// The seed of each trial (`--repeat K`: K seeds; trial 1's is the run seed).
    trial_seeds: Vec<u64>,
    salt: u64,
    strict: bool,
    /// Every token of the run (canaries are added per suite, see [`Session::redactor`]).
    tokens: Redactor,
    /// The tokens and the suite's canaries, compiled once (a session runs one suite).
    redactor: OnceLock<Redactor>,
    /// Wall budget of one scenario.
    scenario_budget: Duration,
    /// When the whole run must be over (`--deadline`).
    run_deadline: Option<Instant>,
    /// Scenarios in a row that lost the host.
    lost_streak: AtomicUsize,
    /// Why the host is taken to have stopped answering, once it is.
    host_lost: OnceLock<String>,
    /// The event reads of the run (several cut in a row stop the rest).
    log_reads: crate::steps::LogReads,
}

impl Session {
    /// Start toolcert's doubles and capture discovery. A host that cannot be discovered still
    /// yields a session: every scenario then reports `error` with the reason.
    pub async fn open(target: &Target, opts: &RunOptions) -> Result<Session, TargetError> {
        let tokens = target
            .profile
            .roles
            .iter()
            .filter_map(|(role, p)| p.token.clone().map(|t| (role.clone(), t)))
            .collect();
        let mut client =
            HostClient::new_with_ca_certs(&target.base_url, tokens, opts.budgets, &opts.ca_certs)
                .map_err(|e| TargetError::Client(e.to_string()))?;
        // One budget for everything the run keeps of what hosts send, every trial's client
        // included ([`toolcert_core::budget`]); set once discovery is read, which keeps only
        // the document it takes (bounded on its own, [`bounded_discovery`]).
        let budget = std::sync::Arc::new(MemoryBudget::for_trials(opts.repeat));
        let receiver = Receiver::start().await.map_err(TargetError::Receiver)?;
        let provider = mock_provider::MockProvider::start()
            .await
            .map_err(TargetError::Provider)?;
        let mcp = McpServer::start().await.map_err(TargetError::Receiver)?;
        let discovery = discover(&client)
            .await
            .map_err(|e| e.to_string())
            .and_then(bounded_discovery)
            .and_then(|d| {
                budget
                    .charge(json_len(&d.document))
                    .map(|()| d)
                    .map_err(|e| e.to_string())
            });
        client.set_budget(budget.clone());
        if let Ok(d) = &discovery {
            client.set_wire(d.wire);
        }
        let trial_clients = (2..=opts.repeat.max(1))
            .map(|t| client.with_base_url(target.trial_base_url(t)))
            .collect();
        let salt = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        let tokens = Redactor::new(target.profile.secrets(), Vec::new());
        Ok(Session {
            trial_clients,
            tokens,
            redactor: OnceLock::new(),
            scenario_budget: opts.scenario_budget,
            run_deadline: opts.deadline.map(|d| Instant::now() + d),
            lost_streak: AtomicUsize::new(0),
            host_lost: OnceLock::new(),
            log_reads: crate::steps::LogReads::default(),
            client,
            receiver,
            provider,
            mcp,
            discovery,
            profile: target.profile.clone(),
            spawner: target.spawner.clone(),
            trial_seeds: toolcert_core::repeat::trial_seeds(opts.seed, opts.repeat),
            salt,
            strict: opts.strict,
        })
    }

    /// The captured discovery, or why there is none.
    pub fn discovery(&self) -> Result<&Discovery, &str> {
        self.discovery.as_ref().map_err(String::as_str)
    }

    /// Why a scenario does not apply to this host (a fact about the host), or `None` when it
    /// does or when discovery failed.
    pub fn inapplicable_reason(&self, scenario: &Scenario) -> Option<String> {
        let d = self.discovery.as_ref().ok()?;
        if !scenario.wire.is_empty() && !scenario.wire.contains(&d.wire.number()) {
            return Some(format!(
                "the host speaks wire major {}; these rows belong to {:?}",
                d.wire.number(),
                scenario.wire
            ));
        }
        if let Some(wire) = &scenario.provider_wire
            && !self.profile.provider_wires.contains(wire)
        {
            return Some(format!(
                "the host profile says the host cannot use a {wire} provider"
            ));
        }
        let gate = scenario.gate.as_deref()?;
        d.unmet_gate(gate)
    }

    /// Fixture id ⇒ the host's workflow id: what discovery advertises, then what the profile
    /// maps (`{{fixtures.conformance-noop}}` renders through it).
    fn fixtures(&self, discovery: &Discovery) -> Value {
        let mut map = serde_json::Map::new();
        for id in discovery.fixtures() {
            map.insert(id.clone(), Value::String(id));
        }
        for (id, workflow) in &self.profile.fixtures {
            map.insert(id.clone(), Value::String(workflow.clone()));
        }
        Value::Object(map)
    }

    /// Everything `scenario` can learn from the session's discovery without asking the host
    /// anything: whether it applies and why not, the wire major, the fixtures map, and, for a
    /// scenario that reads discovery itself (a `/discovery/…` pointer, a `{{discovery.…}}`
    /// template, a `discovery` step, or `fireEffectSeams`, which reads the effect-seams path),
    /// the document and its ETag. Two sessions with equal views run the scenario alike as far
    /// as discovery goes: the mutation matrix uses it for mutants reached only while
    /// discovery is served.
    pub fn discovery_view(&self, scenario: &Scenario) -> Value {
        let d = match &self.discovery {
            Ok(d) => d,
            Err(e) => return json!({"error": e}),
        };
        let reads_document = reads_discovery(scenario);
        json!({
            "inapplicable": self.inapplicable_reason(scenario),
            "wire": d.wire.number(),
            "fixtures": self.fixtures(d),
            "document": if reads_document { json!([d.document, d.etag]) } else { Value::Null },
        })
    }

    /// Track scenarios that lost the host: after [`HOST_LOST_AFTER`] in a row, the host is
    /// taken to have stopped answering. A scenario with its own host process (kill and
    /// restart) says nothing about the target, and any answer from the host resets the count.
    fn note_host_answers(&self, scenario: &Scenario, lost: Option<&str>, transcript: &Transcript) {
        // A spent budget is toolcert's bound, not the host going away (every later scenario
        // is `error` for it anyway).
        if scenario.needs_spawned_host() || self.budget_spent().is_some() {
            return;
        }
        match lost {
            Some(reason) => {
                let streak = self.lost_streak.fetch_add(1, Ordering::SeqCst) + 1;
                if streak >= HOST_LOST_AFTER {
                    let _ = self.host_lost.set(format!(
                        "{streak} scenarios in a row lost it; the last: {reason}"
                    ));
                }
            }
            None if transcript.exchanges.iter().any(|e| e.status.is_some()) => {
                self.lost_streak.store(0, Ordering::SeqCst);
            }
            None => {}
        }
    }

    /// Why nothing more is kept, once the run's memory budget is spent.
    pub fn budget_spent(&self) -> Option<String> {
        self.client
            .budget()
            .and_then(|b| b.exhausted())
            .map(|e| e.to_string())
    }

    /// The canary secret of a scenario's trial: seeded by the scenario and the trial seed,
    /// derived up front, so the redactor knows every canary of the run before any host answers.
    fn canary_of(&self, seed: u64, scenario: &str) -> String {
        format!("tc-canary-{}", self.derive(seed, scenario, "canary"))
    }

    /// The redactor of a run of `suite`: every token of the profile and flags, and the canary
    /// of every scenario in every trial (a host may echo one scenario's canary into another's
    /// answers). Built on first use: a session runs one suite.
    pub fn redactor(&self, suite: &Suite) -> Redactor {
        self.redactor
            .get_or_init(|| {
                self.tokens
                    .with_canaries(suite.scenarios.iter().flat_map(|s| {
                        self.trial_seeds
                            .iter()
                            .map(|seed| self.canary_of(*seed, &s.id))
                    }))
            })
            .clone()
    }

    fn derive(&self, seed: u64, scenario: &str, purpose: &str) -> String {
        let material = format!("{}\0{}\0{}\0{}", seed, self.salt, scenario, purpose);
        toolcert_base::canonical::sha256_hex(material.as_bytes())[..16].to_string()
    }

    /// Trials per scenario (`--repeat K`).
    pub fn trials(&self) -> u32 {
        self.trial_seeds.len() as u32
    }

    /// The seed of each trial, trial 1 first.
    pub fn trial_seeds(&self) -> &[u64] {
        &self.trial_seeds
    }

    /// Run one scenario to its judged result (trial 1).
    pub async fn run_scenario(&self, suite: &Suite, scenario: &Scenario) -> ScenarioResult {
        self.run_trial(suite, scenario, 1).await
    }

    /// Run trial `trial` (1 to [`Session::trials`]) of a scenario: its nonce, canary and so its
    /// receiver ids, tool names and doubles' state derive from the trial's seed, so trials
    /// overlap without sharing state. Under `--repeat` the result names its trial and seed.
    pub async fn run_trial(
        &self,
        suite: &Suite,
        scenario: &Scenario,
        trial: u32,
    ) -> ScenarioResult {
        let mut result = self.run_seeded(suite, scenario, trial).await;
        if self.trials() > 1 {
            result.trial = Some(trial);
            result.seed = Some(self.seed_of(trial));
        }
        result
    }

    fn seed_of(&self, trial: u32) -> u64 {
        let i = (trial.max(1) - 1) as usize;
        self.trial_seeds
            .get(i)
            .copied()
            .unwrap_or_else(|| toolcert_core::repeat::trial_seed(self.trial_seeds[0], trial))
    }

    /// The client trial `trial` drives: the session's, or under `--repeat` against the
    /// embedded host, the one of the trial's own host.
    fn client_of(&self, trial: u32) -> &HostClient {
        trial
            .checked_sub(2)
            .and_then(|i| self.trial_clients.get(i as usize))
            .unwrap_or(&self.client)
    }

    /// The base URL of the host trial `trial` drives: trials of the embedded host under
    /// `--repeat` each have a host of their own, every other trial shares the target's.
    pub fn trial_host(&self, trial: u32) -> &str {
        self.client_of(trial).base_url()
    }

    async fn run_seeded(&self, suite: &Suite, scenario: &Scenario, trial: u32) -> ScenarioResult {
        let seed = self.seed_of(trial);
        let host_client = self.client_of(trial);
        let started = Instant::now();
        let blanket = |status: CheckStatus, detail: String| -> Vec<CheckOutcome> {
            scenario
                .checks
                .iter()
                .map(|c| CheckOutcome {
                    check_id: c.id.clone(),
                    row: c.row.clone(),
                    says: c.says.clone(),
                    status,
                    detail: detail.clone(),
                    evidence: toolcert_core::expect::evidence_of(scenario, c),
                    control: c.control,
                    warn_unless_strict: c.warn_unless_strict.clone(),
                })
                .collect()
        };
        // A scenario not driven: every check takes the same status and reason.
        let not_run = |status: CheckStatus, detail: String| -> ScenarioResult {
            self.finish(
                suite,
                scenario,
                blanket(status, detail),
                Transcript::default(),
                Value::Null,
                started,
            )
        };
        // Nothing to drive: every check takes the same status and reason.
        let early = match &self.discovery {
            Err(e) => Some((
                CheckStatus::Error,
                format!("could not observe the host: {e}"),
            )),
            Ok(_) => self
                .inapplicable_reason(scenario)
                .map(|reason| (CheckStatus::Inapplicable, reason))
                .or_else(|| {
                    interrupt::raised().map(|signal| {
                        (
                            CheckStatus::Error,
                            format!("not run: {}", interrupt::reason(signal)),
                        )
                    })
                })
                .or_else(|| {
                    self.budget_spent()
                        .map(|why| (CheckStatus::Error, format!("not run: {why}")))
                })
                .or_else(|| {
                    self.host_lost.get().map(|why| {
                        (
                            CheckStatus::Error,
                            format!(
                                "not run: the host stopped answering earlier in this run ({why})"
                            ),
                        )
                    })
                })
                .or_else(|| {
                    self.run_deadline.filter(|d| Instant::now() >= *d).map(|_| {
                        (
                            CheckStatus::Error,
                            "not run: the run's --deadline passed before this scenario started"
                                .to_string(),
                        )
                    })
                }),
        };
        let discovery = match (&self.discovery, early) {
            (Ok(d), None) => d,
            (_, early) => {
                let (status, reason) = early.unwrap_or((CheckStatus::Error, String::new()));
                return not_run(status, reason);
            }
        };
        let nonce = self.derive(seed, &scenario.id, "nonce");
        let canary = self.canary_of(seed, &scenario.id);
        let (roles, scopes) = self.profile.template_view();
        let mut doc = json!({
            "vars": {"nonce": nonce, "canary": canary},
            "roles": roles,
            "scopes": scopes,
            "facts": self.profile.facts,
            "fixtures": self.fixtures(discovery),
            "discovery": {
                "document": if reads_discovery(scenario) { discovery.document.clone() } else { Value::Null },
                "etag": discovery.etag,
                "wireMajor": discovery.wire.number(),
                // toolcert's clock, recorded so a re-check judges date windows (MCP-4) alike.
                "checkedAt": utc_now(),
            },
            "receivers": {},
            "provider": {"baseUrl": self.provider.base_url(), "wire": scenario.provider_wire},
            "providers": {},
            "steps": {},
        });
        // The scenario's copy of the discovery document is kept too.
        if let Err(e) = host_client.charge(json_len(&doc["discovery"]["document"])) {
            return not_run(CheckStatus::Error, format!("not run: {e}"));
        }
        for (name, value) in &scenario.vars {
            let rendered = template::render(value, &doc);
            doc["vars"][name] = match rendered {
                Ok(v) => v,
                // Refers to something made later (a receiver, a provider script, a step): kept
                // as a macro and expanded where it is used.
                Err(e)
                    if e.path().is_some_and(|p| {
                        ["receivers.", "providers.", "steps."]
                            .iter()
                            .any(|k| p.starts_with(k))
                    }) =>
                {
                    match doc[template::MACROS].as_array_mut() {
                        Some(names) => names.push(json!(name)),
                        None => doc[template::MACROS] = json!([name]),
                    }
                    value.clone()
                }
                Err(e) => crate::steps::error(format!("scenario data: vars.{name}: {e}")),
            };
        }
        // A scenario that kills and restarts the host gets a host process of its own, so the
        // others never see it die.
        let mut spawned: Option<SpawnedHost> = None;
        let mut spawn_unavailable = None;
        if scenario.needs_spawned_host() {
            match &self.spawner {
                None => {
                    return not_run(
                        CheckStatus::Blocked,
                        "this scenario kills the host with SIGKILL and starts it again; toolcert can do that only to a host it starts itself: run with --spawn 'CMD' (CMD may use {port} and {data_dir})".into(),
                    );
                }
                Some(command) => {
                    let budget = STARTUP_BUDGET.max(self.client.budgets().request);
                    match SpawnedHost::start(command, &nonce, budget).await {
                        Ok(host) => spawned = Some(host),
                        Err(e) => spawn_unavailable = Some(format!("no host process: {e}")),
                    }
                }
            }
        }
        let scenario_client = spawned
            .as_ref()
            .map(|h| host_client.with_base_url(h.base_url()));
        let mut ctx = ScenarioCtx {
            client: scenario_client.as_ref().unwrap_or(host_client),
            surfaces: &suite.surfaces,
            receiver: &self.receiver,
            provider: &self.provider,
            mcp: &self.mcp,
            mcp_servers: Vec::new(),
            providers: Vec::new(),
            discovery,
            doc,
            transcript: Transcript::charged_to(host_client.budget().cloned()),
            nonce: nonce.clone(),
            receivers: Vec::new(),
            tainted: Vec::new(),
            spawned,
            spawn_unavailable,
            log_reads: &self.log_reads,
        };
        let budget_end = started + self.scenario_budget;
        let (deadline, out_of_time) = match self.run_deadline {
            Some(run_end) if run_end < budget_end => (run_end, "the run's --deadline passed"),
            _ => (
                budget_end,
                "the scenario's wall budget ran out (it is the timeout scale times 90 s)",
            ),
        };
        let mut lost: Option<String> = None;
        let mut timed_out = false;
        for step in &scenario.steps {
            if let Some(signal) = interrupt::raised() {
                ctx.abandon(step, &format!("not run: {}", interrupt::reason(signal)));
                continue;
            }
            if let Some(reason) = &lost {
                ctx.skip(step, reason);
                continue;
            }
            if timed_out || Instant::now() >= deadline {
                timed_out = true;
                ctx.abandon(step, &format!("not run: {out_of_time}"));
                continue;
            }
            let until = tokio::time::Instant::from_std(deadline);
            // A signal stops the step where it is: the run concludes with what it measured.
            let ran = tokio::select! {
                biased;
                _ = interrupt::wait() => None,
                ran = tokio::time::timeout_at(until, ctx.run(step)) => Some(ran),
            };
            match ran {
                None => {
                    let signal = interrupt::raised().unwrap_or("a signal");
                    ctx.abandon(
                        step,
                        &format!("not finished: {}", interrupt::reason(signal)),
                    );
                }
                Some(Ok(Flow::HostLost(reason))) => lost = Some(reason),
                Some(Ok(Flow::Continue)) => {}
                Some(Err(_)) => {
                    timed_out = true;
                    ctx.abandon(
                        step,
                        &format!("not finished: {out_of_time} during this step"),
                    );
                }
            }
        }
        self.note_host_answers(scenario, lost.as_deref(), &ctx.transcript);
        if let Some(mut host) = ctx.spawned.take() {
            host.kill().await;
        }
        ctx.observe_receivers();
        ctx.observe_providers();
        ctx.observe_mcp_servers();
        let checks = toolcert_core::expect::evaluate(
            suite,
            scenario,
            &ctx.doc,
            Some(discovery.wire.number()),
        );
        self.receiver.forget(&nonce);
        self.mcp.forget(&nonce);
        for (_, model) in &ctx.providers {
            self.provider.forget(model);
        }
        self.finish(suite, scenario, checks, ctx.transcript, ctx.doc, started)
    }

    /// Fold a scenario's outcome, scrubbing every string that leaves it (check details,
    /// transcript, observations) of the run's tokens and canaries.
    fn finish(
        &self,
        suite: &Suite,
        scenario: &Scenario,
        checks: Vec<CheckOutcome>,
        transcript: Transcript,
        mut observations: Value,
        started: Instant,
    ) -> ScenarioResult {
        let redactor = self.redactor(suite);
        redactor.scrub(&mut observations);
        // A check's detail may quote what the host sent (an excerpt); its id, row and words
        // are the suite's own, scrubbed of whole secrets only (`Redactor::label`).
        let checks: Vec<CheckOutcome> = checks
            .into_iter()
            .map(|c| CheckOutcome {
                check_id: redactor.label(&c.check_id).into_owned(),
                row: redactor.label(&c.row).into_owned(),
                says: redactor.label(&c.says).into_owned(),
                detail: redactor.text(&c.detail).into_owned(),
                ..c
            })
            .collect();
        let transcript = redactor.serde(transcript);
        let disposition = checks
            .iter()
            .map(|c| c.disposition(&suite.registry, self.strict))
            .max_by_key(|d| d.severity())
            .unwrap_or(Disposition::Error);
        ScenarioResult {
            scenario_id: scenario.id.clone(),
            title: scenario.title.clone(),
            disposition,
            checks,
            transcript,
            observations,
            elapsed_ms: started.elapsed().as_millis() as u64,
            trial: None,
            seed: None,
        }
    }
}

impl Session {
    /// The discovery summary for reports (the document as served, scrubbed of tokens).
    pub fn discovery_summary(&self) -> Value {
        self.tokens.value(&self.discovery_summary_raw())
    }

    fn discovery_summary_raw(&self) -> Value {
        match &self.discovery {
            Ok(d) => json!({
                "document": d.document,
                "sha256": d.sha256,
                "etag": d.etag,
                "wireMajor": d.wire.number(),
                "wireReason": d.wire_reason,
                "fixtures": d.fixtures(),
                "refusedCapabilities": d.refused(),
            }),
            Err(e) => json!({"error": e}),
        }
    }
}

/// Whether a scenario reads the discovery document itself (a `/discovery/…` pointer, a
/// `{{discovery.…}}` template, a `discovery` step, or `fireEffectSeams`, which reads the
/// effect-seams path): only such a scenario's observations hold a copy of it.
fn reads_discovery(scenario: &Scenario) -> bool {
    scenario
        .steps
        .iter()
        .any(|s| matches!(s, toolcert_core::suite::Step::FireEffectSeams(_)))
        || serde_json::to_string(scenario).is_ok_and(|text| text.contains("discovery"))
}

/// A discovery document toolcert takes: at most [`MAX_DISCOVERY_BYTES`] and no deeper than
/// [`MAX_DEPTH`] (scenarios that read it keep a copy each, and a report holds it).
fn bounded_discovery(d: Discovery) -> Result<Discovery, String> {
    let size = json_len(&d.document);
    if size > MAX_DISCOVERY_BYTES {
        return Err(format!(
            "the discovery document is {size} bytes, more than the {} toolcert takes (an OpenWOP discovery document is a few kilobytes)",
            toolcert_core::input::human(MAX_DISCOVERY_BYTES as u64)
        ));
    }
    if bound_depth(&mut d.document.clone(), MAX_DEPTH) {
        return Err(format!(
            "the discovery document nests deeper than {MAX_DEPTH} levels, more than toolcert takes"
        ));
    }
    Ok(d)
}

/// Fold scenario results into a run outcome.
pub fn conclude(
    suite: &Suite,
    session: &Session,
    target: &Target,
    opts: &RunOptions,
    mut scenarios: Vec<ScenarioResult>,
    elapsed_ms: u64,
) -> RunOutcome {
    scenarios.sort_by(|a, b| (&a.scenario_id, a.trial).cmp(&(&b.scenario_id, b.trial)));
    let rows = toolcert_core::repeat::fold_trials(
        suite,
        FoldOptions {
            strict: opts.strict,
        },
        scenarios
            .iter()
            .map(|s| (s.scenario_id.as_str(), s.trial, s.checks.as_slice())),
        session.trial_seeds(),
    );
    let repeat = (session.trials() > 1).then(|| toolcert_core::repeat::Repeat {
        trials: session.trials(),
        seeds: session.trial_seeds().to_vec(),
    });
    let ran: std::collections::BTreeSet<&str> =
        scenarios.iter().map(|s| s.scenario_id.as_str()).collect();
    let certify = toolcert_core::verdict::CertifyOptions {
        strict: opts.strict,
        require_evidence: opts.require_evidence.unwrap_or(Evidence::SelfReport),
        include_tentative: opts.include_tentative,
    };
    let certification = match session.discovery() {
        Err(why) => toolcert_core::verdict::Certification::stopped(
            suite,
            &session.tokens.text(why),
            certify,
            opts.selection.clone(),
        ),
        Ok(_) => toolcert_core::verdict::Certification::compute(
            suite,
            &rows,
            &ran,
            certify,
            opts.selection.clone(),
        ),
    };
    RunOutcome {
        seed: opts.seed,
        strict: opts.strict,
        require_evidence: opts.require_evidence,
        certification,
        base_url: target.base_url.clone(),
        embedded: target.is_embedded(),
        mutant: target.mutant.clone(),
        upstream_only: target.upstream_only,
        discovery: session.discovery_summary(),
        scenarios,
        repeat,
        rows,
        uncovered: uncovered_rows(suite),
        elapsed_ms,
    }
}

/// Rows with neither a scenario nor an unwitnessable mark.
pub fn uncovered_rows(suite: &Suite) -> Vec<String> {
    suite
        .registry
        .rows
        .iter()
        .filter(|r| r.unwitnessable.is_none())
        .filter(|r| !suite.scenarios.iter().any(|s| s.rows.contains(&r.id)))
        .map(|r| r.id.clone())
        .collect()
}

/// The current UTC instant, whole seconds, as `2026-08-30T12:00:00Z` (RFC 3339): the clock a
/// run records in its observations, written as the MCP snapshots write theirs.
fn utc_now() -> String {
    use time::format_description::well_known::Rfc3339;
    let now = time::OffsetDateTime::now_utc();
    let now = now.replace_nanosecond(0).unwrap_or(now);
    now.format(&Rfc3339).unwrap_or_default()
}
