//! `toolcert matrix`: regenerate `reports/mutation-matrix.md` and the reference host's
//! certification (`reports/reference-host.{json,md}`).

use std::path::PathBuf;
use std::process::ExitCode;

use toolcert::runner::RunOptions;

/// Arguments of `toolcert matrix`.
#[derive(Debug, clap::Args)]
pub struct MatrixArgs {
    /// Directory to write into.
    #[arg(long, default_value = "reports", value_name = "DIR")]
    pub out: PathBuf,
    /// Load the suite from this checkout instead of the embedded one.
    #[arg(long, value_name = "DIR")]
    pub suite: Option<PathBuf>,
    /// How many mutant columns run at once (each with its own embedded host; the longest
    /// start first; 12 keeps both cores of a small machine busy while columns wait on their
    /// scenarios' timers).
    #[arg(long, default_value_t = 12, value_name = "N")]
    pub columns: usize,
    /// Scenarios in flight at once in each column (each column is an embedded host of its
    /// own).
    #[arg(long, short = 'j', default_value_t = toolcert::runner::EMBEDDED_JOBS, value_name = "N")]
    pub jobs: usize,
    /// Run every scenario in every mutant column, instead of only the scenarios that reach
    /// the mutant's site on the probe host (slow; it proves the fast matrix is the same).
    #[arg(long)]
    pub full: bool,
    /// Also run N scenarios per column that the probe says cannot tell the mutant apart (the
    /// cheap proof that skipping them is right: a matrix that changes shows the probe wrong).
    #[arg(long, value_name = "N", conflicts_with = "full")]
    pub sample: Option<usize>,
    /// Which scenarios `--sample` draws (any number; CI takes one from the commit).
    #[arg(long, value_name = "SEED", default_value_t = 0, requires = "sample")]
    pub sample_seed: u64,
    /// Run only these mutants (reference host mutants or the suite's data mutants; the flag
    /// may repeat), each against every scenario, beside the clean host: print which scenarios
    /// kill each and what falls short, and write no report. How a spec editor proves a new
    /// row's mutant in seconds; the whole matrix still decides.
    #[arg(long = "mutant", value_name = "NAME", conflicts_with_all = ["full", "sample"])]
    pub mutants: Vec<String>,
    /// With --mutant: run only the scenarios whose id contains one of these strings (the new
    /// row's scenario, say), in the clean column and the named ones.
    #[arg(value_name = "FILTER", requires = "mutants")]
    pub filters: Vec<String>,
    /// No progress bar.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

pub(super) fn run(args: MatrixArgs) -> anyhow::Result<ExitCode> {
    let suite = super::common::load_suite(args.suite.as_deref())?;
    let rt = super::common::runtime()?;
    anyhow::ensure!(
        args.jobs >= 1 && args.columns >= 1,
        "--jobs {} --columns {}: expected at least 1 of each",
        args.jobs,
        args.columns
    );
    let opts = RunOptions {
        jobs: args.jobs,
        ..RunOptions::default()
    };
    if !args.mutants.is_empty() {
        let filters = &args.filters;
        let select = |s: &toolcert::suite::Scenario| {
            filters.is_empty() || filters.iter().any(|f| s.id.contains(f.as_str()))
        };
        anyhow::ensure!(
            suite.scenarios.iter().any(select),
            "no scenario matches the filters {filters:?}; `toolcert run --list` lists the scenario ids"
        );
        let focused = rt.block_on(toolcert::matrix::run_focused(
            &suite,
            &opts,
            &args.mutants,
            Some(&select),
            args.columns,
        ))?;
        print!("{}", focused.render(&suite));
        return Ok(if focused.problems(&suite).is_empty() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        });
    }
    let total = toolcert::matrix::column_count(&suite);
    let progress = super::progress::Progress::new(total as u64, "columns", args.quiet);
    let matrix = rt.block_on(toolcert::matrix::run_matrix_observed(
        &suite,
        &opts,
        args.columns,
        match (args.full, args.sample) {
            (true, _) => toolcert::matrix::Selection::Full,
            (false, Some(per_column)) => toolcert::matrix::Selection::Sampled {
                per_column,
                seed: args.sample_seed,
            },
            (false, None) => toolcert::matrix::Selection::Reached,
        },
        &|_| progress.inc(),
    ))?;
    progress.finish();
    std::fs::create_dir_all(&args.out)?;
    std::fs::write(
        args.out.join("mutation-matrix.md"),
        matrix.render_markdown(&suite),
    )?;
    let report = toolcert::report::build(&suite, &matrix.clean_run);
    toolcert::report::write_json(&suite, &report, &args.out.join("reference-host.json"))?;
    std::fs::write(
        args.out.join("reference-host.md"),
        toolcert::report::render_markdown(&report),
    )?;
    let problems = matrix.problems(&suite);
    for p in &problems {
        eprintln!("toolcert: matrix: {p}");
    }
    println!(
        "wrote {}/mutation-matrix.md, reference-host.json, reference-host.md ({} mutants, {} problems)",
        args.out.display(),
        matrix.mutants.len(),
        problems.len()
    );
    Ok(if problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
