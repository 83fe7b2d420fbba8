//! `toolcert run`: certify a host. The console leads with what to fix: a profile table, one
//! line per row that did not pass, then the one verdict line (see `super::console`); the exit
//! status is the run's certification's (`toolcert::verdict::certify`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use anyhow::Context as _;
use serde_json::Value;

use toolcert::host::{Budgets, CaCerts, HostProfile};
use toolcert::runner::{RunOptions, ScenarioResult, Session, Target, conclude};
use toolcert::verdict::Disposition;

/// Arguments of `toolcert run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Run only scenarios whose id contains one of these strings (exact match with --exact).
    #[arg(value_name = "FILTER")]
    pub filters: Vec<String>,
    /// List the scenarios instead of running them.
    #[arg(long)]
    pub list: bool,
    /// Filters match scenario ids exactly.
    #[arg(long)]
    pub exact: bool,
    /// Skip scenarios whose id contains this string (repeatable).
    #[arg(long, value_name = "FILTER")]
    pub skip: Vec<String>,
    /// Scenarios run in parallel per host, at least 1 (each isolated by its own nonce, receiver
    /// ids and tool names) [default: 4 against a host at a URL or started with --spawn, 16
    /// against the embedded reference host]. Under --repeat, each trial of the embedded host
    /// has a host of its own, so K trials run up to K×N scenarios at once; a host at a URL
    /// never sees more than N.
    #[arg(long, short = 'j', value_name = "N")]
    pub jobs: Option<usize>,
    /// Seed for every random choice (default: from the clock; printed and reported).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Fail `warn` (SHOULD) and `inapplicable` rows too.
    #[arg(long)]
    pub strict: bool,
    /// Certify a profile only at this evidence tier or stronger: `double` (counted at a double
    /// toolcert owns), `wire` (the host's answers, judged by toolcert) or `self-report` (the
    /// default: the host's own account of itself acquits at that tier, named as such).
    #[arg(long, value_name = "TIER", value_parser = parse_evidence)]
    pub require_evidence: Option<toolcert::verdict::Evidence>,
    /// Score the tentative rows (rules from drafts, such as the tool-turn RFC) like accepted
    /// ones: without it they are measured and shown but never deny certification.
    #[arg(long)]
    pub include_tentative: bool,
    /// Multiply every timeout (connect 2 s, read 5 s, request 10 s) by F, from 0.1 to 20.
    // Negative numbers reach `validate` (and its message) instead of clap's "unexpected
    // argument '-1'" with its suggestion `-- -1`, which would make -1 a filter.
    #[arg(
        long,
        default_value_t = 1.0,
        value_name = "F",
        allow_negative_numbers = true
    )]
    pub timeout_scale: f64,
    /// Bound the whole run to this many seconds: scenarios not started by then are `error`,
    /// running ones stop at it; reports are still written.
    #[arg(long, value_name = "SECS", value_parser = parse_deadline)]
    pub deadline: Option<std::time::Duration>,
    /// Certify the host at this base URL instead of the embedded reference host.
    #[arg(long, value_name = "URL")]
    pub host: Option<String>,
    /// Host profile file: roles (token, principal), scopes, facts, fixtures; validated against
    /// schemas/profile.schema.json (see docs/guide/certify-a-host.md).
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,
    /// Bearer token for a role, ROLE=TOKEN (repeatable; wins over the profile).
    #[arg(long = "token", value_name = "ROLE=TOKEN")]
    pub tokens: Vec<String>,
    /// PEM file of a CA to trust for an https host (repeatable): given, these CAs are the only
    /// roots trusted (the system's are not consulted), like `curl --cacert`.
    #[arg(long = "ca-cert", value_name = "FILE")]
    pub ca_certs: Vec<PathBuf>,
    /// Start the host with this shell command and certify it; toolcert also starts one more
    /// instance per kill-and-restart scenario. `{port}` and `{data_dir}` are filled in (keep
    /// both, so a restart finds its port and its data); the host must print its
    /// http://127.0.0.1:PORT URL on stdout.
    #[cfg_attr(
        feature = "reference",
        arg(long, value_name = "CMD", conflicts_with_all = ["host", "reference_mutant"])
    )]
    #[cfg_attr(
        not(feature = "reference"),
        arg(long, value_name = "CMD", conflicts_with = "host")
    )]
    pub spawn: Option<String>,
    /// Switch one mutant on in the embedded reference host, or run it behind one of the
    /// suite's data mutants (`toolcert mutants` lists both).
    #[cfg(feature = "reference")]
    #[arg(long, value_name = "NAME", conflicts_with = "host")]
    pub reference_mutant: Option<String>,
    /// Run the embedded reference host as a plain upstream OpenWOP host of one major, with
    /// only upstream surfaces, seam fields and fixtures: what toolcert can judge on a host
    /// that implements none of toolcert's extensions. Bare, a v1 host (v1 discovery, the v1
    /// seams); `=v2`, a v2 host (the closed v2 root, the seams profile with closed bodies,
    /// tenant-bound run ids).
    #[cfg(feature = "reference")]
    #[arg(
        long,
        value_name = "MAJOR",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "v1",
        value_parser = parse_upstream_major,
        conflicts_with_all = ["host", "spawn"]
    )]
    pub reference_upstream_only: Option<reference_host::UpstreamMajor>,
    /// Write the JSON report here.
    #[arg(long, value_name = "PATH")]
    pub report: Option<PathBuf>,
    /// Write JUnit XML here.
    #[arg(long, value_name = "PATH")]
    pub junit: Option<PathBuf>,
    /// Write the Markdown certification report here.
    #[arg(long, value_name = "PATH")]
    pub markdown: Option<PathBuf>,
    /// Write the HTML report here: one self-contained page (no network fetches) with the
    /// verdict, a summary per family, every row filterable by disposition and family, its
    /// checks, and the transcripts with `curl` reproducers.
    #[arg(long, value_name = "PATH")]
    pub html: Option<PathBuf>,
    /// Write a certification bundle here: versions, the suite's digest, discovery, the profile
    /// without tokens, the sealed report with observations and transcripts, and a digest
    /// (schemas/bundle.schema.json; `toolcert bundle verify` checks it).
    #[arg(long, value_name = "PATH")]
    pub bundle: Option<PathBuf>,
    /// Sign the bundle with this Ed25519 secret key file (`toolcert keygen` writes one).
    #[arg(long, value_name = "KEYFILE", requires = "bundle")]
    pub sign: Option<PathBuf>,
    /// Load the suite from this checkout instead of the embedded one.
    #[arg(long, value_name = "DIR")]
    pub suite: Option<PathBuf>,
    /// Print only the conclusion: the profile table, the rows to look at and the verdict line.
    #[arg(long, short = 'q', conflicts_with = "verbose")]
    pub quiet: bool,
    /// Also print one line per scenario as it ends (its leg's outcome; the row verdicts in
    /// the conclusion decide).
    #[arg(long, short = 'v')]
    pub verbose: bool,
    /// Expectation baseline (schemas/expectations.schema.json, written by `toolcert baseline`):
    /// rows expected not to pass. A row exactly as expected does not fail the run; one that
    /// does better or worse does; a stale entry fails under --strict.
    #[arg(long, value_name = "FILE")]
    pub expect: Option<PathBuf>,
    /// Run only shard K of N: the sorted selected scenario ids whose index i has
    /// i % N == K-1 (like `cargo nextest --partition count:K/N`); join with `toolcert merge`.
    #[arg(long, value_name = "K/N")]
    pub partition: Option<toolcert::partition::Partition>,
    /// Run every scenario K times (1 to 64), trial i with a seed derived from --seed and i:
    /// a row passes only if it passed in every trial (pass^k); one that passed in some trials
    /// only is `flaky`, which never certifies. Trials overlap within --jobs (per host).
    #[arg(long, default_value_t = 1, value_name = "K", value_parser = parse_repeat)]
    pub repeat: u32,
}

