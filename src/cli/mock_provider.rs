//! `toolcert mock-provider --port N`: the mock model provider on its own, for hosts toolcert
//! does not start. Scripts are posted over HTTP (see docs/guide/families.md for curl examples).

use std::net::SocketAddr;
use std::process::ExitCode;

/// Arguments of `toolcert mock-provider`.
#[derive(Debug, clap::Args)]
pub struct MockProviderArgs {
    /// Port on 127.0.0.1 (0 picks a free one; the URL is printed).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
}

pub(super) fn run(args: MockProviderArgs) -> anyhow::Result<ExitCode> {
    let rt = super::common::runtime()?;
    rt.block_on(mock_provider::serve_standalone(SocketAddr::from((
        [127, 0, 0, 1],
        args.port,
    ))))?;
    Ok(ExitCode::SUCCESS)
}
