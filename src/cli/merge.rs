//! `toolcert merge SHARD… -o REPORT`: join the reports of `run --partition K/N` shards into
//! the report of one unsharded run.
//!
//! Scenarios are concatenated (sorted by id, as a run sorts them) and rows are folded again
//! from every scenario's checks, because a row's legs can fall in different shards. The
//! shards must come from the same toolcert, suite, seed, strictness, evidence level and
//! host (same discovery digest) and `--repeat` (same trials and trial seeds), cover every K
//! of one N exactly once, and be sealed. Repeated shards merge trial by trial: rows are
//! folded per trial and then across trials, as `run --repeat` folds them.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use serde_json::Value;

use toolcert::runner::{RunOutcome, ScenarioResult};

/// Arguments of `toolcert merge`.
#[derive(Debug, clap::Args)]
pub struct MergeArgs {
    /// The shards' JSON reports (`toolcert run --partition K/N --report …`), one per K.
    #[arg(value_name = "SHARD", required = true)]
    pub shards: Vec<PathBuf>,
    /// Write the merged JSON report here.
    #[arg(long, short = 'o', value_name = "PATH")]
    pub output: PathBuf,
    /// Also write JUnit XML here.
    #[arg(long, value_name = "PATH")]
    pub junit: Option<PathBuf>,
    /// Also write the Markdown report here.
    #[arg(long, value_name = "PATH")]
    pub markdown: Option<PathBuf>,
    /// Also write the HTML report here (as `run --html`).
    #[arg(long, value_name = "PATH")]
    pub html: Option<PathBuf>,
    /// Judge the merged rows against this expectation baseline (as `run --expect`).
    #[arg(long, value_name = "FILE")]
    pub expect: Option<PathBuf>,
    /// Fold with the suite of this checkout instead of the embedded one.
    #[arg(long, value_name = "DIR")]
    pub suite: Option<PathBuf>,
}

/// Members that must agree across shards, as JSON pointers.
const SAME: &[&str] = &[
    "/toolcertVersion",
    "/suiteVersion",
    "/seed",
    "/strict",
    "/summary/requireEvidence",
    "/host/embedded",
    "/host/mutant",
    "/host/upstreamOnly",
    "/host/discovery/sha256",
    "/partition/count",
    "/repeat",
    "/certification/options",
    "/certification/selection/filters",
    "/certification/selection/skip",
    "/certification/selection/exact",
];

