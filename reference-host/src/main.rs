//! `reference-host`: serve the reference OpenWOP v2 host on 127.0.0.1.

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use reference_host::mutants::{self, Mutant};
use reference_host::principals::{self, load_principals_file};
use reference_host::{HostConfig, start};

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
    /// Mount /conformance/seams/... (also: OPENWOP_TEST_SEAM_ENABLED=true).
    #[arg(long)]
    enable_seams: bool,
    /// JSON array of principals replacing the built-ins.
    #[arg(long, value_name = "FILE")]
    principals: Option<PathBuf>,
    /// Print every mutant as NAME<TAB>what it breaks, then exit.
    #[arg(long)]
    list_mutants: bool,
}

fn main() -> ExitCode {
    // clap exits with status 2 on usage errors, including an unknown
    // --mutant name (its message lists the valid names).
    let cli = Cli::parse();
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
    let config = HostConfig {
        bind: SocketAddr::from((Ipv4Addr::LOCALHOST, cli.port)),
        mutant: cli.mutant,
        seams_enabled: cli.enable_seams || seams_enabled_by_env(),
        principals,
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
