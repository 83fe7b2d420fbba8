//! `mock-provider [ADDR]`: serve a standalone mock provider (default `127.0.0.1:0`) with the
//! `/_toolcert` control API, until ctrl-c.

use std::net::SocketAddr;
use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:0".to_string());
    if args.next().is_some() || addr == "-h" || addr == "--help" {
        eprintln!("usage: mock-provider [LOOPBACK_ADDR:PORT]   (default 127.0.0.1:0)");
        return ExitCode::from(2);
    }
    let addr: SocketAddr = match addr.parse() {
        Ok(addr) => addr,
        Err(e) => {
            eprintln!("mock-provider: `{addr}` is not a socket address: {e}");
            return ExitCode::from(2);
        }
    };
    match mock_provider::serve_standalone(addr).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mock-provider: {e}");
            ExitCode::FAILURE
        }
    }
}
