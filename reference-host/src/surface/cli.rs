//! The `reference-host` command line: argument parsing and the serve loop.
//!
//! It lives in the library so the `reference-host` binary and toolcert's
//! `toolcert reference-host` subcommand run exactly the same code
//! ([`main_from`]).

use std::ffi::OsString;
use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;

use crate::base::config::{DEFAULT_RECORD_LIMIT_BYTES, HostConfig, UpstreamMajor};
use crate::base::principals::{self, load_principals_file};
use crate::surface::app::start;
use crate::surface::mutants::{self, Mutant};

/// Environment variable that enables the conformance seams (`true`).
const SEAMS_ENV: &str = "OPENWOP_TEST_SEAM_ENABLED";

/// Minimal in-memory OpenWOP v2 host: toolcert's known-good target, with named mutants.
#[derive(Debug, Parser)]
#[command(name = "reference-host", version)]
struct Cli {
    /// Port on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Run a deliberately broken variant (see --list-mutants).
    #[arg(long, value_name = "NAME")]
    mutant: Option<Mutant>,
    /// Run as the mutation matrix's probe host (the clean host that records
    /// the mutant sites it reaches), appending each reached site to FILE.
    #[arg(long, value_name = "FILE", conflicts_with = "mutant", hide = true)]
    probe_reach: Option<PathBuf>,
    /// Mount /conformance/seams/... (also: OPENWOP_TEST_SEAM_ENABLED=true).
    #[arg(long)]
    enable_seams: bool,
    /// JSON array of principals replacing the built-ins.
    #[arg(long, value_name = "FILE")]
    principals: Option<PathBuf>,
    /// Print every mutant as NAME<TAB>what it breaks, then exit.
    #[arg(long)]
    list_mutants: bool,
    /// Keep the store in DIR/reference-host.sqlite3 (WAL) and recover
    /// in-flight turn runs at start-up (default: in memory).
    #[arg(long, value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// Largest tool record kept whole; a larger one is kept as a digest
    /// (a miss on replay and recovery).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_RECORD_LIMIT_BYTES)]
    record_limit_bytes: usize,
    /// Serve as a plain upstream OpenWOP host of one major (v1, the default
    /// when no value is given, or v2): only that major's upstream discovery,
    /// routes, fixtures and seams, none of toolcert's extensions.
    #[arg(
        long,
        value_name = "MAJOR",
        num_args = 0..=1,
        require_equals = false,
        default_missing_value = "v1",
        value_parser = parse_upstream_major
    )]
    upstream_only: Option<UpstreamMajor>,
}

/// `--upstream-only`'s value: `v1` or `v2`.
fn parse_upstream_major(value: &str) -> Result<UpstreamMajor, String> {
    UpstreamMajor::parse(value).ok_or_else(|| format!("`{value}` is no major; use v1 or v2"))
}

/// Runs the command line `args` (the first one is the program name) and
/// returns the exit status: 0 after a clean stop, 2 for a usage error
/// (including an unknown `--mutant`, whose message lists the valid names)
/// or a bad principals file, 1 when the host cannot start or fails.
pub fn main_from<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(err) => {
            // clap prints help/version to stdout (exit 0) and usage errors
            // to stderr (exit 2).
            let _ = err.print();
            return ExitCode::from(u8::try_from(err.exit_code()).unwrap_or(2));
        }
    };
    if cli.list_mutants {
        return report(list_mutants());
    }
    let principals = match &cli.principals {
        None => principals::builtin(),
        Some(path) => match load_principals_file(path) {
            Ok(principals) => principals,
            Err(err) => {
                eprintln!("reference-host: {err}");
                return ExitCode::from(2);
            }
        },
    };
    let mutant = match cli.probe_reach {
        Some(path) => {
            crate::base::mutant::probe::record_to(path);
            Some(Mutant::Probe)
        }
        None => cli.mutant,
    };
    let config = HostConfig {
        bind: SocketAddr::from((Ipv4Addr::LOCALHOST, cli.port)),
        mutant,
        seams_enabled: cli.enable_seams || seams_enabled_by_env(),
        principals,
        data_dir: cli.data_dir,
        record_limit_bytes: cli.record_limit_bytes,
        upstream_only: cli.upstream_only,
        ..HostConfig::default()
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("reference-host: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    report(runtime.block_on(serve(config)))
}

/// Prints an error (if any) and maps it to the exit status.
fn report(result: anyhow::Result<()>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("reference-host: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn seams_enabled_by_env() -> bool {
    std::env::var(SEAMS_ENV).is_ok_and(|value| value.eq_ignore_ascii_case("true") || value == "1")
}

fn list_mutants() -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    for info in mutants::ALL {
        writeln!(out, "{}\t{}", info.name, info.breaks)?;
    }
    out.flush()?;
    Ok(())
}

async fn serve(config: HostConfig) -> anyhow::Result<()> {
    let host = start(config).await.context("cannot start the host")?;
    // Signal handlers go in before the start-up line: a parent may send SIGTERM as soon as it
    // has read the URL, and an unhandled SIGTERM would kill the process instead of stopping it.
    let stop = ShutdownSignal::install();
    {
        // Exactly one line on stdout, flushed, so a parent process can read
        // the URL as soon as the port is bound.
        let mut out = std::io::stdout().lock();
        writeln!(out, "reference-host listening on {}", host.base_url)?;
        out.flush()?;
    }
    stop.wait().await;
    host.shutdown().await;
    Ok(())
}

/// SIGINT and SIGTERM listeners, registered when installed.
struct ShutdownSignal {
    #[cfg(unix)]
    listeners: Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)>,
}

impl ShutdownSignal {
    fn install() -> ShutdownSignal {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let listeners = match (
                signal(SignalKind::interrupt()),
                signal(SignalKind::terminate()),
            ) {
                (Ok(int), Ok(term)) => Some((int, term)),
                (Err(err), _) | (_, Err(err)) => {
                    eprintln!(
                        "reference-host: signal handlers unavailable ({err}); stop with SIGINT"
                    );
                    None
                }
            };
            ShutdownSignal { listeners }
        }
        #[cfg(not(unix))]
        {
            ShutdownSignal {}
        }
    }

    /// Resolves on SIGINT or SIGTERM.
    async fn wait(self) {
        #[cfg(unix)]
        match self.listeners {
            Some((mut int, mut term)) => {
                tokio::select! {
                    _ = int.recv() => {}
                    _ = term.recv() => {}
                }
            }
            None => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