fn parse_repeat(s: &str) -> Result<u32, String> {
    toolcert::repeat::parse_repeat(s).map_err(|e| e.to_string())
}

/// The most scenarios `--jobs` lets run at once per host: beyond it a run only queues more
/// requests at one host (and `--jobs 18446744073709551615` once panicked in the scheduler).
pub const MAX_JOBS: usize = 256;

/// The range `--timeout-scale` accepts: below 0.1 a connect budget is under 200 ms, above 20 a
/// hung request holds a scenario for over 3 minutes (and `1e300` would wait forever).
pub const TIMEOUT_SCALE: std::ops::RangeInclusive<f64> = 0.1..=20.0;

/// Refuse flags that cannot work, before a suite is loaded, a host started or a request sent.
/// (The profile, `--token`, `--ca-cert` and the `--host` URL are checked when read, still
/// before any host is contacted.)
fn validate(args: &RunArgs) -> anyhow::Result<()> {
    if let Some(jobs) = args.jobs {
        anyhow::ensure!(
            (1..=MAX_JOBS).contains(&jobs),
            "--jobs {jobs}: expected from 1 to {MAX_JOBS} (--jobs 1 runs the scenarios one at a time)"
        );
    }
    if let Some(host) = &args.host {
        toolcert::host::loopback::parse_base_url(host, true)
            .map_err(|e| anyhow::anyhow!("--host {e}"))?;
    }
    for flag in &args.tokens {
        HostProfile::default().set_token_flag(flag)?;
    }
    anyhow::ensure!(
        TIMEOUT_SCALE.contains(&args.timeout_scale),
        "--timeout-scale {}: expected a factor from {} to {} (it multiplies every timeout: connect 2 s, read 5 s, request 10 s; 1 is the default)",
        shown_number(args.timeout_scale),
        TIMEOUT_SCALE.start(),
        TIMEOUT_SCALE.end()
    );
    if let Some(dir) = &args.suite {
        anyhow::ensure!(
            dir.is_dir(),
            "--suite {}: no such directory; pass the root of a toolcert checkout (the directory holding scenarios/ and schemas/)",
            dir.display()
        );
    }
    let outputs = [
        ("--report", &args.report),
        ("--junit", &args.junit),
        ("--markdown", &args.markdown),
        ("--html", &args.html),
        ("--bundle", &args.bundle),
    ];
    let inputs = args
        .profile
        .iter()
        .map(|p| ("--profile", p))
        .chain(args.ca_certs.iter().map(|p| ("--ca-cert", p)))
        .chain(args.expect.iter().map(|p| ("--expect", p)))
        .chain(args.sign.iter().map(|p| ("--sign", p)));
    let mut seen: Vec<(&str, PathBuf)> = inputs
        .map(|(flag, p)| (flag, std::path::absolute(p).unwrap_or_else(|_| p.clone())))
        .collect();
    for (flag, path) in outputs {
        let Some(path) = path else { continue };
        let absolute = std::path::absolute(path).unwrap_or_else(|_| path.clone());
        if let Some((other, _)) = seen.iter().find(|(_, p)| *p == absolute) {
            anyhow::bail!(
                "{flag} {}: that is also the {other} file, which the report would overwrite; give each report its own path",
                path.display()
            );
        }
        toolcert::output::check_report_path(flag, path)?;
        seen.push((flag, absolute));
    }
    Ok(())
}

