//! `toolcert keygen`: write an Ed25519 key pair for signing bundles.

use std::path::PathBuf;
use std::process::ExitCode;

/// The file names `--out DIR` writes.
const SECRET_NAME: &str = "toolcert-bundle.key";
const PUBLIC_NAME: &str = "toolcert-bundle.pub";

/// Arguments of `toolcert keygen`.
#[derive(Debug, clap::Args)]
pub struct KeygenArgs {
    /// Write toolcert-bundle.key (secret, mode 0600) and toolcert-bundle.pub into DIR
    /// (created when missing).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["secret", "public"], required_unless_present_all = ["secret", "public"])]
    pub out: Option<PathBuf>,
    /// Write the secret key here (with --public).
    #[arg(long, value_name = "FILE", requires = "public")]
    pub secret: Option<PathBuf>,
    /// Write the public key here (with --secret).
    #[arg(long, value_name = "FILE", requires = "secret")]
    pub public: Option<PathBuf>,
}

pub(super) fn run(args: KeygenArgs) -> anyhow::Result<ExitCode> {
    let (secret, public) = match (args.out, args.secret, args.public) {
        (Some(dir), _, _) => {
            std::fs::create_dir_all(&dir)
                .map_err(|e| anyhow::anyhow!("--out {}: cannot create it: {e}", dir.display()))?;
            (dir.join(SECRET_NAME), dir.join(PUBLIC_NAME))
        }
        (None, Some(s), Some(p)) => (s, p),
        // clap enforces one of the two forms.
        _ => anyhow::bail!("expected --out DIR, or --secret FILE and --public FILE"),
    };
    anyhow::ensure!(
        std::path::absolute(&secret).ok() != std::path::absolute(&public).ok(),
        "--secret and --public are the same file {}; give each key its own path",
        secret.display()
    );
    let key = toolcert::bundle::keys::generate()?;
    toolcert::bundle::keys::write_pair(&secret, &public, &key)?;
    println!(
        "toolcert keygen: secret key {} (mode 0600: keep it private; `run --bundle FILE --sign {}`)",
        secret.display(),
        secret.display()
    );
    println!(
        "toolcert keygen: public key {} (publish it; `bundle verify FILE --key {}`): {}",
        public.display(),
        public.display(),
        toolcert::bundle::keys::public_hex(&key.verifying_key())
    );
    Ok(ExitCode::SUCCESS)
}
