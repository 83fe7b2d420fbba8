//! What the subcommands share: loading the suite and the runtime they run on.

/// Load the embedded suite or the one at `--suite DIR`.
///
/// With the reference host built in, every `kills` name must be one of its mutants, as the
/// matrix requires; without it the names cannot be checked and are not.
pub(super) fn load_suite(dir: Option<&std::path::Path>) -> anyhow::Result<toolcert::suite::Suite> {
    let suite = match dir {
        Some(d) => toolcert::suite::Suite::from_dir(d)?,
        None => toolcert::suite::Suite::embedded()?,
    };
    #[cfg(feature = "reference")]
    toolcert::matrix::check_kills(&suite)?;
    Ok(suite)
}

/// A multi-threaded runtime for the CLI.
pub(super) fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}