/// A flag's number as a person would write it (`1e300`, not 301 digits).
fn shown_number(f: f64) -> String {
    if f == 0.0 || (f.is_finite() && (1e-4..1e6).contains(&f.abs())) {
        format!("{f}")
    } else {
        format!("{f:e}")
    }
}

fn target_for(
    args: &RunArgs,
    suite: &toolcert::suite::Suite,
    rt: &tokio::runtime::Runtime,
) -> anyhow::Result<Target> {
    let mut profile = match &args.profile {
        Some(path) => HostProfile::load(path)?,
        None if args.host.is_none() => HostProfile::reference(),
        None => HostProfile::default(),
    };
    for flag in &args.tokens {
        profile.set_token_flag(flag)?;
    }
    // From here on every output is scrubbed of the run's tokens (a spawned host's stderr may
    // already quote one).
    toolcert::output::guard(toolcert::redact::Redactor::new(
        profile.secrets(),
        Vec::new(),
    ));
    #[cfg(feature = "reference")]
    if let (Some(url), None, None, Some(file)) =
        (&profile.base_url, &args.host, &args.spawn, &args.profile)
    {
        let embedded_only = if args.reference_mutant.is_some() {
            Some("--reference-mutant")
        } else if args.reference_upstream_only.is_some() {
            Some("--reference-upstream-only")
        } else {
            None
        };
        if let Some(flag) = embedded_only {
            anyhow::bail!(
                "{flag}: the profile {} sets baseUrl {url}, so that host would be certified, not the embedded reference host; drop {flag} or use a profile without baseUrl",
                file.display()
            );
        }
    }
    if let Some(command) = &args.spawn {
        anyhow::ensure!(
            !command.trim().is_empty(),
            "--spawn: expected a command that starts the host, e.g. --spawn 'my-host --port {{port}} --data {{data_dir}}'"
        );
        let command = toolcert::host::SpawnCommand::Shell(command.clone());
        return Ok(rt.block_on(Target::spawned(command, profile))?);
    }
    let url = args.host.clone().or_else(|| profile.base_url.clone());
    match url {
        Some(url) => {
            let flag = if args.host.is_some() {
                "--host"
            } else {
                "the profile's baseUrl"
            };
            let base = toolcert::host::loopback::parse_base_url(&url, true)
                .map_err(|e| anyhow::anyhow!("{flag} {e}"))?;
            Ok(Target::remote(&base.as_base(), profile))
        }
        None => embedded_target(args, suite, rt),
    }
}

