//! `toolcert mutants`: one mutant per line, the name first, then what it breaks.

use std::process::ExitCode;

pub(super) fn run() -> anyhow::Result<ExitCode> {
    for m in reference_host::mutants::ALL {
        println!("{}\t{}", m.name, m.breaks);
    }
    Ok(ExitCode::SUCCESS)
}
