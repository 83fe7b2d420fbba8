//! The `toolcert` binary: a thin shell over [`toolcert::cli`].

fn main() -> std::process::ExitCode {
    toolcert::cli::main()
}