/// `--reference-upstream-only`'s value: `v1` or `v2`.
#[cfg(feature = "reference")]
fn parse_upstream_major(value: &str) -> Result<reference_host::UpstreamMajor, String> {
    reference_host::UpstreamMajor::parse(value)
        .ok_or_else(|| format!("`{value}` is no major; use --reference-upstream-only=v1 or =v2"))
}

/// The embedded reference host (clean, or the `--reference-*` variant) as the target.
#[cfg(feature = "reference")]
fn embedded_target(
    args: &RunArgs,
    suite: &toolcert::suite::Suite,
    rt: &tokio::runtime::Runtime,
) -> anyhow::Result<Target> {
    // A data mutant of the suite runs the clean host behind a front that applies it.
    let front = args
        .reference_mutant
        .as_deref()
        .and_then(|name| suite.data_mutants.get(name))
        .map(|data| std::sync::Arc::new(data.clone()));
    let mutant = args
        .reference_mutant
        .as_deref()
        .filter(|_| front.is_none())
        .map(|name| name.parse::<reference_host::mutants::Mutant>())
        .transpose()
        .map_err(|e| anyhow::anyhow!("--reference-mutant: {e}; the suite's data mutants: `toolcert mutants --suite DIR` lists them"))?;
    let variant = toolcert::runner::ReferenceVariant {
        mutant,
        upstream_only: args.reference_upstream_only,
        front,
    };
    let mut target = rt.block_on(Target::embedded_variant(variant))?;
    // A profile may still override tokens of the embedded host's roles.
    for flag in &args.tokens {
        target.profile.set_token_flag(flag)?;
    }
    Ok(target)
}

/// Without the `reference` feature there is no embedded host to fall back on.
#[cfg(not(feature = "reference"))]
fn embedded_target(
    _: &RunArgs,
    _: &toolcert::suite::Suite,
    _: &tokio::runtime::Runtime,
) -> anyhow::Result<Target> {
    anyhow::bail!(
        "no host to certify: this toolcert was built without the embedded reference host (cargo feature `reference`); give --host URL (or --spawn CMD, or a --profile with baseUrl), or rebuild with default features to certify the reference host"
    )
}