pub(super) fn run(args: MergeArgs) -> anyhow::Result<ExitCode> {
    let expectations = args
        .expect
        .as_deref()
        .map(toolcert::baseline::Expectations::load)
        .transpose()
        .context("--expect")?;
    let suite = super::common::load_suite(args.suite.as_deref()).context("loading the suite")?;
    let output = std::path::absolute(&args.output).unwrap_or_else(|_| args.output.clone());
    for shard in &args.shards {
        anyhow::ensure!(
            std::path::absolute(shard).unwrap_or_else(|_| shard.clone()) != output,
            "-o {}: that is also a shard, which the merged report would overwrite; write it elsewhere",
            args.output.display()
        );
    }
    let mut shards: Vec<(String, Value)> = Vec::new();
    for path in &args.shards {
        let shown = path.display().to_string();
        let report = toolcert::recheck::load_sealed(path)?;
        anyhow::ensure!(
            report["partition"].is_object(),
            "{shown}: not a shard (no \"partition\"); merge the reports of `toolcert run --partition K/N`"
        );
        shards.push((shown, report));
    }
    let (first_name, first) = &shards[0];
    for (name, shard) in &shards[1..] {
        for pointer in SAME {
            anyhow::ensure!(
                shard.pointer(pointer) == first.pointer(pointer),
                "{name}: {pointer} is {} but {first_name} has {}; merge only shards of one run (same toolcert, suite, --seed, --strict, --require-evidence, --repeat, host and N)",
                shard.pointer(pointer).unwrap_or(&Value::Null),
                first.pointer(pointer).unwrap_or(&Value::Null)
            );
        }
    }
    let count = first["partition"]["count"].as_u64().unwrap_or(0);
    let mut indices: Vec<u64> = shards
        .iter()
        .map(|(_, s)| s["partition"]["index"].as_u64().unwrap_or(0))
        .collect();
    indices.sort_unstable();
    let want: Vec<u64> = (1..=count).collect();
    anyhow::ensure!(
        indices == want,
        "the shards are partitions {indices:?} of {count}; expected each of {want:?} exactly once"
    );
    let mut scenarios: Vec<ScenarioResult> = Vec::new();
    for (name, shard) in &shards {
        for s in toolcert::recheck::scenarios_of(shard, name)? {
            anyhow::ensure!(
                !scenarios
                    .iter()
                    .any(|x| x.scenario_id == s.scenario_id && x.trial == s.trial),
                "{name}: scenario {}{} is also in another shard; merge shards of one --partition N",
                s.scenario_id,
                s.trial.map_or(String::new(), |t| format!(" (trial {t})"))
            );
            scenarios.push(s);
        }
    }
    scenarios.sort_by(|a, b| (&a.scenario_id, a.trial).cmp(&(&b.scenario_id, b.trial)));
    let repeat = toolcert::recheck::repeat_of(first, &shards[0].0)?;
    let certify = toolcert::recheck::certify_options_of(first);
    // The shards together are the run their partition split: its filters, no partition.
    let selection = toolcert::verdict::Selection {
        partition: None,
        ..toolcert::recheck::selection_of(first)
    };
    let base = RunOutcome {
        seed: first["seed"].as_u64().unwrap_or(0),
        strict: certify.strict,
        require_evidence: None,
        certification: toolcert::verdict::Certification::compute(
            &suite,
            &[],
            &Default::default(),
            certify,
            selection.clone(),
        ),
        // Each shard's embedded host listens on its own port: the first shard's URL stands.
        base_url: first["host"]["baseUrl"].as_str().unwrap_or("").to_string(),
        embedded: first["host"]["embedded"].as_bool().unwrap_or(false),
        mutant: first["host"]["mutant"].as_str().map(str::to_string),
        upstream_only: first["host"]["upstreamOnly"].as_bool().unwrap_or(false),
        discovery: first["host"]["discovery"].clone(),
        scenarios: Vec::new(),
        repeat,
        rows: Vec::new(),
        uncovered: toolcert::runner::uncovered_rows(&suite),
        // The shards ran in parallel: the merged run took as long as the slowest.
        elapsed_ms: shards
            .iter()
            .filter_map(|(_, s)| s["summary"]["elapsedMs"].as_u64())
            .max()
            .unwrap_or(0),
    };
    let mut run = base.refold(&suite, scenarios, certify, selection);
    let judgement = expectations
        .as_ref()
        .map(|e| e.judge(&suite, &run.rows, &run.certification));
    if let Some(j) = &judgement {
        run.certification = run.certification.clone().with_gate(j.gate_passed);
    }
    let mut report = toolcert::report::build(&suite, &run);
    report.expectations = judgement.clone();
    toolcert::report::write_json(&suite, &report, &args.output)?;
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
        // The shards' secrets are not known here; the shards' reports were scrubbed when
        // written, and the default redactor still scrubs any `Bearer` value.
        let value = toolcert::report::to_value(&suite, &report)?;
        let redactor = toolcert::redact::Redactor::default();
        toolcert::output::write_atomic(
            path,
            &toolcert::report::render_html(&value, &redactor),
            toolcert::output::Format::Text,
        )
        .with_context(|| format!("writing {}", path.display()))?;
    }
    let counts = toolcert::report::counts_for(&run.rows);
    let line: Vec<String> = counts.iter().map(|(d, n)| format!("{n} {d}")).collect();
    println!(
        "toolcert merge: {} shards, {} scenarios, {} rows: {}",
        shards.len(),
        run.scenarios.len(),
        run.rows.len(),
        line.join(", ")
    );
    toolcert::report::console::print_conclusion(&suite, &run, judgement.as_ref(), false);
    Ok(ExitCode::from(run.certification.exit_code))
}
