//! `toolcert mutants`: one mutant per line, the name first, then what it breaks: the
//! reference host's mutants, then the suite's data mutants (`scenarios/mutants/`).

use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `toolcert mutants`.
#[derive(Debug, clap::Args)]
pub struct MutantsArgs {
    /// Load the suite (and its data mutants) from this checkout instead of the embedded one.
    #[arg(long, value_name = "DIR")]
    pub suite: Option<PathBuf>,
}

pub(super) fn run(args: MutantsArgs) -> anyhow::Result<ExitCode> {
    let suite = super::common::load_suite(args.suite.as_deref())?;
    for m in reference_host::mutants::ALL {
        println!("{}\t{}", m.name, m.breaks);
    }
    for m in suite.data_mutants.values() {
        println!("{}\t(data, {}) {}", m.name, m.file, m.breaks);
    }
    Ok(ExitCode::SUCCESS)
}