pub(super) fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    validate(&args)?;
    let ca_certs = CaCerts::load(&args.ca_certs)?;
    // A broken baseline is refused before a host is started or a scenario run.
    let expectations = args
        .expect
        .as_deref()
        .map(toolcert::baseline::Expectations::load)
        .transpose()
        .context("--expect")?;
    // So is an unusable signing key: a run is not wasted on a bundle that cannot be signed.
    let signing_key = args
        .sign
        .as_deref()
        .map(toolcert::bundle::keys::load_secret)
        .transpose()
        .context("--sign")?;
    let suite =
        Arc::new(super::common::load_suite(args.suite.as_deref()).context("loading the suite")?);
    let filtered: Vec<&str> = suite
        .scenarios
        .iter()
        .map(|s| s.id.as_str())
        .filter(|id| matches_filters(&args, id))
        .collect();
    let any_filtered = !filtered.is_empty();
    let selected: std::collections::BTreeSet<String> = match args.partition {
        Some(p) => p.select(filtered.iter().copied()),
        None => filtered,
    }
    .into_iter()
    .map(str::to_string)
    .collect();
    if let (Some(p), true, true) = (args.partition, selected.is_empty(), any_filtered) {
        anyhow::bail!(
            "--partition {p}: this shard is empty (fewer selected scenarios than {}); use fewer shards",
            p.count
        );
    }
    if !args.list && !any_filtered {
        anyhow::bail!(
            "no scenario matches the filters {:?}{}; `toolcert run --list` lists the scenario ids",
            args.filters,
            if args.skip.is_empty() {
                String::new()
            } else {
                format!(" with --skip {:?}", args.skip)
            }
        );
    }
    if args.list {
        // One line per scenario, like `cargo test -- --list`.
        let listed: Vec<&str> = suite
            .scenarios
            .iter()
            .map(|s| s.id.as_str())
            .filter(|id| selected.contains(*id))
            .collect();
        for id in &listed {
            println!("{id}: test");
        }
        println!();
        println!("{} tests, 0 benchmarks", listed.len());
        return Ok(ExitCode::SUCCESS);
    }
    let rt = super::common::runtime()?;
    super::signals::install(&rt);
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0)
    });
    let selection = toolcert::verdict::Selection {
        filters: args.filters.clone(),
        skip: args.skip.clone(),
        exact: args.exact,
        partition: args.partition,
        ..toolcert::verdict::Selection::default()
    };
    let opts = RunOptions {
        seed,
        budgets: Budgets::scaled(args.timeout_scale),
        jobs: toolcert::runner::HOST_JOBS,
        strict: args.strict,
        ca_certs,
        require_evidence: args.require_evidence,
        include_tentative: args.include_tentative,
        selection,
        scenario_budget: toolcert::runner::SCENARIO_BUDGET.mul_f64(args.timeout_scale),
        deadline: args.deadline,
        repeat: args.repeat,
        ..RunOptions::default()
    };
    let mut target = target_for(&args, &suite, &rt)?;
    // Gentle with a host toolcert did not start; wide on its own embedded one.
    let jobs = args.jobs.unwrap_or(if target.is_embedded() {
        toolcert::runner::EMBEDDED_JOBS
    } else {
        toolcert::runner::HOST_JOBS
    });
    let opts = RunOptions { jobs, ..opts };
    rt.block_on(target.prepare_trials(args.repeat))?;
    let started = std::time::Instant::now();
    let session = Arc::new(rt.block_on(Session::open(&target, &opts))?);
    super::signals::running();
    let redactor = session.redactor(&suite);
    toolcert::output::guard(redactor.clone());
    if !args.quiet {
        toolcert::output::say(&format!(
            "toolcert {}: certifying {} (seed {seed})",
            env!("CARGO_PKG_VERSION"),
            target.base_url
        ));
        if let Ok(d) = session.discovery() {
            // The reason quotes what the host served: cleaned like everything else.
            toolcert::output::say(&format!(
                "discovery: wire major {} ({}), sha256 {}",
                d.wire.number(),
                d.wire_reason,
                d.sha256
            ));
        }
        if args.repeat > 1 {
            let seeds: Vec<String> = session.trial_seeds().iter().map(u64::to_string).collect();
            println!(
                "repeat: {} trials per scenario, trial seeds {} (rerun one trial alone with --seed SEED)",
                args.repeat,
                seeds.join(", ")
            );
        }
    }
    let collected = match session.discovery() {
        // A host that fails discovery stops there, with one clear error: no scenario can be
        // gated or addressed without it.
        Err(e) => {
            toolcert::output::say(&format!(
                "toolcert: discovery failed, no scenario was run: {e}"
            ));
            Vec::new()
        }
        Ok(_) => run_scenarios(&args, &rt, &suite, &session, &selected, opts.jobs),
    };
    let mut run = conclude(
        &suite,
        &session,
        &target,
        &opts,
        collected,
        started.elapsed().as_millis() as u64,
    );
    let judgement = expectations
        .as_ref()
        .map(|e| e.judge(&suite, &run.rows, &run.certification));
    if let Some(j) = &judgement {
        run.certification = run.certification.clone().with_gate(j.gate_passed);
    }
    if let Some(signal) = toolcert::runner::interrupt::raised() {
        run.certification = run.certification.clone().interrupted(signal);
    }
    toolcert::report::console::print_conclusion(&suite, &run, judgement.as_ref(), false);
    let mut report = toolcert::report::build(&suite, &run);
    report.expectations = judgement.clone();
    report.partition = args.partition;
    super::signals::mark_partial(&mut report);
    if let Some(path) = &args.report {
        toolcert::report::write_json(&suite, &report, path)?;
    }
    if let Some(path) = &args.junit {
        toolcert::output::write_atomic(
            path,
            &toolcert::report::render_junit(&report),
            toolcert::output::Format::Text,
        )
        .with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &args.markdown {
        toolcert::output::write_atomic(
            path,
            &toolcert::report::render_markdown(&report),
            toolcert::output::Format::Text,
        )
        .with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &args.html {
        // From the sealed JSON value, so the page shows exactly what `--report` holds.
        let value = toolcert::report::to_value(&suite, &report)?;
        toolcert::output::write_atomic(
            path,
            &toolcert::report::render_html(&value, &redactor),
            toolcert::output::Format::Text,
        )
        .with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &args.bundle {
        let sealed = toolcert::report::to_value(&suite, &report)?;
        // The summary exactly as the report has it (`bundle verify` compares the two), and
        // the exchanges that fetched it, scrubbed like every transcript.
        let mut discovery = session.discovery_summary();
        if let (Ok(d), Value::Object(map)) = (session.discovery(), &mut discovery) {
            map.insert(
                "exchanges".into(),
                redactor.value(&serde_json::to_value(&d.exchanges).unwrap_or_default()),
            );
        }
        let bundle = toolcert::bundle::build(toolcert::bundle::BundleInput {
            suite: &suite,
            report: &sealed,
            discovery,
            profile: &target.profile,
            redactor: &redactor,
            secrets: target.profile.secrets(),
            key: signing_key.as_ref(),
        })?;
        toolcert::bundle::write(path, &bundle)?;
    }
    drop(session);
    rt.block_on(target.shutdown());
    if let Some(interrupted) = super::signals::finish() {
        return Ok(interrupted);
    }
    // The one verdict: the certification's (with --expect, the gate's) exit status.
    Ok(ExitCode::from(run.certification.exit_code))
}

/// Run the selected scenarios through the one scheduler: a progress bar at a terminal, a line
/// per scenario with `--verbose` (its leg's outcome, which the row verdicts decide on).
fn run_scenarios(
    args: &RunArgs,
    rt: &tokio::runtime::Runtime,
    suite: &Arc<toolcert::suite::Suite>,
    session: &Arc<Session>,
    selected: &std::collections::BTreeSet<String>,
    jobs: usize,
) -> Vec<ScenarioResult> {
    let units = (selected.len() as u64) * u64::from(args.repeat);
    let progress = super::progress::Progress::new(units, "trials", args.quiet);
    let lines = ScenarioLines {
        progress: progress.clone(),
        verbose: args.verbose && !args.quiet,
        results: Mutex::default(),
    };
    let chosen: Vec<&toolcert::suite::Scenario> = suite
        .scenarios
        .iter()
        .filter(|s| selected.contains(&s.id))
        .collect();
    rt.block_on(toolcert::runner::schedule::run_trials(
        session, suite, &chosen, jobs, &lines,
    ));
    progress.finish();
    lines
        .results
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
}

/// Collects each scenario's results as the scheduler hands them over, moves the bar, and with
/// `--verbose` prints one line per scenario.
struct ScenarioLines {
    progress: super::progress::Progress,
    verbose: bool,
    results: Mutex<Vec<ScenarioResult>>,
}

impl toolcert::runner::schedule::Progress for ScenarioLines {
    fn trial_ended(&self) {
        self.progress.inc();
    }

    fn scenario_ended(&self, scenario: &toolcert::suite::Scenario, results: Vec<ScenarioResult>) {
        if self.verbose {
            let dispositions: Vec<Disposition> = results.iter().map(|r| r.disposition).collect();
            let disposition = toolcert::repeat::across_trials(&dispositions);
            let message = trials_message(&results, disposition);
            let first = message.lines().next().unwrap_or("");
            self.progress.say(&format!(
                "scenario {} ... leg {disposition}{}",
                scenario.id,
                if disposition == Disposition::Pass || first.is_empty() {
                    String::new()
                } else {
                    format!(": {first}")
                }
            ));
        }
        self.results
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(results);
    }
}

/// What the console says about a scenario's trials: the failure message of its (first
/// non-pass) trial; under `--repeat`, which trial and seed, and for `flaky` the pass rate.
fn trials_message(outcomes: &[ScenarioResult], disposition: Disposition) -> String {
    let Some(worst) = outcomes
        .iter()
        .find(|r| r.disposition != Disposition::Pass)
        .or(outcomes.first())
    else {
        return String::new();
    };
    if outcomes.len() <= 1 {
        return worst.failure_message();
    }
    if outcomes.iter().all(|r| r.disposition == worst.disposition) {
        return format!(
            "{}\n(the same in all {} trials)",
            worst.failure_message(),
            outcomes.len()
        );
    }
    let passes = outcomes
        .iter()
        .filter(|r| r.disposition == Disposition::Pass)
        .count();
    let trial = match (worst.trial, worst.seed) {
        (Some(t), Some(seed)) => format!("trial {t} (seed {seed})"),
        _ => "a trial".to_string(),
    };
    let rate = if disposition == Disposition::Flaky {
        format!("passed {passes} of {} trials; ", outcomes.len())
    } else {
        String::new()
    };
    format!(
        "{rate}{trial} was {}:\n{}",
        worst.disposition,
        worst.failure_message()
    )
}

fn parse_deadline(s: &str) -> Result<std::time::Duration, String> {
    match s.parse::<u64>() {
        Ok(secs) if (1..=86_400).contains(&secs) => Ok(std::time::Duration::from_secs(secs)),
        _ => Err(format!(
            "{s:?} is not a whole number of seconds from 1 to 86400 (e.g. --deadline 600)"
        )),
    }
}

fn parse_evidence(s: &str) -> Result<toolcert::verdict::Evidence, String> {
    s.parse()
}

fn matches_filters(args: &RunArgs, id: &str) -> bool {
    let hit = |f: &String| {
        if args.exact {
            id == f
        } else {
            id.contains(f.as_str())
        }
    };
    (args.filters.is_empty() || args.filters.iter().any(hit)) && !args.skip.iter().any(hit)
}
