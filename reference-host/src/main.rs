//! `reference-host`: serve the reference OpenWOP v2 host on 127.0.0.1
//! (see [`reference_host::cli`]).

fn main() -> std::process::ExitCode {
    reference_host::cli::main_from(std::env::args_os())
}
