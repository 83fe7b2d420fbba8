//! The command line: one file per subcommand. `anyhow` lives here, at the binary's edge.

mod baseline;
mod bundle;
mod common;
mod coverage;
mod keygen;
#[cfg(feature = "reference")]
mod matrix;
mod mcp;
mod merge;
mod mock_provider;
#[cfg(feature = "reference")]
mod mutants;
mod progress;
mod recheck;
#[cfg(feature = "reference")]
mod reference_host;
mod run;
mod signals;
mod suite;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// toolcert: certify that an OpenWOP host treats tool calls as durable, authorized,
/// idempotent effects.
#[derive(Debug, Parser)]
#[command(name = "toolcert", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Certify a host (default: the embedded reference host, when built in).
    Run(Box<run::RunArgs>),
    /// Print the expectation baseline of a JSON report (every row that did not pass, with its
    /// detail as the reason) for `run --expect FILE`.
    Baseline(baseline::BaselineArgs),
    /// Re-judge a JSON report's stored observations with the current suite, without the host;
    /// exit 1 when a row's disposition differs, 2 when the report was edited.
    Recheck(recheck::RecheckArgs),
    /// Check a certification bundle (`run --bundle`): digest, signature with --key, suite,
    /// and every verdict rechecked; exit 1 when a verdict differs, 2 when it is refused.
    Bundle(bundle::BundleArgs),
    /// Write an Ed25519 key pair for `run --sign` and `bundle verify --key`.
    Keygen(keygen::KeygenArgs),
    /// Merge the reports of `run --partition K/N` shards into one report.
    Merge(merge::MergeArgs),
    /// List the mutants: the reference host's, then the suite's data mutants; name, then
    /// what it breaks.
    #[cfg(feature = "reference")]
    Mutants(mutants::MutantsArgs),
    /// Per family: rows covered by a scenario, uncovered, unwitnessable.
    Coverage(coverage::CoverageArgs),
    /// List the scenarios (id and file), or with --expanded print them with fragments and
    /// params written out, as the loader validates and runs them.
    Suite(suite::SuiteArgs),
    /// Serve the mock model provider on 127.0.0.1 for hosts toolcert does not start.
    MockProvider(mock_provider::MockProviderArgs),
    /// Run the mutation matrix and write it, with the reference host's certification, to reports/.
    #[cfg(feature = "reference")]
    Matrix(matrix::MatrixArgs),
    /// Serve the reference host (the flags of the `reference-host` binary); toolcert runs it
    /// this way as a child process for kill-and-restart scenarios.
    #[cfg(feature = "reference")]
    #[command(disable_help_flag = true)]
    ReferenceHost(reference_host::ReferenceHostArgs),
    /// Pin MCP tools: capture a catalog, review a tool, gate and call it, diff snapshots.
    Mcp(mcp::McpArgs),
}

/// Entry point used by `main`.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let result = match cli.command {
        Command::Run(args) => run::run(*args),
        #[cfg(feature = "reference")]
        Command::Mutants(args) => mutants::run(args),
        Command::Baseline(args) => baseline::run(args),
        Command::Recheck(args) => recheck::run(args),
        Command::Merge(args) => merge::run(args),
        Command::Bundle(args) => bundle::run(args),
        Command::Keygen(args) => keygen::run(args),
        Command::Coverage(args) => coverage::run(args),
        Command::Suite(args) => suite::run(args),
        #[cfg(feature = "reference")]
        Command::Matrix(args) => matrix::run(args),
        Command::MockProvider(args) => mock_provider::run(args),
        #[cfg(feature = "reference")]
        Command::ReferenceHost(args) => reference_host::run(args),
        Command::Mcp(args) => mcp::run(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            // Cleaned like every output: an error may quote what a host or a file held.
            toolcert::output::warn(&format!("toolcert: error: {e:#}"));
            ExitCode::from(2)
        }
    }
}
