//! `toolcert bundle verify BUNDLE [--key PUB]`: check a certification bundle without the host.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;

use toolcert::bundle::{SignatureCheck, SuiteCheck};

/// Arguments of `toolcert bundle`.
#[derive(Debug, clap::Args)]
pub struct BundleArgs {
    /// What to do with a bundle.
    #[command(subcommand)]
    pub command: BundleCommand,
}

/// `toolcert bundle` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum BundleCommand {
    /// Check a bundle: it parses, its digest and (with --key) its signature hold, its suite is
    /// this toolcert's, and every verdict re-judges the same from its stored observations.
    /// Exit 0: verified; 1: a verdict differs; 2: refused (tampered, unreadable, wrong key).
    Verify(VerifyArgs),
}

/// Arguments of `toolcert bundle verify`.
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// A bundle written by `toolcert run --bundle`.
    #[arg(value_name = "BUNDLE")]
    pub bundle: PathBuf,
    /// The signer's public key file (`toolcert keygen` writes it): check the signature too.
    #[arg(long, value_name = "PUBKEY")]
    pub key: Option<PathBuf>,
    /// Recheck with the suite of this checkout instead of the embedded one.
    #[arg(long, value_name = "DIR")]
    pub suite: Option<PathBuf>,
}

pub(super) fn run(args: BundleArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        BundleCommand::Verify(args) => verify(args),
    }
}

fn verify(args: VerifyArgs) -> anyhow::Result<ExitCode> {
    // The key first: a wrong --key file is the caller's mistake, whatever the bundle holds.
    let key = args
        .key
        .as_deref()
        .map(toolcert::bundle::keys::load_public)
        .transpose()
        .context("--key")?;
    let bundle = toolcert::bundle::load(&args.bundle)?;
    let suite = super::common::load_suite(args.suite.as_deref()).context("loading the suite")?;
    let shown = args.bundle.display().to_string();
    let verified = toolcert::bundle::verify(&suite, &bundle, &shown, key.as_ref())?;
    println!(
        "bundle {shown}: written by toolcert {}; digest {} matches its content; the report's own digest matches",
        verified.toolcert_version, verified.digest
    );
    match &verified.signature {
        SignatureCheck::Verified(k) => println!("signature: verified (Ed25519, key {k})"),
        SignatureCheck::NotChecked(k) => println!(
            "signature: present (Ed25519, key {k}) but NOT checked: pass --key PUBKEY to check it"
        ),
        SignatureCheck::Unsigned => println!("signature: none (the bundle is not signed)"),
    }
    match &verified.suite {
        SuiteCheck::Same(d) => println!("suite: the same as this toolcert's ({d})"),
        SuiteCheck::Differs {
            bundle,
            current,
            changed,
            added,
            removed,
        } => {
            let list = |v: &[String]| {
                if v.is_empty() {
                    "none".to_string()
                } else {
                    v.join(", ")
                }
            };
            println!(
                "suite: DIFFERS: the bundle was judged with suite {} ({}), this toolcert has suite {} ({}); files changed: {}; added: {}; removed: {}; every verdict is rechecked under the current suite",
                bundle.0,
                bundle.1,
                current.0,
                current.1,
                list(changed),
                list(added),
                list(removed)
            );
        }
    }
    super::recheck::print_outcome(&verified.recheck);
    let outcome = &verified.recheck;
    let partial = outcome
        .certification
        .as_ref()
        .is_some_and(|c| c.verdict == toolcert::verdict::Verdict::Partial);
    let verdict = match (
        outcome.differing().next().is_none() && !outcome.verdict_differs(),
        partial,
    ) {
        (true, false) => "verified",
        // A filtered or sharded run's bundle verifies as what it is, never as a whole run.
        (true, true) => {
            "verified, PARTIAL (the run covered part of the suite; it certifies nothing)"
        }
        (false, _) => "VERDICTS DIFFER",
    };
    Ok(super::recheck::conclude(
        outcome,
        &format!("toolcert bundle verify: {verdict}"),
    ))
}
