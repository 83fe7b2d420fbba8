//! The `toolcert` binary: the command line (`cli`) over the library's facade and the stage
//! crates. The CLI is the binary's own module: no library exposes clap, anyhow or the
//! progress bar.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
