//! `toolcert reference-host ARGS…`: serve the reference host from toolcert's own binary, with
//! the `reference-host` binary's flags (`--port`, `--data-dir`, `--mutant`, `--enable-seams`,
//! …). toolcert runs it as a child process for kill-and-restart scenarios, so they need no
//! second binary to be built.

use std::ffi::OsString;
use std::process::ExitCode;

/// Arguments of `toolcert reference-host`: passed through unchanged.
#[derive(Debug, clap::Args)]
pub struct ReferenceHostArgs {
    /// The reference host's own flags (see `toolcert reference-host --help`).
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "ARGS"
    )]
    pub args: Vec<OsString>,
}

pub(super) fn run(args: ReferenceHostArgs) -> anyhow::Result<ExitCode> {
    let argv = std::iter::once(OsString::from("toolcert reference-host")).chain(args.args);
    Ok(reference_host::cli::main_from(argv))
}
